"""Stage 3b: the talking head. ``create_renderer(config)`` builds the configured backend.

Backends (``registry.VIDEO``): ``mesh`` (embedded, CPU, real time) and ``dicetalk`` (DICE-Talk on a
CUDA GPU). Both implement ``base.Renderer``; each takes its options from its own ``[video.<backend>]``
table (``MeshOptions``, ``DiceTalkOptions``). Importing this package loads no model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from e3rg_core.config import Config
    from e3rg_core.video.base import Renderer


def renderer_options(config: "Config") -> dict[str, Any]:
    """The constructor options of the configured video backend (its options class maps them)."""
    return config.backend_options("video", config.video.backend).backend_kwargs(config)


def create_renderer(config: "Config") -> "Renderer":
    """Build the configured renderer (its models load here)."""
    from e3rg_core import registry

    return registry.create("video", config.video.backend, renderer_options(config))
