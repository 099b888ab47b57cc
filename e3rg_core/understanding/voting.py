"""Voting over several emotion predictors: ``majority`` (E3RG-style) or ``soft``.

Soft voting (the default, chosen by measurement: see docs/emotion.md) adds each voter's weighted
log-probabilities over the 36 labels (a product of experts); a voter that reports no probabilities
counts as 0.8 on its label, the rest spread evenly. Its distribution is the normalised product. The
decision is taken class first, as the generators and HIT act on the class: the coarse class with the
largest summed probability wins (the class the page's chart shows on top), then its most probable
label. Taking the single most probable label instead let a class whose feeling is spread over
several words ("sad", "lonely", "devastated") lose to one peaked word of another, and the label
then disagreed with the chart. Exact ties go to the earliest class in ``COARSE`` and the earliest
label in ``CANDIDATES``.

With ``class_heads`` (the engine passes it; issue 21) the vote is taken in two parts. Whether there is
a feeling at all: neutral keeps its share of the product above. Which feeling: the other classes share
the rest by a *class vote*, each voter's weighted log-probability of the class added up, where a
voter's class probability is the sum of its labels' if it splits a class head's probability among
them (the embedding voter, named in ``class_heads``), else the mean of its labels' (a voter that
scores each word on its own, the calibrated LLM or the face and voice readers, would otherwise favour
happy, written as thirteen words, over fear, written as four), and such a voter counts
``LABEL_SCORER_CLASS_FACTOR`` times its weight. The product over words punishes two voters who agree
on the class in different words ("lonely" and "disappointed"), which the class vote does not; the
plain product is kept for neutral, where it read plain messages best. The chart shows this
distribution and the decision is its top class, as before. Chosen on e3rg's dev sets and GoEmotions'
dev split (docs/emotion.md).

Majority voting:

The vote is taken in two rounds, because the generators and E3RG's HIT metric act on the coarse
class while voters often agree on the class but not on the word ("sad", "lonely", "devastated"):

1. each vote's fine label is projected to its coarse class (under the configured map) and the coarse
   class with the largest total weight wins;
2. within the winning class, the fine label with the largest total weight wins.

Tie-break, in both rounds: the larger summed probability that score-reporting voters (the embedding
classifier) gave to the tied candidates; then the candidate of the earliest voter in the configured
order (the first voter is the most trusted one).

The vote distributions are returned as the confidence: ``confidence`` is the weight share of the
winning coarse class.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Collection, Mapping, Sequence

from e3rg_core.emotions import CANDIDATES, COARSE, coarse_of
from e3rg_core.errors import BackendFailed, ConfigError
from e3rg_core.types import EmotionVote


@dataclass(frozen=True)
class VoteResult:
    label: str
    coarse: str
    distribution: Mapping[str, float]  # fine label -> weight share
    coarse_distribution: Mapping[str, float]  # coarse class -> weight share
    confidence: float


def _pick(weights: Mapping[str, float], score_sums: Mapping[str, float], first_seen: Mapping[str, int]) -> str:
    return max(weights, key=lambda k: (round(weights[k], 9), round(score_sums.get(k, 0.0), 9), -first_seen[k]))


def majority_vote(
    votes: Sequence[EmotionVote],
    *,
    map_name: str = "hit",
    weights: Mapping[str, float] | None = None,
) -> VoteResult:
    """Combine votes; ``weights`` maps voter names to a weight (default 1.0 each)."""
    if not votes:
        raise BackendFailed("no emotion predictor produced a vote")
    weights = weights or {}
    fine_w: dict[str, float] = defaultdict(float)
    coarse_w: dict[str, float] = defaultdict(float)
    fine_first: dict[str, int] = {}
    coarse_first: dict[str, int] = {}
    fine_scores: dict[str, float] = defaultdict(float)
    coarse_scores: dict[str, float] = defaultdict(float)
    for order, vote in enumerate(votes):
        w = float(weights.get(vote.voter, 1.0))
        coarse = coarse_of(vote.label, map_name=map_name)
        fine_w[vote.label] += w
        coarse_w[coarse] += w
        fine_first.setdefault(vote.label, order)
        coarse_first.setdefault(coarse, order)
        for label, p in vote.scores.items():
            fine_scores[label] += p
            coarse_scores[coarse_of(label, map_name=map_name)] += p
    total = sum(fine_w.values())
    if total <= 0:
        raise BackendFailed("every emotion vote has weight 0; give at least one voter a positive weight")
    coarse = _pick(coarse_w, coarse_scores, coarse_first)
    in_class = {k: v for k, v in fine_w.items() if coarse_of(k, map_name=map_name) == coarse}
    label = _pick(in_class, fine_scores, fine_first)
    return VoteResult(
        label=label,
        coarse=coarse,
        distribution={k: v / total for k, v in sorted(fine_w.items(), key=lambda kv: -kv[1])},
        coarse_distribution={k: v / total for k, v in sorted(coarse_w.items(), key=lambda kv: -kv[1])},
        confidence=coarse_w[coarse] / total,
    )


VOTE_METHODS = ("soft", "majority")
_ONE_HOT_P = 0.8  # how sure a voter without probabilities is taken to be of its own label
# In the class vote a voter that scores each label on its own counts this many times its weight (the
# LLM's 1 becomes 2.5 against the two embedding voters' 1 each; 1.5-3 tried on the dev sets, docs/emotion.md).
LABEL_SCORER_CLASS_FACTOR = 2.5


def _log_probs(vote: EmotionVote) -> dict[str, float]:
    if vote.scores:
        return {c: math.log(max(float(vote.scores.get(c, 0.0)), 1e-9)) for c in CANDIDATES}
    rest = (1.0 - _ONE_HOT_P) / (len(CANDIDATES) - 1)
    return {c: math.log(_ONE_HOT_P if c == vote.label else rest) for c in CANDIDATES}


def soft_vote(
    votes: Sequence[EmotionVote],
    *,
    map_name: str = "hit",
    weights: Mapping[str, float] | None = None,
    class_heads: Collection[str] | None = None,
) -> VoteResult:
    """Combine votes by summing weighted log-probabilities; ``weights`` maps voter -> weight.

    ``class_heads`` (None: the plain product) names the voters whose label probabilities share out a
    class's; given, the feeling is chosen by the class vote (module docstring)."""
    if not votes:
        raise BackendFailed("no emotion predictor produced a vote")
    weights = weights or {}
    total = {c: 0.0 for c in CANDIDATES}
    for vote in votes:
        w = float(weights.get(vote.voter, 1.0))
        for c, lp in _log_probs(vote).items():
            total[c] += w * lp
    top = max(total.values())
    unnorm = {c: math.exp(v - top) for c, v in total.items()}
    z = sum(unnorm.values())
    dist = {c: p / z for c, p in unnorm.items()}
    coarse_dist: dict[str, float] = defaultdict(float)
    for c, p in dist.items():
        coarse_dist[coarse_of(c, map_name=map_name)] += p
    if class_heads is not None:
        # neutral keeps its share; the feelings share the rest by the class vote, each class's words
        # keeping their proportions within it
        rest = 1.0 - coarse_dist["neutral"]
        shares = {k: rest * q for k, q in _class_vote(votes, weights, set(class_heads), map_name).items()}
        size = {k: sum(coarse_of(c, map_name=map_name) == k for c in CANDIDATES) for k in shares}
        for c, p in dist.items():
            k = coarse_of(c, map_name=map_name)
            if k in shares:
                dist[c] = p * shares[k] / coarse_dist[k] if coarse_dist[k] > 0 else shares[k] / size[k]
        coarse_dist = defaultdict(float, {**coarse_dist, **shares})
    coarse = max(coarse_dist, key=lambda k: (round(coarse_dist[k], 12), -COARSE.index(k)))
    label = max((c for c in CANDIDATES if coarse_of(c, map_name=map_name) == coarse),
                key=lambda c: (dist[c], -CANDIDATES.index(c)))
    return VoteResult(
        label=label,
        coarse=coarse,
        distribution=dict(sorted(dist.items(), key=lambda kv: -kv[1])),
        coarse_distribution=dict(sorted(coarse_dist.items(), key=lambda kv: -kv[1])),
        confidence=coarse_dist[coarse],
    )


def _class_vote(votes: Sequence[EmotionVote], weights: Mapping[str, float], class_heads: set[str],
                map_name: str) -> dict[str, float]:
    """Each class but neutral's share of the feelings by the class vote (module docstring)."""
    members: dict[str, list[str]] = defaultdict(list)
    for c in CANDIDATES:
        members[coarse_of(c, map_name=map_name)].append(c)
    feelings = [k for k in COARSE if k != "neutral" and members[k]]
    total = {k: 0.0 for k in feelings}
    for vote in votes:
        w = float(weights.get(vote.voter, 1.0))
        p = {c: math.exp(lp) for c, lp in _log_probs(vote).items()}
        summed = vote.voter in class_heads
        w *= 1.0 if summed else LABEL_SCORER_CLASS_FACTOR
        for k in feelings:
            mass = sum(p[c] for c in members[k])
            total[k] += w * math.log(max(mass if summed else mass / len(members[k]), 1e-12))
    top = max(total.values())
    unnorm = {k: math.exp(v - top) for k, v in total.items()}
    z = sum(unnorm.values())
    return {k: v / z for k, v in unnorm.items()}


def vote(
    votes: Sequence[EmotionVote],
    *,
    method: str = "soft",
    map_name: str = "hit",
    weights: Mapping[str, float] | None = None,
    class_heads: Collection[str] | None = None,
) -> VoteResult:
    """Combine votes with the named method (``class_heads``: see ``soft_vote``; majority ignores it)."""
    if method == "soft":
        return soft_vote(votes, map_name=map_name, weights=weights, class_heads=class_heads)
    if method == "majority":
        return majority_vote(votes, map_name=map_name, weights=weights)
    raise ConfigError(f"unknown vote method {method!r}; choose from {', '.join(VOTE_METHODS)}")
