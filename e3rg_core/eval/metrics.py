"""The challenge's metrics as E3RG computes them, and the standard ones beside them, each named.

Emotion (labels are fine labels or free-form words; arguments go ``gold, predicted`` as in sklearn):

* ``hit_rate``: E3RG's HIT. A hit is ``coarse(predicted) == coarse(gold)`` under E3RG's ``"hit"``
  map (``emotions.coarse_of``); HIT is hits / items. E3RG takes one item per conversation, its last
  turn; choosing the items is the caller's job (``eval.run`` does it).
* ``accuracy``: exact fine-label accuracy.
* ``macro_f1``: the unweighted mean of per-class F1 = 2·TP / (2·TP + FP + FN) over the classes present
  in gold or predicted (sklearn's default label set); pass ``coarse=True`` to score the coarse classes.
* ``confusion_matrix``: counts with gold in rows and predicted in columns.

Response diversity (Distinct-n). Both lower-case each response, strip it and split it on whitespace
(punctuation stays attached: "sorry." and "sorry" are different tokens), as E3RG does; n-grams never
cross two responses.

* ``distinct_e3rg``: what E3RG reports. Per response, unique n-grams / n-grams; the MEAN of these
  ratios over the responses. A response shorter than n words has no n-grams and is left out of the
  mean (E3RG skips it with a warning). Near 1 for any set of short replies.
* ``distinct_corpus``: the usual corpus-level Distinct-n (Li et al. 2016): unique n-grams over all
  responses / all n-grams. Falls as replies repeat each other's phrasing.

Every function returns ``None`` when there is nothing to score.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

from e3rg_core.emotions import COARSE, coarse_of

HIT_MAP = "hit"  # the map behind E3RG's HIT (emotions.MAP_DIFFERENCES lists where the maps disagree)


def _pairs(gold: Sequence[str], predicted: Sequence[str]) -> list[tuple[str, str]]:
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")
    return list(zip(gold, predicted))


def to_coarse(labels: Sequence[str], *, map_name: str = HIT_MAP) -> list[str]:
    """Each label's coarse class under one of E3RG's maps."""
    return [coarse_of(label, map_name=map_name) for label in labels]


def hit_rate(gold: Sequence[str], predicted: Sequence[str], *, map_name: str = HIT_MAP) -> float | None:
    """E3RG's HIT: the share of items whose predicted and gold labels fall in the same coarse class."""
    pairs = _pairs(gold, predicted)
    if not pairs:
        return None
    hits = sum(coarse_of(g, map_name=map_name) == coarse_of(p, map_name=map_name) for g, p in pairs)
    return hits / len(pairs)


def accuracy(gold: Sequence[str], predicted: Sequence[str]) -> float | None:
    """The share of exact matches."""
    pairs = _pairs(gold, predicted)
    return sum(g == p for g, p in pairs) / len(pairs) if pairs else None


def f1_scores(gold: Sequence[str], predicted: Sequence[str], *,
              labels: Sequence[str] | None = None) -> dict[str, float]:
    """Per-class F1 = 2·TP / (2·TP + FP + FN) (0 when the class never occurs in either)."""
    pairs = _pairs(gold, predicted)
    labels = sorted({*gold, *predicted}) if labels is None else list(labels)
    out = {}
    for label in labels:
        tp = sum(g == label and p == label for g, p in pairs)
        fp = sum(g != label and p == label for g, p in pairs)
        fn = sum(g == label and p != label for g, p in pairs)
        out[label] = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
    return out


def macro_f1(gold: Sequence[str], predicted: Sequence[str], *, coarse: bool = False,
             map_name: str = HIT_MAP, labels: Sequence[str] | None = None) -> float | None:
    """The mean per-class F1 over the classes in gold or predicted (or ``labels``)."""
    if coarse:
        gold, predicted = to_coarse(gold, map_name=map_name), to_coarse(predicted, map_name=map_name)
    scores = f1_scores(gold, predicted, labels=labels)
    return sum(scores.values()) / len(scores) if scores and gold else None


@dataclass(frozen=True)
class Confusion:
    """Counts: ``counts[i][j]`` items of gold ``labels[i]`` predicted as ``labels[j]``."""

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]

    def as_dict(self) -> dict[str, Any]:
        return {"rows": "gold", "columns": "predicted", "labels": list(self.labels),
                "counts": [list(row) for row in self.counts]}


def confusion_matrix(gold: Sequence[str], predicted: Sequence[str], *, labels: Sequence[str] | None = None,
                     coarse: bool = False, map_name: str = HIT_MAP) -> Confusion:
    """The confusion matrix; ``coarse=True`` projects both sides and uses the 8 coarse classes in order."""
    if coarse:
        gold, predicted = to_coarse(gold, map_name=map_name), to_coarse(predicted, map_name=map_name)
        labels = COARSE if labels is None else labels
    pairs = _pairs(gold, predicted)
    labels = tuple(sorted({*gold, *predicted}) if labels is None else labels)
    where = {label: i for i, label in enumerate(labels)}
    grid = [[0] * len(labels) for _ in labels]
    for g, p in pairs:
        if g in where and p in where:
            grid[where[g]][where[p]] += 1
    return Confusion(labels=labels, counts=tuple(tuple(row) for row in grid))


def tokens(text: str) -> list[str]:
    """E3RG's tokens: the stripped, lower-cased text split on whitespace."""
    return text.strip().lower().split()


def ngrams(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """The n-grams of one token list (none when it is shorter than ``n``)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, not {n}")
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def distinct_e3rg(texts: Sequence[str], n: int) -> float | None:
    """E3RG's Dist-n: the mean over responses of (unique n-grams / n-grams) within each response."""
    ratios = []
    for text in texts:
        grams = ngrams(tokens(text), n)
        if grams:  # E3RG skips a response with no n-grams rather than counting it as 0 or 1
            ratios.append(len(set(grams)) / len(grams))
    return sum(ratios) / len(ratios) if ratios else None


def distinct_corpus(texts: Sequence[str], n: int) -> float | None:
    """Corpus-level Distinct-n: unique n-grams over all responses / all n-grams."""
    counts: Counter[tuple[str, ...]] = Counter()
    for text in texts:
        counts.update(ngrams(tokens(text), n))
    total = sum(counts.values())
    return len(counts) / total if total else None


def distinct_report(texts: Sequence[str], ns: Sequence[int] = (1, 2, 3)) -> dict[str, Any]:
    """Both Distinct-n flavours for each n, labelled, with the number of responses."""
    return {
        "responses": len(texts),
        "e3rg_mean_per_response": {f"dist-{n}": distinct_e3rg(texts, n) for n in ns},
        "corpus": {f"dist-{n}": distinct_corpus(texts, n) for n in ns},
    }


def emotion_report(gold: Sequence[str], predicted: Sequence[str], *, map_name: str = HIT_MAP) -> dict[str, Any]:
    """HIT, fine accuracy, macro-F1 (fine and coarse) and the coarse confusion matrix."""
    return {
        "items": len(gold),
        "hit": hit_rate(gold, predicted, map_name=map_name),
        "fine_accuracy": accuracy(gold, predicted),
        "macro_f1_fine": macro_f1(gold, predicted),
        "macro_f1_coarse": macro_f1(gold, predicted, coarse=True, map_name=map_name),
        "confusion_coarse": confusion_matrix(gold, predicted, coarse=True, map_name=map_name).as_dict(),
        "map": map_name,
    }
