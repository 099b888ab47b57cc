"""The rig, the warp and the mouth on the real portrait mesh (the face mesh model ships in a wheel)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from e3rg_core.video import topology as T
from e3rg_core.video.animator import VISEME_SHAPES
from e3rg_core.video.bank import load_mesh_bank
from e3rg_core.video.landmarks import close_seam, prepare_portrait
from e3rg_core.video.puppet import Puppet
from e3rg_core.video.rig import SPEECH_UNITS, UNITS, build_rig
from e3rg_core.video.warp import TriangleWarp, _signed_area
from tests.video_support import portrait_path

ROOT = Path(__file__).resolve().parents[2]


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


def test_chin_raise_lifts_the_middle_of_the_mouth_and_holds_the_corners(puppet):
    rest, iod = puppet.rig.rest, puppet.rig.iod_px
    moved = puppet.points(_weights(chin_raise=0.1), np.zeros(5))
    dy = (moved[:, 1] - rest[:, 1]) / iod
    assert dy[14] < -0.08 and dy[17] < -0.08  # the lower lip, inner and outer edge
    assert dy[13] == pytest.approx(dy[14], abs=0.005)  # the upper lip goes with it: they never cross
    assert abs(dy[61]) < 0.02 and abs(dy[291]) < 0.02  # the corners hold: a frown's arch
    assert np.abs(dy[list(T.LEFT_EYE_UPPER + T.RIGHT_EYE_UPPER + T.NOSE_BRIDGE)]).max() < 1e-3


def test_relax_closes_the_smile_of_the_portrait_and_levels_its_corners(puppet):
    """The astronaut smiles with parted lips; ``relax`` at 1 closes them and brings the corners down."""
    rig = puppet.rig

    def face_y(points):  # eye distances down the face, so the portrait's slight tilt does not count
        return ((points - rig.origin) @ rig.axes / rig.iod_px)[:, 1]

    rest = face_y(rig.rest)
    assert rest[14] - rest[13] > 0.1  # the portrait's own parting
    assert ((rest[13] + rest[14]) / 2 - rest[list(T.MOUTH_CORNERS)]).min() > 0.1  # and raised corners
    moved = face_y(puppet.points(_weights(relax=1.0), np.zeros(5)))
    assert abs(moved[14] - moved[13]) < 0.005
    assert np.abs((moved[13] + moved[14]) / 2 - moved[list(T.MOUTH_CORNERS)]).max() < 0.01
    eyes_and_brows = list(T.LEFT_EYE_UPPER + T.RIGHT_EYE_UPPER + T.LEFT_BROW + T.RIGHT_BROW)
    assert np.abs(moved[eyes_and_brows] - rest[eyes_and_brows]).max() < 0.002
    # pressing, tucking and the chin work on the closed lips: the lower lip does not rise over the upper one
    for speech in ({"lip_press": 1.0}, {"lip_tuck": 1.0}, {"chin_raise": 0.15}):
        moved = (puppet.points(_weights(relax=1.0, **speech), np.zeros(5)) - rig.origin) @ rig.axes / rig.iod_px
        upper, lower = moved[list(T.UPPER_INNER)], moved[list(T.LOWER_INNER[1:-1])]
        order = np.argsort(upper[:, 0])
        above = np.interp(lower[:, 0], upper[order, 0], upper[order, 1])
        assert (lower[:, 1] - above).min() > -0.02, speech  # a pixel or two: the two contours are sampled apart


def test_relax_leaves_a_closed_level_mouth_alone(tmp_path):
    portrait = prepare_portrait(ROOT / "avatars" / "rosa" / "portrait.png", size_px=256, cache_dir=tmp_path)
    rig = build_rig(portrait.points)
    assert np.abs(rig.units[UNITS.index("relax")]).max() / rig.iod_px < 0.03


def test_a_relaxed_mouth_shows_its_inside_only_when_the_jaw_opens(puppet):
    relaxed = puppet.frame(_weights(relax=1.0), np.zeros(5))
    assert np.array_equal(relaxed, puppet.warp.warp(puppet.targets(_weights(relax=1.0), np.zeros(5))))
    opened = puppet.frame(_weights(relax=1.0, jaw_open=0.8), np.zeros(5))
    lips = puppet.points(_weights(relax=1.0, jaw_open=0.8), np.zeros(5))
    x0, x1 = int(lips[78, 0]), int(lips[308, 0])
    y0, y1 = int(lips[13, 1]), int(lips[14, 1])
    grey = cv2.cvtColor(opened, cv2.COLOR_RGB2GRAY)[y0:y1, x0:x1]
    assert (grey < 90).mean() > 0.3  # the painted cavity, not the photo's teeth stretched


def test_no_triangle_folds_for_any_mouth_shape_and_emotion(puppet):
    """Every viseme x every emotion (x blink): no triangle turns over, except lips collapsing shut."""
    for label, symbol, blink, w in _every_pose():
        folded = _folded(puppet, w)
        assert not folded.any(), (label, symbol, blink, puppet.warp.triangles[folded].tolist())


def _every_pose():
    """(emotion, viseme, blink, unit weights) for every emotion of the bank x every viseme x blink."""
    for label, values in load_mesh_bank().items():
        for symbol, shape in VISEME_SHAPES.items():
            for blink in (0.0, 1.0):
                w = _weights(**{k: v for k, v in values.items() if k in UNITS})
                for name, value in zip(SPEECH_UNITS, shape):
                    w[UNITS.index(name)] += value
                w[UNITS.index("blink")] = blink
                w[UNITS.index("eye_open")] *= 1 - blink
                w[UNITS.index("lower_lid")] *= 1 - blink
                yield label, symbol, blink, w


def _folded(puppet, w):
    """Which of the puppet's triangles the pose ``w`` turns over (both areas over 2 px², opposite signs)."""
    rest_area = _signed_area(puppet.warp.rest, puppet.warp.triangles)
    area = _signed_area(puppet.targets(w, np.zeros(5)), puppet.warp.triangles)
    return (np.sign(area) != np.sign(rest_area)) & (np.abs(rest_area) > 2.0) & (np.abs(area) > 2.0)


@pytest.mark.parametrize("avatar_id", ["amara", "daniel", "rosa", "kofi"])
def test_shipped_faces_fold_nowhere_but_at_the_lip_seam(avatar_id, tmp_path):
    """The painted faces have closed mouths: opening them may turn a sliver between the lips over, but
    every emotion x viseme x blink leaves brows, lids, nose and jaw unfolded."""
    portrait = prepare_portrait(ROOT / "avatars" / avatar_id / "portrait.png", size_px=512, cache_dir=tmp_path)
    puppet = Puppet(portrait)
    lips = set(T.UPPER_INNER + T.LOWER_INNER + T.UPPER_OUTER + T.LOWER_OUTER + T.UPPER_LIP_BODY + T.LOWER_LIP_BODY)
    for label, symbol, blink, w in _every_pose():
        outside = [t for t in puppet.warp.triangles[_folded(puppet, w)].tolist() if not set(t) <= lips]
        assert not outside, (label, symbol, blink, outside)


def test_a_crossed_closed_seam_is_put_on_one_line():
    """The mesh often places a closed mouth's inner upper lip a pixel below the lower: both go to the middle."""
    points = np.zeros((468, 3))
    points[list(T.UPPER_INNER), 1] = 10.0
    points[list(T.LOWER_INNER), 1] = 12.0  # open: left alone
    points[13, 1], points[14, 1] = 12.0, 10.0  # crossed at the centre
    closed = close_seam(points)
    assert closed[13, 1] == closed[14, 1] == 11.0
    assert closed[82, 1] == 10.0 and closed[87, 1] == 12.0
    assert np.array_equal(np.delete(closed, [13, 14], axis=0), np.delete(points, [13, 14], axis=0))


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
