"""The embedding emotion voter on the real embedded all-MiniLM-L6-v2 model."""

import json
import subprocess
import sys

import pytest

from e3rg_core.emotions import CANDIDATES, coarse_of
from e3rg_core.errors import ConfigError, InputError
from e3rg_core.types import Utterance, UserTurn
from e3rg_core.understanding.embedding import load_prototypes

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def clf():
    from e3rg_core.understanding.embedding import EmbeddingClassifier

    return EmbeddingClassifier()


def test_probabilities_over_all_36_labels(clf):
    p = clf.classify(UserTurn(text="I had a long day."))
    assert set(p) == set(CANDIDATES)
    assert sum(p.values()) == pytest.approx(1.0)
    assert all(0.0 <= v <= 1.0 for v in p.values())


@pytest.mark.parametrize("text,coarse", [
    ("My dog died this morning and I can't stop crying.", "sad"),
    ("I just got the job I always wanted!", "happy"),
    ("Someone scratched my car on purpose and I am furious.", "angry"),
    ("There's a strange man following me home and I'm scared.", "fear"),
    ("The fridge at the office smells rotten and there's mould on everything.", "disgusted"),
])
def test_clear_cases_land_in_the_right_class(clf, text, coarse):
    assert all(text not in entry.utterances and text != entry.anchor for entry in load_prototypes().values())
    p = clf.classify(UserTurn(text=text))
    assert coarse_of(max(p, key=p.get)) == coarse


@pytest.mark.parametrize("text", [
    "What time does the post office open on Saturdays?",
    "I am taking the early train to Leeds tomorrow.",
    "ok, see you at six",
    "The printer on the second floor takes A3 paper.",
])
def test_plain_statements_and_questions_come_out_neutral(clf, text):
    assert all(text not in entry.utterances for entry in load_prototypes().values())
    p = clf.classify(UserTurn(text=text))
    by_class = {}
    for label, prob in p.items():
        by_class[coarse_of(label)] = by_class.get(coarse_of(label), 0.0) + prob
    assert max(by_class, key=by_class.get) == "neutral"


def test_the_class_head_can_be_turned_off(clf):
    from e3rg_core.understanding.embedding import EmbeddingClassifier

    plain = EmbeddingClassifier(head_c=0)
    p = plain.classify(UserTurn(text="My dog died this morning and I can't stop crying."))
    assert coarse_of(max(p, key=p.get)) == "sad" and sum(p.values()) == pytest.approx(1.0)
    with pytest.raises(ConfigError, match="head_c"):
        EmbeddingClassifier(head_c=-1)


def test_history_shifts_an_ambiguous_line(clf):
    alone = clf.classify(UserTurn(text="It happened again."))
    after = clf.classify(UserTurn(text="It happened again.",
                                  history=(Utterance("speaker", "My car got broken into last month."),
                                           Utterance("listener", "That's awful."))))
    assert alone != after


def test_empty_text_and_bad_path(clf, tmp_path):
    from e3rg_core.understanding.embedding import EmbeddingClassifier

    with pytest.raises(InputError):
        clf.classify(UserTurn(text="   "))
    with pytest.raises(ConfigError, match="sentence-transformers folder"):
        EmbeddingClassifier(str(tmp_path))
    with pytest.raises(ConfigError):
        EmbeddingClassifier(temperature=0)


def test_import_is_light():
    code = "import sys, e3rg_core.understanding.embedding as m; print(json.dumps(['torch' in sys.modules, 'sentence_transformers' in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", "import json;" + code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [False, False]


def test_a_fixed_corpus_is_embedded_once_and_read_back_from_the_cache(tmp_path, monkeypatch):
    import numpy

    from e3rg_core.understanding.embedding import SentenceEncoder

    encoder = SentenceEncoder(cache_dir=str(tmp_path))
    corpus = ["I bought milk and bread today.", "my legs are dead after the marathon"]
    first = encoder.embed_corpus(corpus)
    assert first.shape == (2, 384) and len(list((tmp_path / "vectors").glob("*.npy"))) == 1

    def no_embedding(texts):
        raise AssertionError("the corpus was embedded again")

    monkeypatch.setattr(encoder, "embed", no_embedding)
    assert numpy.array_equal(encoder.embed_corpus(corpus), first)  # read from the cache
    with pytest.raises(AssertionError):
        encoder.embed_corpus(corpus + ["another sentence"])  # another corpus is another file


def test_an_unwritable_cache_only_costs_the_embedding(tmp_path):
    from e3rg_core.understanding.embedding import SentenceEncoder

    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    encoder = SentenceEncoder(cache_dir=str(blocked))
    assert encoder.embed_corpus(["hello there"]).shape == (1, 384)


def test_one_loaded_model_however_it_is_asked_for():
    """The risk detector asks for ``sentence_encoder(model)``, the emotion voter passes its options too."""
    from e3rg_core.understanding.embedding import DEFAULT_CACHE, EMBEDDED_NAME, sentence_encoder

    assert sentence_encoder() is sentence_encoder(EMBEDDED_NAME, device="cpu", cache_dir=DEFAULT_CACHE)


def test_a_text_embedded_alone_is_kept_and_a_batch_is_embedded_as_it_is(tmp_path, monkeypatch):
    import numpy

    from e3rg_core.understanding.embedding import SentenceEncoder

    encoder = SentenceEncoder(cache_dir=str(tmp_path))
    text = "the bus was on time all week"
    alone = encoder.embed([text])
    calls = []
    encode = encoder._model.encode
    monkeypatch.setattr(encoder._model, "encode", lambda texts, **kw: calls.append(list(texts)) or encode(texts, **kw))
    again = encoder.embed([text])
    assert calls == [] and numpy.array_equal(again, alone)
    again[0, 0] += 1.0  # the caller's copy, not the kept vector
    assert numpy.array_equal(encoder.embed([text]), alone)
    encoder.embed([text, "another line"])
    assert calls == [[text, "another line"]]  # a batch is embedded whole, never pieced from kept vectors
    encoder.forget()  # a benchmark timing from cold
    encoder.embed([text])
    assert calls[-1] == [text]


def test_the_voter_embeds_the_canonical_message_once_for_the_risk_detector(clf):
    from e3rg_core.understanding.safety.text import canonical

    text = "ngl the new flat is SO quiet at night"
    clf.classify(UserTurn(text=text, history=(Utterance("speaker", "We moved on Friday."),)))
    assert canonical(text) in clf.encoder._kept and canonical("We moved on Friday.") in clf.encoder._kept


def test_the_merged_prototypes_are_what_the_voter_embeds():
    from e3rg_core.understanding.embedding import load_utterances, merged_prototypes, prototype_texts

    merged, extra = merged_prototypes(), load_utterances()
    for label, entry in load_prototypes().items():
        assert merged[label].utterances == entry.utterances + extra[label] and merged[label].anchor == entry.anchor
    assert prototype_texts() == prototype_texts(merged)
    assert len(prototype_texts()) == sum(len(e.utterances) + 1 for e in merged.values())

