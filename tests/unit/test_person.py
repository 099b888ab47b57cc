"""Turning a person's words into the second person (e3rg_core.understanding.person)."""

import pytest

from e3rg_core.understanding.person import has_first_person, second_person, speaks_to_listener


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
