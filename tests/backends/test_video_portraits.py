"""Portrait handling with the real face mesh: odd formats, no face, several faces, tiny, huge; the cache."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from e3rg_core.errors import InputError
from e3rg_core.video import topology as T
from e3rg_core.video.landmarks import prepare_portrait, read_rgb
from tests.video_support import portrait_path


@pytest.fixture(scope="module")
def astronaut():
    return read_rgb(portrait_path())


def _save(path, rgb_or_other):
    cv2.imwrite(str(path), rgb_or_other)
    return path


def _bgr(rgb):
    return cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)


def _check(portrait, size=512):
    assert portrait.image.shape == (size, size, 3) and portrait.image.dtype == np.uint8
    assert portrait.points.shape == (468, 3)
    xy = portrait.points[:, :2]
    assert (xy > 0).all() and (xy < size).all()
    face_w = np.ptp(xy[list(T.FACE_OVAL), 0])
    assert 0.3 * size < face_w < 0.6 * size  # a face-centred crop
    eyes = (T.eye_centres(portrait.points)[0] + T.eye_centres(portrait.points)[1]) / 2
    assert abs(eyes[0] - size / 2) < 0.1 * size


def test_colour_portrait(tmp_path):
    _check(prepare_portrait(portrait_path(), size_px=512, cache_dir=tmp_path))


def test_grayscale_and_rgba(tmp_path, astronaut):
    grey = _save(tmp_path / "grey.png", cv2.cvtColor(astronaut, cv2.COLOR_RGB2GRAY))
    _check(prepare_portrait(grey, size_px=512, cache_dir=None))
    rgba = np.dstack([_bgr(astronaut), np.full(astronaut.shape[:2], 255, np.uint8)])
    rgba[:40, :40, 3] = 0  # transparent corner -> white
    path = _save(tmp_path / "rgba.png", rgba)
    assert (read_rgb(path)[:40, :40] == 255).all()
    _check(prepare_portrait(path, size_px=256, cache_dir=None), size=256)


def test_huge_portrait_is_downscaled(tmp_path, astronaut):
    huge = cv2.resize(astronaut, (4400, 4400), interpolation=cv2.INTER_LINEAR)
    path = tmp_path / "huge.jpg"
    cv2.imwrite(str(path), _bgr(huge), [cv2.IMWRITE_JPEG_QUALITY, 80])
    portrait = prepare_portrait(path, size_px=512, cache_dir=None)
    _check(portrait)
    assert portrait.face_px > 700  # measured in the original's pixels


def test_no_face(tmp_path):
    gradient = np.tile(np.linspace(0, 255, 400, dtype=np.uint8), (300, 1))
    path = _save(tmp_path / "gradient.png", np.dstack([gradient, gradient[:, ::-1], gradient]))
    with pytest.raises(InputError, match="no face"):
        prepare_portrait(path, size_px=512, cache_dir=None)


def test_tiny_image_and_tiny_face(tmp_path, astronaut):
    with pytest.raises(InputError, match="at least 64 px"):
        prepare_portrait(_save(tmp_path / "icon.png", _bgr(cv2.resize(astronaut, (48, 48)))), size_px=512, cache_dir=None)
    small = cv2.resize(astronaut, (200, 200), interpolation=cv2.INTER_AREA)  # face ~36 px wide
    with pytest.raises(InputError, match=r"\d+ px wide; it needs at least 64 px"):
        prepare_portrait(_save(tmp_path / "small.png", _bgr(small)), size_px=512, cache_dir=None)


def test_several_faces_takes_the_largest(tmp_path, astronaut, caplog):
    smaller = cv2.resize(astronaut, (384, 384), interpolation=cv2.INTER_AREA)
    canvas = np.full((512, 512 + 384, 3), 200, np.uint8)
    canvas[:, :512] = astronaut
    canvas[64:448, 512:] = smaller[:, ::-1]
    path = _save(tmp_path / "two.png", _bgr(canvas))
    with caplog.at_level("WARNING"):
        portrait = prepare_portrait(path, size_px=512, cache_dir=None)
    _check(portrait)
    assert any("faces" in r.message for r in caplog.records)
    assert portrait.face_px > 80  # the full-size face, not the smaller copy


def test_unreadable_and_missing_files(tmp_path):
    bad = tmp_path / "notes.png"
    bad.write_text("not an image")
    with pytest.raises(InputError, match="cannot read portrait"):
        prepare_portrait(bad, size_px=512, cache_dir=None)
    with pytest.raises(InputError, match="does not exist"):
        prepare_portrait(tmp_path / "missing.png", size_px=512, cache_dir=None)


def test_cache_skips_the_face_mesh(tmp_path):
    first = prepare_portrait(portrait_path(), size_px=512, cache_dir=tmp_path)

    def no_mesh():
        raise AssertionError("the cached portrait should not run the face mesh")

    again = prepare_portrait(portrait_path(), size_px=512, cache_dir=tmp_path, mesh_factory=no_mesh)
    assert np.array_equal(first.image, again.image) and np.allclose(first.points, again.points)
    assert len(list((tmp_path / "portraits").glob("*.npz"))) == 1
