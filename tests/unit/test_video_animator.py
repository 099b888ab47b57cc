"""The performance track: visemes, loudness, emotion easing, blinks and head motion."""

from __future__ import annotations

import numpy as np
import pytest

from e3rg_core.types import TimedUnit
from e3rg_core.video.animator import VISEME_SHAPES, mouth_shapes, perform
from e3rg_core.video.rig import UNITS

FPS = 25
OCULUS = ("sil", "PP", "FF", "TH", "DD", "kk", "CH", "SS", "nn", "RR", "aa", "E", "ih", "oh", "ou")


def test_every_oculus_viseme_has_a_shape():
    assert set(VISEME_SHAPES) == set(OCULUS)
    assert VISEME_SHAPES["aa"][0] == max(shape[0] for shape in VISEME_SHAPES.values())
    assert VISEME_SHAPES["sil"] == (0.0,) * 5 and VISEME_SHAPES["PP"][3] == 1.0  # closed, pressed


def test_mouth_shapes_follow_the_timeline_a_little_early():
    timeline = (TimedUnit(0.0, 0.5, "sil"), TimedUnit(0.5, 0.9, "aa"), TimedUnit(0.9, 1.3, "ou"), TimedUnit(1.3, 2.0, "sil"))
    times = np.arange(50) / FPS
    shapes = mouth_shapes(timeline, times)
    jaw, rounding = shapes[:, 0], shapes[:, 1]
    assert jaw[:10].max() < 0.05 and jaw[18] > 0.9 and jaw[45:].max() < 0.05
    assert rounding[27] > 0.9 and rounding[18] < 0.1
    # the lips lead the sound: the jaw is already opening at the frame just before 0.5 s
    assert jaw[12] > 0.2


def test_jaw_scales_with_loudness_and_envelope_alone_drives_it_without_visemes():
    n = 40
    env = np.zeros(n)
    env[10:20] = 1.0
    env[25:35] = 0.3
    timeline = (TimedUnit(0.0, 1.6, "aa"),)
    jaw = perform(n_frames=n, fps=FPS, envelope=env, visemes=timeline).unit("jaw_open")
    assert jaw[15] > jaw[30] > jaw[5] >= 0
    bare = perform(n_frames=n, fps=FPS, envelope=env).unit("jaw_open")
    assert bare[15] > 0.6 and bare[5] < 0.05 and np.corrcoef(bare, env)[0, 1] > 0.8  # lead: 1 frame


def test_emotion_eases_in_from_the_portrait_and_scales_with_intensity():
    bank = {"corner_up": 0.12, "brow_raise": 0.05, "head_pitch": 0.04}
    show = perform(n_frames=50, fps=FPS, envelope=np.zeros(50), emotion=bank, intensity=0.5)
    assert np.allclose(show.weights[0], 0) and np.allclose(show.head[0], 0)
    assert show.unit("corner_up")[20:].min() == pytest.approx(0.06, rel=0.06)
    assert show.head[20:, 0].mean() > 0.015
    full = perform(n_frames=50, fps=FPS, envelope=np.zeros(50), emotion=bank, intensity=1.0)
    assert full.unit("corner_up")[30] == pytest.approx(2 * show.unit("corner_up")[30])


def test_blinks_are_quick_periodic_and_seeded():
    n = 20 * FPS
    a = perform(n_frames=n, fps=FPS, envelope=np.zeros(n), seed=1).unit("blink")
    b = perform(n_frames=n, fps=FPS, envelope=np.zeros(n), seed=1).unit("blink")
    c = perform(n_frames=n, fps=FPS, envelope=np.zeros(n), seed=2).unit("blink")
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    closed = a > 0.9
    starts = np.flatnonzero(closed[1:] & ~closed[:-1])
    assert 3 <= len(starts) <= 12  # one every 2-5 s (sometimes doubled)
    assert a[:FPS // 2].max() == 0.0  # never in the first half second
    assert (a > 0.05).sum() / len(starts) <= 8  # each lasts about a quarter second


def test_blink_closes_from_the_emotional_lid_position():
    n = 20 * FPS
    show = perform(n_frames=n, fps=FPS, envelope=np.zeros(n), emotion={"eye_open": 0.3}, seed=1)
    blink = show.unit("blink")
    i = int(np.argmax(blink))
    assert blink[i] == pytest.approx(1.0) and show.unit("eye_open")[i] == pytest.approx(0.0, abs=1e-9)


def test_head_moves_more_while_speaking():
    n = 10 * FPS
    env = np.zeros(n)
    env[5 * FPS:] = (np.sin(np.arange(5 * FPS) / FPS * 2 * np.pi * 4) > 0) * 0.9
    show = perform(n_frames=n, fps=FPS, envelope=env, seed=0)
    quiet, talking = np.abs(np.diff(show.head[FPS:5 * FPS], axis=0)), np.abs(np.diff(show.head[5 * FPS:], axis=0))
    assert talking[:, :3].sum() > 1.5 * quiet[:, :3].sum()
    assert np.abs(show.head[:, :3]).max() < 0.12  # a few degrees at most


def test_weights_have_one_column_per_unit():
    show = perform(n_frames=7, fps=FPS, envelope=np.ones(3))
    assert show.weights.shape == (7, len(UNITS)) and show.head.shape == (7, 5) and show.n_frames == 7


def test_pieces_of_a_reply_join_where_the_whole_reply_would_be():
    """A reply rendered in pieces (streaming) follows one clock: emotion, blinks and sway carry on."""
    n, cut = 200, 80
    bank = {"brow_raise": 0.6, "eye_open": 0.3, "head_pitch": 0.05}
    whole = perform(n_frames=n, fps=FPS, envelope=np.zeros(n), emotion=bank, seed=3)
    first = perform(n_frames=cut, fps=FPS, envelope=np.zeros(cut), emotion=bank, seed=3)
    rest = perform(n_frames=n - cut, fps=FPS, envelope=np.zeros(n - cut), emotion=bank, seed=3, start_s=cut / FPS)
    joined_weights = np.concatenate([first.weights, rest.weights])
    joined_head = np.concatenate([first.head, rest.head])
    np.testing.assert_allclose(joined_weights, whole.weights, atol=1e-9)
    np.testing.assert_allclose(joined_head, whole.head, atol=1e-9)
    # the second piece does not ease the emotion in again from the bare portrait
    assert rest.unit("brow_raise")[0] > 0.5 * 0.6
    # while a clip from the start does
    assert first.unit("brow_raise")[0] == 0.0


def test_negative_start_is_refused():
    with pytest.raises(ValueError, match="start_s"):
        perform(n_frames=5, fps=FPS, envelope=np.zeros(5), start_s=-1.0)


def test_the_relaxed_face_eases_in_whatever_the_intensity():
    """``relax`` (the photo's own smile taken away) is where every emotion starts, faint or strong."""
    bank = {"relax": 1.0, "corner_up": -0.1}
    faint = perform(n_frames=50, fps=FPS, envelope=np.zeros(50), emotion=bank, intensity=0.2)
    assert faint.unit("relax")[0] == 0.0  # the first frame is still the portrait
    assert faint.unit("relax")[20:] == pytest.approx(1.0)  # not 0.2, and no breathing on it
    assert faint.unit("corner_up")[20:].mean() == pytest.approx(-0.02, rel=0.06)
