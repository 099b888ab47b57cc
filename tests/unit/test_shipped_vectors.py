"""The MPNet vectors that ship with the package cover what a start would otherwise embed (minutes on one
core): a bank or prototype changed without ``python -m e3rg_core.understanding.safety.meaning`` fails here.
The news reader's messages ship for MiniLM too (``python -m e3rg_core.understanding.news all-minilm-l6-v2``):
the risk detector reads them as everyday conversation with both encoders."""

import numpy

from e3rg_core.understanding.embedding import (EMBEDDED_NAME, EMOTION_VECTORS, MPNET_NAME, RISK_VECTORS,
                                               prototype_texts, shipped_vectors)
from e3rg_core.understanding.news import NEWS_VECTORS, news_texts
from e3rg_core.understanding.safety.meaning import EVERYDAY_VECTORS, bank_texts, everyday_texts, load_bank


def _covers(folder: str, texts: list[str], model: str = MPNET_NAME) -> None:
    shipped = shipped_vectors(folder, model)
    missing = [t for t in dict.fromkeys(texts) if t not in shipped]
    assert not missing, f"{len(missing)} texts lack shipped vectors in data/{folder}, e.g. {missing[:3]}"
    norms = numpy.linalg.norm(numpy.stack([shipped[t] for t in texts[:200]]), axis=1)
    assert numpy.allclose(norms, 1.0, atol=0.01)  # unit vectors, as the encoder gives


def test_the_emotion_voters_prototypes_ship_as_vectors():
    _covers(EMOTION_VECTORS, prototype_texts())


def test_the_risk_bank_ships_as_vectors():
    _covers(RISK_VECTORS, bank_texts(load_bank()))


def test_the_news_readers_messages_ship_as_vectors():
    _covers(NEWS_VECTORS, news_texts())
    _covers(NEWS_VECTORS, news_texts(), EMBEDDED_NAME)  # the risk detector's everyday conversation


def test_the_risk_detectors_own_everyday_lines_ship_as_vectors_for_both_encoders():
    assert len(everyday_texts()) >= 90
    _covers(EVERYDAY_VECTORS, everyday_texts())
    _covers(EVERYDAY_VECTORS, everyday_texts(), EMBEDDED_NAME)


def test_a_model_without_shipped_vectors_has_none():
    assert shipped_vectors(EMOTION_VECTORS, "all-minilm-l6-v2") == {}
