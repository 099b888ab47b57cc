"""Organiser commands for human-evaluation studies.

::

    python -m e3rg_core.rating validate study.toml
    python -m e3rg_core.rating from-batch --system e3rg=runs/e3rg --system base=runs/base --out study/ \\
        [--dialogues dialogues.json] [--preference]
    python -m e3rg_core.rating report study.toml ratings.sqlite3 --out report/ [--bootstrap]
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from pathlib import Path

from e3rg_core.errors import E3rgError


def main(argv: list[str] | None = None) -> int:
    """Run one command; return the exit status (0 ok, 2 a problem the message explains)."""
    parser = argparse.ArgumentParser(prog="python -m e3rg_core.rating", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    validate = commands.add_parser("validate", help="check a study file and summarise it")
    validate.add_argument("study", type=Path)
    batch = commands.add_parser("from-batch", help="write a study.toml from eval batch folders")
    batch.add_argument("--system", action="append", required=True, metavar="NAME=FOLDER",
                       help="a system and its batch folder (repeat for each system)")
    batch.add_argument("--out", type=Path, required=True, help="the study file, or a folder for study.toml")
    batch.add_argument("--id", dest="study_id", help="study id (default: the output folder's name)")
    batch.add_argument("--title", default="")
    batch.add_argument("--preference", action="store_true", help="ask an A/B question for every pair")
    batch.add_argument("--dialogues", type=Path, help="the AvaMERG dialogues JSON, for each item's context")
    batch.add_argument("--overwrite", action="store_true")
    report = commands.add_parser("report", help="write CSVs, summary.json and scores.png")
    report.add_argument("study", type=Path)
    report.add_argument("db", type=Path, help="the rating database")
    report.add_argument("--out", type=Path, required=True)
    report.add_argument("--bootstrap", action="store_true", help="intervals by bootstrap over items, not t")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    from e3rg_core.rating import RatingStore, load_study, study_from_batch, write_report

    try:
        if args.command == "validate":
            study = load_study(args.study)
            print(f"{study.id}: {len(study.items)} items, {len(study.gold)} attention checks, systems "
                  f"{', '.join(study.systems)}, criteria {', '.join(study.criterion_ids)}"
                  + (f", {len(study.pairs)} A/B pair(s)" if study.pairs else ""))
        elif args.command == "from-batch":
            dirs = {}
            for spec in args.system:
                name, sep, folder = spec.partition("=")
                if not sep or not name or not folder:
                    parser.error(f"--system takes NAME=FOLDER, not {spec!r}")
                dirs[name] = Path(folder)
            study = study_from_batch(dirs, args.out, study_id=args.study_id, title=args.title,
                                     preference=args.preference, dialogues=args.dialogues,
                                     overwrite=args.overwrite)
            print(f"wrote {study.path}: {len(study.items)} items, systems {', '.join(study.systems)}")
        else:
            if not args.db.is_file():
                print(f"error: rating database {args.db} does not exist", file=sys.stderr)
                return 2
            with RatingStore(args.db, load_study(args.study)) as store:
                written = write_report(store, args.out, method="bootstrap" if args.bootstrap else "t")
                _print_alpha(store)
            print(f"wrote {', '.join(str(p) for p in vars(written).values() if p is not None)}")
    except E3rgError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _print_alpha(store) -> None:
    from e3rg_core.rating import agreement

    for criterion, alpha in agreement(store.rows(), store.study).items():
        print(f"Krippendorff's alpha (ordinal) {criterion}: {'undefined' if math.isnan(alpha) else f'{alpha:.3f}'}")


if __name__ == "__main__":
    sys.exit(main())
