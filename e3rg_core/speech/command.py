"""``python -m e3rg_core speak``: say a text in an avatar's voice with an emotion.

    python -m e3rg_core speak --avatar amara --emotion sad --text "I'm here for you." -o out.wav
    python -m e3rg_core speak --voice joe --emotion excited --intensity 0.5 --text "..." -o out.wav
    python -m e3rg_core --config gpu.toml speak --backend openvoice --voice en-newest --reference me.wav \
        --emotion sad --text "..." -o out.wav

``--emotion`` takes any label (one of the 36 candidates, a coarse class or a free-form word); the
emotion wheel turns it into a coarse class and an intensity, which ``--intensity`` overrides.
``--timeline`` also writes the phoneme and viseme timeline as JSON (the input of ``render --visemes``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time
from pathlib import Path


def _speak(args: argparse.Namespace) -> int:
    from e3rg_core.config import load_config
    from e3rg_core.emotions import wheel
    from e3rg_core.errors import InputError
    from e3rg_core.memory import AvatarLibrary
    from e3rg_core.speech import create_speaker, voice_for

    config = load_config(args.config, overrides={"speech.seed": args.seed})
    library = AvatarLibrary()
    profile = library.get(args.avatar) if args.avatar else library.default()
    voice = voice_for(profile)
    if args.backend:  # another backend than the avatar's, e.g. to check OpenVoice alone on the GPU box
        voice = dataclasses.replace(voice, backend=args.backend)
    if args.voice:
        voice = dataclasses.replace(voice, voice=args.voice)
    if args.reference:
        voice = dataclasses.replace(voice, options={**voice.options, "reference_speech": args.reference})
    point = wheel(args.emotion, map_name=config.understanding.emotion_map)
    intensity = point.intensity if args.intensity is None else args.intensity
    text = args.text
    if text == "-":
        text = sys.stdin.read()
    if text is None:
        raise InputError("give the words to speak with --text (or --text - to read stdin)")
    started = time.perf_counter()
    # upstream model code prints to stdout (OpenVoice: "Loaded checkpoint ..."); keep it off the JSON
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        speaker = create_speaker(config, voice.backend)
        loaded = time.perf_counter()
        speech = speaker.synthesize(text, emotion=point.coarse, intensity=intensity, voice=voice,
                                    out_path=Path(args.output))
    done = time.perf_counter()
    if args.timeline:
        Path(args.timeline).write_text(json.dumps([dataclasses.asdict(u) for u in speech.visemes], indent=1))
    if args.json:
        print(json.dumps({
            "wav_path": str(speech.wav_path), "avatar": profile.id, "voice": speech.voice, "emotion": speech.emotion,
            "intensity": round(speech.intensity, 3), "duration_s": round(speech.duration_s, 3),
            "sample_rate_hz": speech.sample_rate_hz, "phonemes": len(speech.phonemes), "visemes": len(speech.visemes),
            "timings_s": {"load": round(loaded - started, 3), "synthesize": round(done - loaded, 3)},
            "real_time_factor": round((done - loaded) / speech.duration_s, 4),
        }, indent=2))
    else:
        print(f"wrote {speech.wav_path}: {speech.duration_s:.2f} s as {profile.display_name} ({speech.voice}), "
              f"{speech.emotion} at {intensity:.2f}, in {done - loaded:.2f} s (+{loaded - started:.2f} s loading)")
    return 0


def add_command(subparsers) -> argparse.ArgumentParser:
    """Add the ``speak`` subcommand to the CLI's subparsers."""
    cmd = subparsers.add_parser("speak", help="say a text in an avatar's voice with an emotion",
                                description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_argument("--avatar", help="avatar id (avatars/<id>/profile.toml; default: the library's default)")
    cmd.add_argument("--backend", help="override the avatar's speech backend: embedded or openvoice")
    cmd.add_argument("--voice", help="override the avatar's voice (embedded: heart, joe; openvoice: en-newest, "
                                     "en-styles)")
    cmd.add_argument("--reference", help="a recording of the voice to clone (openvoice; at least 5 s of speech)")
    cmd.add_argument("--text", help="the words to speak ('-' reads stdin)")
    cmd.add_argument("--emotion", default="neutral", help="emotion label heard in the voice (default neutral)")
    cmd.add_argument("--intensity", type=float, help="0..1 (default: the label's intensity on the emotion wheel)")
    cmd.add_argument("--seed", type=int)
    cmd.add_argument("--timeline", help="also write the viseme timeline as JSON here")
    cmd.add_argument("-o", "--output", required=True, help="the WAV to write")
    cmd.add_argument("--json", action="store_true", help="print a JSON object")
    cmd.set_defaults(func=_speak)
    return cmd
