"""Voice prosody: seconds to read a 5-s clip, and what it reads in each emotion of the embedded voices.

    python bench/voice_prosody.py [--repeats 10]

Writes bench/reports/voice_prosody.json:

* ``timing``: the reader's cold start (imports and the span finder's first call), then the median
  and maximum of ``--repeats`` reads of a 5-s, 16 kHz clip of each voice, by intensity peaks and by
  word timings; and, for the choice of pitch tracker, Praat's two passes against librosa's pyin on
  the same clip (pyin's first call, with its numba compilation, reported apart). Goal: < 0.3 s.
* ``readings``: each voice says two sentences in all 8 emotions at intensity 1 (16 kHz, as the
  pipeline hands a user's clip over), read with word timings and by intensity peaks, each without
  and with the same voice's neutral reading as the reference.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile
from _common import machine, write_report

from e3rg_core.emotions import COARSE
from e3rg_core.memory.profiles import VoiceSettings
from e3rg_core.perception.asr import extract_audio
from e3rg_core.speech.embedded import EDGE_SILENCE_S, EmbeddedSpeaker
from e3rg_core.types import TimedUnit

TEXT = "The weather was terrible, so we stayed inside and played cards. Nobody wanted to go anywhere."
VOICES = ("heart", "joe")
GOAL_S = 0.3


def _words(duration_s: float) -> list[TimedUnit]:
    words = TEXT.split()
    edges = np.linspace(EDGE_SILENCE_S, duration_s - EDGE_SILENCE_S, len(words) + 1)
    return [TimedUnit(float(a), float(b), w) for w, a, b in zip(words, edges[:-1], edges[1:])]


def _timed(fn, repeats: int) -> dict:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return {"median_s": round(statistics.median(times), 4), "max_s": round(max(times), 4), "runs": repeats}


def _row(r) -> dict:
    top = max(r.distribution, key=r.distribution.get) if r.distribution else ""
    return {"arousal": round(r.arousal, 3), "top": top, "cues": r.cues}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    t = time.perf_counter()
    from e3rg_core.perception.voice import VoiceReader, _pitch, _sound

    reader = VoiceReader()
    cold_s = time.perf_counter() - t
    speaker = EmbeddedSpeaker()
    timing: dict = {"reader_cold_start_s": round(cold_s, 3)}
    readings: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        clips = {}
        for voice in VOICES:
            for emotion in COARSE:
                speech = speaker.synthesize(TEXT, emotion=emotion, intensity=1.0, voice=VoiceSettings(voice=voice),
                                            out_path=folder / f"{voice}_{emotion}.wav")
                clips[voice, emotion] = (extract_audio(speech.wav_path, folder / f"{voice}_{emotion}_16k.wav"),
                                         speech.duration_s)
        for voice in VOICES:
            wav, duration_s = clips[voice, "neutral"]
            y, sr = soundfile.read(str(wav), dtype="float32")
            five = folder / f"{voice}_5s.wav"
            soundfile.write(str(five), y[: 5 * sr], sr, subtype="PCM_16")
            t = time.perf_counter()
            first = reader.read(five)
            timing[f"{voice}:first_read_s"] = round(time.perf_counter() - t, 4)
            timing[f"{voice}:read_5s_nuclei"] = _timed(lambda five=five: reader.read(five), args.repeats)
            words = [w for w in _words(duration_s) if w.end_s <= 5.0]
            timing[f"{voice}:read_5s_words"] = _timed(lambda five=five, words=words: reader.read(five, words=words), args.repeats)
            timing[f"{voice}:praat_pitch_5s"] = _timed(lambda y=y, sr=sr: _pitch(_sound(y[: 5 * sr], sr)), args.repeats)
            timing[f"{voice}:meets_goal"] = timing[f"{voice}:read_5s_nuclei"]["median_s"] < GOAL_S
            print(voice, first.seconds, timing[f"{voice}:read_5s_nuclei"], flush=True)
        try:
            import librosa

            y, sr = soundfile.read(str(folder / "heart_5s.wav"), dtype="float32")
            t = time.perf_counter()
            librosa.pyin(y, fmin=60, fmax=700, sr=sr, frame_length=1024)
            timing["pyin_first_call_5s_s"] = round(time.perf_counter() - t, 3)
            timing["pyin_5s"] = _timed(lambda: librosa.pyin(y, fmin=60, fmax=700, sr=sr, frame_length=1024), 3)
        except ImportError:
            timing["pyin_5s"] = {"skipped": "librosa is not installed"}
        for voice in VOICES:
            neutral_wav, neutral_s = clips[voice, "neutral"]
            reference = reader.read(neutral_wav, words=_words(neutral_s))
            reference_nuclei = reader.read(neutral_wav)
            for emotion in COARSE:
                wav, duration_s = clips[voice, emotion]
                w = reader.read(wav, words=_words(duration_s))
                n = reader.read(wav)
                wr = reader.read(wav, words=_words(duration_s), reference=reference)
                nr = reader.read(wav, reference=reference_nuclei)
                readings[f"{voice}:{emotion}"] = {
                    "f0_median_hz": round(w.f0_median_hz, 1), "f0_range_semitones": round(w.f0_range_semitones, 2),
                    "level_dbfs": round(w.level_dbfs, 2), "rate_words_syl_s": round(w.speaking_rate, 2),
                    "rate_nuclei_syl_s": round(n.speaking_rate, 2), "pause_ratio": round(w.pause_ratio, 3),
                    "voiced_s": round(w.voiced_s, 2), "words": _row(w), "words_with_reference": _row(wr),
                    "nuclei": _row(n), "nuclei_with_reference": _row(nr)}
                print(voice, emotion, readings[f"{voice}:{emotion}"], flush=True)
    write_report("voice_prosody", {"benchmark": "voice_prosody", "machine": machine(), "text": TEXT,
                                   "goal": {"read_5s_median_s": f"< {GOAL_S}"}, "timing": timing,
                                   "readings": readings})


if __name__ == "__main__":
    main()
