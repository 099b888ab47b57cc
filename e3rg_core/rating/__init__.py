"""Human evaluation of replies: studies, blinded per-rater plans, an append-only rating log, analysis.

Pure library (no UI import); the Gradio rater tab is built on it. The flow::

    study = load_study(Path("study.toml"))              # or study_from_batch({...}, Path("study/"))
    store = RatingStore(Path("ratings.sqlite3"), study)
    plan = make_plan(study, rater_id, media_dir=serve_dir)   # serve_dir: blinded copies only
    trial = plan.next_trial(store.completed_items(rater_id))
    store.record_shown(rater_id, trial.item_id)
    store.record_play(rater_id, trial.item_id, panel.token, "video")   # on every play
    store.record_ratings(rater_id, trial.item_id, {panel.token: {"naturalness": 4, ...}, ...},
                         preferences={pair.key: "left"})
    write_report(store, Path("report/"))                 # CSVs, summary.json, scores.png

A ``Trial`` carries no system name: panels have opaque tokens and media copied under neutral names.
"""

from e3rg_core.rating.analysis import (
    GoldResult,
    PreferenceCount,
    Score,
    WinRate,
    agreement,
    export_csv,
    gold_failures,
    krippendorff_alpha,
    preference_counts,
    summarize,
    system_rows,
    win_rates,
)
from e3rg_core.rating.batch import study_from_batch
from e3rg_core.rating.criteria import DEFAULT_CRITERIA, SCALE, Criterion
from e3rg_core.rating.plan import PREFERENCE_CHOICES, PairQuestion, Panel, RaterPlan, Trial, make_plan
from e3rg_core.rating.plot import plot_scores
from e3rg_core.rating.records import EXPORT_COLUMNS, PreferenceRow, RatingRow
from e3rg_core.rating.report import Report, write_report
from e3rg_core.rating.store import RatingStore
from e3rg_core.rating.study import GOLD_SYSTEM, GoldItem, Item, Output, Study
from e3rg_core.rating.study_file import load_study

__all__ = [
    "DEFAULT_CRITERIA",
    "EXPORT_COLUMNS",
    "GOLD_SYSTEM",
    "PREFERENCE_CHOICES",
    "SCALE",
    "Criterion",
    "GoldItem",
    "GoldResult",
    "Item",
    "Output",
    "PairQuestion",
    "Panel",
    "PreferenceCount",
    "PreferenceRow",
    "RaterPlan",
    "RatingRow",
    "RatingStore",
    "Report",
    "Score",
    "Study",
    "Trial",
    "WinRate",
    "agreement",
    "export_csv",
    "gold_failures",
    "krippendorff_alpha",
    "load_study",
    "make_plan",
    "plot_scores",
    "preference_counts",
    "study_from_batch",
    "summarize",
    "system_rows",
    "win_rates",
    "write_report",
]
