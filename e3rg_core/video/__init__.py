"""Stage 3b: the talking head. ``create_renderer(config)`` builds the configured backend.

Backends (``registry.VIDEO``): ``mesh`` (embedded, CPU, real time) and ``dicetalk`` (DICE-Talk on a
CUDA GPU). Both implement ``base.Renderer``; importing this package loads no model.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from e3rg_core.config import Config
    from e3rg_core.video.base import Renderer


def renderer_options(config: "Config") -> dict[str, Any]:
    """The constructor options of the configured video backend."""
    v = config.video
    bank = Path(v.bank).expanduser() if v.bank else None
    if v.backend == "dicetalk":
        return {"checkout": Path(v.dicetalk_dir).expanduser() if v.dicetalk_dir else None,
                "device": v.dicetalk_device, "steps": v.dicetalk_steps, "ref_scale": v.dicetalk_ref_scale,
                "emo_scale": v.dicetalk_emo_scale, "min_resolution": v.size_px,
                "expand_ratio": v.dicetalk_expand_ratio, "crop": v.dicetalk_crop, "seed": v.seed,
                "bank_path": bank, "cache_dir": config.cache_dir}
    return {"cache_dir": config.cache_dir, "fps": v.fps, "size_px": v.size_px, "seed": v.seed,
            "bank_path": bank, "preset": v.preset, "crf": v.crf}


def create_renderer(config: "Config") -> "Renderer":
    """Build the configured renderer (its models load here)."""
    from e3rg_core import registry

    return registry.create("video", config.video.backend, renderer_options(config))
