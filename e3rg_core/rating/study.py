"""A human-evaluation study: items, systems, criteria, attention checks, and how its media are blinded.

A ``Study`` is loaded from a ``study.toml`` by ``load_study`` (see ``e3rg_core.rating.study_file`` for the
format). It knows the system behind every stimulus; what leaves it for the UI is blinded:

- every (item, system) pair has an opaque **token** (16 hex digits, HMAC-SHA256 of the study secret, the
  item and the system); the store maps tokens back to systems, the UI only ever holds tokens;
- every media file is served under a **neutral name** (32 hex digits of the same keyed hash, plus the
  suffix), so no system name appears in a ``<video src>`` URL or a downloaded file's name.

Without the secret neither can be traced back to a system, and a new secret gives new names.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from e3rg_core.errors import BackendFailed, InputError
from e3rg_core.rating.criteria import Criterion
from e3rg_core.types import Utterance

GOLD_SYSTEM = "gold"  # the system recorded for an attention-check item's single stimulus
MEDIA_KINDS: tuple[str, ...] = ("video", "audio")
TOKEN_HEX = 16
NAME_HEX = 32


@dataclass(frozen=True)
class Output:
    """One system's reply to an item: its text, its talking-head video and (optionally) its audio alone."""

    text: str
    video: Path
    audio: Path | None = None


@dataclass(frozen=True)
class Item:
    """A dialogue turn and every compared system's reply to it."""

    id: str
    context: tuple[Utterance, ...]
    outputs: dict[str, Output]


@dataclass(frozen=True)
class GoldItem:
    """An attention check: one stimulus whose right answers are known.

    ``expect`` maps criterion ids to the inclusive range ``(low, high)`` a careful rater gives, e.g. a
    deliberately mismatched video expects ``consistency`` in ``(1, 2)``; an ``instruction`` ("choose 2
    for this item") is shown to the rater above the stimulus. ``position`` is the 1-based place in every
    rater's sequence, or ``None`` for a place drawn per rater.
    """

    id: str
    context: tuple[Utterance, ...]
    output: Output
    expect: dict[str, tuple[int, int]]
    instruction: str = ""
    position: int | None = None

    def passed(self, scores: dict[str, int]) -> bool:
        """Whether every expected criterion's score lies in its range (an unrated one fails)."""
        return all(c in scores and low <= scores[c] <= high for c, (low, high) in self.expect.items())


@dataclass(frozen=True)
class Study:
    """A validated study; build it with ``load_study``. Paths are absolute."""

    path: Path
    id: str
    title: str
    secret: str = field(repr=False)
    systems: tuple[str, ...]
    criteria: tuple[Criterion, ...]
    items: tuple[Item, ...]
    gold: tuple[GoldItem, ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()  # A/B preference pairs, in study order
    preference_question: str = ""
    consent: str = ""
    instructions: str = ""

    def __post_init__(self) -> None:
        tokens: dict[str, tuple[str, str]] = {}
        names: dict[Path, str] = {}
        for item_id, system, output in self._stimuli():
            tokens[self.token(item_id, system)] = (item_id, system)
            for kind in MEDIA_KINDS:
                path = getattr(output, kind)
                path = None if path is None else Path(path).resolve()
                if path is not None and path not in names:
                    stem = _keyed_hex(self.secret, "media", item_id, system, kind)[:NAME_HEX]
                    names[path] = stem + path.suffix.lower()
        by_id: dict[str, Item | GoldItem] = {i.id: i for i in self.items}
        by_id.update({g.id: g for g in self.gold})
        object.__setattr__(self, "_tokens", tokens)
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_by_id", by_id)

    # --- lookups --------------------------------------------------------------------------------

    @property
    def criterion_ids(self) -> tuple[str, ...]:
        """The criteria's ids in display order."""
        return tuple(c.id for c in self.criteria)

    def item(self, item_id: str) -> Item | GoldItem:
        """The item or attention check ``item_id``; ``InputError`` if the study has none."""
        try:
            return self._by_id[item_id]  # type: ignore[attr-defined]
        except (KeyError, TypeError):
            raise InputError(f"study {self.id!r} has no item {item_id!r}") from None

    def systems_of(self, item_id: str) -> tuple[str, ...]:
        """The systems shown for ``item_id``: every study system, or ``(GOLD_SYSTEM,)`` for a check."""
        return (GOLD_SYSTEM,) if isinstance(self.item(item_id), GoldItem) else self.systems

    def output(self, item_id: str, system: str) -> Output:
        """The stimulus of ``system`` for ``item_id``."""
        item = self.item(item_id)
        if isinstance(item, GoldItem):
            if system != GOLD_SYSTEM:
                raise InputError(f"attention check {item_id!r} has only the system {GOLD_SYSTEM!r}")
            return item.output
        if system not in item.outputs:
            raise InputError(f"unknown system {system!r}; choose from {', '.join(self.systems)}")
        return item.outputs[system]

    # --- blinding -------------------------------------------------------------------------------

    def token(self, item_id: str, system: str) -> str:
        """The opaque token that stands for ``system``'s stimulus of ``item_id`` outside the store."""
        return _keyed_hex(self.secret, "token", item_id, system)[:TOKEN_HEX]

    def resolve_token(self, item_id: str, token: str) -> str:
        """The system behind ``token`` on ``item_id``; ``InputError`` for a token of another item or none."""
        found = self._tokens.get(token) if isinstance(token, str) else None  # type: ignore[attr-defined]
        if found is None or found[0] != item_id:
            raise InputError(f"token {token!r} is not a stimulus of item {item_id!r}")
        return found[1]

    def blind_name(self, path: Path) -> str:
        """The neutral file name ``path`` is served under: keyed hash of the secret, item, system, kind."""
        try:
            return self._names[Path(path).resolve()]  # type: ignore[attr-defined]
        except KeyError:
            raise InputError(f"{path} is not a media file of study {self.id!r}") from None

    def blind_copy(self, path: Path, dest_dir: Path) -> Path:
        """Copy a media file of the study into ``dest_dir`` under its neutral name; return the copy's path.

        The same file always gets the same name, so a copy already there is reused. The copy is written
        under a temporary name and renamed, so a concurrent reader never sees half a file.
        """
        dest = Path(dest_dir) / self.blind_name(path)
        source = Path(path).resolve()
        try:
            if dest.is_file() and dest.stat().st_size == source.stat().st_size:
                return dest
            dest.parent.mkdir(parents=True, exist_ok=True)
            staged = dest.with_name(f".tmp-{uuid.uuid4().hex}{dest.suffix}")
            try:
                shutil.copyfile(source, staged)
                os.replace(staged, dest)
            finally:
                staged.unlink(missing_ok=True)
        except FileNotFoundError as exc:
            raise InputError(f"media file {source} of study {self.id!r} is missing: {exc}") from exc
        except OSError as exc:
            raise BackendFailed(f"cannot copy {source} into {dest_dir}: {exc}") from exc
        return dest

    def _stimuli(self):
        for item in self.items:
            for system, output in item.outputs.items():
                yield item.id, system, output
        for gold in self.gold:
            yield gold.id, GOLD_SYSTEM, gold.output


def _keyed_hex(secret: str, *parts: str) -> str:
    """HMAC-SHA256 of ``parts`` (unit-separator joined) under ``secret``, as hex."""
    message = "\x1f".join(parts).encode("utf-8")
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def seed_bytes(study: Study, rater_id: str) -> bytes:
    """The per-rater seed: SHA-256 of the study secret, the study id and the rater id.

    The secret is part of it so that knowing the algorithm, the study id and the system names is not
    enough to work out which side a system is shown on.
    """
    return hashlib.sha256("\x1f".join((study.secret, study.id, rater_id)).encode("utf-8")).digest()
