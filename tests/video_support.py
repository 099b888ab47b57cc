"""Media made in code for the talking-head tests, and measurements taken on produced videos.

* ``make_speech``: a voiced buzz in syllables (consonant + vowel, pauses between words) with the
  matching Oculus viseme timeline, written as a WAV;
* ``portrait_path``: the astronaut portrait from the scikit-image wheel (NASA, public domain);
* ``mouth_darkness`` / ``feature_moves``: what the face does, measured on decoded frames only
  (the face mesh locates regions on the first frame; pixels and optical flow do the rest).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from e3rg_core.types import Speech, TimedUnit

VOWEL_LOUDNESS = {"aa": 1.0, "oh": 0.85, "E": 0.7, "ih": 0.55, "ou": 0.5}
CONSONANTS = ("PP", "DD", "SS", "kk", "nn", "FF", "CH", "RR", "TH")


def portrait_path() -> Path:
    """The astronaut portrait shipped inside scikit-image (public domain)."""
    spec = importlib.util.find_spec("skimage")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("scikit-image is needed for the portrait fixture: pip install scikit-image==0.26.0")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "astronaut.png"


def make_speech(path: Path, *, duration_s: float = 4.0, seed: int = 0, rate_hz: int = 24000,
                quiet: bool = False) -> Speech:
    """Write synthetic speech (or near-silence with ``quiet``) and return its ``Speech`` value."""
    import soundfile

    rng = np.random.default_rng(seed)
    t = np.arange(int(duration_s * rate_hz)) / rate_hz
    amp = np.zeros_like(t)
    visemes = [TimedUnit(0.0, 0.25, "sil")]
    cur = 0.25
    while not quiet and cur < duration_s - 0.45:
        if rng.random() < 0.15:
            pause = rng.uniform(0.25, 0.45)
            visemes.append(TimedUnit(cur, cur + pause, "sil"))
            cur += pause
            continue
        cons, vow = rng.uniform(0.05, 0.09), rng.uniform(0.12, 0.25)
        vowel = str(rng.choice(list(VOWEL_LOUDNESS)))
        visemes += [TimedUnit(cur, cur + cons, str(rng.choice(CONSONANTS))), TimedUnit(cur + cons, cur + cons + vow, vowel)]
        inside = (t >= cur + cons) & (t < cur + cons + vow)
        amp[inside] = VOWEL_LOUDNESS[vowel] * rng.uniform(0.7, 1.0) * np.sin(np.pi * (t[inside] - cur - cons) / vow) ** 0.6
        cur += cons + vow
    visemes.append(TimedUnit(cur, duration_s, "sil"))
    phase = 2 * np.pi * np.cumsum(140 * (1 + 0.05 * np.sin(2 * np.pi * 0.7 * t))) / rate_hz
    buzz = sum(np.sin(k * phase) / k for k in range(1, 12))
    samples = 0.25 * amp * buzz + 0.002 * rng.standard_normal(len(t))
    soundfile.write(str(path), samples.astype(np.float32), rate_hz)
    return Speech(wav_path=Path(path), sample_rate_hz=rate_hz, duration_s=duration_s, text="(synthetic)",
                  emotion="neutral", intensity=0.0, voice="test:buzz", visemes=() if quiet else tuple(visemes))


def first_mesh(frame: np.ndarray) -> np.ndarray:
    """The face mesh of a decoded frame (used only to locate regions)."""
    from e3rg_core.video.facemesh import FaceMesh

    mesh = FaceMesh()
    found = mesh.detect(frame)
    if not found:
        raise AssertionError("no face in the video frame")
    return mesh.landmarks(frame, max(found, key=lambda d: d.area_px))


def mouth_darkness(frames: list[np.ndarray]) -> np.ndarray:
    """Share of dark pixels in the mouth region of each frame (the open mouth's cavity)."""
    import cv2

    from e3rg_core.video import topology as T

    points = first_mesh(frames[0])
    iod = T.interocular_px(points)
    x0, x1 = int(points[61, 0] - 0.1 * iod), int(points[291, 0] + 0.1 * iod)
    y0, y1 = int(points[0, 1] - 0.1 * iod), int(points[17, 1] + 0.35 * iod)
    skin = np.median(cv2.cvtColor(frames[0], cv2.COLOR_RGB2GRAY)[int(points[1, 1]) - 10:int(points[1, 1]) + 10,
                                                                     int(points[1, 0]) - 10:int(points[1, 0]) + 10])
    out = []
    for frame in frames:
        grey = cv2.cvtColor(frame[y0:y1, x0:x1], cv2.COLOR_RGB2GRAY)
        out.append(float((grey < 0.4 * skin).mean()))
    return np.array(out)


FEATURES = {
    "corners": (61, 291), "left_corner": (61,), "right_corner": (291,), "inner_brows": (107, 336, 55, 285),
    "brows": (105, 334, 66, 296, 52, 282), "upper_lids": (159, 386), "upper_lip": (0, 37, 267),
}
_EYE_CORNERS = (33, 133, 362, 263)


def feature_moves(neutral: list[np.ndarray], other: list[np.ndarray], frame_ids=(30, 40, 50)) -> dict[str, float]:
    """Vertical motion of face features from the neutral video to another (eye distances, + = down).

    Optical flow between the two videos' frames, read at the features the mesh finds on the neutral
    video's first frame, relative to the eye corners (which only the head moves).
    """
    import cv2

    from e3rg_core.video import topology as T

    points = first_mesh(neutral[0])
    iod = T.interocular_px(points)
    moves: dict[str, list[float]] = {name: [] for name in FEATURES}
    for i in frame_ids:
        a = cv2.cvtColor(neutral[i], cv2.COLOR_RGB2GRAY)
        b = cv2.cvtColor(other[i], cv2.COLOR_RGB2GRAY)
        flow = cv2.calcOpticalFlowFarneback(a, b, None, 0.5, 4, 21, 5, 7, 1.5, 0)

        def at(ids, flow=flow):
            return np.array([flow[int(round(points[j, 1])), int(round(points[j, 0]))] for j in ids])

        reference = np.median(at(_EYE_CORNERS), axis=0)
        for name, ids in FEATURES.items():
            moves[name].append(float((at(ids).mean(axis=0) - reference)[1] / iod))
    return {name: float(np.median(values)) for name, values in moves.items()}
