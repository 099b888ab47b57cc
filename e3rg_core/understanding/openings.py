"""The first words of a reply, chosen to fit what the person said: a bank of openings per feeling.

A small model's replies go wrong most visibly in their first words ("You're right!" to a statement,
"Congratulations" to a lump, "I understand your feelings." to everything). A reply that starts from
an opening chosen here cannot start in the wrong tone: bad news gets a gentle one, injustice one
that takes the person's side, joy one that shares it, and a plain message or a question none (the
model answers it directly). The model then writes on from the opening, about what was said.

Openings are varied: several per family, picked by the message (reproducible) and never the one
the previous reply began with.
"""

from __future__ import annotations

import hashlib
import re
from typing import Mapping, Sequence

from e3rg_core.types import RiskAssessment
from e3rg_core.understanding import faults
from e3rg_core.understanding.person import amazed
from e3rg_core.understanding.safety.guard import PASSED_ON, distressed, good_outcome, names_bad_news
from e3rg_core.understanding.safety.text import THANKS_WORDS, canonical

# Family -> openings. Each is a whole short sentence, so it can be spoken while the rest is written.
BANK: dict[str, tuple[str, ...]] = {
    "loss": ("I'm so sorry.", "Oh, I'm so sorry.", "That's so hard.", "I'm really sorry.",
             "Oh no, that's heartbreaking.", "That's a lot of pain."),
    "lonely": ("That sounds really lonely.", "Oh, that's a lonely feeling.", "I'm sorry it feels so lonely."),
    "worry": ("That sounds really scary.", "No wonder you're worried.", "That's a lot of worry to carry.",
              "Oh, that sounds so stressful.", "That's frightening."),
    "unfair": ("That's really unfair.", "Ugh, that's not okay.", "No wonder you're upset.",
               "That sounds so frustrating.", "That's so unfair."),
    # Good words said in sarcasm ("oh brilliant, train cancelled AGAIN", "10 working days. brilliant"): the
    # person is fed up, and neither glad nor afraid.
    "fed_up": ("That sounds so frustrating.", "Ugh, how maddening.", "Oh, that's so frustrating."),
    "sting": ("Oh no, that must have stung.", "Oof, that sounds so awkward.", "Oh, that's a horrible feeling."),
    "guilt": ("That sounds like it's weighing on you.", "It sounds like that's sitting heavily with you."),
    "letdown": ("Oh, that's so disappointing.", "That's such a letdown.", "Oh no, what a letdown."),
    "hard": ("Oh no.", "I'm sorry to hear that.", "That sounds hard.", "Oh, that's tough."),
    "care": ("I hear you.", "Thank you for telling me.", "I'm listening."),
    "memory": ("What a memory.", "Oh, that brings a lot back.", "That's a memory worth keeping."),
    "pride": ("That's a real achievement!", "Well done, that's huge!", "That's something to be proud of!"),
    "warm": ("That's really lovely.", "Oh, that's so kind.", "What a lovely thing."),
    # A kindness done to the person that the vote read as a painful feeling ("the woman behind me just paid
    # for my whole shop" read as embarrassment): kind, in words the guard lets through to a painful feeling.
    "kind": ("Oh, that's so kind.", "That's really kind.", "What a kind thing to do."),
    "excited": ("How exciting!", "Oh, that sounds exciting!", "That's so exciting!"),
    "joy": ("That's wonderful!", "Oh, that's great news!", "I love that!", "That's so good to hear!"),
    "surprise": ("Wow!", "Oh wow, really?", "What a surprise!"),
    # Struck by something (a heron, a stranger's honesty, a child's grit): wonder, not "well done", which
    # praises the person for what someone or something else did.
    "impressed": ("Wow!", "Oh, wow.", "Wow, that's really something."),
    # Good news that the vote read as a painful feeling (a relief, a kindness after a hard week): glad,
    # not jubilant, as the message's own words are surer than the vote but not of which joy it is.
    "glad": ("Oh, I'm so glad.", "I'm really glad.", "Oh, that's good.", "Oh, I'm glad."),
    # Thanks to the avatar itself ("thanks for listening, that helped"): glad it helped, and the door left open.
    "thanked": ("I'm really glad it helped.", "I'm so glad.", "Thank you for saying that."),
    # A goodbye for now ("anyway off to work, speak later x", "I'm off to hang the washing out. Bye!"): seen off
    # warmly, not asked "How do you feel about it?" or about their safety (``signs_off``).
    "signed_off": ("Okay, talk soon!", "Alright, speak soon!", "Okay, catch you later!"),
    # ... after bad news in the conversation: a goodbye that stays gentle.
    "signed_off_gently": ("Okay. Take care of yourself.", "Alright. Go gently.", "Okay. Look after yourself."),
    # Praise of the avatar ("you're more patient than my brother"): thanks, not the praise handed back.
    "praised": ("Aw, thank you.", "That's kind of you to say.", "Thank you, that's really kind."),
    # The start of an answer to a question put to the avatar, not a sentence: the model finishes it, so it
    # answers instead of asking back ("What do you think makes your favourite food special?").
    "answer": ("I'd say", "Honestly, I'd say", "I think"),
    # ... to a question about what the person should do ("What can I do tonight?", "Should I bring food?"):
    # begun in the second person, since after "I think" the model went on as the person ("I think it
    # would be helpful to express my disappointment").
    "advise": ("You could", "Maybe you could", "If it helps, you could"),
    # ... to a question about the law or the person's rights ("do I have a right to compensation?", "is that
    # even legal?"): the small model answered with a verdict ("you don't have a right to compensation"), so
    # the answer begins by saying the avatar cannot know the rules where the person is.
    "rules": ("I'm not sure of the rules where you are, but", "I don't know the rules where you are, but"),
    # ... to a question about health, a body's or a pet's ("Is that too old to put a dog through surgery?"):
    # the model gave verdicts ("I think it's too old for a dog to undergo surgery like that.")
    "health": ("I'm not a doctor, but", "I'm no doctor, but"),
    "vet": ("I'm not a vet, but", "I'm no vet, but"),
    # A good side found in bad times ("on the plus side I get to miss the quarterly review", "severance is 3
    # months pay though, which is more than I expected"): neither sorrow at it nor cheer, and no less than
    # the person makes of it.
    "bright_side": ("Well, that's something.", "That's one small mercy.", "That's one good thing, anyway."),
    # Two feelings at once, one glad for someone and one hurt ("im happy for her, really, but it stings a bit",
    # "proud of him, but the house is so quiet"): both taken as true, neither picked over the other.
    "mixed": ("It makes sense to feel both.", "That's a lot of feelings at once.", "Both of those can be true."),
    # A short acknowledgment before a closing, where nothing of the message could be said back and nothing
    # the model wrote was about it ("Anyway, kettle's on."): no feeling guessed at.
    "noted": ("Oh, I see.", "Ah, I see.", "I see."),
}
# The acknowledgment's family (``BANK``) for each closing group (``composer.CLOSINGS``); any other is "noted".
ACKNOWLEDGE = {"hard": "hard", "feeling": "care", "glad": "glad"}
PARTIAL = frozenset({"answer", "advise", "rules", "health", "vet"})  # families whose opening the model's first sentence completes
# A question about what the person should do, which the answer begins with "you".
_ASKS_WHAT_TO_DO = re.compile(
    r"\b(?:should i|shall i|how (?:do|can|should|would) i|what (?:can|should|do|would) i|how do you (?:help|tell|ask|"
    r"deal|handle|stop|get)|any (?:tips|advice|ideas?)|is there a (?:\w+ )?way to|(?:do you think|would you say) i "
    r"(?:should|could)|things? i (?:can|could|should) do)\b")

# Each label's family. "caring", "trusting", "faithful", "prepared" and "confident" have none: they say how the
# person stands towards someone or something, not how their news went ("She just texted me 'please just come'"
# read as caring got "Oh, that's so kind."; "I've started writing everything down" read as prepared got "Oh, that
# sounds exciting!"; read as confident, "any last tips", "big interview tomorrow at 10" and "well you're a good
# listener anyway" got "That's something to be proud of!", 5 of the dev sets' 12 such openings praising nothing
# done), so the message's own words choose (``_by_vote_and_words``). Hope is met gladly, not as
# excitement ("How exciting!" to "First time in a month I've eaten a proper meal").
_FAMILY_OF_LABEL = {
    "lonely": "lonely", "anxious": "worry", "afraid": "worry", "terrified": "worry", "apprehensive": "worry",
    "fear": "worry", "angry": "unfair", "annoyed": "unfair", "furious": "unfair", "jealous": "unfair",
    "contempt": "unfair", "disgusted": "unfair", "embarrassed": "sting", "ashamed": "sting", "guilty": "guilt",
    "disappointed": "letdown", "sad": "loss", "devastated": "loss",
    "proud": "pride", "impressed": "impressed", "grateful": "warm",
    "excited": "excited", "anticipating": "excited", "hopeful": "glad", "joyful": "joy", "happy": "joy",
    "content": "joy",
    "surprised": "surprise", "nostalgic": "memory", "sentimental": "memory",
}
# Sarcasm: good words said of something that went badly, in the turns chat gives them: "oh great" opening
# a sentence, stock phrases ("just what I needed", "so convenient", "cool cool cool"), and, where the rest of
# the message has a bad word and no good one, a good word or "wow" alone ending it without "!". Written for
# e3rg from the dev conversations; on the other writers' 1,247 conversation turns
# (bench/data/news_turns_extra.jsonl, read only to measure) it finds 7 turns, all bad news.
_SARCASM = re.compile(
    r"(?:^|[.!?,]\s*)oh (?:great|brilliant|fantastic|wonderful|perfect|joy|lovely|marvellous|super|good|fun)\b|"
    r"\b(?:just what i (?:needed|wanted)|love that for me|cool cool cool|so convenient|living the dream|lucky me|"
    r"fun times|what fun|how (?:nice|lovely|kind|thoughtful) of (?:him|her|them)|thanks for nothing|great,? just great|"
    r"because that'?s (?:exactly )?what i needed|as if i (?:didn'?t|don'?t) have enough|the joys? of|"
    r"(?:^|[.!?,]\s*)so much for (?:the|my|our|that|all)\b|"
    # "fine" said of what happened and then insisted on ("Which is fine. Totally fine. Great, even."); not "it's
    # fine. totally fine", as often a doctor's word passed on
    r"(?:which is|that'?s) fine\W+(?:totally|completely|absolutely|perfectly|really|honestly) fine)\b")
_SARCASTIC_END = re.compile(r"(?:^|[.,]\s+|\s)(?:great|brilliant|perfect|wonderful|fantastic|lovely|fab|super|cool|"
                            r"fun|awesome|amazing|wow)\.*\s*$")
# ... and a good word alone opening it, before a comma or a full stop, with the rest telling of something gone wrong
# and no good word, "!" or question in it ("lovely, another rejection email to start the week", "great, my visa got
# refused"): not "Great, see you at six." nor "Amazing, she's home!". Of the other writers' messages, the news reader's
# and the dev conversations that open with such a word, 42 are bad news and 2 plain (both without the comma or
# asking); the rest's sign of something gone wrong is asked for as chat also opens so plainly ("Cool, I'll bring the
# wine."). On every message of bench/data and the news reader's data it finds 4 more than before, all sarcasm.
_PRAISE_WORDS = r"great|brilliant|perfect|wonderful|fantastic|lovely|fab|super|amazing|marvellous|excellent|terrific|splendid|superb"
_SARCASTIC_START = re.compile(r"^(?:oh )?(?:" + _PRAISE_WORDS + r"|cool|awesome)\s*[,.]+\s+(?=\S)")
_AGAIN = re.compile(r"\b(?:again|another)\b")
# ... and flat praise heaped at the end, two or more good words each a sentence of its own with a full stop
# ("£250 release fee plus a £70 ticket. Lovely. Fantastic. Great day."): joy is not said so flatly.
_SARCASTIC_RUN = re.compile(r"(?:(?:^|\.\s+)(?:" + _PRAISE_WORDS + r")(?: (?:day|stuff|times|start|news|week))?){2,}\.\s*$")
# Families that fit what sarcasm tells; any other (a glad, a worried or no opening) becomes "fed_up".
_BORNE_SARCASTICALLY = frozenset({"unfair", "letdown", "hard", "sting", "guilt", "loss", "lonely", "fed_up"})


# The words sarcasm says its bad news in ("love that for me", "just what I needed", "wonderful"): a part of a
# sarcastic message with one of them is not said back straight.
_SARCASM_WORDS = re.compile(r"\b(?:" + _PRAISE_WORDS + r"|love that|just what|exactly what|lucky|living the dream|fun|"
                            r"convenient|thanks for nothing)\b")


def sarcasm_words(said: str) -> bool:
    """``said`` has words sarcasm tells bad news in (``_SARCASM_WORDS``)."""
    return _SARCASM_WORDS.search(canonical(said)) is not None


def sarcastic(user_text: str) -> bool:
    """The message says in sarcasm that something went badly (``_SARCASM``): "oh brilliant, train cancelled AGAIN"."""
    text = canonical(user_text)
    if _SARCASM.search(text) or _SARCASTIC_RUN.search(text):
        return True
    start = _SARCASTIC_START.match(text)
    if start is not None:
        rest = text[start.end():]
        if "?" not in rest and not _SHARED_JOY.search(rest) and not _GOOD_WORDS.search(rest) and (
                _BAD_WORDS.search(rest) or _SETBACKS.search(rest) or _AGAIN.search(rest) or bad_news_words(rest)
                or own_mishap(rest)):
            return True
    end = _SARCASTIC_END.search(text)
    if end is None:
        return False
    rest = _QUOTED.sub(" ", text[:end.start()])
    return not _GOOD_WORDS.search(rest) and (_BAD_WORDS.search(rest) is not None or bad_news_words(rest))


_GOOD_FAMILIES = frozenset({"pride", "warm", "excited", "joy", "surprise", "memory", "glad", "impressed", "kind"})
_WORD = re.compile(r"[a-z']+")


# The vote's share for its coarse class below which its emotion alone does not pick an opening (the
# model begins itself): a wrong opening is worse than none. Chosen on bench/data/replies_dev.jsonl.
MIN_CONFIDENCE = 0.4
RECENT_LINES = 2  # the speaker's earlier lines whose bad news rules out a cheerful opening
# The vote's share at or above which a cheerful opening needs no word of good news or "!" in the message.
CHEER_CONFIDENCE = 0.6
# The news reader's probability of the other kind of news at or above which an opening is not said: on
# the four dev sets' openings (bench/reports/replies_dev*_pass12.json) 0.7 stopped 9 of the 37 of the
# wrong kind and 3 of the 234 of the right kind; 0.6 stopped 12 and 8.
# With the larger reader (1,918 messages) it is sure of good news on 79 of the dev sets' 501 turns (7 of them bad
# news) and of bad news on 69 (1 good).
NEWS_VETO = 0.7
# The reader's probability of bad news at or above which a message the vote met with no opening gets a gentle
# one ("Jordan ended things last night. Three years."; good news in its own words gets a glad one first). On
# the news messages by three other writers that no rule was written from (bench/data/news_extra.json), with no
# good word in them, 0.6 rather than 0.7 reaches 48 more bad news, 6 more good and 8 more plain; 0.5 would
# reach 73, 13 and 23.
GENTLE_AT = 0.6
_GLOOMY_FAMILIES = frozenset({"loss", "lonely", "worry", "unfair", "sting", "guilt", "letdown", "hard", "fed_up"})


_TEARS = re.compile(r"\b(?:cry|cried|crying|cries|tears|teary|sobb\w*|bawl\w*|weep\w*|emotional|shaking|shook|"
                    r"screamed|screaming|wiping (?:my|her|his|their) eyes)\b")


# Laughter as the person tells it ("my dad was at mile 23 holding a sign that said 'RUN FASTER IM COLD' 😂"): told
# lightly, so a gloomy opening ("Oh, that sounds so stressful.") mourns what they laugh at.
_LAUGHING = re.compile(r"\U0001f602|\U0001f923|\U0001f605|\U0001f606|\blol\b|\blmao\b|\bhaha\w*|\bhehe\b")


# A good result only hoped for or expected ("the doctor thinks it might be benign"), not yet told.
_HOPED = re.compile(r"\b(?:most|usually|probably|hopefully|hoping|if|might|may|could|should|fingers crossed|pray\w*)\b")


def laughing(user_text: str) -> bool:
    """The message laughs as it tells what happened (``_LAUGHING``: "lol", "haha", a laughing face)."""
    return _LAUGHING.search(canonical(user_text)) is not None


def happy_tears(user_text: str, earlier: Sequence[str] = ()) -> bool:
    """Tears, shaking or screaming right after good news, with nothing else bad said (``earlier``: the speaker's
    lines before, oldest first). On the dev sets and the other writers' turns it finds 4 messages, all good news
    (the vote read them as sadness or embarrassment); tears after good news with a bad word too ("the last 10
    days have been brutal") are not happy ones."""
    text = canonical(user_text)
    if not earlier or _TEARS.search(text) is None or bad_news_words(user_text) or tone(_TEARS.sub(" ", text)) == "bad":
        return False
    before = earlier[-1]
    return (tone(before) == "good" or _SHARED_JOY.search(before) is not None) and not bad_news_words(before)


# The person's own tears ("I could cry.", "i cant stop crying", "let me cry on her"), not someone else's ("i can
# hear her crying", "Leo clung to my leg and sobbed").
_OWN_TEARS = re.compile(r"\b(?:(?:i|i'm|im|i've|ive|i'd)\b(?:\s+(?!her\b|him\b|them\b|she\b|he\b|they\b)[\w']+){0,4}?\s+|"
                        r"(?:let|made|make|makes|left) me\s+)(?:cry|cried|crying|in tears|teary|sobb\w*|bawl\w*|"
                        r"weep\w*|welling up|emotional)\b")


def glad_tears(user_text: str, news: Mapping[str, float] | None) -> bool:
    """The person's own tears told with a laugh ("i cant stop crying lol") or with what the news reader reads as
    good news (``GENTLE_AT`` or more: "He just rang. Said thanks for being honest and not to worry about it. I could
    cry."), whatever came before. On the dev sets' and the other writers' turns with such tears and no bad word it
    finds 6 messages, all good news; it misses 1 good and 5 bad (told without a laugh, the reader below 0.6)."""
    return _OWN_TEARS.search(canonical(user_text)) is not None and (
        laughing(user_text) or sure_news(news, at=GENTLE_AT) == "good")


def kind_of(fam: str | None) -> str | None:
    """The kind of news an opening of family ``fam`` meets: "good", "bad", or None (a plain or partial one)."""
    return "good" if fam in _GOOD_FAMILIES else "bad" if fam in _GLOOMY_FAMILIES else None


def family(user_text: str, *, label: str, coarse: str, risk: RiskAssessment, asks: bool = False,
           confidence: float = 1.0, earlier: Sequence[str] = (), news: Mapping[str, float] | None = None) -> str | None:
    """Which bank the reply's opening comes from, or ``None`` for no opening (a plain message, an
    emotion the vote is unsure of): a message that names bad news always gets a gentle family,
    whatever the label said; a question to the avatar gets the start of an answer ("answer"); and a
    conversation that just named bad news (``earlier``: the speaker's previous lines, oldest first)
    gets no cheerful one. ``news`` is the news reader's reading of the message alone (``news.py``):
    an opening of the kind of news it is sure the message is not (``NEWS_VETO``) is not said."""
    if asks and risk.level in ("care", "check") and not names_bad_news(user_text):
        return _answer(user_text)  # answered gently (the prompt asks for calm), never met with "I'm listening" alone
    if risk.level != "none":
        return "care"
    if thanks_listener(user_text) and tone(_THANKS.sub(" ", canonical(user_text))) != "bad" \
            and not names_bad_news(user_text):
        return "thanked"
    if praises_listener(user_text) and not asks and not names_bad_news(user_text):
        return "praised"
    if faults.signs_off(user_text) and not asks and not names_bad_news(user_text):
        return "signed_off_gently" if bad_news_before(earlier) or tone(user_text) == "bad" else "signed_off"
    fam = _family_of(label, user_text, earlier)
    if asks and not names_bad_news(user_text):
        # a question gets an answer begun for the model (a gentle opening before it lets the model ask
        # back instead of answering: "Oh, that sounds so stressful. What tips can you give me?"); a
        # hard word in it ("any tips for not panicking?") is no bad news to open on
        return _answer(user_text)
    if bad_news_words(user_text):  # a death or a diagnosis keeps its gentle opening however it is told
        if fam in _GOOD_FAMILIES and sure_news(news) == "good":
            # the vote and the reader both read good news with a setback told in it ("passed her driving
            # test today, first go! She failed the theory twice"): neither sorrow nor cheer
            return None
        if good_outcome(user_text) and (sure_news(news) == "good" or not names_bad_news(user_text)):
            # feared news that came to nothing, told with the hospital still in it ("it's benign!!! i'm sat
            # crying in the hospital car park"): the vote read the waiting before it. Where nothing but the
            # weaker signs (a hospital, tears) is left besides the outcome, the outcome is enough: of the 5 such
            # messages of the reply sets and the other writers' turns, all 5 are good news, 2 with the reader
            # leaning good but short of sure and 1 with it leaning bad (twenty-fourth pass)
            return "glad"
        return fam if fam is not None and fam not in _GOOD_FAMILIES else "hard"
    if mixed_feelings(user_text):
        return "mixed"  # "I'm really glad." to "im happy for her, really, but it stings a bit": half of it
    if bright_side(user_text) and not (leans_good(news) and tone(user_text) == "good") \
            and (fam in _GLOOMY_FAMILIES or bad_news_before(earlier) or not leans_good(news)):
        # a good side of what went badly, met with "I'm sorry to hear that." or "Ugh, that's not okay."; one that
        # is good news in its own words and the reader's ("on the plus side we baked a cake and it was lush")
        # is met gladly as before
        return "bright_side"
    chosen, sure = _by_vote_and_words(user_text, fam, confidence, earlier, news), sure_news(news)
    if sarcastic(user_text):
        # the vote, the lexicon and the reader all read the good words; the sarcasm says it went badly
        return chosen if chosen in _BORNE_SARCASTICALLY else "fed_up"
    other = "bad" if chosen in _GOOD_FAMILIES else "good" if chosen in _GLOOMY_FAMILIES else None
    if other and turns_on_it(user_text) and tone(user_text) != kind_of(chosen):
        # a "though" that ends a clause sets the message against what came before it ("he was totally fine this
        # evening though, we did the crossword" after a parent's diagnosis; "My future mother-in-law has opinions
        # though." after the wedding venue): the vote, which reads the conversation, carries the earlier feeling,
        # and the message's own words do not bear its kind out
        return None
    if other and sure == other:
        return None  # "That's so unfair." to a neighbour who mowed the lawn: the vote read the conversation
    if other and amazed(faults.last_sentence(user_text)) and sure_news(news, at=0.5) == other:
        # amazement in the marks is read by the vote as any strong feeling ("WAIT. just got the email. they've
        # let me in anyway????" as annoyance): the reader leaning the other way is enough to say no opening
        return None
    if chosen in _GLOOMY_FAMILIES and (happy_tears(user_text, earlier) or glad_tears(user_text, news)):
        return None  # "said yes obviously lol. cried so much my mascara was everywhere" after a proposal
    if chosen == "sting" and label == "embarrassed" and _TEARS.search(canonical(user_text)) \
            and tone(re.sub(r"\bsorry\b", " ", _TEARS.sub(" ", canonical(user_text)))) != "bad":
        # tears the vote read as embarrassment, with nothing else in the message going badly but the apology for
        # them ("Sorry, I'm a bit emotional. My wife is still wiping her eyes in the kitchen." after a son's first
        # concert): on the dev sets all four such messages were good news, and "Oh no, that must have stung." met them
        return None
    if chosen in _GLOOMY_FAMILIES and laughing(user_text) and tone(user_text) != "bad":
        # told with a laugh and no word of it going badly: on the dev sets' replies, 12 gloomy openings to such
        # messages met 5 good news ("i cant stop crying lol" after the job), 4 plain ones and 3 bad news
        return None
    if chosen in _GLOOMY_FAMILIES and tone(user_text) != "bad" and good_outcome(user_text):
        # feared news that came to nothing ("BENIGN. it's benign. I'm sat in the car park crying") got "That sounds
        # really scary." from the vote's fear; one only hoped for ("most of these come back benign") gets none.
        # Of the dev sets' and the other writers' messages with such an outcome and no bad word, 12 of 13 are good news
        return None if _HOPED.search(canonical(user_text)) else "glad"
    if chosen in _GLOOMY_FAMILIES and tone(user_text) != "bad" and turned_for_the_better(user_text, news):
        # "That's a lot of worry to carry." to "It was just my drunk neighbour.": relief is met gladly; an
        # update the reader only leans good on gets no opening
        return "glad" if relieved(user_text) else None
    if chosen is None and sure_news(news, at=GENTLE_AT) == "bad":
        # bad news the vote was unsure of, told without a word the lexicon knows ("third interview.
        # nothing."): a gentle opening, not the model's own first words. On the dev replay (501 turns, stored
        # votes) lowering this from 0.7 to 0.6 gave 5 more bad news a gentle opening and 2 plain messages
        # ("I miss my own pillow more than anything." in hospital), no good news
        return "hard"
    return chosen


# A wrong done to the person by someone ("they laughed at me", "blamed me", "kept my deposit"): what "That's
# so unfair." and "You didn't deserve that." answer.
_WRONGED = re.compile(r"\b(?<!next )(?:to|at|on|about|behind) (?:me|us)\b|\b(?:blamed|accused|ignored|fired|sacked|dumped|"
                      r"ghosted|cheated on|lied to|screamed at|shouted at|yelled at|swore at|laughed at|mocked|called|"
                      r"stole|took|kept|charged|fined|refused|rejected|excluded|overlooked|humiliated|insulted|"
                      r"embarrassed|cut|blanked|snubbed|banned)(?: \w+)? (?:me|us|my|our)\b")
# A mishap of the person's own doing ("I accidentally replied all", "I completely forgot her 40th", "lost my
# temper with my son"): no one wronged them, so neither "That's so unfair." nor "Anyone would be upset."
# Those done to someone else weigh on the person: guilt, not embarrassment.
_HURTFUL = r"forgot|completely forgot|lost my temper|snapped at|shouted at|yelled at|swore at"
_OWN_MISHAP = re.compile(
    r"(?:^|[.!?]\s+|\b(?:i|we)\s+(?:\w+\s+){0,2}?)(?:accidentally|" + _HURTFUL + r"|dropped|spilled|spilt|smashed|"
    r"dented|scratched|overslept|locked myself|left my|messed up|screwed up|cocked up|replied all|replied to all|"
    r"deleted|called my \w+ (?:mom|mum|dad|mummy))\b")
_REGRET = re.compile(r"\b(?:(?:which|that) was\W{1,5}(?:not ideal|not great|not my finest)|not my (?:finest|proudest|"
                     r"best) moment|my bad(?=\s*(?:$|[.,!;]))|i shouldn'?t have|in hindsight|i regret|i feel (?:awful|terrible|bad) about "
                     r"(?:it|that|what i))\b")
_HURT_SOMEONE = re.compile(r"\b(?:" + _HURTFUL + r")\b")


_THEIR_CHILD = re.compile(r"\b(?:my|our) (?:son|daughter|kid|kids|child|children|boy|girl|little one|baby)\b")


def wronged(user_text: str) -> bool:
    """The message tells of a wrong done to the person by someone (``_WRONGED``)."""
    return _WRONGED.search(canonical(user_text)) is not None


def own_mishap(user_text: str) -> str | None:
    """"guilt" for a mishap of the person's own that hurt or let down someone, "sting" for any other (an
    embarrassment), or None when the message tells of none or of a wrong done to them (``_OWN_MISHAP``)."""
    text = canonical(user_text)
    if _REGRET.search(text) is not None:
        return "guilt"  # "i said it at her hen do which was... not ideal": their own doing, regretted
    if _OWN_MISHAP.search(text) is None or _WRONGED.search(text):
        return None
    return "guilt" if _HURT_SOMEONE.search(text) else "sting"


def _family_of(label: str, user_text: str, earlier: Sequence[str] = ()) -> str | None:
    """The vote's family for ``label``, fitted to the message: annoyance that tells of no wrong done to the
    person is frustration ("fed_up"), not injustice ("my son's school called again" got "Ugh, that's not
    okay. ... You didn't deserve that."); anger at a mishap of their own, told in the message or in the
    speaker's line before it (``earlier``) when the message tells of no wrong done to them ("six hundred
    people. SIX HUNDRED" after "accidentally replied all"), is guilt or embarrassment."""
    fam = _FAMILY_OF_LABEL.get(label)
    if fam != "unfair":
        return fam
    done_to_them = wronged(user_text)
    mishap = own_mishap(user_text) or (own_mishap(earlier[-1]) if earlier and not done_to_them else None)
    if mishap is not None:
        return mishap
    if done_to_them or label not in ("annoyed", "disgusted"):
        return fam
    # disgust at what someone did near them ("a man next to me ate an entire rotisserie chicken. with his hands")
    # is no injustice either, unless it was done to their child ("some girls told her she smells")
    return fam if label == "disgusted" and _THEIR_CHILD.search(canonical(user_text)) else "fed_up"


def sure_news(news: Mapping[str, float] | None, at: float = NEWS_VETO) -> str | None:
    """The kind of news ("good" or "bad") the news reader gives ``at`` or more (sure: ``NEWS_VETO``), else None."""
    return next((kind for kind in ("good", "bad") if news and news.get(kind, 0.0) >= at), None)


def leans_good(news: Mapping[str, float] | None) -> bool:
    """The news reader's reading ``news`` leans to good news over bad."""
    return bool(news) and news.get("good", 0.0) > news.get("bad", 0.0)


def told_as_news(news: Mapping[str, float] | None) -> bool:
    """The news reader leans to good or to bad news over neither."""
    return bool(news) and max(news.get("good", 0.0), news.get("bad", 0.0)) > news.get("neither", 0.0)


def _by_vote_and_words(user_text: str, fam: str | None, confidence: float, earlier: Sequence[str],
                       news: Mapping[str, float] | None = None) -> str | None:
    """``family`` for a message that names no bad news: the vote's family ``fam``, checked against the
    message's own words (``told``, with the news reader's reading ``news``)."""
    said = tone(user_text)
    if said == "good" and not _borne_out(user_text, news):
        if fam in _GLOOMY_FAMILIES:
            # good words the reader does not bear out, against a painful vote: the evidence disagrees, and
            # neither a glad opening nor a gloomy one is sure enough to say
            return None
        said = None  # as ``told`` reads them
    if fam is None or confidence < MIN_CONFIDENCE:
        # an unsure vote: good news in the message's own words still gets a glad opening, so the model
        # is not left to write the whole reply ("Oleg recommended me" -> "Oleg is being very rude"). Bad
        # words alone get no gentle one: "I cried when she said yes!" is no bad news
        return _glad(user_text) if said == "good" else None
    if fam in _GOOD_FAMILIES:
        if said == "bad" or said is None and all(_told(user_text)):
            # "Of course I was in the kitchen and missed it" is no achievement; "the best boss I've ever
            # had is leaving" is no news to be excited about; "I cried when she said yes!" no sorrow
            return None
        if said is None and not _SHARED_JOY.search(user_text) and confidence < CHEER_CONFIDENCE:
            # nothing in the message's own words says it went well, no "!" shares it, and the vote is not
            # sure: "Bought milk and bread on the way home." read as happy got "Oh, that's great news! ...
            # Tell me everything!"
            return None
        if said != "good" and bad_news_before(earlier):
            return None  # "I keep reaching for my phone to call her" after a death is not 'faithful'
        return fam
    if said == "good":
        # "the scan shows it hasn't spread" read as fear; "he recommended me" as contempt; "the woman behind
        # me paid for my whole shop" as embarrassment: met as the kindness it was
        return _glad(user_text)
    return fam


def _glad(user_text: str) -> str:
    """The family for good news the vote did not read as good: "kind" for a kindness, else "glad"."""
    return "kind" if kindness(user_text) else "glad"


# A kindness done to the person ("the woman behind me just paid for my whole shop", "carrying my laundry
# without me even asking"): good news however the conversation felt before it. Written for e3rg; on the
# news reader's messages by five writers and the dev conversations, 24 of the 25 messages it finds are
# good news (the other names a divorce, which gets its gentle opening as bad news). A lost thing handed in or
# passed back ("someone handed it in", "ran alongside the train to pass it through the doors") was added in
# issue 20's eighteenth pass; with it, on news.json, the five dev sets and the other writers' 1,247 turns,
# 25 of the 27 messages it finds are good news.
_KINDNESS = (r"paid for (?:my|our|me|us|the lot|everything|it all)|cover(?:ed|ing) (?:for (?:me|us)|my|our)|"
             r"(?:carried|carrying|carries) (?:my|our)|without (?:me|us) (?:even )?asking|picked (?:me|us) up|"
             r"(?:checked|checking|checks) (?:on|in on) (?:me|us)|looked after (?:me|us)|drove (?:me|us)|"
             r"cooked (?:for )?(?:me|us)|sent (?:me|us) (?:a|an|some|flowers)|bought (?:me|us)|"
             r"(?:held|holding) (?:my|our) hand|waited (?:with|for) (?:me|us)|stayed (?:with|up with) (?:me|us)|"
             r"(?:fixed|mended|cleaned|tidied) (?:my|our)|(?:let|lets) (?:me|us) (?:borrow|stay|keep|use)|"
             r"(?:lent|loaned) (?:me|us)|helped (?:me|us)|(?:saved|kept) (?:me|us) a|turned up with|came round with|"
             r"dropped off (?:a|some|food|soup|dinner)|handed (?:it|them|my (?!notice|resignation|two weeks|dissertation|essay|"
             r"coursework|homework|thesis|keys|badge|laptop)\w+) in|"
             r"(?:handed|gave|brought|passed|posted) (?:it|them|my \w+|everything) (?:back|through|to me)|"
             r"ran (?:after|alongside) (?:me|us|the (?:bus|train|car))")
_KIND = re.compile(r"\b(?:" + _KINDNESS + r")\b")


def kindness(user_text: str) -> bool:
    """The message tells of a kindness done to the person (``_KINDNESS``)."""
    return _KIND.search(canonical(user_text)) is not None


# Milestones told in the words people use for them: a birth, a wedding, the keys to a home, a baby's first steps,
# time sober or smoke-free, a pay rise, a scholarship, a place on a team, a distinction, a personal best, a race or
# a thesis finished, a proposal. Not "born with", "the summer my daughter was born", "proposed cutting my hours",
# "the scholarship went to someone else", "I cut again after 4 months clean".
_MILESTONES = (
    r"(?:was|were) born (?:this|last|today|yesterday|on|at \d|just|early|safe|healthy|happy)|gave birth|"
    r"it's a (?:boy|girl)|(?:we|i|we've|i've) (?:just )?got married|just married|we're married|got the keys|"
    r"(?:my|our) (?:daughter|son|sister|brother|best friend) got married|"
    r"took (?:his|her|their|my) first steps|(?:his|her|their) first (?:steps|words)|"
    r"(?<!after )(?<!lost )(?<!broke )(?:\d+|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"eighteen) (?:days?|weeks?|months?|years?) (?:sober|clean|smoke[- ]free|alcohol[- ]free|drug[- ]free|"
    r"self[- ]harm[- ]free)(?! (?:and|but) (?:i|now))|"
    r"(?:got|get|getting|given|gave me|give me|giving me) (?:a |an )?(?:\d+% )?(?:pay ?rise|raise)|"
    r"(?:got|won|awarded|been offered|full|a full) (?:a |the )?scholarship|scholarship (?:came through|confirmed|"
    r"approved)|made the (?:team|squad|cut|shortlist|final)|distinction|got a first|"
    r"nailed (?:it|the|my)|smashed (?:it|my pb|my personal best|the (?:exam|test|interview|presentation))|"
    r"personal best|(?:new|a) pb|finished (?:my|the|his|her) (?:first )?(?:marathon|half marathon|race|10k|5k|thesis|"
    r"dissertation|degree|phd)|proposed to (?:me|her|him)|(?:he|she) proposed(?=\s*(?:[^\w\s]|$))|she said yes|he said yes|"
    r"first time in (?:like |about |over |almost |nearly |well over |a good )?"
    r"(?:(?:\d+|a|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|a few|many|several|so many) )?"
    r"(?:days|weeks|months|years|ages|forever|decades?|a (?:while|week|month|year|long time|long while))"
)
# Something done again after a long gap ("slept 9 hours straight, first time in weeks", "my son rang me just to
# chat. first time in months") is a milestone; one still to come ("dentist tomorrow. first time in 4 years") is no
# news yet, and its "first time in" is not counted (``_AHEAD_OF_IT``).
_FIRST_TIME = re.compile(r"\bfirst time in\b")
_AHEAD_OF_IT = re.compile(r"\b(?:tomorrow|next (?:week|month|year|weekend|time|\w+day)|this (?:weekend|week)|"
                          r"on (?:mon|tues|wednes|thurs|fri|satur|sun)day|going to|gonna|about to|booked|"
                          r"(?:i|we|he|she|they)(?:'ll| will)|in (?:a|two|three|a few|\d+) (?:days|weeks|months))\b")
# The message's own words for how things went, whatever the vote read: an outcome or a kindness
# ("passed", "hugged", "it worked") against a hurt or a setback ("missed", "crying", "rejected"). Both,
# or neither, say nothing. Written for e3rg; a lexicon, so it reads words, not sarcasm.
_GOOD_WORDS = re.compile(
    r"\b(?:passed|benign|all clear|harmless|nothing serious|(?:i|we|i've|we've|just|finally) got the (?:job|place|offer|flat|house|role|part)|"
    r"got in|accepted|promot\w*|"
    r"won(?!')|engaged|graduat\w*|hired|recover\w*|better now|feeling better|getting better|improv\w*|relie[fv]\w*|"
    r"(?:is|she's|he's|they're|we're|i'm|it's|all) (?:okay|ok|fine|safe)(?! i guess)|safe and sound|"
    r"(?:hasn't|has not|didn't|did not) spread|back on track|"
    r"kind(?:ly|ness)?(?! of)|lovely|thoughtful|sweet|hugg?ed|smiled|grinn\w*|laugh\w*|thanks|thank (?:you|god)|"
    r"thanked (?:me|us)|grateful|"
    r"invited|welcomed|surprised (?:me|us|her|him)|brought (?:me|us)|made (?:me|us) (?:a|an|some)|"
    r"gave (?:me|us) (?:a|an|some)|proud|happy|glad|excited|thrilled|love[sd]?|best(?! (?:friend|mate|man))|"
    r"amazing|wonderful|great|brilliant|beautiful|favou?rite|fun|yay|woo+|finally|it worked|worked out|"
    r"(?:(?<=^)|(?<=[.!?] ))(?:i|we) did it(?=\s*(?:[.!]|$))|(?:i|we|i've|we've) got it(?=\s*!)|(?:feel|feeling|felt) like a new (?:person|man|woman)|"
    r"offered (?:me|us)|good news|party|celebrat\w*|presents?|gifts?|chosen|picked|selected|shortlisted|"
    r"recommended (?:me|us)|" + _KINDNESS + r"|" + _MILESTONES + r")\b")
# Setbacks told in the words people use for them, some holding a good word ("passed over for promotion", "nobody
# came to my party"): a thing not got, a no, hours cut, no one turning up, a delay, being ghosted or stood up, an
# illness caught, a row, a child suspended, no heating.
_SETBACKS = re.compile(
    r"\b(?:(?:didn't|didnt|did not|don't|dont|won't|wont|never) (?:get|got) (?:the|in|it|picked|chosen|shortlisted|"
    r"selected|an offer|a place|an interview|a callback)(?: (?:job|role|part|place|flat|house|promotion|grant|"
    r"scholarship))?|turned (?:me |us )?down|(?:was|were|got|been) refused|(?:they|she|he|it) said no(?! (?:problem|worries|bother|need|issue|rush|charge)\b)|"
    r"passed over(?: for (?:the |a )?(?:promotion|job|role|part))?|"
    r"(?:nobody|no one|noone|hardly anyone) (?:came|showed|showed up|turned up|remembered|replied|asked)(?! close)"
    r"(?: (?:to|for) (?:my|our|the) \w+)?|"
    r"(?:hours|pay|salary|wages) (?:got |were |was |have been |has been )?cut|cut (?:my|our) (?:hours|pay|salary|wages)|"
    r"(?:delayed|postponed) (?:again|by|for|until|till|\d|\w+ (?:hours?|days?|weeks?|months?))|(?:got|been|was|being) ghosted|stood (?:me|us) up|"
    r"uninvited|(?:parking|speeding) (?:ticket|fine)|tested positive|(?:have|has|got|caught) (?:covid|the flu|flu|"
    r"norovirus|food poisoning|shingles|tonsillitis|pneumonia)|food poisoning|"
    r"(?:huge|massive|big|blazing|awful|horrible|another) (?:row|fight|argument)|(?:got|been|was) (?:suspended|expelled)|"
    r"no (?:heating|hot water|power|electricity)|power cut|(?:have|had) to move out|the wedding's off|"
    r"the wedding is off|"
    # someone else chosen ("they promoted the manager's golf buddy over me", "they went with an internal candidate",
    # "decided to move forward with other candidates", "the scholarship went to someone else")
    r"(?:promoted|picked|chose|chosen|hired|gave (?:it|the job|the role|the part) to) (?:[\w']+ ){0,5}?(?:over|instead of) "
    r"(?:me|us)|(?:went|gone|going) with (?:someone|somebody|another|an internal|an external|the other|a different)|"
    r"(?:move|moving|go|going) forward with (?:other|another) candidates?|"
    r"(?:job|role|part|place|promotion|scholarship|prize|award|flat|house|contract) went to (?:someone|somebody|the|a|an|"
    r"his|her|their))\b")
_BAD_WORDS = re.compile(
    r"\b(?:worst|hate[sd]?|awful|terrible|horrible|brutal|scared|scary|afraid|worried|worrying|nervous|dread\w*|"
    r"cry|crying|cried|sobb\w*|tears|fail\w*|reject\w*|declined|lost|lose|losing|missed|miss|broke|broken|"
    r"hurt\w*|sick|ill|pain|argu\w*|snapped|shout\w*|yell\w*|lonely|ignor\w*|stuck|unfair|regret\w*|"
    r"sorry|guilty|ashamed|embarrass\w*|cring(?:e|ed|es|ey|ing|y)|awkward|humiliat\w*|blank|shaking|panic\w*|stress\w*|"
    r"exhausted|tired|furious|angry|annoy\w*|upset|disappoint\w*|gutted|cancell?ed|complain\w*|"
    r"warning|fined|left out|forgot|forgetting|wrong|struggl\w*|never again|ruin\w*|leaving|don't want|"
    r"on (?:my|our) own|by myself|(?:i|i'm|we|we're)\b[^.!?]{0,25}\balone|"
    # how the person is themselves ("She's excited but I'm a wreck")
    r"a (?:nervous )?wreck|a mess|falling apart|heartbroken|miserable|depressed|anxious|terrified|overwhelmed|"
    r"drained|burn[te]d? out|freaking out|bummed|hopeless|battered|knackered|aching|emergency|"
    # fear in the body ("already sweating just thinking about take-off")
    r"sweating (?:just )?(?:thinking|at the (?:thought|idea))|sweaty palms|palms are sweat\w*|"
    # mortified themselves, not someone else who is ("she messaged me saying she's mortified and trying to sort it")
    r"(?<!she's )(?<!he's )(?<!she is )(?<!he is )(?<!they're )(?<!they are )(?<!she was )(?<!he was )mortif\w*|"
    # shame at a moment in its everyday figure ("i wanted the floor to open up and swallow me")
    r"(?:ground|floor|earth) to (?:open up|swallow)|swallow me(?: whole| up)?)\b")
# Joy shared in the writing itself: an exclamation mark, a smiling or celebrating emoji.
_SHARED_JOY = re.compile("!|[\U0001F600-\U0001F60D\U0001F970\U0001F973\U0001F389\U0001F38A\u2764\U0001F495-\U0001F49F\U0001F64C]")
_QUOTED = re.compile(r"(?:^|(?<=\s))['\"][^'\"]{1,80}['\"]")
# A bad word denied just before it ("without being sick", "not a single tile lost", "wasn't scared", "no longer in
# pain"): no setback told. Not "never" or "can't" ("never felt so lonely", "can't stop crying"), not "nothing else"
# ("fingers crossed nothing else goes wrong" says something already has), and not across a clause ("I don't know
# why I'm so upset").
_UNDONE = re.compile(r"\b(?:not|no longer|without|wasn't|weren't|isn't|aren't|didn't|don't|doesn't|won't|nothing(?! else))"
                     r"(?:\s+(?!(?:why|because|but|and|when|that|if|so|how|what|stop|stopped|quit|help)\b)[\w']+){0,3}\s+$")
_NEGATED = re.compile(r"\b(?:not|never|no|isn't|wasn't|aren't|weren't|don't|didn't|hardly)\s+(?:\w+\s+)?$")


# A good feeling the person has to work at or hedges ("i'm trying really hard to be happy for her", "happy for
# him I guess", "I should be grateful"): it says the news weighs on them, its good word does not count.
_FORCED_CHEER = re.compile(
    r"\b(?:trying (?:really |so |my best |very )?(?:hard )?to (?:be|feel|stay|look|sound) (?:happy|positive|okay|ok|"
    r"fine|glad|excited|supportive|pleased|grateful|cheerful)(?: for (?:her|him|them|you))?|(?:happy|glad|pleased|"
    r"excited) for (?:her|him|them) i (?:guess|suppose)|i (?:guess|suppose) i'?m (?:happy|glad|pleased)|"
    r"(?:should|supposed to|ought to) (?:be|feel) (?:happy|glad|grateful|excited|pleased)|"
    r"pretend(?:ing)? to be (?:happy|fine|okay|ok|excited))\b")
# A good turn named as one ("on the plus side", "silver lining", "small mercies"): what follows went well.
_GOOD_TURN_NAMED = r"on the (?:plus|bright) side|(?:the |a )?silver lining|small mercies|the one good thing"
_GOOD_TURN = re.compile(r"\b(?:" + _GOOD_TURN_NAMED + r")\b")
# A good side named in bad times, more loosely: as ``_GOOD_TURN``, or the good part weighed against the rest
# ("at least nobody was hurt", "which is more than I expected", "could have been worse"). Trusted only where the
# message's own words do not say it went badly ("it hurt more than I expected" is no good side).
_BRIGHT_SIDE = re.compile(
    r"\b(?:" + _GOOD_TURN_NAMED + r"|every cloud|"
    r"the (?:only )?(?:good|upside|plus)(?: thing| news| part)? is|"
    r"more than (?:i|we) (?:expected|thought|hoped)|"
    r"could (?:have|'ve) been (?:a lot |much |way |so much |far )?worse|"
    r"at least (?:i|we|he|she|they|it|there|nobody|no one|noone|the|my|our|his|her|their|you|i'?ve|i'?m|it'?s|we'?re|"
    r"we'?ve|they'?re))\b")
# Two feelings at once, one glad for someone or of something and one hurt ("im happy for her, really, but it
# stings a bit", "proud of him but i'll miss him"), or said as such ("bittersweet", "mixed feelings").
_GLAD_OF = r"(?:happy|glad|pleased|thrilled|chuffed|proud|excited|delighted|relieved) (?:for|of|about|that)\b"
_HURT_TOO = (r"(?:stings?|stung|hurts?|sad|sadder|jealous|envious|gutted|lonely|weird|strange|empty|quiet|miss|"
             r"bittersweet|heartbroken|cry|crying|cried|ache|aches|bit of a pang|pang)\b")
_MIXED = re.compile(r"\b(?:bittersweet|mixed (?:feelings|emotions)|so conflicted|feel(?:ing)? conflicted)\b|"
                    r"\bpart of me (?:is|feels|was|felt|wants)\b[^.!?]{1,60}\b(?:and|but) (?:the other )?part of me\b|"
                    r"\b" + _GLAD_OF + r"[^.!?]{0,60}?\b(?:but|though|and yet|and also|it'?s just|it just|still|yet)\b[^!?]{0,60}?\b"
                    + _HURT_TOO)


def _told(user_text: str) -> tuple[int, int]:
    """How many of the message's own words say it went well, and how many badly."""
    text = _QUOTED.sub(" ", canonical(user_text))  # 'brilliant initiative', quoted, is someone else's word
    text = PASSED_ON.sub(" ", text)  # "my dad passed last year" is a death, not a test passed
    if _AHEAD_OF_IT.search(text):
        text = _FIRST_TIME.sub(" ", text)  # "flying tomorrow for the first time in eleven years": nothing done yet
    forced = len(_FORCED_CHEER.findall(text))
    text = _FORCED_CHEER.sub(" ", text)
    if _GOOD_TURN.search(text):
        return 1, forced  # what it names as the good side is what the message tells
    if sarcastic(user_text):
        return 0, 1 + len(_BAD_WORDS.findall(text)) + bad_news_words(user_text)  # its good words mean the opposite
    good = bad = 0
    setbacks = len(_SETBACKS.findall(text))
    text = _SETBACKS.sub(" ; ", text)  # its good words ("promotion", "party") are not good news
    for match in _GOOD_WORDS.finditer(text):
        if _NEGATED.search(text[max(0, match.start() - 20):match.start()]):
            bad += 1
        else:
            good += 1
    said_bad = sum(_UNDONE.search(text[max(0, m.start() - 40):m.start()]) is None for m in _BAD_WORDS.finditer(text))
    return good, forced + bad + setbacks + said_bad + bad_news_words(user_text)


# "though" (or "tho") ending a clause: the message turns against what was said before it.
_TURNS_ON_IT = re.compile(r"(?:,\s*|\s)(?:though|tho)\s*(?:[.!?,;]|$)")


def turns_on_it(user_text: str) -> bool:
    """A clause of the message ends on "though" (``_TURNS_ON_IT``): it turns against what came before it."""
    return _TURNS_ON_IT.search(canonical(user_text)) is not None


# Where a message turns to what weighs more with the person ("She's excited but I'm a wreck").
_CONTRAST = re.compile(r"[,;]?\s+(?:but|though|although|except)\s+(?=\S)|,\s*(?:tho|though)\b")


def tone(user_text: str) -> str | None:
    """"good" or "bad" when the message's own words say how things went and do not also say the
    opposite, else ``None``. A good word negated ("not great") counts as bad. Where both are said and
    the message turns ("but", "though") to something that went only one way, that way is its tone: what
    comes after the turn is what weighs ("Finally home, but I lost my keys" is bad; "Mum cried, but
    she's thrilled" good). A message that names bad news gets a gentle opening whatever its tone
    (``family``)."""
    good, bad = _told(user_text)
    if good and not bad:
        return "good"
    if bad and not good:
        return "bad"
    if good and bad:
        last = _CONTRAST.split(canonical(user_text))
        if len(last) > 1:
            after_good, after_bad = _told(last[-1])
            if after_bad != bool(after_good):
                return "bad" if after_bad else "good"
    return None


def told(user_text: str, news: Mapping[str, float] | None = None) -> str | None:
    """``tone``, with good news in the message's own words counted only where the news reader's reading
    ``news`` (when there is one) leans to good news over bad, or the message tells of a kindness or of
    relief (``_borne_out``). The lexicon reads words, not what they are said of ("graduation" in "14
    people in that chat. two replies."): on the news messages by three writers who saw neither it nor the
    bench's sets (``bench/data/news_extra.json``), its good reading was bad news 29 times in 122 (79 good);
    where the reader leans to good news over bad, 14 times in 94 (74 good). Its bad reading needs no such
    check: it only keeps cheer away."""
    said = tone(user_text)
    return None if said == "good" and not _borne_out(user_text, news) else said


def _borne_out(user_text: str, news: Mapping[str, float] | None) -> bool:
    """Good words in ``user_text`` stand: no reader's reading, one that leans to good news, or a kindness or
    relief told in phrases surer than the reader."""
    return not news or leans_good(news) or kindness(user_text) or relieved(user_text)


# A turn in the story for the better: relief, a fear that came to nothing ("It was just my drunk
# neighbour", "feel a bit better actually"), and an update or outcome ("update:", "turns out"), which
# is a turn for the better only where the news reader leans to good news ("turns out they gave the job
# to the internal candidate" is none). Written for e3rg; on the news reader's messages by five writers
# (``data/news.json`` and ``bench/data/news_extra.json``), 29 of the 34 such messages were good news, and
# 10 of the 11 that tell of relief (the other a virus that turned out to be meningitis, bad news by name).
# Relief denied is none: "I don't feel better", "no good news", "pain relief", "it was only a matter of time".
_RELIEF = re.compile(r"\b(?:it was (?:just|only)(?! (?:a matter|going|getting|the start|the beginning|too|so|as)\b)|"
                     r"it's only (?:a|an)|false alarm|phew|off the hook|(?<!n't )(?<!not )feel(?:ing)? (?:a (?:bit|lot|little) )?better|"
                     r"nothing to worry|no harm done|(?<!not )all good|(?<!no )good news|thank god|thankfully|luckily|"
                     r"fortunately|relieved|(?:what a|such a|so much|a huge|a big|a massive) relief|"
                     r"(?:completely |totally |perfectly )?harmless|nothing serious|(?:just|only) a cyst)\b")
_UPDATE = re.compile(r"\b(?:update|turns out|turned out|in the end)\b")


# A wrong put right: an apology made to the person, money or a thing given back, a decision reversed, a fine
# dropped, a case won ("the deposit scheme ruled in my favour", "he apologised to the whole team for blaming
# me"). The conversation's anger is then no guide to the opening. Written for e3rg; on the news reader's
# messages by five writers it finds 10, all good news (a refund refused, "I apologised", "to get it back"
# were left out while it was written, so this is no held-out figure).
_PUT_RIGHT = re.compile(
    r"\b(?:apologi[sz]ed|said sorry|(?<!n't )(?<!not )(?<!no )(?<!never )refund(?:ed)? (?:me|us|it|the|my|our|everything|"
    r"in full)|(?:got|gave|given|giving) (?:me |us )?(?:it|them|my|our|the \w+|every penny|all of it) (?:\w+ )?back|"
    r"every penny back|reversed (?:it|the|their|his|her)|overturned|backed down|owned up|made it right|put it right|"
    r"upheld|(?:ruled|found|decided) in (?:my|our) favou?r|cleared (?:me|my name|us|our name)|"
    r"(?:he|she|they|it|someone)(?: had|'d)? (?:made|admitted) (?:a|the|their|his|her) mistake|admitted (?:it|fault|liability)|"
    r"compensat(?:ed|ion)|(?:cancelled|canceled|dropped|waived|scrapped|quashed) (?:the|my|our) (?:fine|charges?|ticket|"
    r"penalty|fee|complaint|case)|won (?:the|my|our) (?:appeal|case|claim|tribunal|dispute)|"
    # a way out offered ("Rang them and they'll let me pay it over 12 months", "agreed to a payment plan")
    r"(?:they|he|she|the bank|the council)(?:'ll| will| would|'d)? (?:\w+ )?(?:let|allow) (?:me|us) (?:to )?(?:pay|spread|keep|stay)|"
    r"(?:agreed|offered|set up|sorted) (?:me |us )?(?:a |to a )?payment plan|in (?:monthly )?instal(?:l)?ments)")
_I_APOLOGISED = re.compile(r"\bi (?:\w+ ){0,6}(?:and )?(?:apologi[sz]ed|said sorry)")


def put_right(user_text: str) -> bool:
    """The message tells of a wrong put right (``_PUT_RIGHT``), not of the person's own apology."""
    text = canonical(user_text)
    return _PUT_RIGHT.search(text) is not None and _I_APOLOGISED.search(text) is None


def bright_side(user_text: str) -> bool:
    """The message names a good side of something bad (``_BRIGHT_SIDE``) and its own words do not say that it
    went badly (``tone``): neither before the good side ("it hurt more than I expected") nor anywhere, unless
    the message begins with it ("at least nobody was hurt")."""
    text = canonical(user_text)
    found = _BRIGHT_SIDE.search(text)
    if found is None:
        return False
    before = text[:found.start()]
    return tone(before) != "bad" and (len(before.split()) <= 2 or tone(text) != "bad")


def mixed_feelings(user_text: str) -> bool:
    """The message tells of two feelings at once, glad for someone and hurt (``_MIXED``), not a forced one
    ("happy for her I guess", ``_FORCED_CHEER``: its good word does not count)."""
    text = canonical(user_text)
    return _MIXED.search(text) is not None and _FORCED_CHEER.search(text) is None


def relieved(user_text: str) -> bool:
    """The message tells of relief: a fear that came to nothing, feeling better (``_RELIEF``)."""
    return _RELIEF.search(canonical(user_text)) is not None


def turned_for_the_better(user_text: str, news: Mapping[str, float] | None = None) -> bool:
    """The message tells of a turn for the better (relief, ``_RELIEF``; a wrong put right, ``put_right``), or
    an update the news reader's reading ``news`` leans to good news. Its conversation's earlier feeling is
    then no guide to its opening: "Update: it was Ollie who had the markers. Mason's off the hook." is no
    news to meet with "Ugh, that's not okay." however angry the conversation was."""
    if relieved(user_text) or put_right(user_text):
        return True
    return bool(_UPDATE.search(canonical(user_text))) and leans_good(news)


# Thanks to the avatar for the talk itself, not for something someone else did.
_THANKS = re.compile(
    r"\b(?:" + THANKS_WORDS + r")\b[^.!?]{0,20}?\b(?:for (?:listening|being here|being there|the chat|"
    r"talking|this|your help|the help|hearing me out|your time|that|the advice|understanding|"
    r"letting me (?:vent|ramble|rant|moan|go on)|putting up with me|"
    r"keeping me company|the company)|so much)"
    # "thank you. he'd have liked you": thanks that open a message and end their sentence
    r"|^(?:" + THANKS_WORDS + r")(?: (?:so much|again|x+))?\s*(?:[.!]|$)"
    # ... or that end the message after what it told ("anyway, bye for now and thanks 😊", "ok will do, thanks x")
    # (not "cheers", as often sarcasm there: "made me pay for them out of my wages tho. cheers")
    r"|(?:[,;.!]\s*|\band\s+)(?:thanks|thank you|thank u|thx|ty)(?: (?:so much|again|x+))?\W*$"
    r"|\b(?:that|this|talking|you|it)(?: (?:it|this|things|that) through)? (?:actually |really |honestly )?(?:helped|helps)\b"
    r"|\bi feel (?:a (?:bit|little|lot) )?better (?:now|after talking|for talking)\b")
# Praise of the avatar itself ("you're more patient than my brother, i'll give you that"): the model answered as
# if the person were the patient one ("You're always so patient and understanding.").
_PRAISE = re.compile(
    # after a sentence's start or a word or three of chat ("haha ok. well you're a good listener anyway")
    r"(?:^|[.!?]\s+)(?:(?:ok|okay|well|haha\w*|lol|aw+|ah|oh|honestly|and|but|still|anyway|seriously|god|gosh|omg|wow|ha|mate|"
    r"dude|bro|man|"
    r"fair enough|you know what|tbh|ngl|i mean)[.,!]? ){0,3}(?:you'?re|you are|ur) (?:so |really |very |actually |way |"
    r"much |more |a lot more |honestly )*(?:patient|kind(?! of)|sweet|lovely|nice|helpful|funny|easy to talk to|"
    r"easier to talk to|a good listener|"
    r"good at this|the best|better at this|"
    r"better than)\b|\bi (?:really )?(?:like|love|enjoy) (?:talking|chatting) (?:to|with) you\b")


def praises_listener(user_text: str) -> bool:
    """The message praises the avatar itself (``_PRAISE``)."""
    return _PRAISE.search(canonical(user_text)) is not None


def thanks_listener(user_text: str) -> bool:
    """The message thanks the avatar for listening or says the talk helped."""
    return _THANKS.search(canonical(user_text)) is not None


# A request for ideas or suggestions, which a gentle opening alone would leave unanswered.
_IDEAS = re.compile(r"\b(?:any (?:ideas|tips|advice|suggestions|recommendations)|ideas (?:for|of|on)|tips (?:for|on)|"
                    r"suggest\w*|recommend\w*|what(?:'s| is| would be| are) (?:a |some )?good|what (?:could|should|can) i "
                    r"(?:say|read|write|bring|get|buy|wear|cook|make|send|put))\b")


def ideas_asked(user_text: str, question: str) -> str | None:
    """The family of an answer's start ("answer", "advise"...) for a message whose question (``question``, as
    written) asks for ideas and names no bad news itself, else None."""
    if not question or _IDEAS.search(canonical(question)) is None or names_bad_news(question):
        return None
    fam = _answer(question)
    return fam if fam in ("answer", "advise") else None


def _answer(user_text: str) -> str:
    """The family of an answer's start: "rules" for a question about the law or the person's rights,
    "health" or "vet" for one about health, "advise" for what the person should do, else "answer"."""
    text = canonical(user_text)
    if _ASKS_RULES.search(text):
        return "rules"
    if _HEALTH.search(text) and not _HOW_TO_COPE.search(text):
        return "vet" if _PET.search(text) else "health"
    return "advise" if _ASKS_WHAT_TO_DO.search(text) else "answer"


# A question about health: the body, an illness, a treatment.
_HEALTH = re.compile(r"\b(?:doctors?|gp|vet|surgery|operation|op|scan|biopsy|lump|symptoms?|medication|meds|tablets?|"
                     r"pills?|dose|diagnos\w*|treatment|chemo\w*|pregnan\w*|blood|fever|infection|rash|cyst|tumou?r|"
                     r"cancer|injur\w*|x-?ray|sprain\w*|fracture\w*|physio\w*|painkillers?|antibiotics?|side effects?)\b")
# ... but a question of how people cope ("What do people usually do the night before an operation to calm
# down?") is the model's to answer, as any other.
_HOW_TO_COPE = re.compile(r"\b(?:what (?:do|did|can|could|should) (?:people|you|others|folks)|how (?:do|did|can|could) "
                          r"(?:people|you|others|folks)|any (?:tips|ideas|advice)|ways to)\b")
_PET = re.compile(r"\b(?:vet|dog|dogs|cat|cats|puppy|kitten|pet|rabbit|horse|hamster|guinea pig)\b")


# A question about the law or the person's rights.
_ASKS_RULES = re.compile(
    r"\b(?:(?:is|was|would) (?:that|it|this) (?:even |actually |really )?(?:legal|illegal|allowed|lawful|against the law)|"
    r"(?:can|could|are|is|were) (?:they|he|she|it|my \w+|the \w+) (?:even |actually |legally )?"
    r"(?:allowed to|legally|do that|just do that|get away with)|"
    r"(?:do|did|would) i (?:have|get) (?:a |any )?(?:right|rights|claim|case)|am i (?:entitled|owed|due|allowed)|"
    r"(?:entitled to|owed|eligible for) (?:a |any )?(?:compensation|refund|money|pay|payout)|"
    r"(?:can|could|should) i (?:sue|claim|take (?:them|him|her) to court|report (?:them|him|her))|"
    r"(?:is|are) there (?:any )?(?:laws?|rules|regulations) (?:about|on|against))\b")


def bad_news_words(user_text: str) -> bool:
    """The message itself names bad news (a death, a diagnosis, a job lost...), whatever its emotion."""
    return distressed(user_text, "neutral", RiskAssessment())


def opened_gently(reply: str) -> bool:
    """The avatar's reply ``reply`` began with a gentle opening (a loss, a worry, an injustice...): the
    conversation was on bad news a moment ago, though the lexicon may not know its words ("'a very strong
    second choice'")."""
    return any(reply.startswith(line) for fam in _GLOOMY_FAMILIES for line in BANK[fam])


def bad_news_before(earlier: Sequence[str]) -> bool:
    """One of the speaker's last ``RECENT_LINES`` lines (``earlier``, oldest first) named bad news."""
    return any(bad_news_words(line) for line in list(earlier)[-RECENT_LINES:])


# Openings that say back what the message said, and only where it said it: "I'm really glad it helped." to
# "thanks for keeping me company" tells them what they felt; to "talking it through really helped" it is the
# opening to say (``choose``).
_SAID_IF_TOLD = {"I'm really glad it helped.": re.compile(r"\bhelp(?:ed|s|ful)?\b")}


def choose(fam: str | None, user_text: str, *, previous_reply: str = "", seed: int = 0) -> str:
    """An opening from family ``fam`` ("" for ``None``), varied by message, never the previous reply's; one that
    says back what the message told (``_SAID_IF_TOLD``) comes first where it was told and not at all elsewhere."""
    if fam is None:
        return ""
    options = BANK[fam]
    told = canonical(user_text)
    fitting = tuple(line for line in options if line in _SAID_IF_TOLD and _SAID_IF_TOLD[line].search(told))
    if fitting:
        return _choose_from(fitting + tuple(line for line in options if line not in fitting), 0,
                            previous_reply=previous_reply)
    options = tuple(line for line in options if line not in _SAID_IF_TOLD) or options
    start = int.from_bytes(hashlib.sha256(f"{seed}\0{user_text}".encode("utf-8", "replace")).digest()[:4], "big")
    return _choose_from(options, start, previous_reply=previous_reply)


def _choose_from(options: Sequence[str], start: int, *, previous_reply: str = "") -> str:
    """The first of ``options`` from place ``start`` on (taken modulo their number) whose first three words are not
    the previous reply's."""
    before = _WORD.findall(canonical(previous_reply))[:3]
    for i in range(len(options)):
        opening = options[(start + i) % len(options)]
        if _WORD.findall(canonical(opening))[:3] != before or len(options) == 1:
            return opening
    return options[start % len(options)]


# Said after the opening when nothing the model wrote was fit to say, so a reply is never the opening alone.
FOLLOW_UPS: dict[str, tuple[str, ...]] = {
    "bad": ("Do you want to tell me more about it?", "How are you holding up?", "I'm here if you want to talk."),
    "unfair": ("What happened then?", "How did you handle it?", "Do you want to tell me more about it?"),
    "care": ("How are you feeling right now?", "I'm here, and I'm listening."),
    "good": ("Tell me more!", "How did it feel?", "What happened?"),
    "memory": ("Tell me more about it.", "What do you remember most?"),
}
_FOLLOW_GROUP = {"unfair": "unfair", "fed_up": "unfair", "care": "care", "memory": "memory", "thanked": "care", "praised": "care",
                 **{f: "good" for f in _GOOD_FAMILIES - {"memory"}}}


def follow_up(fam: str | None, user_text: str, *, seed: int = 0) -> str:
    """A short question or offer to say after an opening of family ``fam``, varied by message."""
    options = FOLLOW_UPS[_FOLLOW_GROUP.get(fam or "", "bad")]
    pick = int.from_bytes(hashlib.sha256(f"{seed}\1{user_text}".encode("utf-8", "replace")).digest()[:4], "big")
    return options[pick % len(options)]
