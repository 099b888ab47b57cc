"""The meaning layer of the risk detector: a message compared by sentence embeddings with expressions
of risk and with harmless look-alikes, both written for e3rg (``data/risk_bank.json``).

The whole message scores the mean cosine similarity of its ``k`` nearest risk expressions and of
its ``k`` nearest safe ones; a long message (``LONG_PIECES`` sentences or more) scores the average of
the whole and its riskiest sentence, so a signal in one sentence is not lost in the rest. On the dev
set, reading every message's riskiest sentence raised the false alarms by half for no gain in recall. The result gives
the margin ``risk_sim - safe_sim`` and ``risk_sim`` alone, so a caller can ask both "close to risk at
all?" and "closer to risk than to its look-alikes?", and ``probe``: a logistic regression on the raw
embedding, fitted from the same bank when the scorer is built, that reads the direction separating risk
from everything safe rather than the three nearest neighbours (on the dev sets it tells ordinary news
near the bank's wording, a birthday trip or a question to the avatar, from risk better than the margin).
The detector's thresholds read one ``score``: the margin moved by ``PROBE_WEIGHT`` of the probe's log-odds.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

from e3rg_core.errors import ConfigError
from e3rg_core.understanding.safety.bank import bank_tables, everyday_lines
from e3rg_core.understanding.safety.text import canonical

KEPT_SCORES = 2048  # texts whose scores a scorer keeps (the latest)
MAX_PIECES = 48
LONG_PIECES = 4  # a message of this many sentences or more is also read sentence by sentence  # sentences of one message that are embedded; an enormous message keeps its start and end
_SENTENCE = re.compile(r"(?<=[.!?…])\s+|\n+|;\s+")


@dataclass(frozen=True)
class Bank:
    """Expressions by category: ``risk`` (what risk sounds like) and ``safe`` (its harmless look-alikes)."""

    risk: tuple[tuple[str, str], ...]  # (category, expression)
    safe: tuple[tuple[str, str], ...]


@lru_cache(maxsize=1)
def load_bank() -> Bank:
    """The expressions shipped with the package: ``risk_bank.json``, with the emotion prototypes and the
    worked examples on the safe side (ordinary messages in every emotion; without them a third of
    ordinary messages came closer to risk than to the look-alikes, measured on the emotion dev set)."""
    from e3rg_core.understanding.embedding import load_prototypes
    from e3rg_core.understanding.prompts import example_pool

    risk, safe = bank_tables()
    ordinary = [u for entry in load_prototypes().values() for u in entry.utterances] + [e.text for e in example_pool()]
    safe += tuple(("ordinary", t) for t in ordinary)
    if not risk or not safe:
        raise ConfigError("risk_bank.json has no risk or no safe expressions")
    return Bank(risk, safe)


def bank_texts(bank: Bank) -> list[str]:
    """The bank's texts as they are embedded: risk expressions first, then the safe side, canonical."""
    return [canonical(t) for _, t in bank.risk] + [canonical(t) for _, t in bank.safe]


@lru_cache(maxsize=4)
def _bank_vectors(encoder: Any, bank: Bank) -> tuple[Any, Any]:
    """The bank's embeddings, computed once per encoder and model (about 10 s for the 3,800 expressions and
    the ordinary messages on one core with MiniLM), read from the shipped file where one ships for the
    model, else kept on disk by an encoder that can (``embed_corpus``)."""
    from e3rg_core.understanding.embedding import RISK_VECTORS, embed_with_shipped

    vectors = embed_with_shipped(encoder, bank_texts(bank), RISK_VECTORS)
    return vectors[: len(bank.risk)], vectors[len(bank.risk):]


# The probe's regularisation (class_head's c). With the 600-expression bank 1.0 (0.3 and 3 no better); with
# the bank grown to 3,800 expressions, 3.0 and 10 read the dev sets equally well (AUC 0.994), 1.0 a little
# worse. ``PROBE_WEIGHT`` is how much the probe's log-odds move the margin (``MeaningScore.score``): on the
# dev sets the margin alone gave AUC 0.989, the margin with 0.02 of the log-odds 0.994 (0.01: 0.993, 0.05:
# 0.992), and at dev recall 0.97 ordinary-conversation alarms fell from 12.6 % to 5.2 %.
PROBE_C = 3.0
PROBE_WEIGHT = 0.02


@lru_cache(maxsize=4)
def _probe(encoder: Any, bank: Bank, c: float) -> Any:
    """A linear probe on the raw embeddings, risk expressions against everything on the safe side,
    fitted once per encoder from the bank (class-balanced; about 0.2 s): the kNN margin reads the few
    nearest expressions, the probe the direction that separates the two sides as a whole."""
    import numpy as np

    from e3rg_core.understanding.class_head import fit_class_head

    risk, safe = _bank_vectors(encoder, bank)
    vectors = np.vstack([safe, risk])
    return fit_class_head(vectors, np.r_[np.zeros(len(safe), int), np.ones(len(risk), int)], 2, c=c)


EVERYDAY_VECTORS = "everyday_vectors"  # data/everyday_vectors/<model>.npz: ``everyday_texts``


def everyday_texts() -> list[str]:
    """The lines of everyday talk written for the risk detector alone (``bank.everyday_lines``: chores, plans
    for tonight, notes to neighbours, questions to the avatar...), canonical."""
    return [canonical(text) for text in everyday_lines()]


@lru_cache(maxsize=4)
def _ordinary_vectors(encoder: Any) -> Any:
    """Everyday conversation: the person's turns in the news reader's messages (``data/news.json``, 1,918
    good, bad and plain messages written for e3rg, none of them risk) and the detector's own everyday lines
    (``everyday_texts``): their vectors ship for both encoders (``data/news_vectors``, ``data/everyday_vectors``;
    ``python -m e3rg_core.understanding.news all-minilm-l6-v2`` and ``python -m
    e3rg_core.understanding.safety.meaning all-minilm-l6-v2`` write MiniLM's)."""
    from e3rg_core.understanding.embedding import embed_with_shipped
    from e3rg_core.understanding.news import NEWS_VECTORS, news_texts

    return encoder.np.concatenate([embed_with_shipped(encoder, news_texts(), NEWS_VECTORS),
                                   embed_with_shipped(encoder, everyday_texts(), EVERYDAY_VECTORS)])


@dataclass(frozen=True)
class MeaningScore:
    risk_sim: float  # mean cosine of the best piece to its k nearest risk expressions
    safe_sim: float  # the same piece's mean cosine to its k nearest safe expressions
    category: str  # the category of the nearest risk expression
    nearest: str  # that expression
    piece: str  # the piece of the message that scored highest
    probe: float = 0.0  # the linear probe's probability of risk (0..1), the whole and that piece averaged
    logit: float = 0.0  # the probe's log-odds of risk, averaged the same way
    # the whole text's mean cosine to its k nearest lines of everyday conversation (``_ordinary_vectors``):
    # set against ``risk_sim``, whether a message is nearer to what people say about their day than to risk
    # (the bank's look-alikes share risk's words; these share its everyday subjects)
    ordinary_sim: float = 0.0

    @property
    def margin(self) -> float:
        return self.risk_sim - self.safe_sim

    @property
    def score(self) -> float:
        """The margin moved by the probe's log-odds: what the detector's thresholds read."""
        return self.margin + PROBE_WEIGHT * self.logit


def pieces(text: str) -> list[str]:
    """What of ``text`` is embedded: the whole, and each sentence too when it has ``LONG_PIECES`` or more."""
    parts = [p.strip() for p in _SENTENCE.split(text) if len(p.strip()) >= 2]
    if len(parts) < LONG_PIECES:
        return [text]
    if len(parts) > MAX_PIECES:
        parts = parts[: MAX_PIECES // 2] + parts[-MAX_PIECES // 2:]
    return [text[:2000]] + parts


class MeaningScorer:
    """Scores texts against the bank with a sentence encoder (``embed(list[str]) -> unit rows``; the bank
    goes through its ``embed_corpus`` where it has one, which keeps the vectors on disk)."""

    def __init__(self, encoder: Any, *, k: int = 3, bank: Bank | None = None, probe_c: float = PROBE_C) -> None:
        self.encoder = encoder
        self.k = k
        self.bank = bank or load_bank()
        self._np = encoder.np
        self._risk, self._safe = _bank_vectors(encoder, self.bank)
        self._probe = _probe(encoder, self.bank, probe_c)
        # read now, not at the first check-in (shipped; another model embeds them here, kept on disk)
        self._ordinary = _ordinary_vectors(encoder)
        # A conversation's earlier lines are read again at every turn: their scores are kept (a text's
        # score depends on nothing else), so a turn embeds only what is new.
        self._kept: OrderedDict[tuple[str, str], MeaningScore] = OrderedDict()
        self._kept_lock = threading.Lock()

    @property
    def safe_vectors(self) -> Any:
        """The unit vectors of the bank's look-alikes and ordinary lines (the safe side), one row each."""
        return self._safe

    def _topk(self, sims: Any) -> Any:
        k = min(self.k, sims.shape[1])
        return self._np.sort(sims, axis=1)[:, -k:].mean(axis=1)

    def score_many(self, texts: Sequence[str], riskiest: Sequence[str] | None = None) -> list[MeaningScore]:
        """One score per text: the whole averaged with its riskiest sentence (by margin) when it is long.
        ``riskiest`` names that sentence for each text (another scorer's choice), so only the whole and it
        are embedded rather than every sentence."""
        keys = list(zip(texts, riskiest)) if riskiest is not None else [(t, t) for t in texts]
        with self._kept_lock:
            kept = {k: self._kept[k] for k in keys if k in self._kept}
        new = [k for k in dict.fromkeys(keys) if k not in kept]
        if new:
            scored = dict(zip(new, self._score([t for t, _ in new], [r for _, r in new] if riskiest is not None else None)))
            with self._kept_lock:
                self._kept.update(scored)
                while len(self._kept) > KEPT_SCORES:
                    self._kept.popitem(last=False)
            kept.update(scored)
        return [kept[k] for k in keys]

    def forget(self) -> None:
        """Drop the kept scores, and the encoder's kept vectors where it keeps some (a benchmark timing a
        turn from cold)."""
        with self._kept_lock:
            self._kept.clear()
        getattr(self.encoder, "forget", lambda: None)()

    def _score(self, texts: Sequence[str], riskiest: Sequence[str] | None = None) -> list[MeaningScore]:
        np = self._np
        spans, flat = [], []
        for i, text in enumerate(texts):
            parts = pieces(text) if riskiest is None else [text[:2000], riskiest[i]] if riskiest[i] != text else [text]
            spans.append((len(flat), len(flat) + len(parts)))
            flat.extend(parts)
        vectors = self.encoder.embed(flat)
        risk_sims = vectors @ self._risk.T
        risk, safe = self._topk(risk_sims), self._topk(vectors @ self._safe.T)
        ordinary = self._topk(vectors @ self._ordinary.T)
        log_probs = self._probe.log_probs(vectors)
        probe, logit = np.exp(log_probs[:, 1]), log_probs[:, 1] - log_probs[:, 0]
        out = []
        for start, end in spans:
            # The whole message, averaged with its riskiest sentence when it has several: the whole
            # reads the context (a question, a story), the sentence keeps a signal from being diluted.
            best = start if end - start == 1 else start + 1 + int(np.argmax(risk[start + 1:end] - safe[start + 1:end]))
            risk_sim, safe_sim = (risk[start] + risk[best]) / 2, (safe[start] + safe[best]) / 2
            nearest = int(np.argmax(risk_sims[best]))
            category, expression = self.bank.risk[nearest]
            out.append(MeaningScore(float(risk_sim), float(safe_sim), category, expression, flat[best],
                                    float((probe[start] + probe[best]) / 2), float((logit[start] + logit[best]) / 2),
                                    float(ordinary[start])))
        return out


# The second encoder (all-mpnet-base-v2) reads only the texts whose first score (MiniLM) is at least
# ``SECOND_FROM``: far below every threshold the joint score cannot reach one (on the dev sets no
# threshold setting of the search changed with it), and most ordinary turns never pay for the larger
# model (7x slower per text). The joint score weights the second encoder ``SECOND_WEIGHT``.
SECOND_FROM = -0.15
SECOND_WEIGHT = 0.6


class JointScorer:
    """Two ``MeaningScorer``s read as one: where the first (fast) one scores a text at least ``second_from``,
    the second one reads it too and each of its figures is the weighted mean of the two (the nearest
    expression and the piece are the second's); elsewhere the first scorer's reading stands.

    Two encoders trained differently misplace different look-alikes: on the dev sets and on a validation
    set written for this choice, MiniLM and MPNet together alarmed a third fewer look-alikes than either
    alone at the same recall (docs/safety.md, "two encoders read together")."""

    def __init__(self, first: MeaningScorer, second: MeaningScorer, *, weight: float = SECOND_WEIGHT,
                 second_from: float = SECOND_FROM) -> None:
        if not 0.0 <= weight <= 1.0:
            raise ConfigError(f"the second encoder's weight must be within 0..1, got {weight}")
        self.first, self.second, self.weight, self.second_from = first, second, weight, second_from

    def forget(self) -> None:
        self.first.forget()
        self.second.forget()

    def score_many(self, texts: Sequence[str]) -> list[MeaningScore]:
        out = self.first.score_many(texts)
        near = [i for i, s in enumerate(out) if s.score >= self.second_from]
        if near:
            w = self.weight
            # the second reads the whole and the sentence the first found riskiest, not every sentence again
            for i, b in zip(near, self.second.score_many([texts[i] for i in near], [out[i].piece for i in near])):
                a = out[i]
                out[i] = MeaningScore((1 - w) * a.risk_sim + w * b.risk_sim, (1 - w) * a.safe_sim + w * b.safe_sim,
                                      b.category, b.nearest, b.piece, (1 - w) * a.probe + w * b.probe,
                                      (1 - w) * a.logit + w * b.logit, (1 - w) * a.ordinary_sim + w * b.ordinary_sim)
        return out


if __name__ == "__main__":  # python -m e3rg_core.understanding.safety.meaning [model]: after a bank changes
    import sys

    from e3rg_core.understanding.embedding import (EMOTION_VECTORS, MPNET_NAME, RISK_VECTORS, prototype_texts,
                                                   sentence_encoder, write_shipped_vectors)

    encoder = sentence_encoder(sys.argv[1] if len(sys.argv) > 1 else MPNET_NAME)
    if encoder.model == MPNET_NAME:  # MiniLM embeds these in a second at a start
        print(write_shipped_vectors(EMOTION_VECTORS, encoder, prototype_texts()))  # the emotion voter's
        print(write_shipped_vectors(RISK_VECTORS, encoder, bank_texts(load_bank())))
    print(write_shipped_vectors(EVERYDAY_VECTORS, encoder, everyday_texts()))  # both encoders read them
