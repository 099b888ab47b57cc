"""Each rater's plan: the order of the trials and the side each system is shown on, reproducibly.

Everything is drawn from the rater's seed (``study.seed_bytes``: SHA-256 of the study secret, study id and
rater id) by hashing, not by a random generator, so the same rater gets the same plan on any machine and
Python version, a reload resumes where they stopped (``next_trial`` skips the items already rated), and the
store can recompute the sides to record them.

- order: items sorted by a per-rater hash; attention checks at their stated positions (1-based), those
  without one at hashed free places;
- sides: an item's systems sorted by a per-rater hash of (item, system); side 0 is the leftmost, so with
  two systems side 1 means "shown on the right" (the ``swap`` of the export);
- what a ``Trial`` gives the UI holds no system name: opaque tokens and blinded media copies only.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Collection

from e3rg_core.errors import InputError
from e3rg_core.rating.criteria import Criterion
from e3rg_core.rating.study import GoldItem, Study, _keyed_hex, seed_bytes
from e3rg_core.rating.records import check_rater_id
from e3rg_core.types import Utterance

SIDE_LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
PREFERENCE_CHOICES: tuple[str, ...] = ("left", "right", "none")


@dataclass(frozen=True)
class Panel:
    """One stimulus of a trial as the rater sees it; ``video``/``audio`` are blinded copies."""

    token: str  # opaque: the store maps it back to the system
    side: int  # 0 = leftmost
    label: str  # "A", "B", ... by side
    text: str
    video: Path
    audio: Path | None


@dataclass(frozen=True)
class PairQuestion:
    """An A/B preference question between two panels; answer it with one of ``PREFERENCE_CHOICES``."""

    key: str  # opaque
    left: str  # token of the panel on the left of the two
    right: str
    question: str


@dataclass(frozen=True)
class Trial:
    """One screen of the study: the dialogue so far, the replies side by side, the questions.

    ``instruction`` is non-empty only for an attention check that tells the rater what to answer.
    """

    position: int  # 1-based place in the rater's sequence
    n_trials: int
    item_id: str
    context: tuple[Utterance, ...]
    panels: tuple[Panel, ...]
    criteria: tuple[Criterion, ...]
    pairs: tuple[PairQuestion, ...]
    instruction: str = ""


class RaterPlan:
    """One rater's sequence of trials; build it with ``make_plan``."""

    def __init__(self, study: Study, rater_id: str, media_dir: Path) -> None:
        self._study = study
        self.rater_id = check_rater_id(rater_id)
        self.media_dir = Path(media_dir)
        self.item_ids: tuple[str, ...] = trial_order(study, rater_id)

    @property
    def study_id(self) -> str:
        return self._study.id

    @property
    def n_trials(self) -> int:
        return len(self.item_ids)

    def trial(self, position: int) -> Trial:
        """The trial at 1-based ``position``, its media copied into ``media_dir`` under neutral names."""
        if isinstance(position, bool) or not isinstance(position, int) or not 1 <= position <= self.n_trials:
            raise InputError(f"trial position must be in 1..{self.n_trials}, not {position!r}")
        study, item_id = self._study, self.item_ids[position - 1]
        item = study.item(item_id)
        order = side_order(study, self.rater_id, item_id)
        panels = []
        for side, system in enumerate(order):
            output = study.output(item_id, system)
            panels.append(Panel(
                study.token(item_id, system), side, SIDE_LABELS[side], output.text,
                study.blind_copy(output.video, self.media_dir),
                None if output.audio is None else study.blind_copy(output.audio, self.media_dir),
            ))
        pairs = () if isinstance(item, GoldItem) else tuple(
            PairQuestion(pair_key(study, item_id, a, b), *(study.token(item_id, s) for s in _by_side(order, a, b)),
                         study.preference_question)
            for a, b in study.pairs
        )
        instruction = item.instruction if isinstance(item, GoldItem) else ""
        return Trial(position, self.n_trials, item_id, item.context, tuple(panels), study.criteria, pairs,
                     instruction)

    def position_of(self, item_id: str) -> int:
        """The 1-based position of ``item_id`` in this plan."""
        try:
            return self.item_ids.index(item_id) + 1
        except ValueError:
            raise InputError(f"study {self.study_id!r} has no item {item_id!r}") from None

    def next_trial(self, done: Collection[str]) -> Trial | None:
        """The first trial whose item is not in ``done`` (e.g. ``store.completed_items(rater)``), or None."""
        for position, item_id in enumerate(self.item_ids, start=1):
            if item_id not in done:
                return self.trial(position)
        return None

    def remaining(self, done: Collection[str]) -> int:
        """How many trials are left once the items in ``done`` are skipped."""
        return sum(1 for item_id in self.item_ids if item_id not in done)

    def __repr__(self) -> str:
        return f"RaterPlan(study={self.study_id!r}, rater={self.rater_id!r}, n_trials={self.n_trials})"


def make_plan(study: Study, rater_id: str, *, media_dir: Path) -> RaterPlan:
    """The plan of ``rater_id``: the same every time; blinded media copies go to ``media_dir``."""
    return RaterPlan(study, rater_id, media_dir)


def trial_order(study: Study, rater_id: str) -> tuple[str, ...]:
    """The item ids in the order ``rater_id`` sees them, attention checks included."""
    seed = seed_bytes(study, check_rater_id(rater_id))
    items = sorted((i.id for i in study.items), key=lambda item_id: _draw(seed, "order", item_id))
    n = len(items) + len(study.gold)
    slots: list[str | None] = [None] * n
    for gold in study.gold:
        if gold.position is not None:
            slots[gold.position - 1] = gold.id
    for gold in study.gold:
        if gold.position is None:
            free = [k for k, s in enumerate(slots) if s is None]
            slots[free[int.from_bytes(_draw(seed, "gold", gold.id)[:8], "big") % len(free)]] = gold.id
    rest = iter(items)
    return tuple(s if s is not None else next(rest) for s in slots)


def side_order(study: Study, rater_id: str, item_id: str) -> tuple[str, ...]:
    """The systems of ``item_id`` from left to right as ``rater_id`` sees them."""
    seed = seed_bytes(study, check_rater_id(rater_id))
    return tuple(sorted(study.systems_of(item_id), key=lambda system: _draw(seed, "side", item_id, system)))


def pair_key(study: Study, item_id: str, system_a: str, system_b: str) -> str:
    """The opaque key of the preference question between two systems on ``item_id``."""
    return _keyed_hex(study.secret, "pair", item_id, system_a, system_b)[:16]


def _by_side(order: tuple[str, ...], a: str, b: str) -> tuple[str, str]:
    return (a, b) if order.index(a) < order.index(b) else (b, a)


def _draw(seed: bytes, *parts: str) -> bytes:
    return hashlib.sha256(seed + "\x1f".join(parts).encode("utf-8")).digest()
