"""Cut an LLM's reply into clean sentences as its tokens arrive, so speech can start on the first.

``ReplySentences`` is fed text pieces (``feed``) and hands back every sentence that is certainly
finished; ``close`` returns the rest. The cleaning is the one a whole reply gets
(``clean_reply`` is this class run over the whole text), so a streamed reply and the same reply
answered at once read exactly alike:

* a role prefix ("Listener:", "Reply:", "Assistant's reply:") is dropped, and the reply ends where
  the model starts writing the other speaker's line ("\\nSpeaker:");
* white space, line breaks included, collapses to single spaces;
* wrapping quotes are removed;
* a last sentence cut off by the token cap is dropped (unless it is the only text).

A sentence ends at ``.``, ``!``, ``?`` or ``…`` (with any closing quotes or brackets) followed by
white space, except after a common abbreviation ("Dr.", "e.g.") or a single initial.

With ``first_clause_words`` the first piece may be a clause: it ends at the first ``,``, ``;`` or
``:`` followed by white space once it has that many words, so a long first sentence starts being
spoken sooner. The pieces still join into the same text.
"""

from __future__ import annotations

import re

_PREFIX = re.compile(r"^\s*(?:listener|reply|response|assistant)\s*(?:'s reply)?\s*:\s*", re.IGNORECASE)
_OTHER_SPEAKER = "\nSpeaker:"
_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)")
_CLAUSE_END = re.compile(r"[,;:](?=\s)")
_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "st", "vs", "etc", "e.g", "i.e", "prof", "sr", "jr"}
_PAIRS = {"\"": "\"", "'": "'", "“": "”", "‘": "’"}  # opening quote -> closing quote
_FINAL = ".!?…\"'”)"


class ReplySentences:
    """Incremental sentence splitter and cleaner for one reply."""

    def __init__(self, *, first_clause_words: int = 0) -> None:
        self._raw = ""
        self._emitted = 0  # characters of the cleaned body already handed out
        self._count = 0  # sentences handed out (a first clause is not one)
        self._clause_words = int(first_clause_words)  # 0: no clause cut (or it was made)
        self._quote = ""  # the quote the reply opened with (dropped), if any
        self.stopped = False  # the model began the other speaker's line: nothing more belongs to the reply

    def _body(self) -> str:
        """The cleaned reply so far."""
        raw = self._raw
        if _OTHER_SPEAKER in raw:
            raw = raw.split(_OTHER_SPEAKER)[0]
            self.stopped = True
        # a role prefix holds no sentence end, so nothing is handed out before it is complete
        body = " ".join(_PREFIX.sub("", raw, count=1).split())
        if body[:1] in _PAIRS:
            self._quote = body[0]
            body = body[1:].lstrip()
        return body

    def feed(self, piece: str) -> list[str]:
        """Add a piece of the model's text; return the sentences it completed."""
        if self.stopped:
            return []
        self._raw += piece
        body = self._body()
        if self.stopped:  # a "\nSpeaker:" ended the reply here: ``close`` hands out the rest
            return []
        # white space after the end is needed to know a sentence is done; a trailing space was
        # collapsed away by _body, so look at the raw text's last character
        if self._raw[-1:].isspace():
            body += " "
        out = self._first_clause(body)
        for match in _END.finditer(body, self._emitted):
            if _abbreviation(body, match.start()):
                continue
            sentence = self._unquoted(body[self._emitted: match.end()].strip())
            if sentence:
                out.append(sentence)
                self._count += 1
            self._emitted = match.end()
        return out

    def close(self) -> list[str]:
        """The end of the model's text: the rest, cleaned (dropped if a sentence was cut off)."""
        rest = self._unquoted(self._body()[self._emitted:].strip())
        if not rest:
            return []
        if rest[-1] not in _FINAL and self._count:
            return []  # cut off by the token cap
        self._count += 1
        return [rest]

    def _first_clause(self, body: str) -> list[str]:
        """The first piece cut at a clause, if it has enough words there before its sentence ends."""
        if not self._clause_words or self._emitted:
            return []
        sentence_end = next((m.end() for m in _END.finditer(body) if not _abbreviation(body, m.start())), len(body))
        for match in _CLAUSE_END.finditer(body, 0, sentence_end):
            clause = body[: match.end()]
            if len(clause.split()) >= self._clause_words:
                self._clause_words = 0
                self._emitted = match.end()
                return [clause.strip()]
        return []

    def _unquoted(self, sentence: str) -> str:
        """Without the closing half of the quotes the reply was wrapped in."""
        close = _PAIRS.get(self._quote)
        if close and sentence.endswith(close) and (close == "'" or sentence.count(close) > sentence.count(self._quote)
                                                   or (close == self._quote and sentence.count(close) % 2)):
            return sentence[:-1].rstrip()
        return sentence


def _abbreviation(body: str, end: int) -> bool:
    """Whether the full stop at ``end`` closes an abbreviation or an initial, not a sentence."""
    if body[end] != ".":
        return False
    word = re.search(r"([\w.]+)$", body[:end])
    if word is None:
        return False
    token = word.group(1).lower()
    return token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha() and word.group(1).isupper())


def clean_reply(text: str) -> str:
    """A whole reply, cleaned as a stream of it would be."""
    splitter = ReplySentences()
    return " ".join(splitter.feed(text) + splitter.close())
