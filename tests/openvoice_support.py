"""Checkpoint folders and upstream stand-ins for the openvoice backend tests.

What is real and what is not:

* OpenVoice's model code is real: ``openvoice-cli`` (MIT, on PyPI) carries upstream's
  ``SynthesizerTrn``, ``mel_processing`` and a ``ToneColorConverter`` identical to
  ``openvoice/api.py`` (module ``openvoice_cli``). ``install_upstream`` puts it in ``sys.modules``
  as ``openvoice.api`` so the adapter's own ``import openvoice.api`` finds it; the converter only
  records what it is given before running upstream's code. Its checkpoints are tiny random-weight
  ``SynthesizerTrn`` state dicts saved as ``{"model": state_dict}`` next to a ``config.json`` in
  upstream's layout. The V2 source embedding ``base_speakers/ses/en-newest.pth`` is the real one
  that openvoice-cli ships.
* V1's ``BaseSpeakerTTS`` is upstream's base class (real config and checkpoint loading) with a
  ``tts`` that speaks with the embedded hibari voice, since V1's text front end (eng_to_ipa, jieba,
  ...) is not installed here.
* ``melo.api.TTS`` is a stand-in with upstream's constructor and ``tts_to_file`` signature and a
  ``hps.data.spk2id``; it speaks with hibari at 44.1 kHz like EN_NEWEST.
* ``wavmark`` is a stand-in whose model returns the audio unchanged (the real one downloads its
  weights from the Hugging Face hub when the converter is built).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import shutil
import sys
import threading
import types
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

TINY_MODEL = {
    "inter_channels": 16, "hidden_channels": 16, "filter_channels": 32, "n_heads": 2, "n_layers": 1,
    "kernel_size": 3, "p_dropout": 0.1, "resblock": "1", "resblock_kernel_sizes": [3],
    "resblock_dilation_sizes": [[1, 3, 5]], "upsample_rates": [8, 8, 2, 2], "upsample_initial_channel": 32,
    "upsample_kernel_sizes": [16, 16, 4, 4], "gin_channels": 256,
}
CONVERTER_DATA = {"sampling_rate": 22050, "filter_length": 1024, "hop_length": 256, "win_length": 1024, "n_speakers": 0}
V1_SPEAKERS = {"default": 1, "whispering": 2, "shouting": 3, "excited": 4, "cheerful": 5, "terrified": 6,
               "angry": 7, "sad": 8, "friendly": 9}
V1_SYMBOLS = ["_", ",", ".", "!", "?", "-", "~", "…", " ", *"abdefhijklmnoprstuvwzæðŋɑɔəɛɪʃʊʌʒθˈˌː"]
MELO_RATE_HZ = 44100
V1_RATE_HZ = 22050
HIBARI_RATE_HZ = 24000

LONG_TEXT = ("Good morning, and thank you for coming in today. I have been looking forward to our talk. "
             "Tell me a little about how your week has been, and we will take it from there.")
SHORT_TEXT = "Thanks for coming in today, it is good to see you."


def have_openvoice_cli() -> bool:
    return importlib.util.find_spec("openvoice_cli") is not None


def real_source_se() -> Path:
    """The real V2 source embedding of MeloTTS EN-Newest, as shipped in openvoice-cli."""
    spec = importlib.util.find_spec("openvoice_cli")
    return Path(next(iter(spec.submodule_search_locations))) / "checkpoints" / "base_speakers" / "ses" / "en-newest.pth"


# -- speech ------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _hibari():
    import hibari

    return hibari.Hibari(voice="heart", threads=1)


def hibari_speech(text: str, *, speed: float = 1.0, rate_hz: int = HIBARI_RATE_HZ, pause_s: float = 0.3) -> np.ndarray:
    """Real English speech from the embedded hibari voice (sentences joined by ``pause_s``)."""
    import librosa

    tts = _hibari()
    rng = np.random.default_rng(0)
    gap = np.zeros(int(pause_s * HIBARI_RATE_HZ), np.float32)
    parts = []
    for phonemes in tts.phonemize(text):
        parts += [tts.from_ids(tts.ids(phonemes), speed=speed, rng=rng), gap]
    audio = np.concatenate(parts[:-1]).astype(np.float32)
    if rate_hz != HIBARI_RATE_HZ:
        audio = librosa.resample(audio, orig_sr=HIBARI_RATE_HZ, target_sr=rate_hz).astype(np.float32)
    return audio


def write_reference(path: Path, text: str = LONG_TEXT, *, silence_s: float = 0.0) -> Path:
    """A reference clip spoken by hibari, with ``silence_s`` of silence after it."""
    import soundfile

    audio = np.concatenate([hibari_speech(text), np.zeros(int(silence_s * HIBARI_RATE_HZ), np.float32)])
    soundfile.write(str(path), 0.5 * audio / np.abs(audio).max(), HIBARI_RATE_HZ)
    return path


# -- checkpoint folders ---------------------------------------------------------------------------

def _save_se(path: Path, seed: int) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(torch.from_numpy(np.random.default_rng(seed).normal(0, 0.3, (1, 256, 1)).astype(np.float32)), str(path))


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def _model_checkpoint(path: Path, config: dict, *, n_vocab: int, seed: int) -> None:
    """A random-weight ``SynthesizerTrn`` in upstream's checkpoint format, from openvoice-cli's code."""
    import torch
    from openvoice_cli.models import SynthesizerTrn

    torch.manual_seed(seed)
    model = SynthesizerTrn(n_vocab, config["data"]["filter_length"] // 2 + 1, n_speakers=config["data"]["n_speakers"],
                           **config["model"])
    torch.save({"model": model.state_dict(), "iteration": 0}, str(path))


@dataclass(frozen=True)
class Checkpoints:
    v2: Path  # checkpoints_v2/
    v1: Path  # checkpoints/
    melo: Path  # a MeloTTS EN_NEWEST folder


def write_checkpoints(root: Path, *, real: bool) -> Checkpoints:
    """OpenVoice V2, V1 and MeloTTS folders in upstream's layout.

    ``real``: tiny random-weight models that upstream's code loads and runs (needs openvoice-cli);
    otherwise the checkpoint files are placeholders, enough for the adapter's construction checks.
    """
    import torch

    v2, v1, melo = root / "checkpoints_v2", root / "checkpoints", root / "melo_en_newest"
    v2_converter = {"_version_": "v2", "data": CONVERTER_DATA, "model": {**TINY_MODEL, "zero_g": True}}
    v1_converter = {"data": CONVERTER_DATA, "model": TINY_MODEL}
    v1_base = {"data": {**CONVERTER_DATA, "text_cleaners": ["cjke_cleaners2"], "n_speakers": 10, "add_blank": True,
                        "cleaned_text": True}, "model": TINY_MODEL, "speakers": V1_SPEAKERS, "symbols": V1_SYMBOLS}
    melo_config = {"data": {"sampling_rate": MELO_RATE_HZ, "filter_length": 2048, "hop_length": 512, "win_length": 2048,
                            "n_speakers": 1, "spk2id": {"EN-Newest": 0}},
                   "num_languages": 10, "num_tones": 16, "symbols": V1_SYMBOLS, "model": TINY_MODEL}
    _write_json(v2 / "converter" / "config.json", v2_converter)
    _write_json(v1 / "converter" / "config.json", v1_converter)
    _write_json(v1 / "base_speakers" / "EN" / "config.json", v1_base)
    _write_json(melo / "config.json", melo_config)
    torch.save({"model": {}}, str(melo / "checkpoint.pth"))  # read only by the MeloTTS stand-in
    if real:
        _model_checkpoint(v2 / "converter" / "checkpoint.pth", v2_converter, n_vocab=0, seed=2)
        _model_checkpoint(v1 / "converter" / "checkpoint.pth", v1_converter, n_vocab=0, seed=1)
        _model_checkpoint(v1 / "base_speakers" / "EN" / "checkpoint.pth", v1_base, n_vocab=len(V1_SYMBOLS), seed=3)
        (v2 / "base_speakers" / "ses").mkdir(parents=True)
        shutil.copy(real_source_se(), v2 / "base_speakers" / "ses" / "en-newest.pth")
    else:
        for path in (v2 / "converter" / "checkpoint.pth", v1 / "converter" / "checkpoint.pth",
                     v1 / "base_speakers" / "EN" / "checkpoint.pth"):
            path.write_bytes(b"placeholder")
        _save_se(v2 / "base_speakers" / "ses" / "en-newest.pth", 20)
    _save_se(v1 / "base_speakers" / "EN" / "en_default_se.pth", 10)
    _save_se(v1 / "base_speakers" / "EN" / "en_style_se.pth", 11)
    return Checkpoints(v2, v1, melo)


# -- upstream stand-ins -----------------------------------------------------------------------------

class HParams:
    """Upstream's hyper-parameter object (MeloTTS and OpenVoice ``utils.HParams``): nested dicts as attributes."""

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            setattr(self, key, HParams(**value) if isinstance(value, dict) else value)

    def keys(self):
        return self.__dict__.keys()

    def items(self):
        return self.__dict__.items()

    def __getitem__(self, key):
        return getattr(self, key)

    def __contains__(self, key):
        return key in self.__dict__


@dataclass
class Records:
    """What the stand-ins were asked to do."""

    melo_init: list[dict] = field(default_factory=list)
    melo_calls: list[dict] = field(default_factory=list)
    v1_init: list[dict] = field(default_factory=list)
    v1_calls: list[dict] = field(default_factory=list)
    converters: list[dict] = field(default_factory=list)
    extracts: list[list[str]] = field(default_factory=list)
    converts: list[dict] = field(default_factory=list)
    watermarks: list[object] = field(default_factory=list)
    active: int = 0
    peak: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self) -> None:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)

    def leave(self) -> None:
        with self.lock:
            self.active -= 1


def _melo_module(records: Records) -> types.ModuleType:
    import torch

    class TTS:
        """MeloTTS's ``melo.api.TTS`` (constructor and ``tts_to_file`` as upstream), speaking with hibari."""

        def __init__(self, language, device="auto", use_hf=True, config_path=None, ckpt_path=None):
            records.melo_init.append(dict(language=language, device=device, use_hf=use_hf, config_path=config_path,
                                          ckpt_path=ckpt_path))
            if config_path is None or ckpt_path is None:
                raise OSError("offline: MeloTTS would download its config and checkpoint from the Hugging Face hub")
            self.hps = HParams(**json.loads(Path(config_path).read_text()))
            self.device = device
            torch.load(ckpt_path, map_location=device)["model"]
            self.language = language.split("_")[0]

        def tts_to_file(self, text, speaker_id, output_path=None, sdp_ratio=0.2, noise_scale=0.6, noise_scale_w=0.8,
                        speed=1.0, pbar=None, format=None, position=None, quiet=False):
            records.enter()
            try:
                records.melo_calls.append(dict(text=text, speaker_id=speaker_id, speed=speed, quiet=quiet))
                rate = self.hps.data.sampling_rate
                audio = np.concatenate([hibari_speech(text, speed=speed, rate_hz=rate),
                                        np.zeros(int(rate * 0.05 / speed), np.float32)])  # as upstream's concat
            finally:
                records.leave()
            if output_path is None:
                return audio
            import soundfile

            soundfile.write(output_path, audio, rate)

    module = types.ModuleType("melo.api")
    module.TTS = TTS
    return module


def _openvoice_module(records: Records) -> types.ModuleType:
    from openvoice_cli import api as real

    class ToneColorConverter(real.ToneColorConverter):
        """Upstream's converter, recording its inputs."""

        def __init__(self, *args, **kwargs):
            records.converters.append(dict(args=args, kwargs=kwargs))
            super().__init__(*args, **kwargs)

        def extract_se(self, ref_wav_list, se_save_path=None):
            records.extracts.append(list(ref_wav_list))
            return super().extract_se(ref_wav_list, se_save_path)

        def convert(self, audio_src_path, src_se, tgt_se, output_path=None, tau=0.3, message="default"):
            records.converts.append(dict(src_se=None if src_se is None else src_se.detach().cpu().clone(),
                                         tgt_se=None if tgt_se is None else tgt_se.detach().cpu().clone(),
                                         tau=tau, message=message, version=self.version,
                                         source_s=_duration(audio_src_path)))
            return super().convert(audio_src_path, src_se, tgt_se, output_path, tau, message)

    class BaseSpeakerTTS(real.OpenVoiceBaseClass):
        """Upstream's V1 base speaker (its config and checkpoint loaded by upstream's code), speaking with hibari."""

        def __init__(self, config_path, device="cuda:0"):
            records.v1_init.append(dict(config_path=config_path, device=device))
            super().__init__(config_path, device)

        def tts(self, text, output_path, speaker, language="English", speed=1.0):
            assert language.lower() == "english", f"language {language} is not supported"
            speaker_id = self.hps.speakers[speaker]  # upstream's KeyError for an unknown style
            records.v1_calls.append(dict(text=text, speaker=speaker, speed=speed, speaker_id=speaker_id))
            audio = hibari_speech(text, speed=speed, rate_hz=self.hps.data.sampling_rate)
            if output_path is None:
                return audio
            import soundfile

            soundfile.write(output_path, audio, self.hps.data.sampling_rate)

    module = types.ModuleType("openvoice.api")
    module.ToneColorConverter = ToneColorConverter
    module.BaseSpeakerTTS = BaseSpeakerTTS
    return module


def _duration(path: str) -> float:
    import soundfile

    return soundfile.info(path).duration


def _wavmark_module(records: Records) -> types.ModuleType:
    class _Model:
        def to(self, device):
            return self

        def encode(self, signal, message):
            records.watermarks.append(message)
            return signal

    module = types.ModuleType("wavmark")
    module.load_model = lambda *args, **kwargs: _Model()
    return module


def _package(name: str, **children: types.ModuleType) -> types.ModuleType:
    package = types.ModuleType(name)
    package.__path__ = []
    for child, module in children.items():
        setattr(package, child, module)
    return package


def install_packages(monkeypatch) -> None:
    """Empty ``openvoice``, ``melo`` and ``wavmark`` modules: enough for construction, nothing loads."""
    for name in ("openvoice", "melo", "wavmark"):
        monkeypatch.setitem(sys.modules, name, _package(name))


def install_upstream(monkeypatch) -> Records:
    """Put upstream's code (openvoice-cli) and the stand-ins where ``import openvoice.api`` etc. find them."""
    records = Records()
    api, melo_api = _openvoice_module(records), _melo_module(records)
    modules = {"openvoice": _package("openvoice", api=api), "openvoice.api": api,
               "melo": _package("melo", api=melo_api), "melo.api": melo_api, "wavmark": _wavmark_module(records)}
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return records
