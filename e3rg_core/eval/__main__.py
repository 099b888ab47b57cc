"""Evaluate on AvaMERG-format dialogues, and generate the replies, as the challenge did.

    python -m e3rg_core.eval --data dialogues.json --out runs/e1 [--media DIR] [--voters minilm,qwen1.5b*0.5]
        [--shots 0|1|3] [--no-vote] [--emotion-map hit|video] [--generate [--check]] [--all-turns]
        [--limit N] [--no-media] [--config FILE] [--set video.size_px=256] [--restart]

Writes ``items.jsonl``, ``summary.json`` and ``table.md`` in ``--out`` and prints the table. Run the
same command again to finish an interrupted run; ``--restart`` discards a previous run with other
settings. Try it on the sample that ships with e3rg::

    python -m e3rg_core.eval --data e3rg_core/eval/sample/dialogues.json \\
        --media e3rg_core/eval/sample/media --out /tmp/e3rg-eval
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any, Sequence

from e3rg_core.errors import E3rgError, InputError


def _setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--set wants KEY=VALUE (e.g. video.size_px=256), not {text!r}")
    return key.strip(), value.strip()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m e3rg_core.eval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="AvaMERG dialogue JSON (a list of conversations)")
    parser.add_argument("--out", required=True, help="output folder (resumed when it holds a run)")
    parser.add_argument("--media", help="folder of dia{conv}utt{index}_{ID}.wav/.mp4 clips (and its subfolders)")
    parser.add_argument("--voters", help="comma-separated voter profiles, name[@shots][#sample][*weight]")
    parser.add_argument("--shots", type=int, choices=(0, 1, 3), help="worked examples in the prompts")
    parser.add_argument("--no-vote", action="store_true", help="the responder alone predicts the emotion")
    parser.add_argument("--emotion-map", choices=("hit", "video"), help="fine->coarse map of the pipeline "
                        "(HIT is always scored under E3RG's hit map)")
    parser.add_argument("--generate", action="store_true", help="also speak and render each reply (txt, wav, mp4)")
    parser.add_argument("--check", action="store_true", help="with --generate: read the avatar's face and voice back")
    parser.add_argument("--all-turns", action="store_true", help="every turn, not only each conversation's last")
    parser.add_argument("--limit", type=int, help="the first N conversations")
    parser.add_argument("--no-media", action="store_true", help="text only, even where clips exist")
    parser.add_argument("--config", help="TOML config file (default: $E3RG_CONFIG)")
    parser.add_argument("--set", dest="settings", action="append", type=_setting, default=[], metavar="KEY=VALUE",
                        help="any other config setting, e.g. video.size_px=256 (repeatable)")
    parser.add_argument("--restart", action="store_true", help="discard a previous run in --out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    return parser


def main(argv: Sequence[str] | None = None, *, understander: Any = None) -> int:
    """The command line; ``understander`` replaces the configured one (tests, see ``run_eval``)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    from e3rg_core.eval.run import EvalOptions, run_eval

    try:
        voters = tuple(v.strip() for v in args.voters.split(",") if v.strip()) if args.voters else None
        if args.voters is not None and not voters:
            raise InputError("--voters is empty; name at least one model profile, e.g. minilm")
        options = EvalOptions(
            data=Path(args.data), out=Path(args.out), media=Path(args.media) if args.media else None,
            voters=voters, shots=args.shots, vote=not args.no_vote, emotion_map=args.emotion_map,
            generate=args.generate, check=args.check, all_turns=args.all_turns, limit=args.limit,
            use_media=not args.no_media, config_file=Path(args.config) if args.config else None,
            overrides=dict(args.settings), restart=args.restart)
        result = run_eval(options, understander=understander, progress=not args.no_progress)
    except E3rgError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(result.table, end="")
    note = f"{result.ran} items run, {result.skipped} resumed"
    note += f", {result.failed} failed (run again to retry them)" if result.failed else ""
    print(f"\n{note}; wrote {result.out / 'summary.json'}, {result.out / 'items.jsonl'}, {result.out / 'table.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
