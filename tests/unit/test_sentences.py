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


def _fed_in_random_pieces(raw: str, splitter: ReplySentences, seed: int) -> list[str]:
    rng, out, i = random.Random(seed), [], 0
    while i < len(raw):
        k = rng.randint(1, 5)
        out += splitter.feed(raw[i: i + k])
        i += k
    return out + splitter.close()


@pytest.mark.parametrize("raw,clean", CASES)
def test_any_split_into_pieces_reads_like_the_whole(raw, clean):
    assert clean_reply(raw) == clean
    for seed in range(25):
        assert " ".join(_fed_in_random_pieces(raw, ReplySentences(), seed)) == clean


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


CLAUSE_CASES = CASES + [
    ("It's normal to feel lost when plans fall apart, especially now. You will find a way.",
     "It's normal to feel lost when plans fall apart, especially now. You will find a way."),
    ("Oh, no! Well, that is a hard thing to hear; I am sorry.", "Oh, no! Well, that is a hard thing to hear; I am sorry."),
    ("I am so sorry to hear that, really, it must", "I am so sorry to hear that, really, it must"),
]


@pytest.mark.parametrize("raw,clean", CLAUSE_CASES)
def test_a_first_clause_cut_still_reads_like_the_whole(raw, clean):
    for seed in range(25):
        assert " ".join(_fed_in_random_pieces(raw, ReplySentences(first_clause_words=4), seed)) == clean


def test_a_long_first_sentence_is_cut_at_its_first_clause_with_enough_words():
    splitter = ReplySentences(first_clause_words=4)
    assert splitter.feed("Oh, I am so sorry") == []  # "Oh," is too short a clause
    assert splitter.feed(" to hear that,") == []  # a comma needs the white space after it
    assert splitter.feed(" truly, it") == ["Oh, I am so sorry to hear that,"]
    assert splitter.feed(" hurts. Is she ok?") == ["truly, it hurts."]  # only the first piece is cut
    assert splitter.close() == ["Is she ok?"]


def test_a_short_first_sentence_is_not_cut():
    splitter = ReplySentences(first_clause_words=4)
    assert splitter.feed("Oh, no! Well, I am so sorry, truly. ") == ["Oh, no!", "Well, I am so sorry, truly."]
