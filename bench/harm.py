"""Harm done to the writer by someone else: how often ``safety.harm`` finds a disclosure, and how often it
answers a look-alike ("my brother beat me at chess", "hit me up later").

    python bench/harm.py [--sets dev heldout] [--outside DIR]

Reads ``bench/data/harm_<set>.jsonl`` (``text``, ``harm`` true/false, ``kind``); ``--outside DIR`` also
counts matches on any other text, one message per line of each ``*.txt`` in DIR or the first column of
each ``*.tsv`` (for example GoEmotions' comments: a match there is nearly always a false alarm, so
its rows are printed to be read). Writes ``bench/reports/harm.json``: per set, recall and the kind found
per gold kind, look-alikes answered, the misses and false alarms (dev only: held-out's rows are not
printed), and the time per message. Patterns only: no model is loaded.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from pathlib import Path

from _common import ROOT, machine, write_report

from e3rg_core.understanding.safety.harm import harm_of

DATA = ROOT / "bench" / "data"


def measure(rows: list[dict], *, show: bool) -> dict:
    found, times = [], []
    for row in rows:
        start = time.perf_counter()
        found.append(harm_of(row["text"]))
        times.append(time.perf_counter() - start)
    harm = [(r, f) for r, f in zip(rows, found) if r["harm"]]
    safe = [(r, f) for r, f in zip(rows, found) if not r["harm"]]
    kinds: dict[str, dict[str, int]] = {}
    for row, hit in harm:
        per = kinds.setdefault(row.get("kind") or "?", {})
        got = hit.kind if hit else "missed"
        per[got] = per.get(got, 0) + 1
    report = {
        "n_harm": len(harm), "n_lookalike": len(safe),
        "recall": round(sum(f is not None for _, f in harm) / max(1, len(harm)), 3),
        "lookalikes_answered": round(sum(f is not None for _, f in safe) / max(1, len(safe)), 3),
        "found_by_gold_kind": kinds,
        "median_ms": round(1000 * statistics.median(times), 3) if times else None,
    }
    if show:
        report["missed"] = [r["text"] for r, f in harm if f is None]
        report["false_alarms"] = [{"text": r["text"], "kind": f.kind, "matched": f.matched} for r, f in safe if f]
    return report


def outside(folder: Path) -> dict:
    texts = []
    for path in sorted(folder.glob("*.txt")):
        texts += [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    for path in sorted(folder.glob("*.tsv")):
        with path.open(encoding="utf-8", errors="replace", newline="") as fh:
            texts += [row[0] for row in csv.reader(fh, delimiter="\t") if row and row[0].strip()]
    hits = [(t, harm_of(t)) for t in texts]
    hits = [(t, h) for t, h in hits if h is not None]
    for text, hit in hits:
        print(f"  outside match ({hit.kind}: {hit.matched}): {text[:160]}")
    return {"n": len(texts), "matched": len(hits), "share": round(len(hits) / max(1, len(texts)), 5)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", default=["dev", "heldout"])
    parser.add_argument("--outside", type=Path, help="a folder of other text (*.txt lines, *.tsv first column)")
    args = parser.parse_args(argv)
    report: dict = {"machine": machine(), "sets": {}}
    for name in args.sets:
        path = DATA / f"harm_{name}.jsonl"
        if not path.is_file():
            print(f"no set {path}", file=sys.stderr)
            return 2
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        report["sets"][name] = measure(rows, show=name != "heldout")
        r = report["sets"][name]
        print(f"{name}: recall {r['recall']} of {r['n_harm']}, look-alikes answered {r['lookalikes_answered']} "
              f"of {r['n_lookalike']}")
    if args.outside:
        report["outside"] = outside(args.outside)
        print(f"outside: {report['outside']['matched']} of {report['outside']['n']} matched")
    write_report("harm", report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
