"""The rating scale and the default criteria of a human-evaluation study, with a verbal anchor per point.

E3RG's human evaluation scored Emotional Expressiveness, Multimodal Consistency and Naturalness from 1 to
5; the AvaMERG challenge also names Empathy, and a talking head needs Lip sync. Anchors describe what a
rater sees and hears at each point, so two raters reading "3" mean the same thing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SCALE: tuple[int, ...] = (1, 2, 3, 4, 5)
CRITERION_ID = re.compile(r"[a-z][a-z0-9_]{0,39}")
MAX_ANCHOR_CHARS = 200


@dataclass(frozen=True)
class Criterion:
    """One question rated on ``SCALE``; ``anchors[k]`` describes score ``k + 1``."""

    id: str
    name: str
    question: str
    anchors: tuple[str, ...]

    def anchor(self, score: int) -> str:
        """The verbal anchor of ``score`` (1..5)."""
        return self.anchors[score - 1]


DEFAULT_CRITERIA: tuple[Criterion, ...] = (
    Criterion(
        "expressiveness",
        "Emotional Expressiveness",
        "How clearly do the face and the voice express an emotion that suits the conversation?",
        (
            "No emotion at all: a blank face and a flat, monotone voice",
            "A faint emotion, or one that does not suit the conversation",
            "A fitting emotion, but weak, or only in the face or only in the voice",
            "A clear, fitting emotion in face and voice, with small lapses",
            "A vivid, fitting emotion throughout, in face and voice alike",
        ),
    ),
    Criterion(
        "consistency",
        "Multimodal Consistency",
        "Do the words, the voice and the face carry the same emotion?",
        (
            "They contradict each other, e.g. sad words said with a smile or a cheerful voice",
            "Mostly mismatched: one of them clearly contradicts the others",
            "Partly consistent: they neither clash nor support each other",
            "Consistent, apart from a brief mismatch",
            "Fully consistent: words, voice and face carry one emotion",
        ),
    ),
    Criterion(
        "naturalness",
        "Naturalness",
        "How much does the avatar look and sound like a real person talking?",
        (
            "Very unnatural: a robotic voice, a frozen or distorted face",
            "Unnatural: frequent glitches or robotic moments",
            "Acceptable: clearly synthetic, but not distracting",
            "Natural, with occasional small glitches",
            "Completely natural: it could be a recording of a person",
        ),
    ),
    Criterion(
        "empathy",
        "Empathy",
        "How well does the reply understand the speaker's feelings and respond with care?",
        (
            "It ignores or dismisses the speaker's feelings",
            "It notices the feelings only vaguely or awkwardly",
            "It recognises the feelings, but the response is generic",
            "It understands the feelings and responds with care",
            "It understands deeply and responds with warmth that fits the situation",
        ),
    ),
    Criterion(
        "lip_sync",
        "Lip sync",
        "How well do the lip movements match the speech?",
        (
            "No match: the lips stay still or move at random",
            "Poor: frequent, obvious mismatches",
            "Fair: roughly in time, with noticeable mismatches",
            "Good: small, occasional mismatches",
            "Perfect: the lips match every sound",
        ),
    ),
)

DEFAULTS_BY_ID: dict[str, Criterion] = {c.id: c for c in DEFAULT_CRITERIA}


def check_anchors(anchors: object) -> tuple[str, ...] | str:
    """``anchors`` as a tuple if they are one non-empty, distinct text per point of ``SCALE``; else why not."""
    if not isinstance(anchors, (list, tuple)) or not all(isinstance(a, str) for a in anchors):
        return f"must be a list of {len(SCALE)} texts, one per score {SCALE[0]}..{SCALE[-1]}"
    if len(anchors) != len(SCALE):
        return f"must have exactly {len(SCALE)} texts (scores {SCALE[0]}..{SCALE[-1]}), not {len(anchors)}"
    cleaned = tuple(" ".join(a.split()) for a in anchors)
    for score, text in zip(SCALE, cleaned, strict=True):
        if not text:
            return f"the anchor of score {score} is empty"
        if len(text) > MAX_ANCHOR_CHARS:
            return f"the anchor of score {score} is longer than {MAX_ANCHOR_CHARS} characters"
    if len(set(cleaned)) != len(cleaned):
        return "two scores have the same anchor; each point needs its own description"
    return cleaned
