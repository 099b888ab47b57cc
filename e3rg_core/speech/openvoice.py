"""The ``openvoice`` speech backend: a base speaker's speech converted to the avatar's own voice.

OpenVoice (MyShell, MIT) clones a voice in two steps: a base speaker says the text, then a tone
colour converter swaps the base speaker's timbre (its *source* embedding) for the avatar's (the
*target* embedding, taken from a recording). The avatar's ``profile.toml`` ``[voice] voice``
chooses one of two set-ups; both clone the avatar's ``reference_speech``:

=============  ======================================================  ===========================
voice          base speaker and converter                              checkpoints
=============  ======================================================  ===========================
``en-newest``  MeloTTS ``EN_NEWEST`` (speaker ``EN-Newest``) at speed  ``speech.openvoice.dir``
               0.8 + OpenVoice V2 converter: E3RG's set-up             (``checkpoints_v2/``)
``en-styles``  OpenVoice V1 ``BaseSpeakerTTS`` (English) with its      ``speech.openvoice.v1_dir``
               emotional styles + the V1 converter                     (``checkpoints/``)
=============  ======================================================  ===========================

What the adapter adds around upstream:

* the source embedding is the base speaker's own: ``base_speakers/ses/en-newest.pth`` (named from
  MeloTTS's speaker key as upstream's V2 demo does), or V1's ``en_default_se.pth`` for the default
  style and ``en_style_se.pth`` for the others. E3RG's released code passes ``None`` and crashes.
* the target embedding is extracted once per reference clip and converter, and cached in memory
  and in ``<cache_dir>/openvoice_se/<sha256>.pth`` (the clip's bytes and the converter checkpoint
  in the hash), so restarts reuse it. Upstream's ``se_extractor`` (Whisper or Silero VAD, which
  download models) is not used: the voiced part of the clip is found here and must last at least
  5 s; as upstream does, it is cut into ~10 s pieces whose embeddings are averaged.
* emotion: the V2 converter copies tone colour only and MeloTTS has only a speed, so for
  ``en-newest`` the bank's ``[prosody]`` drives MeloTTS's speed and, after conversion, the pitch
  (PSOLA), the level and the pauses. For ``en-styles`` the bank's ``[styles]`` picks V1's style.
* text is spoken sentence by sentence with the bank's pauses, then converted in one pass; the
  lip-sync timeline is the text's phonemes timed against the converted audio; the same seed gives
  the same audio; one request at a time per speaker.

Models load on first use (or ``load()``). Upstream's converter watermarks its output with
wavmark, as its demos do. Install on the GPU box with ``INSTALL``; note that OpenVoice's and
MeloTTS's setup files pin librosa 0.9.1, and MeloTTS transformers 4.27.4, older than
requirements.txt has.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import logging
import os
import pickle
import re
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from e3rg_core.errors import BackendFailed, BackendUnavailable, ConfigError, InputError
from e3rg_core.media.audio import write_wav
from e3rg_core.memory.profiles import VoiceSettings
from e3rg_core.speech import prosody, timeline
from e3rg_core.speech.banks import Prosody, ProsodyBank, bank_path as shipped_bank, load_styles
from e3rg_core.speech.base import check_request, split_sentences
from e3rg_core.types import Speech

if TYPE_CHECKING:
    from e3rg_core.config import Config

logger = logging.getLogger(__name__)

INSTALL = ("pip install git+https://github.com/myshell-ai/OpenVoice git+https://github.com/myshell-ai/MeloTTS "
           "&& python -m unidic download")
MELO_LANGUAGE = "EN_NEWEST"
MELO_SPEAKER = "EN-Newest"
#: OpenVoice V1's English base speaker styles (checkpoints/base_speakers/EN/config.json "speakers")
V1_STYLES: tuple[str, ...] = ("default", "whispering", "shouting", "excited", "cheerful", "terrified", "angry",
                              "sad", "friendly")
WATERMARK_MESSAGE = "@MyShell"  # what upstream's demos embed
TAU = 0.3  # upstream's default conversion temperature
MIN_REFERENCE_VOICED_S = 5.0
MAX_REFERENCE_VOICED_S = 60.0  # more adds time, not likeness
SE_PIECE_S = 10.0
EDGE_SILENCE_S = 0.08
_SE_SCHEME = "e3rg-openvoice-se-1"  # bump when the extraction changes, so old cache entries are not reused
_DEVICE = re.compile(r"auto|cpu|cuda(:\d+)?")
_LOAD_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError, AttributeError, EOFError,
                pickle.UnpicklingError)
_RUN_ERRORS = (RuntimeError, ValueError, KeyError, IndexError, AssertionError)  # upstream asserts on bad input


@dataclass(frozen=True)
class VoiceInfo:
    name: str
    version: str  # "v2" or "v1"
    setting: str  # the config key of its checkpoints folder
    files: tuple[str, ...]  # what that folder must hold
    packages: tuple[str, ...]
    summary: str


VOICES: dict[str, VoiceInfo] = {
    "en-newest": VoiceInfo(
        "en-newest", "v2", "speech.openvoice.dir",
        ("converter/config.json", "converter/checkpoint.pth", "base_speakers/ses/en-newest.pth"),
        ("openvoice", "wavmark", "melo"), "MeloTTS EN_NEWEST base speaker + OpenVoice V2 converter (E3RG)"),
    "en-styles": VoiceInfo(
        "en-styles", "v1", "speech.openvoice.v1_dir",
        ("converter/config.json", "converter/checkpoint.pth", "base_speakers/EN/config.json",
         "base_speakers/EN/checkpoint.pth", "base_speakers/EN/en_default_se.pth", "base_speakers/EN/en_style_se.pth"),
        ("openvoice", "wavmark"), "OpenVoice V1 English base speaker with emotional styles + V1 converter"),
}
MELO_FILES = ("config.json", "checkpoint.pth")


@dataclass(frozen=True)
class OpenVoiceOptions:
    """``[speech.openvoice]`` (``E3RG_SPEECH_OPENVOICE_<FIELD>``): the checkpoints, the device and the speed."""

    dir: str = ""  # OpenVoice checkpoints_v2/ (converter/, base_speakers/ses/)
    v1_dir: str = ""  # OpenVoice V1 checkpoints/ (base_speakers/EN/) for the emotional styles
    melo_dir: str = ""  # a MeloTTS EN_NEWEST folder with config.json and checkpoint.pth; "" = Hugging Face cache
    device: str = "auto"  # "auto" (CUDA when present), "cuda", "cuda:N" or "cpu"
    speed: float = 0.8  # MeloTTS speed, as E3RG uses it

    def __post_init__(self) -> None:
        if not 0.5 <= self.speed <= 2.0:
            raise ConfigError(f"speech.openvoice.speed must lie in 0.5..2, not {self.speed}")
        if not _DEVICE.fullmatch(self.device):
            raise ConfigError(f"speech.openvoice.device must be auto, cpu, cuda or cuda:N, not {self.device!r}")

    def backend_kwargs(self, config: Config) -> dict[str, Any]:
        """``OpenVoiceSpeaker``'s own arguments (the emotion bank and the seed are every speaker's)."""
        def folder(value: str) -> Path | None:
            return Path(value).expanduser() if value else None

        return {"checkpoints": folder(self.dir), "v1_checkpoints": folder(self.v1_dir),
                "melo_dir": folder(self.melo_dir), "device": self.device, "speed": self.speed,
                "cache_dir": config.cache_dir}
_PACKAGE_NAMES = {"openvoice": "OpenVoice", "melo": "MeloTTS", "wavmark": "wavmark (OpenVoice's watermark)"}


def resolve_device(device: str) -> str:
    """``auto`` is CUDA when PyTorch sees a GPU, else the CPU (with a warning: it is slow)."""
    import torch

    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        logger.warning("openvoice: no CUDA GPU here; running on the CPU, several times slower than real time")
        return "cpu"
    if device.startswith("cuda"):
        index = int(device.partition(":")[2] or 0)
        if not torch.cuda.is_available() or index >= torch.cuda.device_count():
            raise BackendUnavailable(f"speech.openvoice.device = {device!r} but CUDA device {index} is not available "
                                     f"(torch {torch.__version__}, {torch.cuda.device_count()} visible); on a GPU "
                                     "machine install a CUDA build of PyTorch (pip install torch --index-url "
                                     "https://download.pytorch.org/whl/cu126), else set it to 'auto' or 'cpu'")
    return device


@dataclass(frozen=True)
class Reference:
    """An avatar's reference clip, checked: its voiced samples and the hash of its bytes."""

    path: Path
    digest: str  # sha256 of the file's bytes
    voiced: np.ndarray  # float32, the voiced spans joined, at most MAX_REFERENCE_VOICED_S
    sample_rate_hz: int
    voiced_s: float


def read_reference(voice: VoiceSettings) -> Reference:
    """The avatar's ``reference_speech``; missing, unreadable or under 5 s of voiced speech is an ``InputError``."""
    from e3rg_core.media.audio import read_audio

    value = voice.options.get("reference_speech")
    if not value:
        raise InputError("the openvoice backend clones the avatar's voice from a recording and this avatar has none: "
                         "add reference_speech = \"<file>\" (at least 5 s of speech) to its profile.toml")
    path = Path(str(value)).expanduser()
    if not path.is_file():
        raise InputError(f"the avatar's reference_speech {path} does not exist")
    audio = read_audio(path)
    if not np.isfinite(audio.samples).all():
        raise InputError(f"the avatar's reference_speech {path} holds invalid samples")
    sr = audio.sample_rate_hz
    spans = timeline.voiced_spans(audio.samples, sr)
    voiced_s = float(sum(b - a for a, b in spans))
    if voiced_s < MIN_REFERENCE_VOICED_S:
        raise InputError(f"the avatar's reference_speech {path.name} has {voiced_s:.1f} s of voiced speech "
                         f"(in {audio.duration_s:.1f} s); OpenVoice needs at least {MIN_REFERENCE_VOICED_S:.1f} s "
                         "to clone a voice: record a longer clip")
    voiced = np.concatenate([audio.samples[int(a * sr):int(b * sr)] for a, b in spans])
    voiced = voiced[: int(MAX_REFERENCE_VOICED_S * sr)].astype(np.float32)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return Reference(path, digest, voiced, sr, voiced_s)


@dataclass(frozen=True)
class Plan:
    """How one request is spoken: the base speaker's style and speed, and the prosody around it."""

    style: str  # V1 style; "" for MeloTTS
    speed: float  # the base speaker's speed
    prosody: Prosody


@dataclass
class _Converter:
    model: Any  # openvoice.api.ToneColorConverter
    identity: str  # sha256 of its config.json and checkpoint.pth
    sample_rate_hz: int
    gin_channels: int


@dataclass
class _Stack:
    """The loaded models of one voice."""

    converter: _Converter
    speak: Callable[[str, str, float], np.ndarray]  # (sentence, style, speed) -> samples at base_rate_hz
    base_rate_hz: int
    source_se: dict[str, Any] = field(default_factory=dict)  # "default" / "style" / "" -> tensor

    def source_for(self, style: str) -> Any:
        if not style:
            return self.source_se[""]
        return self.source_se["default" if style == "default" else "style"]


class OpenVoiceSpeaker:
    """Speaks in the avatar's own voice with OpenVoice; models load on first use and stay loaded."""

    backend = "openvoice"

    def __init__(self, bank_path: Path | None = None, seed: int = 0, checkpoints: Path | None = None,
                 v1_checkpoints: Path | None = None, melo_dir: Path | None = None, device: str = "auto",
                 speed: float = 0.8, cache_dir: Path | None = None) -> None:
        path = Path(bank_path) if bank_path else shipped_bank("openvoice")
        self.bank = ProsodyBank.from_file(path)
        self.styles = load_styles(path, V1_STYLES)
        self.seed = int(seed)
        self.folders = {"v2": _folder(checkpoints), "v1": _folder(v1_checkpoints)}
        self.melo_dir = _folder(melo_dir)
        self.cache_dir = _folder(cache_dir)
        if not any(self.folders.values()):
            raise ConfigError("the openvoice backend needs OpenVoice's checkpoints: set speech.openvoice.dir to the "
                              "checkpoints_v2 folder (converter/, base_speakers/ses/) and/or "
                              "speech.openvoice.v1_dir to V1's checkpoints folder (converter/, base_speakers/EN/); "
                              "OpenVoice's README links both")
        if not isinstance(device, str) or not _DEVICE.fullmatch(device):
            raise ConfigError(f"speech.openvoice.device must be auto, cpu, cuda or cuda:N, not {device!r}")
        if not 0.5 <= float(speed) <= 2.0:
            raise ConfigError(f"speech.openvoice.speed must lie in 0.5..2, not {speed}")
        self.device_setting = device
        self.speed = float(speed)
        for info in VOICES.values():
            folder = self.folders[info.version]
            if folder is not None:
                _require_packages(info.packages)
                _require_files(folder, info.files, f"{info.setting} = {folder} (OpenVoice {info.version.upper()})")
                if info.version == "v2" and self.melo_dir is not None:
                    _require_files(self.melo_dir, MELO_FILES,
                                   f"speech.openvoice.melo_dir = {self.melo_dir} (MeloTTS {MELO_LANGUAGE})")
        self.device: str | None = None  # resolved on first load
        self._stacks: dict[str, _Stack] = {}
        self._se_memory: dict[str, Any] = {}
        self._lock = threading.Lock()

    @staticmethod
    def voices() -> tuple[str, ...]:
        return tuple(VOICES)

    def load(self, voice: str | None = None) -> None:
        """Load the models of ``voice`` (default: every configured voice) now rather than on first use."""
        names = [voice] if voice else [n for n, i in VOICES.items() if self.folders[i.version]]
        with self._lock:
            for name in names:
                self._stack(self._voice(name))

    def plan(self, emotion: str, intensity: float, voice: VoiceSettings) -> Plan:
        """Style, speed and prosody of one request: the bank's emotion at ``intensity`` plus the avatar's offsets."""
        offsets = {"pitch_shift_semitones": voice.pitch_shift_semitones, "rate": voice.rate,
                   "energy_db": voice.energy_db}
        if self._voice(voice.voice).version == "v2":
            p = self.bank.at(emotion, intensity).with_voice(**offsets)
            return Plan("", self.speed * p.rate, p)
        chosen, neutral = self.styles[emotion], self.styles["neutral"]
        style = chosen.strong_style if intensity >= chosen.strong_at else chosen.style
        speed = neutral.speed * (chosen.speed / neutral.speed) ** intensity
        p = self.bank.at("neutral", 0.0).with_voice(**offsets)  # the style carries the emotion
        return Plan(style, speed * p.rate, p)

    def synthesize(self, text: str, *, emotion: str, intensity: float, voice: VoiceSettings,
                   out_path: Path) -> Speech:
        """Speak ``text`` in the avatar's cloned voice with ``emotion`` (a coarse class) at ``intensity``."""
        text, emotion, intensity = check_request(text, emotion, intensity, voice, backend=self.backend)
        info = self._voice(voice.voice)
        plan = self.plan(emotion, intensity, voice)
        reference = read_reference(voice)  # before any model loads: the user's mistake comes first
        with self._lock:  # one GPU, and upstream's models are not made for concurrent calls
            stack = self._stack(info)
            target = self._target_se(reference, stack.converter)
            samples = self._speak(stack, text, plan, target)
        sr = stack.converter.sample_rate_hz
        p = plan.prosody
        samples = prosody.psola_reshape(samples, sr, shift_semitones=p.pitch_shift_semitones, range_scale=p.pitch_range,
                                        f0_floor_hz=60.0, f0_ceiling_hz=500.0)
        samples = prosody.set_level(samples, sr, gain_db=p.energy_db)
        phonemes, visemes = timeline.text_timeline(text, samples, sr)
        write_wav(Path(out_path), samples, sr)
        return Speech(wav_path=Path(out_path), sample_rate_hz=sr, duration_s=len(samples) / sr, text=text,
                      emotion=emotion, intensity=intensity, voice=f"{self.backend}:{info.name}",
                      phonemes=phonemes, visemes=visemes)

    # -- models ---------------------------------------------------------------------------------

    def _voice(self, name: str) -> VoiceInfo:
        if name not in VOICES:
            raise ConfigError(f"unknown openvoice voice {name!r}; choose from {', '.join(VOICES)}")
        info = VOICES[name]
        if self.folders[info.version] is None:
            raise ConfigError(f"the openvoice voice {name!r} needs {info.setting} (OpenVoice {info.version.upper()} "
                              "checkpoints), which is not set")
        return info

    def _stack(self, info: VoiceInfo) -> _Stack:
        if info.name not in self._stacks:
            if self.device is None:
                self.device = resolve_device(self.device_setting)
            started = time.perf_counter()
            folder = self.folders[info.version]
            converter = self._load_converter(folder / "converter")
            if info.version == "v2":
                stack = self._load_melo(converter, folder)
            else:
                stack = self._load_v1(converter, folder / "base_speakers" / "EN")
            self._stacks[info.name] = stack
            logger.info("loaded openvoice voice %s on %s in %.1f s", info.name, self.device,
                        time.perf_counter() - started)
        return self._stacks[info.name]

    def _load_converter(self, folder: Path) -> _Converter:
        api = _import("openvoice.api")
        config, checkpoint = folder / "config.json", folder / "checkpoint.pth"
        try:
            model = api.ToneColorConverter(str(config), device=self.device)
        except ImportError as exc:  # the constructor imports wavmark
            raise BackendUnavailable(f"OpenVoice's converter needs {exc.name or exc}; "
                                     f"install on the GPU box: {INSTALL}") from exc
        except _LOAD_ERRORS as exc:  # a bad config, or wavmark failing to fetch its model
            raise BackendUnavailable(f"the OpenVoice converter {config} cannot be built: {exc}") from exc
        try:
            model.load_ckpt(str(checkpoint))
        except _LOAD_ERRORS as exc:
            raise BackendUnavailable(f"the OpenVoice converter checkpoint {checkpoint} cannot be loaded: "
                                     f"{exc}") from exc
        hps = model.hps
        return _Converter(model, _digest(config, checkpoint), int(hps.data.sampling_rate), int(hps.model.gin_channels))

    def _load_melo(self, converter: _Converter, folder: Path) -> _Stack:
        melo = _import("melo.api")
        kwargs: dict[str, Any] = {"language": MELO_LANGUAGE, "device": self.device}
        where = "the Hugging Face cache"
        if self.melo_dir is not None:
            kwargs.update(config_path=str(self.melo_dir / "config.json"),
                          ckpt_path=str(self.melo_dir / "checkpoint.pth"))
            where = str(self.melo_dir)
        try:
            tts = melo.TTS(**kwargs)
        except _LOAD_ERRORS + (AssertionError,) as exc:
            raise BackendUnavailable(f"MeloTTS {MELO_LANGUAGE} cannot be loaded from {where}: {exc}; set "
                                     "speech.openvoice.melo_dir to a folder with its config.json and checkpoint.pth") from exc
        spk2id = tts.hps.data.spk2id
        speakers = {key: int(spk2id[key]) for key in spk2id.keys()}
        key = MELO_SPEAKER if MELO_SPEAKER in speakers else (next(iter(speakers)) if len(speakers) == 1 else None)
        if key is None:
            raise BackendUnavailable(f"MeloTTS {MELO_LANGUAGE} has no speaker {MELO_SPEAKER!r}; "
                                     f"it has {', '.join(speakers)}")
        speaker_id = speakers[key]
        # upstream's V2 demo names the base speakers' embeddings after the speaker key this way
        source = folder / "base_speakers" / "ses" / f"{key.lower().replace('_', '-')}.pth"

        def speak(sentence: str, style: str, speed: float) -> np.ndarray:
            audio = tts.tts_to_file(sentence, speaker_id, None, speed=speed, quiet=True)  # None: return the samples
            return np.asarray(audio, np.float32).reshape(-1)

        return _Stack(converter, speak, int(tts.hps.data.sampling_rate),
                      {"": _load_se(source, self.device, converter.gin_channels)})

    def _load_v1(self, converter: _Converter, folder: Path) -> _Stack:
        api = _import("openvoice.api")
        config, checkpoint = folder / "config.json", folder / "checkpoint.pth"
        try:
            base = api.BaseSpeakerTTS(str(config), device=self.device)
            base.load_ckpt(str(checkpoint))
        except _LOAD_ERRORS as exc:
            raise BackendUnavailable(f"the OpenVoice V1 base speaker in {folder} cannot be loaded: {exc}") from exc
        known = set(base.hps.speakers.keys())
        wanted = {s for style in self.styles.values() for s in (style.style, style.strong_style)}
        if wanted - known:
            raise BackendUnavailable(f"the OpenVoice V1 base speaker {config} has no style "
                                     f"{', '.join(sorted(wanted - known))}; it has {', '.join(sorted(known))}")

        def speak(sentence: str, style: str, speed: float) -> np.ndarray:
            audio = base.tts(sentence, None, speaker=style, language="English", speed=speed)
            return np.asarray(audio, np.float32).reshape(-1)

        return _Stack(converter, speak, int(base.hps.data.sampling_rate), {
            "default": _load_se(folder / "en_default_se.pth", self.device, converter.gin_channels),
            "style": _load_se(folder / "en_style_se.pth", self.device, converter.gin_channels)})

    # -- the avatar's embedding -------------------------------------------------------------------

    def _target_se(self, reference: Reference, converter: _Converter) -> Any:
        key = hashlib.sha256(f"{_SE_SCHEME}\n{converter.identity}\n{reference.digest}".encode()).hexdigest()
        if key in self._se_memory:
            return self._se_memory[key]
        path = self.cache_dir / "openvoice_se" / f"{key}.pth" if self.cache_dir else None
        se = None
        if path is not None and path.is_file():
            try:
                se = _load_se(path, self.device, converter.gin_channels)
            except BackendUnavailable as exc:
                logger.warning("ignoring a broken cached voice embedding: %s", exc)
        if se is None:
            se = self._extract(reference, converter)
            if path is not None:
                _save_se(se, path)
        self._se_memory[key] = se
        return se

    def _extract(self, reference: Reference, converter: _Converter) -> Any:
        import soundfile

        sr = reference.sample_rate_hz
        n_pieces = max(1, round(len(reference.voiced) / sr / SE_PIECE_S))
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="e3rg-openvoice-") as tmp:
            files = []
            for i, piece in enumerate(np.array_split(reference.voiced, n_pieces)):
                files.append(str(Path(tmp) / f"piece{i}.wav"))
                soundfile.write(files[-1], piece, sr, subtype="FLOAT")
            try:
                se = converter.model.extract_se(files, se_save_path=None)
            except _RUN_ERRORS as exc:
                raise BackendFailed(f"OpenVoice could not take the voice of {reference.path.name}: {exc}") from exc
        logger.info("extracted the voice of %s (%.1f s voiced, %d pieces) in %.1f s", reference.path.name,
                    reference.voiced_s, n_pieces, time.perf_counter() - started)
        return se

    # -- speaking ---------------------------------------------------------------------------------

    def _speak(self, stack: _Stack, text: str, plan: Plan, target: Any) -> np.ndarray:
        import soundfile
        import torch

        sr = stack.base_rate_hz
        devices = [torch.device(self.device).index or 0] if str(self.device).startswith("cuda") else []
        with torch.random.fork_rng(devices=devices), tempfile.TemporaryDirectory(prefix="e3rg-openvoice-") as tmp:
            torch.manual_seed(self.seed)  # MeloTTS and the converter sample noise: same seed, same audio
            pieces = [prosody.silence(EDGE_SILENCE_S, sr)]
            for sentence in split_sentences(text):
                try:
                    audio = stack.speak(sentence, plan.style, plan.speed)
                except _RUN_ERRORS as exc:
                    raise BackendFailed(f"the base speaker failed on {sentence[:60]!r}: {exc}") from exc
                if audio.size == 0:
                    continue
                if len(pieces) > 1:
                    pieces.append(prosody.silence(plan.prosody.pause_s, sr))
                pieces.append(prosody.fade(audio, sr))
            if len(pieces) == 1:
                raise InputError(f"nothing to speak in {text[:80]!r}: the text has no pronounceable words")
            pieces.append(prosody.silence(EDGE_SILENCE_S, sr))
            source = Path(tmp) / "base.wav"
            soundfile.write(str(source), np.concatenate(pieces), sr, subtype="FLOAT")
            try:
                converted = stack.converter.model.convert(
                    audio_src_path=str(source), src_se=stack.source_for(plan.style), tgt_se=target,
                    output_path=None, tau=TAU, message=WATERMARK_MESSAGE)
            except _RUN_ERRORS as exc:
                raise BackendFailed(f"OpenVoice's tone colour conversion failed: {exc}") from exc
        return np.asarray(converted, dtype=np.float32).reshape(-1)


def _folder(value: Path | str | None) -> Path | None:
    return Path(value).expanduser() if value else None


def _importable(name: str) -> bool:
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _require_packages(names: tuple[str, ...]) -> None:
    missing = [_PACKAGE_NAMES[n] for n in names if not _importable(n)]
    if missing:
        raise BackendUnavailable(f"the openvoice backend needs {', '.join(missing)}, not installed here; "
                                 f"install on the GPU box: {INSTALL}")


def _require_files(folder: Path, files: tuple[str, ...], where: str) -> None:
    if not folder.is_dir():
        raise BackendUnavailable(f"{where} is not a folder")
    missing = [name for name in files if not (folder / name).is_file()]
    if missing:
        raise BackendUnavailable(f"{where} is incomplete: missing {', '.join(missing)}")


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = _PACKAGE_NAMES.get(module.partition(".")[0], module)
        raise BackendUnavailable(f"{package} cannot be imported ({exc}); install on the GPU box: {INSTALL}") from exc


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def _load_se(path: Path, device: str | None, gin_channels: int) -> Any:
    """A speaker embedding saved by OpenVoice: a float tensor [1, gin_channels, 1]."""
    import torch

    try:
        se = torch.load(str(path), map_location=device, weights_only=True)
    except _LOAD_ERRORS as exc:
        raise BackendUnavailable(f"the speaker embedding {path} cannot be read: {exc}") from exc
    if not isinstance(se, torch.Tensor) or tuple(se.shape) != (1, gin_channels, 1) or not torch.isfinite(se).all():
        shape = list(se.shape) if isinstance(se, torch.Tensor) else type(se).__name__
        raise BackendUnavailable(f"{path} is not an OpenVoice speaker embedding (a finite tensor "
                                 f"[1, {gin_channels}, 1]), it holds {shape}")
    return se.float()


def _save_se(se: Any, path: Path) -> None:
    import torch

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        torch.save(se.detach().cpu(), str(part))
        part.replace(path)
    except OSError as exc:  # the cache only saves time
        logger.warning("could not cache the voice embedding in %s: %s", path, exc)

