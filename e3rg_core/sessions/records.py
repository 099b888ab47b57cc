"""The values a session store holds and hands back, with the checks applied before anything is written."""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, Mapping

from e3rg_core.emotions import CANDIDATES, COARSE
from e3rg_core.errors import InputError
from e3rg_core.memory.profiles import check_avatar_id

InputKind = Literal["text", "audio", "video"]
EmotionSource = Literal["predicted", "corrected"]

INPUT_KINDS: tuple[str, ...] = ("text", "audio", "video")
EMOTION_SOURCES: tuple[str, ...] = ("predicted", "corrected")
#: The media a turn may keep; each key is also the stored file's name (plus the source's suffix).
MEDIA_KEYS: tuple[str, ...] = ("user_audio", "user_video", "reply_audio", "reply_video")

MAX_TURNS = 500  # per session; a longer conversation starts a new session
MAX_TEXT_CHARS = 10_000  # per text field of a turn
MAX_DETAILS_CHARS = 200_000  # the JSON of TurnRecord.details
MAX_OWNER_CHARS = 200
MAX_TIMINGS = 64  # entries in TurnRecord.timings_s
TITLE_CHARS = 60

SESSION_ID = re.compile(r"[0-9a-f]{32}")
_KEY = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


@dataclass(frozen=True)
class TurnRecord:
    """What the pipeline produced for one turn, as the store keeps it."""

    user_text: str  # the typed text or the transcript
    input_kind: InputKind
    user_emotion: str  # fine label, one of emotions.CANDIDATES
    user_coarse: str  # one of emotions.COARSE
    confidence: float  # 0..1
    emotion_source: EmotionSource  # "corrected" when the user overrode the predicted emotion
    reply_text: str
    reply_emotion: str  # coarse class the avatar expressed
    reply_intensity: float  # 0..1
    avatar_id: str
    timings_s: Mapping[str, float] = field(default_factory=dict)  # stage -> seconds
    details: Mapping[str, Any] = field(default_factory=dict)  # JSON-serialisable extras: votes, cues...


@dataclass(frozen=True)
class SessionInfo:
    """One conversation's summary. Times are ISO-8601 UTC strings."""

    id: str  # 32 lowercase hex digits (uuid4().hex)
    avatar_id: str
    owner: str
    created_at: str
    updated_at: str  # the last turn, avatar change or creation
    n_turns: int
    title: str  # the first user text, at most 60 characters; "" before the first turn


@dataclass(frozen=True)
class StoredTurn:
    """One committed turn. ``media`` maps a ``MEDIA_KEYS`` key to the absolute path of the stored copy."""

    index: int  # 0-based position in the session
    created_at: str
    record: TurnRecord
    media: Mapping[str, Path]
    id: str = ""  # 32 hex digits; names the turn's media folder and stays fixed while the turn exists


@dataclass(frozen=True)
class Session:
    """A conversation and all its turns, oldest first."""

    info: SessionInfo
    turns: tuple[StoredTurn, ...]


def utc_now() -> str:
    """The current time as ISO-8601 UTC, fixed width (always microseconds), so text order is time order."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def check_session_id(session_id: str) -> str:
    """Return ``session_id`` if it is 32 lowercase hex digits, else raise ``InputError``."""
    if not isinstance(session_id, str) or not SESSION_ID.fullmatch(session_id):
        raise InputError(f"invalid session id {session_id!r}; a session id is 32 lowercase hex digits")
    return session_id


def check_owner(owner: str) -> str:
    if not isinstance(owner, str) or len(owner) > MAX_OWNER_CHARS:
        raise InputError(f"owner must be a string of at most {MAX_OWNER_CHARS} characters")
    return owner


def make_title(user_text: str) -> str:
    """The session title: the first user text on one line, cut to ``TITLE_CHARS`` characters."""
    text = " ".join(user_text.split())
    if len(text) <= TITLE_CHARS:
        return text
    return text[: TITLE_CHARS - 1].rstrip() + "…"


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"turn field {name!r} must be a string, not {type(value).__name__}")
    if len(value) > MAX_TEXT_CHARS:
        raise InputError(f"turn field {name!r} has {len(value)} characters; at most {MAX_TEXT_CHARS} are stored")
    return value


def _unit(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"turn field {name!r} must be a number in 0..1, not {value!r}")
    if not 0.0 <= value <= 1.0:
        raise InputError(f"turn field {name!r} = {value} is outside 0..1")
    return float(value)


def _choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InputError(f"turn field {name!r} = {value!r} is not allowed; one of {', '.join(allowed)}")
    return value


def check_record(record: TurnRecord) -> None:
    """Raise ``InputError`` naming the first field of ``record`` that cannot be stored."""
    if not isinstance(record, TurnRecord):
        raise InputError(f"expected a TurnRecord, not {type(record).__name__}")
    _text(record.user_text, "user_text")
    _text(record.reply_text, "reply_text")
    _choice(record.input_kind, "input_kind", INPUT_KINDS)
    _choice(record.emotion_source, "emotion_source", EMOTION_SOURCES)
    _choice(record.user_emotion, "user_emotion", CANDIDATES)
    _choice(record.user_coarse, "user_coarse", COARSE)
    _choice(record.reply_emotion, "reply_emotion", COARSE)
    _unit(record.confidence, "confidence")
    _unit(record.reply_intensity, "reply_intensity")
    check_avatar_id(record.avatar_id)
    if not isinstance(record.timings_s, Mapping) or len(record.timings_s) > MAX_TIMINGS:
        raise InputError(f"turn field 'timings_s' must be a mapping of at most {MAX_TIMINGS} stage names to seconds")
    for key, seconds in record.timings_s.items():
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise InputError(f"timings_s key {key!r} must be 1-64 characters of letters, digits and _.:-")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
                or seconds < 0:
            raise InputError(f"timings_s[{key!r}] must be a number of seconds >= 0, not {seconds!r}")
    details_json(record.details)


def details_json(details: Mapping[str, Any]) -> str:
    """``details`` as compact JSON; ``InputError`` if it is not a JSON object or is too large."""
    if not isinstance(details, Mapping):
        raise InputError(f"turn field 'details' must be a mapping, not {type(details).__name__}")
    try:
        text = json.dumps(details, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"turn field 'details' is not JSON-serialisable ({exc}); use str keys and str, number, bool, "
            "None, list and dict values"
        ) from exc
    if len(text) > MAX_DETAILS_CHARS:
        raise InputError(f"turn field 'details' takes {len(text)} characters as JSON; at most {MAX_DETAILS_CHARS}")
    return text


def record_to_dict(record: TurnRecord) -> dict[str, Any]:
    """A JSON-ready copy of ``record``."""
    data = asdict(record)
    data["timings_s"] = {k: float(v) for k, v in record.timings_s.items()}
    data["details"] = json.loads(details_json(record.details))
    return data


def info_to_dict(info: SessionInfo) -> dict[str, Any]:
    return asdict(info)
