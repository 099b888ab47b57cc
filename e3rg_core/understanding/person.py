"""Saying a person's words back to them: the first person turned into the second ("my card got
declined" -> "your card got declined"). One place for the composed reply's restatement and the crisis
answer's reflection; each decides for itself which words are safe to say back."""

from __future__ import annotations

import re

_TURN = {"i": "you", "i'm": "you're", "i've": "you've", "i'd": "you'd", "i'll": "you'll", "me": "you",
         "my": "your", "mine": "yours", "myself": "yourself", "am": "are", "we": "you", "we're": "you're",
         "we've": "you've", "we'd": "you'd", "we'll": "you'll", "us": "you", "our": "your", "ours": "yours",
         "ourselves": "yourselves", "im": "you're", "ive": "you've"}
_WAS_AFTER = {"i", "we"}  # "I was" -> "you were"
_SECOND = re.compile(r"\b(?:you|your|you're|yours|yourself|u|ur)\b", re.IGNORECASE)
_FIRST = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in sorted(_TURN, key=len, reverse=True)) + r")\b",
                    re.IGNORECASE)


def speaks_to_listener(text: str) -> bool:
    """Does ``text`` already say "you"? Turned round, who is who would be muddled."""
    return _SECOND.search(text) is not None


def has_first_person(text: str) -> bool:
    """Does ``text`` say "I", "me", "my", "we"...: anything to turn?"""
    return _FIRST.search(text) is not None


def second_person(text: str) -> str:
    """``text`` with its first person turned into the second, word by word, keeping everything else
    (case, punctuation). "I was" / "we wasn't" agree ("you were", "you weren't"), also with one word
    between ("I just wasn't around" -> "you just weren't around"); "and me" reads "and you"."""
    words = text.split()
    lowered = [w.lower().strip(",;:.!?") for w in words]
    out = []
    for i, (word, low) in enumerate(zip(words, lowered)):
        tail = word[len(word.rstrip(",;:.!?")):]
        before = {lowered[i - 1]} if i else set()
        if i > 1 and lowered[i - 1] not in _TURN:
            before.add(lowered[i - 2])  # one word between: "i just was"
        if low in ("was", "wasn't") and before & _WAS_AFTER:
            new = "were" if low == "was" else "weren't"
        else:
            new = _TURN.get(low)
        if new is not None and i == 0 and word[:1].isupper():
            new = new.capitalize()  # the sentence's first word keeps its capital ("I" anywhere else does not)
        out.append((new + tail) if new is not None else word)
    return " ".join(out)
