"""Turning a person's words into the second person (e3rg_core.understanding.person)."""

import pytest

from e3rg_core.understanding.person import (has_first_person, reported_quote, second_person, speaks_to_listener,
                                            with_subject)


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
    ("interviewed 4 candidates before lunch", "you interviewed 4 candidates before lunch"),  # a count
    ("tested negative this morning", "you tested negative this morning"),
    ("lasted 3 weeks before it broke", "lasted 3 weeks before it broke"),  # as often a thing's as the person's
])
def test_a_sentence_that_leaves_the_person_out_gets_you_as_its_subject(text, expected):
    assert with_subject(text) == expected


def test_a_was_after_another_verb_is_not_the_persons():
    assert second_person("All I did was ask") == "All you did was ask"
    assert second_person("I honestly was fine") == "You honestly were fine"


@pytest.mark.parametrize("sentence, reported", [
    # "you" in what was said to them is the person; "I" is the one who said it, agreeing in number
    ("My mum told me 'I never wanted you to quit piano.'", "My mum told me she never wanted you to quit piano"),
    ("My dad said 'I need you here'", "My dad said he needs you here"),
    ("My coach said 'you're the best striker I've ever trained.'",
     "My coach said you're the best striker they've ever trained"),
    ("The nurse said 'you can go home tomorrow'", "The nurse said you can go home tomorrow"),
    ("Mum goes 'I really miss you'", "Mum said she really misses you"),
])
def test_a_quotation_said_to_the_person_is_reported(sentence, reported):
    assert reported_quote(sentence) == reported


@pytest.mark.parametrize("sentence", [
    "My boyfriend texted me 'I need some space, don't call me.'",  # an order in a second clause
    "He wrote 'you never listen' on the card.",  # the quotation does not end the sentence
    "She texted me 'please just come'",  # nobody in it to turn: said back word for word elsewhere
    "My brother said 'we should sell the car'",  # "we": whose?
    "I told you 'I was fine'",  # said to the avatar
])
def test_a_quotation_that_does_not_report_safely_is_left(sentence):
    assert reported_quote(sentence) is None


def test_a_sentence_begun_with_havent_or_couldnt_has_the_writer_left_out_but_not_one_begun_with_wouldnt():
    from e3rg_core.understanding.person import lacks_subject

    assert lacks_subject("haven't slept more than 3 hours a night") and lacks_subject("couldn't sleep at all")
    assert not lacks_subject("wouldn't take a penny for it")  # most often someone else who would not
