"""How well does the news reader (``e3rg_core.understanding.news``) tell good, bad and neither news?

    python bench/news.py [--sets dev,dev2,dev3,dev4]

It learns from the messages written for it (``data/news.json``); it is measured on the reply bench's
conversations (``bench/data/replies_<set>.jsonl``), whose every turn is marked good, bad or neutral news
by the people who wrote them, apart from the reader's messages. Many of those turns are judged with the
conversation before them ("i can't stop shaking" after a pass is good news), which the reader does
not see. The report gives accuracy, the confusion, the turns read as the opposite kind, what the reader
is sure of (``openings.NEWS_VETO``) and how often that was right, and a 5-fold cross-validation on its own
messages. It is also measured on ``bench/data/news_extra.json``: messages of the same kind by three
other writers, which it does not learn from, and on ``bench/data/news_turns_extra.jsonl``: the person's
turns of 320 short conversations by eight more writers, each labelled as read in its conversation (the
form of the turns it learnt from since issue 20's sixteenth pass), also not learnt from. Only summary
figures are written: a held-out set's turns stay unread. Writes ``bench/reports/news.json``.
"""

from __future__ import annotations

import argparse
import json

from _common import ROOT, machine, write_report

from e3rg_core.understanding.class_head import fit_class_head
from e3rg_core.understanding.embedding import MPNET_NAME, sentence_encoder
from e3rg_core.understanding.news import HEAD_C, NEWS, NewsReader, load_news
from e3rg_core.understanding.openings import NEWS_VETO
from e3rg_core.understanding.safety.text import canonical


EXTRA = ROOT / "bench" / "data" / "news_extra.json"
EXTRA_TURNS = ROOT / "bench" / "data" / "news_turns_extra.jsonl"


def turns(sets: list[str]) -> list[tuple[str, str]]:
    """(message, kind of news) of every turn of the reply sets, neutral read as neither."""
    return [row for name in sets for row in conversation_turns(ROOT / "bench" / "data" / f"replies_{name}.jsonl")]


def conversation_turns(path) -> list[tuple[str, str]]:
    """(message, kind of news) of every turn of a JSON-lines file of conversations, neutral read as neither."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rows += [(t["text"], "neither" if t["news"] == "neutral" else t["news"]) for t in json.loads(line)["turns"]]
    return rows


def by_kind(rows: list[tuple[str, str]]) -> dict[str, list[str]]:
    """``rows`` of (message, kind) grouped by kind, as ``read_table`` takes them."""
    return {kind: [text for text, gold in rows if gold == kind] for kind in NEWS}


def read_table(reader: NewsReader, table: dict[str, list[str]]) -> dict:
    """The reader's accuracy, confusion and sure readings on labelled messages (``table``: kind -> texts)."""
    confusion = {gold: {kind: 0 for kind in NEWS} for gold in NEWS}
    sure = {kind: {gold: 0 for gold in NEWS} for kind in ("good", "bad")}
    for gold in NEWS:
        for text in table[gold]:
            probs = reader.read(text)
            confusion[gold][max(probs, key=probs.get)] += 1
            for kind in sure:
                if probs[kind] >= NEWS_VETO:
                    sure[kind][gold] += 1
    total = sum(len(table[gold]) for gold in NEWS)
    return {"messages": total, "accuracy": round(sum(confusion[k][k] for k in NEWS) / total, 3),
            "opposite": confusion["good"]["bad"] + confusion["bad"]["good"], "confusion": confusion, "sure": sure}


def cross_validation(encoder, folds: int = 5) -> float:
    """Accuracy of the reader's head on its own messages, each fold fitted without it."""
    import numpy as np

    table = load_news()
    texts = [canonical(t) for kind in NEWS for t in table[kind]]
    classes = np.array([i for i, kind in enumerate(NEWS) for _ in table[kind]])
    vectors = encoder.embed(texts)
    order = np.random.default_rng(0).permutation(len(texts))
    right = 0
    for k in range(folds):
        test = order[k::folds]
        train = np.setdiff1d(order, test)
        head = fit_class_head(vectors[train], classes[train], len(NEWS), c=HEAD_C)
        right += int((head.log_probs(vectors[test]).argmax(axis=1) == classes[test]).sum())
    return right / len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default="dev,dev2,dev3,dev4", help="reply sets to measure on, comma-separated")
    args = parser.parse_args()
    sets = args.sets.split(",")
    encoder = sentence_encoder(MPNET_NAME)
    reader = NewsReader(encoder)
    rows = turns(sets)
    measured = read_table(reader, by_kind(rows))
    report = {
        "machine": machine(),
        "sets": sets,
        "turns": measured["messages"],
        "accuracy": measured["accuracy"],
        "opposite": measured["opposite"],
        "confusion": measured["confusion"],  # gold kind -> read kind -> turns
        "sure_at": NEWS_VETO,
        "sure": measured["sure"],  # read kind (probability >= sure_at) -> gold kind -> turns
        "own_messages": sum(len(v) for v in load_news().values()),
        "own_cross_validation_accuracy": round(cross_validation(encoder), 3),
        # messages by three other writers, not learnt from (gold kind -> read kind)
        "other_writers": read_table(reader, json.loads(EXTRA.read_text(encoding="utf-8"))),
        # conversation turns by eight more writers, not learnt from (gold kind -> read kind)
        "other_writers_turns": read_table(reader, by_kind(conversation_turns(EXTRA_TURNS))),
    }
    print(json.dumps({k: v for k, v in report.items() if k != "machine"}, indent=1))
    write_report("news", report)


if __name__ == "__main__":
    main()
