"""Urgent situations other than a risk of suicide: how often the safety patterns find them, and how often
they answer a look-alike ("my brother beat me at chess", "so much work I can't breathe").

    python bench/situations.py [--sets harm_dev harm_heldout medical_dev medical_heldout] [--outside DIR]

Reads ``bench/data/<set>.jsonl`` (``text``; ``harm`` or ``urgent`` true/false; ``kind``). A ``harm_*`` set
is read by ``safety.harm`` (harm done to the writer by someone else: its patterns, then its meaning
reading with the embedded MiniLM encoder as the detector does; ``--patterns-only`` skips the encoder), a ``medical_*`` set by
``safety.medical`` (an emergency of the body or a panic attack now). ``--outside DIR`` also counts
matches of both on any other text, one message per line of each ``*.txt`` in DIR or the first column of
each ``*.tsv`` (for example GoEmotions' comments: a match there is nearly always a false alarm, so its
rows are printed to be read). Writes ``bench/reports/situations.json``: per set, recall and the kind
found per gold kind, look-alikes answered, the misses and false alarms (not for held-out sets, whose
rows are not printed), and the time per message.
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

from e3rg_core.understanding.safety.harm import disclosed
from e3rg_core.understanding.safety.medical import urgent
from e3rg_core.understanding.safety.text import canonical

FINDERS = {"harm": disclosed, "medical": urgent}


def with_meaning() -> None:
    """Read harm as the detector does: the patterns, then the meaning of what they did not match."""
    from e3rg_core.understanding.embedding import sentence_encoder
    from e3rg_core.understanding.safety.harm import HarmMeaning
    from e3rg_core.understanding.safety.meaning import MeaningScorer

    encoder = sentence_encoder()
    reader = HarmMeaning(encoder, safe=MeaningScorer(encoder).safe_vectors)
    FINDERS["harm"] = lambda text: disclosed(text) or reader.disclosed(text)

DATA = ROOT / "bench" / "data"


def measure(rows: list[dict], finder, *, show: bool) -> dict:
    found, times = [], []
    for row in rows:
        start = time.perf_counter()
        found.append(finder(canonical(row["text"])))
        times.append(time.perf_counter() - start)
    gold = [bool(r.get("harm", r.get("urgent"))) for r in rows]
    harm = [(r, f) for r, f, g in zip(rows, found, gold) if g]
    safe = [(r, f) for r, f, g in zip(rows, found, gold) if not g]
    kinds: dict[str, dict[str, int]] = {}
    for row, hit in harm:
        per = kinds.setdefault(row.get("kind") or "?", {})
        got = hit.kind if hit else "missed"
        per[got] = per.get(got, 0) + 1
    report = {
        "n_found_gold": len(harm), "n_lookalike": len(safe),
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
            texts += [row[0] for row in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE) if row and row[0].strip()]
    report = {"n": len(texts)}
    for name, finder in FINDERS.items():
        hits = [(t, finder(canonical(t))) for t in texts]
        hits = [(t, h) for t, h in hits if h is not None]
        for text, hit in hits:
            print(f"  outside {name} match ({hit.kind}: {hit.matched}): {text[:160]}")
        report[name] = {"matched": len(hits), "share": round(len(hits) / max(1, len(texts)), 5)}
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", default=["harm_dev", "harm_heldout", "medical_dev", "medical_heldout"])
    parser.add_argument("--patterns-only", action="store_true", help="harm by its patterns alone (no encoder)")
    parser.add_argument("--outside", type=Path, help="a folder of other text (*.txt lines, *.tsv first column)")
    args = parser.parse_args(argv)
    report: dict = {"machine": machine(), "harm_read_by": "patterns" if args.patterns_only else "patterns+meaning",
                    "sets": {}}
    if not args.patterns_only:
        with_meaning()
    for name in args.sets:
        path = DATA / f"{name}.jsonl"
        finder = FINDERS.get(name.split("_")[0])
        if finder is None:
            print(f"a set's name begins with one of {', '.join(FINDERS)}, not {name!r}", file=sys.stderr)
            return 2
        if not path.is_file():
            print(f"no set {path}", file=sys.stderr)
            return 2
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        report["sets"][name] = measure(rows, finder, show="heldout" not in name)
        r = report["sets"][name]
        print(f"{name}: recall {r['recall']} of {r['n_found_gold']}, look-alikes answered {r['lookalikes_answered']} "
              f"of {r['n_lookalike']}")
    if args.outside:
        report["outside"] = outside(args.outside)
        o = report["outside"]
        print(f"outside: of {o['n']}, harm matched {o['harm']['matched']}, medical {o['medical']['matched']}")
    write_report("situations", report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
