"""The browser's microphone pieces as samples: WAV bytes whose header may not describe them, or arrays.

Gradio's streaming ``gr.Audio`` records with a WAV encoder, keeps the 44-byte header of the first
piece and sends every later piece as that header followed by the new PCM. Its RIFF and data lengths
are therefore the first piece's: too short or too long for the others. ``parse_wav`` reads the format
from the header and takes the data from the data chunk to the end of the bytes unless the header's
lengths are proved right (they match the buffer, or a well-formed chunk follows the data).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from e3rg_core.errors import InputError
from e3rg_core.media.audio import Audio

ACCEPTED = ("a RIFF/WAVE file of PCM (8, 16, 24 or 32 bit) or IEEE float (32 or 64 bit) samples, 1 to 8 channels "
            "at 8-192 kHz")
MIN_RATE_HZ, MAX_RATE_HZ = 8000, 192000
MAX_CHANNELS = 8
_PCM, _FLOAT, _EXTENSIBLE = 1, 3, 0xFFFE
_UNKNOWN_SIZES = (0, 0xFFFFFFFF)  # what streaming encoders write when the length is not known yet


@dataclass(frozen=True)
class _Format:
    tag: int
    channels: int
    rate_hz: int
    bits: int


def parse_wav(data: bytes, *, name: str = "microphone chunk") -> Audio:
    """The samples of a WAV piece as mono float32, its header's length fields trusted only where they fit."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InputError(f"{name}: expected WAV bytes, got {type(data).__name__}; accepted: {ACCEPTED}")
    data = bytes(data)
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise InputError(f"{name} is not a WAV file (it does not start with RIFF....WAVE); accepted: {ACCEPTED}")
    riff_size = struct.unpack_from("<I", data, 4)[0]
    offset, fmt = 12, None
    while offset + 8 <= len(data):
        chunk_id, size = data[offset: offset + 4], struct.unpack_from("<I", data, offset + 4)[0]
        body = offset + 8
        if chunk_id == b"fmt ":
            fmt = _read_format(data[body: body + size], name)
        elif chunk_id == b"data":
            if fmt is None:
                raise InputError(f"{name}: the WAV data chunk comes before its fmt chunk; accepted: {ACCEPTED}")
            end = len(data)
            if size not in _UNKNOWN_SIZES and body + size <= len(data):
                consistent = riff_size + 8 == len(data)
                if consistent or _chunk_follows(data, body + size + (size & 1)):
                    end = body + size
            return Audio(_decode_pcm(data[body:end], fmt, name), fmt.rate_hz)
        if body + size > len(data):
            break
        offset = body + size + (size & 1)  # chunks are padded to an even length
    raise InputError(f"{name}: the WAV has no {'data' if fmt else 'fmt'} chunk; accepted: {ACCEPTED}")


def read_wav_file(path: Path) -> Audio:
    """``parse_wav`` of a file's bytes (Gradio hands a streamed piece over as a file path)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"microphone chunk {path.name!r} does not exist")
    return parse_wav(path.read_bytes(), name=f"microphone chunk {path.name!r}")


def from_array(samples: np.ndarray, *, sample_rate_hz: int) -> Audio:
    """Mono float32 from Gradio's numpy audio: int or float, [n] or [n, channels]."""
    if isinstance(sample_rate_hz, bool) or not isinstance(sample_rate_hz, (int, np.integer)) or not (
            MIN_RATE_HZ <= sample_rate_hz <= MAX_RATE_HZ):
        raise InputError(f"sample rate {sample_rate_hz!r} is not accepted; give an integer from "
                         f"{MIN_RATE_HZ} to {MAX_RATE_HZ} Hz")
    array = np.asarray(samples)
    if array.ndim == 2 and 1 <= array.shape[1] <= MAX_CHANNELS:
        pass
    elif array.ndim != 1:
        raise InputError(f"microphone samples must be [n] or [n, channels] with at most {MAX_CHANNELS} channels, "
                         f"got shape {array.shape}")
    if array.dtype.kind == "i":
        scale = float(2 ** (8 * array.dtype.itemsize - 1))
        mono = array.astype(np.float64) / scale
    elif array.dtype.kind == "u" and array.dtype.itemsize == 1:
        mono = (array.astype(np.float64) - 128.0) / 128.0
    elif array.dtype.kind == "f":
        mono = array.astype(np.float64)
        if not np.all(np.isfinite(mono)):
            raise InputError("microphone samples hold NaN or infinite values; expected finite values in -1..1")
    else:
        raise InputError(f"microphone samples of type {array.dtype} are not accepted; give signed integers, "
                         "8-bit unsigned or floats in -1..1")
    if mono.ndim == 2:
        mono = mono.mean(axis=1)
    return Audio(np.clip(mono, -1.0, 1.0).astype(np.float32), int(sample_rate_hz))


def _read_format(body: bytes, name: str) -> _Format:
    if len(body) < 16:
        raise InputError(f"{name}: the WAV fmt chunk is {len(body)} bytes, too short; accepted: {ACCEPTED}")
    tag, channels, rate_hz, _, _, bits = struct.unpack_from("<HHIIHH", body, 0)
    if tag == _EXTENSIBLE and len(body) >= 26:
        tag = struct.unpack_from("<H", body, 24)[0]  # the first two bytes of the sub-format GUID
    if not 1 <= channels <= MAX_CHANNELS or not MIN_RATE_HZ <= rate_hz <= MAX_RATE_HZ:
        raise InputError(f"{name}: a WAV of {channels} channel(s) at {rate_hz} Hz is not accepted; "
                         f"accepted: {ACCEPTED}")
    if (tag, bits) not in {(_PCM, 8), (_PCM, 16), (_PCM, 24), (_PCM, 32), (_FLOAT, 32), (_FLOAT, 64)}:
        kind = {_PCM: "PCM", _FLOAT: "float"}.get(tag, f"format tag {tag:#06x}")
        raise InputError(f"{name}: a WAV of {bits}-bit {kind} samples is not accepted; accepted: {ACCEPTED}")
    return _Format(tag, channels, rate_hz, bits)


def _chunk_follows(data: bytes, offset: int) -> bool:
    """Whether a well-formed RIFF chunk header starts at ``offset`` (so the data before it was sized right)."""
    if offset == len(data):
        return True
    if offset + 8 > len(data):
        return False
    chunk_id = data[offset: offset + 4]
    size = struct.unpack_from("<I", data, offset + 4)[0]
    return all(32 <= b < 127 for b in chunk_id) and offset + 8 + size <= len(data)


def _decode_pcm(payload: bytes, fmt: _Format, name: str) -> np.ndarray:
    frame = fmt.channels * fmt.bits // 8
    usable = len(payload) - len(payload) % frame  # a piece cut inside a frame loses that frame only
    raw = np.frombuffer(payload[:usable], dtype=np.uint8)
    if fmt.tag == _FLOAT:
        values = np.frombuffer(raw.tobytes(), dtype="<f4" if fmt.bits == 32 else "<f8").astype(np.float64)
        if not np.all(np.isfinite(values)):
            raise InputError(f"{name}: the WAV holds NaN or infinite float samples; expected values in -1..1")
    elif fmt.bits == 8:
        values = (raw.astype(np.float64) - 128.0) / 128.0
    elif fmt.bits == 24:
        triples = raw.reshape(-1, 3).astype(np.int32)
        ints = triples[:, 0] | (triples[:, 1] << 8) | (triples[:, 2] << 16)
        values = np.where(ints >= 1 << 23, ints - (1 << 24), ints) / float(1 << 23)
    else:
        values = np.frombuffer(raw.tobytes(), dtype=f"<i{fmt.bits // 8}").astype(np.float64) / math.ldexp(
            1.0, fmt.bits - 1)
    values = values.reshape(-1, fmt.channels).mean(axis=1) if fmt.channels > 1 else values
    return np.clip(values, -1.0, 1.0).astype(np.float32)
