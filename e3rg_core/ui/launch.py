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
