"""``python -m e3rg_core render``: make the talking-head video for a speech file.

    python -m e3rg_core render --avatar ID --audio speech.wav --emotion happy -o out.mp4
    python -m e3rg_core render --portrait face.png --audio speech.wav --emotion sad --intensity 0.8 -o out.mp4

``--emotion`` takes any label (one of the 36 candidates, a coarse class or a free-form word); the
emotion wheel turns it into a coarse class and an intensity, which ``--intensity`` overrides.
``--visemes`` reads a JSON list of ``{"start_s", "end_s", "symbol"}`` (Oculus viseme names); without
it the mouth follows the loudness of the audio.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

from e3rg_core.errors import InputError
from e3rg_core.types import Speech, TimedUnit

def read_visemes(path: Path) -> tuple[TimedUnit, ...]:
    """A viseme timeline from JSON: a list of ``{"start_s", "end_s", "symbol"}``."""
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
        return tuple(TimedUnit(float(i["start_s"]), float(i["end_s"]), str(i["symbol"])) for i in items)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"cannot read visemes from {path}: {exc}; expected a JSON list of "
                         '{"start_s", "end_s", "symbol"}') from exc


def _render(args: argparse.Namespace) -> int:
    from e3rg_core.config import load_config
    from e3rg_core.emotions import wheel
    from e3rg_core.media.audio import read_audio
    from e3rg_core.video import create_renderer

    config = load_config(args.config, overrides={"video.backend": args.backend, "video.seed": args.seed,
                                                 "video.size_px": args.size})
    if args.portrait:
        portrait = Path(args.portrait)
    else:
        from e3rg_core.memory import AvatarLibrary

        portrait = AvatarLibrary().get(args.avatar).portrait
    point = wheel(args.emotion, map_name=config.understanding.emotion_map)
    intensity = point.intensity if args.intensity is None else args.intensity
    audio = read_audio(Path(args.audio))
    speech = Speech(wav_path=Path(args.audio), sample_rate_hz=audio.sample_rate_hz, duration_s=audio.duration_s,
                    text="", emotion=point.coarse, intensity=intensity, voice="file",
                    visemes=read_visemes(Path(args.visemes)) if args.visemes else ())
    started = time.perf_counter()
    # upstream model code may print to stdout (DICE-Talk does); keep it off the JSON
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        renderer = create_renderer(config)
        loaded = time.perf_counter()
        video = renderer.render(speech, portrait=portrait, emotion=point.coarse, intensity=intensity,
                                out_path=Path(args.output))
    done = time.perf_counter()
    if args.json:
        print(json.dumps({
            "mp4_path": str(video.mp4_path), "emotion": video.emotion, "intensity": round(intensity, 3),
            "fps": video.fps, "n_frames": video.n_frames, "width": video.width, "height": video.height,
            "duration_s": round(video.duration_s, 3), "backend": config.video.backend,
            "timings_s": {"load": round(loaded - started, 3), "render": round(done - loaded, 3)},
        }, indent=2))
    else:
        print(f"wrote {video.mp4_path}: {video.n_frames} frames at {video.fps:g} fps, {video.width}x{video.height}, "
              f"{video.emotion} at {intensity:.2f}, in {done - started:.1f} s")
    return 0


def add_command(subparsers) -> argparse.ArgumentParser:
    """Add the ``render`` subcommand to the CLI's subparsers."""
    cmd = subparsers.add_parser("render", help="animate a portrait speaking an audio file with an emotion",
                                description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    who = cmd.add_mutually_exclusive_group(required=True)
    who.add_argument("--avatar", help="a shipped avatar id (avatars/<id>/profile.toml)")
    who.add_argument("--portrait", help="a portrait image (PNG, JPEG, ...) with one frontal face")
    cmd.add_argument("--audio", required=True, help="the speech to lip-sync (WAV, FLAC, MP3, ...)")
    cmd.add_argument("--emotion", default="neutral", help="emotion label shown on the face (default neutral)")
    cmd.add_argument("--intensity", type=float, help="0..1 (default: the label's intensity on the emotion wheel)")
    cmd.add_argument("--visemes", help="JSON viseme timeline [{start_s, end_s, symbol}] for the audio")
    cmd.add_argument("--backend", help="video backend: mesh (CPU, default) or dicetalk (GPU)")
    cmd.add_argument("--size", type=int, help="frame size in pixels (default 512)")
    cmd.add_argument("--seed", type=int)
    cmd.add_argument("-o", "--output", required=True, help="the MP4 to write")
    cmd.add_argument("--json", action="store_true", help="print a JSON object")
    cmd.set_defaults(func=_render)
    return cmd
