"""The composed reply's parts: the restatement check, the turned sentence and the closing bank."""

import re

import pytest

from e3rg_core.types import RiskAssessment
from e3rg_core.understanding import composer, safety
from e3rg_core.understanding.faults import ADVICE, CHEERFUL, ReplyContext, faults

LAID_OFF = "I got laid off this morning after twelve years at the company."


@pytest.mark.parametrize("sentence", [
    "You got laid off this morning after twelve years.",
    "You were laid off from the company this morning.",
])
def test_a_faithful_restatement_passes(sentence):
    assert composer.restatement_ok(sentence, user_text=LAID_OFF)


@pytest.mark.parametrize("sentence", [
    "I got laid off this morning after twelve years.",  # the user's voice
    "You got laid off and your wife left you after the argument.",  # facts nobody said
    "You got laid off this morning?",  # a question
    "Your company is great.",  # not about this message (one shared word)
    "You know, getting laid off after twelve years at a company is something that happens to many people.",
])
def test_an_unfaithful_restatement_fails(sentence):
    assert not composer.restatement_ok(sentence, user_text=LAID_OFF)


def test_the_conversations_earlier_words_count_as_said():
    assert composer.restatement_ok("You keep reaching for your phone to call Nana.", user_text=(
        "I keep reaching for my phone to call her."), earlier=("My Nana died on Sunday.",))


@pytest.mark.parametrize("message, said_back", [
    ("My card got declined on a first date.", "Your card got declined on a first date."),
    ("I was told I'm not leadership material.", "You were told you're not leadership material."),
    ("And now we've got a mortgage lol", "Now you've got a mortgage."),
    ("Our dog Biscuit was 14.", "Your dog Biscuit was 14."),
    ("Waiting is the worst part. I've reorganised my kitchen twice.", "You've reorganised your kitchen twice."),
    ("i dont know how to act around her", "You don't know how to act around her."),
    ("Got a parking fine in a free spot.", "You got a parking fine in a free spot."),
    ("I'm so tired of being tired.", "You're so tired of being tired."),
    ("My shift ran three hours over, I guess.", "Your shift ran three hours over."),  # the hedge is not the avatar's
    ("me and Priya finally sorted out the garden", "You and Priya finally sorted out the garden."),  # chat's "I"
    ("nvm I found my keys in the fridge 😂", "You found your keys in the fridge."),  # no filler, no pictograph
    ("counted 40 boxes in the hallway", "You counted 40 boxes in the hallway."),  # a count after a dropped "I"
    ("she invited Tom and me to the wedding", "She invited Tom and you to the wedding."),  # "me" kept an object
])
def test_a_plain_sentence_is_turned_to_you(message, said_back):
    assert composer.flipped(message) == said_back


@pytest.mark.parametrize("message", [
    "Do you remember our conversations?",  # a question
    "You always know what to say to me.",  # to the avatar: "you" cannot be turned
    "A cinema ticket from 2019.",  # nothing of theirs to turn, and no event to report
    "I spent three weeks building the quarterly forecast model in the evenings while my team went home early.",
    "Just tired, I guess.",  # was "You're tired, you guess."
])
def test_a_sentence_that_does_not_turn_safely_is_left(message):
    assert composer.flipped(message) == ""


@pytest.mark.parametrize("message, not_said", [
    ("FOUND IT. It was IN THE BREAD. Baked into the loaf.", "You baked"),  # the ring was baked in
    ("laptop died. the whole thing. won't turn on", "You won't"),
    ("He just rang. Said thanks for being honest.", "You said thanks"),  # he said it
])
def test_a_sentence_without_a_subject_after_one_about_someone_else_is_not_said_as_the_persons(message, not_said):
    assert not composer.flipped(message).startswith(not_said)


def test_a_sentence_without_a_subject_after_the_persons_own_is_theirs():
    assert composer.flipped("Went to the big Tesco. Bought a whole trolley of snacks.") == \
        "You went to the big Tesco."
    assert composer.flipped("Absolutely gobsmacked. Paid off the last of the student loan today.") == \
        "You paid off the last of the student loan today."


@pytest.mark.parametrize("message, said_back", [
    ("She just texted me 'please come home'.", "She just texted you 'please come home'."),
    ("i called my teacher 'mum' in class today. out loud", "You called your teacher 'mum' in class today."),
    # the point before the first comma of a long sentence
    ("I was told in my review that I'm 'not a team player', a week after coming back from sick leave, by "
     "the manager who praised me last year.", "You were told in your review that you're 'not a team player'."),
])
def test_a_quotation_is_said_back_word_for_word(message, said_back):
    assert composer.flipped(message) == said_back


@pytest.mark.parametrize("message", [
    "She texted me 'I'm fine, stop asking'.",  # "I" in the quote: turned, it would change who spoke
    "He wrote 'you never listen' on the card.",  # "you" in the quote is not the avatar
    "She just said 'come over and",  # a quotation left open
])
def test_a_quotation_with_someone_in_it_is_not_said_back(message):
    assert "'" not in composer.flipped(message)


@pytest.mark.parametrize("message, said_back", [
    ("still shaking tho. no way im getting back to sleep", "You're still shaking."),  # "still" before "-ing" kept
    ("paid off the last of the credit card today", "You paid off the last of the credit card today."),
    ("i told her i'd think about it", "You told her you'd think about it."),  # their own telling, turned
    ("nan fell and broke her hip last night", "Your nan fell and broke her hip last night."),  # kin named bare
    ("Dad's been diagnosed with Parkinson's.", "Your dad's been diagnosed with Parkinson's."),
    ("the kitten didn't make it through the night", "You said the kitten didn't make it through the night."),
    ("the dog needs a walk in a bit", "You said the dog needs a walk in a bit."),  # a present tense
    ("results day. got AAB. needed AAA for Edinburgh", "You got AAB."),  # two words, when nothing longer turns
    ("can't breathe lol. got into Edinburgh for medicine", "You got into Edinburgh for medicine."),
    ("bike got nicked from outside the library", "You said the bike got nicked from outside the library."),
    ("results were awful, failed maths and chemistry", "You said the results were awful, failed maths and chemistry."),
    ("turns out it was only a sprain", "You said it was only a sprain."),  # "turns out" is no part of what happened
    ("mate cancelled again. that's four times now", "Your mate cancelled again."),
    ("Neha's mother has flown in from Delhi", "You said Neha's mother has flown in from Delhi."),  # no "the neha's"
    ("JUST GOT THE CALL. benign!!! I'm sat in the car crying", "You got the call."),  # not "You gOT THE CALL."
    ("GOT THE JOB!!! the deputy manager one at the nursery", "You got the job."),  # three short words shouted
    ("i cant stop crying lol my mum came running in", "You can't stop crying."),  # the laugh ends a clause
    ("it went to 400 people. including the CEO, who wrote it", "You said it went to 400 people."),  # no "You're including"
    ("i tried making it last week and it was... not the same lol",
     "You tried making it last week and it was not the same."),  # the trailing off is no sentence's end
    ("got about £400 in savings so. yeah", "You got about £400 in savings."),
    ("flight to Lisbon cancelled 45 mins before boarding",
     "You said the flight to Lisbon was cancelled 45 mins before boarding."),  # its "was" left out
    ("surgery postponed for the third time", "You said the surgery was postponed for the third time."),
    ("only problem is I live in a third floor flat with no lift", "You live in a third floor flat with no lift."),
    ("like word for word, he didn't even change the chart colors",
     "You said he didn't even change the chart colors."),  # what follows a short lead-in
    ("oh great the landlord is putting the rent up again. £150 a month more",
     "You said the landlord is putting the rent up again."),  # the sarcastic cheer left off
    ("honestly, I can't be bothered", "You can't be bothered."),
    ("Josh ate Ellie's leftover cake and Ellie put a note on the fridge",
     "You said Josh ate Ellie's leftover cake and Ellie put a note on the fridge."),
    ("said sorry at the school gate but I don't think it landed",
     "You said sorry at the school gate but you don't think it landed."),
    ("it said 'lol no chance' and it was the committee asking for volunteers",
     "You said it said 'lol no chance' and it was the committee asking for volunteers."),  # a quotation kept whole
    ("car's broken again, third time this month", "You said the car's broken again, third time this month."),
    ("diagnosed with type 1 diabetes at 34", "You were diagnosed with type 1 diabetes at 34."),  # done to them
    ("so tired of being the only one who ever cleans in this house",
     "You're tired of being the only one who ever cleans in this house."),  # how they are, "I'm" left out
    ("thrilled to report my laptop died an hour before the deadline",
     "Your laptop died an hour before the deadline."),  # the cheer, sarcastic or not, is not said back
    ("made redundant this morning, cardboard box and all", "You were made redundant this morning, cardboard box and all."),
    ("waited 8 hours in A&E and got sent home with paracetamol",
     "You waited 8 hours in A&E and got sent home with paracetamol."),
    ("brilliant, the dog chewed my retainer. 300 quid down the drain", "The dog chewed your retainer."),  # no "Brilliant"
    ("fab, the boiler's packed in and it's minus two outside", "You said the boiler's packed in and it's minus two outside."),
    ("grandad died in his sleep and I didn't get to say goodbye",
     "Your grandad died in his sleep and you didn't get to say goodbye."),
    # the kind of news is the listener's to take, not to say back ("Bad news is your insurance...")
    ("Bad news is my insurance only covers 6 sessions. Figures.", "Your insurance only covers 6 sessions."),
    ("the good news: my knee doesn't need surgery", "Your knee doesn't need surgery."),
    ("the worst part is I still have to give back his drill", "The worst part is you still have to give back his drill."),
    # a past tense that does not end in "-ed" says what happened as well ("broke", "slept", "threw")
    ("the washing machine broke. mid cycle. full of the baby's clothes", "You said the washing machine broke."),
    ("anyway the baby slept 7 hours straight last night", "You said the baby slept 7 hours straight last night."),
    # a name's or a day's with two words after it: no "the" before it
    ("today's quick chat was 50 minutes about font choices",
     "You said today's quick chat was 50 minutes about font choices."),
    ("Mateo's school play was tonight", "You said Mateo's school play was tonight."),
    ("update: puppy's parvo test was negative", "You said the puppy's parvo test was negative."),
    # "haven't" with its "I" left out is the person's
    ("haven't slept more than 3 hours a night for about two weeks",
     "You haven't slept more than 3 hours a night for about two weeks."),
])
def test_fragments_and_family_named_bare_are_said_back(message, said_back):
    assert composer.flipped(message) == said_back


@pytest.mark.parametrize("message", [
    "still nothing from the hospital",  # "still" before no verb: no subject to give it
    "her dad's in hospital again",  # someone else's dad: reported, never "your dad"
    "the lads tonight",  # no verb
    "offer accepted on the flat!!!",  # a headline piece, no sentence: "You said the offer accepted..." is none
    "work is running a quiz this week",  # their own workplace, not "the work"
    "RESULTS ARE IN. benign!!!",
    "walked past me in the corridor like I wasn't there",  # who walked past is not said: never "You walked past you"
    "Asking for me.",
])
def test_no_subject_or_family_is_invented(message):
    said = composer.flipped(message)
    assert not said.startswith(("You're", "Your", "You still"))


def test_the_model_may_not_restate_what_the_person_told_or_asked():
    assert not composer.restatement_ok("You told her you'd think about it.", user_text="i told her i'd think about it")
    assert composer.restatement_ok("You told her you'd think about it.", user_text="i told her i'd think about it",
                                   begins_you=False)


def test_a_sentence_about_someone_else_is_reported_as_theirs():
    assert composer.flipped("The other boy got nothing.") == "You said the other boy got nothing."
    assert composer.restatement_ok("You said the other boy got nothing.", user_text="The other boy got nothing.",
                                   begins_you=False)
    assert not composer.restatement_ok("You said the other boy got nothing.", user_text="The other boy got nothing.")


def test_closings_for_bad_news_are_neither_cheerful_nor_advice():
    for group in ("loss", "lonely", "worry", "unfair", "sting", "letdown", "hard", "care"):
        for line in composer.CLOSINGS[group]:
            assert CHEERFUL.search(line.lower()) is None and ADVICE.search(line.lower()) is None, line
            assert not faults(line, ReplyContext(LAID_OFF, news="bad"), names=["third_person", "emotion_label"])


def test_closings_that_follow_news_nobody_read_suit_good_news_and_bad_alike():
    # "plain" and "feeling" close a reply to news the vote was unsure of: neither cheer ("I'd love to hear
    # more." to a thumbs-up reply) nor gloom, and nothing the guard stops said to a painful feeling
    for group in ("plain", "feeling"):
        for line in composer.CLOSINGS[group]:
            for news in ("bad", "good"):
                assert not faults(line, ReplyContext(LAID_OFF, news=news), names=["tone_mismatch", "advice_or_blame"])
            assert safety.check(line, user_text=LAID_OFF, coarse="sad", risk=RiskAssessment()).ok, line


def test_a_closing_is_varied_avoids_the_previous_reply_and_repeated_words():
    lines = {composer.closing("loss", f"message {i}") for i in range(40)}
    assert len(lines) > 3
    previous = composer.closing("loss", LAID_OFF)
    assert composer.closing("loss", LAID_OFF, previous_reply=f"I'm so sorry. {previous}") != previous
    chosen = composer.closing("hard", LAID_OFF, said="You lost your job. How are you holding up?")
    assert "you" not in chosen.lower().split()
    # a word of the opening is not said again, even where every closing shares some small word with the reply
    chosen = composer.closing("unfair", "got home 3 hours late", said="No wonder you're upset. You got home 3 hours late.",
                              previous_reply="Ugh, how maddening. That's not right at all.")
    assert "upset" not in chosen


@pytest.mark.parametrize("sentence, message", [
    ("You lost your dad this morning.", "My best friend Lena lost her dad this morning."),  # her dad, not yours
    ("You texted Lena to come this morning.", "Lena texted me this morning: please come."),  # she did, not you
])
def test_a_restatement_that_swaps_who_did_what_fails(sentence, message):
    assert not composer.restatement_ok(sentence, user_text=message)


def test_a_restatement_that_keeps_who_did_what_passes():
    assert composer.restatement_ok("Your best friend Lena lost her dad this morning.",
                                   user_text="My best friend Lena lost her dad this morning.")


@pytest.mark.parametrize("message, asks", [
    ("how do i bring it up without it turning into a fight", True),  # no question mark typed
    ("do you think there's life on other planets", True),
    ("Any tips for sleeping on a plane", True),
    ("what helps with a stiff neck after a long drive", True),
    ("please tell me you know a better joke than that", True),  # a request, with no question mark
    ("what helps is the walk to work", False),  # "what helps" as the subject of a statement
    ("Did it anyway.", False),  # the end mark says it is no question
    ("What a day.", False),
    ("Was up all night", False),
    ("any last tips", True),
    ("off to the curry house later. any suggestions what to order", True),
    ("is it daft to book a table for one. asking for a friend", True),  # a question's shape, typed with a stop
    ("should we just cancel.", True),
    ("Can I just say, you were brilliant.", False),
    ("Am I glad I went.", False),
    ("which is great except the boiler's gone again", False),  # goes on from the message before
    ("which is better, the 8am or the 10am", True),
])
def test_a_question_is_heard_with_or_without_its_question_mark(message, asks):
    assert composer.asks_listener(message) is asks


def test_a_question_is_not_said_back_as_a_statement():
    assert composer.flipped("how do i tell him without him kicking us out") == ""
    assert composer.question("My dad fell. how do i help someone who hates help") == "how do i help someone who hates help"


def test_a_gap_is_spoken_of_only_after_a_loss():
    lines = {composer.closing("loss", f"My dad was diagnosed with something, day {i}.") for i in range(40)}
    assert "That leaves such a gap." not in lines
    lines = {composer.closing("loss", f"My dad died on day {i}.") for i in range(40)}
    assert "That leaves such a gap." in lines


def test_a_hope_is_spoken_of_only_where_one_was():
    lines = {composer.closing("letdown", f"They made my whole team redundant on day {i}.") for i in range(40)}
    assert "After all that hope, too." not in lines
    lines = {composer.closing("letdown", f"Didn't get the flat, day {i}.", earlier=["I applied for a flat"])
             for i in range(40)}
    assert "After all that hope, too." in lines


def test_glad_closings_are_calm_and_give_no_advice():
    for group in ("glad", "impressed"):
        for line in composer.CLOSINGS[group]:
            assert ADVICE.search(line.lower()) is None, line
            assert not faults(line, ReplyContext("The scan came back clear.", news="good"),
                              names=["tone_mismatch", "third_person", "emotion_label"])


def test_every_closing_passes_the_screening_a_reply_sentence_gets():
    from e3rg_core.understanding.engine import SCREENED_FAULTS
    for group, lines in composer.CLOSINGS.items():
        for line in lines:
            for news in ("bad", "good", "neutral"):
                ctx = ReplyContext("I went to the shop and it was closed.", news=news)
                assert not faults(line, ctx, names=SCREENED_FAULTS), (group, line)


@pytest.mark.parametrize("message, said_back", [
    ("Sorry if I'm not making much sense, everything feels foggy and slow.", "You said everything feels foggy and slow."),
    ("Update: a different officer reviewed it and cancelled the fine.",
     "You said a different officer reviewed it and cancelled the fine."),
    ("Today Mia came out grinning because she'd been picked for the team!",
     "You said today Mia came out grinning because she'd been picked for the team."),
])
def test_the_point_is_said_back_not_the_preamble(message, said_back):
    assert composer.flipped(message) == said_back


@pytest.mark.parametrize("message, said_back", [
    # someone's words to the person, no second "said"
    ("They said they'd call by Friday.", "They told you they'd call by Friday."),
    ("The nurse said her oxygen levels finally came up this morning.",
     "The nurse told you her oxygen levels finally came up this morning."),
    ("The nurse said 'you can go home tomorrow if your numbers stay good.'",
     "The nurse said you can go home tomorrow if your numbers stay good."),
    # a quotation with "I" or "you" in it, reported
    ("My mum told me 'I never wanted you to quit piano.'", "Your mum told you she never wanted you to quit piano."),
    ("My sister said 'you always make everything about you.'", "Your sister said you always make everything about you."),
    # an answer's "yeah," or "no," and texting's "bro", "idk" are not said back
    ("No, I haven't taken a day off since March.", "You haven't taken a day off since March."),
    ("bro i aced the driving test first try", "You aced the driving test first try."),
])
def test_what_someone_said_is_told_back_once(message, said_back):
    assert composer.flipped(message) == said_back


def test_a_said_that_is_not_someone_telling_them_keeps_the_report():
    # a thing does not tell anyone anything; a "said" deep in the sentence is left as it was
    assert composer.flipped("It said the meeting could have been an email.").startswith("You said it said")
    assert composer.flipped("The surgery went fine but the doctor said recovery will take four months.").startswith(
        "You said the surgery")


def test_a_question_typed_as_it_is_said_is_heard():
    assert composer.asks_listener("wat would u even do")


@pytest.mark.parametrize("message, said_back", [
    ("whole team. no warning.", "Whole team, no warning."),
    ("ugh worst day ever tbh", "Worst day ever."),
    ("Pneumonia. He's 82.", "Pneumonia, he's 82."),
    ("my flight. cancelled. again.", "Your flight, cancelled, again."),
    ("Dinner. Maria cancelled.", "Dinner. Maria cancelled."),  # a name keeps its capital
    # a count of something with no verb may be longer than a short piece
    ("Three days of the same migraine now.", "Three days of the same migraine now."),
    ("Last day at the post office today. 41 years.", "Last day at the post office today. 41 years."),
    ("driving test 8:40 tomorrow. third attempt", "Driving test 8:40 tomorrow, third attempt."),  # a time
])
def test_a_message_of_short_pieces_is_echoed_as_it_came(message, said_back):
    assert composer.echoed(message) == said_back
    assert composer.flipped(message) == ""  # nothing in it to turn


@pytest.mark.parametrize("message", [
    "I'm fine.",  # the person as a subject: "You're fine." would be no listening
    "ok",  # nothing to say back
    "Monday.",
    "Did you see the match?",  # a question
    "You always say that.",  # to the avatar
    "Rain, rain, rain, all week, every single day, and the roof is leaking again.",  # too long to echo
    "Gave the best man speech yesterday.",  # the person is its left-out subject
    "Put posters up on every lamppost on our street.",  # the same, however long
    "Three days the landlord took to answer my email.",  # a count with someone doing something in it
])
def test_a_message_that_is_no_fragment_is_not_echoed(message):
    assert composer.echoed(message) == ""


@pytest.mark.parametrize("message, piece", [
    ("Driving test on Thursday. Fourth attempt.", "Fourth attempt."),
    ("zoe just came out, ate the toast and said thanks. small win", "Small win."),
    ("I miss her so much. My best friend.", "Your best friend."),  # "my" turned to "your"
    ("the bar exam. third try. lol", "Third try."),  # the filler left off
])
def test_a_message_is_answered_with_the_short_piece_it_ends_on(message, piece):
    assert composer.last_piece(message) == piece


@pytest.mark.parametrize("message", [
    "still shaking tho. no way im getting back to sleep",  # the person as a subject
    "results day. got AAB. needed AAA for Edinburgh",  # the person its left-out subject
    "Driving test on Thursday. Fourth attempt?",  # a question
    "Fourth attempt. You think I'm mad?",  # to the avatar
    "third interview. nothing.",  # one word of its own
    "My sister rang to say the whole family is coming for Christmas this year",  # no short piece
    "She said 'never again'.",  # a quotation
])
def test_no_short_piece_is_said_back_where_it_would_speak_for_the_person(message):
    assert composer.last_piece(message) == ""


def test_a_long_sentence_is_said_back_without_the_circumstance_that_ends_it():
    message = "My flatmate Jonas has been carrying my laundry up and down three flights of stairs without me even asking."
    assert composer.flipped(message) == (
        "Your flatmate Jonas has been carrying your laundry up and down three flights of stairs.")


def test_thank_you_very_much_at_the_end_is_no_thanks_to_the_avatar():
    assert composer.flipped("I'm staying inside with tea, thank you very much.") == "You're staying inside with tea."


def test_a_promise_to_say_how_it_goes_is_met_with_wanting_to_hear():
    line = composer.closing("thanked", "thanks for listening. I'll let you know how it goes")
    assert line == "I'll be rooting for you."
    assert composer.closing("thanked", "thanks for listening") in composer.CLOSINGS["thanked"]
    nervous = "thanks for listening. I'm nervous, I'll let you know how it goes"
    assert safety.check(line, user_text=nervous, coarse="fear", risk=RiskAssessment(level="care")).ok
    context = ReplyContext(nervous, news="bad", asks=False)
    assert not faults(line, context, names=("speaker_voice", "tone_mismatch"))  # not their words as the avatar's


@pytest.mark.parametrize("message", ["which one would you go for", "Which of them should I pick", "u ever been to japan",
                                     "you think she meant it", "what about you", "any thoughts", "how's your day going",
                                     "random question but what's your favourite season", "shud i say smth or not"])
def test_a_which_question_is_heard_without_its_question_mark(message):
    assert composer.asks_listener(message)


@pytest.mark.parametrize("message", ["You think you know someone.", "Ever since then it has been hard.",
                                     "I thought about you.", "what's the point of feedback like that"])
def test_a_statement_with_question_words_in_it_asks_nothing(message):
    assert not composer.asks_listener(message)


def test_a_message_in_capitals_is_said_back_in_sentence_case_not_shouted():
    assert composer.unshouted("THEY JUST RANG AND SAID THEY'LL STILL TAKE ME!!!") == (
        "They just rang and said they'll still take me!!!")
    assert composer.flipped("I GOT THE JOB. I'M SO HAPPY") == "You got the job."
    assert composer.unshouted("ugh my roomate ate my leftovers AGAIN") == "ugh my roomate ate my leftovers AGAIN"
    assert composer.unshouted("the UK NHS waiting list") == "the UK NHS waiting list"  # two acronyms kept


@pytest.mark.parametrize("message, said_back", [
    ("vet says its prolly a tooth thing but they wanna do bloodwork",
     "The vet tells you it's probably a tooth thing but they want to do bloodwork."),
    ("ill call her tmrw", "You'll call her tomorrow."),
    ("its 2:40am and theres a scraping noise coming from the loft",
     "You said it's 2:40am and there's a scraping noise coming from the loft."),
])
def test_chat_spellings_are_said_back_in_full(message, said_back):
    assert composer.flipped(message) == said_back


@pytest.mark.parametrize("text", ["I feel ill", "ill again today", "its tail was wagging", "Team A v Team B",
                                  "the dog wagged its 2 ears"])
def test_words_that_only_look_like_chat_spellings_are_kept(text):
    assert composer.spelled_out(text) == text


def test_an_answer_to_whats_yours_is_said_back_without_mine():
    assert composer.echoed("mine's autumn. conkers, jumpers, no wasps") == "Autumn, conkers, jumpers, no wasps."
    assert composer.echoed("Mine is my nan's dumplings. nobody makes them like her") == (
        "Your nan's dumplings, nobody makes them like her.")


@pytest.mark.parametrize("message, said_back", [
    ("Five years today since Mum died.", "Five years today since your mum died."),
    ("I rang Dad last night and he didn't pick up.", "You rang your dad last night and he didn't pick up."),
    ("My mum and dad are splitting up.", "Your mum and dad are splitting up."),  # one "your" for both
    ("the ambulance took four hours to come for my 90-year-old dad",
     "The ambulance took four hours to come for your 90-year-old dad."),
    ("Her dad rang me.", "Her dad rang you."),  # someone else's dad stays theirs
])
def test_a_parent_named_bare_is_said_back_as_theirs(message, said_back):
    assert (composer.flipped(message) or composer.echoed(message)) == said_back


@pytest.mark.parametrize("message, said_back", [
    ("cried at mile 24 when i saw my dad holding a sign that said 'RUN FASTER, I'M COLD'",
     "You cried at mile 24 when you saw your dad holding a sign."),
    # the quotation had been said back turned ("a card that says 'best your mum ever'")
    ("my son made me a card that says 'best mum ever'", "Your son made you a card."),
])
def test_words_shown_on_a_thing_are_left_off_what_happened(message, said_back):
    assert composer.flipped(message) == said_back


def test_a_thing_or_person_named_bare_before_what_they_think_is_reported_as_theirs():
    # chat leaves out "the": "doctor reckons..." is the doctor's view, reported, not the person's
    assert composer.flipped("doctor reckons it's stress from the house move. gave me a leaflet") == \
        "You said the doctor reckons it's stress from the house move."


def test_a_parent_in_a_quotation_is_left_as_it_was_said():
    assert composer.owned_kin("You called your boss 'mum' in a meeting.") == "You called your boss 'mum' in a meeting."


@pytest.mark.parametrize("message, ahead", [
    ("Flying tomorrow for the first time in eleven years.", True),
    ("My parents are flying in for the defence in May.", True),
    ("We're going to Japan next week!", True),
    ("I got the job! I start next month.", False),  # something done: how it went may be asked
    ("First time in a month I've eaten a proper meal.", False),
    ("Our baby took her first steps tonight!", False),
])
def test_something_still_to_come_is_told_apart_from_something_done(message, ahead):
    assert composer.ahead(message) is ahead


def test_joy_about_something_to_come_is_not_asked_how_it_went():
    message = "Flying tomorrow for the first time in eleven years."
    for group in ("good", "glad", "surprise", "impressed", "pride"):
        lines = {composer.closing(group, message, seed=seed) for seed in range(40)}
        done = [line for line in lines if re.search(r"\b(?:did|was|celebrating|paid off|earned)\b", line.lower())]
        assert not done, (group, lines)
    assert "What are you most looking forward to?" in {composer.closing("good", message, seed=s) for s in range(40)}


def test_a_kindness_is_met_as_one_not_as_a_celebration():
    lines = {composer.closing("warm", f"The lady next door brought me soup, day {i}.") for i in range(40)}
    assert lines <= set(composer.CLOSINGS["glad"])


@pytest.mark.parametrize("message, answer", [
    ("Do you think it's normal to feel numb more than sad?", "It's completely normal to feel numb more than sad."),
    ("Is it weird that I feel guilty for never going to lunch with him when he asked?",
     "It's not weird at all to feel guilty for never going to lunch with him when he asked."),  # not "you feel guilty"
    ("Is it okay that I'm still angry at him?", "It's completely okay to still be angry at him."),
    ("My friend keeps cancelling on me. Am I wrong to be annoyed?", "I don't think you're wrong to be annoyed."),
    ("Am I being petty for being hurt by that?", "I don't think you're being petty for being hurt by that."),
    ("am i overreacting??", "I don't think you're overreacting."),
    ("Is it normal to cry at the school gate?", "It's completely normal to cry at the school gate."),
    ("am I being silly? I just want to hold her", "I don't think you're being silly."),  # a feeling judged
    ("I forgot her birthday. Am I a terrible friend?", "I don't think you're a terrible friend."),
    ("does that make me a bad mum", "I don't think you're a bad mum."),
    ("is it normal to feel jealous of couples at the park", "It's completely normal to feel jealous of couples at the park."),
])
def test_a_question_whether_a_feeling_is_all_right_is_answered_in_their_words(message, answer):
    said = composer.reassured(message)
    assert said == answer
    assert not faults(said, ReplyContext(message, news="bad", asks=True))


@pytest.mark.parametrize("message", [
    "Am I being unreasonable if I ask for a meeting with the head teacher?",  # something to do, not a feeling
    "Is it okay to keep that from my dad for now?",
    "Am I wrong to want to cancel the wedding?",
    "Is it normal to feel like everyone would be better off without me?",  # to be asked about, never waved through
    "Is it normal to feel empty all the time?",
    "Is it normal to feel happy about him getting hurt?",  # harm to someone
    "Is it normal to feel numb after the surgery?",  # the body's state is no listener's to call normal
    "What do you think about that?",
    "Am I overreacting if I tell him to leave?",  # something to do
    "I hit him. Am I a bad person?",
    "I slapped my son today. Am I a terrible parent?",
    "Is it normal to feel tired while pregnant?",  # the body's state
])
def test_no_reassurance_where_it_is_not_a_listeners_to_give(message):
    assert composer.reassured(message) == ""


def test_no_reassurance_of_a_person_who_told_of_harm_just_before():
    assert composer.reassured("am I a terrible parent", ["I smacked him this morning.", "he cried for an hour"]) == ""
    assert composer.reassured("am I a terrible parent", ["I shouted at him this morning."]) == (
        "I don't think you're a terrible parent.")


def test_a_question_typed_with_a_full_stop_is_not_said_back_as_a_statement():
    assert composer.flipped("what do I wear. is a blazer too much") == ""
    assert composer.asks_listener("what do I wear. is a blazer too much")
    assert composer.asks_listener("is a blazer too much")
    assert not composer.asks_listener("the blazer is too much.")
    # ... after a lead-in ("real question", "like") or at the end of what it weighs up
    assert composer.asks_listener("ok real question do u think a tiny wedding is rude to family")
    assert composer.asks_listener("like what do i even do if i stall on the roundabout")
    assert composer.asks_listener("they want me to say a few words, what do i even say")
    assert not composer.asks_listener("like i said, it was fine")
    assert not composer.asks_listener("no idea, what do i know lol. anyway it's done")


@pytest.mark.parametrize("message, expected", [
    ("Is it weird that I haven't washed his bed yet?", "I don't think it's weird at all."),
    ("Would it be daft to try negotiating with him?", "I don't think it would be daft at all."),
    ("My wife says I should open that workshop. Is that mad at my age?", "I don't think it's mad at all."),
    ("Is it bad that part of me is still excited about the flat?",
     "It's not bad at all to still be excited about the flat."),
])
def test_a_question_whether_something_looks_odd_is_answered_that_it_does_not(message, expected):
    assert composer.reassured(message) == expected


@pytest.mark.parametrize("message, earlier", [
    ("is it weird that I haven't eaten in three days?", ()),  # a body's business
    ("is it weird to send one last message?", ()),  # a farewell's words
    ("is it bad that I read her texts?", ()),  # "bad" weighs a deed: the model's to answer
    ("Is that weird?", ("I hit him when he wouldn't stop crying.",)),  # harm told just before
    ("would it be weird to keep it from him?", ("I've been cutting myself again.",)),  # risk told just before
    ("Is that weird?", ("I stole twenty quid from my flatmate's drawer.",)),  # a wrong to someone
])
def test_what_looks_odd_is_not_waved_through_where_it_may_be_harm(message, earlier):
    assert composer.reassured(message, earlier) == ""


@pytest.mark.parametrize("message, earlier, expected", [
    # grief and the body told before are no harm: the question is still answered
    ("would it be weird to ask her cousin for the recipe at the funeral?",
     ("she was holding her hand at the end, no pain", "Gran never wrote the recipe down"), "I don't think it would be weird at all."),
    ("Is it weird that I'm looking forward to the wake?", ("My uncle died in May.",), "I don't think it's weird at all."),
    ("is it silly to ask for a payment plan?", ("there's nothing left to cut from the budget",),
     "I don't think it's silly at all."),
])
def test_what_was_told_before_rules_reassurance_out_only_when_it_is_harm(message, earlier, expected):
    assert composer.reassured(message, earlier) == expected


@pytest.mark.parametrize("message, asks", [
    ("she just texted back 'coffee sunday?' so that's something", False),  # the question mark is hers
    ("WAIT. just got the email. they've let me in anyway????", False),  # amazement, told as news
    ("he said WHAT??", False),
    ("I'm happy for him I guess, it's a massive job. but three weeks??", False),  # disbelief, not a question
    ("what now??", True),
    ("did you see that??", True),
    ("Tell me something nice. I'm begging.", True),  # a request, whatever its end mark
    ("please just distract me", True),
    ("tell me about it.", False),  # agreement, not a request
])
def test_what_asks_the_avatar_something(message, asks):
    assert composer.asks_listener(message) is asks


@pytest.mark.parametrize("message, expected", [
    ("he was actually really sweet, had no idea the walls were so thin",
     "You said he was actually really sweet, had no idea the walls were so thin."),  # "so thin" is no clause
    ("the nurse was lovely tbh, said it's very manageable if i make some changes",
     "The nurse was lovely, said it's very manageable if you make some changes."),  # no space left before a comma
    ("anyway, home now. feet up. never leaving the house again", "You're never leaving the house again."),
    ("then had the nerve to ask me to 'polish it up' before the directors see it", ""),  # someone else did it
    ("Tell me something nice. I'm begging.", ""),  # a request is not said back
])
def test_restatements_keep_the_words_and_who_did_what(message, expected):
    assert composer.flipped(message) == expected


def test_later_parts_start_where_the_message_turns():
    assert composer.later_parts("Got approved for the flat, then Mum rang to say Grandad's back in hospital.") == [
        "Mum rang to say Grandad's back in hospital."]
    assert composer.later_parts("Good evening. My name is Harold. Joan died.") == [
        "My name is Harold. Joan died.", "Joan died."]
    assert composer.later_parts("one plain sentence") == []


def test_a_last_piece_that_leans_on_what_came_before_is_not_said_back():
    assert composer.last_piece("My husband just laughs it off, which is almost worse.") == ""


def test_a_long_sentence_of_short_pieces_with_no_verb_is_said_back_in_its_pieces():
    assert composer.echoed("Good news is no surgery, just 8 weeks of physical therapy.") == \
        "No surgery, just 8 weeks of physical therapy."
    # with a verb it would be the person's sentence word for word, as the avatar's own
    assert composer.echoed("Dialysis itself went smoothly today, no cramps for Bernie.") == ""
    assert composer.last_piece("keeping the dog though. that was non-negotiable") == "That was non-negotiable."


def test_two_words_of_how_someone_is_are_said_back_when_nothing_longer_is():
    assert composer.flipped("They're blooming. The same pale yellow ones she always fussed over.") == \
        "You said they're blooming."
    assert composer.flipped("She's gone. I got the call at six and drove straight there.") == \
        "You got the call at six and drove straight there."  # the person's own sentence comes first


@pytest.mark.parametrize("message, said_back", [
    ("My card wouldn't work at the supermarket and the woman behind me just paid for my whole shop.",
     "Your card wouldn't work at the supermarket."),
    ("update: dev spent all sunday learning the rules on youtube and my dad has now invited him to the test match",
     "Your dad has now invited him to the test match."),
])
def test_someone_named_after_and_in_a_long_sentence_begins_a_clause(message, said_back):
    assert composer.flipped(message) == said_back


@pytest.mark.parametrize("message, said_back", [
    ("I asked her. she said yes before I'd even got the ring out of the box",
     "She said yes before you'd even got the ring out of the box."),
    ("Sorry, I'm a bit emotional. My wife is still wiping her eyes in the kitchen.",
     "Your wife is still wiping her eyes in the kitchen."),
    # a later sentence that leans on the first does not stand in for it
    ("I'm a great-grandmother. I keep saying it out loud to the cat.", "You're a great-grandmother."),
    ("I failed my driving test. Third time this year.", "You failed your driving test."),  # says enough itself
])
def test_a_sentence_that_says_little_gives_way_to_a_later_one_that_says_more(message, said_back):
    assert composer.flipped(message) == said_back


def test_a_quotation_that_ends_its_sentence_ends_it():
    greg = "My manager, Greg, literally said 'we just don't have budget for exceeds this year.' So it's not even about my work."
    assert composer.flipped(greg) == "It's not even about your work."
    assert composer.flipped("My partner Sam says I'm 'being dramatic.' Maybe I am.") == (
        "Your partner Sam says you're 'being dramatic'.")  # the full stop after the quotation, and not "Maybe you are."
    assert composer.question("It says 'Final warning: we are not sleeping.' Too much?") == "Too much?"
    # a fragment that leans on the sentence before it is not said back alone; a question quoted is not told as a statement
    assert "Who" not in composer.flipped('Bloke waves at me, full "heyyy!" He was waving at his wife. Who was behind me.')
    assert "can she" not in composer.flipped("Picked her up and she said 'can I go again tomorrow?'")
