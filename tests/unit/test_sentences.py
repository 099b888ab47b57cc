"""The reply splitter: sentences out as soon as they end, cleaned as a whole reply would be."""

from __future__ import annotations

import random

import pytest

from e3rg_core.understanding.sentences import ReplySentences, clean_reply

CASES = [
    ('Reply: "I am so sorry."\n\nSpeaker: thanks', "I am so sorry."),
    ("Listener's reply:  That\n sounds hard.", "That sounds hard."),
    ("That sounds hard. Do you want to talk about wh", "That sounds hard."),
    ("No sentence end here at all", "No sentence end here at all"),
    ("Oh no! That is", "Oh no!"),
    ("'I am sorry.'", "I am sorry."),
    ("“That hurts. I know.”", "That hurts. I know."),
    ("Dr. Smith said so. Then J. K. went home. It is 3.5 km!", "Dr. Smith said so. Then J. K. went home. It is 3.5 km!"),
    ("I can't believe it's 'fine'. Right?", "I can't believe it's 'fine'. Right?"),
    ("Listener:", ""),
    ("   ", ""),
]


@pytest.mark.parametrize("raw,clean", CASES)
def test_any_split_into_pieces_reads_like_the_whole(raw, clean):
    assert clean_reply(raw) == clean
    for seed in range(25):
        rng, splitter, out, i = random.Random(seed), ReplySentences(), [], 0
        while i < len(raw):
            k = rng.randint(1, 5)
            out += splitter.feed(raw[i: i + k])
            i += k
        out += splitter.close()
        assert " ".join(out) == clean


def test_a_sentence_is_out_as_soon_as_white_space_follows_its_end():
    splitter = ReplySentences()
    assert splitter.feed("Oh no") == [] and splitter.feed("!") == []  # "!" could still be "!?"
    assert splitter.feed(" That") == ["Oh no!"]
    assert splitter.feed(" must be hard. Dr.") == ["That must be hard."]
    assert splitter.feed(" Lee can help.") == [] and splitter.close() == ["Dr. Lee can help."]


def test_nothing_more_after_the_model_writes_the_other_speakers_line():
    splitter = ReplySentences()
    assert splitter.feed("I see. You") == ["I see."]
    splitter.feed(" are brave.\nSpeaker: thanks. More.")
    assert splitter.stopped and splitter.feed(" Even more.") == []
    assert splitter.close() == ["You are brave."]
