"""Reading speech audio and measuring its loudness over time."""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from e3rg_core.errors import InputError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Audio:
    """Mono samples in -1..1 and their rate."""

    samples: np.ndarray  # float32 [n]
    sample_rate_hz: int

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.sample_rate_hz


def read_audio(path: Path) -> Audio:
    """Read an audio file as mono float32; WAV/FLAC/OGG via soundfile, anything else via ffmpeg."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"audio file {path} does not exist")
    try:
        import soundfile

        data, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
        samples = data.mean(axis=1)
    except ImportError:
        samples, rate = _decode_with_ffmpeg(path)
    except RuntimeError:  # soundfile's "format not recognised": MP3, M4A, video files...
        samples, rate = _decode_with_ffmpeg(path)
    if len(samples) == 0:
        raise InputError(f"audio file {path} holds no samples")
    return Audio(samples=np.ascontiguousarray(samples, dtype=np.float32), sample_rate_hz=int(rate))


def write_wav(path: Path, samples: np.ndarray, sample_rate_hz: int) -> None:
    """Write 16-bit PCM WAV atomically (a ``.part`` file renamed into place), making the folder."""
    import soundfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    soundfile.write(str(part), samples, sample_rate_hz, subtype="PCM_16", format="WAV")
    part.replace(path)


def _decode_with_ffmpeg(path: Path, rate_hz: int = 24000) -> tuple[np.ndarray, int]:
    from e3rg_core.media.mp4 import ffmpeg_exe

    cmd = [ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-i", str(path), "-vn", "-ac", "1",
           "-ar", str(rate_hz), "-f", "f32le", "-"]
    result = subprocess.run(cmd, capture_output=True, check=False)
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["unknown error"]
        raise InputError(f"cannot decode audio file {path}: {message[0]}")
    return np.frombuffer(result.stdout, dtype=np.float32), rate_hz


def frame_rms(samples: np.ndarray, sample_rate_hz: int, *, fps: float, n_frames: int) -> np.ndarray:
    """Root-mean-square level of each video frame's span of audio (window = two frames, centred)."""
    hop = sample_rate_hz / fps
    half = int(round(hop))
    padded = np.pad(samples.astype(np.float64), (half, half))
    cumulative = np.concatenate([[0.0], np.cumsum(padded ** 2)])
    centres = (np.arange(n_frames) + 0.5) * hop + half
    lo = np.clip(np.round(centres - hop).astype(int), 0, len(padded))
    hi = np.clip(np.round(centres + hop).astype(int), 0, len(padded))
    energy = (cumulative[hi] - cumulative[lo]) / np.maximum(hi - lo, 1)
    return np.sqrt(energy)


def envelope(samples: np.ndarray, sample_rate_hz: int, *, fps: float, n_frames: int) -> np.ndarray:
    """Speech loudness per frame, 0..1: RMS in dB mapped from a noise floor to the loud end of the clip."""
    rms = frame_rms(samples, sample_rate_hz, fps=fps, n_frames=n_frames)
    db = 20 * np.log10(np.maximum(rms, 1e-6))
    # a clip that is quiet throughout stays quiet: its loud end is taken as at least -30 dBFS
    # (speech peaks well above), so near-silence is not stretched up to a wide-open mouth
    loud = max(float(np.percentile(db, 95)), -30.0) if len(db) else 0.0
    floor = max(loud - 35.0, -60.0)
    return np.clip((db - floor) / max(loud - floor, 1e-6), 0.0, 1.0) ** 1.5
