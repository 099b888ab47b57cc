"""Shared bits of the benchmarks: the labelled dev set, machine facts, writing a JSON report."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from e3rg_core.types import Utterance, UserTurn  # noqa: E402

DEV_SET = ROOT / "bench" / "data" / "emotion_dev.jsonl"
REPORTS = ROOT / "bench" / "reports"


def load_dev_set(path: Path = DEV_SET) -> list[tuple[str, UserTurn, str]]:
    """(id, turn, gold label) for each line of the labelled development set."""
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            history = tuple(Utterance(u["role"], u["text"]) for u in row.get("history", []))
            items.append((row["id"], UserTurn(text=row["text"], history=history), row["emotion"]))
    return items


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def llm_threads(understander, threads: int | None) -> None:
    """Run the understander's llama.cpp models on ``threads`` threads (None: the config's). On a 2-core
    machine another benchmark shares, two llama.cpp processes with 3 threads between them stall at their
    barriers: 1 each keeps both moving. llama.cpp fits its threads to ``n_threads`` before each call."""
    if not threads:
        return
    for backend in understander._backends.values():
        if hasattr(backend, "n_threads"):
            backend.n_threads = threads


def write_report(name: str, report: dict) -> Path:
    REPORTS.mkdir(parents=True, exist_ok=True)
    path = REPORTS / f"{name}.json"
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    return path
