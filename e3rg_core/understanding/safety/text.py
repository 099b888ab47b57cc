"""Undo the ways people hide or bend words about self-harm, so patterns and embeddings read them.

``canonical`` lower-cases, joins letters typed apart ("k i l l", "s.u.i.c.i.d.e"), turns leetspeak
inside words ("k1ll", "su1c1d3") and a few emoji into letters or words, spells out the slang of online
communities ("kms", "unalive", "sewerslide", "ctb") and mends common misspellings of the key words.
Numbers that stand alone ("30 pills") are left as they are.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from functools import lru_cache
from typing import Iterator, Sequence

from e3rg_core.understanding.safety.bank import bank_tables

MAX_CHARS = 20_000  # longer text is cut: detection reads the start and the end (see ``clip``)

_EMOJI = {
    "\U0001faa6": " grave ",  # headstone
    "\u26b0": " coffin ",
    "\U0001f48a": " pills ",
    "\U0001faa2": " rope ",  # knot
    "\U0001f52a": " cut ",
    "\U0001f5e1": " knife ",
    "\U0001fa78": " blood ",
    "\U0001f52b": " gun ",
    "\U0001f309": " bridge ",
}
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i",
                       "|": "l"})
# whole words or phrases of slang, after lower-casing and joining
_SLANG = (
    (r"\bno1\b", "no one"),
    (r"\bwnt\b", "want"),
    (r"\b2 (die|live|be|end|go|sleep|do)\b", r"to \1"),
    (r"\bkms\b", "kill myself"),
    (r"\bkys\b", "kill yourself"),
    (r"\bun-?alive\b", "kill"),
    (r"\bun-?aliving\b", "killing"),
    (r"\bun-?alived\b", "killed"),
    (r"\bself[- ]?delet(e|ing|ed)\b", r"kill myself"),
    (r"\bsewer\s*slide\b", "suicide"),
    (r"\bsui\b", "suicide"),
    (r"\bctb\b", "end my life"),
    (r"\bcatch(ing)? the bus\b(?= (?:for good|soon|tonight|forever|early))", "end my life"),
    (r"\bsh\b(?= (?:again|relapse|scars?|urges?|cuts?))", "self-harm"),
    (r"\bwanna\b", "want to"),
    (r"\bgonna\b", "going to"),
    (r"\bgotta\b", "got to"),
    (r"\bim\b", "i'm"),
    (r"\bdont\b", "don't"),
    (r"\bcant\b", "can't"),
    (r"\bwont\b", "won't"),
    (r"\bu\b", "you"),
    (r"\bur\b", "your"),
    (r"\bmyslef\b|\bmyselfe?\b|\bmy self\b", "myself"),
    (r"\bsuicidal+\b|\bsucidal\b|\bsuisidal\b", "suicidal"),
    (r"\bsuic[a-z]{0,2}de\b|\bsuiside\b|\bsucide\b|\bsuicid\b", "suicide"),
    (r"\boverdo[sz]e?\b|\bodd?'?ing\b|\bod\b(?= on)", "overdose"),
    (r"\bkil+\b", "kill"),
    (r"\bdi+e+\b", "die"),
)
_SLANG_COMPILED = tuple((re.compile(p), r) for p, r in _SLANG)
_SPACED = re.compile(r"\b(?:[a-z][\s.\-_*]{1,3}){2,}[a-z]\b")  # k i l l, s.u.i.c.i.d.e, d-i-e
# Each match starts where a run of letters does (a match inside a run could start at its beginning as well),
# which keeps a long run without digits from being rescanned from every letter (quadratic time).
_MIXED = re.compile(r"(?<![a-z])(?:[a-z]*[0-9@$!|][a-z0-9@$!|]*[a-z][a-z0-9@$!|]*|[a-z]+[0-9@$][a-z0-9@$]*)")
_STARRED = re.compile(r"\b([a-z]+)[*#]+([a-z]+)\b")  # su*cide, k*ll: one hidden letter guessed below
_STARRED_WORDS = {("su", "cide"): "suicide", ("k", "ll"): "kill", ("d", "e"): "die", ("s", "icide"): "suicide",
                  ("sui", "ide"): "suicide", ("ki", "l"): "kill"}
_SPACES = re.compile(r"\s+")


def clip(text: str) -> str:
    """At most ``MAX_CHARS``: the start and the end of an enormous message (where a signal most often is)."""
    if len(text) <= MAX_CHARS:
        return text
    half = MAX_CHARS // 2
    return text[:half] + " … " + text[-half:]


@lru_cache(maxsize=1)
def _word_costs() -> dict[str, float]:
    """Each word of the risk bank (both sides: the words people use about risk and its look-alikes) with
    its cost, -log of its share of the bank's words: what ``_segment`` splits joined letters into."""
    counts = Counter(word for table in bank_tables() for _, line in table for word in re.findall(r"[a-z]+", line.lower()))
    total = sum(counts.values())
    return {word: math.log(total / n) for word, n in counts.items() if len(word) > 1 or word in ("i", "a")}


def _segment(letters: str) -> str:
    """Letters typed apart with one space between every letter ("i w a n t t o d i e") joined into words
    ("i want to die"): the cheapest split into the bank's words, or the letters joined as one word when
    they are a word already or no split covers them."""
    costs = _word_costs()
    if len(letters) < 6 or letters in costs or len(letters) > 60:
        return letters
    best: list[tuple[float, int]] = [(0.0, 0)] + [(math.inf, 0)] * len(letters)
    for end in range(1, len(letters) + 1):
        for start in range(max(0, end - 18), end):
            cost = costs.get(letters[start:end])
            if cost is not None and best[start][0] + cost < best[end][0]:
                best[end] = (best[start][0] + cost, start)
    if math.isinf(best[-1][0]):
        return letters
    words, end = [], len(letters)
    while end > 0:
        start = best[end][1]
        words.append(letters[start:end])
        end = start
    return " ".join(reversed(words))


def _join_spaced(match: re.Match[str]) -> str:
    letters = re.sub(r"[\s.\-_*]", "", match.group(0))
    # "k i l l  m y s e l f": two spaces or more between letters was a word break
    words = re.split(r"(?:\s{2,}|\s*/\s*)", match.group(0))
    if len(words) > 1:
        return " ".join(re.sub(r"[\s.\-_*]", "", w) for w in words if w.strip())
    return _segment(letters)


def _unleet(match: re.Match[str]) -> str:
    word = match.group(0)
    if word.isdigit() or re.fullmatch(r"\d+(?:st|nd|rd|th|s|am|pm|k|mg|ml|kg|km|h|x)", word):
        return word  # a number, an ordinal, a dose or an hour: not leetspeak
    return word.translate(_LEET)


def canonical(text: str) -> str:
    """``text`` lower-cased, with spaced-out letters, leetspeak, emoji and slang turned into plain words."""
    text = unicodedata.normalize("NFKC", clip(str(text)))
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    for emoji, word in _EMOJI.items():
        text = text.replace(emoji, word)
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Cc", "Mn") or ch in "\n\t")
    text = text.lower()
    text = _SPACED.sub(_join_spaced, text)
    text = _MIXED.sub(_unleet, text)
    text = _STARRED.sub(lambda m: _STARRED_WORDS.get((m.group(1), m.group(2)), m.group(0)), text)
    for pattern, replacement in _SLANG_COMPILED:
        text = pattern.sub(replacement, text)
    return _SPACES.sub(" ", text).strip()


#: The words of thanks, as an alternation for a pattern: the detector's thanks for help and the openings' thanks to
#: the avatar read the same words.
THANKS_WORDS = r"thanks|thank you|thank u|thx|ty|cheers"


def split_clauses(text: str, clauses: re.Pattern[str]) -> list[str]:
    """The clauses of ``text``, split by ``clauses``, stripped, empty ones left out."""
    return [clause.strip() for clause in clauses.split(text) if clause.strip()]


def matches_in(clauses: Sequence[str],
               patterns: Sequence[tuple[str, re.Pattern[str]]]) -> Iterator[tuple[int, str, re.Match[str]]]:
    """``(index, name, match)`` for each of ``patterns`` (name, compiled) found in each of ``clauses``, clause by
    clause and pattern by pattern (a rule may read the clause before the one matched)."""
    for at, clause in enumerate(clauses):
        for name, pattern in patterns:
            found = pattern.search(clause)
            if found is not None:
                yield at, name, found


def clause_matches(text: str, clauses: re.Pattern[str],
                   patterns: Sequence[tuple[str, re.Pattern[str]]]) -> Iterator[tuple[str, str, re.Match[str]]]:
    """``(clause, name, match)`` for each of ``patterns`` (name, compiled) found in each clause of ``text``
    (split by ``clauses``, stripped, empty ones skipped), clause by clause and pattern by pattern: the
    pattern layers read a message this way and keep the first match their own rules accept."""
    split = split_clauses(text, clauses)
    for at, name, found in matches_in(split, patterns):
        yield split[at], name, found
