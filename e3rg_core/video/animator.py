"""The performance: per-frame rig weights and head pose from speech, emotion and life.

Three layers are added per frame, all deterministic given ``seed``:

* speech: the viseme timeline sets the mouth shape (jaw, rounding, spreading, pressing, tucking);
  the speech envelope scales how far the jaw opens. Without visemes the envelope alone drives it.
* emotion: the bank's unit values for the coarse class, times the intensity, eased in over the first
  half second so the first frame is the portrait itself (``relax``, which takes the photo's own
  expression away, is eased in but not scaled by the intensity);
* life: blinks every few seconds, slow idle sway of the head, and small nods on syllable onsets
  while speaking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from e3rg_core.types import TimedUnit
from e3rg_core.video.rig import HEAD_AXES, UNITS

#: Oculus viseme -> (jaw_open, lip_round, lip_spread, lip_press, lip_tuck)
VISEME_SHAPES: dict[str, tuple[float, float, float, float, float]] = {
    "sil": (0.0, 0.0, 0.0, 0.0, 0.0),
    "PP": (0.0, 0.1, 0.0, 1.0, 0.0),
    "FF": (0.12, 0.0, 0.2, 0.0, 1.0),
    "TH": (0.28, 0.0, 0.15, 0.0, 0.0),
    "DD": (0.32, 0.0, 0.25, 0.0, 0.0),
    "kk": (0.38, 0.0, 0.15, 0.0, 0.0),
    "CH": (0.26, 0.6, 0.0, 0.0, 0.0),
    "SS": (0.16, 0.0, 0.55, 0.0, 0.0),
    "nn": (0.22, 0.0, 0.15, 0.0, 0.0),
    "RR": (0.28, 0.65, 0.0, 0.0, 0.0),
    "aa": (1.0, 0.0, 0.1, 0.0, 0.0),
    "E": (0.55, 0.0, 0.6, 0.0, 0.0),
    "ih": (0.4, 0.0, 0.5, 0.0, 0.0),
    "oh": (0.72, 0.75, 0.0, 0.0, 0.0),
    "ou": (0.38, 1.0, 0.0, 0.0, 0.0),
}
_SPEECH = ("jaw_open", "lip_round", "lip_spread", "lip_press", "lip_tuck")
_LEAD_S = 0.04  # the lips move slightly before the sound is heard
_COARTICULATION_S = 0.035  # Gaussian blur of the mouth-shape track
_EASE_IN_S = 0.5


@dataclass(frozen=True)
class Performance:
    """What the face does in every frame."""

    weights: np.ndarray  # [n_frames, len(UNITS)]
    head: np.ndarray  # [n_frames, 5]: pitch, yaw, roll (radians), shift x, shift y (eye distances)
    fps: float

    @property
    def n_frames(self) -> int:
        return int(self.weights.shape[0])

    def unit(self, name: str) -> np.ndarray:
        """One unit's weight over time."""
        return self.weights[:, UNITS.index(name)]


def _smooth(track: np.ndarray, sigma_frames: float) -> np.ndarray:
    if sigma_frames <= 0 or len(track) < 2:
        return track
    radius = max(1, int(3 * sigma_frames))
    kernel = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma_frames) ** 2)
    kernel /= kernel.sum()
    padded = np.pad(track, [(radius, radius)] + [(0, 0)] * (track.ndim - 1), mode="edge")
    if track.ndim == 1:
        return np.convolve(padded, kernel, mode="valid")
    return np.stack([np.convolve(padded[:, k], kernel, mode="valid") for k in range(track.shape[1])], axis=1)


def mouth_shapes(visemes: Sequence[TimedUnit], times_s: np.ndarray) -> np.ndarray:
    """Mouth-shape track ``[n, 5]`` sampled at ``times_s``, with the lead and co-articulation applied."""
    rate_hz = 200.0
    fine_t = np.arange(0.0, float(times_s[-1]) + 0.5, 1.0 / rate_hz) if len(times_s) else np.zeros(0)
    fine = np.zeros((len(fine_t), len(_SPEECH)))
    for unit in visemes:
        shape = VISEME_SHAPES.get(unit.symbol)
        if shape is None:
            continue
        lo, hi = np.searchsorted(fine_t, [unit.start_s - _LEAD_S, unit.end_s - _LEAD_S])
        fine[lo:hi] = shape
    fine = _smooth(fine, _COARTICULATION_S * rate_hz)
    return np.stack([np.interp(times_s, fine_t, fine[:, k]) for k in range(len(_SPEECH))], axis=1)


def _ease(t: np.ndarray, duration_s: float) -> np.ndarray:
    x = np.clip(t / duration_s, 0.0, 1.0)
    return x * x * (3 - 2 * x)


def _blinks(times_s: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Eye closure 0..1: quick close, short hold, slower open; a blink every 2-5 s.

    The schedule is drawn from time 0 on, so a piece of a reply (``times_s`` starting later) blinks
    where the whole reply would have.
    """
    closure = np.zeros_like(times_s)
    start = rng.uniform(0.9, 2.2)
    end_s = float(times_s[-1]) if len(times_s) else 0.0
    while start < end_s:
        for t0 in (start, start + 0.35) if rng.random() < 0.15 else (start,):  # sometimes a double blink
            rel = times_s - t0
            shape = np.where(rel < 0.08, rel / 0.08, np.where(rel < 0.12, 1.0, 1.0 - (rel - 0.12) / 0.16))
            closure = np.maximum(closure, np.where((rel >= 0) & (rel < 0.28), np.clip(shape, 0, 1), 0.0))
        start += rng.uniform(2.0, 5.0)
    return closure


def _sway(times_s: np.ndarray, rng: np.random.Generator, amplitude: float) -> np.ndarray:
    """Slow idle motion: a few incommensurate sines with random phases, zero at time 0."""
    out = np.zeros_like(times_s)
    for freq_hz, share in ((0.11, 0.5), (0.23, 0.3), (0.47, 0.2)):
        freq, phase = freq_hz * rng.uniform(0.8, 1.25), rng.uniform(0, 2 * np.pi)
        out += share * (np.sin(2 * np.pi * freq * times_s + phase) - np.sin(phase))
    return amplitude * out


def perform(
    *,
    n_frames: int,
    fps: float,
    envelope: np.ndarray,
    visemes: Sequence[TimedUnit] = (),
    emotion: Mapping[str, float] | None = None,
    intensity: float = 1.0,
    seed: int = 0,
    start_s: float = 0.0,
) -> Performance:
    """Per-frame unit weights and head pose.

    ``envelope`` is the speech loudness per frame, 0..1; ``emotion`` the bank's values for one class
    (units and ``head_pitch``/``head_yaw``/``head_roll``) at full intensity. ``start_s`` is where
    this clip starts in a longer reply rendered in pieces (streaming): the emotion's ease-in, the
    blinks, the idle sway and the breathing follow the reply's clock, so the pieces join without a jump.
    """
    if start_s < 0:
        raise ValueError(f"start_s must be >= 0, not {start_s}")
    # one generator per layer, so a layer's draws never depend on how long another layer's clip is
    breath_rng, blink_rng, sway_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    local = np.arange(n_frames) / fps
    times = start_s + local
    env = np.clip(np.asarray(envelope, dtype=np.float64)[:n_frames], 0.0, 1.0)
    env = np.pad(env, (0, n_frames - len(env)))
    weights = np.zeros((n_frames, len(UNITS)))
    head = np.zeros((n_frames, len(HEAD_AXES)))

    # speech
    env_lead = np.interp(local + _LEAD_S, local, env) if n_frames else env  # the clip's own audio clock
    if any(v.symbol in VISEME_SHAPES and v.symbol != "sil" for v in visemes):
        shapes = mouth_shapes(visemes, local)
        shapes[:, 0] *= 0.3 + 0.7 * env_lead
    else:  # no timeline: open with the loudness, spread a little
        shapes = np.zeros((n_frames, len(_SPEECH)))
        shapes[:, 0] = 0.85 * env_lead
        shapes[:, 2] = 0.2 * env_lead
    for k, name in enumerate(_SPEECH):
        weights[:, UNITS.index(name)] += shapes[:, k]

    # emotion, eased in so the first frame is the portrait; the relaxed face it grows from is not
    # scaled by the intensity (a faint sadness is not a faint version of the photo's smile)
    ease = _ease(times, _EASE_IN_S)
    strength = ease * float(np.clip(intensity, 0.0, 1.0))
    breathing = 1.0 + 0.04 * np.sin(2 * np.pi * 0.25 * times + breath_rng.uniform(0, 2 * np.pi))
    for name, value in (emotion or {}).items():
        if name == "relax":
            weights[:, UNITS.index(name)] += value * ease
        elif name in UNITS:
            weights[:, UNITS.index(name)] += value * strength * breathing
        elif name.startswith("head_"):
            head[:, HEAD_AXES.index(name[5:])] += value * strength

    # life: blinks, idle sway, nods on syllable onsets while speaking
    blink = _blinks(times, blink_rng)
    weights[:, UNITS.index("blink")] = blink
    for name in ("eye_open", "lower_lid"):  # a blink closes the eye from wherever the lids are
        weights[:, UNITS.index(name)] *= 1.0 - blink
    speaking = _smooth(env, 0.4 * fps)
    onsets = _smooth(np.clip(np.diff(env, prepend=env[:1] if n_frames else env), 0.0, None), 0.06 * fps)
    nod = _smooth(onsets, 0.08 * fps)
    nod = nod / (nod.max() + 1e-6) if nod.size and nod.max() > 0.02 else np.zeros_like(nod)
    head[:, 0] += _sway(times, sway_rng, 0.012) + 0.03 * nod
    head[:, 1] += _sway(times, sway_rng, 0.02) * (1.0 + 1.2 * speaking)
    head[:, 2] += _sway(times, sway_rng, 0.012) * (1.0 + 0.8 * speaking)
    head[:, 4] += 0.006 * np.sin(2 * np.pi * 0.22 * times)  # breathing
    head *= _ease(times, 0.3)[:, None]  # still at the first frame
    return Performance(weights=weights, head=head, fps=float(fps))
