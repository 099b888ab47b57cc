"""Talking-head speed: the animator's frames/s at 512x512 and the finished MP4's real-time factor.

    python bench/video.py [--seconds 10] [--quality] [--avatar ID]

Writes bench/reports/video.json (the scikit-image astronaut the tests use), or with ``--avatar``
bench/reports/video_<ID>.json (that shipped avatar's portrait). Goals on 2 CPU cores: >= 100 frames/s for the animation (mesh
warp + mouth, no encoding) and RTF <= 0.3 for the whole render (audio in, H.264 + AAC MP4 out).
``--quality`` adds what the tests assert, measured on rendered videos: the mouth opening's
correlation with the speech envelope and each emotion's feature motion against neutral.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from _common import ROOT, machine, write_report

from e3rg_core.emotions import COARSE
from e3rg_core.video.embedded import MeshRenderer

GOAL_FPS = 100.0
GOAL_RTF = 0.3


def _speed(renderer: MeshRenderer, speech, portrait: Path, folder: Path, repeats: int) -> dict:
    cold_started = time.perf_counter()
    renderer.render(speech, portrait=portrait, emotion="happy", intensity=0.8, out_path=folder / "cold.mp4")
    cold_s = time.perf_counter() - cold_started  # face mesh, rig and warp built on this first call
    fps_runs, rtf_runs = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        n_frames = sum(1 for _ in renderer.frames(speech, portrait=portrait, emotion="happy", intensity=0.8))
        fps_runs.append(n_frames / (time.perf_counter() - started))
        started = time.perf_counter()
        renderer.render(speech, portrait=portrait, emotion="happy", intensity=0.8, out_path=folder / "warm.mp4")
        rtf_runs.append((time.perf_counter() - started) / speech.duration_s)
    return {
        "animator_fps": round(statistics.median(fps_runs), 1),
        "animator_fps_runs": [round(v, 1) for v in fps_runs],
        "render_rtf": round(statistics.median(rtf_runs), 3),
        "render_rtf_runs": [round(v, 3) for v in rtf_runs],
        "first_render_rtf": round(cold_s / speech.duration_s, 3),
        "n_frames": n_frames,
    }


def _quality(renderer: MeshRenderer, portrait: Path, folder: Path) -> dict:
    import numpy as np

    from e3rg_core.media.audio import frame_rms, read_audio
    from e3rg_core.media.mp4 import read_frames
    from tests.video_support import feature_moves, make_speech, mouth_darkness

    speech = make_speech(folder / "talk.wav", duration_s=8.0, seed=4)
    video = renderer.render(speech, portrait=portrait, emotion="neutral", intensity=1.0, out_path=folder / "talk.mp4")
    frames = list(read_frames(video.mp4_path))
    audio = read_audio(speech.wav_path)
    rms = frame_rms(audio.samples, audio.sample_rate_hz, fps=video.fps, n_frames=len(frames))
    correlation = float(np.corrcoef(mouth_darkness(frames), rms)[0, 1])
    quiet = make_speech(folder / "quiet.wav", duration_s=2.4, quiet=True)
    videos = {label: list(read_frames(renderer.render(quiet, portrait=portrait, emotion=label, intensity=1.0,
                                                      out_path=folder / f"{label}.mp4").mp4_path))
              for label in COARSE}
    moves = {label: {k: round(v, 4) for k, v in feature_moves(videos["neutral"], videos[label]).items()}
             for label in COARSE if label != "neutral"}
    return {"mouth_opening_vs_rms_correlation": round(correlation, 3),
            "emotion_feature_moves_iod": moves,
            "note": "vertical motion against neutral in eye distances, + = down; mouth opening = dark "
                    "pixels in the mouth region; both measured on the decoded MP4s"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the synthetic speech")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quality", action="store_true", help="also measure lip sync and emotions")
    parser.add_argument("--avatar", help="animate this shipped avatar's portrait instead of the astronaut")
    args = parser.parse_args()
    from tests.video_support import make_speech, portrait_path

    if args.avatar:
        from e3rg_core.memory import AvatarLibrary

        portrait = AvatarLibrary().get(args.avatar).portrait
        shown = str(portrait.relative_to(ROOT))
    else:
        portrait = portrait_path()
        shown = str(portrait.relative_to(portrait.parents[2]))
    load_before = os.getloadavg()[0]  # other work on the machine slows the timings
    with tempfile.TemporaryDirectory(prefix="e3rg-bench-video-") as tmp:
        folder = Path(tmp)
        renderer = MeshRenderer(cache_dir=folder / "cache")
        speech = make_speech(folder / "speech.wav", duration_s=args.seconds, seed=2)
        report = {
            "machine": machine(),
            "portrait": shown,
            "size_px": renderer.size_px, "fps": renderer.fps, "x264_preset": renderer.preset,
            "speech_s": args.seconds,
            **_speed(renderer, speech, portrait, folder, args.repeats),
            "goals": {"animator_fps": f">= {GOAL_FPS:g}", "render_rtf": f"<= {GOAL_RTF:g}"},
        }
        report["meets_goals"] = report["animator_fps"] >= GOAL_FPS and report["render_rtf"] <= GOAL_RTF
        report["load_avg_1m"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
        if args.quality:
            report["quality"] = _quality(renderer, portrait, folder)
    write_report(f"video_{args.avatar}" if args.avatar else "video", report)
    print(f"animator {report['animator_fps']} frames/s (goal {GOAL_FPS:g}); render RTF {report['render_rtf']} "
          f"(goal {GOAL_RTF:g}); first render RTF {report['first_render_rtf']}")


if __name__ == "__main__":
    if str(ROOT) not in __import__("sys").path:
        __import__("sys").path.insert(0, str(ROOT))
    main()
