"""The news reader on the real all-mpnet-base-v2 and its shipped messages: plain cases read as they are
(its figures on the bench's conversations are in docs/replies.md, not asserted here)."""

import pytest

from e3rg_core.understanding.embedding import MPNET_NAME, sentence_encoder
from e3rg_core.understanding.news import NEWS, NewsReader, load_news


@pytest.fixture(scope="module")
def reader():
    return NewsReader(sentence_encoder(MPNET_NAME))


@pytest.mark.parametrize("text, kind", [
    ("I got the job!", "good"),
    ("The biopsy came back benign, we're going out for dinner.", "good"),
    ("My dog died this morning.", "bad"),
    ("I failed my driving test again.", "bad"),
    ("I'm making pasta tonight.", "neither"),
    ("What time does the library open on Sundays?", "neither"),
])
def test_plain_messages_read_as_what_they_report(reader, text, kind):
    probs = reader.read(text)
    assert set(probs) == set(NEWS) and abs(sum(probs.values()) - 1) < 1e-6
    assert max(probs, key=probs.get) == kind, probs


def test_its_messages_are_written_for_each_kind_and_not_twice():
    table = load_news()
    texts = [t for kind in NEWS for t in table[kind]]
    assert all(len(table[kind]) >= 200 for kind in NEWS) and len(texts) == len(set(texts))


def test_the_other_writers_messages_it_is_measured_on_are_none_of_its_own():
    import json
    from pathlib import Path

    extra = json.loads((Path(__file__).resolve().parents[2] / "bench" / "data" / "news_extra.json").read_text("utf-8"))
    own = {t.strip().lower() for texts in load_news().values() for t in texts}
    theirs = [t.strip().lower() for kind in NEWS for t in extra[kind]]
    assert all(len(extra[kind]) >= 300 for kind in NEWS) and len(theirs) == len(set(theirs))
    assert not own.intersection(theirs)


def test_the_conversation_turns_it_is_measured_on_are_none_of_its_own():
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / "data" / "news_turns_extra.jsonl"
    turns = [t for line in path.read_text("utf-8").splitlines() if line.strip() for t in json.loads(line)["turns"]]
    own = {t.strip().lower() for texts in load_news().values() for t in texts}
    assert len(turns) >= 1000 and {t["news"] for t in turns} == {"good", "bad", "neutral"}
    assert not own.intersection(t["text"].strip().lower() for t in turns)
