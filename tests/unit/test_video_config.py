"""The [video] settings: defaults, precedence, validation, and the backend table."""

from __future__ import annotations

import subprocess
import sys

import pytest

from e3rg_core import registry
from e3rg_core.config import load_config
from e3rg_core.errors import ConfigError
from e3rg_core.video import renderer_options


def test_defaults_are_e3rg_settings():
    v = load_config(environ={}).video
    assert (v.backend, v.fps, v.size_px) == ("mesh", 25, 512)
    assert (v.dicetalk_steps, v.dicetalk_ref_scale, v.dicetalk_emo_scale, v.dicetalk_expand_ratio, v.dicetalk_crop) == (
        25, 3.0, 6.0, 0.5, True)


def test_precedence_cli_over_env_over_file(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[video]\nbackend = "dicetalk"\ndicetalk_dir = "~/DICE-Talk"\nfps = 30\n')
    c = load_config(f, environ={})
    assert c.video.backend == "dicetalk" and c.video.fps == 30 and c.video.dicetalk_dir == "~/DICE-Talk"
    c = load_config(f, environ={"E3RG_VIDEO_FPS": "20", "E3RG_VIDEO_DICETALK_CROP": "false"})
    assert c.video.fps == 20 and c.video.dicetalk_crop is False
    c = load_config(f, environ={"E3RG_VIDEO_FPS": "20"}, overrides={"video.fps": 24, "video.seed": None})
    assert c.video.fps == 24


@pytest.mark.parametrize("setting, message", [
    ('backend = "sadtalker"', "choose from mesh, dicetalk"),
    ('size_px = "big"', "not a valid int"),
    ("size_px = 99", "even number in 128..2048"),
    ("fps = 0", "1..60"),
    ("crf = 70", "0..51"),
    ("dicetalk_steps = 0", "dicetalk_steps"),
    ("colour = 1", "unknown setting video.colour"),
])
def test_bad_settings(tmp_path, setting, message):
    f = tmp_path / "c.toml"
    f.write_text(f"[video]\n{setting}\n")
    with pytest.raises(ConfigError, match=message):
        load_config(f, environ={})


def test_options_per_backend(tmp_path):
    c = load_config(environ={"E3RG_VIDEO_BACKEND": "dicetalk", "E3RG_VIDEO_DICETALK_DIR": str(tmp_path),
                             "E3RG_CACHE_DIR": str(tmp_path / "cache")})
    opts = renderer_options(c)
    assert opts["checkout"] == tmp_path and opts["emo_scale"] == 6.0 and opts["min_resolution"] == 512
    mesh = renderer_options(load_config(environ={}))
    assert mesh["fps"] == 25 and mesh["preset"] == "veryfast" and "checkout" not in mesh


def test_registry_lists_the_video_backends():
    assert registry.names("video") == ("mesh", "dicetalk")
    with pytest.raises(ConfigError, match="choose from mesh, dicetalk"):
        registry.resolve("video", "wav2lip")


def test_importing_the_video_backends_loads_no_heavy_library():
    code = ("import sys, e3rg_core.video.embedded, e3rg_core.video.dicetalk, e3rg_core.video.command; "
            "heavy = [m for m in ('cv2', 'ai_edge_litert', 'torch', 'scipy', 'imageio_ffmpeg') if m in sys.modules]; "
            "print(','.join(heavy))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
