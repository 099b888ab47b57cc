"""Frozen values that cross stage boundaries.

The dialogue roles follow AvaMERG: the *speaker* is the person talking to e3rg (the user), the
*listener* is the avatar that answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Mapping

Role = Literal["speaker", "listener"]
ROLES: tuple[str, ...] = ("speaker", "listener")


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


@dataclass(frozen=True)
class EmotionVote:
    """One predictor's answer about the user's emotion."""

    voter: str  # profile name, e.g. "qwen1.5b" or "minilm@3shot"
    label: str  # one of emotions.CANDIDATES
    raw: str  # what the predictor produced before validation
    valid: bool  # False when the raw answer matched no label and the fallback was used
    seconds: float
    scores: Mapping[str, float] = field(default_factory=dict)  # label -> probability, if known


RiskLevel = Literal["none", "care", "check", "crisis"]


@dataclass(frozen=True)
class RiskAssessment:
    """The safety check of a user's turn: does it signal a risk of suicide or self-harm?

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

    def as_dict(self) -> dict[str, object]:
        """The assessment as plain JSON values (sessions, exports, the API)."""
        return {"level": self.level, "category": self.category, "sources": list(self.sources),
                "evidence": self.evidence, "score": self.score, "judged": self.judged}


@dataclass(frozen=True)
class Understanding:
    """Stage 1's result: the user's emotion and the avatar's empathetic reply."""

    emotion: str  # fine label, one of emotions.CANDIDATES
    coarse: str  # emotions.COARSE class under the configured map
    intensity: float  # 0..1, from the emotion wheel
    distribution: Mapping[str, float]  # fine label -> share of the votes, sums to 1
    coarse_distribution: Mapping[str, float]  # coarse class -> share of the votes, sums to 1
    confidence: float  # share of the winning coarse class, 0..1
    votes: tuple[EmotionVote, ...]
    reply: str
    reply_emotion: str  # coarse class the avatar should express while replying
    reply_intensity: float  # 0..1
    risk: RiskAssessment = field(default_factory=RiskAssessment)
    timings_s: Mapping[str, float] = field(default_factory=dict)
    guarded: tuple[str, ...] = ()  # why the output guard replaced reply sentences, if it did

    @property
    def crisis(self) -> bool:
        """This message signals a risk of suicide or self-harm: the reply is the crisis response."""
        return self.risk.level == "crisis"


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
