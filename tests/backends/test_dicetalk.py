"""The DICE-Talk adapter, against a checkout laid out like the real one.

The checkout's ``dice_talk.py`` here is a test double with upstream's API (``DICE_Talk(device_id)``,
``preprocess``, ``crop_image``, ``process``, settings on the class) that writes a short MP4 with the
packaged ffmpeg. The emotion priors are written in DICE-Talk's real format. A real checkout runs in
``test_real_dicetalk`` when ``E3RG_TEST_DICETALK_DIR`` points at one and CUDA is there.
"""

from __future__ import annotations

import os
import pickle
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from e3rg_core.emotions import COARSE
from e3rg_core.errors import BackendUnavailable, ConfigError, InputError
from e3rg_core.media.mp4 import ffmpeg_exe
from e3rg_core.video import dicetalk
from e3rg_core.video.dicetalk import REQUIRED, DiceTalkRenderer, check_gpu, load_prior
from tests.video_support import make_speech, portrait_path

UPSTREAM_DOUBLE = '''
import json, os, subprocess, threading, time

class _Config:
    seed = 72589
    num_inference_steps = 25

class DICE_Talk:
    config = _Config()  # upstream keeps its settings on the class
    calls = []
    active = 0
    peak = 0
    no_face = False

    def __init__(self, device_id=0):
        self.device_id = device_id

    def preprocess(self, image_path, expand_ratio=1.0):
        if not DICE_Talk.no_face:
            bbox_s = [10, 10, 200, 200]
        # like upstream: with no face, bbox_s is never bound and this raises UnboundLocalError
        return {"face_num": 0 if DICE_Talk.no_face else 1, "crop_bbox": bbox_s}

    def crop_image(self, input_image_path, output_image_path, crop_bbox):
        import shutil
        shutil.copy(input_image_path, output_image_path)

    def process(self, image_path, audio_path, emotion_path, output_path, min_resolution=512,
                inference_steps=25, ref_scale=None, emo_scale=None, keep_resolution=False, seed=None):
        DICE_Talk.active += 1
        DICE_Talk.peak = max(DICE_Talk.peak, DICE_Talk.active)
        if seed:
            DICE_Talk.config.seed = seed
        time.sleep(0.05)
        DICE_Talk.calls.append(dict(image=image_path, audio=audio_path, emotion=emotion_path,
                                    min_resolution=min_resolution, steps=inference_steps,
                                    ref_scale=ref_scale, emo_scale=emo_scale, seed=seed))
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        f"color=c=gray:s={min_resolution}x{min_resolution}:r=25:d=1", "-i", audio_path,
                        "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", output_path],
                       check=True)
        DICE_Talk.active -= 1
        return 0
'''


def write_prior(path: Path, mu: np.ndarray) -> None:
    """A DICE-Talk emotion prior: a pickled dict {'mu': float32[1, 256]} saved by numpy."""
    np.save(path, np.array({"mu": mu}, dtype=object), allow_pickle=True)


@pytest.fixture()
def checkout(tmp_path):
    return make_checkout(tmp_path)


def make_checkout(tmp_path: Path) -> Path:
    """A DICE-Talk checkout: every file upstream needs (empty weights), the upstream double, random priors."""
    root = tmp_path / "DICE-Talk"
    for name in REQUIRED:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith((".py", ".yaml", ".pth", ".pt", ".pkl")):
            target.write_text("")
        else:
            target.mkdir(exist_ok=True)
    (root / "dice_talk.py").write_text(UPSTREAM_DOUBLE)
    (root / "examples" / "emo").mkdir(parents=True)
    rng = np.random.default_rng(0)
    for label in COARSE:
        write_prior(root / "examples" / "emo" / f"{label}.npy", rng.standard_normal((1, 256)).astype(np.float32))
    return root


@pytest.fixture()
def gpu_ok(monkeypatch, tmp_path):
    """Pretend a 24 GB GPU and an ``ffmpeg`` on PATH (upstream shells out to it)."""
    monkeypatch.setattr(dicetalk, "check_gpu", lambda device, min_gb=20.0: "FakeGPU 24GB")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ffmpeg").symlink_to(ffmpeg_exe())
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


def test_priors_load_in_the_real_format(checkout):
    mu = load_prior(checkout / "examples" / "emo" / "happy.npy")
    assert mu.shape == (1, 256) and mu.dtype == np.float32
    write_prior(checkout / "bad.npy", np.zeros((1, 128), np.float32))
    with pytest.raises(ConfigError, match=r"float32\[1, 256\]"):
        load_prior(checkout / "bad.npy")
    with open(checkout / "junk.npy", "wb") as handle:
        pickle.dump([1, 2], handle)
    with pytest.raises(ConfigError, match="not a DICE-Talk emotion prior"):
        load_prior(checkout / "junk.npy")
    with pytest.raises(BackendUnavailable, match="missing"):
        load_prior(checkout / "none.npy")


def test_no_checkout_configured():
    with pytest.raises(BackendUnavailable, match=r"video\.dicetalk\.dir"):
        DiceTalkRenderer(checkout=None)


def test_incomplete_checkout_names_what_is_missing(checkout):
    (checkout / "checkpoints" / "DICE-Talk" / "unet.pth").unlink()
    with pytest.raises(BackendUnavailable, match="unet.pth"):
        DiceTalkRenderer(checkout=checkout)


def test_missing_prior_is_caught_at_creation(checkout):
    (checkout / "examples" / "emo" / "contempt.npy").unlink()
    with pytest.raises(BackendUnavailable, match="contempt.npy"):
        DiceTalkRenderer(checkout=checkout)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="CUDA is available here")
def test_everything_missing_is_said_in_one_message_at_creation(checkout, monkeypatch):
    """On a machine without a GPU and with an incomplete checkout, one error names both, not the first alone."""
    (checkout / "checkpoints" / "RIFE" / "flownet.pkl").unlink()
    monkeypatch.setattr(dicetalk.shutil, "which", lambda name: None)
    with pytest.raises(BackendUnavailable) as caught:
        DiceTalkRenderer(checkout=checkout)
    message = str(caught.value)
    assert message.startswith("the dicetalk video backend cannot start here: ")
    for part in ("lacks checkpoints/RIFE/flownet.pkl", "CUDA GPU with at least 20 GB", "this PyTorch is a CPU build"
                 if __import__("torch").version.cuda is None else "no CUDA device", "install a CUDA build of PyTorch",
                 "apt-get install ffmpeg"):
        assert part in message
    with pytest.raises(BackendUnavailable, match="needs video.dicetalk.dir .*; DICE-Talk needs a CUDA GPU"):
        DiceTalkRenderer(checkout=None)


def test_without_a_big_gpu_the_error_says_so(checkout):
    with pytest.raises(BackendUnavailable, match="CUDA GPU with at least 20 GB"):
        DiceTalkRenderer(checkout=checkout)
    with pytest.raises(BackendUnavailable, match="20 GB"):
        check_gpu(0)


def test_render_passes_e3rg_settings_and_the_class_prior(checkout, gpu_ok, tmp_path):
    renderer = DiceTalkRenderer(checkout=checkout)
    upstream = renderer._pipe.__class__
    speech = make_speech(tmp_path / "s.wav", duration_s=1.0)
    video = renderer.render(speech, portrait=portrait_path(), emotion="sad", intensity=0.7,
                            out_path=tmp_path / "out" / "sad.mp4")
    call = upstream.calls[-1]
    assert Path(call["emotion"]).name == "sad.npy"
    assert (call["steps"], call["ref_scale"], call["emo_scale"], call["min_resolution"]) == (25, 3.0, 6.0, 512)
    assert call["seed"] == 72589  # seed 0 would mean "keep the last one" upstream
    assert Path(call["image"]).name == "portrait.crop.png"
    assert video.mp4_path.is_file() and video.emotion == "sad" and video.fps == 25.0
    assert video.width == 512 and video.n_frames == 25


def test_no_face_is_a_clear_error_before_and_inside_upstream(checkout, gpu_ok, tmp_path):
    import cv2

    renderer = DiceTalkRenderer(checkout=checkout)
    speech = make_speech(tmp_path / "s.wav", duration_s=1.0)
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((256, 256, 3), 128, np.uint8))
    with pytest.raises(InputError, match="no face"):
        renderer.render(speech, portrait=blank, emotion="happy", intensity=1.0, out_path=tmp_path / "x.mp4")
    renderer._pipe.__class__.no_face = True  # our detector finds the face, upstream's does not
    with pytest.raises(InputError, match="DICE-Talk's face detector found no face"):
        renderer.render(speech, portrait=portrait_path(), emotion="happy", intensity=1.0, out_path=tmp_path / "y.mp4")
    assert not (tmp_path / "y.mp4").exists()


def test_calls_are_serialised(checkout, gpu_ok, tmp_path):
    first = DiceTalkRenderer(checkout=checkout)
    second = DiceTalkRenderer(checkout=checkout)  # two instances share upstream's class-level settings
    assert first._pipe.__class__ is second._pipe.__class__
    speech = make_speech(tmp_path / "s.wav", duration_s=1.0)
    errors = []

    def run(renderer, name):
        try:
            renderer.render(speech, portrait=portrait_path(), emotion="fear", intensity=1.0, out_path=tmp_path / name)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(r, f"{i}.mp4")) for i, r in enumerate((first, second, first))]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and first._pipe.__class__.peak == 1 and time.perf_counter() - started >= 0.15


@pytest.mark.gpu
@pytest.mark.skipif(not os.environ.get("E3RG_TEST_DICETALK_DIR"), reason="set E3RG_TEST_DICETALK_DIR to a DICE-Talk checkout")
def test_real_dicetalk(tmp_path):
    renderer = DiceTalkRenderer(checkout=Path(os.environ["E3RG_TEST_DICETALK_DIR"]))
    speech = make_speech(tmp_path / "s.wav", duration_s=2.0)
    video = renderer.render(speech, portrait=portrait_path(), emotion="happy", intensity=1.0, out_path=tmp_path / "h.mp4")
    assert video.fps == 25.0 and abs(video.duration_s - 2.0) <= 0.2
