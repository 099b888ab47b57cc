"""A reply spoken in pieces (streaming): each piece padded to whole video frames, then all joined.

Padding every piece's audio to a whole number of video frames makes the audio clock and the video
clock the same: piece ``k`` starts at the same instant in the joined audio and in the joined video,
so the face stays on the voice however many pieces a reply has.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Sequence

import numpy as np

from e3rg_core.errors import BackendFailed
from e3rg_core.media.audio import write_wav
from e3rg_core.types import Speech, TimedUnit


def pad_to_frames(speech: Speech, *, fps: float) -> Speech:
    """The piece with silence added at its end up to a whole number of frames (rewrites its WAV)."""
    import soundfile

    samples, rate = soundfile.read(str(speech.wav_path), dtype="int16", always_2d=False)
    frames = max(1, math.ceil(len(samples) * fps / rate - 1e-6))
    target = int(round(frames * rate / fps))
    if target > len(samples):
        samples = np.concatenate([samples, np.zeros(target - len(samples), dtype=samples.dtype)])
        write_wav(Path(speech.wav_path), samples, rate)
    return dataclasses.replace(speech, duration_s=len(samples) / rate)


def join_speech(pieces: Sequence[Speech], out_path: Path) -> Speech:
    """One ``Speech`` for the whole reply: the pieces' audio back to back, their timelines shifted."""
    import soundfile

    if not pieces:
        raise BackendFailed("there is no spoken piece to join")
    rate = pieces[0].sample_rate_hz
    audio, phonemes, visemes, offset = [], [], [], 0.0
    for piece in pieces:
        samples, piece_rate = soundfile.read(str(piece.wav_path), dtype="int16", always_2d=False)
        if piece_rate != rate:
            raise BackendFailed(f"spoken pieces differ in sample rate ({piece_rate} vs {rate} Hz)")
        audio.append(samples)
        phonemes += [_shift(u, offset) for u in piece.phonemes]
        visemes += [_shift(u, offset) for u in piece.visemes]
        offset += len(samples) / rate
    joined = np.concatenate(audio)
    write_wav(Path(out_path), joined, rate)
    first = pieces[0]
    return Speech(wav_path=Path(out_path), sample_rate_hz=rate, duration_s=len(joined) / rate,
                  text=" ".join(p.text for p in pieces), emotion=first.emotion, intensity=first.intensity,
                  voice=first.voice, phonemes=tuple(phonemes), visemes=tuple(visemes))


def split_speech(speech: Speech, at_s: float, first_path: Path, rest_path: Path) -> tuple[Speech, Speech]:
    """The piece cut in two at ``at_s`` (rounded to a sample): each half with its own audio and timeline."""
    import soundfile

    samples, rate = soundfile.read(str(speech.wav_path), dtype="int16", always_2d=False)
    cut = int(round(at_s * rate))
    if not 0 < cut < len(samples):
        raise BackendFailed(f"cannot cut {len(samples) / rate:.2f} s of speech at {at_s:.2f} s")
    at_s = cut / rate
    halves = []
    for path, part, lo, hi in ((first_path, samples[:cut], 0.0, at_s), (rest_path, samples[cut:], at_s, None)):
        write_wav(Path(path), part, rate)

        def clip(units: tuple[TimedUnit, ...], lo=lo, hi=hi) -> tuple[TimedUnit, ...]:
            end = speech.duration_s if hi is None else hi
            return tuple(TimedUnit(max(u.start_s, lo) - lo, min(u.end_s, end) - lo, u.symbol)
                         for u in units if u.end_s > lo and u.start_s < end)

        halves.append(dataclasses.replace(speech, wav_path=Path(path), duration_s=len(part) / rate,
                                          phonemes=clip(speech.phonemes), visemes=clip(speech.visemes)))
    return halves[0], halves[1]


def _shift(unit: TimedUnit, offset_s: float) -> TimedUnit:
    return TimedUnit(unit.start_s + offset_s, unit.end_s + offset_s, unit.symbol)

