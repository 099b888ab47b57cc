"""What an understanding backend is.

Two kinds of backend take part in stage 1:

* a ``ChatModel`` (llamacpp, transformers, openai) answers chat messages. The emotion prompt and
  the reply prompt are built once, in ``prompts.py``, and sent to any chat model; ``choices``
  asks the backend to constrain its answer to one of a few strings (a grammar on llama.cpp, a JSON
  schema on an OpenAI-compatible server, validation elsewhere).
* an ``EmotionClassifier`` (embedding) scores the 36 labels directly; it can vote but not reply.
* a chat model that is also a ``StreamingChat`` (all three) yields its free reply piece by piece
  while it is being written, so later stages can start before the reply is complete.
* a chat model that is also a ``ContinuingChat`` (llamacpp) writes on from the start of its own answer
  (the reply's opening, chosen by the engine), so the opening sets the tone of what follows.
* a chat model that is also a ``ChoiceScorer`` (llamacpp) gives the exact probability of each label
  as its whole answer, so it votes with a full distribution instead of a single word.

Backends are created by ``e3rg_core.registry.create("understanding", name, options)`` and load
their weights in the constructor.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Literal, Mapping, Protocol, Sequence, runtime_checkable

from e3rg_core.types import UserTurn

ChatRole = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class ChatMessage:
    role: ChatRole
    content: str


@dataclass(frozen=True)
class TurnMedia:
    """Raw recordings of the user's turn, for omni models that read audio and video."""

    audio_path: Path | None = None
    video_path: Path | None = None


@runtime_checkable
class ChatModel(Protocol):
    """A chat LLM. ``chat`` returns the assistant's text, stripped."""

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        temperature: float = 0.2,
        seed: int | None = None,
        choices: Sequence[str] | None = None,
        media: TurnMedia | None = None,
    ) -> str: ...


@runtime_checkable
class StreamingChat(Protocol):
    """A chat LLM that streams its free reply.

    ``chat_stream`` yields the reply's text in order as it is generated, in unstripped pieces;
    joined and stripped they equal what ``chat`` returns for the same arguments (there is no
    ``choices``: a constrained answer is a single word and gains nothing from streaming). The
    backend's ``BackendFailed`` and ``BackendUnavailable`` errors may be raised during iteration.
    The backend serves only this request until the stream is exhausted or closed, so close a stream
    you abandon (``generator.close()`` or ``contextlib.closing``) rather than leaving it to the
    garbage collector, and do not call the same backend again while iterating over it.
    """

    def chat_stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        temperature: float = 0.2,
        seed: int | None = None,
        media: TurnMedia | None = None,
    ) -> Iterator[str]: ...


@runtime_checkable
class ContinuingChat(Protocol):
    """A streaming chat LLM whose answer can be begun for it: ``continue_stream`` yields what the
    assistant writes after ``prefix`` (the prefix itself is not yielded), as ``chat_stream`` does."""

    def continue_stream(
        self,
        messages: Sequence[ChatMessage],
        prefix: str,
        *,
        max_tokens: int,
        temperature: float = 0.2,
        seed: int | None = None,
        media: TurnMedia | None = None,
    ) -> Iterator[str]: ...


@runtime_checkable
class ChoiceScorer(Protocol):
    """A chat model that can score a closed set of answers: choice -> log-probability (normalised)."""

    def choice_logprobs(self, messages: Sequence[ChatMessage], choices: Sequence[str]) -> Mapping[str, float]: ...


@runtime_checkable
class EmotionClassifier(Protocol):
    """Scores the emotion labels of the user's turn: label -> probability (sums to 1)."""

    def classify(self, turn: UserTurn) -> Mapping[str, float]: ...
