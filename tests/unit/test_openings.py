"""The reply's opening: chosen to fit what was said, varied, never cheerful to bad news, never a label's guess
when the vote is unsure."""

import pytest

from e3rg_core.types import RiskAssessment
from e3rg_core.understanding import composer, openings, safety
from e3rg_core.understanding.faults import DETECTORS, ReplyContext

NONE = RiskAssessment()


def fam(text, label, coarse, confidence=0.9, asks=False, risk=NONE, news=None):
    return openings.family(text, label=label, coarse=coarse, risk=risk, asks=asks, confidence=confidence, news=news)


def test_an_opening_of_the_kind_of_news_the_reader_is_sure_the_message_is_not_is_left_out():
    kindness = "came home to find my neighbour had mowed my front lawn while I was laid up. never asked"
    sure_good, unsure = {"good": 0.84, "bad": 0.12, "neither": 0.04}, {"good": 0.55, "bad": 0.4, "neither": 0.05}
    assert fam(kindness, "angry", "angry") == "unfair"  # the vote read the conversation's anger
    assert fam(kindness, "angry", "angry", news=sure_good) is None
    assert fam(kindness, "angry", "angry", news=unsure) == "unfair"  # a lean is not enough
    sure_bad = {"good": 0.1, "bad": 0.8, "neither": 0.1}
    assert fam("We finally got our photos back from the party!", "joyful", "happy", news=sure_bad) is None
    assert fam("We finally got our photos back from the party!", "joyful", "happy", news=sure_good) == "joy"
    # a death keeps its gentle opening however warmly it is told (the reader read one as good news)
    assert fam("My grandmother died peacefully last night, surrounded by all of us.", "sad", "sad",
               news={"good": 0.9, "bad": 0.06, "neither": 0.04}) == "loss"
    # good news with a setback told in it, read as good by the vote and the reader: no gentle opening,
    # and no cheerful one either; a sad vote keeps its gentle one
    passed = "My son passed his driving test today, first go! He failed the theory twice so it's a big deal"
    assert fam(passed, "impressed", "happy", news=sure_good) is None
    assert fam(passed, "impressed", "happy", news=unsure) == "hard"
    assert fam(passed, "sad", "sad", news=sure_good) == "loss"
    # bad news the vote was unsure of: a gentle opening when the reader is sure, none when it is not
    assert fam("third interview. nothing.", "neutral", "neutral", news=sure_bad) == "hard"
    assert fam("third interview. nothing.", "neutral", "neutral", news=unsure) is None
    # a lean to bad news short of sure is enough for a gentle opening (GENTLE_AT), not for a veto
    leans_bad = {"good": 0.1, "bad": 0.65, "neither": 0.25}
    assert fam("Jordan ended things last night. Three years.", "neutral", "neutral", news=leans_bad) == "hard"
    assert fam("Jordan ended things last night. Three years.", "neutral", "neutral",
               news={"good": 0.1, "bad": 0.55, "neither": 0.35}) is None
    assert fam("We finally got our photos back from the party!", "joyful", "happy", news=leans_bad) == "joy"
    # neither kind of news sure: the opening stands
    assert fam(kindness, "angry", "angry", news={"good": 0.1, "bad": 0.1, "neither": 0.8}) == "unfair"


@pytest.mark.parametrize("text, label, coarse", [
    ("I got laid off this morning after twelve years at the company.", "joyful", "happy"),
    ("The doctor wants to run more tests on the lump they found.", "surprised", "surprised"),
    ("My dad's funeral was on Friday.", "neutral", "neutral"),
])
def test_named_bad_news_gets_a_gentle_opening_whatever_the_vote_said(text, label, coarse):
    chosen = fam(text, label, coarse)
    assert chosen not in openings._GOOD_FAMILIES and chosen is not None
    opening = openings.choose(chosen, text)
    ctx = ReplyContext(text, news="bad")
    assert not DETECTORS["tone_mismatch"](opening, ctx)
    assert safety.check(opening, user_text=text, coarse=coarse, risk=NONE).ok


def test_an_unsure_vote_or_a_plain_message_gets_no_opening():
    assert fam("I could kill for a slice of pizza right now.", "devastated", "sad", confidence=0.28) is None
    assert fam("I bought milk and bread today.", "happy", "happy", confidence=0.31) is None
    assert fam("I bought milk and bread today.", "neutral", "neutral") is None


def test_a_question_gets_the_start_of_an_answer_unless_it_names_bad_news():
    assert fam("Do you have a favourite season?", "neutral", "neutral", asks=True) == "answer"
    assert fam("I passed! Do you want to hear how?", "proud", "happy", asks=True) == "answer"
    assert fam("Why does everyone leave me out?", "lonely", "sad", asks=True) == "answer"
    assert fam("My mum died. What do I say at the funeral?", "neutral", "neutral", asks=True) == "hard"
    # what to do gets an answer begun with "you", so the model cannot answer as the person
    assert fam("Any tips for not panicking when the plane starts shaking?", "terrified", "fear", asks=True) == "advise"
    assert fam("What's one thing I can do tonight?", "afraid", "fear", asks=True) == "advise"
    assert "advise" in openings.PARTIAL and all(o.lower().split()[-2:] == ["you", "could"]
                                                for o in openings.BANK["advise"])
    assert "answer" in openings.PARTIAL and not openings.choose("answer", "Which book?").endswith((".", "!", "?"))


def test_a_sure_vote_picks_its_family_and_risk_always_a_calm_one():
    assert fam("I passed my driving test on the third try!", "proud", "happy") == "pride"
    assert fam("They laughed at me when I complained.", "annoyed", "angry") == "unfair"
    assert fam("I'm fine I guess.", "joyful", "happy", risk=RiskAssessment(level="care")) == "care"


def test_every_opening_passes_the_guard_and_the_detectors_for_its_kind_of_news():
    for name, options in openings.BANK.items():
        if name in openings.PARTIAL:
            continue  # not a sentence: the model completes it
        news = ("good" if name in openings._GOOD_FAMILIES - {"memory"} else "neutral" if name in ("memory", "thanked")
                else "bad")
        text = "I got the job!" if news == "good" else "My grandmother died." if news == "bad" else "I found old photos."
        coarse = "happy" if news == "good" else "sad"
        for opening in options:
            ctx = ReplyContext(text, news=news)
            # an opening is the first part of a reply, not all of it: saying nothing specific is its job
            found = [d for d, detect in DETECTORS.items() if d != "generic" and detect(opening, ctx)]
            assert found == [], (opening, found)
            if news == "bad":
                assert safety.check(opening, user_text=text, coarse=coarse, risk=NONE).ok, opening
        follow = openings.follow_up(name, text)
        assert follow.endswith(("?", ".", "!")) and follow not in options


def test_openings_vary_by_message_and_never_repeat_the_previous_reply():
    texts = [f"My friend moved away, day {i}." for i in range(12)]
    chosen = {openings.choose("loss", t) for t in texts}
    assert len(chosen) >= 3
    for t in texts:
        first = openings.choose("loss", t)
        again = openings.choose("loss", t, previous_reply=first + " It hurts.")
        assert again != first
    assert openings.choose(None, "anything") == ""


def test_no_cheerful_opening_right_after_bad_news_in_the_conversation():
    earlier = ["My grandmother passed away last night."]
    text = "I keep reaching for my phone to call her on Sunday like always."
    assert fam(text, "grateful", "happy") == "warm"
    assert openings.family(text, label="grateful", coarse="happy", risk=NONE, confidence=0.9, earlier=earlier) is None
    assert openings.family(text, label="sad", coarse="sad", risk=NONE, confidence=0.9, earlier=earlier) == "loss"


@pytest.mark.parametrize("text, said", [
    ("The scan shows it hasn't spread.", "good"),
    ("I GOT THE JOB!!! The one I interviewed for three times", "good"),
    ("The lady next door brought me a plate of dinner.", "good"),
    ("I missed the whole thing and cried in the car.", "bad"),
    ("It's not great, honestly.", "bad"),  # a good word negated
    ("The person who got the role has been here eight months.", None),  # someone else's good news
    ("My boss called it a 'brilliant idea' in front of everyone.", None),  # quoted words are not theirs
    ("Planted tomatoes this weekend.", None),
    ("Finally home, but I lost my keys on the way.", "bad"),  # both, and the turn goes to what went badly
    ("She's excited but I'm a wreck.", "bad"),  # how the person is weighs more than how others are
    ("It was awful but I passed!", "good"),
    ("Mum cried, but she's thrilled.", "good"),
    ("I passed but I'm exhausted and I hate it.", "bad"),
    ("I passed and I'm exhausted.", None),  # no turn: both
    ("Spent my birthday on my own this year.", "bad"),
])
def test_the_message_own_words_say_how_things_went(text, said):
    assert openings.tone(text) == said


def test_good_news_read_as_a_painful_feeling_gets_a_glad_opening_and_bad_news_no_cheer():
    assert fam("The scan shows it hasn't spread.", "afraid", "fear") == "glad"
    assert fam("He said he's recommended me for the role before he goes.", "contempt", "contempt") == "glad"
    assert fam("Of course I was in the kitchen and missed it.", "impressed", "happy") is None
    assert fam("I cried when she said yes!", "joyful", "happy") is None  # bad words are no sorrow to open on
    assert fam("I had my first conversation in Japanese today.", "impressed", "happy") == "impressed"
    # good and bad words both: no cheer, whatever the vote read
    assert fam("My coach, the best I've ever had, is leaving in June.", "hopeful", "happy") is None
    for opening in openings.BANK["glad"]:
        assert not DETECTORS["tone_mismatch"](opening, ReplyContext("x", news="good"))


def test_a_question_after_a_risk_signal_is_still_answered():
    assert fam("Is it stupid to try again?", "sad", "sad", asks=True, risk=RiskAssessment(level="care")) == "answer"
    assert fam("I'm fine I guess.", "sad", "sad", risk=RiskAssessment(level="care")) == "care"


def test_plain_news_read_as_joy_by_an_unsure_vote_gets_no_cheer():
    # nothing in the words says it went well and no "!" shares it: no "Oh, that's great news!"
    assert fam("Bought milk and bread on the way home.", "happy", "happy", confidence=0.5) is None
    assert fam("Mateo is seventeen and barely speaks to me.", "surprised", "surprised", confidence=0.45) is None
    # the writer shares it, or the vote is sure: the cheerful family stays
    assert fam("Bought a new bike today!", "happy", "happy", confidence=0.5) == "joy"
    assert fam("My twins started school this week.", "excited", "happy", confidence=0.8) == "excited"


def test_thanks_for_the_talk_is_met_with_gladness_not_a_celebration():
    assert fam("Thanks for listening, that actually helped.", "grateful", "happy") == "thanked"
    assert fam("talking to you really helps", "content", "happy") == "thanked"
    assert fam("Thanks for listening but I still feel awful.", "grateful", "happy") != "thanked"
    assert fam("Thanks for listening. My dad died last week.", "sad", "sad") == "loss"
    assert fam("Thanks, the nurse was lovely to us.", "grateful", "happy") == "warm"  # thanks to someone else


@pytest.mark.parametrize("text, thanks", [
    ("thank you. he'd have liked you, he'd talk to anyone", True),
    ("thanks!", True),
    ("Thanks, but no.", False),  # a refusal
    ("Thank you, she said, and walked off.", False),  # someone else's thanks
    ("cheers for yesterday, talking things through really helped", True),
    ("ok. kettle's on. thanks for keeping me company", True),
    ("Thanks for letting me ramble.", True),  # not said back as "Thanks for letting you ramble."
])
def test_thanks_that_open_a_message_are_to_the_avatar(text, thanks):
    assert openings.thanks_listener(text) is thanks


@pytest.mark.parametrize("text, news, turned", [
    ("It was just my drunk neighbour. He thought it was his house.", None, True),
    ("ok I've timed it twice. feel a bit better actually", None, True),
    ("Update: it was Ollie who had the markers.", {"good": 0.5, "bad": 0.3, "neither": 0.2}, True),
    ("update: it's spread to the liver", {"good": 0.1, "bad": 0.8, "neither": 0.1}, False),  # an update, no turn
    ("update: it's spread to the liver", None, False),  # an update with no reading is no turn
    ("I thought it would get easier but some years it's just as heavy.", None, False),
    ("The deadline moved up a week again.", None, False),
    # relief denied, or no relief at all
    ("I don't feel better at all.", None, False),
    ("The pain relief isn't working.", None, False),
    ("It was only a matter of time before he left.", None, False),
    ("There's no good news yet.", None, False),
    ("it just keeps getting worse", None, False),
    ("It was only a cyst, nothing sinister.", None, True),
])
def test_a_turn_for_the_better_is_relief_or_an_update_the_reader_leans_good_on(text, news, turned):
    assert openings.turned_for_the_better(text, news) is turned


def test_a_turn_for_the_better_gets_no_gloomy_opening_from_the_conversations_feeling():
    relief = "It was just my drunk neighbour. He thought it was his house. The officers walked him home."
    assert fam(relief, "terrified", "fear") == "glad"  # the vote read the fear before it: relief is met gladly
    update = "Update: the head checked the camera and it was Ollie who had the markers."
    assert fam(update, "furious", "angry", news={"good": 0.5, "bad": 0.3, "neither": 0.2}) is None
    assert fam(update, "furious", "angry", news={"good": 0.2, "bad": 0.6, "neither": 0.2}) == "unfair"
    assert fam("Someone is trying the door handle. The officers are on their way.", "terrified", "fear") is not None
    # bad words of its own keep the gentle opening ("thankfully" does not make a loss a turn for the better)
    assert fam("Thankfully it was quick, but we lost him this morning.", "devastated", "sad") == "loss"


def test_a_message_turned_on_what_came_before_with_though_gets_no_opening_its_words_do_not_bear_out():
    # the vote carries the conversation's earlier feeling; the "though" that ends a clause turns against it
    assert fam("he was totally fine this evening though, we did the crossword together", "disappointed", "sad") is None
    assert fam("My future mother-in-law has opinions though. About everything.", "excited", "happy") is None
    assert fam("he was totally fine this evening, we did the crossword together", "disappointed", "sad") == "letdown"
    # words of the vote's own kind keep its opening, "even though" is no turn, and a turn to bad news is met gently
    assert fam("Still cringing about that silence though.", "embarrassed", "sad") is not None
    assert openings.tone("so cringey") == "bad"
    assert not openings.turns_on_it("even though it rained we had a lovely time")
    assert fam("I miss him though", "sad", "sad") is not None


@pytest.mark.parametrize("text, label", [
    ("My card wouldn't work at the supermarket and the woman behind me just paid for my whole shop.", "embarrassed"),
    ("My flatmate has been carrying my laundry up three flights of stairs without me even asking.", "angry"),
    ("the nurse sat with me before the procedure and held my hand", "afraid"),
])
def test_a_kindness_done_to_the_person_is_met_as_kindness_whatever_the_vote_read(text, label):
    assert openings.kindness(text) and openings.tone(text) == "good"
    assert openings.family(text, label=label, coarse="", risk=NONE, confidence=0.9) == "kind"
    for opening in openings.BANK["kind"]:  # said to a message the vote read as painful: the guard lets it through
        assert safety.check(opening, user_text=text, coarse="sad", risk=NONE).ok


@pytest.mark.parametrize("text", [
    "My boss made me redo the whole report.",  # made to do something: no kindness
    "i handed my notice in yesterday.",  # handed in by the person, not to them
    "She's the one who helped me through my divorce and now she's moving to Australia.",  # bad news named
])
def test_no_kindness_is_read_where_none_was_done_or_bad_news_is_named(text):
    fam = openings.family(text, label="sad", coarse="", risk=NONE, confidence=0.9)
    assert fam not in ("warm", "glad")


GRADUATION = "I sent the family group chat photos from my graduation. 14 people in that chat. two replies."


def test_good_words_count_only_where_the_news_reader_does_not_lean_to_bad_news():
    leans_bad, leans_good = {"good": 0.3, "bad": 0.5, "neither": 0.2}, {"good": 0.6, "bad": 0.3, "neither": 0.1}
    assert openings.tone("My results came back and I passed.") == "good"
    assert openings.told("My results came back and I passed.", leans_good) == "good"
    assert openings.told("My results came back and I passed.", leans_bad) is None
    assert openings.told("My results came back and I passed.") == "good"  # no reader: the words alone
    # a kindness or relief is read by phrases surer than the reader
    kind = "the woman behind me just paid for my whole shop"
    assert openings.told(kind, leans_bad) == "good"
    assert openings.told("Phew, it all worked out.", leans_bad) == "good"
    # bad words keep cheer away whatever the reader says
    assert openings.told("I failed again.", leans_good) == "bad"


def test_good_words_the_reader_does_not_bear_out_against_a_painful_vote_get_no_opening():
    leans_bad = {"good": 0.45, "bad": 0.5, "neither": 0.05}
    assert openings.tone(GRADUATION) == "good"
    assert fam(GRADUATION, "lonely", "sad", news=leans_bad) is None  # neither "Oh, I'm glad." nor a lonely one
    assert fam(GRADUATION, "lonely", "sad", news={"good": 0.6, "bad": 0.3, "neither": 0.1}) == "glad"
    assert fam(GRADUATION, "lonely", "sad") == "glad"  # without the reader, the words decide as before


@pytest.mark.parametrize("text, right", [
    ("The shop refunded me in full this morning.", True),
    ("My manager apologised for shouting at me in front of everyone.", True),
    ("They gave me my job back.", True),
    ("We won the appeal!", True),
    ("The council cancelled the fine after all.", True),
    ("The airline won't refund us.", False),  # refused
    ("I apologised to her this morning and she hung up.", False),  # the person's own apology
    ("It cost me two hundred quid to get it back from the pound.", False),
    ("They withdrew the offer two days later.", False),
])
def test_a_wrong_put_right_is_read_as_a_turn_for_the_better(text, right):
    assert openings.put_right(text) is right
    assert openings.turned_for_the_better(text) is right or openings.relieved(text)


def test_a_wrong_put_right_gets_no_opening_from_the_conversations_anger():
    # the anger belonged to the rent increase before it: neither "That's so unfair." nor cheer
    assert fam("He replied and said he'd made a mistake, the increase starts in March now.", "angry", "angry") is None
    assert fam("He replied and said it stands, the increase starts next month.", "angry", "angry") == "unfair"


@pytest.mark.parametrize("label", ["caring", "trusting", "faithful", "prepared"])
def test_a_stance_towards_someone_is_no_news_to_open_on(label):
    assert fam("She just texted me 'please just come, nothing else matters'.", label, "happy") is None
    assert fam("I've started writing everything down, dates and who said what.", label, "happy") is None


def test_hope_is_met_gladly_not_as_excitement():
    assert fam("Week 3 update: I put my own socks on this morning.", "hopeful", "happy") == "glad"


@pytest.mark.parametrize("text", [
    "oh brilliant, train cancelled AGAIN. love standing on platform 4 in the freezing cold for an hour",
    "missed the bus and got soaked. great.",
    "then my manager gave him his drink for free. cool cool cool",
    "my brother is staying well out of it as usual. he's in Canada, so convenient for him",
    "£250 release fee plus a £70 ticket. Lovely. Fantastic. Great day.",  # flat praise heaped at the end
])
def test_good_words_said_in_sarcasm_get_no_glad_or_worried_opening(text):
    assert openings.sarcastic(text)
    assert openings.tone(text) == "bad"
    for label, coarse in (("joyful", "happy"), ("anticipating", "happy"), ("terrified", "fear"), ("angry", "angry")):
        chosen = fam(text, label, coarse, news={"good": 0.8, "bad": 0.1, "neither": 0.1})
        assert chosen in ("fed_up", "unfair")
        assert not DETECTORS["tone_mismatch"](openings.choose(chosen, text), ReplyContext(text, news="bad"))


@pytest.mark.parametrize("text", [
    "I got the job. thanks everyone!", "That was brilliant!", "My sister came over. Thank you Jess",
    "Passed my test. Wow!", "Went for a walk by the sea. lovely", "The party was great.",
    "Passed! Lovely. Fantastic!", "The sea was lovely. Brilliant day!",
])
def test_good_words_meant_are_not_read_as_sarcasm(text):
    assert not openings.sarcastic(text)


@pytest.mark.parametrize("text, label, family", [
    ("They laughed at me when I complained.", "annoyed", "unfair"),  # a wrong done to them
    ("My landlord kept my entire deposit", "annoyed", "unfair"),
    ("my son's school called again", "annoyed", "fed_up"),  # annoyance with no one to blame: no "You didn't deserve that."
    ("flight to Lisbon cancelled 45 mins before boarding", "annoyed", "fed_up"),
    ("accidentally replied all to a company wide email", "angry", "sting"),  # their own mishap
    ("I lost my temper with my son this morning, shouted at him over his shoes", "furious", "guilt"),
    ("broke my ankle playing five-a-side", "annoyed", "fed_up"),  # an injury is no mishap to be embarrassed of
])
def test_annoyance_and_anger_are_met_as_what_the_message_tells(text, label, family):
    assert fam(text, label, "angry", confidence=0.8) == family


@pytest.mark.parametrize("text", [
    "do I have a right to compensation? they just said 'operational reasons'",
    "is that even legal when he hasnt fixed anything", "can they just do that?", "am I entitled to a refund",
])
def test_a_question_about_the_law_is_answered_as_one_who_does_not_know_the_rules_there(text):
    chosen = fam(text, "angry", "angry", asks=True)
    assert chosen == "rules" and chosen in openings.PARTIAL
    assert openings.choose(chosen, text).startswith(("I'm not sure of the rules", "I don't know the rules"))


def test_other_questions_are_not_about_the_law():
    assert fam("what should I cook tonight?", "neutral", "neutral", asks=True) == "advise"
    assert fam("Is it normal to feel this way?", "sad", "sad", asks=True) == "answer"


def test_a_lost_thing_handed_back_is_a_kindness_even_after_a_mishap():
    text = "dropped my wallet at the station and some bloke ran alongside the train to pass it through the doors"
    assert openings.kindness(text)
    assert fam(text, "furious", "angry", confidence=0.8) == "kind"
    assert openings.kindness("left my phone on the tube and someone handed it in")
    assert not openings.kindness("My brother borrowed my bike and returned it with a flat and no apology.")


def test_anger_just_after_a_mishap_of_the_persons_own_is_met_as_it():
    earlier = ["accidentally replied all to a company wide email"]
    assert openings.family("six hundred people. SIX HUNDRED", label="annoyed", coarse="angry", risk=NONE,
                           confidence=0.8, earlier=earlier) == "sting"
    assert openings.family("and then my boss blamed me for it", label="angry", coarse="angry", risk=NONE,
                           confidence=0.8, earlier=earlier) == "unfair"  # a wrong done to them after it


@pytest.mark.parametrize("text", [
    "she's stoked about the job so i'm trying really hard to be happy for her",
    "I'm happy for him I guess, it's a massive job",
    "I know I should be grateful",
])
def test_a_good_feeling_worked_at_or_hedged_is_no_good_news(text):
    assert openings.tone(text) == "bad"
    assert fam(text, "excited", "happy", confidence=0.8) not in openings._GOOD_FAMILIES


@pytest.mark.parametrize("text", [
    "on the plus side Ellie and I baked a new cake together last night and it was actually lush",
    "at least all the photo albums were upstairs. small mercies",
])
def test_a_good_side_named_is_met_gladly_whatever_the_conversations_feeling(text):
    assert openings.tone(text) == "good"
    assert fam(text, "lonely", "sad", confidence=0.8, news={"good": 0.6, "bad": 0.3, "neither": 0.1}) == "glad"


def test_a_thing_left_to_the_person_is_no_bad_news():
    assert not openings.bad_news_words("turns out my great aunt Dorothy left me her piano")
    assert openings.bad_news_words("my wife left me")


@pytest.mark.parametrize("text, family", [
    ("She's 11. Is that too old to put a dog through surgery like that?", "vet"),
    ("should I take painkillers before the physio", "health"),
    ("do you think the scan will be ok", "health"),
    ("What do people usually do the night before an operation to calm down?", "answer"),  # coping: the model's
    ("any tips for sleeping after surgery?", "advise"),
])
def test_a_question_about_health_is_answered_as_one_who_is_no_doctor(text, family):
    chosen = fam(text, "afraid", "fear", asks=True)
    assert chosen == family and chosen in openings.PARTIAL
    assert openings.choose(chosen, text).startswith("I'm no") == (family in ("health", "vet"))


def test_a_lump_found_harmless_is_met_gladly():
    text = "RESULTS BACK. it's a cyst. completely harmless. I cried in the car park"
    assert openings.relieved(text)
    assert fam(text, "terrified", "fear", confidence=0.8) == "glad"


@pytest.mark.parametrize("label, message, expected", [
    ("disgusted", "a man next to me ate an entire rotisserie chicken. with his hands.", "fed_up"),  # no wrong done
    ("disgusted", "My daughter came home saying some girls told her she smells.", "unfair"),  # done to their child
    ("angry", "he shouted at me in front of everyone", "unfair"),
    ("contempt", "and honestly i stand by it. but i said it at her hen do which was... not ideal", "guilt"),
    ("contempt", "Her name's Jules. She laughs at all my bad jokes.", "unfair"),  # "my bad jokes" is no regret
])
def test_anger_is_met_as_injustice_only_where_a_wrong_was_done(label, message, expected):
    assert openings._family_of(label, message) == expected


def test_feared_news_that_came_to_nothing_is_met_gladly_with_the_hospital_in_it():
    message = "ok i'm back. it's benign!!! i'm sat crying in the hospital car park"
    good = {"good": 0.8, "bad": 0.1, "neither": 0.1}
    assert openings.family(message, label="terrified", coarse="fear", risk=RiskAssessment(), news=good) == "glad"
    # nothing but the hospital and the tears beside the outcome: the outcome is enough, the reader unsure or not
    unsure = {"good": 0.5, "bad": 0.4, "neither": 0.1}
    assert openings.family(message, label="terrified", coarse="fear", risk=RiskAssessment(), news=unsure) == "glad"
    # plain bad news beside it needs the reader sure of good news
    worse = "the lump was benign but they found cancer in my liver"
    assert openings.family(worse, label="terrified", coarse="fear", risk=RiskAssessment(), news=unsure) != "glad"
    assert openings.family("the echo was completely normal, she thinks the chest pain was a pulled muscle",
                           label="terrified", coarse="fear", risk=RiskAssessment(), news=unsure) == "glad"


def test_kind_of_news_an_opening_meets():
    assert openings.kind_of("loss") == "bad" and openings.kind_of("joy") == "good"
    assert openings.kind_of("answer") is None and openings.kind_of(None) is None


@pytest.mark.parametrize("message, expected", [
    ("funeral's friday and they want me to read something. any ideas for a nan who lived for her garden?", "advise"),
    ("my dog died. can you recommend a book for the kids about it?", "answer"),
    ("My dad died last night. What do I even do now?", None),  # no request for ideas: comfort first
    ("I lost my job. any tips for telling my kids that I lost my job?", None),  # the question names the bad news
])
def test_bad_news_with_a_request_for_ideas_is_answered_after_a_gentle_opening(message, expected):
    assert openings.ideas_asked(message, composer.question(message)) == expected


@pytest.mark.parametrize("message, praised", [
    ("fair. you're more patient than my brother, i'll give you that", True),
    ("I like talking to you", True),
    ("haha ok. well you're a good listener anyway", True),  # after a few words of chat
    ("you're right", False),
    ("my boss said you're the best at this", False),  # someone else's words, to someone else
    ("I think you're kind of right", False),
    ("you're killing me", False),
])
def test_praise_of_the_avatar_is_thanked_not_handed_back(message, praised):
    fam = openings.family(message, label="neutral", coarse="neutral", risk=RiskAssessment())
    assert (fam == "praised") is praised
    if praised:
        assert composer.closing(fam, message) in composer.CLOSINGS["thanked"]


def test_tears_right_after_good_news_get_no_gloomy_opening():
    proposal = ["Tom proposed last night!! on the beach where we had our first date"]
    tears = "said yes obviously lol. cried so much my mascara was everywhere"
    assert openings.happy_tears(tears, proposal)
    assert openings.family(tears, label="embarrassed", coarse="sad", risk=RiskAssessment(), earlier=proposal) is None
    assert not openings.happy_tears("I cried a bit, the last 10 days have been brutal", ["she's finally latching!"])
    assert not openings.happy_tears("I cried all night", ["my dog died"])
    assert not openings.happy_tears(tears)  # nothing before it to go by


@pytest.mark.parametrize("text, news, glad", [
    ("i cant stop crying lol", {"good": 0.4, "bad": 0.5, "neither": 0.1}, True),  # told with a laugh
    ("She said not to worry about it at all. I could cry.", {"good": 0.65, "bad": 0.3, "neither": 0.05}, True),
    ("She said not to worry about it at all. I could cry.", {"good": 0.4, "bad": 0.5, "neither": 0.1}, False),
    ("my friend let me cry on her for two hours", {"good": 0.8, "bad": 0.1, "neither": 0.1}, True),
    ("i can hear her crying through the wall lol", {"good": 0.6, "bad": 0.3, "neither": 0.1}, False),  # not theirs
    ("Leo clung to my leg and sobbed", {"good": 0.65, "bad": 0.25, "neither": 0.1}, False),
])
def test_the_persons_own_tears_told_gladly_get_no_gloomy_opening(text, news, glad):
    assert openings.glad_tears(text, news) is glad
    fam = openings.family(text, label="devastated", coarse="sad", risk=RiskAssessment(), news=news,
                          earlier=["so that happened today"])
    assert (fam not in openings._GLOOMY_FAMILIES) if glad else fam is not None


@pytest.mark.parametrize("text, bright", [
    ("at least the train was warm", True),
    ("the payout is more than we hoped, though", True),
    ("on the bright side I finally have time to paint the shed", True),
    ("could have been a lot worse, honestly", True),
    ("it hurt more than I expected", False),  # the message says it went badly before the good side
    ("my car got towed and the fine is awful, at least it's Friday", False),
    ("I need at least 3 hours to get there", False),  # a quantity, no good side
])
def test_a_good_side_of_bad_news_is_found_in_the_message_s_own_words(text, bright):
    assert openings.bright_side(text) is bright


def test_a_good_side_of_bad_news_is_met_as_one_neither_sorrow_nor_cheer():
    earlier = ["They're closing the whole office and I'm out at the end of the month."]
    message = "the payout is more than we hoped, though"
    bad_lean = {"good": 0.3, "bad": 0.6, "neither": 0.1}
    chosen = openings.family(message, label="angry", coarse="angry", risk=NONE, earlier=earlier, news=bad_lean)
    assert chosen == "bright_side"
    for opening in openings.BANK[chosen]:  # no cheer the guard stops, no gloom
        assert safety.check(opening, user_text=message, coarse="angry", risk=NONE).ok
        assert not DETECTORS["tone_mismatch"](opening, ReplyContext(message, news="bad"))
    assert composer.closing(chosen, message) in composer.CLOSINGS["feeling"]
    # good news in its own words and the reader's keeps its glad opening
    good = "on the plus side we went to the beach after and it was gorgeous, so happy"
    assert openings.family(good, label="happy", coarse="happy", risk=NONE, earlier=earlier,
                           news={"good": 0.8, "bad": 0.1, "neither": 0.1}) != "bright_side"
    # bad news named in the message keeps its gentle opening
    assert openings.family("my dad died on sunday. at least he wasn't in pain", label="sad", coarse="sad",
                           risk=NONE) == "loss"


@pytest.mark.parametrize("text, mixed", [
    ("so proud of him for moving out, but the house feels so empty", True),
    ("I'm glad for my sister, honestly, it just stings a bit that it wasn't me", True),
    ("graduation was bittersweet", True),
    ("happy for her I guess but it stings", False),  # a forced good feeling: the hurt is what it says
    ("I'm so happy for her, she deserves it!", False),
])
def test_two_feelings_at_once_are_both_met(text, mixed):
    assert openings.mixed_feelings(text) is mixed
    if mixed:
        chosen = openings.family(text, label="happy", coarse="happy", risk=NONE)
        assert chosen == "mixed"
        assert all(safety.check(o, user_text=text, coarse="sad", risk=NONE).ok for o in openings.BANK[chosen])


def test_fine_insisted_on_is_strain_not_good_news():
    text = "That's fine. Completely fine. Whatever."
    assert openings.sarcastic(text)
    assert fam(text, "joyful", "happy", news={"good": 0.5, "bad": 0.3, "neither": 0.2}) == "fed_up"
    assert not openings.sarcastic("It's fine, the doctor said it's fine.")
    assert not openings.sarcastic("The vet says it's fine. Totally fine.")  # a relief passed on


def test_a_way_out_offered_is_a_turn_for_the_better():
    assert openings.put_right("called the bank and they'll let us spread it over two years")
    assert openings.put_right("the council agreed to a payment plan")
    assert not openings.put_right("they let me go on friday")  # let go: dismissed


@pytest.mark.parametrize("text, goodbye", [
    ("Ha, fair enough. I'm off to hang the washing out. Bye!", True),
    ("going to sleep for approximately a week now. night!", True),
    ("anyway off to work, speak later x", True),
    ("ok gotta go, mum's calling", True),
    ("bye for now x", True),
    ("I said goodbye to him at the station", False),  # someone lost or left, not the person leaving the chat
    ("I'll talk to her later about it", False),
    ("My sister will speak to you soon apparently", False),
    ("I need to go to the doctor tomorrow", False),
    ("it's later than I thought", False),
])
def test_a_goodbye_for_now_is_read_from_the_messages_last_sentence(text, goodbye):
    from e3rg_core.understanding.faults import signs_off

    assert signs_off(text) is goodbye


def test_a_goodbye_is_seen_off_warmly_and_gently_after_bad_news():
    bye = "anyway off to work, speak later x"
    assert fam(bye, "neutral", "neutral") == "signed_off"
    assert openings.family(bye, label="sad", coarse="sad", risk=NONE,
                           earlier=("My dog died on Sunday.",)) == "signed_off_gently"
    # a risk signal comes first; a goodbye that names bad news keeps its gentle family
    assert fam(bye, "neutral", "neutral", risk=RiskAssessment(level="check", category="farewell")) == "care"
    assert fam("My nan died this morning. I need to go, bye.", "sad", "sad") == "loss"
    assert composer.closing("signed_off", bye) == "I hope work goes well."
    assert composer.closing("signed_off", "night all x") == "Sleep well."
    for line in (*openings.BANK["signed_off"], *openings.BANK["signed_off_gently"]):
        ctx = ReplyContext(user_text="I'm off to hang the washing out. Bye!", news="neutral")
        assert not any(DETECTORS[name](line, ctx) for name in DETECTORS), line


def test_a_message_told_with_a_laugh_gets_no_gloomy_opening():
    dad = "my dad was at mile 23 holding a sign that said 'RUN FASTER IM COLD' 😂 he'd been there since 9am"
    assert fam(dad, "terrified", "fear") is None
    assert fam(dad.replace(" 😂", ""), "terrified", "fear") == "worry"  # the vote's reading, as before
    # bad news named, or said to have gone badly, keeps its gentle opening however it is laughed off
    assert fam("my nan died last night lol i don't know how to feel", "sad", "sad") == "loss"
    assert openings.kind_of(fam("worst day ever lol, everything went wrong", "annoyed", "angry")) == "bad"


def test_feared_news_that_came_to_nothing_is_met_gladly_and_hoped_for_news_gently():
    assert fam("BENIGN. it's benign. I'm sat in the car park crying like an idiot", "terrified", "fear") == "glad"
    assert fam("got the all clear from the oncologist today", "anxious", "fear") == "glad"
    assert fam("the doctor thinks it might be benign, I cannot stop shaking", "terrified", "fear") is None  # only hoped
    # a good result told with a bad feeling keeps the vote's gentle opening
    assert openings.kind_of(fam("the scan was clear but I still feel awful and can't sleep", "sad", "sad")) == "bad"


@pytest.mark.parametrize("message", ["big interview tomorrow at 10", "any last tips", "I've been seeing someone for a month"])
def test_a_confident_vote_praises_nothing_the_message_does_not_tell(message):
    fam = openings.family(message, label="confident", coarse="happy", risk=RiskAssessment(), confidence=0.9)
    assert fam != "pride"


@pytest.mark.parametrize("text, good", [
    ("Our baby took her first steps tonight!", True),
    ("Two years sober today.", True),
    ("we got the keys to our first home today", True),
    ("got a distinction in my grade 5 piano", True),
    ("he proposed. I SAID YES", True),
    ("HE PROPOSED 💍😭", True),
    ("he proposed a toast to the bride", False),
    ("it was to give me a raise", True),
    ("the scholarship went to someone else", False),
    ("he's fourteen. we got him the summer my daughter was born", False),
    ("I cut again last night after 4 months clean.", False),
    ("I'm going to ask for a raise next week", False),
])
def test_milestones_told_in_their_own_words_are_good_news(text, good):
    assert (openings.tone(text) == "good") is good


@pytest.mark.parametrize("text, bad", [
    ("Didn't get the job. They went with an internal candidate.", True),
    ("got passed over for promotion again", True),  # "promotion" is no good news here
    ("nobody turned up to my birthday drinks", True),
    ("My hours got cut to 16 a week", True),
    ("got ghosted after the third date", True),
    ("tested positive for covid again", True),
    ("they promoted the manager's golf buddy over me again", True),
    ("nope, they went with someone cheaper", True),
    ("the scholarship went to someone else", True),
    ("they said no problem!", False),
    ("I got the job", False),
])
def test_setbacks_told_in_their_own_words_are_bad_news_whatever_good_word_they_hold(text, bad):
    assert (openings.tone(text) == "bad") is bad


@pytest.mark.parametrize("text, sarcasm", [
    ("lovely, another rejection email to start the week", True),
    ("great, my visa got refused", True),
    ("brilliant, I dropped my phone in the loo", True),
    ("so much for the promotion. they hired from outside", True),
    ("thank you so much for the flowers", False),
    ("Great, see you at six.", False),
    ("Amazing, she's home!", False),
    ("Perfect. And if it's straight out of the fridge?", False),
    ("Great, thanks so much", False),
])
def test_a_good_word_alone_before_something_gone_wrong_is_sarcasm(text, sarcasm):
    assert openings.sarcastic(text) is sarcasm


@pytest.mark.parametrize("said, words", [
    ("Love that for you.", True), ("Truly living the dream.", True), ("Gig's in ten days, brilliant.", True),
    ("So convenient for him.", True), ("You said the car's failed its MOT.", False), ("Third time this week.", False),
])
def test_the_words_sarcasm_tells_bad_news_in_are_known(said, words):
    assert openings.sarcasm_words(said) is words


@pytest.mark.parametrize("text, bad", [
    ("got through the whole presentation without my voice shaking", False),
    ("it was only a sprained wrist, not broken after all", False),
    ("I'm not complaining, mind.", False),
    ("never felt so lonely", True),  # "never" says how much, it denies nothing
    ("i can't stop crying", True),
    ("Wedding is Saturday. Fingers crossed nothing else goes wrong", True),  # something already has
    ("I don't know why I'm so upset", True),  # denied across a clause: not the feeling
])
def test_a_bad_word_denied_just_before_it_tells_no_setback(text, bad):
    assert (openings.tone(text) == "bad") is bad


@pytest.mark.parametrize("text, good", [
    ("slept 9 hours straight last night, first time in weeks", True),
    ("my son rang me just to chat. first time in months", True),
    ("Mum recognised me today. First time in weeks.", True),
    ("dentist tomorrow. first time in like 4 years", False),  # still to come: no news yet
    ("Flying tomorrow for the first time in eleven years.", False),
    ("cried for the first time in years", False),  # a bad word weighs against it
])
def test_something_done_again_after_a_long_gap_is_good_news(text, good):
    assert (openings.tone(text) == "good") is good


def test_a_good_night_after_weeks_of_worry_is_met_gladly_not_with_worry():
    assert openings.kind_of(fam("slept 9 hours straight last night, first time in weeks", "anxious", "fear")) != "bad"


def test_glad_it_helped_is_said_where_they_said_it_helped_and_nowhere_else():
    helped = "just wanted to say thanks for last night, talking it through really helped"
    assert openings.choose("thanked", helped) == "I'm really glad it helped."
    # not twice running: the next opening of the family is said instead
    assert openings.choose("thanked", helped, previous_reply="I'm really glad it helped. Any time.") != \
        "I'm really glad it helped."
    for seed in range(12):
        assert openings.choose("thanked", "ok. gonna put a podcast on. thanks for keeping me company",
                               seed=seed) != "I'm really glad it helped."


@pytest.mark.parametrize("text, said", [
    ("I DID IT. 4:47:12. my legs are not legs anymore", "good"),
    ("they called back. I got it!!!", "good"),
    ("slept 7 hours last night. SEVEN. i feel like a new person", "good"),
    ("Labour was 26 hours and ended in an emergency c-section so I'm pretty battered", "bad"),
    # not a triumph: what was done, told mid-sentence ("know i did it") or going on ("I did it on my own")
    ("i don't want anyone to know i did it", "bad"),
    ("I did it on my own this morning, got stuck on 14 down and nearly lost it.", "bad"),
    # a bad word denied by "won't" tells no setback; "won't stop crying" still does
    ("My sister is coming round tonight so at least I won't be on my own.", None),
    ("in A&E with Maya, she's had a fever of 40 for two days and won't stop crying", "bad"),
])
def test_the_words_people_use_for_a_triumph_a_rough_time_and_a_fear_undone(text, said):
    assert openings.tone(text) == said


def test_two_parts_of_oneself_are_mixed_feelings():
    assert openings.mixed_feelings("part of me is relieved and part of me feels like a complete failure")
    assert not openings.mixed_feelings("part of me is relieved, honestly")


@pytest.mark.parametrize("text, thanks", [
    ("anyway, bye for now and thanks 😊", True),
    ("I think I'll just ask her what she needs from me. Thank you.", True),
    ("manager made me pay for them out of my wages tho. cheers", False),  # "cheers" at the end: as often sarcasm
    ("gave me a leaflet on sleep hygiene, thanks doc", False),
])
def test_thanks_that_end_a_message_are_thanks_to_the_avatar(text, thanks):
    assert openings.thanks_listener(text) is thanks


def test_tears_the_vote_reads_as_embarrassment_get_no_stung_opening_unless_something_went_badly():
    assert fam("Sorry, I'm a bit emotional. My wife is still wiping her eyes in the kitchen.",
               "embarrassed", "sad") is None
    assert fam("cried at mile 24 when i saw my dad holding a sign that said 'RUN FASTER, I'M COLD'",
               "embarrassed", "sad") is None
    assert fam("I tripped on stage in front of the whole school", "embarrassed", "sad") == "sting"  # no tears
    assert fam("cried in front of everyone after the awful review", "embarrassed", "sad") == "sting"  # "awful"


@pytest.mark.parametrize("text", [
    "she just laughed and said it was fine but i wanted the floor to open up and swallow me",
    "bit mortified I was in my sweaty gym stuff for every single photo",
])
def test_shame_in_its_everyday_figures_is_read_as_going_badly(text):
    assert openings.tone(text) == "bad"


def test_someone_elses_mortification_is_not_the_persons_setback():
    assert openings.tone("She messaged me last night saying she's mortified and trying to sort it. So kind") != "bad"


def test_fear_felt_in_the_body_is_the_persons_own_bad_word():
    flight = "First flight in fifteen years, and I'm already sweating just thinking about take-off."
    assert openings.tone(flight) == "bad"
    assert openings.tone("we were sweating in the sun all afternoon, best day") != "bad"
