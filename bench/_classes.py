"""Per-class figures of an emotion decision: accuracy, recall and precision per class, the confusion
matrix, how often each class is answered (contempt's share above all) and the decision time."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Sequence

from e3rg_core.emotions import COARSE


def class_report(golds: Sequence[str], preds: Sequence[str], *, seconds: Sequence[float] = (),
                 classes: Sequence[str] = COARSE) -> dict:
    """Coarse-class figures of ``preds`` against ``golds`` (both coarse class names).

    Rows of the confusion matrix are the gold classes present, columns every class that may be
    predicted (``COARSE``: an answer outside the gold classes, such as contempt on a 7-class set,
    counts as wrong and shows in its own column).
    """
    gold_classes = [c for c in classes if c in set(golds)]
    confusion = {g: {p: 0 for p in COARSE} for g in gold_classes}
    for g, p in zip(golds, preds):
        confusion[g][p] += 1
    answered = Counter(preds)
    n = len(golds)
    per_class = {}
    for c in gold_classes:
        support = sum(confusion[c].values())
        hits = confusion[c][c]
        per_class[c] = {"support": support, "recall": round(hits / support, 4) if support else None,
                        "precision": round(hits / answered[c], 4) if answered[c] else None}
    recalls = [v["recall"] for v in per_class.values() if v["recall"] is not None]
    report = {
        "items": n,
        "accuracy": round(sum(g == p for g, p in zip(golds, preds)) / n, 4) if n else None,
        "macro_recall": round(sum(recalls) / len(recalls), 4) if recalls else None,
        "per_class": per_class,
        "answered_share": {c: round(answered[c] / n, 4) for c in COARSE} if n else {},
        "contempt_share": round(answered["contempt"] / n, 4) if n else None,
        "confusion": {"rows_gold_columns_predicted": list(COARSE), **confusion},
    }
    if seconds:
        report["median_decision_s"] = round(statistics.median(seconds), 3)
        report["p90_decision_s"] = round(sorted(seconds)[int(0.9 * (len(seconds) - 1))], 3)
    return report


def format_report(name: str, report: dict) -> str:
    """A short text view: accuracy, recall per class and the confusion matrix."""
    lines = [f"{name}: {report['items']} items, accuracy {report['accuracy']:.3f}, macro recall "
             f"{report['macro_recall']:.3f}, contempt answered {report['contempt_share']:.3f}"
             + (f", median decision {report['median_decision_s']:.3f} s" if "median_decision_s" in report else "")]
    lines.append("gold \\ pred  " + " ".join(f"{c[:5]:>5}" for c in COARSE) + "  recall")
    for g, row in report["confusion"].items():
        if g == "rows_gold_columns_predicted":
            continue
        lines.append(f"{g:11s}  " + " ".join(f"{row[c]:5d}" for c in COARSE)
                     + f"  {report['per_class'][g]['recall']:.2f}")
    return "\n".join(lines)
