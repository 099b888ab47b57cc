"""Frozen values that cross stage boundaries.

The dialogue roles follow AvaMERG: the *speaker* is the person talking to e3rg (the user), the
*listener* is the avatar that answers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Literal, Mapping

Role = Literal["speaker", "listener"]
ROLES: tuple[str, ...] = ("speaker", "listener")


class Stage(StrEnum):
    """The stages of a turn, in the order a turn finishes them (the names the timings and the sessions use)."""

    HEARD = "heard"  # the user's words, typed or transcribed, and how they came across
    UNDERSTOOD = "understood"  # the user's emotion and the avatar's reply
    SPOKEN = "spoken"  # the reply in the avatar's voice
    RENDERED = "rendered"  # the talking-head video (optional: a turn can be delivered without it)
    CHECKED = "checked"  # the avatar's own face and voice read back (optional; ``perception.check_output``)


@dataclass(frozen=True)
class Utterance:
    """One line of the dialogue history."""

    role: Role
    text: str


@dataclass(frozen=True)
class UserTurn:
    """What the user said this turn, with the dialogue so far.

    ``cues`` is a short text description of non-verbal signals (face, voice) for text-only LLMs;
    ``audio_path`` / ``video_path`` are the raw recordings for omni backends.
    """

    text: str
    history: tuple[Utterance, ...] = ()
    audio_path: Path | None = None
    video_path: Path | None = None
    cues: str = ""
    context: str = ""  # the situation, as AvaMERG gives it ("Dialogue context: ..." in E3RG's prompts)


#: the voter of the one vote an emotion the user corrected has
CORRECTION_VOTER = "user"


@dataclass(frozen=True)
class EmotionVote:
    """One predictor's answer about the user's emotion."""

    voter: str  # profile name, e.g. "qwen1.5b" or "minilm@3shot"
    label: str  # one of emotions.CANDIDATES
    raw: str  # what the predictor produced before validation
    valid: bool  # False when the raw answer matched no label and the fallback was used
    seconds: float
    scores: Mapping[str, float] = field(default_factory=dict)  # label -> probability, if known

    def as_dict(self, *, raw: bool = False) -> dict[str, object]:
        """The vote as plain JSON values (sessions, the eval, the CLI); ``raw`` adds the predictor's own answer."""
        return {"voter": self.voter, "label": self.label, **({"raw": self.raw} if raw else {}), "valid": self.valid,
                "seconds": round(self.seconds, 3)}


RiskLevel = Literal["none", "care", "check", "crisis"]


@dataclass(frozen=True)
class RiskAssessment:
    """The safety check of a user's turn: does it signal a risk of suicide or self-harm, or harm done to the writer?

    ``level`` is "crisis" (this message signals risk), "check" (it may: the avatar replies calmly and
    asks gently about their safety), "care" (an earlier message of the conversation did, and the
    avatar stays calm and caring) or "none".
    """

    level: RiskLevel = "none"
    category: str = ""  # e.g. "plan_means", "self_harm"; "" when none
    sources: tuple[str, ...] = ()  # the detector parts that fired: patterns, meaning, history, judge
    evidence: str = ""  # the matched words, or the nearest expression of risk
    score: float = 0.0  # the strongest part's score (patterns 1.0, meaning margin, judge probability)
    judged: float | None = None  # the LLM judge's probability, when it was asked
    # An urgent situation other than a risk of suicide, found by the patterns: harm done to the writer by
    # someone else ("physical", "assault", "sexual", "threat", "control"; ``safety.harm``, source "harm") or
    # an emergency of the body now ("medical", "someone", "panic"; ``safety.medical``, source "medical").
    # Also a "crisis", answered with its own response (with the question about suicide as well when
    # ``category`` is a risk category, i.e. the message also came near that); "care" right after it.
    situation: str = ""

    def as_dict(self) -> dict[str, object]:
        """The assessment as plain JSON values (sessions, exports, the API)."""
        return {"level": self.level, "category": self.category, "sources": list(self.sources),
                "evidence": self.evidence, "score": self.score, "judged": self.judged,
                "situation": self.situation}


@dataclass(frozen=True)
class Decision:
    """Stage 1's first half: the user's emotion and how the avatar will sound and look, before the reply exists.

    All that speech and video need to begin, so a streamed turn knows it before the reply's first sentence.
    """

    emotion: str  # fine label, one of emotions.CANDIDATES
    coarse: str  # emotions.COARSE class under the configured map
    intensity: float  # 0..1, from the emotion wheel
    distribution: Mapping[str, float]  # fine label -> share of the votes, sums to 1
    coarse_distribution: Mapping[str, float]  # coarse class -> share of the votes, sums to 1
    confidence: float  # share of the winning coarse class, 0..1
    votes: tuple[EmotionVote, ...]
    reply_emotion: str  # coarse class the avatar should express while replying
    reply_intensity: float  # 0..1
    risk: RiskAssessment = field(default_factory=RiskAssessment)
    timings_s: Mapping[str, float] = field(default_factory=dict)

    @property
    def crisis(self) -> bool:
        """This message signals a risk of suicide or self-harm: the reply is the crisis response."""
        return self.risk.level == "crisis"

    @property
    def corrected(self) -> bool:
        """The emotion is the user's own correction, not a prediction (``Understander.decide(emotion=...)``)."""
        return bool(self.votes) and self.votes[0].voter == CORRECTION_VOTER


@dataclass(frozen=True, kw_only=True)
class Understanding(Decision):
    """Stage 1's result: the decision (the user's emotion, the avatar's), and the avatar's empathetic reply."""

    reply: str
    guarded: tuple[str, ...] = ()  # why the output guard replaced reply sentences, if it did

    @classmethod
    def of(cls, decision: Decision, reply: str, *, timings_s: Mapping[str, float],
           guarded: tuple[str, ...] = ()) -> Understanding:
        """The decision with its reply written (``timings_s`` replaces the decision's)."""
        fields = {f.name: getattr(decision, f.name) for f in dataclasses.fields(Decision)}
        return cls(**{**fields, "timings_s": timings_s}, reply=reply, guarded=guarded)


@dataclass(frozen=True)
class TimedUnit:
    """A phoneme or viseme and when it sounds, in seconds from the start of the audio."""

    start_s: float
    end_s: float
    symbol: str


@dataclass(frozen=True)
class Speech:
    """Stage 3a's result: the reply spoken in the avatar's voice, with a timeline for lip sync.

    ``visemes`` use the 15 Oculus/MPEG-4 viseme names (sil, PP, FF, TH, DD, kk, CH, SS, nn, RR, aa,
    E, ih, oh, ou); ``phonemes`` hold the engine's own symbols where it has them.
    """

    wav_path: Path
    sample_rate_hz: int
    duration_s: float
    text: str
    emotion: str  # coarse class the voice carries
    intensity: float  # 0..1
    voice: str  # "backend:voice"
    phonemes: tuple[TimedUnit, ...] = ()
    visemes: tuple[TimedUnit, ...] = ()


@dataclass(frozen=True)
class Video:
    """Stage 3b's result: the talking-head MP4 (H.264 + AAC)."""

    mp4_path: Path
    fps: float
    n_frames: int
    width: int
    height: int
    duration_s: float
    emotion: str  # coarse class on the face
