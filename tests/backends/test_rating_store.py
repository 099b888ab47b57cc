"""The rating store shared by two processes (as two server workers would share it): nothing is lost."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from e3rg_core.rating import RatingStore, load_study, make_plan
from e3rg_core.rating.plan import trial_order
from tests.unit.test_rating import N_ITEMS, SYSTEMS, _answer, _save, _study_dict

RATERS_PER_PROCESS = 3
SHARED_RATER = "SHARED"


def _rate_everything(study_path: str, db_path: str, process: int, start) -> None:
    """Child process: rate every trial for its own raters and for the rater both processes share."""
    study = load_study(Path(study_path))
    start.wait(timeout=60)  # both children are loaded: their writes start together
    with RatingStore(Path(db_path), study) as store:
        for rater in [f"P{process}R{k}" for k in range(RATERS_PER_PROCESS)] + [SHARED_RATER]:
            plan = make_plan(study, rater, media_dir=Path(db_path).parent / f"served{process}")
            for position in range(1, plan.n_trials + 1):
                _answer(store, plan, plan.trial(position), score=1 + (position + process) % 5)


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    study_path = _save(tmp_path, _study_dict(tmp_path))
    study = load_study(study_path)
    db_path = tmp_path / "ratings.sqlite3"
    RatingStore(db_path, study).close()  # both children open an existing file, as workers of one server do
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    children = [context.Process(target=_rate_everything, args=(str(study_path), str(db_path), p, start))
                for p in (1, 2)]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=120)
    assert [c.exitcode for c in children] == [0, 0]

    per_rater = (N_ITEMS * len(SYSTEMS) + len(study.gold)) * len(study.criteria)
    with RatingStore(db_path, study) as store:
        events = store.n_events()
        assert events["ratings"] == (2 * RATERS_PER_PROCESS + 2) * per_rater  # the shared rater answered twice
        assert events["shown"] == (2 * RATERS_PER_PROCESS + 2) * (N_ITEMS + len(study.gold))
        rows = store.rows()
        assert len(rows) == (2 * RATERS_PER_PROCESS + 1) * per_rater  # one latest row per key
        assert len({(r.rater, r.item, r.system, r.criterion) for r in rows}) == len(rows)
        for rater in store.raters():
            assert store.completed_items(rater) == set(trial_order(study, rater))
        shared = [r for r in rows if r.rater == SHARED_RATER]
        assert all(r.video_plays in (1, 2) for r in shared)  # each process played each video once

