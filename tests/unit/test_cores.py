"""Sharing the cores between the LLM and media work: the LLM gives one up before the media work starts."""

from __future__ import annotations

import threading
import time

from e3rg_core import cores


def test_media_work_starts_once_the_llm_has_given_up_a_core(monkeypatch):
    monkeypatch.setattr(cores, "HANDOVER_S", 30.0)
    order = []
    with cores.writing():
        assert cores.llm_threads(2) == 2

        def media():
            with cores.busy():
                order.append("media runs")

        worker = threading.Thread(target=media)
        worker.start()
        time.sleep(0.05)  # the media work waits for the LLM's next token
        order.append("llm moves to one thread")
        assert cores.llm_threads(2) == 1
        worker.join(timeout=5)
    assert order == ["llm moves to one thread", "media runs"]
    assert cores.llm_threads(2) == 2 and not cores.others_busy()


def test_media_work_does_not_wait_when_no_llm_writes(monkeypatch):
    monkeypatch.setattr(cores, "HANDOVER_S", 30.0)
    done = threading.Event()

    def media():
        with cores.busy():
            done.set()

    worker = threading.Thread(target=media)
    worker.start()
    worker.join(timeout=5)
    assert done.is_set()


def test_an_llm_on_one_thread_lets_media_work_start_at_once(monkeypatch):
    monkeypatch.setattr(cores, "HANDOVER_S", 30.0)
    done = threading.Event()
    with cores.writing():
        assert cores.llm_threads(1) == 1

        def media():
            with cores.busy():
                done.set()

        worker = threading.Thread(target=media)
        worker.start()
        worker.join(timeout=5)  # no wait for the LLM's next token: it has no core to give up
        assert done.is_set()
