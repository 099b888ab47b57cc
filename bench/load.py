"""Concurrent sessions against the served app: latency, throughput, refusals, lost and crossed turns.

    python bench/load.py [--sessions 8] [--turns 5] [--real] [--url URL] [--out DIR]

Starts the app in a subprocess on a free port with a fresh data directory, unless ``--url`` names a
running one: without ``--real`` that is ``tests/app/serve.py`` (the scripted understander test double,
real speech and video), with ``--real`` it is ``app.py`` on the embedded defaults. Then N threads, each
with its own ``gradio_client.Client`` (so its own Gradio session) and its own avatar, send M typed
turns each through ``/turn``, all sessions starting at once. Every message carries its session's and
turn's token ("session-3 turn-2"), so the results show:

* a *refused* turn: the queue was full (Gradio's "Queue is full"), counted by message;
* a *lost* turn: an error other than a refusal, no result, a session id that changed, or a
  conversation (``/resume`` after the turn) whose last user message is not the turn's own;
* a *crossed* session: its conversation (user or avatar messages), or its stored history, holds
  another session's token.

After the run each session is exported (``/export``) and its stored turns checked against what it
sent: exactly its own turns, in order. Writes ``load.json``: the settings, the machine (with the load
averages before and after), latency (submit to result) p50 / p95 / max, throughput in turns per
minute of wall time, and per-session counts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import REPORTS, ROOT, machine

AVATARS = ("amara", "rosa", "kofi")
#: what the sessions say, in turn; "driving" and "sister" steer the scripted understander's reply
SENTENCES = ("I failed my driving test again today.", "My sister called and we laughed for an hour.",
             "Work has been really stressful this week.", "I finally finished the marathon!",
             "I miss my grandmother a lot lately.")
TOKEN = re.compile(r"session-(\d+) turn-(\d+)")
#: the names /turn's outputs go by, in order (docs/api.md)
OUT = ("sid", "emotion", "distribution", "reply", "audio", "video", "timings", "crisis", "details")


def message(session: int, turn: int) -> str:
    return f"{SENTENCES[(session + turn) % len(SENTENCES)]} (session-{session} turn-{turn})"


def user_texts(turns: list[dict]) -> list[str]:
    """The user's texts of a conversation as ``/resume`` returns its turns."""
    return [t.get("user_text", "") for t in turns or ()]


def all_texts(turns: list[dict]) -> list[str]:
    return [text for t in turns or () for text in (t.get("user_text", ""), t.get("reply", ""))]


def tokens_in(texts: list[str]) -> set[tuple[int, int]]:
    return {(int(s), int(t)) for text in texts for s, t in TOKEN.findall(text)}


@dataclass
class SessionRun:
    """What one session sent and got back."""

    index: int
    avatar: str
    sid: str | None = None
    latencies_s: list[float] = field(default_factory=list)
    ok: int = 0
    refused: int = 0
    lost: list[str] = field(default_factory=list)  # why each lost turn was lost
    crossed: set[int] = field(default_factory=set)  # other sessions whose tokens showed up
    errors: list[str] = field(default_factory=list)
    stored: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"session": self.index, "avatar": self.avatar, "sid": self.sid, "ok": self.ok,
                "refused": self.refused, "lost": len(self.lost), "lost_why": self.lost,
                "crossed_with": sorted(self.crossed), "errors": self.errors,
                "latency_s": [round(x, 3) for x in self.latencies_s], "stored": self.stored}


def drive(url: str, run: SessionRun, n_turns: int, start: threading.Barrier, client_kwargs: dict) -> None:
    """One session's turns, one after another, each waiting for the last."""
    from gradio_client import Client

    try:
        client = Client(url, verbose=False, **client_kwargs)  # its own Gradio session
    except Exception as exc:  # noqa: BLE001 - a session that cannot connect loses all its turns
        run.lost += [f"turn {turn}: no client: {str(exc)[:200]}" for turn in range(n_turns)]
        run.errors.append(str(exc)[:200])
        start.wait()
        return
    start.wait()
    for turn in range(n_turns):
        text = message(run.index, turn)
        began = time.perf_counter()
        try:
            result = client.predict(run.sid, run.avatar, text, None, None, api_name="/turn")
        except Exception as exc:  # noqa: BLE001 - every failure is counted, by its message
            if "queue is full" in str(exc).lower():
                run.refused += 1
            else:
                run.lost.append(f"turn {turn}: {type(exc).__name__}: {str(exc)[:200]}")
                run.errors.append(str(exc)[:200])
            continue
        run.latencies_s.append(time.perf_counter() - began)
        out = dict(zip(OUT, result)) if isinstance(result, (list, tuple)) else {}
        try:  # the conversation as stored now, as the page would repaint it
            turns = client.predict(out["sid"], api_name="/resume")[2] if out.get("sid") else []
        except Exception as exc:  # noqa: BLE001
            turns = []
            run.errors.append(f"resume: {str(exc)[:200]}")
        users = user_texts(turns)
        if not out.get("sid"):
            run.lost.append(f"turn {turn}: no session id in the result")
        elif run.sid is not None and out["sid"] != run.sid:
            run.lost.append(f"turn {turn}: session id changed to {out['sid']}")
        elif not users or users[-1] != text:
            run.lost.append(f"turn {turn}: the conversation ends with {users[-1] if users else None!r}")
        else:
            run.ok += 1
        run.sid = run.sid or out.get("sid")
        run.crossed |= {s for s, _ in tokens_in(all_texts(turns)) if s != run.index}


def check_stored(url: str, run: SessionRun, sent: list[str], client_kwargs: dict) -> None:
    """Export the session and compare its stored user texts with what it sent."""
    from gradio_client import Client

    if not run.sid:
        run.stored = {"ok": False, "why": "no session id"}
        return
    try:
        path = Client(url, verbose=False, **client_kwargs).predict(run.sid, api_name="/export")
        with zipfile.ZipFile(path) as archive:
            stored = [t["record"]["user_text"] for t in json.loads(archive.read("session.json"))["turns"]]
    except Exception as exc:  # noqa: BLE001
        run.stored = {"ok": False, "why": f"export failed: {str(exc)[:200]}"}
        return
    run.crossed |= {s for s, _ in tokens_in(stored) if s != run.index}
    run.stored = {"ok": stored == sent, "n_turns": len(stored)}
    if stored != sent:
        run.stored["texts"] = stored


class Server:
    """The app in a subprocess on a free port, its output in a log file; ready once it answers HTTP."""

    def __init__(self, root: Path, *, real: bool, start_timeout_s: float = 300.0) -> None:
        from tests.app.browser_support import free_port

        self.port, self.root, self.real = free_port(), root, real
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = root / "server.log"
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen | None = None

    def command(self) -> tuple[list[str], dict[str, str]]:
        env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"}
        if self.real:
            env["E3RG_DATA_DIR"] = str(self.root / "data")  # the model cache stays the user's own
            return [sys.executable, "app.py", "--port", str(self.port)], env
        return [sys.executable, "-m", "tests.app.serve", "--port", str(self.port), "--data", str(self.root / "data"),
                "--cache", str(self.root / "cache")], env

    def start(self) -> float:
        """Start it and return the seconds until it answered."""
        began = time.monotonic()
        argv, env = self.command()
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        while time.monotonic() - began < self.start_timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the app died (exit {self.proc.returncode}):\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "config", timeout=5) as response:
                    if response.status == 200:
                        return time.monotonic() - began
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the app did not answer in {self.start_timeout_s:.0f} s:\n{self.log_tail()}")

    def log_tail(self, n_lines: int = 40) -> str:
        try:
            return "".join(self.log_path.read_text(errors="replace").splitlines(True)[-n_lines:])
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None


def _quantile(values: list[float], q: int) -> float | None:
    """The q-th percentile (inclusive method), or None without values."""
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 3)
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1], 3)


def run_load(url: str, *, n_sessions: int, n_turns: int, client_kwargs: dict | None = None) -> dict[str, Any]:
    """Drive the sessions at once against ``url`` and summarise; the per-session rows are in ``sessions``."""
    client_kwargs = client_kwargs or {}
    runs = [SessionRun(index=i, avatar=AVATARS[i % len(AVATARS)]) for i in range(n_sessions)]
    start = threading.Barrier(n_sessions + 1)
    threads = [threading.Thread(target=drive, args=(url, run, n_turns, start, client_kwargs), daemon=True)
               for run in runs]
    for thread in threads:
        thread.start()
    start.wait()  # every client is connected; the clock starts now
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall_s = time.perf_counter() - began
    for run in runs:
        check_stored(url, run, [message(run.index, t) for t in range(n_turns)], client_kwargs)
    latencies = [x for run in runs for x in run.latencies_s]
    ok = sum(run.ok for run in runs)
    return {
        "wall_s": round(wall_s, 2),
        "turns_sent": n_sessions * n_turns,
        "turns_ok": ok,
        "throughput_turns_per_min": round(ok / wall_s * 60, 2) if wall_s else None,
        "latency_s": {"p50": _quantile(latencies, 50), "p95": _quantile(latencies, 95),
                      "min": round(min(latencies), 3) if latencies else None,
                      "max": round(max(latencies), 3) if latencies else None,
                      "mean": round(statistics.mean(latencies), 3) if latencies else None},
        "refused": sum(run.refused for run in runs),
        "lost": sum(len(run.lost) for run in runs),
        "crossed_sessions": sum(bool(run.crossed) for run in runs),
        "stored_ok_sessions": sum(bool(run.stored.get("ok")) for run in runs),
        "sessions": [run.summary() for run in runs],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--real", action="store_true", help="serve app.py on the embedded defaults")
    parser.add_argument("--url", help="a running app to load instead of starting one")
    parser.add_argument("--out", type=Path, default=REPORTS)
    args = parser.parse_args()

    server, started_s = None, None
    with tempfile.TemporaryDirectory(prefix="e3rg-load-") as tmp:
        if args.url:
            url = args.url
        else:
            server = Server(Path(tmp), real=args.real)
            print(f"starting {'app.py' if args.real else 'tests.app.serve (scripted understander)'} "
                  f"on {server.url}", flush=True)
            started_s = round(server.start(), 1)
            url = server.url
        load_before = os.getloadavg()
        try:
            results = run_load(url, n_sessions=args.sessions, n_turns=args.turns)
        finally:
            if server is not None:
                log_tail = server.log_tail(20)
                server.stop()
        load_after = os.getloadavg()

    summary = {k: v for k, v in results.items() if k != "sessions"}
    report = {
        "bench": "load",
        "settings": {"sessions": args.sessions, "turns_per_session": args.turns,
                     "server": "url" if args.url else ("app.py (embedded defaults)" if args.real
                                                       else "tests.app.serve (scripted understander)"),
                     "url": args.url, "server_start_s": started_s, "input": "typed text",
                     "avatars": list(AVATARS)},
        "machine": {**machine(), "loadavg_before": [round(x, 2) for x in load_before],
                    "loadavg_after": [round(x, 2) for x in load_after]},
        "results": summary,
        "sessions": results["sessions"],
    }
    if server is not None and (results["lost"] or results["crossed_sessions"]):
        report["server_log_tail"] = log_tail
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "load.json"
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
