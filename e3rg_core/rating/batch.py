"""Making a study from evaluation batch folders, one per system (the AvaMERG challenge's file naming).

A batch folder holds ``dia{conv_id}turn{turn_id}_{listenerID}_gen.{txt,wav,mp4}`` (reply text, voice,
talking-head video) per conversation turn, directly or in its ``generated/`` subfolder (the layout of
``python -m e3rg_core.eval --out``), and optionally ``items.jsonl``: one JSON object per turn with
``conversation_id`` and ``turn_id`` (or ``id`` = ``dia{conv_id}turn{turn_id}``) and the dialogue so far
as ``dialogue_history`` (AvaMERG: ``role`` + ``utterance``) or ``context`` (``role`` + ``text``). The
context is optional: a line without it, or one that cannot be read, is skipped with a warning. The
eval's own ``items.jsonl`` carries no dialogue: pass the AvaMERG dialogues file it ran on
(``dialogues=``) and each item shows its turn's lines up to the speaker's line being answered.

The study's items are the turns that every system's folder has complete (all three files); each item's
id is ``dia{conv_id}turn{turn_id}``, and its context comes from the first folder whose ``items.jsonl``
has it (the dialogues file, when given, comes first).
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
from pathlib import Path
from typing import Any, Mapping

from e3rg_core.errors import ConfigError, InputError
from e3rg_core.rating.study import Study
from e3rg_core.rating.study_file import DEFAULT_PREFERENCE_QUESTION, NAME, load_study
from e3rg_core.types import ROLES

logger = logging.getLogger(__name__)

BATCH_FILE = re.compile(r"dia(?P<conv>\d+)turn(?P<turn>\d+)_(?P<listener>[A-Za-z0-9-]+)_gen\.(?P<ext>txt|wav|mp4)")
ITEMS_FILE = "items.jsonl"
GENERATED_DIR = "generated"
_ROLE_ALIASES = {"speaker": "speaker", "user": "speaker", "listener": "listener", "assistant": "listener"}
DEFAULT_CONSENT = (
    "You will watch short videos of a talking avatar replying to a person and rate each reply. Your answers "
    "are stored with the rater id you give and the times you answered, nothing else about you. Taking part "
    "is voluntary: you may stop at any time, and you may ask the organiser to remove your answers. By "
    "continuing you agree to take part."
)
DEFAULT_INSTRUCTIONS = (
    "Read the conversation, then play every reply's video to the end. Rate each reply on every question; "
    "the description next to each score says what it means. Judge each reply on its own merits: the order "
    "and the letters of the replies mean nothing."
)


def study_from_batch(batch_dirs: Mapping[str, Path], out: Path, *, study_id: str | None = None,
                     title: str = "", preference: bool = False, dialogues: Path | None = None,
                     overwrite: bool = False) -> Study:
    """Write a ``study.toml`` comparing the systems of ``batch_dirs`` (name -> folder); load and return it.

    ``out`` is the study file, or a folder to write ``study.toml`` into; media paths in it are relative
    to it. ``preference`` adds an A/B question for every pair of systems; ``dialogues`` is an AvaMERG
    dialogues JSON to take each item's context from. A fresh random secret is
    written; an existing file is only replaced with ``overwrite=True`` (which changes the secret, hence
    the blind names and the raters' plans).
    """
    if not batch_dirs:
        raise ConfigError("study_from_batch needs at least one system: {name: batch folder}")
    out = Path(out).expanduser()
    if out.is_dir() or out.suffix.lower() != ".toml":
        out = out / "study.toml"
    out = out.resolve()
    if out.exists() and not overwrite:
        raise ConfigError(f"{out} exists; pass overwrite=True to replace it (new secret, new blind names)")
    for name in batch_dirs:
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ConfigError(f"system name {name!r} is not allowed; use letters, digits, . _ - (1-100 characters)")
    folders = {name: Path(folder).expanduser().resolve() for name, folder in batch_dirs.items()}
    found = {name: _scan(_media_folder(folder)) for name, folder in folders.items()}
    common = set.intersection(*(set(files) for files in found.values()))
    if not common:
        listing = ", ".join(f"{n}: {len(f)} turns" for n, f in found.items())
        raise ConfigError(f"no conversation turn is complete (txt, wav and mp4) in every batch folder ({listing})")
    for name, files in found.items():
        if len(files) > len(common):
            logger.warning("batch %s: %d turn(s) missing from another system are left out", name,
                           len(files) - len(common))
    contexts: dict[str, list[dict[str, str]]] = _read_dialogues(dialogues) if dialogues is not None else {}
    for folder in folders.values():
        for item_id, lines in _read_items(folder / ITEMS_FILE).items():
            contexts.setdefault(item_id, lines)
    keys = sorted(common, key=lambda k: (int(k[0]), int(k[1]), k))
    study_id = study_id or _slug(out.parent.name)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = _render(out.parent, study_id, title, list(batch_dirs), preference, keys, found, contexts)
    staged = out.with_name(f".{out.name}.tmp")
    staged.write_text(text, encoding="utf-8")
    os.replace(staged, out)
    return load_study(out)


def _media_folder(folder: Path) -> Path:
    """Where the generated files are: ``folder/generated`` when there is one, else ``folder``."""
    generated = folder / GENERATED_DIR
    return generated if generated.is_dir() else folder


def _scan(folder: Path) -> dict[tuple[str, str], dict[str, Path]]:
    """(conv_id, turn_id) -> {ext: path} for the turns complete in ``folder``."""
    if not folder.is_dir():
        raise ConfigError(f"batch folder {folder} does not exist")
    turns: dict[tuple[str, str], dict[str, Path]] = {}
    listeners: dict[tuple[str, str], str] = {}
    for path in sorted(folder.iterdir()):
        match = BATCH_FILE.fullmatch(path.name)
        if match is None or not path.is_file():
            continue
        key = (match["conv"], match["turn"])
        if listeners.setdefault(key, match["listener"]) != match["listener"]:
            raise ConfigError(f"{folder}: turn dia{key[0]}turn{key[1]} has files for two listener ids "
                              f"({listeners[key]} and {match['listener']}); keep one")
        turns.setdefault(key, {})[match["ext"]] = path
    return {key: files for key, files in turns.items() if set(files) == {"txt", "wav", "mp4"}}


def _read_items(path: Path) -> dict[str, list[dict[str, str]]]:
    """item id -> context lines from an ``items.jsonl`` (empty when there is none; the last line wins)."""
    if not path.is_file():
        return {}
    result = {}
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            item_id = record.get("id") or f"dia{record['conversation_id']}turn{record['turn_id']}"
            history = record.get("dialogue_history", record.get("context"))
            if not isinstance(history, list):
                continue  # no dialogue here (AvaMERG's "context" is a scene description)
            result[str(item_id)] = [_line(entry) for entry in history]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            logger.warning("%s:%d: no usable context (%s); the item is shown without it", path, number, exc)
    return result


def _read_dialogues(path: Path) -> dict[str, list[dict[str, str]]]:
    """item id -> the turn's dialogue up to the speaker's line being answered, from AvaMERG JSON."""
    from e3rg_core.eval.avamerg import load_avamerg  # the eval package's tolerant AvaMERG reader

    try:
        dataset = load_avamerg(Path(path))
    except InputError as exc:
        raise ConfigError(f"cannot take the context from {path}: {exc}") from exc
    result = {}
    for conversation in dataset.conversations:
        for turn in conversation.turns:
            lines = list(turn.lines)
            end = max((i for i, line in enumerate(lines) if line.role == "speaker"), default=len(lines) - 1)
            result[f"dia{conversation.id}turn{turn.turn_id}"] = [{"role": line.role, "text": line.text}
                                                                 for line in lines[:end + 1]]
    return result


def _line(entry: dict[str, Any]) -> dict[str, str]:
    role = _ROLE_ALIASES.get(str(entry["role"]).lower())
    if role is None:
        raise ValueError(f"role {entry['role']!r} is not one of {', '.join(ROLES)}")
    text = entry.get("utterance", entry.get("text"))
    if not isinstance(text, str):
        raise ValueError("a dialogue line needs its text as 'utterance' or 'text'")
    return {"role": role, "text": text}


def _render(base: Path, study_id: str, title: str, systems: list[str], preference: bool,
            keys: list[tuple[str, str]], found: dict[str, dict[tuple[str, str], dict[str, Path]]],
            contexts: dict[str, list[dict[str, str]]]) -> str:
    q = _toml_string
    lines = [
        f"# Made by e3rg_core.rating.study_from_batch from {len(systems)} batch folder(s); edit freely.",
        "[study]", f"id = {q(study_id)}", f"title = {q(title or study_id)}",
        f"secret = {q(secrets.token_hex(16))}  # never show it to raters",
        f"systems = [{', '.join(q(s) for s in systems)}]",
        f"consent = {q(DEFAULT_CONSENT)}", f"instructions = {q(DEFAULT_INSTRUCTIONS)}", "",
    ]
    if preference and len(systems) > 1:
        lines += ["[preference]", 'pairs = "all"', f"question = {q(DEFAULT_PREFERENCE_QUESTION)}", ""]
    for conv, turn in keys:
        item_id = f"dia{conv}turn{turn}"
        lines += ["[[items]]", f"id = {q(item_id)}", "context = ["]
        lines += [f"  {{ role = {q(c['role'])}, text = {q(c['text'])} }}," for c in contexts.get(item_id, [])]
        lines += ["]"]
        for system in systems:
            files = found[system][(conv, turn)]
            reply = files["txt"].read_text(encoding="utf-8").strip()
            lines += [f"[items.outputs.{q(system)}]", f"text = {q(reply)}",
                      f"video = {q(_relative(files['mp4'], base))}", f"audio = {q(_relative(files['wav'], base))}"]
        lines.append("")
    return "\n".join(lines)


def _relative(path: Path, base: Path) -> str:
    return Path(os.path.relpath(path, base)).as_posix()


def _toml_string(value: str) -> str:
    """``value`` as a TOML basic string (JSON's escapes are TOML's; TOML also forbids a raw DEL)."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007F")


def _slug(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._")[:100]
    return slug or "study"
