"""The issue's acceptance check: the CLI on the embedded defaults, offline, on CPU."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from e3rg_core.config import UnderstandingConfig
from e3rg_core.emotions import CANDIDATES, COARSE

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_understand_json_on_embedded_defaults():
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # the default cache dir, as a user would have
    out = subprocess.run(
        [sys.executable, "-m", "e3rg_core", "understand", "--json", "--text",
         "I failed my driving test again today."],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["emotion"] in CANDIDATES
    assert result["coarse"] in COARSE
    assert len(result["votes"]) == len(UnderstandingConfig().voters) and all(v["label"] in CANDIDATES for v in result["votes"])
    assert sum(result["distribution"].values()) == pytest.approx(1.0, abs=5e-3)
    assert 0 < result["confidence"] <= 1
    assert len(result["reply"].split()) >= 3
    assert result["crisis"] is False
