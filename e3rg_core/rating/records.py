"""What the rating store gives back: one rating or preference per row, plus the id and time rules."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from e3rg_core.errors import InputError

RATER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")
EXPORT_COLUMNS: tuple[str, ...] = (
    "rater", "item", "system", "criterion", "score", "swap", "shown_at", "answered_at", "audio_plays", "video_plays",
)
MEDIA = ("audio", "video")


@dataclass(frozen=True)
class RatingRow:
    """The rater's latest score of one system on one item and criterion, with how it was shown.

    ``swap`` is the 0-based side the system was shown on, counted from the left: with two systems, 1
    means "shown on the right". ``audio_plays``/``video_plays`` count the plays of that system's stimulus
    on that item by that rater up to the answer. ``shown_at`` is "" when the UI never recorded the showing.
    """

    rater: str
    item: str
    system: str
    criterion: str
    score: int
    swap: int
    shown_at: str
    answered_at: str
    audio_plays: int
    video_plays: int


@dataclass(frozen=True)
class PreferenceRow:
    """The rater's latest A/B choice between ``system_a`` and ``system_b`` (the study's pair order).

    ``choice`` is "a", "b" or "none" (no preference); ``a_side``/``b_side`` are the sides they were on.
    """

    rater: str
    item: str
    system_a: str
    system_b: str
    choice: str
    a_side: int
    b_side: int
    shown_at: str
    answered_at: str


def check_rater_id(rater_id: str) -> str:
    """Return ``rater_id`` if it is 1-128 letters, digits or . _ @ + - (starting with a letter or digit)."""
    if not isinstance(rater_id, str) or not RATER_ID.fullmatch(rater_id):
        raise InputError(f"rater id {rater_id!r} is not allowed; use 1-128 letters, digits or . _ @ + -, "
                         "starting with a letter or digit")
    return rater_id


def utc_now() -> str:
    """The current time as ISO-8601 UTC, fixed width (always microseconds), so text order is time order."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")
