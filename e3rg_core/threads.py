"""A generator run on a thread of its own, its items handed over to another thread as they come.

Used where a model must write on one thread while another takes its words as they are written: the
llama.cpp model on the thread that owns its OpenMP team (``understanding.llamacpp``), the reply of a
streamed turn written beside the thread that speaks it (``streaming``).
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Callable, Generic, Iterator, TypeVar

T = TypeVar("T")

_END = object()


class Handover(Generic[T]):
    """Iterates ``pieces`` on another thread; the consumer takes its items (``__iter__`` or ``ready``).

    ``submit`` runs a function on the producing thread and returns its ``Future`` (an executor's
    ``submit``); by default a daemon thread called ``name`` is started for it. An error inside
    ``pieces`` is raised on the consumer's side. ``close`` stops ``pieces`` at its next item, closes it
    and returns once the producing thread is done with it (so the model it runs is free again).
    """

    def __init__(self, pieces: Iterator[T], *, submit: Callable[[Callable[[], None]], Future] | None = None,
                 name: str = "e3rg-handover") -> None:
        self._pieces = pieces
        self._items: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._finished = False
        self._pending: BaseException | None = None  # an error held back until the items before it are taken
        self._thread: threading.Thread | None = None
        self._done: Future | None = None
        if submit is None:
            self._thread = threading.Thread(target=self._produce, name=name, daemon=True)
            self._thread.start()
        else:
            self._done = submit(self._produce)

    @property
    def finished(self) -> bool:
        """The consumer has taken the last item (or the error)."""
        return self._finished

    def _produce(self) -> None:
        try:
            for piece in self._pieces:
                self._items.put(piece)
                if self._stop.is_set():
                    break
        except BaseException as exc:  # noqa: BLE001 - raised again on the consumer's side
            self._items.put(exc)
        finally:
            self._pieces.close()
            self._items.put(_END)

    def _take(self, item: object) -> T | None:
        if item is _END:
            self._finished = True
            return None
        if isinstance(item, BaseException):
            self._finished = True
            raise item
        return item  # type: ignore[return-value]

    def __iter__(self) -> Iterator[T]:
        """Each item as it comes (waiting for it); closing this generator closes the handover."""
        try:
            while not self._finished:
                item = self._take(self._items.get())
                if not self._finished:
                    yield item  # type: ignore[misc]
        finally:
            self.close()

    def ready(self, *, block: bool) -> list[T] | None:
        """Every item there now (waiting for the first if ``block``); None once ``pieces`` has ended.

        An error comes after the items before it: they are returned first, and the next call raises it.
        """
        if self._finished:
            return None
        items: list[T] = []
        if self._pending is not None:
            item, self._pending = self._pending, None
        else:
            try:
                item = self._items.get(block=block)
            except queue.Empty:
                return items
        while True:
            if isinstance(item, BaseException) and items:
                self._pending = item  # raised by the next call
                return items
            taken = self._take(item)
            if self._finished:
                return items or None
            items.append(taken)  # type: ignore[arg-type]
            try:
                item = self._items.get_nowait()
            except queue.Empty:
                return items

    def close(self) -> None:
        """Stop ``pieces`` at its next item and wait until the producing thread has closed it."""
        self._stop.set()
        self._items.put(_END)  # wakes a consumer waiting in ``ready`` on another thread
        if self._thread is not None:
            self._thread.join()
        if self._done is not None:
            self._done.result()


_stops = threading.local()  # the event that stops a stream written for this thread (``stopping_on``)


@contextmanager
def stopping_on(event: threading.Event) -> Iterator[None]:
    """A model stream read on this thread meanwhile ends at its next token once ``event`` is set
    (a backend that streams asks ``stop_requested`` between tokens: ``understanding.llamacpp``).

    A reply cut off by a barge-in otherwise went on to the end of its sentence (seconds on one
    core) holding the model, so the next turn's decision waited for it.
    """
    before = getattr(_stops, "event", None)
    _stops.event = event
    try:
        yield
    finally:
        _stops.event = before


def stop_requested() -> bool:
    """Whether the stream being read on this thread should stop (``stopping_on``)."""
    event = getattr(_stops, "event", None)
    return event is not None and event.is_set()
