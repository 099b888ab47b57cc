"""A llama.cpp server (llama-cpp-python's ``llama_cpp.server``) run for the tests that talk to one over HTTP."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from tests.app.browser_support import free_port

__all__ = ["free_port", "llama_server"]


@contextmanager
def llama_server(argv: list[str], *, port: int, log: Path, timeout_s: float) -> Iterator[str]:
    """Run ``argv`` (a server listening on 127.0.0.1:``port``) until it answers ``/v1/models``; yield its
    base URL and stop it afterwards. Its output goes to ``log``, whose tail is shown when it fails."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + timeout_s
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama.cpp server exited: {log.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2).close()
                break
            except OSError:
                if time.time() > deadline:
                    pytest.fail(f"llama.cpp server did not answer in {timeout_s:.0f} s")
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
