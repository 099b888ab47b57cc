"""Who holds the floor: one reply at a time per conversation, and how much of it was heard when cut short.

The server writes and speaks a reply in pieces while the page plays them. When the person barges in,
the page reports where its player was (seconds into the reply); ``TurnControl.interrupt`` marks the
current reply cancelled, so the thread still writing it stops, and says which of its words had been
spoken by then. Within a piece the words are taken to be spread over its duration in proportion to
their letters, a word counting as spoken once its middle was reached.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Sequence

from e3rg_core.errors import InputError


@dataclass(frozen=True)
class SpokenPart:
    """A reply split at a playback time into what had been said and what had not."""

    at_s: float
    spoken: str  # the words heard by at_s
    unspoken: str  # the rest of the reply, never heard
    total_s: float  # the pieces' whole duration


@dataclass(frozen=True)
class Interruption:
    """The page stopped reply ``turn`` at ``at_s`` seconds into it."""

    turn: int
    at_s: float
    part: SpokenPart


def spoken_part(pieces: Sequence[tuple[str, float]], at_s: float) -> SpokenPart:
    """What of a reply spoken as ``pieces`` of (text, duration in seconds) had been said ``at_s`` into it."""
    if not (isinstance(at_s, (int, float)) and math.isfinite(at_s) and at_s >= 0):
        raise InputError(f"playback time {at_s!r} must be a finite number of seconds, 0 or more")
    spoken: list[str] = []
    unspoken: list[str] = []
    start_s = 0.0
    for text, duration_s in pieces:
        if not (isinstance(duration_s, (int, float)) and math.isfinite(duration_s) and duration_s >= 0):
            raise InputError(f"spoken piece {text[:40]!r} has duration {duration_s!r}; give a finite "
                             "number of seconds, 0 or more")
        words = text.split()
        if at_s >= start_s + duration_s:
            spoken += words
        elif at_s <= start_s:
            unspoken += words
        else:
            reached = (at_s - start_s) / duration_s
            weights = [len(word) + 1 for word in words]  # the space after a word takes time too
            total, before = sum(weights), 0
            for word, weight in zip(words, weights):
                middle = (before + weight / 2) / total
                (spoken if middle <= reached else unspoken).append(word)
                before += weight
        start_s += duration_s
    return SpokenPart(at_s=float(at_s), spoken=" ".join(spoken), unspoken=" ".join(unspoken), total_s=start_s)


class Reply:
    """One reply's cancel token and the pieces spoken so far; made by ``TurnControl.begin``."""

    def __init__(self, turn: int, lock: threading.Lock) -> None:
        self.turn = turn
        self._lock = lock  # the control's: a reply changes only together with it
        self._pieces: list[tuple[str, float]] = []
        self._cancelled = threading.Event()
        self._interruption: Interruption | None = None

    @property
    def cancelled(self) -> bool:
        """Interrupted by the person, or replaced by a newer reply: stop writing and speaking it."""
        return self._cancelled.is_set()

    @property
    def interruption(self) -> Interruption | None:
        """Where the person cut this reply short, or None."""
        return self._interruption

    @property
    def pieces(self) -> tuple[tuple[str, float], ...]:
        """The (text, duration in seconds) of each piece spoken so far."""
        with self._lock:
            return tuple(self._pieces)

    def add_piece(self, text: str, duration_s: float) -> None:
        """Record a piece as it is spoken, in order."""
        if not (isinstance(duration_s, (int, float)) and math.isfinite(duration_s) and duration_s >= 0):
            raise InputError(f"spoken piece {text[:40]!r} has duration {duration_s!r}; give a finite "
                             "number of seconds, 0 or more")
        with self._lock:
            self._pieces.append((text, float(duration_s)))

    def wait_cancelled(self, timeout_s: float | None = None) -> bool:
        """Wait until the reply is cancelled (True) or ``timeout_s`` passes (False)."""
        return self._cancelled.wait(timeout_s)


class TurnControl:
    """One per conversation: the reply being spoken, and the page's word that it was cut short."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: Reply | None = None
        self._turns = 0

    @property
    def current(self) -> Reply | None:
        """The reply being spoken or played, or None."""
        return self._current

    def begin(self) -> Reply:
        """A new reply starts; one still going is cancelled (a reply never talks over another)."""
        with self._lock:
            if self._current is not None:
                self._current._cancelled.set()
            self._turns += 1
            self._current = Reply(self._turns, self._lock)
            return self._current

    def finish(self, turn: int) -> None:
        """Reply ``turn`` has been played to its end: a late interruption no longer applies to it."""
        with self._lock:
            if self._current is not None and self._current.turn == turn:
                self._current = None

    def interrupt(self, *, at_s: float, turn: int | None = None) -> Interruption | None:
        """Mark the current reply (only if it is ``turn``, when given) cut short at ``at_s`` seconds into it.

        Returns what had been spoken by then; None when no reply is going or ``turn`` is not the
        current one (the page's word came after the reply changed). A second call returns the first
        interruption.
        """
        if not (isinstance(at_s, (int, float)) and math.isfinite(at_s) and at_s >= 0):
            raise InputError(f"playback time {at_s!r} must be a finite number of seconds, 0 or more")
        with self._lock:
            reply = self._current
            if reply is None or (turn is not None and turn != reply.turn):
                return None
            if reply._interruption is None:
                reply._interruption = Interruption(turn=reply.turn, at_s=float(at_s),
                                                   part=spoken_part(reply._pieces, at_s))
                reply._cancelled.set()
            return reply._interruption
