"""The risk detector's data files, each read once: ``risk_bank.json`` (the expressions of risk and their
look-alikes, by category) and ``everyday.json`` (its own lines of everyday talk).

Read by the meaning layer (``meaning.load_bank``, which adds the ordinary messages; ``meaning.everyday_texts``)
and by ``text`` (the words that spaced-out letters are split into).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from e3rg_core.errors import ConfigError


@lru_cache(maxsize=1)
def bank_tables() -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """The file's (category, expression) pairs: risk, then safe, in file order."""
    raw = json.loads(resources.files("e3rg_core.understanding").joinpath("data/risk_bank.json").read_text("utf-8"))
    try:
        risk = tuple((c, t) for c, items in raw["risk"].items() for t in items)
        safe = tuple((c, t) for c, items in raw["safe"].items() for t in items)
    except (KeyError, AttributeError) as exc:
        raise ConfigError("risk_bank.json needs 'risk' and 'safe' tables of category -> expressions") from exc
    return risk, safe


@lru_cache(maxsize=1)
def everyday_lines() -> tuple[str, ...]:
    """``everyday.json``'s lines of everyday talk, as written, in file order (its "_about" left out)."""
    raw = json.loads(resources.files("e3rg_core.understanding").joinpath("data/everyday.json").read_text("utf-8"))
    try:
        return tuple(t for kind, items in raw.items() if not kind.startswith("_") for t in items)
    except (AttributeError, TypeError) as exc:
        raise ConfigError("everyday.json needs kinds of everyday talk -> lines") from exc
