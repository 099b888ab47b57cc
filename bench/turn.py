"""A whole turn on the embedded defaults: seconds per stage, first audio, finished video, memory.

    python bench/turn.py [--quick] [--out DIR]

Writes ``turn.json`` and ``turn.png`` (each turn's stage seconds as stacked bars) to ``--out``
(default bench/reports). One ``Pipeline`` on the ``load_config()`` defaults: the qwen1.5b reply with
the minilm + qwen1.5b vote, the embedded voices, the mesh video at 512 px and the output check. The
cold start is timed apart: ``warm_up()``, each voice's first sentence, and a first turn from the
webcam clip (it evaluates the LLM's system prompt and makes Whisper's first call). Then 8 turns,
rotating over the three shipped avatars: 6 typed turns from the dev set (3 with a short history)
and 2 recorded ones, a 5-s microphone WAV and a 5-s webcam WebM (VP8 + Opus) made from the embedded
voice and a shipped portrait as ``bench/perception.py`` makes its clip. ``--quick``: the first typed
turn and the webcam turn.

Each turn runs twice, whole and streamed, in alternating order (so neither always goes first), each
run after a one-line turn (``forget_dialogue``), so neither finds the other's dialogue in the LLM's cache:

* whole (``Pipeline.run``, the ``/turn`` API): the audio exists once speech is done, so the time to
  first audio is heard + understood + spoken, and the finished video adds rendered;
* streamed (``Pipeline.stream``, the page): first audio is when the first sentence's voice is out,
  first video when its video is, finished when the whole MP4 is joined. Goals: first audio
  <= 2.5 s, first video <= 3.5 s, and finished no later than the same turn whole (the median of
  the per-turn ratios <= 1).

The per-stage goals (understanding <= 2 s, reading a 5-s clip <= 1 s, speech RTF <= 0.2, video
RTF <= 0.3) are checked on the whole turns' medians.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from _common import REPORTS, load_dev_set, machine

from e3rg_core.events import STAGES, RenderedPiece, SpokenPiece, StageResult, TurnRequest
from e3rg_core.memory.profiles import VoiceSettings
from e3rg_core.pipeline import Pipeline
from e3rg_core.speech import voice_for
from e3rg_core.types import UserTurn

AVATARS = ("amara", "rosa", "kofi")
#: (dev-set id or recording, avatar): joyful, angry*, terrified, sad*, disgusted*, surprised (* with history)
TURNS = (("dev016", "amara"), ("dev048", "rosa"), ("dev065", "kofi"), ("dev077", "amara"),
         ("dev093", "rosa"), ("dev034", "kofi"), ("mic", "rosa"), ("webcam", "kofi"))
MIC_TEXT = "I didn't get into any of the universities I applied to, and I don't know what to do."
WEBCAM_TEXT = "My coworker covered all my shifts when my dad was sick, I owe her so much."
GOALS = {"understood_s": 2.0, "heard_s": 1.0, "spoken_rtf": 0.2, "rendered_rtf": 0.3}
STREAM_GOALS = {"first_audio_s": 2.5, "first_video_s": 3.5, "finished_ratio": 1.0}
COLOURS = {"heard": (127, 140, 141), "understood": (230, 126, 34), "spoken": (39, 174, 96),
           "rendered": (41, 128, 185), "checked": (142, 68, 173)}


@dataclass(frozen=True)
class BenchTurn:
    name: str  # "dev016", "mic", "webcam"
    request: TurnRequest


def record(pipeline: Pipeline, text: str, out_path: Path, *, webcam: bool) -> tuple[Path, float]:
    """A user saying ``text`` in the embedded voice: a microphone WAV, or a webcam WebM of a portrait."""
    import imageio_ffmpeg

    voice = VoiceSettings(voice="heart")
    said = pipeline.speaker("embedded").synthesize(text, emotion="neutral", intensity=0.0, voice=voice,
                                                   out_path=out_path.with_suffix(".wav"))
    if not webcam:
        return said.wav_path, said.duration_s
    portrait = pipeline.library.get("rosa").portrait
    # VP8 in real-time mode, as a browser's MediaRecorder encodes (the best-quality mode takes 20 s a clip)
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-loop", "1", "-framerate", "30",
                    "-i", str(portrait), "-i", str(said.wav_path), "-vf", "scale=640:480,format=yuv420p",
                    "-shortest", "-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "1M",
                    "-c:a", "libopus", str(out_path)], check=True)
    return out_path, said.duration_s


def bench_turns(pipeline: Pipeline, folder: Path, *, quick: bool = False) -> tuple[list[BenchTurn], dict]:
    """The fixed turns (recordings made in ``folder``) and the recordings' seconds."""
    mic, mic_s = record(pipeline, MIC_TEXT, folder / "mic.wav", webcam=False)
    webcam, webcam_s = record(pipeline, WEBCAM_TEXT, folder / "webcam.webm", webcam=True)
    seconds = {"mic": round(mic_s, 2), "webcam": round(webcam_s, 2)}
    dev = {item_id: turn for item_id, turn, _ in load_dev_set()}
    turns = []
    for name, avatar in (TURNS[0], TURNS[-1]) if quick else TURNS:
        if name == "mic":
            request = TurnRequest(audio_path=mic, avatar_id=avatar)
        elif name == "webcam":
            request = TurnRequest(video_path=webcam, avatar_id=avatar)
        else:
            request = TurnRequest(text=dev[name].text, history=dev[name].history, avatar_id=avatar)
        turns.append(BenchTurn(name, request))
    return turns, seconds


def _max_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # Linux reports KiB


def _cpu_s() -> float:
    """CPU seconds used so far by this process and its finished children (ffmpeg)."""
    return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_SELF,
                                                                          resource.RUSAGE_CHILDREN)))


def run_turn(pipeline: Pipeline, turn: BenchTurn, workdir: Path) -> dict[str, Any]:
    """One turn through the pipeline: its stage seconds, latencies, real-time factors and outputs."""
    values, seconds, cpu_before = {}, {}, _cpu_s()
    for step in pipeline.run(turn.request, workdir):
        values[step.stage], seconds[step.stage] = step.value, step.seconds
    cpu_s = _cpu_s() - cpu_before
    responder = pipeline.understander().backend(pipeline.config.understanding.responder)
    usage = getattr(responder, "last_usage", None) or {}  # the reply is the turn's last LLM call
    heard, understanding, speech, video = (values[s] for s in STAGES[:4])
    audio_s = speech.duration_s
    first_audio = seconds["heard"] + seconds["understood"] + seconds["spoken"]
    perception = heard.perception
    return {
        "turn": turn.name, "avatar": turn.request.avatar_id, "input": heard.input_kind,
        "history_turns": len(turn.request.history), "heard_text": heard.text,
        "emotion": understanding.emotion, "coarse": understanding.coarse, "reply": understanding.reply,
        "reply_emotion": understanding.reply_emotion,
        "stages_s": {k: round(v, 3) for k, v in seconds.items()},
        "understood_parts_s": {k: round(v, 3) for k, v in understanding.timings_s.items()},
        "reply_tokens": usage.get("completion_tokens"), "reply_prompt_tokens": usage.get("prompt_tokens"),
        "heard_parts_s": {k: round(v, 3) for k, v in perception.timings_s.items()} if perception else {},
        "first_audio_s": round(first_audio, 3),
        "finished_video_s": round(first_audio + seconds["rendered"], 3),
        "total_s": round(sum(seconds.values()), 3),
        # CPU seconds per wall second: about 2 when the turn has both cores, less when other work takes them
        "cores_used": round(cpu_s / sum(seconds.values()), 2),
        "reply_audio_s": round(audio_s, 2),
        "spoken_rtf": round(seconds["spoken"] / audio_s, 4),
        "rendered_rtf": round(seconds["rendered"] / audio_s, 4),
        "wav_bytes": Path(speech.wav_path).stat().st_size, "mp4_bytes": Path(video.mp4_path).stat().st_size,
        "n_frames": video.n_frames,
        "check": values["checked"].summary() if values.get("checked") is not None else None,
    }


def run_streamed(pipeline: Pipeline, turn: BenchTurn, workdir: Path) -> dict[str, Any]:
    """One streamed turn: when its first voice and face were out, and when the whole MP4 was."""
    began = time.perf_counter()
    marks: dict[str, float] = {}
    values: dict[str, Any] = {}
    pieces = 0
    for event in pipeline.stream(turn.request, workdir):
        now = round(time.perf_counter() - began, 3)
        if isinstance(event, SpokenPiece):
            pieces += 1
            marks.setdefault("first_audio_s", now)
        elif isinstance(event, RenderedPiece):
            marks.setdefault("first_video_s", now)
        elif isinstance(event, StageResult):
            values[event.stage] = event.value
            marks[f"{event.stage}_at_s"] = now
    understanding, speech = values["understood"], values["spoken"]
    return {
        "turn": turn.name, "avatar": turn.request.avatar_id, "pieces": pieces,
        "first_audio_s": marks["first_audio_s"], "first_video_s": marks.get("first_video_s"),
        "finished_video_s": marks["rendered_at_s"], "total_s": marks.get("checked_at_s", marks["rendered_at_s"]),
        "emotion_s": round(understanding.timings_s.get("emotion_s", 0.0), 3),
        "reply_s": round(understanding.timings_s.get("reply_s", 0.0), 3),
        "reply": understanding.reply, "reply_audio_s": round(speech.duration_s, 2),
    }


def summarize_streamed(rows: list[dict], whole: list[dict]) -> dict[str, Any]:
    """Streamed latencies, and each streamed turn's finished time over the same turn's whole one."""
    by_name = {r["turn"]: r for r in whole}
    ratios = [round(r["finished_video_s"] / by_name[r["turn"]]["finished_video_s"], 3) for r in rows]
    videos = [r["first_video_s"] for r in rows if r["first_video_s"] is not None]
    return {
        "first_audio": _spread([r["first_audio_s"] for r in rows]),
        "first_video": _spread(videos) if videos else None,
        "finished_video": _spread([r["finished_video_s"] for r in rows]),
        "finished_ratio_to_whole": {"median": round(statistics.median(ratios), 3), "per_turn": ratios},
        "pieces_median": statistics.median(r["pieces"] for r in rows),
    }


def _stream_goals(streamed: dict) -> dict[str, Any]:
    measured = {"first_audio_s": streamed["first_audio"]["median_s"],
                "first_video_s": streamed["first_video"]["median_s"] if streamed["first_video"] else None,
                "finished_ratio": streamed["finished_ratio_to_whole"]["median"]}
    return {key: {"goal": f"<= {goal:g}", "median": measured[key],
                  "met": None if measured[key] is None else measured[key] <= goal}
            for key, goal in STREAM_GOALS.items()}


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else values[0]


def _spread(values: list[float]) -> dict[str, float]:
    return {"median_s": round(statistics.median(values), 3), "p90_s": round(_p90(values), 3), "n": len(values)}


def summarize(rows: list[dict]) -> dict[str, Any]:
    """Medians and p90s over the turns, per stage and end to end."""
    stages = {}
    for stage in STAGES:
        # typed turns skip hearing (0 s), so the hearing stage is summarised over recorded turns only
        chosen = [r for r in rows if stage in r["stages_s"] and (stage != "heard" or r["input"] != "text")]
        if chosen:
            stages[stage] = _spread([r["stages_s"][stage] for r in chosen])
    typed = [r["first_audio_s"] for r in rows if r["input"] == "text"]
    tokens = [r["reply_tokens"] for r in rows if r["reply_tokens"] is not None]
    reply_s = sum(r["understood_parts_s"].get("reply_s", 0.0) for r in rows if r["reply_tokens"] is not None)
    recorded = [r["first_audio_s"] for r in rows if r["input"] != "text"]
    return {
        "stages": stages,
        "first_audio": {**_spread([r["first_audio_s"] for r in rows]),
                        "typed_median_s": round(statistics.median(typed), 3) if typed else None,
                        "recorded_s": recorded},
        "finished_video": _spread([r["finished_video_s"] for r in rows]),
        "total_with_check": _spread([r["total_s"] for r in rows]),
        "reply_audio_s_median": round(statistics.median(r["reply_audio_s"] for r in rows), 2),
        "reply_tokens_median": statistics.median(tokens) if tokens else None,
        "reply_tokens_per_s": round(sum(tokens) / reply_s, 2) if tokens and reply_s else None,
        "cores_used_median": round(statistics.median(r["cores_used"] for r in rows), 2),
        "rtf": {"spoken_median": round(statistics.median(r["spoken_rtf"] for r in rows), 4),
                "spoken_max": max(r["spoken_rtf"] for r in rows),
                "rendered_median": round(statistics.median(r["rendered_rtf"] for r in rows), 4),
                "rendered_max": max(r["rendered_rtf"] for r in rows)},
    }


def _goals(summary: dict) -> dict[str, Any]:
    stages, rtf = summary["stages"], summary["rtf"]
    measured = {"understood_s": stages["understood"]["median_s"],
                "heard_s": stages["heard"]["median_s"] if "heard" in stages else None,
                "spoken_rtf": rtf["spoken_median"], "rendered_rtf": rtf["rendered_median"]}
    return {key: {"goal": f"<= {goal:g}", "median": measured[key],
                  "met": None if measured[key] is None else measured[key] <= goal}
            for key, goal in GOALS.items()}


def plot(rows: list[dict], path: Path, *, title: str) -> None:
    """Stacked bars of each turn's stage seconds, written as a PNG with Pillow."""
    from PIL import Image, ImageDraw, ImageFont

    width, height, left, right, top, bottom = 960, 540, 70, 20, 80, 80
    font, small = ImageFont.load_default(size=15), ImageFont.load_default(size=12)
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    draw.text((left, 12), title, fill="black", font=font)
    x = left
    for stage in STAGES:  # legend
        draw.rectangle((x, 42, x + 14, 56), fill=COLOURS[stage])
        draw.text((x + 20, 41), stage, fill="black", font=small)
        x += 110
    longest = max(r["total_s"] for r in rows)
    step = next(s for s in (0.5, 1, 2, 5, 10, 20, 50, 100) if longest / s <= 8)
    top_s = step * (int(longest / step) + 1)
    plot_h = height - top - bottom

    def y_of(seconds: float) -> float:
        return height - bottom - plot_h * seconds / top_s

    tick = 0.0
    while tick <= top_s + 1e-9:
        y = y_of(tick)
        draw.line((left, y, width - right, y), fill=(225, 225, 225))
        draw.text((left - 8, y), f"{tick:g} s", fill="black", font=small, anchor="rm")
        tick += step
    slot = (width - left - right) / len(rows)
    for n, row in enumerate(rows):
        x0, x1, base = left + n * slot + slot * 0.2, left + (n + 1) * slot - slot * 0.2, 0.0
        for stage in STAGES:
            seconds = row["stages_s"].get(stage, 0.0)
            if seconds > 0:
                draw.rectangle((x0, y_of(base + seconds), x1, y_of(base)), fill=COLOURS[stage])
            base += seconds
        centre = (x0 + x1) / 2
        draw.text((centre, y_of(base) - 4), f"{base:.1f}", fill="black", font=small, anchor="md")
        draw.text((centre, height - bottom + 8), f"{row['turn']}", fill="black", font=small, anchor="ma")
        draw.text((centre, height - bottom + 24), f"{row['avatar']}, {row['input']}", fill="black", font=small,
                  anchor="ma")
        draw.text((centre, height - bottom + 40), f"reply {row['reply_audio_s']:.1f} s", fill=(90, 90, 90),
                  font=small, anchor="ma")
    draw.line((left, height - bottom, width - right, height - bottom), fill="black")
    draw.line((left, top - 10, left, height - bottom), fill="black")
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)


def forget_dialogue(pipeline: Pipeline) -> None:
    """Leave the LLM's cache as a new message finds it: the system prompt evaluated, the dialogue not.

    llama.cpp reuses the longest evaluated prefix, so a turn run right after the same turn would
    find its dialogue already read (about 0.4 s of the emotion call); this one-line turn replaces it.
    """
    pipeline.understander().decide(UserTurn(text="Hello there."))


def _warm_voices(pipeline: Pipeline, folder: Path) -> float:
    """Seconds to load the avatars' voices: each voice's engine loads on its first sentence."""
    started = time.perf_counter()
    voices = {(v.backend, v.voice): v for v in (voice_for(pipeline.library.get(a)) for a in AVATARS)}
    for voice in voices.values():
        pipeline.speaker(voice.backend).synthesize("Hello.", emotion="neutral", intensity=0.0, voice=voice,
                                                   out_path=folder / "voice.wav")
    return round(time.perf_counter() - started, 3)


def run(pipeline: Pipeline, out: Path, *, quick: bool = False) -> dict[str, Any]:
    """Warm the pipeline up, run the fixed turns, and write ``turn.json`` and ``turn.png`` to ``out``."""
    started = time.perf_counter()
    load_before = [round(v, 2) for v in os.getloadavg()]
    warm_up_s = pipeline.warm_up()
    with tempfile.TemporaryDirectory(prefix="e3rg-bench-turn-") as tmp:
        folder = Path(tmp)
        warm_up_s["voices"] = _warm_voices(pipeline, folder)
        turns, clip_s = bench_turns(pipeline, folder, quick=quick)
        # a recorded first turn loads what warm_up() leaves for first use: the LLM's system prompt, Whisper's
        # buffers. (It reuses the webcam clip; turns in between keep llama.cpp from reusing that prompt.)
        first = run_turn(pipeline, BenchTurn("first", replace(turns[-1].request, avatar_id=None)), folder / "first")
        rss_after_cold_start = _max_rss_mib()
        rows, streamed_rows = [], []
        for n, turn in enumerate(turns):
            streamed_first = n % 2 == 1
            if streamed_first:
                forget_dialogue(pipeline)
                streamed_rows.append(run_streamed(pipeline, turn, folder / f"stream{n}"))
            forget_dialogue(pipeline)
            rows.append(run_turn(pipeline, turn, folder / f"turn{n}"))
            if not streamed_first:
                forget_dialogue(pipeline)
                streamed_rows.append(run_streamed(pipeline, turn, folder / f"stream{n}"))
            s = streamed_rows[-1]
            print(f"{turn.name:>7} {turn.request.avatar_id:>8}: " + ", ".join(
                f"{k} {v:.2f}" for k, v in rows[-1]["stages_s"].items()) + f" | audio {rows[-1]['reply_audio_s']} s"
                f" | streamed: first audio {s['first_audio_s']:.2f}, first video {s['first_video_s']}, "
                f"finished {s['finished_video_s']:.2f} (whole {rows[-1]['finished_video_s']:.2f})", flush=True)
    summary = summarize(rows)
    streamed = summarize_streamed(streamed_rows, rows)
    config = pipeline.config
    report = {
        "benchmark": "turn",
        "machine": {**machine(), "load_average_1_5_15_before": load_before,
                    "load_average_1_5_15_after": [round(v, 2) for v in os.getloadavg()]},
        "config": {"responder": config.understanding.responder, "voters": list(config.understanding.voters),
                   "video": f"{config.video.backend} {config.video.size_px} px {config.video.fps} fps",
                   "check_output": config.perception.check_output, "quick": quick},
        "cold_start": {"warm_up_s": warm_up_s, "warm_up_total_s": round(sum(warm_up_s.values()), 2),
                       "first_turn_stages_s": first["stages_s"], "first_turn_total_s": first["total_s"]},
        "turns": len(rows),
        "recordings_s": clip_s,
        **summary,
        "memory": {"max_rss_mib_after_cold_start": rss_after_cold_start, "max_rss_mib_end": _max_rss_mib()},
        "goals": _goals(summary),
        "streamed": streamed,
        "stream_goals": _stream_goals(streamed),
        "bench_wall_s": round(time.perf_counter() - started, 1),
        "notes": [
            "whole turns (the /turn API): the audio exists when speech is done, so first audio = heard + "
            "understood + spoken; streamed turns (the page) are timed from the turn's start to each event",
            "each turn runs whole and streamed, in alternating order, each after a one-line turn that leaves "
            "the LLM's cache as a new message finds it (system prompt read, dialogue not); "
            "finished_ratio_to_whole compares the two runs of the same turn",
            "heard is summarised over the recorded turns only (typed turns take 0 s); its goal is per 5-s clip, "
            "and the recordings are 5-6 s (Whisper pads every clip to 30 s, so length barely matters)",
            "checked re-synthesises the reply in a neutral voice and reads the avatar's face and voice back",
            "memory is the process's max RSS (getrusage); tracemalloc is not used: it does not see the native "
            "allocations of llama.cpp, ONNX Runtime, CTranslate2 and LiteRT, which hold most of it; the ffmpeg "
            "encoder is a child process and not counted",
            "the disk cache (joined model parts, prepared portraits) was warm; a first boot also joins the parts",
            "wall time excludes building the Pipeline object and importing the modules",
            "cores_used is CPU seconds (this process + ffmpeg) per wall second of a turn: near 2 on a quiet "
            "2-core machine, lower when other processes take the cores; compare load_average",
        ],
        "rows": rows,
        "streamed_rows": streamed_rows,
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / "turn.json"
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    title = (f"e3rg turn, seconds per stage ({summary['cores_used_median']:g} of {report['machine']['cores']} "
             f"cores used; {config.understanding.responder}, {report['config']['video']})")
    plot(rows, out / "turn.png", title=title)
    print(f"wrote {path} and turn.png")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two turns (typed + webcam), for a smoke test")
    parser.add_argument("--out", type=Path, default=REPORTS, help="folder for turn.json and turn.png")
    args = parser.parse_args()
    from e3rg_core.config import load_config

    report = run(Pipeline(load_config()), args.out, quick=args.quick)
    keys = ("cold_start", "stages", "first_audio", "finished_video", "rtf", "memory", "streamed", "stream_goals",
            "bench_wall_s")
    print(json.dumps({k: report[k] for k in keys}, indent=1))


if __name__ == "__main__":
    main()
