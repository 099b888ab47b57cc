"""The [video] settings: defaults, precedence, validation, the backend table and each backend's own table."""

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
    assert (v.backend, v.fps, v.size_px, v.options) == ("mesh", 25, 512, {})
    d = load_config(environ={}).backend_options("video", "dicetalk")
    assert (d.steps, d.ref_scale, d.emo_scale, d.expand_ratio, d.crop) == (25, 3.0, 6.0, 0.5, True)


def test_precedence_cli_over_env_over_file(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[video]\nbackend = "dicetalk"\nfps = 30\n[video.dicetalk]\ndir = "~/DICE-Talk"\nsteps = 10\n')
    c = load_config(f, environ={})
    dicetalk = c.backend_options("video", "dicetalk")
    assert c.video.backend == "dicetalk" and c.video.fps == 30 and (dicetalk.dir, dicetalk.steps) == ("~/DICE-Talk", 10)
    c = load_config(f, environ={"E3RG_VIDEO_FPS": "20", "E3RG_VIDEO_DICETALK_CROP": "false"})
    assert c.video.fps == 20 and c.backend_options("video", "dicetalk").crop is False
    c = load_config(f, environ={"E3RG_VIDEO_FPS": "20", "E3RG_VIDEO_DICETALK_STEPS": "12"},
                    overrides={"video.fps": 24, "video.seed": None, "video.dicetalk.steps": 14})
    assert c.video.fps == 24 and c.backend_options("video", "dicetalk").steps == 14


@pytest.mark.parametrize("setting, message", [
    ('backend = "sadtalker"', "choose from mesh, dicetalk"),
    ('size_px = "big"', "not a valid int"),
    ("size_px = 99", "even number in 128..2048"),
    ("fps = 0", "1..60"),
    ("[video.mesh]\ncrf = 70", "video.mesh.crf must lie in 0..51"),
    ("[video.dicetalk]\nsteps = 0", "video.dicetalk.steps must be >= 1"),
    ("[video.dicetalk]\ndirectory = 'x'", "unknown setting video.dicetalk.directory; allowed: dir, device"),
    ("[video.sadtalker]\nsteps = 1", r"unknown table \[video.sadtalker\]; the video backends are mesh, dicetalk"),
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


@pytest.mark.parametrize("old, new", [("dicetalk_dir = 'x'", r"dir in \[video.dicetalk\]"),
                                      ("dicetalk_steps = 3", r"steps in \[video.dicetalk\]"),
                                      ("crf = 20", r"crf in \[video.mesh\] \(E3RG_VIDEO_MESH_CRF")])
def test_a_setting_that_moved_into_its_backends_table_says_where(tmp_path, old, new):
    f = tmp_path / "c.toml"
    f.write_text(f"[video]\n{old}\n")
    with pytest.raises(ConfigError, match=f"has moved: set {new}"):
        load_config(f, environ={})
    with pytest.raises(ConfigError, match=r"video.preset has moved: set preset in \[video.mesh\]"):
        load_config(environ={"E3RG_VIDEO_PRESET": "fast"})
    with pytest.raises(ConfigError, match="video.dicetalk_dir has moved"):
        load_config(environ={}, overrides={"video.dicetalk_dir": "x"})


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
