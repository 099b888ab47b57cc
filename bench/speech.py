"""Speech speed per backend and voice: real-time factor and first-audio latency.

    python bench/speech.py [--repeats 3]

Writes bench/reports/speech.json. For each voice of the embedded backend (and ``openvoice`` when its
checkpoints are configured): the cold load time, the real-time factor (synthesis seconds per second
of audio) of a four-sentence reply in each of the 8 emotions, and the first-audio latency: the time
to synthesise the reply's first sentence, which is what a sentence-pipelined turn waits for before
it can start playing. Goal on 2 CPU cores: the embedded voices at RTF <= 0.2.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _common import machine, write_report

from e3rg_core.config import load_config
from e3rg_core.emotions import COARSE
from e3rg_core.errors import E3rgError
from e3rg_core.memory import AvatarLibrary
from e3rg_core.memory.profiles import VoiceSettings
from e3rg_core.speech import create_speaker, voice_for
from e3rg_core.speech.base import split_sentences

REPLY = ("That sounds like a really hard day, and I'm glad you told me. Losing something you worked so "
         "hard for hurts. It's okay to feel upset about it for a while. What would help you most right now?")
GOAL_RTF = 0.2


def _bench_voice(speaker, voice: VoiceSettings, folder: Path, repeats: int) -> dict:
    first = split_sentences(REPLY)[0]
    started = time.perf_counter()
    speaker.synthesize("Warm up.", emotion="neutral", intensity=0.0, voice=voice, out_path=folder / "warm.wav")
    cold_s = time.perf_counter() - started
    rtf, first_audio, audio_s = [], [], []
    for _ in range(repeats):
        for emotion in COARSE:
            t = time.perf_counter()
            speech = speaker.synthesize(REPLY, emotion=emotion, intensity=1.0, voice=voice, out_path=folder / "r.wav")
            rtf.append((time.perf_counter() - t) / speech.duration_s)
            audio_s.append(speech.duration_s)
            t = time.perf_counter()
            speaker.synthesize(first, emotion=emotion, intensity=1.0, voice=voice, out_path=folder / "f.wav")
            first_audio.append(time.perf_counter() - t)
    return {"first_call_s": round(cold_s, 3), "rtf_median": round(statistics.median(rtf), 4),
            "rtf_max": round(max(rtf), 4), "first_audio_s_median": round(statistics.median(first_audio), 3),
            "first_audio_s_max": round(max(first_audio), 3), "reply_audio_s_median": round(statistics.median(audio_s), 2),
            "runs": len(rtf), "meets_goal": statistics.median(rtf) <= GOAL_RTF}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    config = load_config()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        embedded = create_speaker(config, "embedded")
        results["embedded:load"] = {"seconds": round(time.perf_counter() - t, 3)}
        for name in embedded.voices():
            results[f"embedded:{name}"] = _bench_voice(embedded, VoiceSettings(voice=name), folder, args.repeats)
            print(f"embedded:{name}", results[f"embedded:{name}"], flush=True)
        cloned = [p for p in AvatarLibrary().profiles() if p.voice.backend == "openvoice"]
        if config.backend_options("speech", "openvoice").dir and cloned:
            try:
                speaker = create_speaker(config, "openvoice")
                results["openvoice"] = _bench_voice(speaker, voice_for(cloned[0]), folder, 1)
            except E3rgError as exc:
                results["openvoice"] = {"skipped": str(exc)}
        else:
            results["openvoice"] = {"skipped": "no OpenVoice checkpoints configured (speech.openvoice.dir) "
                                               "or no avatar with an openvoice voice"}
    write_report("speech", {"benchmark": "speech", "machine": machine(), "reply_chars": len(REPLY),
                            "goal": {"rtf": f"<= {GOAL_RTF}"}, "results": results})


if __name__ == "__main__":
    main()
