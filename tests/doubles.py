"""Test doubles for understanding backends. They live in tests/ only; the product ships none."""

from __future__ import annotations

from typing import Mapping, Sequence

from e3rg_core.emotions import CANDIDATES
from e3rg_core.types import UserTurn
from e3rg_core.understanding.base import ChatMessage, TurnMedia


class ScriptedChat:
    """A chat model that answers emotion prompts with ``label`` and reply prompts with ``reply``."""

    def __init__(self, label: str = "sad", reply: str = "That sounds really hard.") -> None:
        self.label = label
        self.reply = reply
        self.calls: list[dict] = []

    def chat(self, messages: Sequence[ChatMessage], *, max_tokens: int, temperature: float = 0.2,
             seed: int | None = None, choices: Sequence[str] | None = None,
             media: TurnMedia | None = None) -> str:
        self.calls.append({"messages": list(messages), "choices": choices, "temperature": temperature,
                           "seed": seed, "media": media})
        if choices:
            return self.label
        return self.reply


class StreamingChat(ScriptedChat):
    """``ScriptedChat`` that also streams its reply in pieces of ``piece_chars`` characters.

    ``delay_s`` waits before each piece (a slow model); ``events`` records what happened in order
    ("piece", "closed", "done"), so a test can see what a consumer did while the reply was written.
    """

    def __init__(self, label: str = "sad", reply: str = "That sounds really hard.", *, piece_chars: int = 3,
                 delay_s: float = 0.0) -> None:
        super().__init__(label, reply)
        self.piece_chars, self.delay_s = piece_chars, delay_s
        self.events: list[str] = []

    def chat_stream(self, messages: Sequence[ChatMessage], *, max_tokens: int, temperature: float = 0.2,
                    seed: int | None = None, media: TurnMedia | None = None):
        import time

        whole = self.chat(messages, max_tokens=max_tokens, temperature=temperature, seed=seed, media=media)
        try:
            for i in range(0, len(whole), self.piece_chars):
                if self.delay_s:
                    time.sleep(self.delay_s)
                self.events.append("piece")
                yield whole[i: i + self.piece_chars]
            self.events.append("done")
        except GeneratorExit:
            self.events.append("closed")
            raise


class FixedClassifier:
    """An emotion classifier that puts probability ``p`` on one label and spreads the rest."""

    def __init__(self, label: str, p: float = 0.6) -> None:
        self.label = label
        self.p = p

    def classify(self, turn: UserTurn) -> Mapping[str, float]:
        rest = (1.0 - self.p) / (len(CANDIDATES) - 1)
        return {c: (self.p if c == self.label else rest) for c in CANDIDATES}


class ContinuingChat(StreamingChat):
    """``StreamingChat`` that can also write on from a begun answer (``continue_stream``): it streams
    ``reply`` as the continuation and records each prefix it was given."""

    def __init__(self, label: str = "sad", reply: str = " That sounds really hard.", **kwargs) -> None:
        super().__init__(label, reply, **kwargs)
        self.prefixes: list[str] = []

    def continue_stream(self, messages: Sequence[ChatMessage], prefix: str, *, max_tokens: int,
                        temperature: float = 0.2, seed: int | None = None, media: TurnMedia | None = None):
        self.prefixes.append(prefix)
        return self.chat_stream(messages, max_tokens=max_tokens, temperature=temperature, seed=seed, media=media)
