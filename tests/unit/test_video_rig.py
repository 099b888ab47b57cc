"""The rig, the warp and the mouth on the real portrait mesh (the face mesh model ships in a wheel)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from e3rg_core.video import topology as T
from e3rg_core.video.animator import VISEME_SHAPES
from e3rg_core.video.bank import load_mesh_bank
from e3rg_core.video.landmarks import prepare_portrait
from e3rg_core.video.puppet import Puppet
from e3rg_core.video.rig import SPEECH_UNITS, UNITS
from e3rg_core.video.warp import TriangleWarp, _signed_area
from tests.video_support import portrait_path


@pytest.fixture(scope="module")
def puppet(tmp_path_factory):
    portrait = prepare_portrait(portrait_path(), size_px=512, cache_dir=tmp_path_factory.mktemp("cache"))
    return Puppet(portrait)


def _weights(**values):
    w = np.zeros(len(UNITS))
    for name, value in values.items():
        w[UNITS.index(name)] = value
    return w


def test_rest_pose_renders_the_portrait(puppet):
    frame = puppet.frame(_weights(), np.zeros(5))
    assert cv2.PSNR(frame, puppet.portrait.image) > 45


def test_jaw_drops_the_chin_and_leaves_the_eyes(puppet):
    rest = puppet.rig.rest
    moved = puppet.points(_weights(jaw_open=1.0), np.zeros(5))
    iod = puppet.rig.iod_px
    assert 0.15 * iod < moved[T.CHIN, 1] - rest[T.CHIN, 1] < 0.35 * iod
    assert moved[14, 1] - rest[14, 1] > 0.12 * iod  # the lower lip goes with it
    assert abs(moved[13, 1] - rest[13, 1]) < 0.05 * iod  # the upper lip nearly stays
    eyes_and_brows = list(T.LEFT_EYE_UPPER + T.RIGHT_EYE_UPPER + T.LEFT_BROW + T.RIGHT_BROW)
    assert np.abs(moved[eyes_and_brows] - rest[eyes_and_brows]).max() < 0.01 * iod


def test_blink_closes_both_eyes(puppet):
    moved = puppet.points(_weights(blink=1.0), np.zeros(5))
    for upper, lower in ((T.LEFT_EYE_UPPER, T.LEFT_EYE_LOWER), (T.RIGHT_EYE_UPPER, T.RIGHT_EYE_LOWER)):
        mid_up, mid_low = upper[len(upper) // 2], lower[len(lower) // 2]
        assert moved[mid_up, 1] >= moved[mid_low, 1] - 1.0  # the lids meet


def test_emotion_units_move_the_right_places(puppet):
    rest, iod = puppet.rig.rest, puppet.rig.iod_px
    def dy(index, **w):
        return (puppet.points(_weights(**w), np.zeros(5))[index, 1] - rest[index, 1]) / iod
    assert dy(61, corner_up=0.1) < -0.08 and dy(291, corner_up=0.1) < -0.08
    assert dy(105, brow_raise=0.1) < -0.08 and dy(61, brow_raise=0.1) == pytest.approx(0, abs=1e-3)
    inner, outer = dy(107, brow_inner_raise=0.1), dy(70, brow_inner_raise=0.1)
    assert inner < -0.06 and outer > inner / 2  # the inner end rises, the outer end hardly
    assert dy(0, upper_lip_raise=0.06) < -0.05
    assert dy(291, smirk=0.1) < -0.08 and abs(dy(61, smirk=0.1)) < 0.01


def test_no_triangle_folds_for_any_mouth_shape_and_emotion(puppet):
    """Every viseme x every emotion (x blink): no triangle turns over, except lips collapsing shut."""
    bank = load_mesh_bank()
    warp = puppet.warp
    rest_area = _signed_area(warp.rest, warp.triangles)
    for label, values in bank.items():
        for symbol, shape in VISEME_SHAPES.items():
            for blink in (0.0, 1.0):
                w = _weights(**{k: v for k, v in values.items() if k in UNITS})
                for name, value in zip(SPEECH_UNITS, shape):
                    w[UNITS.index(name)] += value
                w[UNITS.index("blink")] = blink
                w[UNITS.index("eye_open")] *= 1 - blink
                w[UNITS.index("lower_lid")] *= 1 - blink
                target = puppet.targets(w, np.zeros(5))
                area = _signed_area(target, warp.triangles)
                folded = (np.sign(area) != np.sign(rest_area)) & (np.abs(rest_area) > 2.0) & (np.abs(area) > 2.0)
                assert not folded.any(), (label, symbol, blink, warp.triangles[folded].tolist())


def test_warp_moves_content_with_a_vertex():
    image = np.zeros((128, 128, 3), np.uint8)
    image[60:68, 60:68] = 255
    border = [(x, y) for x in (-0.5, 63.5, 127.5) for y in (-0.5, 63.5, 127.5) if (x, y) != (63.5, 63.5)]
    vertices = np.array([(64.0, 64.0)] + border)
    warp = TriangleWarp(image, vertices, map_scale=1.0)
    assert np.array_equal(warp.warp(vertices), image)
    moved = vertices.copy()
    moved[0] += (6.0, -4.0)
    out = warp.warp(moved)
    ys, xs = np.nonzero(out[..., 0] > 128)
    assert abs(xs.mean() - (63.5 + 6)) < 1.0 and abs(ys.mean() - (63.5 - 4)) < 1.0


def test_a_turned_over_triangle_paints_nothing_mirrored():
    image = np.zeros((64, 64, 3), np.uint8)
    image[:, :32] = 200
    vertices = np.array([(-0.5, -0.5), (63.5, -0.5), (-0.5, 63.5), (63.5, 63.5), (32.0, 32.0)])
    warp = TriangleWarp(image, vertices, map_scale=1.0)
    crazy = vertices.copy()
    crazy[4] = (80.0, 80.0)  # the centre vertex jumps outside: some triangles turn over
    out = warp.warp(crazy)
    assert out.shape == image.shape  # no crash; uncovered pixels keep the identity map
