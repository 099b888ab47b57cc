"""Sharing the CPU cores between the LLM and the media work that runs beside it.

A streamed turn renders the face (and speaks the next sentence) while llama.cpp writes the rest
of the reply. llama.cpp splits each token's work over all its threads and waits at a barrier
after every layer, so a thread that loses its core stalls the others: with a busy thread beside
it, 2 llama.cpp threads on 2 cores fall from 10.4 to 1.7-2.7 tokens/s, while 1 thread keeps 6.0
(measured on this project's 2-core machine, Qwen2.5-1.5B Q4_K_M). So:

* media work says when it runs (``busy``); if an LLM is writing on more than one thread, ``busy``
  first waits (at most ``HANDOVER_S``) until it has moved to one thread fewer, which it does
  between two tokens, so no token is caught spread over a core that the media work takes
  (measured: 2-3 tokens/s while a second of video renders without this wait, 5.5-6.3 with it);
* the LLM marks its generation (``writing``) and asks before each token how many threads it
  may use (``llm_threads``): all of them when nothing else runs, one fewer while something does.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

#: the longest media work waits for the LLM to give up a core (about one token on 2 cores)
HANDOVER_S = 0.3

_state = threading.Condition()
_busy = 0  # media work running
_writing = 0  # LLM generations running
_spread = False  # the LLM's current token runs on more than one thread
_sharing = 0  # steady work beside the LLM for as long as it lasts (an open hands-free microphone)


@contextmanager
def busy() -> Iterator[None]:
    """Mark a stretch of CPU-heavy work (speech, video) that runs beside the LLM."""
    global _busy
    with _state:
        _busy += 1
        _state.wait_for(lambda: not (_spread and _writing), timeout=HANDOVER_S)
    try:
        yield
    finally:
        with _state:
            _busy -= 1


@contextmanager
def writing() -> Iterator[None]:
    """Mark an LLM generation that follows ``llm_threads``."""
    global _writing, _spread
    with _state:
        _writing += 1
    try:
        yield
    finally:
        with _state:
            _writing -= 1
            _spread = False
            _state.notify_all()


def share(delta: int) -> None:
    """Steady work beside the LLM starts (+1) or ends (-1): while any runs, the LLM keeps one thread fewer.

    An open hands-free microphone is heard every tenth of a second (voice activity, recognition); on
    2 cores that work, and a browser on the same machine, stall a 2-thread llama.cpp at its barriers.
    """
    global _sharing
    with _state:
        _sharing = max(0, _sharing + int(delta))


def others_busy() -> bool:
    """Whether media work is running now."""
    return _busy > 0


def llm_threads(n_threads: int) -> int:
    """Threads the LLM should use for its next step, out of the ``n_threads`` it was given."""
    global _spread
    with _state:
        threads = max(1, n_threads - 1) if _busy or _sharing else n_threads
        _spread = threads > 1
        _state.notify_all()
        return threads
