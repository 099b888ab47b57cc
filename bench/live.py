"""Hands-free talk measured in a browser: Chromium's fake microphone talks to the page (issue 23).

    python bench/live.py [--real] [--out DIR]

Starts the app (``tests/app/serve.py``: the scripted understander test double, real speech, video,
speech recognition and voice activity detection; ``--real``: ``app.py`` on the embedded defaults) and
Debian's Chromium, whose fake microphone plays one WAV once: several utterances in the embedded voice
with pauses, one of them said while the avatar is answering (an interruption), a stretch of silence,
one of white noise and one of music (a chord with a melody). The page is opened, **Hands-free** is
chosen and the microphone's Record pressed once; nothing else is clicked.

Chromium runs at the lowest CPU priority (``nice 19``): a visitor's browser runs on their own machine,
so here it may only take what the server leaves. The page is watched every 10 ms (the hands-free voice player's clock, ``window.e3rgVoice``, and the
face's ``<video>``); the microphone's clock starts when ``getUserMedia`` hands the page its stream (the
fake device plays the file from then on). Figures, written to ``live.json`` (``--real``) or
``live_scripted.json``:

* end of speech → first avatar audio and → first avatar video, per answered utterance (median, p90);
* barge-in → silence: from the start of the interrupting utterance to the voice falling silent (held by
  the page's own ear, or stopped by the server's barge-in);
* page false stops: holds the page's ear let go of because the server heard no barge-in;
* false barge-ins: replies the server cut short while nobody was speaking (nothing plays the avatar's
  voice back into this fake microphone, so echo itself is tested in ``tests/unit/test_live.py``); a
  reply so late that it overlaps the next planned utterance is cut by it, rightly;
* turns lost: planned utterances with no stored turn of their words; turns made from silence,
  noise or music.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import sys
import time
import wave
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import machine  # noqa: E402 - the benches' shared helpers

RATE_HZ = 48000
#: (seconds of silence before, what is said) in order; None: a non-speech stretch of that kind
PLAN = (
    (1.0, "I failed my driving test again today."),
    (12.0, "My sister called and we laughed for an hour."),
    (5.0, "Sorry to cut in, can I tell you something else?"),  # while the avatar answers the last one
    (12.0, "My best friend is moving to another country next month."),
    (12.0, ("noise", 3.0)),
    (3.0, ("music", 4.0)),
    (10.0, None),
)
INTERRUPTION = 2  # the index (among the utterances) of the one said over the avatar's reply
#: CPU seconds of the browser and the server while the page was watched (``run_page``)
CPU_USED: dict[str, float] = {}
GOALS = {"first_audio_median_s": 1.5, "barge_in_to_silence_s": 0.3, "false_barge_ins": 0, "turns_lost": 0}
WATCH_JS = """() => {
  window.e3watch = [];
  let voice = false, face = false, state = '', held = false, resumed = 0;
  const sounding = () => {
    const h = window.e3rgVoice;
    if (h && h.ear && h.ear.held) return false;  // the page's ear holds the voice: its output is muted
    if (h && h.ctx && h.startAt !== null && !h.stopped) {
      const now = h.ctx.currentTime;
      if (now >= h.startAt && now < h.endAt) return true;
    }
    const a = document.querySelector('#live_audio audio');
    return !!a && !a.paused && !a.ended && a.currentTime > 0;
  };
  const showing = () => {
    const v = document.querySelector('#live_video video');
    return !!v && !v.paused && !v.ended && v.currentTime > 0;
  };
  setInterval(() => {
    const now = performance.now();
    const v = sounding(), f = showing();
    if (v !== voice) { window.e3watch.push({t: now, ev: v ? 'voice' : 'silent'}); voice = v; }
    if (f !== face) { window.e3watch.push({t: now, ev: f ? 'face' : 'still'}); face = f; }
    const ear = window.e3rgVoice && window.e3rgVoice.ear;
    const h = !!ear && ear.held;
    if (h !== held) {  // a hold ends in the server's barge-in ('stop') or, with none, the voice going on ('resume')
      window.e3watch.push({t: now, ev: h ? 'hold' : (ear.resumed > resumed ? 'resume' : 'stop')});
      held = h;
      resumed = ear.resumed;
    }
    const box = document.querySelector('#live_state textarea');
    if (box && box.value !== state) { state = box.value; window.e3watch.push({t: now, ev: 'state:' + state}); }
  }, 10);
}"""
CAPTURE_JS = """(() => {
  const get = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
  navigator.mediaDevices.getUserMedia = (c) => get(c).then((s) => {
    if (window.e3capture === undefined) { window.e3capture = performance.now(); window.e3epoch = Date.now(); }
    return s;
  });
})();"""


def make_wav(folder: Path, plan: tuple = PLAN) -> tuple[Path, list[dict]]:
    """The microphone's file and where each utterance (or stretch) of ``plan`` lies in it."""
    import soxr

    from e3rg_core.media.audio import read_audio
    from e3rg_core.memory.profiles import VoiceSettings
    from e3rg_core.speech.embedded import EmbeddedSpeaker

    speaker, rng = EmbeddedSpeaker(), np.random.default_rng(0)
    parts, marks, t = [], [], 0.0
    for k, (gap, what) in enumerate(plan):
        parts.append(np.zeros(int(gap * RATE_HZ), np.float32))
        t += gap
        if what is None:
            continue
        if isinstance(what, str):
            speech = speaker.synthesize(what, emotion="neutral", intensity=0.0, voice=VoiceSettings(voice="heart"),
                                        out_path=folder / f"say{k}.wav")
            audio = read_audio(speech.wav_path)
            x = np.asarray(soxr.resample(audio.samples, audio.sample_rate_hz, RATE_HZ), np.float32)
            voiced = np.flatnonzero(np.abs(x) > 0.02)  # the words, without the voice's own edge silence
            start, end = t + voiced[0] / RATE_HZ, t + voiced[-1] / RATE_HZ
            marks.append({"kind": "speech", "text": what, "start_s": round(start, 3), "end_s": round(end, 3)})
        else:
            kind, seconds = what
            n = int(seconds * RATE_HZ)
            times = np.arange(n) / RATE_HZ
            if kind == "noise":
                x = (0.05 * rng.standard_normal(n)).astype(np.float32)
            else:  # a chord under a plucked melody
                chord = sum(np.sin(2 * np.pi * f * times) for f in (220.0, 277.2, 329.6)) * 0.04
                notes = np.array([440.0, 494.0, 523.3, 587.3, 659.3, 587.3, 523.3, 494.0])
                melody = np.sin(2 * np.pi * notes[(times * 2).astype(int) % len(notes)] * times)
                x = (chord + 0.08 * melody * np.exp(-3 * (times % 0.5))).astype(np.float32)
            marks.append({"kind": kind, "start_s": round(t, 3), "end_s": round(t + seconds, 3)})
        parts.append(x)
        t += len(x) / RATE_HZ
    samples = np.concatenate(parts)
    path = folder / "microphone.wav"
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE_HZ)
        out.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return path, marks


def _niced_chromium(folder: Path) -> str:
    """Debian's chromium at the lowest CPU priority: the browser runs on the user's machine, not the
    server's, so here it takes only what the server leaves."""
    wrapper = Path(folder) / "chromium-niced"
    wrapper.write_text(f'#!/bin/sh\nexec nice -n 19 {shutil.which("chromium")} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return str(wrapper)


def _tree(root_pids: list[int]) -> list[int]:
    """``root_pids`` and every process below them (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(root_pids), list(root_pids)
    while frontier:
        pid = frontier.pop()
        children = [c for c, p in parents.items() if p == pid and c not in found]
        found.update(children)
        frontier.extend(children)
    return sorted(found)


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes ``pids`` (those still alive) and their finished children have used."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15]) / tick  # its own and its finished children's
    return total


def chromium_pids(wav: Path) -> list[int]:
    """The browser playing ``wav`` as its microphone, with its renderers and helpers."""
    roots = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if f"--use-file-for-fake-audio-capture={wav}".encode() in cmdline.read_bytes():
                roots.append(int(cmdline.parent.name))
        except OSError:
            continue
    return _tree(roots)


#: the page has been listening, its voice silent, for at least this many ms (``run_page``'s ``settle_s``)
SETTLED_JS = """(quietMs) => {
  const w = window.e3watch || [];
  const box = document.querySelector('#live_state textarea');
  const last = w.length ? w[w.length - 1] : null;
  const h = window.e3rgVoice;
  const held = !!(h && h.ear && h.ear.held);
  return !!box && box.value === 'listening' && !held && (!last || performance.now() - last.t >= quietMs);
}"""


def run_page(url: str, wav: Path, seconds: float, *, server_pid: int | None = None,
             settle_s: float | None = None, settle_limit_s: float = 30.0) -> tuple[float, list[dict], float]:
    """Open the page, start hands-free talk, watch for ``seconds``: the capture's start (the page's clock,
    ms), the events, and the capture's start as a Unix time (s).

    With ``settle_s`` it then watches on until nothing has changed on the page for ``settle_s`` while it
    listens (no voice, no turn being made; at most ``settle_limit_s`` more), so that every turn the
    microphone started is stored when it returns, however slow the machine.

    With ``server_pid``, the CPU seconds the browser and the server used while the page was watched
    are logged and kept in ``CPU_USED`` (the two share the machine's cores)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    from tests.app.browser_support import CHROMIUM_ARGS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=_niced_chromium(wav.parent),
            args=[*CHROMIUM_ARGS, f"--use-file-for-fake-audio-capture={wav}%noloop",
                  "--autoplay-policy=no-user-gesture-required"])
        try:
            page = browser.new_page()
            page.add_init_script(CAPTURE_JS)
            page.goto(url)
            page.wait_for_selector("#send", timeout=120_000)
            page.get_by_role("tab", name="Hands-free").click()
            page.wait_for_selector("#live_mic", timeout=30_000)
            page.evaluate(WATCH_JS)
            page.locator("#live_mic button", has_text="Record").first.click()
            page.wait_for_function("window.e3capture !== undefined", timeout=30_000)
            browser_pids = chromium_pids(wav)
            servers = _tree([server_pid]) if server_pid else []
            before = (cpu_seconds(browser_pids), cpu_seconds(servers), time.perf_counter())
            page.wait_for_timeout(int(seconds * 1000))
            if settle_s is not None:
                try:
                    page.wait_for_function(SETTLED_JS, arg=settle_s * 1000, timeout=settle_limit_s * 1000,
                                           polling=100)
                except PlaywrightTimeout:  # still busy: the caller judges what it watched
                    pass
            browser_pids = sorted(set(browser_pids) | set(chromium_pids(wav)))
            CPU_USED.update(browser_cpu_s=round(cpu_seconds(browser_pids) - before[0], 1),
                            server_cpu_s=round(cpu_seconds(sorted(set(servers) | set(_tree(servers[:1])))) - before[1], 1),
                            watched_s=round(time.perf_counter() - before[2], 1))
            return (page.evaluate("window.e3capture"), page.evaluate("window.e3watch"),
                    page.evaluate("window.e3epoch") / 1000.0)
        finally:
            browser.close()


def stored_turns(data_dir: Path) -> list[dict]:
    path = next(Path(data_dir).rglob("*.sqlite3"))
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT user_text, reply_text, details_json FROM turns ORDER BY created_at").fetchall()
    return [{"user_text": u, "reply": r, "details": json.loads(d)} for u, r, d in rows]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z']+", text.lower()))


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 3)


def barge_ins(log: str, capture_epoch_s: float) -> list[float]:
    """When the server cut a reply short, in seconds on the microphone's clock (from its log's times)."""
    times = []
    for stamp, millis in re.findall(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) .*barge-in at", log, flags=re.M):
        epoch = time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(millis) / 1000.0  # the log's local time
        times.append(round(epoch - capture_epoch_s, 3))
    return times


def measure(marks: list[dict], capture_ms: float, events: list[dict], turns: list[dict], log: str,
            capture_epoch_s: float, *, heard_share: float = 0.6) -> dict:
    """The report's figures from the plan, the page's events, the stored turns and the server's log.

    An utterance counts as stored when a stored turn holds ``heard_share`` of its words. A barge-in is
    false when nobody was speaking: no planned utterance began before it and ended
    less than 1.5 s before it (the time the server needs to hear a turn's last piece).
    """
    at = lambda e: (e["t"] - capture_ms) / 1000.0  # noqa: E731 - seconds on the microphone's clock
    voice_on = [at(e) for e in events if e["ev"] == "voice"]
    voice_off = [at(e) for e in events if e["ev"] == "silent"]
    face_on = [at(e) for e in events if e["ev"] == "face"]
    speech = [m for m in marks if m["kind"] == "speech"]
    rows, first_audio, first_video = [], [], []
    for k, mark in enumerate(speech):
        wanted = _words(mark["text"])
        matched = [t for t in turns if len(wanted & _words(t["user_text"])) >= heard_share * len(wanted)]
        later = speech[k + 1]["start_s"] if k + 1 < len(speech) else float("inf")
        audio = next((t - mark["end_s"] for t in voice_on if mark["end_s"] < t < later), None)
        video = next((t - mark["end_s"] for t in face_on if mark["end_s"] < t < later), None)
        row = {"text": mark["text"], "end_s": mark["end_s"], "stored": bool(matched),
               "heard_as": matched[0]["user_text"] if matched else None,
               "end_to_first_audio_s": round(audio, 3) if audio is not None else None,
               "end_to_first_video_s": round(video, 3) if video is not None else None}
        if k == INTERRUPTION:
            silence = next((t - mark["start_s"] for t in voice_off if t > mark["start_s"]), None)
            row["interrupts"] = True
            row["barge_in_to_silence_s"] = round(silence, 3) if silence is not None else None
            row["interrupted_turn_stored"] = any("interrupted" in t["details"] for t in turns)
        elif audio is not None:
            first_audio.append(audio)
            if video is not None:
                first_video.append(video)
        rows.append(row)
    holds = [at(e) for e in events if e["ev"] == "hold"]
    resumed = [at(e) for e in events if e["ev"] == "resume"]
    cuts = barge_ins(log, capture_epoch_s)
    false_cuts = [t for t in cuts if not any(m["start_s"] - 0.2 <= t <= m["end_s"] + 1.5 for m in speech)]
    speech_words = set().union(*(_words(m["text"]) for m in speech))
    from_nothing = [t["user_text"] for t in turns if not (_words(t["user_text"]) & speech_words)]
    cut = rows[INTERRUPTION].get("barge_in_to_silence_s")
    return {
        "utterances": rows,
        "end_of_speech_to_first_audio_s": {"median": _quantile(first_audio, 0.5), "p90": _quantile(first_audio, 0.9),
                                            "n": len(first_audio)},
        "end_of_speech_to_first_video_s": {"median": _quantile(first_video, 0.5), "p90": _quantile(first_video, 0.9),
                                            "n": len(first_video)},
        "barge_in_to_silence_s": cut,
        "barge_ins_at_s": cuts,
        "false_barge_ins": len(false_cuts),
        "page_holds_at_s": [round(t, 3) for t in holds],
        "page_false_stops": len(resumed),  # holds the page let go of, the server having heard no barge-in
        "turns_lost": sum(not r["stored"] for r in rows),
        "turns_from_silence_noise_or_music": from_nothing,
        "words_ready_after_pause_s": [float(x) for x in re.findall(r"words were ready ([0-9.]+) s after the pause", log)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", action="store_true", help="app.py on the embedded defaults, not the test double")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "reports")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (the server's log, its data)")
    args = parser.parse_args()
    if shutil.which("chromium") is None:
        sys.exit("bench/live.py needs Debian's chromium on PATH (apt-get install chromium)")
    from tests.app.browser_support import AppServer

    load_before = [round(x, 2) for x in os.getloadavg()]  # the cores are shared: say how busy they were
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"e3rg-live-bench-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    (work / "server").mkdir(parents=True)
    wav, marks = make_wav(work)
    server = AppServer(work / "server", args=("--real",) if args.real else ())
    server.start()
    started = time.perf_counter()
    try:
        with wave.open(str(wav)) as w:
            seconds = w.getnframes() / w.getframerate() + 8.0
        capture_ms, events, capture_epoch_s = run_page(server.url, wav, seconds, server_pid=server.proc.pid)
    finally:
        server.stop()
    turns = stored_turns(server.data)
    log = server.log_path.read_text(errors="replace")
    figures = measure(marks, capture_ms, events, turns, log, capture_epoch_s)
    report = {
        "what": "hands-free talk in Chromium with a fake microphone (bench/live.py)",
        "machine": {**machine(), "load_average_1_5_15_before": load_before,
                    "load_average_1_5_15_after": [round(x, 2) for x in os.getloadavg()]},
        "understander": "app.py embedded defaults" if args.real else "tests/app/serve.py scripted test double",
        "plan": marks, "goals": GOALS, **figures,
        "cpu_while_watched": dict(CPU_USED),
        "stored_turns": [{"user_text": t["user_text"], "reply": t["reply"],
                          "interrupted": t["details"].get("interrupted"),
                          "streamed": t["details"].get("streamed")} for t in turns],
        "wall_s": round(time.perf_counter() - started, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    name = "live.json" if args.real else "live_scripted.json"  # the test double's run has its own report
    (args.out / name).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("end_of_speech_to_first_audio_s", "end_of_speech_to_first_video_s",
                                             "barge_in_to_silence_s", "false_barge_ins", "page_false_stops",
                                             "turns_lost", "cpu_while_watched",
                                             "turns_from_silence_noise_or_music")}, indent=2))
    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
