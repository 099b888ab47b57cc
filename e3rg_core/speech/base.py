"""Stage 3a's contract: a speaker turns the reply text into speech in an avatar's voice, with emotion.

Every backend takes the same request and checks it the same way before running: text that is not
empty and at most ``MAX_TEXT_CHARS`` characters, one of the 8 coarse emotion classes, an intensity in
0..1. Long text is synthesised sentence by sentence (``split_sentences``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Protocol, runtime_checkable

from e3rg_core.emotions import COARSE
from e3rg_core.errors import ConfigError, InputError
from e3rg_core.memory.profiles import VoiceSettings
from e3rg_core.types import Speech

#: The most text one ``synthesize`` call accepts (about a minute of speech); the UI says so.
MAX_TEXT_CHARS = 1000
#: Sentences longer than this are cut at clause punctuation so no chunk overflows a model's context.
MAX_CHUNK_CHARS = 300

_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]”’]*\s+(?=\S)")
_CLAUSE_END = re.compile(r"(?<=[,;:—])\s+")


@runtime_checkable
class Speaker(Protocol):
    """A text-to-speech backend."""

    def synthesize(self, text: str, *, emotion: str, intensity: float, voice: VoiceSettings,
                   out_path: Path) -> Speech:
        """Speak ``text`` with ``emotion`` (a coarse class) at ``intensity`` (0..1) into a WAV file."""
        ...


def check_text(text: str) -> str:
    """The text with outer whitespace removed; empty or over ``MAX_TEXT_CHARS`` is an ``InputError``."""
    if not isinstance(text, str):
        raise InputError(f"text must be a string, not {type(text).__name__}")
    text = " ".join(text.split())
    if not text:
        raise InputError("text is empty; give the words to speak")
    if len(text) > MAX_TEXT_CHARS:
        raise InputError(f"text has {len(text)} characters; the limit is {MAX_TEXT_CHARS} per synthesis")
    if not any(ch.isalnum() for ch in text):
        raise InputError("text has no letters or digits to speak")
    return text


def check_emotion(emotion: str, intensity: float) -> tuple[str, float]:
    """Validate the emotion (one of the 8 coarse classes) and the intensity (a number in 0..1)."""
    if emotion not in COARSE:
        raise InputError(f"unknown speech emotion {emotion!r}; choose from {', '.join(COARSE)} "
                         "(e3rg_core.emotions.wheel maps any label to one of them)")
    try:
        value = float(intensity)
    except (TypeError, ValueError) as exc:
        raise InputError(f"intensity must be a number in 0..1, not {intensity!r}") from exc
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise InputError(f"intensity must be a number in 0..1, not {intensity!r}")
    return emotion, value


def check_request(text: str, emotion: str, intensity: float, voice: VoiceSettings, *,
                  backend: str) -> tuple[str, str, float]:
    """Every backend's checks before it runs: the text, the emotion and intensity, the voice's backend."""
    text = check_text(text)
    emotion, intensity = check_emotion(emotion, intensity)
    if voice.backend != backend:
        raise ConfigError(f"voice backend {voice.backend!r} given to the {backend} speaker")
    return text, emotion, intensity


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``; a sentence over ``MAX_CHUNK_CHARS`` is cut at commas, semicolons, dashes."""
    chunks: list[str] = []
    for sentence in _SENTENCE_END.split(text.strip()):
        sentence = sentence.strip()
        if not sentence:
            continue
        if len(sentence) <= MAX_CHUNK_CHARS:
            chunks.append(sentence)
            continue
        current = ""
        for part in _CLAUSE_END.split(sentence):
            while len(part) > MAX_CHUNK_CHARS:  # no punctuation at all: cut at a space
                cut = part.rfind(" ", 0, MAX_CHUNK_CHARS)
                cut = cut if cut > 0 else MAX_CHUNK_CHARS
                if current:
                    chunks.append(current)
                    current = ""
                chunks.append(part[:cut].strip())
                part = part[cut:].strip()
            if current and len(current) + len(part) + 1 > MAX_CHUNK_CHARS:
                chunks.append(current)
                current = part
            else:
                current = f"{current} {part}" if current else part
        if current:
            chunks.append(current)
    return [c for c in chunks if c]
