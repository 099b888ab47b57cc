"""AvaMERG dialogues: the challenge's JSON read into frozen values, with the media each line has.

The file is a JSON list of conversations::

    [{"conversation_id": "00001",
      "speaker_profile":  {"age": "young", "gender": "female", "timbre": "high", "ID": 3},
      "listener_profile": {"age": "middle-aged", "gender": "female", "timbre": "mid", "ID": 17},
      "topic": "...",
      "turns": [{"turn_id": "0", "context": "...",
                 "dialogue_history": [{"index": 0, "role": "speaker", "utterance": "..."}],
                 "response": "the listener's gold reply",
                 "chain_of_empathy": {"event_scenario": "...", "speaker_emotion": "sad",
                                      "emotion_cause": "...", "goal_to_response": "..."}}]}]

Each utterance may have a clip ``dia{conversation_id}utt{index}_{ID}.wav`` / ``.mp4`` (``ID`` of the
speaker or the listener, by the line's role) in a media folder or one level below it (the challenge
ships ``audio_v5_0/`` and ``video_v5_0/``). A line without a clip is text-only.

Real data is untidy, and a few thousand conversations should not die on one of them. Tolerated and
counted in ``LoadReport`` (with a few examples each), never raised:

* a turn without ``chain_of_empathy`` (the public test split has none): its gold label is ``None``;
* a free-form label ("Worried", "frustration"): normalised to one of the 36 candidates;
* a label nothing matches ("bittersweet"): kept raw, gold label ``None``;
* profile attributes outside AvaMERG's vocabulary: ``None`` (see ``AGE_WORDS`` etc.);
* a conversation with no turns, a turn with no speaker line: skipped.

What is not AvaMERG at all (not JSON, not a list, a conversation without ``turns``, an utterance
without text) is an ``InputError`` naming the file, the place and what was expected.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from e3rg_core.emotions import normalize_label
from e3rg_core.errors import InputError
from e3rg_core.memory.profiles import AGES, GENDERS, TIMBRES
from e3rg_core.types import Utterance

logger = logging.getLogger(__name__)

#: the small AvaMERG-format sample shipped with e3rg (dialogues.json + media/)
SAMPLE_DIR = Path(__file__).resolve().parent / "sample"
MEDIA_SUFFIXES = (".wav", ".mp4")
EXAMPLES_PER_COUNT = 5  # examples kept per counter of the load report

# AvaMERG's profile vocabulary is the avatars' own (memory.profiles: AGES, GENDERS, TIMBRES), so the
# canonical words map to themselves. The other spellings are ones seen in re-exports and
# hand-written files; anything else maps to None and is counted, and the avatar is then matched on
# the attributes that are known.
AGE_WORDS: dict[str, str] = {
    **{a: a for a in AGES},
    "kid": "child", "children": "child",
    "youth": "young", "teen": "young", "teenager": "young", "young adult": "young",
    "middle aged": "middle-aged", "middle_aged": "middle-aged", "middleaged": "middle-aged",
    "middle-age": "middle-aged", "middle age": "middle-aged", "middle": "middle-aged", "adult": "middle-aged",
    "old": "elderly", "older": "elderly", "elder": "elderly", "senior": "elderly", "aged": "elderly",
}
GENDER_WORDS: dict[str, str] = {
    **{g: g for g in GENDERS},
    "m": "male", "man": "male", "boy": "male",
    "f": "female", "woman": "female", "girl": "female",
}
TIMBRE_WORDS: dict[str, str] = {
    **{t: t for t in TIMBRES},
    "medium": "mid", "middle": "mid", "mid-range": "mid", "normal": "mid",
    "high-pitched": "high", "bright": "high",
    "low-pitched": "low", "deep": "low",
}


@dataclass(frozen=True)
class Identity:
    """A speaker or listener profile, attributes in the avatars' vocabulary (``None``: unknown)."""

    id: str  # AvaMERG's ``ID`` as text ("" when absent); part of the media file names
    age: str | None
    gender: str | None
    timbre: str | None


@dataclass(frozen=True)
class Line:
    """One utterance of a turn's dialogue history, with its clips when the media folder has them."""

    index: int
    role: str  # "speaker" or "listener"
    text: str
    audio_path: Path | None = None
    video_path: Path | None = None


@dataclass(frozen=True)
class ChainOfEmpathy:
    event_scenario: str
    speaker_emotion: str  # as annotated (free-form)
    emotion_cause: str
    goal_to_response: str


@dataclass(frozen=True)
class Turn:
    """One turn: the dialogue so far (ending with the speaker's line to answer) and the gold reply."""

    turn_id: str
    context: str
    lines: tuple[Line, ...]
    response: str  # the listener's gold reply ("" when absent)
    chain: ChainOfEmpathy | None
    gold: str | None  # the speaker's emotion normalised to one of emotions.CANDIDATES; None: none/unknown

    @property
    def query(self) -> Line:
        """The speaker's line the listener answers: the last speaker line of the history."""
        return next(line for line in reversed(self.lines) if line.role == "speaker")

    @property
    def history(self) -> tuple[Utterance, ...]:
        """The lines before ``query``, as the pipeline's dialogue history."""
        end = max(i for i, line in enumerate(self.lines) if line.role == "speaker")
        return tuple(Utterance(line.role, line.text) for line in self.lines[:end])  # type: ignore[arg-type]


@dataclass(frozen=True)
class Conversation:
    id: str  # 5-digit text, as in the media names
    speaker: Identity
    listener: Identity
    topic: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class LoadReport:
    """What loading found: sizes, and what was tolerated (each count with a few examples)."""

    path: str
    media_dir: str | None
    conversations: int
    turns: int
    labelled_turns: int  # turns whose gold label is known
    counts: Mapping[str, int] = field(default_factory=dict)
    examples: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "media_dir": self.media_dir, "conversations": self.conversations,
                "turns": self.turns, "labelled_turns": self.labelled_turns, "counts": dict(self.counts),
                "examples": {k: list(v) for k, v in self.examples.items()}}


@dataclass(frozen=True)
class Dataset:
    conversations: tuple[Conversation, ...]
    report: LoadReport


#: the counters of LoadReport, all present (0 when nothing happened)
COUNTERS = (
    "missing_chain_of_empathy",  # turns with no chain_of_empathy (or no speaker_emotion in it)
    "normalised_labels",  # free-form gold labels mapped onto a candidate ("Worried" -> anxious)
    "unknown_labels",  # gold labels nothing matches: the turn has no gold label
    "unmapped_attributes",  # profile age/gender/timbre values outside the tables: None
    "missing_profile_id",  # a profile without ID: its lines can have no media
    "empty_conversations",  # conversations with no turns: skipped
    "turns_without_speaker",  # turns whose history has no speaker line: skipped
    "last_line_not_speaker",  # turns whose history ends with a listener line (the speaker's last line is used)
    "lines_with_audio",
    "lines_with_video",
    "queries_without_media",  # turns whose speaker line to answer has neither clip
)


class _Tally:
    def __init__(self, path: Path) -> None:
        self.counts = {name: 0 for name in COUNTERS}
        self.examples: dict[str, list[str]] = {}
        self._prefix = f"{path}: "

    def add(self, name: str, example: str | None = None) -> None:
        self.counts[name] += 1
        if example is not None:
            example = example.removeprefix(self._prefix)
            kept = self.examples.setdefault(name, [])
            if len(kept) < EXAMPLES_PER_COUNT:
                kept.append(example)


def _where(path: Path, ci: int, conv_id: str | None = None, ti: int | None = None, li: int | None = None) -> str:
    where = f"{path}: conversation #{ci}" + (f" ({conv_id})" if conv_id else "")
    if ti is not None:
        where += f", turn #{ti}"
    if li is not None:
        where += f", dialogue_history #{li}"
    return where


def _text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _attribute(value: Any, table: Mapping[str, str], what: str, tally: _Tally, where: str) -> str | None:
    if value is None:
        return None
    word = re.sub(r"\s+", " ", str(value).strip().lower())
    if word in table:
        return table[word]
    tally.add("unmapped_attributes", f"{where}: {what} {str(value)[:40]!r}")
    return None


def _identity(raw: Any, role: str, tally: _Tally, where: str) -> Identity:
    raw = raw if isinstance(raw, Mapping) else {}
    pid = raw.get("ID", raw.get("id"))
    if pid is None or isinstance(pid, bool) or not str(pid).strip():
        tally.add("missing_profile_id", f"{where}: {role}_profile")
        pid = ""
    where = f"{where} {role}_profile"
    return Identity(id=str(pid).strip(),
                    age=_attribute(raw.get("age"), AGE_WORDS, "age", tally, where),
                    gender=_attribute(raw.get("gender"), GENDER_WORDS, "gender", tally, where),
                    timbre=_attribute(raw.get("timbre"), TIMBRE_WORDS, "timbre", tally, where))


def _conversation_id(raw: Any, where: str) -> str:
    if isinstance(raw, bool) or raw is None:
        raise InputError(f"{where}: 'conversation_id' is missing; expected a 5-digit string like \"00001\"")
    if isinstance(raw, int):
        return f"{raw:05d}"  # AvaMERG's ids are zero-padded strings; the media names use them as written
    text = str(raw).strip()
    if not text or not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        raise InputError(f"{where}: 'conversation_id' = {str(raw)[:40]!r}; expected a 5-digit string like \"00001\"")
    return text


def _int(raw: Any, what: str, where: str) -> int:
    ok = (isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0) or (
        isinstance(raw, str) and re.fullmatch(r"[0-9]+", raw.strip()) is not None)
    if not ok:
        raise InputError(f"{where}: '{what}' = {str(raw)[:40]!r}; expected a non-negative integer")
    return int(raw)


class MediaIndex:
    """The clips in a media folder and its immediate subfolders, by file name (scanned once)."""

    def __init__(self, root: Path | None) -> None:
        self.root = Path(root) if root is not None else None
        self._files: dict[str, Path] = {}
        if self.root is None:
            return
        if not self.root.is_dir():
            raise InputError(f"media folder {self.root} does not exist; give the folder holding the "
                             "dia{conversation}utt{index}_{ID}.wav/.mp4 clips")
        folders = [self.root] + sorted(p for p in self.root.iterdir() if p.is_dir())
        for folder in folders:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_file() and entry.name.lower().endswith(MEDIA_SUFFIXES):
                        self._files.setdefault(entry.name, Path(entry.path))

    def __len__(self) -> int:
        return len(self._files)

    def find(self, conversation_id: str, index: int, profile_id: str, suffix: str) -> Path | None:
        """The clip ``dia{conversation_id}utt{index}_{profile_id}{suffix}``, or None."""
        if not profile_id:
            return None
        return self._files.get(media_name(conversation_id, index, profile_id, suffix))


def media_name(conversation_id: str, index: int, profile_id: str, suffix: str) -> str:
    """AvaMERG's name of an utterance's clip, e.g. ``dia00001utt2_16.wav``."""
    return f"dia{conversation_id}utt{index}_{profile_id}{suffix}"


def _label(coe: Any, tally: _Tally, where: str) -> tuple[ChainOfEmpathy | None, str | None]:
    if not isinstance(coe, Mapping) or not str(coe.get("speaker_emotion") or "").strip():
        tally.add("missing_chain_of_empathy", where)
        chain = ChainOfEmpathy(_text(coe.get("event_scenario")), "", _text(coe.get("emotion_cause")),
                               _text(coe.get("goal_to_response"))) if isinstance(coe, Mapping) else None
        return chain, None
    raw = str(coe["speaker_emotion"]).strip()
    chain = ChainOfEmpathy(_text(coe.get("event_scenario")), raw, _text(coe.get("emotion_cause")),
                           _text(coe.get("goal_to_response")))
    label = normalize_label(raw)
    if label is None:
        tally.add("unknown_labels", f"{where}: {raw[:60]!r}")
    elif label != raw.lower():
        tally.add("normalised_labels", f"{where}: {raw[:40]!r} -> {label}")
    return chain, label


def _lines(raw: Any, conv_id: str, speaker: Identity, listener: Identity, media: MediaIndex,
           tally: _Tally, where: str) -> tuple[Line, ...]:
    if not isinstance(raw, list):
        raise InputError(f"{where}: 'dialogue_history' must be a list of {{index, role, utterance}} objects")
    out = []
    for li, item in enumerate(raw):
        at = f"{where}, dialogue_history #{li}"
        if not isinstance(item, Mapping):
            raise InputError(f"{at}: expected an object with index, role and utterance")
        role = str(item.get("role", "")).strip().lower()
        if role not in ("speaker", "listener"):
            raise InputError(f"{at}: 'role' = {str(item.get('role'))[:40]!r}; expected speaker or listener")
        text = item.get("utterance")
        if not isinstance(text, str):
            raise InputError(f"{at}: 'utterance' must be a string")
        index = _int(item.get("index", li), "index", at)
        pid = (speaker if role == "speaker" else listener).id
        audio = media.find(conv_id, index, pid, ".wav")
        video = media.find(conv_id, index, pid, ".mp4")
        tally.counts["lines_with_audio"] += audio is not None
        tally.counts["lines_with_video"] += video is not None
        out.append(Line(index=index, role=role, text=" ".join(text.split()), audio_path=audio, video_path=video))
    return tuple(out)


def load_avamerg(path: Path, *, media_dir: Path | None = None) -> Dataset:
    """Read an AvaMERG dialogue file (and find each line's clips in ``media_dir``)."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"AvaMERG file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read AvaMERG file {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"AvaMERG file {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg}); expected a JSON list of conversations") from exc
    if not isinstance(raw, list):
        raise InputError(f"AvaMERG file {path} holds a JSON {type(raw).__name__}; expected a list of "
                         "conversations, each with conversation_id, speaker_profile, listener_profile and turns")
    media = MediaIndex(media_dir)
    tally = _Tally(path)
    conversations, n_turns, n_labelled = [], 0, 0
    seen: set[str] = set()
    for ci, conv in enumerate(raw):
        if not isinstance(conv, Mapping):
            raise InputError(f"{_where(path, ci)}: expected an object, found a JSON {type(conv).__name__}")
        conv_id = _conversation_id(conv.get("conversation_id"), _where(path, ci))
        where = _where(path, ci, conv_id)
        if conv_id in seen:
            raise InputError(f"{where}: conversation_id {conv_id!r} appears twice; ids must be unique")
        seen.add(conv_id)
        turns_raw = conv.get("turns")
        if not isinstance(turns_raw, list):
            raise InputError(f"{where}: 'turns' must be a list of turns")
        if not turns_raw:
            tally.add("empty_conversations", where)
            continue
        speaker = _identity(conv.get("speaker_profile"), "speaker", tally, where)
        listener = _identity(conv.get("listener_profile"), "listener", tally, where)
        turns = []
        turn_ids: set[str] = set()
        for ti, turn in enumerate(turns_raw):
            at = _where(path, ci, conv_id, ti)
            if not isinstance(turn, Mapping):
                raise InputError(f"{at}: expected an object with turn_id, dialogue_history and response")
            turn_id = str(_int(turn.get("turn_id", ti), "turn_id", at))
            if turn_id in turn_ids:
                raise InputError(f"{at}: turn_id {turn_id} appears twice in the conversation")
            turn_ids.add(turn_id)
            lines = _lines(turn.get("dialogue_history"), conv_id, speaker, listener, media, tally, at)
            if not any(line.role == "speaker" for line in lines):
                tally.add("turns_without_speaker", at)
                continue
            if lines[-1].role != "speaker":
                tally.add("last_line_not_speaker", at)
            chain, gold = _label(turn.get("chain_of_empathy"), tally, at)
            t = Turn(turn_id=turn_id, context=_text(turn.get("context")), lines=lines,
                     response=_text(turn.get("response")), chain=chain, gold=gold)
            if t.query.audio_path is None and t.query.video_path is None:
                tally.counts["queries_without_media"] += 1
            turns.append(t)
            n_labelled += gold is not None
        if not turns:
            tally.add("empty_conversations", where)
            continue
        n_turns += len(turns)
        conversations.append(Conversation(id=conv_id, speaker=speaker, listener=listener,
                                          topic=_text(conv.get("topic")), turns=tuple(turns)))
    report = LoadReport(path=str(path), media_dir=str(media_dir) if media_dir is not None else None,
                        conversations=len(conversations), turns=n_turns, labelled_turns=n_labelled,
                        counts=dict(tally.counts),
                        examples={k: tuple(v) for k, v in tally.examples.items()})
    for name in ("missing_chain_of_empathy", "unknown_labels", "unmapped_attributes", "empty_conversations",
                 "turns_without_speaker"):
        if tally.counts[name]:
            logger.info("%s: %d %s", path.name, tally.counts[name], name.replace("_", " "))
    return Dataset(conversations=tuple(conversations), report=report)

