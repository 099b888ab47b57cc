"""Sharing the CPU cores between the LLM and the media work that runs beside it.

A streamed turn renders the face (and speaks the next sentence) while llama.cpp writes the rest
of the reply. llama.cpp splits each token's work over all its threads and waits at a barrier
after every layer, so a thread that loses its core stalls the others: with a busy thread beside
it, 2 llama.cpp threads on 2 cores fall from 10.4 to 1.7-2.7 tokens/s, while 1 thread keeps 6.0
(measured on this project's 2-core machine, Qwen2.5-1.5B Q4_K_M). So the media work says when it
runs (``busy``), and the LLM asks before each token how many threads it may use (``llm_threads``):
all of them when nothing else runs, one fewer while something does.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_busy = 0


@contextmanager
def busy() -> Iterator[None]:
    """Mark a stretch of CPU-heavy work (speech, video) that runs beside the LLM."""
    global _busy
    with _lock:
        _busy += 1
    try:
        yield
    finally:
        with _lock:
            _busy -= 1


def others_busy() -> bool:
    """Whether media work is running now."""
    return _busy > 0


def llm_threads(n_threads: int) -> int:
    """Threads the LLM should use for its next step, out of the ``n_threads`` it was given."""
    return max(1, n_threads - 1) if _busy > 0 else n_threads
