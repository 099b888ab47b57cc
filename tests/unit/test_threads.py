"""``threads.Handover``: a generator on a thread of its own, its items handed over as they come."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from e3rg_core.threads import Handover


def _counting(n: int, seen: list[str], *, fail: bool = False, delay_s: float = 0.0):
    try:
        for i in range(n):
            seen.append(threading.current_thread().name)
            time.sleep(delay_s)
            yield i
        if fail:
            raise RuntimeError("the model fell over")
    finally:
        seen.append("closed")


def test_items_come_in_order_from_another_thread():
    seen: list[str] = []
    assert list(Handover(_counting(3, seen), name="e3rg-test")) == [0, 1, 2]
    assert seen == ["e3rg-test"] * 3 + ["closed"]


def test_an_executor_can_be_the_producing_thread():
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="e3rg-pool")
    seen: list[str] = []
    assert list(Handover(_counting(2, seen), submit=pool.submit)) == [0, 1]
    assert seen[0].startswith("e3rg-pool") and seen[-1] == "closed"
    pool.shutdown()


def test_an_error_is_raised_on_the_consumers_side_after_the_items_before_it():
    seen: list[str] = []
    handover = Handover(_counting(2, seen, fail=True))
    time.sleep(0.2)  # everything, the error too, is waiting
    assert handover.ready(block=True) == [0, 1]
    with pytest.raises(RuntimeError, match="fell over"):
        handover.ready(block=False)
    assert handover.finished and handover.ready(block=False) is None
    with pytest.raises(RuntimeError, match="fell over"):
        list(Handover(_counting(2, [], fail=True)))


def test_ready_takes_what_is_there_and_none_at_the_end():
    handover = Handover(_counting(2, []))
    items: list[int] = []
    while (got := handover.ready(block=True)) is not None:
        items += got
    assert items == [0, 1] and handover.finished


def test_closing_stops_the_generator_at_its_next_item():
    seen: list[str] = []
    stream = iter(Handover(_counting(1000, seen, delay_s=0.01), name="e3rg-test"))
    assert next(stream) == 0
    stream.close()
    assert seen[-1] == "closed" and len(seen) < 50
    assert "e3rg-test" not in [t.name for t in threading.enumerate()]
