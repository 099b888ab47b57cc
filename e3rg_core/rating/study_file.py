"""Reading and checking ``study.toml``, the file that defines a human-evaluation study.

::

    [study]
    id = "e3rg-vs-baseline"            # letters, digits, . _ - (seeds every rater's plan: never change it)
    title = "Empathetic avatar replies"
    secret = "9f2c...e1"               # >= 16 characters, never shown to raters: keys the blind names
    systems = ["e3rg", "baseline"]
    consent = "I agree that my ratings ..."
    instructions = "Watch each reply, then rate it."

    [preference]                       # optional A/B question per item
    pairs = [["e3rg", "baseline"]]     # or "all" for every pair of systems
    question = "Which reply is the better empathetic response?"

    [[criteria]]                       # optional; without it the five defaults (criteria.py)
    id = "naturalness"                 # a default id alone takes the default's text and anchors
    [[criteria]]
    id = "warmth"
    name = "Warmth"
    question = "How warm is the reply?"
    anchors = ["Cold", "Cool", "Neutral", "Warm", "Very warm"]   # one per score 1..5

    [[items]]
    id = "dia00012turn3"
    context = [{ role = "speaker", text = "I lost my job today." }]
    [items.outputs.e3rg]
    text = "I'm so sorry ..."
    video = "e3rg/dia00012turn3_1_gen.mp4"     # relative to this file
    audio = "e3rg/dia00012turn3_1_gen.wav"     # optional
    [items.outputs.baseline]
    ...

    [[gold]]                           # attention checks: one stimulus with known right answers
    id = "check-1"
    position = 5                       # 1-based place in every rater's sequence (optional)
    instruction = "Attention check: choose 2 for every question."
    text = "..."
    video = "gold/check-1.mp4"
    expect_all = [2, 2]                # or expect = { consistency = [1, 2] }: inclusive ranges

Every problem is reported at once, each naming its field (``items[3].outputs.e3rg.video: ...``).
"""

from __future__ import annotations

import itertools
import re
import tomllib
from pathlib import Path
from typing import Any

from e3rg_core.errors import ConfigError
from e3rg_core.rating.criteria import CRITERION_ID, DEFAULTS_BY_ID, DEFAULT_CRITERIA, SCALE, Criterion, check_anchors
from e3rg_core.rating.study import GOLD_SYSTEM, GoldItem, Item, Output, Study
from e3rg_core.types import ROLES, Utterance

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
MIN_SECRET_CHARS = 16
MAX_ITEMS = 10_000
MAX_TEXT_CHARS = 5_000
VIDEO_SUFFIXES = (".mp4", ".webm")
AUDIO_SUFFIXES = (".wav", ".mp3", ".ogg", ".flac")

_KEYS = {
    "": {"study", "preference", "criteria", "items", "gold"},
    "study": {"id", "title", "secret", "systems", "consent", "instructions"},
    "preference": {"pairs", "question"},
    "criteria": {"id", "name", "question", "anchors"},
    "items": {"id", "context", "outputs"},
    "output": {"text", "video", "audio"},
    "gold": {"id", "context", "text", "video", "audio", "expect", "expect_all", "instruction", "position"},
    "context": {"role", "text"},
}
DEFAULT_PREFERENCE_QUESTION = "Which reply is the better response to the speaker, overall?"


def load_study(path: Path) -> Study:
    """Read and validate the study file ``path``; ``ConfigError`` lists every problem, each by field."""
    path = Path(path).expanduser().resolve()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"study file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the study file {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    return _Parser(path).study(data)


class _Parser:
    """Turns the TOML tables into a ``Study``, collecting every problem with the field it is in."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.base = path.parent
        self.errors: list[str] = []

    def fail(self, field: str, message: str) -> None:
        self.errors.append(f"{field}: {message}")

    def study(self, data: dict[str, Any]) -> Study:
        self.keys("", data, "")
        head = self.table(data, "study")
        study_id = self.name(head, "id", "study.id")
        secret = head.get("secret")
        if not isinstance(secret, str) or len(secret.strip()) < MIN_SECRET_CHARS:
            self.fail("study.secret", f"missing or shorter than {MIN_SECRET_CHARS} characters; use a random "
                      "string raters never see, e.g. python -c 'import secrets; print(secrets.token_hex(16))'")
        systems = self.systems(head)
        criteria = self.criteria(data.get("criteria"))
        pairs, question = self.preference(data.get("preference"), systems)
        items = self.items(data.get("items"), systems)
        gold = self.gold(data.get("gold"), {c.id for c in criteria}, len(items))
        seen: dict[str, str] = {}
        for where, item_id in [(f"items[{i}].id", x.id) for i, x in enumerate(items)] + \
                              [(f"gold[{i}].id", g.id) for i, g in enumerate(gold)]:
            if item_id in seen:
                self.fail(where, f"duplicate id {item_id!r} (also {seen[item_id]})")
            seen.setdefault(item_id, where)
        if self.errors:
            listing = "\n  ".join(self.errors)
            raise ConfigError(f"study file {self.path} has {len(self.errors)} problem(s):\n  {listing}")
        return Study(
            path=self.path, id=study_id, title=self.text(head, "title", "study.title"), secret=secret,
            systems=systems, criteria=criteria, items=tuple(items), gold=tuple(gold), pairs=pairs,
            preference_question=question, consent=self.text(head, "consent", "study.consent"),
            instructions=self.text(head, "instructions", "study.instructions"),
        )

    # --- sections -------------------------------------------------------------------------------

    def systems(self, head: dict[str, Any]) -> tuple[str, ...]:
        systems = head.get("systems")
        if not isinstance(systems, list) or not systems:
            self.fail("study.systems", "missing; list the compared systems' names, e.g. [\"e3rg\", \"baseline\"]")
            return ()
        good = []
        for i, name in enumerate(systems):
            if not isinstance(name, str) or not NAME.fullmatch(name):
                self.fail(f"study.systems[{i}]", f"{name!r} is not a name (letters, digits, . _ -; 1-100 chars)")
            elif name == GOLD_SYSTEM:
                self.fail(f"study.systems[{i}]", f"{GOLD_SYSTEM!r} is reserved for attention checks")
            elif name in good:
                self.fail(f"study.systems[{i}]", f"duplicate system {name!r}")
            else:
                good.append(name)
        return tuple(good)

    def criteria(self, tables: Any) -> tuple[Criterion, ...]:
        if tables is None:
            return DEFAULT_CRITERIA
        if not isinstance(tables, list) or not tables:
            self.fail("criteria", "must be a non-empty array of tables ([[criteria]]), or left out for the defaults")
            return DEFAULT_CRITERIA
        result: list[Criterion] = []
        for i, table in enumerate(tables):
            where = f"criteria[{i}]"
            if not isinstance(table, dict):
                self.fail(where, "must be a table with id, name, question, anchors")
                continue
            self.keys("criteria", table, where)
            cid = table.get("id")
            if not isinstance(cid, str) or not CRITERION_ID.fullmatch(cid):
                self.fail(f"{where}.id", f"{cid!r} is not a criterion id (lowercase letters, digits, _)")
                continue
            if cid in {c.id for c in result}:
                self.fail(f"{where}.id", f"duplicate criterion {cid!r}")
                continue
            default = DEFAULTS_BY_ID.get(cid)
            if default is not None and set(table) == {"id"}:
                result.append(default)
                continue
            name = self.text(table, "name", f"{where}.name", required=default is None) or (default and default.name)
            question = self.text(table, "question", f"{where}.question") or (default.question if default else "")
            anchors: Any = default.anchors if default is not None and "anchors" not in table else table.get("anchors")
            checked = check_anchors(anchors)
            if isinstance(checked, str):
                self.fail(f"{where}.anchors", checked)
                continue
            if name:
                result.append(Criterion(cid, name, question or name, checked))
        return tuple(result)

    def preference(self, table: Any, systems: tuple[str, ...]) -> tuple[tuple[tuple[str, str], ...], str]:
        if table is None:
            return (), ""
        if not isinstance(table, dict):
            self.fail("preference", "must be a table with pairs (and question)")
            return (), ""
        self.keys("preference", table, "preference")
        question = self.text(table, "question", "preference.question") or DEFAULT_PREFERENCE_QUESTION
        raw = table.get("pairs")
        if raw == "all":
            return tuple(itertools.combinations(systems, 2)), question
        if not isinstance(raw, list) or not raw:
            self.fail("preference.pairs", "must be \"all\" or a list of [system, system] pairs")
            return (), question
        pairs: list[tuple[str, str]] = []
        for i, pair in enumerate(raw):
            where = f"preference.pairs[{i}]"
            if not isinstance(pair, list) or len(pair) != 2:
                self.fail(where, f"must be two system names, not {pair!r}")
                continue
            unknown = [s for s in pair if s not in systems]
            if unknown:
                self.fail(where, f"unknown system {unknown[0]!r}; choose from {', '.join(systems)}")
            elif pair[0] == pair[1]:
                self.fail(where, "a system cannot be compared with itself")
            elif {tuple(pair), tuple(reversed(pair))} & set(pairs):
                self.fail(where, f"duplicate pair {pair!r}")
            else:
                pairs.append((pair[0], pair[1]))
        return tuple(pairs), question

    def items(self, tables: Any, systems: tuple[str, ...]) -> list[Item]:
        if not isinstance(tables, list) or not tables:
            self.fail("items", "missing; add at least one [[items]] table")
            return []
        if len(tables) > MAX_ITEMS:
            self.fail("items", f"{len(tables)} items; at most {MAX_ITEMS}")
            return []
        items = []
        for i, table in enumerate(tables):
            where = f"items[{i}]"
            if not isinstance(table, dict):
                self.fail(where, "must be a table")
                continue
            self.keys("items", table, where)
            item_id = self.name(table, "id", f"{where}.id")
            context = self.context(table.get("context"), f"{where}.context")
            outputs = table.get("outputs")
            if not isinstance(outputs, dict):
                self.fail(f"{where}.outputs", f"missing; add [items.outputs.<system>] for {', '.join(systems)}")
                continue
            parsed = {}
            for system, out in outputs.items():
                if system not in systems:
                    self.fail(f"{where}.outputs.{system}",
                              f"unknown system {system!r}; choose from {', '.join(systems)}")
                    continue
                output = self.output(out, f"{where}.outputs.{system}")
                if output is not None:
                    parsed[system] = output
            for system in systems:
                if system not in outputs:
                    self.fail(f"{where}.outputs.{system}", "missing: every item needs an output of every system")
            items.append(Item(item_id, context, {s: parsed[s] for s in systems if s in parsed}))
        return items

    def gold(self, tables: Any, criteria: set[str], n_items: int) -> list[GoldItem]:
        if tables is None:
            return []
        if not isinstance(tables, list):
            self.fail("gold", "must be an array of tables ([[gold]])")
            return []
        gold: list[GoldItem] = []
        positions: dict[int, str] = {}
        n_trials = n_items + len(tables)
        for i, table in enumerate(tables):
            where = f"gold[{i}]"
            if not isinstance(table, dict):
                self.fail(where, "must be a table")
                continue
            self.keys("gold", table, where)
            gold_id = self.name(table, "id", f"{where}.id")
            context = self.context(table.get("context"), f"{where}.context")
            output = self.output({k: table[k] for k in ("text", "video", "audio") if k in table}, where)
            expect = self.expect(table, criteria, where)
            position = table.get("position")
            if position is not None:
                if isinstance(position, bool) or not isinstance(position, int) or not 1 <= position <= n_trials:
                    self.fail(f"{where}.position", f"must be an integer in 1..{n_trials} (items plus checks), "
                              f"not {position!r}")
                    position = None
                elif position in positions:
                    self.fail(f"{where}.position", f"position {position} is already taken by {positions[position]}")
                    position = None
                else:
                    positions[position] = where
            if output is not None and expect:
                gold.append(GoldItem(gold_id, context, output, expect,
                                     self.text(table, "instruction", f"{where}.instruction"), position))
        return gold

    # --- fields ---------------------------------------------------------------------------------

    def expect(self, table: dict[str, Any], criteria: set[str], where: str) -> dict[str, tuple[int, int]]:
        if ("expect" in table) == ("expect_all" in table):
            self.fail(f"{where}.expect", "give exactly one of expect = { criterion = [low, high] } or "
                      "expect_all = [low, high]")
            return {}
        if "expect_all" in table:
            raw = {c: table["expect_all"] for c in sorted(criteria)}
            label = lambda c: f"{where}.expect_all"  # noqa: E731 - one message for every criterion
        else:
            raw = table["expect"]
            if not isinstance(raw, dict) or not raw:
                self.fail(f"{where}.expect", "must be a table of criterion = [low, high]")
                return {}
            label = lambda c: f"{where}.expect.{c}"  # noqa: E731
        result = {}
        for cid, bounds in raw.items():
            if cid not in criteria:
                self.fail(label(cid), f"unknown criterion {cid!r}; choose from {', '.join(sorted(criteria))}")
            elif (not isinstance(bounds, list) or len(bounds) != 2
                  or not all(isinstance(b, int) and not isinstance(b, bool) and b in SCALE for b in bounds)
                  or bounds[0] > bounds[1]):
                self.fail(label(cid), f"must be [low, high] with {SCALE[0]} <= low <= high <= {SCALE[-1]}, "
                          f"not {bounds!r}")
                return {}
            else:
                result[cid] = (bounds[0], bounds[1])
        return result

    def output(self, table: Any, where: str) -> Output | None:
        if not isinstance(table, dict):
            self.fail(where, "must be a table with text, video and (optionally) audio")
            return None
        if where.startswith("items"):
            self.keys("output", table, where)
        text = self.text(table, "text", f"{where}.text")
        video = self.media(table.get("video"), f"{where}.video", VIDEO_SUFFIXES, required=True)
        audio = self.media(table.get("audio"), f"{where}.audio", AUDIO_SUFFIXES, required=False)
        return None if video is None else Output(text, video, audio)

    def media(self, value: Any, where: str, suffixes: tuple[str, ...], *, required: bool) -> Path | None:
        if value is None:
            if required:
                self.fail(where, "missing; give the file's path (relative to the study file)")
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(where, f"must be a file path, not {value!r}")
            return None
        path = (self.base / value).resolve()
        if path.suffix.lower() not in suffixes:
            self.fail(where, f"{value!r} is not a {'/'.join(suffixes)} file")
            return None
        if not path.is_file():
            self.fail(where, f"file not found: {path}")
            return None
        return path

    def context(self, value: Any, where: str) -> tuple[Utterance, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            self.fail(where, "must be a list of { role, text } tables")
            return ()
        lines = []
        for i, line in enumerate(value):
            if not isinstance(line, dict):
                self.fail(f"{where}[{i}]", "must be a { role, text } table")
                continue
            self.keys("context", line, f"{where}[{i}]")
            if line.get("role") not in ROLES:
                self.fail(f"{where}[{i}].role", f"{line.get('role')!r}; choose from {', '.join(ROLES)}")
                continue
            lines.append(Utterance(line["role"], self.text(line, "text", f"{where}[{i}].text", required=True)))
        return tuple(lines)

    def table(self, data: dict[str, Any], key: str) -> dict[str, Any]:
        value = data.get(key)
        if not isinstance(value, dict):
            self.fail(key, f"missing; add a [{key}] table")
            return {}
        self.keys(key, value, key)
        return value

    def keys(self, kind: str, table: dict[str, Any], where: str) -> None:
        for key in table:
            if key not in _KEYS[kind]:
                field = f"{where}.{key}" if where else key
                self.fail(field, f"unknown key; allowed here: {', '.join(sorted(_KEYS[kind]))}")

    def name(self, table: dict[str, Any], key: str, where: str) -> str:
        value = table.get(key)
        if not isinstance(value, str) or not NAME.fullmatch(value):
            self.fail(where, f"{value!r} is not an id (letters, digits, . _ -; 1-100 characters, "
                      "starting with a letter or digit)")
            return ""
        return value

    def text(self, table: dict[str, Any], key: str, where: str, *, required: bool = False) -> str:
        value = table.get(key)
        if value is None:
            if required:
                self.fail(where, "missing")
            return ""
        if not isinstance(value, str):
            self.fail(where, f"must be text, not {type(value).__name__}")
            return ""
        if len(value) > MAX_TEXT_CHARS:
            self.fail(where, f"longer than {MAX_TEXT_CHARS} characters")
            return ""
        if required and not value.strip():
            self.fail(where, "is empty")
        return value.strip()
