"""The organiser's numbers: mean scores with confidence intervals, agreement, win rates, preferences, checks.

All functions take the rows of ``RatingStore.rows()`` / ``preference_rows()`` (latest answer per key) and
the ``Study``. Attention-check rows (system ``gold``) are left out of every statistic except
``gold_failures``.

- ``summarize``: per system x criterion, the mean of all ratings and a 95 % interval, either a t-interval
  over the ratings (each rater x item score one observation, as ITU-T P.800.2 computes MOS intervals; it
  ignores that ratings of one item are correlated) or a percentile bootstrap that resamples items
  (``method="bootstrap"``; wider, and honest about item effects).
- ``agreement``: Krippendorff's alpha per criterion (ordinal by default), units = (item, system), coders =
  raters; computed by the ``krippendorff`` package.
- ``win_rates``: per criterion, for every ordered pair of systems, how often the first scored higher than
  the second on the same item by the same rater; ties count half.
"""

from __future__ import annotations

import csv
import math
import os
import uuid
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal, Sequence

from e3rg_core.errors import BackendUnavailable, InputError
from e3rg_core.rating.criteria import SCALE
from e3rg_core.rating.records import EXPORT_COLUMNS, PreferenceRow, RatingRow
from e3rg_core.rating.study import GOLD_SYSTEM, Study

CI_METHODS = ("t", "bootstrap")
ALPHA_LEVELS = ("nominal", "ordinal", "interval", "ratio")


@dataclass(frozen=True)
class Score:
    """Mean score of ``system`` on ``criterion`` over ``n`` ratings, with its confidence interval."""

    system: str
    criterion: str
    n: int
    mean: float
    ci_low: float  # NaN when n < 2
    ci_high: float
    method: str  # "t" or "bootstrap"


@dataclass(frozen=True)
class WinRate:
    """How often ``system`` beat ``other`` on ``criterion`` in ``n`` paired ratings (ties count half)."""

    system: str
    other: str
    criterion: str
    wins: int
    losses: int
    ties: int
    n: int
    rate: float  # (wins + ties / 2) / n; NaN when n == 0


@dataclass(frozen=True)
class PreferenceCount:
    """A/B answers for one pair: ``a`` preferred ``system_a``, ``b`` preferred ``system_b``."""

    system_a: str
    system_b: str
    a: int
    b: int
    none: int

    @property
    def n(self) -> int:
        return self.a + self.b + self.none


@dataclass(frozen=True)
class GoldResult:
    """A rater's attention checks: how many they answered and how many fell outside the expected range."""

    rater: str
    n_checks: int
    n_failed: int
    failure_rate: float  # NaN when n_checks == 0
    failed_items: tuple[str, ...]


def system_rows(rows: Iterable[RatingRow]) -> list[RatingRow]:
    """The rows that rate a compared system (attention checks left out)."""
    return [r for r in rows if r.system != GOLD_SYSTEM]


def summarize(rows: Sequence[RatingRow], study: Study, *, method: Literal["t", "bootstrap"] = "t",
              confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> tuple[Score, ...]:
    """Mean and confidence interval per system x criterion, in study order (see the module docstring)."""
    if method not in CI_METHODS:
        raise InputError(f"unknown interval method {method!r}; choose from {', '.join(CI_METHODS)}")
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence must be between 0 and 1, not {confidence!r}")
    by_item: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for r in system_rows(rows):
        by_item[(r.system, r.criterion)][r.item].append(r.score)
    scores = []
    for system in study.systems:
        for criterion in study.criterion_ids:
            items = by_item.get((system, criterion), {})
            values = [s for v in items.values() for s in v]
            n = len(values)
            mean = sum(values) / n if n else math.nan
            if method == "t":
                low, high = _t_interval(values, confidence)
            else:
                low, high = _bootstrap_items(list(items.values()), confidence, n_resamples, seed)
            scores.append(Score(system, criterion, n, mean, low, high, method))
    return tuple(scores)


def krippendorff_alpha(rows: Sequence[RatingRow], criterion: str, *,
                       level: Literal["nominal", "ordinal", "interval", "ratio"] = "ordinal") -> float:
    """Krippendorff's alpha of ``criterion``: units are (item, system), coders are raters.

    NaN when it is undefined: no unit rated by two raters, or every rating the same value.
    """
    if level not in ALPHA_LEVELS:
        raise InputError(f"unknown level of measurement {level!r}; choose from {', '.join(ALPHA_LEVELS)}")
    try:
        import krippendorff
        import numpy as np
    except ImportError as exc:
        raise BackendUnavailable(f"Krippendorff's alpha needs the krippendorff package: pip install "
                                 f"krippendorff (see requirements.txt): {exc}") from exc
    chosen = [r for r in system_rows(rows) if r.criterion == criterion]
    raters = sorted({r.rater for r in chosen})
    units = sorted({(r.item, r.system) for r in chosen})
    matrix = np.full((len(raters), len(units)), np.nan)
    rater_index = {rater: k for k, rater in enumerate(raters)}
    unit_index = {unit: k for k, unit in enumerate(units)}
    for r in chosen:
        matrix[rater_index[r.rater], unit_index[(r.item, r.system)]] = r.score
    if (np.sum(~np.isnan(matrix), axis=0) >= 2).sum() == 0:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 0/0 when every value is the same: NaN below
        try:
            value = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level,
                                       value_domain=list(SCALE))
        except ValueError:
            return math.nan
    return float(value) if math.isfinite(value) else math.nan


def agreement(rows: Sequence[RatingRow], study: Study, *,
              level: Literal["nominal", "ordinal", "interval", "ratio"] = "ordinal") -> dict[str, float]:
    """Krippendorff's alpha per criterion, in study order."""
    return {c: krippendorff_alpha(rows, c, level=level) for c in study.criterion_ids}


def win_rates(rows: Sequence[RatingRow], study: Study) -> tuple[WinRate, ...]:
    """Per criterion and ordered pair of systems, wins/losses/ties over paired (item, rater) scores."""
    score: dict[tuple[str, str, str, str], int] = {}
    for r in system_rows(rows):
        score[(r.criterion, r.item, r.rater, r.system)] = r.score
    pairs_by_criterion: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for criterion, item, rater, _ in score:
        pairs_by_criterion[criterion].add((item, rater))
    result = []
    for criterion in study.criterion_ids:
        for system in study.systems:
            for other in study.systems:
                if other == system:
                    continue
                wins = losses = ties = 0
                for item, rater in sorted(pairs_by_criterion[criterion]):
                    mine = score.get((criterion, item, rater, system))
                    theirs = score.get((criterion, item, rater, other))
                    if mine is None or theirs is None:
                        continue
                    wins, losses, ties = wins + (mine > theirs), losses + (mine < theirs), ties + (mine == theirs)
                n = wins + losses + ties
                rate = (wins + ties / 2) / n if n else math.nan
                result.append(WinRate(system, other, criterion, wins, losses, ties, n, rate))
    return tuple(result)


def preference_counts(rows: Sequence[PreferenceRow], study: Study) -> tuple[PreferenceCount, ...]:
    """A/B choices per preference pair of the study, in study order."""
    counts = {pair: [0, 0, 0] for pair in study.pairs}
    for r in rows:
        pair = (r.system_a, r.system_b)
        if pair in counts:
            counts[pair][("a", "b", "none").index(r.choice)] += 1
    return tuple(PreferenceCount(a, b, *counts[(a, b)]) for a, b in study.pairs)


def gold_failures(rows: Sequence[RatingRow], study: Study) -> tuple[GoldResult, ...]:
    """Per rater (everyone in ``rows``), the attention checks answered and failed."""
    answers: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for r in rows:
        if r.system == GOLD_SYSTEM:
            answers[(r.rater, r.item)][r.criterion] = r.score
    result = []
    for rater in sorted({r.rater for r in rows}):
        checked, failed = 0, []
        for gold in study.gold:
            given = answers.get((rater, gold.id))
            if given is None:
                continue
            checked += 1
            if not gold.passed(given):
                failed.append(gold.id)
        rate = len(failed) / checked if checked else math.nan
        result.append(GoldResult(rater, checked, len(failed), rate, tuple(failed)))
    return tuple(result)


def export_csv(rows: Sequence[RatingRow], out_path: Path) -> Path:
    """Write ``rows`` as long-format CSV (``EXPORT_COLUMNS``, one line per rating, ``\\n`` endings)."""
    out_path = Path(out_path)
    staged = out_path.with_name(f".{out_path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with staged.open("w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(EXPORT_COLUMNS)
            for r in rows:
                writer.writerow([getattr(r, c) for c in EXPORT_COLUMNS])
        os.replace(staged, out_path)
    finally:
        staged.unlink(missing_ok=True)
    return out_path


def _t_interval(values: Sequence[int], confidence: float) -> tuple[float, float]:
    n = len(values)
    if n < 2:
        return math.nan, math.nan
    from scipy.stats import t

    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return mean - half, mean + half


def _bootstrap_items(items: list[list[int]], confidence: float, n_resamples: int, seed: int) -> tuple[float, float]:
    if len(items) < 2:
        return math.nan, math.nan
    import numpy as np

    sums = np.array([sum(v) for v in items], dtype=float)
    counts = np.array([len(v) for v in items], dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(items), size=(n_resamples, len(items)))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)
