"""Turning a person's words into the second person (e3rg_core.understanding.person)."""

import pytest

from e3rg_core.understanding.person import has_first_person, second_person, speaks_to_listener, with_subject


@pytest.mark.parametrize("text, expected", [
    ("My card got declined on a first date.", "Your card got declined on a first date."),
    ("i was sure i'd passed", "you were sure you'd passed"),
    ("everyone would be fine if I just wasn't around", "everyone would be fine if you just weren't around"),
    ("We lost almost everything, me and my sister.", "You lost almost everything, you and your sister."),
    ("I'm tired and I've had enough", "You're tired and you've had enough"),
])
def test_second_person_turns_the_speaker_and_keeps_the_rest(text, expected):
    assert second_person(text) == expected


def test_what_can_be_turned():
    assert has_first_person("honestly im done") and not has_first_person("the bus was late")
    assert speaks_to_listener("do you ever get lonely") and not speaks_to_listener("I bought milk")


@pytest.mark.parametrize("text, expected", [
    ("gave the best man speech at your brother's wedding", "you gave the best man speech at your brother's wedding"),
    ("gonna hide under your desk", "you're gonna hide under your desk"),
    ("been awake since four", "you've been awake since four"),
    ("your card got declined", "your card got declined"),  # it has its subject
    ("still shaking", "you're still shaking"),
    ("flying tomorrow for the first time", "you're flying tomorrow for the first time"),
    ("appealed the fine online", "you appealed the fine online"),
    ("waiting for results is the worst part", "waiting for results is the worst part"),  # a subject of its own
    ("still insists on mowing his own lawn", "still insists on mowing his own lawn"),  # he does, not you
    ("driving test on Thursday", "driving test on Thursday"),  # a noun
])
def test_a_sentence_that_leaves_the_person_out_gets_you_as_its_subject(text, expected):
    assert with_subject(text) == expected
