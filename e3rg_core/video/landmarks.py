"""Portraits: read any image, find the one face, crop a face-centred square and cache its mesh.

Every renderer goes through ``prepare_portrait`` so odd inputs are handled once:

* RGBA is composited on white, grayscale and palette images become RGB;
* images larger than ``MAX_SIDE_PX`` are downscaled before detection;
* no face -> ``InputError`` saying so; several faces -> the largest, with a warning;
* a face narrower than ``MIN_FACE_PX`` -> ``InputError`` (too little detail to animate);
* a closed mouth whose inner lip contours the mesh placed crossed (the upper's points below the
  lower's, common on closed mouths) gets them on one seam, so speech opens the lips without the
  triangles between them turning over;
* the crop is a square around the face (padded with the edge colours when the image is too tight),
  resized to ``size_px``; the 468 mesh points are given in the crop's pixels.

Results are cached on disk under ``cache_dir`` by the portrait's content hash and the crop settings.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from e3rg_core.errors import InputError
from e3rg_core.video import topology

logger = logging.getLogger(__name__)

MAX_SIDE_PX = 2048  # larger portraits are downscaled first
MIN_SIDE_PX = 64
MIN_FACE_PX = 64  # face width (cheek to cheek) in the original image
SOFT_FACE_PX = 128  # below this the result looks soft: warn
FACE_SHARE = 0.42  # face width / crop width
EYES_AT = 0.42  # eye line height / crop height
_CACHE_VERSION = "mesh468-v2"


@dataclass(frozen=True)
class Portrait:
    """A face-centred RGB crop and its mesh."""

    image: np.ndarray  # uint8 [size, size, 3], RGB
    points: np.ndarray  # float32 [468, 3]: x, y in crop pixels, z relative depth in pixels
    source: Path
    face_px: float  # face width in the original image

    @property
    def size_px(self) -> int:
        return int(self.image.shape[0])


def read_rgb(path: Path) -> np.ndarray:
    """Read an image file as RGB uint8; alpha is composited on white, grey is expanded."""
    import cv2

    raw = cv2.imdecode(np.fromfile(str(path), dtype=np.uint8), cv2.IMREAD_UNCHANGED) if path.is_file() else None
    if raw is None:
        raise InputError(f"cannot read portrait {path}: not an image file OpenCV can decode (PNG, JPEG, WebP, BMP...)")
    if raw.dtype == np.uint16:
        raw = (raw / 257).astype(np.uint8)
    elif raw.dtype != np.uint8:
        raise InputError(f"portrait {path} has unsupported pixel type {raw.dtype}; use 8-bit PNG or JPEG")
    if raw.ndim == 2:
        return cv2.cvtColor(raw, cv2.COLOR_GRAY2RGB)
    if raw.shape[2] == 4:
        alpha = raw[:, :, 3:4].astype(np.float32) / 255.0
        rgb = cv2.cvtColor(raw[:, :, :3], cv2.COLOR_BGR2RGB).astype(np.float32)
        return (rgb * alpha + 255.0 * (1.0 - alpha)).round().astype(np.uint8)
    return cv2.cvtColor(raw[:, :, :3], cv2.COLOR_BGR2RGB)


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fit(rgb: np.ndarray, path: Path) -> tuple[np.ndarray, float]:
    """Downscale huge images; refuse tiny ones. Returns the image and the scale applied."""
    import cv2

    height, width = rgb.shape[:2]
    if min(height, width) < MIN_SIDE_PX:
        raise InputError(f"portrait {path} is {width}x{height} px; it needs at least {MIN_SIDE_PX} px a side")
    scale = min(1.0, MAX_SIDE_PX / max(height, width))
    if scale < 1.0:
        logger.info("downscaling portrait %s from %dx%d by %.3f", path, width, height, scale)
        rgb = cv2.resize(rgb, (round(width * scale), round(height * scale)), interpolation=cv2.INTER_AREA)
    return rgb, scale


def find_face(mesh, rgb: np.ndarray, path: Path) -> np.ndarray:
    """The mesh of the largest face in the image; ``InputError`` when there is none."""
    detections = mesh.detect(rgb)
    if not detections:
        raise InputError(f"no face found in portrait {path}; use a frontal photo with one clearly visible face")
    detections.sort(key=lambda d: d.area_px, reverse=True)
    if len(detections) > 1:
        logger.warning("portrait %s shows %d faces; animating the largest", path, len(detections))
    points = mesh.landmarks(rgb, detections[0])
    if points is None:
        raise InputError(f"a face was detected in portrait {path} but its features could not be located; "
                         "use a sharper frontal photo")
    return points


def close_seam(points: np.ndarray) -> np.ndarray:
    """The mesh with each crossed pair of inner lip points (upper below lower) moved to their middle."""
    out = points.copy()
    upper = list(topology.UPPER_INNER[1:-1])
    lower = list(topology.LOWER_INNER[1:-1])
    crossed = out[upper, 1] > out[lower, 1]
    if crossed.any():
        middle = (out[upper, 1] + out[lower, 1]) / 2
        out[np.array(upper)[crossed], 1] = middle[crossed]
        out[np.array(lower)[crossed], 1] = middle[crossed]
    return out


def crop_box(points: np.ndarray) -> tuple[float, float, float]:
    """Centre x, centre y and side (pixels) of the face-centred square crop."""
    left_eye, right_eye = topology.eye_centres(points)
    face_width = float(np.ptp(points[list(topology.FACE_OVAL), 0]))
    side = face_width / FACE_SHARE
    eyes = (left_eye + right_eye) / 2
    return float(eyes[0]), float(eyes[1] + (0.5 - EYES_AT) * side), side


def _crop(rgb: np.ndarray, points: np.ndarray, size_px: int) -> tuple[np.ndarray, np.ndarray]:
    import cv2

    centre_x, centre_y, side = crop_box(points)
    height, width = rgb.shape[:2]
    # shrink the square to fit inside the image when possible, so no padding is needed
    side = min(side, float(min(height, width))) if side > min(height, width) * 0.8 else side
    x0 = float(np.clip(centre_x - side / 2, 0, max(0.0, width - side)))
    y0 = float(np.clip(centre_y - side / 2, 0, max(0.0, height - side)))
    scale = size_px / side
    to_crop = np.array([[scale, 0.0, -x0 * scale], [0.0, scale, -y0 * scale]])
    image = cv2.warpAffine(rgb, to_crop, (size_px, size_px), flags=cv2.INTER_AREA if scale < 1 else cv2.INTER_CUBIC,
                           borderMode=cv2.BORDER_REPLICATE)
    out = points.copy()
    out[:, :2] = points[:, :2] * scale + to_crop[:, 2]
    out[:, 2] = points[:, 2] * scale
    return image, out


def prepare_portrait(path: Path, *, size_px: int, cache_dir: Path | None, mesh_factory=None) -> Portrait:
    """Read, check, crop and landmark a portrait (cached by content hash under ``cache_dir``)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"portrait {path} does not exist")
    key = f"{file_digest(path)}-{size_px}-{_CACHE_VERSION}"
    cached = cache_dir / "portraits" / f"{key}.npz" if cache_dir is not None else None
    if cached is not None and cached.is_file():
        try:
            with np.load(cached) as data:
                return Portrait(image=data["image"], points=data["points"], source=path,
                                face_px=float(data["face_px"]))
        except (OSError, KeyError, ValueError) as exc:
            logger.warning("ignoring unreadable portrait cache %s: %s", cached, exc)
    rgb, scale = _fit(read_rgb(path), path)
    if mesh_factory is None:
        from e3rg_core.video.facemesh import FaceMesh as mesh_factory
    points = close_seam(find_face(mesh_factory(), rgb, path))
    face_px = float(np.ptp(points[list(topology.FACE_OVAL), 0])) / scale
    if face_px < MIN_FACE_PX:
        raise InputError(f"the face in portrait {path} is {face_px:.0f} px wide; "
                         f"it needs at least {MIN_FACE_PX} px (ideally {SOFT_FACE_PX}+)")
    if face_px < SOFT_FACE_PX:
        logger.warning("the face in portrait %s is only %.0f px wide; the video will look soft", path, face_px)
    image, crop_points = _crop(rgb, points, size_px)
    portrait = Portrait(image=image, points=crop_points.astype(np.float32), source=path, face_px=face_px)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".tmp.npz")
        np.savez_compressed(partial, image=portrait.image, points=portrait.points, face_px=face_px)
        partial.replace(cached)
    return portrait
