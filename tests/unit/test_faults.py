"""Each reply-fault detector on its own examples: the faults seen in e3rg's replies, and fitting replies."""

import pytest

from e3rg_core.understanding.faults import DETECTORS, ReplyContext, faults

LAID_OFF = ReplyContext("I got laid off this morning after twelve years at the company.", news="bad")
LUMP = ReplyContext("The doctor wants to run more tests on the lump they found.", news="bad")
PROMOTED = ReplyContext("I got the promotion!", news="good")


@pytest.mark.parametrize("detector, reply, ctx", [
    ("tone_mismatch", "Congratulations, Doctor! That is exciting.", LUMP),
    ("tone_mismatch", "What a heartwarming day that must have been.", ReplyContext("We buried my father today.", news="bad")),
    ("tone_mismatch", "I'm so sorry to hear that.", PROMOTED),
    ("tone_mismatch", "I understand you're excited about your sister's wedding! How does this affect your plans?",
     ReplyContext("problem is she wants our dad there and Mum says if Dad brings Karen she's not coming", news="bad")),
    # an opening that feels good news as a wrong, a worry or a loneliness, and one glad of bad news
    ("tone_mismatch", "That's so unfair. Your neighbour mowed your lawn while you were laid up.", ReplyContext(
        "came home to find my neighbour had mowed my lawn while I was laid up", news="good")),
    ("tone_mismatch", "That sounds really lonely. You joined a running club.", ReplyContext(
        "joined a running club and three people asked me to the pub after", news="good")),
    ("tone_mismatch", "No wonder you're worried. You timed it at 14 minutes.", ReplyContext(
        "timed it at 14 minutes. feel a bit better actually", news="good")),
    ("tone_mismatch", "Oh, I'm glad. You sent the photos from your graduation.", ReplyContext(
        "sent the family chat my graduation photos. 14 people. two replies.", news="bad")),
    ("tone_mismatch", "I'm glad to know that the replacement bus has arrived on time.", ReplyContext(
        "and now the replacement bus has gone to the wrong town. this is fine. everything is fine.", news="bad")),
    ("tone_mismatch", "What a lovely thing. Your landlord kept your deposit.", ReplyContext(
        "My landlord kept my entire deposit for 'cleaning'.", news="bad")),
    ("advice_or_blame", "You should be honest and apologize for the disappointment.", LAID_OFF),
    ("advice_or_blame", "Make sure you update your CV tonight.", LAID_OFF),
    ("advice_or_blame", "Maybe you should have checked your work more carefully.", ReplyContext(
        "My colleague presented my analysis as his own.", news="bad")),
    ("advice_or_blame", "You might have prepared better or taken more time to study.", ReplyContext(
        "I failed my driving test again today.", news="bad")),
    ("agreement_opener", "You're right! It's important to be prepared.", ReplyContext(
        "My sister is pregnant and she lives so far away.", news="neutral")),
    ("emotion_label", "You seem to feel neutral about it.", ReplyContext("I bought milk and bread.")),
    ("emotion_label", "It sounds like you are feeling embarrassed.", ReplyContext("They laughed at me.", news="bad")),
    ("third_person", "It sounds like the speaker is feeling embarrassed.", ReplyContext("They laughed at me.", news="bad")),
    ("invented", "Your sister must be so proud.", ReplyContext("I finished my first marathon!", news="good")),
    ("invented", "Tell Maria I said well done.", ReplyContext("I finished my first marathon!", news="good")),
    ("invented", "What a memory. It reminds me of when I was a child and kept an old watch.", ReplyContext(
        "My dad's old watch survived the fire.", news="good")),
    ("invented", "My mum used to say the same thing.", ReplyContext("Mum always said that.")),
    ("speaker_voice", "No wonder you're worried. Someone is trying the door handle downstairs. I'm alone.", ReplyContext(
        "Someone is trying the door handle downstairs and I'm alone in the house.", news="bad")),
    ("speaker_voice", "Ugh, that's not okay. My son's in trouble for pushing back.", ReplyContext(
        "My son got a detention because another kid shoved him and he pushed back.", news="bad")),
    ("third_person", "Let's address their fear by being supportive.", ReplyContext("The rumour is half of us get cut.")),
    ("assistant_speak", "Thank you for providing the information. I understand this is your third interview.",
     ReplyContext("third interview. nothing.", news="bad")),
    ("assistant_speak", "I appreciate your understanding. If there is anything else I can help with, let me know.",
     ReplyContext("whatever.")),
    ("assistant_speak", "They don't seem to have a strong positive or negative emotion about it.",
     ReplyContext("results day. got AAB.", news="bad")),
    ("assistant_speak", "I understand that this interview is third and nothing has been discussed so far.",
     ReplyContext("third interview. nothing.", news="bad")),
    ("assistant_speak", "That's great to hear! Do you have any other questions about what you enjoy?",
     ReplyContext("mine's autumn. conkers, jumpers, no wasps")),
    ("repeated_opener", "That sounds so hard, and I'm here.", ReplyContext(
        "It got worse.", news="bad", previous_reply="That sounds so hard. What happened?")),
    ("unanswered", "What do you think you'd like to call it?", ReplyContext(
        "What's a good name for a puppy?", asks=True)),
    ("over_limit", " ".join(["word"] * 36), ReplyContext("Hi")),
    ("generic", "I hear you. I'm sorry you're feeling this way.", LAID_OFF),
    ("generic", "That sounds so frustrating. Can you tell me more about the situation?", ReplyContext(
        "My landlord kept my whole deposit for cleaning.", news="bad")),
])
def test_each_detector_finds_its_fault(detector, reply, ctx):
    assert DETECTORS[detector](reply, ctx)


@pytest.mark.parametrize("reply, ctx", [
    ("Twelve years, and gone in one morning. That must have been such a shock.", LAID_OFF),
    ("Waiting for results like that is so hard. I'm glad you told me.", LUMP),
    ("I'm glad your sister is with you tonight. Waiting like that is so hard.", ReplyContext(  # glad of a comfort
        "The doctor wants more tests on the lump. My sister is staying with me tonight.", news="bad")),
    ("Congratulations, you worked so hard for that!", PROMOTED),
    ("You must be buzzing! You got the promotion.", PROMOTED),  # a guess at a feeling, not advice
    ("That must have stung, after all the work you put in.", ReplyContext("My colleague took credit for my work.", news="bad")),
    ("How wonderful, her first steps! Priya must have loved filming that.", ReplyContext(
        "My niece took her first steps today, Priya sent a video!", news="good")),
    ("I think Biscuit would be a lovely name for a puppy.", ReplyContext("What's a good name for a puppy?", asks=True)),
    ("You're right, the second season was better.", ReplyContext("I think the second season was better.")),
    ("Thanks for telling me; telling your mum took courage.", ReplyContext("I finally told my mum about the divorce.")),
    ("Thank you for sharing that memory of him.", ReplyContext("Dad used to sing in the car.")),
    ("Your manager Oleg sounds tough.", ReplyContext("Oleg is being awful again.", earlier_user=("My manager Oleg yelled at me.",),
                                                     news="bad")),
])
def test_fitting_replies_have_no_fault(reply, ctx):
    assert faults(reply, ctx) == ()


@pytest.mark.parametrize("question, reply", [
    ("is it normal to feel angry at pregnant women on instagram",
     "Honestly, I'd say it's not normal to feel angry at pregnant women on Instagram."),
    ("Is it rude to call the council about it?", "Honestly, I'd say it's rude to call the council about it."),
    ("Am I being petty for being hurt by that?", "Yes, you are being a bit petty."),
    ("should I say something to my manager or will I just look petty", "You might look petty if you say something."),
    ("was I wrong to leave early?", "I think it's wrong to leave early without telling anyone."),
])
def test_an_answer_that_judges_against_the_person_is_a_fault(question, reply):
    assert DETECTORS["judged"](reply, ReplyContext(question, news="bad", asks=True))


@pytest.mark.parametrize("question, reply", [
    ("Am I being petty for being hurt by that?", "I don't think you're being petty for being hurt by that."),
    ("Is it weird that I feel guilty?", "It's not weird at all to feel guilty."),
    ("Am I being unreasonable if I ask for a meeting?", "I think it's not unreasonable to ask for a meeting."),
    ("was I wrong to leave early?", "Ugh, that's not okay. They should have told you."),  # of what was done to them
    ("what should I cook tonight?", "It's not okay to skip dinner."),  # no question whether they are all right
])
def test_an_answer_that_does_not_judge_against_the_person_is_no_fault(question, reply):
    assert not DETECTORS["judged"](reply, ReplyContext(question, news="bad", asks=True))


def test_the_persons_question_about_themself_answered_as_the_avatars_own_is_their_voice():
    asked = ReplyContext("am I a terrible parent", news="bad", asks=True)
    assert DETECTORS["speaker_voice"]("I think I'm a terrible parent.", asked)
    assert not DETECTORS["speaker_voice"]("I don't think you're a terrible parent.", asked)
    assert not DETECTORS["speaker_voice"]("I'd say I was a bit nervous too.", ReplyContext(
        "was I too nervous in the interview?", asks=True))
    pastry = ReplyContext("what did I do wrong with the pastry though, was it too wet?", asks=True)
    assert DETECTORS["speaker_voice"]("I think I was not as careful with the pastry.", pastry)
    assert not DETECTORS["speaker_voice"]("I'd say the pastry was probably a little too wet.", pastry)
    assert not DETECTORS["speaker_voice"]("I was wondering that too; maybe it was too wet.", pastry)


def test_an_answer_may_repeat_the_words_of_the_question():
    asked = ReplyContext("Do herbs grow well in pots?", asks=True)
    assert not DETECTORS["speaker_voice"]("Herbs grow well in pots, yes.", asked)
    assert DETECTORS["speaker_voice"]("Herbs grow well in pots, yes.", ReplyContext("Herbs grow well in pots."))
    assert DETECTORS["speaker_voice"]("Ugh. My son got a detention.", ReplyContext(
        "My son got a detention, can you believe it?", asks=True))


def test_a_reply_about_the_message_or_a_short_message_is_not_generic():
    ctx = ReplyContext("My landlord kept my whole deposit for cleaning.", news="bad")
    assert not DETECTORS["generic"]("Your whole deposit, for cleaning? That's not right.", ctx)
    assert not DETECTORS["generic"]("Waiting for results like that is so hard.", LUMP)  # its own specifics
    assert not DETECTORS["generic"]("I'm here.", ReplyContext("ok thanks"))  # nothing to be specific about
    earlier = ReplyContext("It still hurts.", earlier_user=("My dog Max died on Sunday morning.",), news="bad")
    assert not DETECTORS["generic"]("Losing Max like that hurts.", earlier)  # the conversation's words count


def test_the_persons_own_words_said_back_are_no_advice():
    advice_or_blame = DETECTORS["advice_or_blame"]
    ctx = ReplyContext("Now I have to tell my boss, which I'm dreading.", news="bad")
    assert not advice_or_blame("Now you have to tell your boss, which you're dreading.", ctx)
    assert advice_or_blame("You have to tell your boss today.", ReplyContext("My boss is awful.", news="bad"))
    assert not advice_or_blame("He's meant to give at least a month.", ReplyContext("He gave a week.", news="bad"))
    assert not advice_or_blame("Your friend says you should block him.", ReplyContext("Ugh.", news="bad"))


def test_a_suggestion_answers_a_question_about_what_to_do():
    ctx = ReplyContext("how do i tell him without him kicking us out", asks=True)
    assert not DETECTORS["unanswered"]("You could ask the landlord to extend the notice period.", ctx)
    assert DETECTORS["unanswered"]("That sounds hard. What happened next?", ctx)


def test_the_avatar_answering_what_the_person_did_as_its_own_doing_is_found():
    ctx = ReplyContext("what did I do wrong with the pastry though, was it too wet?", news="neutral", asks=True)
    assert "speaker_voice" in faults("I think I overworked the pastry and it got too wet.", ctx)
    assert faults("I think you overworked the pastry.", ctx) == ()
    assert faults("I'd say the pastry needed more chilling.", ctx) == ()


def test_an_answer_that_says_the_persons_own_statement_again_speaks_as_them():
    ctx = ReplyContext("Do you think it's too soon for another cat? It feels a bit disloyal.", news="neutral", asks=True)
    assert "speaker_voice" in faults("I'd say it's too soon for another cat. It feels a bit disloyal.", ctx)
    assert faults("It doesn't sound disloyal to me.", ctx) == ()
    echo = ReplyContext("Completed on the house today! Keys in hand!", news="good")
    assert "speaker_voice" not in faults("How exciting! Completed on the house today. Keys in hand.", echo)


def test_help_lines_and_a_doctor_are_no_invention_but_a_name_beside_them_is():
    ctx = ReplyContext("I don't see the point of anything any more.", news="bad")
    crisis = ("I'm really glad you told me. Are you safe right now? You can talk to a crisis line at any hour: in the US "
              "call or text 988, in the UK and Ireland call Samaritans on 116 123. Please call your local emergency "
              "number now: 911 in the US and Canada, 999 in the UK, 112 in most of Europe.")
    assert not DETECTORS["invented"](crisis, ctx)
    assert not DETECTORS["invented"]("I'm worried about you: that needs a doctor's help right away.", ctx)
    assert DETECTORS["invented"](crisis + " Your sister Maria loves you.", ctx)
    assert DETECTORS["invented"]("Have you told your doctor?", ctx)
    assert DETECTORS["invented"]("You've been at it 365 days in a row, Sam.", ctx)
