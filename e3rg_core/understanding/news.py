"""How what a message reports went for the person, read from its meaning: good, bad or neither.

The emotion vote reads the conversation, and a feeling that belongs to it can outlast the news: a
neighbour who mowed the lawn while the person was laid up after an operation was read as anger
("That's so unfair."), a friend's visit after a break-up as disappointment. The reply's opening
answers the message, so before one is said its kind of news is checked against this reader, which
sees the message alone.

A class-balanced logistic regression (``class_head.py``) over all-mpnet-base-v2 embeddings of 1,918
messages written for e3rg (``data/news.json``: 660 single messages, and the person's turns of 320 short
conversations, each labelled as read in its conversation), fitted when the reader is built (about a
second; the messages' vectors ship in ``data/news_vectors``, written by ``python -m
e3rg_core.understanding.news``). The message's own vector is the one the emotion voter and the risk
detector embedded, so a turn costs no more embedding. Alone it is a weak reader (0.64 of the bench's
501 turns right, many of which need the conversation to judge); it stops an opening it is sure is the
wrong kind of news, gives bad news the vote met with no opening a gentle one (``openings.family``), and
helps the closing fit (docs/replies.md).
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from e3rg_core.errors import ConfigError
from e3rg_core.understanding.class_head import ClassHead, fit_class_head
from e3rg_core.understanding.safety.text import canonical

NEWS = ("good", "bad", "neither")
NEWS_VECTORS = "news_vectors"  # data/news_vectors/<model>.npz
HEAD_C = 1.0  # the head's regularisation: 1 and 4 read the bench's turns alike (0.60, 0.59)


def load_news() -> dict[str, tuple[str, ...]]:
    """The labelled messages shipped with the package, by kind of news."""
    raw = json.loads(resources.files("e3rg_core.understanding").joinpath("data/news.json").read_text("utf-8"))
    table = {kind: tuple(raw.get(kind, ())) for kind in NEWS}
    empty = [kind for kind, texts in table.items() if not texts]
    if empty:
        raise ConfigError(f"news.json: no messages for {empty}; it needs some of each of {', '.join(NEWS)}")
    return table


def news_texts() -> list[str]:
    """Every labelled message as the reader embeds it (canonical form), for the shipped vectors."""
    return [canonical(text) for texts in load_news().values() for text in texts]


class NewsReader:
    """Reads a message's kind of news with a sentence encoder (``embed(list[str]) -> unit rows``)."""

    def __init__(self, encoder: Any, *, c: float = HEAD_C) -> None:
        import numpy as np

        from e3rg_core.understanding.embedding import embed_with_shipped

        table = load_news()
        texts = [canonical(text) for kind in NEWS for text in table[kind]]
        classes = np.array([i for i, kind in enumerate(NEWS) for _ in table[kind]])
        self.encoder = encoder
        self.head: ClassHead = fit_class_head(embed_with_shipped(encoder, texts, NEWS_VECTORS), classes, len(NEWS), c=c)

    def read(self, text: str) -> dict[str, float]:
        """The probability of each kind of news in ``text``."""
        import numpy as np

        probs = np.exp(self.head.log_probs(self.encoder.embed([canonical(text)])))[0]
        return {kind: float(p) for kind, p in zip(NEWS, probs)}


@functools.lru_cache(maxsize=2)
def news_reader(encoder: Any) -> NewsReader:
    """The process's one reader for ``encoder`` (fitted once)."""
    return NewsReader(encoder)


if __name__ == "__main__":  # python -m e3rg_core.understanding.news [model]: after data/news.json changes
    import sys

    from e3rg_core.understanding.embedding import MPNET_NAME, sentence_encoder, write_shipped_vectors

    print(write_shipped_vectors(NEWS_VECTORS, sentence_encoder(sys.argv[1] if len(sys.argv) > 1 else MPNET_NAME),
                                news_texts()))
