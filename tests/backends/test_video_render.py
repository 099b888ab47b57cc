"""The embedded ``mesh`` renderer end to end, measured on the MP4s it writes (never on its state)."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from e3rg_core.emotions import COARSE
from e3rg_core.errors import InputError
from e3rg_core.media.audio import frame_rms, read_audio
from e3rg_core.media.mp4 import probe, read_frames
from e3rg_core.video.embedded import MeshRenderer
from tests.video_support import feature_moves, make_speech, mouth_darkness, portrait_path

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("render")


@pytest.fixture(scope="module")
def renderer(workdir):
    return MeshRenderer(cache_dir=workdir / "cache", seed=3)


@pytest.fixture(scope="module")
def talking(renderer, workdir):
    """A 4.3 s synthetic utterance rendered in neutral: (speech, video, decoded frames)."""
    speech = make_speech(workdir / "speech.wav", duration_s=4.3, seed=1)
    video = renderer.render(speech, portrait=portrait_path(), emotion="neutral", intensity=1.0,
                            out_path=workdir / "neutral_talk.mp4")
    return speech, video, list(read_frames(video.mp4_path))


@pytest.fixture(scope="module")
def quiet_videos(renderer, workdir):
    """Each of the 8 emotions at full intensity on 2.4 s of near-silence (same seed, same life track)."""
    speech = make_speech(workdir / "quiet.wav", duration_s=2.4, quiet=True)
    out = {}
    for label in COARSE:
        video = renderer.render(speech, portrait=portrait_path(), emotion=label, intensity=1.0,
                                out_path=workdir / f"quiet_{label}.mp4")
        out[label] = list(read_frames(video.mp4_path))
    return out


def test_streams_lengths_and_sync(talking):
    speech, video, frames = talking
    info = probe(video.mp4_path)
    assert (info.width, info.height, info.fps) == (512, 512, 25.0)
    assert info.video_codec == "h264" and info.audio_codec == "aac"
    assert info.n_frames == video.n_frames == len(frames) == math.ceil(4.3 * 25)
    assert abs(info.n_frames / info.fps - speech.duration_s) <= 1 / info.fps
    # the audio track starts with the video and lasts as long as the speech (AAC pads < 1 frame)
    assert abs(info.audio_duration_s - speech.duration_s) < 1 / info.fps


def test_first_frame_is_the_portrait(renderer, talking):
    _, _, frames = talking
    portrait = renderer.puppet(portrait_path()).portrait.image
    assert cv2.PSNR(portrait, frames[0]) > 32.0


def test_mouth_opening_follows_the_speech_envelope(talking):
    speech, _, frames = talking
    audio = read_audio(speech.wav_path)
    rms = frame_rms(audio.samples, audio.sample_rate_hz, fps=25, n_frames=len(frames))
    opening = mouth_darkness(frames)
    assert opening.max() > 0.1  # the mouth does open
    assert np.corrcoef(opening, rms)[0, 1] >= 0.6


def test_background_stays_still_while_the_head_moves(talking):
    _, _, frames = talking
    corners = [(slice(0, 60), slice(0, 60)), (slice(0, 60), slice(452, 512)), (slice(452, 512), slice(0, 60))]
    for frame in frames[::10]:
        for rows, cols in corners:
            diff = np.abs(frame[rows, cols].astype(int) - frames[0][rows, cols].astype(int)).mean()
            assert diff < 3.0


@pytest.mark.parametrize("label, feature, sign, least", [
    ("happy", "corners", -1, 0.04), ("sad", "corners", +1, 0.03), ("surprised", "brows", -1, 0.05),
    ("surprised", "upper_lids", -1, 0.008), ("angry", "brows", +1, 0.03), ("fear", "brows", -1, 0.04),
    ("disgusted", "upper_lip", -1, 0.03), ("sad", "inner_brows", -1, 0.015),
])
def test_each_emotion_moves_its_features(quiet_videos, label, feature, sign, least):
    """Feature motion against neutral, in eye distances; y grows downwards, so -1 means "raised"."""
    moves = feature_moves(quiet_videos["neutral"], quiet_videos[label])
    assert sign * moves[feature] > least, moves


def test_sad_brows_slant_and_contempt_is_one_sided(quiet_videos):
    sad = feature_moves(quiet_videos["neutral"], quiet_videos["sad"])
    assert sad["inner_brows"] < sad["brows"] - 0.01  # inner ends raised more than the rest
    contempt = feature_moves(quiet_videos["neutral"], quiet_videos["contempt"])
    assert contempt["right_corner"] < contempt["left_corner"] - 0.02


def test_neutral_quiet_video_keeps_still_features(quiet_videos):
    moves = feature_moves(quiet_videos["neutral"], quiet_videos["neutral"])
    assert all(abs(v) < 1e-3 for v in moves.values())


def test_bad_emotion_is_refused_before_any_file_is_written(renderer, workdir, talking):
    speech, _, _ = talking
    with pytest.raises(InputError, match="choose from"):
        renderer.render(speech, portrait=portrait_path(), emotion="furious", intensity=1.0,
                        out_path=workdir / "never.mp4")
    assert not (workdir / "never.mp4").exists()
