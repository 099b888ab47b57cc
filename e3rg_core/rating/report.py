"""Everything an organiser needs from a study in one folder: the CSVs, the statistics, the plot."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from e3rg_core.errors import ConfigError
from e3rg_core.rating.analysis import (
    agreement,
    export_csv,
    gold_failures,
    preference_counts,
    summarize,
    system_rows,
    win_rates,
)
from e3rg_core.rating.plot import plot_scores
from e3rg_core.rating.store import RatingStore


@dataclass(frozen=True)
class Report:
    """The files ``write_report`` wrote (``plot`` is None while there is nothing to plot)."""

    ratings_csv: Path
    preferences_csv: Path
    summary_json: Path
    plot: Path | None


def write_report(store: RatingStore, out_dir: Path, *, method: Literal["t", "bootstrap"] = "t") -> Report:
    """Write ``ratings.csv``, ``preferences.csv``, ``summary.json`` and ``scores.png`` into ``out_dir``.

    ``summary.json`` holds the scores with intervals, ordinal Krippendorff's alpha per criterion, win
    rates, A/B counts and attention-check failures per rater; undefined values are null.
    """
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the report folder {out_dir}: {exc}") from exc
    study, rows, prefs = store.study, store.rows(), store.preference_rows()
    scores = summarize(rows, study, method=method)
    ratings_csv = export_csv(rows, out_dir / "ratings.csv")
    preferences_csv = out_dir / "preferences.csv"
    with preferences_csv.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(("rater", "item", "system_a", "system_b", "choice", "a_side", "b_side", "shown_at",
                         "answered_at"))
        writer.writerows((p.rater, p.item, p.system_a, p.system_b, p.choice, p.a_side, p.b_side, p.shown_at,
                          p.answered_at) for p in prefs)
    summary = {
        "study": study.id,
        "n_raters": len({r.rater for r in rows}),
        "n_ratings": len(system_rows(rows)),
        "interval": "t over ratings" if method == "t" else "percentile bootstrap over items",
        "scores": [asdict(s) for s in scores],
        "krippendorff_alpha_ordinal": agreement(rows, study),
        "win_rates": [asdict(w) for w in win_rates(rows, study)],
        "preferences": [{**asdict(p), "n": p.n} for p in preference_counts(prefs, study)],
        "gold": [asdict(g) for g in gold_failures(rows, study)],
    }
    summary_json = out_dir / "summary.json"
    summary_json.write_text(json.dumps(_finite(summary), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    plot = plot_scores(scores, study, out_dir / "scores.png") if system_rows(rows) else None
    return Report(ratings_csv, preferences_csv, summary_json, plot)


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as None, so the JSON is standard."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
