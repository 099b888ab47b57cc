"""Command line of the three stages.

    python -m e3rg_core understand --text "..." [--history FILE] [--audio WAV] [--video MP4] [--json]
    python -m e3rg_core speak --avatar amara --emotion sad --text "..." -o reply.wav [--timeline v.json]
    python -m e3rg_core render --avatar amara --audio reply.wav --visemes v.json --emotion sad -o reply.mp4
    python -m e3rg_core avatars list|publish ID|unpublish ID|delete ID
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from e3rg_core.errors import E3rgError, InputError
from e3rg_core.types import ROLES, Utterance

logger = logging.getLogger("e3rg_core")


def read_history(path: Path) -> tuple[Utterance, ...]:
    """Read a dialogue history: a JSON list of ``{"role", "text"}`` or ``Speaker:``/``Listener:`` lines."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read history file {path}: {exc}") from exc
    if path.suffix.lower() == ".json":
        try:
            items = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"history file {path} is not valid JSON: {exc}") from exc
        if not isinstance(items, list):
            raise InputError(f"history file {path} must hold a JSON list of {{role, text}} objects")
        out = []
        for i, item in enumerate(items):
            role = item.get("role") if isinstance(item, dict) else None
            text = item.get("text", item.get("utterance")) if isinstance(item, dict) else None
            if role not in ROLES or not isinstance(text, str):
                raise InputError(
                    f"history item {i} in {path} needs role in {ROLES} and a text string"
                )
            out.append(Utterance(role, text))
        return tuple(out)
    out = []
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        who, sep, text = line.partition(":")
        role = {"speaker": "speaker", "user": "speaker", "listener": "listener", "avatar": "listener"}.get(
            who.strip().lower()
        )
        if not sep or role is None:
            raise InputError(f"{path}:{n}: lines must start with 'Speaker:' or 'Listener:'")
        out.append(Utterance(role, text.strip()))
    return tuple(out)


def _understand(args: argparse.Namespace) -> int:
    from e3rg_core.config import load_config
    from e3rg_core.types import UserTurn
    from e3rg_core.understanding.engine import Understander

    overrides = {
        "understanding.shots": args.shots,
        "understanding.responder": args.responder,
        "understanding.response_prompt": args.response_prompt,
        "understanding.emotion_map": args.emotion_map,
        "understanding.seed": args.seed,
    }
    if args.vote not in (None, "off"):
        overrides["understanding.voters"] = args.vote
    config = load_config(args.config, overrides=overrides)
    if args.vote == "off":  # the responder alone predicts the emotion
        config = replace(config, understanding=replace(config.understanding, voters=(config.understanding.responder,)))
    history = read_history(Path(args.history)) if args.history else ()
    media = {}
    for kind in ("audio", "video"):  # an omni model hears and sees the turn; other models read the text
        value = getattr(args, kind)
        if value is not None:
            if not Path(value).is_file():
                raise InputError(f"--{kind} {value}: no such file")
            media[f"{kind}_path"] = Path(value)
    understander = Understander(config)
    result = understander.understand(UserTurn(text=args.text, history=history, **media))
    if args.json:
        payload = {
            "emotion": result.emotion,
            "coarse": result.coarse,
            "intensity": result.intensity,
            "confidence": round(result.confidence, 4),
            "distribution": {k: round(v, 4) for k, v in result.distribution.items() if round(v, 4) > 0},
            "coarse_distribution": {k: round(v, 4) for k, v in result.coarse_distribution.items()},
            "votes": [
                {"voter": v.voter, "label": v.label, "raw": v.raw, "valid": v.valid,
                 "seconds": round(v.seconds, 3)}
                for v in result.votes
            ],
            "reply": result.reply,
            "reply_emotion": result.reply_emotion,
            "crisis": result.crisis,
            "risk": result.risk.as_dict(),
            "timings_s": {k: round(v, 3) for k, v in result.timings_s.items()},
        }
        print(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        votes = ", ".join(f"{v.voter}={v.label}" for v in result.votes)
        print(f"emotion: {result.emotion} ({result.coarse}, confidence {result.confidence:.2f}; votes {votes})")
        print(f"reply:   {result.reply}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m e3rg_core", description=__doc__)
    parser.add_argument("--config", help="TOML config file (default: $E3RG_CONFIG)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True)
    und = sub.add_parser("understand", help="predict the user's emotion and write an empathetic reply")
    und.add_argument("--text", required=True, help="the user's message")
    und.add_argument("--history", help="dialogue so far: .json list of {role, text} or Speaker:/Listener: lines")
    und.add_argument("--audio", help="the turn's recording (WAV, 16 kHz mono best), heard by an omni model profile")
    und.add_argument("--video", help="the turn's video (MP4, or .npy frames), seen by an omni model profile")
    und.add_argument("--shots", type=int, choices=(0, 1, 3), help="worked examples in the emotion prompt")
    und.add_argument("--vote", help="comma-separated voter profiles (e.g. qwen1.5b,qwen0.5b,minilm) or 'off'")
    und.add_argument("--responder", help="model profile that writes the reply")
    und.add_argument("--response-prompt", choices=("emotion_aware", "e3rg"))
    und.add_argument("--emotion-map", choices=("hit", "video"))
    und.add_argument("--seed", type=int)
    und.add_argument("--json", action="store_true", help="print a JSON object")
    und.set_defaults(func=_understand)
    from e3rg_core.memory.command import add_command as add_avatars
    from e3rg_core.speech.command import add_command as add_speak
    from e3rg_core.video.command import add_command as add_render

    add_speak(sub)
    add_render(sub)
    add_avatars(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except E3rgError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
