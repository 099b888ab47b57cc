"""Ratings kept so that nothing is lost: an append-only SQLite log (WAL), one row per event.

Tables ``shown``, ``plays``, ``ratings`` and ``preferences`` only ever grow: triggers make SQLite itself
refuse any UPDATE or DELETE. A rater who changes their mind adds rows; the latest row (highest ``seq``)
per (rater, item, system, criterion) wins when reading. Every row carries the study id, so one file can
hold several studies.

Concurrency: every call opens its own connection with a 30 s busy timeout and writes in ``BEGIN
IMMEDIATE`` transactions, so threads and processes (server workers) may share one file; a submission's
rows are committed together or not at all. The file must be on a local disk (WAL needs shared memory).

The store is the only place that turns a UI token back into a system name.
"""

from __future__ import annotations

import logging
import sqlite3
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Callable, Mapping

from e3rg_core import sqlite_util
from e3rg_core.errors import ConfigError, InputError
from e3rg_core.rating.criteria import SCALE
from e3rg_core.rating.plan import PREFERENCE_CHOICES, SIDE_LABELS, pair_key, side_order, trial_order
from e3rg_core.rating.records import MEDIA, PreferenceRow, RatingRow, check_rater_id, utc_now
from e3rg_core.rating.study import GoldItem, Study

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
_TABLES = ("shown", "plays", "ratings", "preferences")
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS shown (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, study TEXT NOT NULL, rater TEXT NOT NULL, item TEXT NOT NULL,
    position INTEGER NOT NULL, at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS plays (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, study TEXT NOT NULL, rater TEXT NOT NULL, item TEXT NOT NULL,
    system TEXT NOT NULL, media TEXT NOT NULL CHECK (media IN ('audio', 'video')), at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ratings (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, study TEXT NOT NULL, rater TEXT NOT NULL, item TEXT NOT NULL,
    system TEXT NOT NULL, criterion TEXT NOT NULL,
    score INTEGER NOT NULL CHECK (score BETWEEN {SCALE[0]} AND {SCALE[-1]}),
    side INTEGER NOT NULL, shown_at TEXT NOT NULL, answered_at TEXT NOT NULL,
    audio_plays INTEGER NOT NULL, video_plays INTEGER NOT NULL, submission TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS preferences (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, study TEXT NOT NULL, rater TEXT NOT NULL, item TEXT NOT NULL,
    system_a TEXT NOT NULL, system_b TEXT NOT NULL, choice TEXT NOT NULL CHECK (choice IN ('a', 'b', 'none')),
    a_side INTEGER NOT NULL, b_side INTEGER NOT NULL, shown_at TEXT NOT NULL, answered_at TEXT NOT NULL,
    submission TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS shown_by_rater ON shown (study, rater, item);
CREATE INDEX IF NOT EXISTS plays_by_rater ON plays (study, rater, item, system);
CREATE INDEX IF NOT EXISTS ratings_by_rater ON ratings (study, rater, item);
CREATE INDEX IF NOT EXISTS preferences_by_rater ON preferences (study, rater, item);
""" + "".join(
    f"CREATE TRIGGER IF NOT EXISTS {t}_no_{verb} BEFORE {verb.upper()} ON {t} "
    f"BEGIN SELECT RAISE(ABORT, '{t} is append-only'); END;\n"
    for t in _TABLES for verb in ("update", "delete")
)


class RatingStore:
    """The rating log of ``study`` in the SQLite file ``db_path`` (created if missing).

    ``clock`` returns the current time as text (ISO-8601 UTC by default); tests pass a fixed one.
    """

    def __init__(self, db_path: Path, study: Study, *, clock: Callable[[], str] = utc_now) -> None:
        self.db_path = Path(db_path).expanduser().resolve()
        self.study = study
        self._clock = clock
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the folder of the rating database {self.db_path}: {exc}") from exc
        self._db = self._open()
        self._lock = self._db.lock

    # --- recording ------------------------------------------------------------------------------

    def record_shown(self, rater_id: str, item_id: str) -> str:
        """Log that ``item_id`` was put on ``rater_id``'s screen; return the time (the ratings' shown_at)."""
        check_rater_id(rater_id)
        position = trial_order(self.study, rater_id).index(self.study.item(item_id).id) + 1
        at = self._clock()
        with self._lock, self._transaction() as conn:
            conn.execute("INSERT INTO shown (study, rater, item, position, at) VALUES (?, ?, ?, ?, ?)",
                         (self.study.id, rater_id, item_id, position, at))
        return at

    def record_play(self, rater_id: str, item_id: str, token: str, media: str) -> int:
        """Log one play of a panel's ``media`` ("audio" or "video"); return that medium's plays so far."""
        check_rater_id(rater_id)
        system = self.study.resolve_token(item_id, token)
        if media not in MEDIA:
            raise InputError(f"media must be one of {', '.join(MEDIA)}, not {media!r}")
        with self._lock, self._transaction() as conn:
            conn.execute("INSERT INTO plays (study, rater, item, system, media, at) VALUES (?, ?, ?, ?, ?, ?)",
                         (self.study.id, rater_id, item_id, system, media, self._clock()))
            return self._plays(conn, rater_id, item_id)[system][media]

    def record_ratings(self, rater_id: str, item_id: str, scores: Mapping[str, Mapping[str, int]], *,
                       preferences: Mapping[str, str] | None = None) -> None:
        """Store one answered trial: a score per criterion for every panel, and the A/B choices.

        ``scores`` maps each panel's token to {criterion id: 1..5}; ``preferences`` maps each of the
        trial's ``PairQuestion.key`` to "left", "right" or "none". Every panel's video must have been
        played (``record_play``) first, else ``InputError("play the video before rating ...")``. All rows
        of the submission are committed together.
        """
        check_rater_id(rater_id)
        item = self.study.item(item_id)
        order = side_order(self.study, rater_id, item_id)
        systems = self._check_scores(item_id, order, scores)
        choices = self._check_preferences(item, order, preferences)
        submission = uuid.uuid4().hex
        with self._lock, self._transaction() as conn:
            plays = self._plays(conn, rater_id, item_id)
            unplayed = [SIDE_LABELS[order.index(s)] for s in order if plays[s]["video"] == 0]
            if unplayed:
                raise InputError(f"play the video before rating: reply {', '.join(unplayed)} "
                                 f"{'has' if len(unplayed) == 1 else 'have'} not been played yet")
            row = conn.execute("SELECT at FROM shown WHERE study = ? AND rater = ? AND item = ? "
                               "ORDER BY seq DESC LIMIT 1", (self.study.id, rater_id, item_id)).fetchone()
            shown_at, answered_at = (row["at"] if row else ""), self._clock()
            conn.executemany(
                "INSERT INTO ratings (study, rater, item, system, criterion, score, side, shown_at, answered_at, "
                "audio_plays, video_plays, submission) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(self.study.id, rater_id, item_id, system, criterion, score, order.index(system), shown_at,
                  answered_at, plays[system]["audio"], plays[system]["video"], submission)
                 for system, by_criterion in systems.items() for criterion, score in by_criterion.items()],
            )
            conn.executemany(
                "INSERT INTO preferences (study, rater, item, system_a, system_b, choice, a_side, b_side, "
                "shown_at, answered_at, submission) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(self.study.id, rater_id, item_id, a, b, choice, order.index(a), order.index(b), shown_at,
                  answered_at, submission) for (a, b), choice in choices.items()],
            )

    # --- reading --------------------------------------------------------------------------------

    def unplayed_videos(self, rater_id: str, item_id: str) -> tuple[str, ...]:
        """The tokens of ``item_id``'s panels whose video ``rater_id`` has not played yet."""
        check_rater_id(rater_id)
        with self._snapshot() as conn:
            plays = self._plays(conn, rater_id, item_id)
        return tuple(self.study.token(item_id, s) for s in side_order(self.study, rater_id, item_id)
                     if plays[s]["video"] == 0)

    def ratings_complete(self, rater_id: str, item_id: str) -> bool:
        """Whether ``rater_id`` has scored every system of ``item_id`` on every criterion (and every pair)."""
        return item_id in self._completed(check_rater_id(rater_id), (self.study.item(item_id).id,))

    def completed_items(self, rater_id: str) -> frozenset[str]:
        """The items ``rater_id`` has finished (give it to ``RaterPlan.next_trial`` to resume)."""
        return self._completed(check_rater_id(rater_id), None)

    def raters(self) -> tuple[str, ...]:
        """Everyone who has rated anything in this study, sorted."""
        with self._snapshot() as conn:
            rows = conn.execute("SELECT DISTINCT rater FROM ratings WHERE study = ? ORDER BY rater",
                                (self.study.id,)).fetchall()
        return tuple(r["rater"] for r in rows)

    def rows(self) -> tuple[RatingRow, ...]:
        """The latest rating per (rater, item, system, criterion), sorted by those four."""
        with self._snapshot() as conn:
            rows = conn.execute(
                "SELECT r.* FROM ratings r JOIN (SELECT MAX(seq) AS seq FROM ratings WHERE study = ? "
                "GROUP BY rater, item, system, criterion) latest ON r.seq = latest.seq "
                "ORDER BY r.rater, r.item, r.system, r.criterion", (self.study.id,)).fetchall()
        return tuple(RatingRow(r["rater"], r["item"], r["system"], r["criterion"], r["score"], r["side"],
                               r["shown_at"], r["answered_at"], r["audio_plays"], r["video_plays"]) for r in rows)

    def preference_rows(self) -> tuple[PreferenceRow, ...]:
        """The latest A/B choice per (rater, item, pair), sorted by rater, item, pair."""
        with self._snapshot() as conn:
            rows = conn.execute(
                "SELECT p.* FROM preferences p JOIN (SELECT MAX(seq) AS seq FROM preferences WHERE study = ? "
                "GROUP BY rater, item, system_a, system_b) latest ON p.seq = latest.seq "
                "ORDER BY p.rater, p.item, p.system_a, p.system_b", (self.study.id,)).fetchall()
        return tuple(PreferenceRow(r["rater"], r["item"], r["system_a"], r["system_b"], r["choice"], r["a_side"],
                                   r["b_side"], r["shown_at"], r["answered_at"]) for r in rows)

    def n_events(self) -> dict[str, int]:
        """How many rows each table holds for this study (every event ever logged)."""
        with self._snapshot() as conn:
            return {t: conn.execute(f"SELECT COUNT(*) FROM {t} WHERE study = ?", (self.study.id,)).fetchone()[0]
                    for t in _TABLES}

    def close(self) -> None:
        """Release the database; later calls raise ``ConfigError``."""
        self._db.close()

    def __enter__(self) -> RatingStore:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RatingStore({str(self.db_path)!r}, study={self.study.id!r})"

    # --- checks ---------------------------------------------------------------------------------

    def _check_scores(self, item_id: str, order: tuple[str, ...],
                      scores: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
        if not isinstance(scores, Mapping):
            raise InputError("scores must map each reply's token to {criterion: score}")
        by_system = {self.study.resolve_token(item_id, token): value for token, value in scores.items()}
        result: dict[str, dict[str, int]] = {}
        for system in order:
            label = SIDE_LABELS[order.index(system)]
            given = by_system.get(system)
            if not isinstance(given, Mapping):
                raise InputError(f"rate every reply: reply {label} has no scores")
            unknown = set(given) - set(self.study.criterion_ids)
            if unknown:
                raise InputError(f"unknown criterion {sorted(unknown)[0]!r}; choose from "
                                 f"{', '.join(self.study.criterion_ids)}")
            for criterion in self.study.criteria:
                score = given.get(criterion.id)
                if score is None:
                    raise InputError(f"rate every question: reply {label} has no score for {criterion.name}")
                if isinstance(score, bool) or not isinstance(score, int) or score not in SCALE:
                    raise InputError(f"reply {label}, {criterion.name}: the score must be a whole number "
                                     f"{SCALE[0]}..{SCALE[-1]}, not {score!r}")
            result[system] = {c: given[c] for c in self.study.criterion_ids}
        return result

    def _check_preferences(self, item: Any, order: tuple[str, ...],
                           preferences: Mapping[str, str] | None) -> dict[tuple[str, str], str]:
        pairs = () if isinstance(item, GoldItem) else self.study.pairs
        keys = {pair_key(self.study, item.id, a, b): (a, b) for a, b in pairs}
        given = dict(preferences or {})
        extra = set(given) - set(keys)
        if extra:
            raise InputError(f"preference key {sorted(extra)[0]!r} is not a question of item {item.id!r}")
        choices = {}
        for key, (a, b) in keys.items():
            answer = given.get(key)
            if answer not in PREFERENCE_CHOICES:
                raise InputError(f"answer the preference question with one of {', '.join(PREFERENCE_CHOICES)}, "
                                 f"not {answer!r}")
            if answer == "none":
                choices[(a, b)] = "none"
            else:
                a_left = order.index(a) < order.index(b)
                choices[(a, b)] = "a" if (answer == "left") == a_left else "b"
        return choices

    def _completed(self, rater_id: str, item_ids: tuple[str, ...] | None) -> frozenset[str]:
        with self._snapshot() as conn:
            rated = conn.execute("SELECT DISTINCT item, system, criterion FROM ratings WHERE study = ? AND rater = ?",
                                 (self.study.id, rater_id)).fetchall()
            chosen = conn.execute("SELECT DISTINCT item, system_a, system_b FROM preferences "
                                  "WHERE study = ? AND rater = ?", (self.study.id, rater_id)).fetchall()
        have = {(r["item"], r["system"], r["criterion"]) for r in rated}
        have_pairs = {(r["item"], r["system_a"], r["system_b"]) for r in chosen}
        candidates = item_ids if item_ids is not None else {r["item"] for r in rated}
        done = set()
        for item_id in candidates:
            try:
                item = self.study.item(item_id)
            except InputError:
                continue  # an item since removed from the study file
            needed = all((item_id, s, c) in have for s in self.study.systems_of(item_id)
                         for c in self.study.criterion_ids)
            pairs = () if isinstance(item, GoldItem) else self.study.pairs
            if needed and all((item_id, a, b) in have_pairs for a, b in pairs):
                done.add(item_id)
        return frozenset(done)

    def _plays(self, conn: sqlite3.Connection, rater_id: str, item_id: str) -> dict[str, dict[str, int]]:
        counts = {s: {m: 0 for m in MEDIA} for s in self.study.systems_of(item_id)}
        for row in conn.execute("SELECT system, media, COUNT(*) AS n FROM plays WHERE study = ? AND rater = ? "
                                "AND item = ? GROUP BY system, media", (self.study.id, rater_id, item_id)):
            if row["system"] in counts:
                counts[row["system"]][row["media"]] = row["n"]
        return counts

    # --- database -------------------------------------------------------------------------------

    def _open(self) -> sqlite_util.Database:
        """Open the file, creating the schema."""
        # FULL: a rating confirmed to the rater survives a power cut too, not only a crash.
        db = sqlite_util.Database(self.db_path, synchronous="FULL",
                                  closed_error=lambda: ConfigError(f"{self!r} is closed"))
        try:
            db.open(self._create_schema)
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"cannot open the rating database {self.db_path}: {exc}; check that the folder "
                              "is writable and on a local disk, and that the file is a rating database") from exc
        return db

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ConfigError(f"{self.db_path} was written by a newer e3rg (rating schema {version}, "
                              f"this one knows {SCHEMA_VERSION}); upgrade e3rg")
        if version == 0 and conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name NOT LIKE "
                                         "'sqlite_%' AND name NOT IN (?, ?, ?, ?)", _TABLES).fetchone()[0]:
            raise ConfigError(f"{self.db_path} is some other SQLite database; give the ratings a file of their own")
        for statement in _SCHEMA.split(";\n"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._db.transaction()

    def _snapshot(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._db.snapshot()
