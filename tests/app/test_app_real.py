"""``python app.py`` on the embedded defaults, as a new user runs it: a text turn gives all four outputs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.app.browser_support import free_port
from tests.app.api import OUT

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_python_app_py_answers_a_text_turn(tmp_path):
    from gradio_client import Client

    port = free_port()
    env = {**os.environ, "E3RG_DATA_DIR": str(tmp_path / "data"), "E3RG_VIDEO_SIZE_PX": "256",
           "HF_HUB_OFFLINE": "1"}
    log = tmp_path / "app.log"
    with log.open("wb") as out:  # a file, not a pipe: an unread pipe fills up and stalls the server
        proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while "Running on local URL" not in log.read_text(errors="replace"):
            if proc.poll() is not None:
                pytest.fail("app.py died:\n" + log.read_text(errors="replace")[-4000:])
            if time.monotonic() > deadline:
                pytest.fail("app.py did not start in 300 s:\n" + log.read_text(errors="replace")[-4000:])
            time.sleep(0.5)
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        out = dict(zip(OUT, client.predict(None, "amara", "I failed my driving test again today.", None, None,
                                           api_name="/turn")))
        assert out["emotion"] in ("sad", "angry", "fear", "disgusted", "contempt")  # not a happy guess
        assert len(out["reply"].split()) >= 3
        assert Path(out["audio"]).stat().st_size > 10_000
        assert Path(out["video"]).stat().st_size > 10_000
        assert (tmp_path / "data" / "sessions.sqlite3").is_file()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
