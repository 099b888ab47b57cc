"""Faults a reply can have, each detected on its own: what a caring listener would not say.

Used by the output guard (``safety.guard``: the faults that must never be spoken) and by the
reply-quality bench (``bench/replies.py``: how often each fault happens). Each detector takes the
reply and a ``ReplyContext`` (the user's message, whether it was bad or good news, what was said so
far) and returns ``True`` when the fault is present. They are rules over words, so they can miss a
fault said in other words and, more rarely, see one that is not there; each is tested on examples.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from e3rg_core.emotions import CANDIDATES
from e3rg_core.understanding.prompts import MAX_WORDS

CHEERFUL = re.compile(
    r"\b(?:wonderful|fantastic|awesome|amazing|terrific|exciting|excited for you|heart-?warming|delightful|hooray|"
    r"yay|woo-?hoo|congrat\w*|great (?:news|to hear|job|idea|choice)|good (?:to hear|news|for you|idea|choice)|"
    r"glad to hear|happy to hear|nice to hear|love (?:to hear|that)|how (?:lovely|exciting|nice|fun)|so happy for you|"
    r"happy for you|what a (?:great|lovely|wonderful|fun|nice)|that'?s (?:so )?(?:great|lovely|nice|fun|cool|exciting)|"
    r"(?:enjoy|celebrate)(?! \w+ing)|lucky|best of luck|well done|proud of you|sounds (?:fun|great|lovely|exciting)|"
    # joy put on the person ("I understand you're excited about your sister's wedding!" to a family row)
    r"(?:i understand|i know|i can tell|i can see|sounds like|it seems) you'?re (?:so |really )?(?:excited|thrilled|"
    r"delighted|happy|over the moon))\b"
)
# Glad of the news or proud of it, in the openings' words: a fault to bad news ("Oh, I'm glad." to two replies
# from fourteen people) that the bench counts. The guard does not stop them (it reads CHEERFUL): a glad
# opening is said where the message's own words say it went well whatever the vote read ("the scan shows
# it hasn't spread" read as fear).
GLAD = re.compile(
    r"\b(?:(?:something|a lot) to be proud of|a real achievement|what a lovely thing|that'?s really lovely|"
    r"(?:glad|good|great|nice) to (?:know|see))\b"
    r"|(?:^|[.!?] )(?:oh, )?(?:i'?m (?:so |really )?glad|that'?s (?:good|(?:so |really )?kind)|what a kind thing to do)[.!]"
)
# Glad of the person's openness, not of the news: "I'm glad you told me".
GLAD_OF_TELLING = re.compile(
    r"\b(?:glad|good|thank you|thanks|grateful) (?:that )?you (?:told|reached out|shared|said|talked|are talking|"
    r"came|wrote|let me know|opened up|felt able)"
)
GLOOMY = re.compile(
    r"\b(?:sorry to hear|so sorry|i'?m (?:really )?sorry|that'?s (?:so )?(?:awful|terrible|horrible|tough|hard|rough)|how (?:awful|terrible|"
    r"sad)|must be (?:hard|difficult|painful|tough)|sounds (?:hard|difficult|painful|tough|rough)|heartbreaking|"
    r"devastating|condolences|"
    # feeling it as a hurt, a worry or a wrong, not as good news: "That's so unfair." to a neighbour's kindness
    r"(?:that'?s|how|so|sounds) (?:really |so )?(?:unfair|disappointing|frightening|scary|stressful|frustrating|"
    r"maddening)|"
    r"not okay|what a letdown|such a letdown|(?:really|so) lonely|lonely feeling|no wonder you'?re (?:worried|upset)|"
    r"worry to carry|must have stung|so awkward|horrible feeling|weighing on you|sitting heavily|a lot of pain|"
    r"(?:didn'?t|don'?t) deserve that|anyone would be upset)\b"
)
ADVICE = re.compile(
    # "you must be buzzing", "you must have been scared": a guess at a feeling, not an instruction
    # "she says you should", "he thinks you should": someone else's advice said back, not the avatar's
    r"\b(?:(?<!says )(?<!said )(?<!thinks )(?<!reckons )you should|you shouldn'?t|you need to|you have to|"
    r"you must(?! be\b| have been\b| feel\b)|you ought to|"
    r"try to|try not to|make sure|"
    r"i suggest|i recommend|i'?d suggest|i'?d recommend|it'?s important to|don'?t forget|remember to|have you tried|"
    r"have you considered|consider (?:talking|reaching|seeing|getting|asking|trying)|you could try|maybe you could|"
    r"why not|the best thing|the key is|focus on|look on the bright side|everything happens for a reason|"
    # "at least a month", "at least twice": a quantity, not a silver lining
    r"at least(?! (?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|\d+|once|twice|half|some)\b))\b"
)
BLAME = re.compile(
    r"\b(?:your (?:own )?fault|you should have|you shouldn'?t have|you (?:might|could) have (?:\w+ )?(?:prepared|"
    r"studied|practi[sc]ed|tried|worked|checked|planned)(?: it)? (?:better|harder|more)|"
    r"(?:you need to|you should|be sure to) apologi[sz]e|"
    r"apologi[sz]e (?:to|for)|be honest|take responsibility|learn from (?:this|it|your)|you brought|you caused|"
    r"own up|admit (?:it|that|you))\b"
)
AGREEMENT_OPENER = re.compile(r"^\W*(?:you'?re (?:so |absolutely |totally )?right|i (?:totally |completely )?agree|"
                              r"absolutely|exactly|indeed|true|that'?s (?:so )?true|yes|yeah|of course)\b")
# The user put forward a view the avatar could agree with.
CLAIM = re.compile(r"\b(?:i think|i believe|i reckon|i feel like|don'?t you think|isn'?t it|right\?|agree|"
                   r"should(?:n'?t)? (?:i|we|they)|in my opinion|the best|the worst|always|never)\b")
_LABELS = "|".join(sorted((re.escape(label) for label in CANDIDATES), key=len, reverse=True))
EMOTION_LABEL = re.compile(
    r"\b(?:you(?:'re| are)?|the speaker(?: is)?|they(?:'re| are)?)\s+(?:seem(?:s|ing)? to (?:be )?|must be |might be |"
    r"may be |are |is )?(?:feel(?:s|ing)?|felt)\s+(?:a (?:bit|little) |so |very |really |quite |rather |extremely )?"
    rf"(?:{_LABELS})\b|\b(?:your|the speaker'?s|their) (?:emotion|emotional state|feeling) (?:is|seems|of)\b|"
    r"\bfeel(?:ing)? (?:neutral|contempt|content|trusting|prepared|anticipating|sentimental|faithful|caring)\b"
)
THIRD_PERSON = re.compile(r"\b(?:the (?:speaker|user|person speaking|listener)|speaker'?s|user'?s)\b|"
                          r"\blet'?s (?:address|acknowledge|validate|show|be supportive|respond)\b|"
                          r"\b(?:address|validate|acknowledge) (?:their|his|her) (?:fear|feelings?|emotions?|concerns?)\b")
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|me|mine|myself)\b")
RELATIONS = (
    "mother", "mom", "mum", "father", "dad", "sister", "brother", "wife", "husband", "son", "daughter", "aunt",
    "uncle", "cousin", "grandma", "grandmother", "grandpa", "grandfather", "niece", "nephew", "boss", "manager",
    "colleague", "coworker", "neighbour", "neighbor", "boyfriend", "girlfriend", "partner", "fiance", "fiancee",
    "baby", "sibling", "teacher", "doctor", "roommate", "flatmate",
)
_RELATION = re.compile(r"\b(" + "|".join(RELATIONS) + r")s?\b")
# The avatar telling a life story of its own: it has none, so any is invented.
OWN_STORY = re.compile(r"\b(?:when i was (?:a |an |young|little|growing|your age|in)|i remember (?:when|my|the day)|"
                       r"reminds me of (?:when|my|the time)|back when i|i used to (?:have|live|work|go)|my (?:"
                       + "|".join(RELATIONS) + r"|childhood|kids?|family|own (?:mother|father|mum|mom|dad))s?\b)")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]{2,})\b")
_NOT_NAMES = frozenset({
    "I", "I'm", "I'd", "I'll", "I've", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
    "Sunday", "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
    "November", "December", "Christmas", "English", "God", "Mom", "Mum", "Dad", "Grandma", "Grandpa", "Oh", "Wow",
    "That", "This", "What", "How", "You", "Your", "It", "Its", "The", "And", "But", "Yes", "Sorry", "Congratulations",
})
_STOP = frozenset(
    "a an the and or but if of to in on at for with about from by as is are was were be been being do does did "
    "have has had i you he she it we they me my your his her its our their this that these those what which who "
    "whom whose when where why how can could would should will shall may might must not no yes so just really "
    "very any some there here than then too also ever".split()
)
_WORD = re.compile(r"[a-z']+")


@dataclass(frozen=True)
class ReplyContext:
    """What a reply answers: the user's message and the conversation before it."""

    user_text: str
    news: str = "neutral"  # "bad", "good" or "neutral": what the message reports for the user
    asks: bool = False  # the message asks the avatar a direct question
    earlier_user: tuple[str, ...] = ()  # the user's earlier messages, oldest first
    previous_reply: str = ""  # the avatar's reply before this one
    avatar_name: str = ""
    max_words: int = MAX_WORDS


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")  # where one sentence of a reply or a message ends


def _lower(text: str) -> str:
    return text.replace("\u2019", "'").lower()


def tone_mismatch(reply: str, ctx: ReplyContext) -> bool:
    """Cheerful words to bad news, or gloomy ones to good news."""
    said = _lower(reply)
    if ctx.news == "bad":
        heard = GLAD_OF_TELLING.sub(" ", said)
        return CHEERFUL.search(heard) is not None or GLAD.search(heard) is not None
    if ctx.news == "good":
        return GLOOMY.search(said) is not None
    return False


def advice_or_blame(reply: str, ctx: ReplyContext) -> bool:
    """Advice, a lecture or blame where comfort is due (bad news the user did not ask advice about)."""
    said = _lower(reply)
    if BLAME.search(said):
        return True
    return ctx.news == "bad" and not ctx.asks and _advises(said, _lower(ctx.user_text))


def _advises(said: str, heard: str) -> bool:
    """Advice in ``said`` that is not the person's own words said back ("Now you have to tell your boss."
    to "Now I have to tell my boss")."""
    for match in ADVICE.finditer(said):
        phrase = match.group(0)
        if phrase.startswith("you ") and re.search(rf"\b(?:i|we) {re.escape(phrase[4:])}\b", heard):
            continue
        return True
    return False


def agreement_opener(reply: str, ctx: ReplyContext) -> bool:
    """"You're right!" or "Absolutely" to a message that put forward no view to agree with."""
    return AGREEMENT_OPENER.search(_lower(reply)) is not None and CLAIM.search(_lower(ctx.user_text)) is None


def emotion_label(reply: str, ctx: ReplyContext) -> bool:
    """The emotion named like a label ("you seem to feel neutral"), not reflected in words."""
    return EMOTION_LABEL.search(_lower(reply)) is not None


def third_person(reply: str, ctx: ReplyContext) -> bool:
    """Talking about the user in the third person ("the speaker is embarrassed")."""
    return THIRD_PERSON.search(_lower(reply)) is not None


def speaker_voice(reply: str, ctx: ReplyContext) -> bool:
    """The reply speaks as the user: a sentence in the first person that mostly repeats their words
    ("No wonder you're worried. Someone is trying the door handle. I'm alone in the house."). An answer
    to their question may repeat its words ("basil grows well in pots")."""
    said = _lower(" ".join((*ctx.earlier_user[-3:], ctx.user_text)))
    theirs = {w for w in _WORD.findall(said) if w not in _STOP and len(w) > 2}
    # a question about the person themself ("am I a terrible parent", "what did I do wrong?"), read once
    asked = _ABOUT_ME.search(_lower(ctx.user_text)) if ctx.asks else None
    quality = {w for w in _WORD.findall(asked.group(1)) if w not in _STOP and len(w) > 2} if asked else set()
    about_my_doing = ctx.asks and _ABOUT_MY_DOING.search(_lower(ctx.user_text)) is not None
    # the statements beside a question, of three words or more, as the words they are made of: an answer that says
    # one again word for word speaks as the person (an echo of a message that asks nothing is the composer's own)
    stated = {tuple(_WORD.findall(part)) for part in _SENTENCE_BREAK.split(_lower(ctx.user_text))
              if "?" not in part and len(_WORD.findall(part)) >= 3} if ctx.asks else set()
    for sentence in _SENTENCE_BREAK.split(_lower(reply).strip()):
        if tuple(_WORD.findall(sentence)) in stated:
            return True  # "Do you think it's too soon for another cat? It feels a bit disloyal." answered "... It feels a bit disloyal."
        words = [w for w in _WORD.findall(sentence) if w not in _STOP and len(w) > 2 and not _FIRST_PERSON.fullmatch(w)]
        copied = sum(w in theirs for w in words) / len(words) if words else 0.0
        first_person = _FIRST_PERSON.search(sentence) is not None
        to_them = re.search(r"\byou", sentence) is not None
        if not ctx.asks and not to_them and len(words) >= 2 and copied >= 0.75 and (first_person or len(words) >= 4):
            return True  # their own sentence said back as the avatar's, or word for word
        if first_person and re.search(r"\bmy\b", said) and any(
                re.search(rf"\bmy (?:\w+ )?{re.escape(w)}\b", sentence) for w in theirs):
            return True  # "my son", "my little girl" said back as the avatar's own
        if quality and _I_AM.search(sentence) and quality <= set(_WORD.findall(sentence)):
            return True  # "am I a terrible parent" answered "I think I'm a terrible parent": the question as the avatar's own
        if about_my_doing and _I_DID.search(sentence):
            return True  # "what did I do wrong with the pastry?" answered "I think I was not as careful with the pastry."
    return False


# A question about the person themself ("am I a terrible parent", "was I wrong"), and the avatar saying it of itself.
_ABOUT_ME = re.compile(r"\b(?:am i|was i|have i been|do i look|does (?:that|this|it) make me) ([^.!?]{2,60})")
_I_AM = re.compile(r"\b(?:i'?m|i am|i was|i'?ve been|i look|makes me)\b")
# A question about what the person did or should do, and the avatar saying it did it.
_ABOUT_MY_DOING = re.compile(r"\b(?:(?:what|why|how|where|when) (?:did|do|should|could|have) i|(?:did|should|could|"
                             r"have) i)\b")
_I_DID = re.compile(r"\bi (?:was(?! (?:wondering|thinking|going to))|did|didn't|wasn't|should(?:n't)? have|could have|"
                    r"made|used|put|added|forgot|left|overdid|underdid|took|got|went|had|kept|let|cut|ran|bought|chose|"
                    r"\w{2,}[^e\W]ed)\b")  # any regular past: "I think I overworked the pastry"
# A question whether a feeling or the person is all right ("is it normal to...", "am I being petty", "was I
# wrong", "does that make me a bad friend"), and an answer that judges against them: "it's not normal to feel
# angry", "you're being petty", "yes, you are".
VALIDATION_QUESTION = re.compile(
    r"\b(?:is (?:it|that|this) (?:\w+ )?(?:normal|weird|okay|ok|wrong|bad|silly|stupid|dumb|strange|selfish|crazy|"
    r"petty|unreasonable|too much|terrible|awful|mean|rude)|am i\b|was i (?:wrong|being|too|out of line|a\b|an\b)|"
    r"does (?:that|this|it) make me|would (?:that|it) be (?:weird|bad|wrong|petty|rude|selfish|mean|too much)|"
    r"will i (?:just )?(?:look|seem|come across))")
JUDGED = re.compile(
    r"\b(?:(?:it'?s|it is|it would be|that would be) not (?:normal|okay|ok|healthy|appropriate|acceptable) "
    r"(?:to|for you|that you|if you)\b|"
    r"(?:it'?s|it is|it would be|that would be) (?:a (?:bit|little) )?(?:weird|strange|wrong|selfish|petty|silly|"
    r"stupid|dumb|unreasonable|rude|mean|crazy|bad) (?:to|for you|that you|if you)\b|"
    r"yes,? you (?:are|were|do|will|would)\b|"
    r"you(?:'re| are| were|'ll| will| would| might| may| could)(?: well)? (?:being |look(?:ing)? |seem |"
    r"come across as |be seen as |be )?(?:a (?:bit|little) )?(?:petty|unreasonable|selfish|wrong|overreacting|"
    r"dramatic|silly|stupid|crazy|rude|mean|(?:an? )?(?:terrible|bad|awful|horrible|selfish|rubbish|useless) \w+)|"
    r"you shouldn'?t (?:feel|be (?:so )?(?:upset|angry|sad|annoyed|jealous|hurt)))")
# ... unless the verdict is denied ("I don't think you're being petty", "not that you're wrong").
_DENIED = re.compile(r"(?:n'?t|not|never|no one would say|nobody would say)(?: \w+){0,3} $")


def judged(reply: str, ctx: ReplyContext) -> bool:
    """An answer to a question whether a feeling or the person is all right ("is it normal to feel angry at
    pregnant women on instagram" after a miscarriage, "am I being petty?") that judges against them ("it's
    not normal to feel angry...", "you're being petty"): a listener does not give that verdict."""
    if not ctx.asks or VALIDATION_QUESTION.search(_lower(ctx.user_text)) is None:
        return False
    said = _lower(reply)
    return any(not _DENIED.search(said[max(0, m.start() - 30):m.start()]) for m in JUDGED.finditer(said))


# A sentence that points to help: a line to call or text, with its number ("in the UK and Ireland call
# Samaritans on 116 123", "911 in the US and Canada"). The crisis answers' help lines and the countries they
# serve are no facts of the person's life.
_HELP_LINE = re.compile(r"\b(?i:call|text|ring|dial|phone)\b.*\b\d{3}\b|\b\d{3} in (?:the |most of )?[A-Z]")
# "a doctor's help", "see a doctor": someone to go to, not the person's own doctor named out of nowhere
_A_DOCTOR = re.compile(r"\ba (?:doctor|gp|nurse)\b", re.IGNORECASE)


def invented(reply: str, ctx: ReplyContext) -> bool:
    """A name or a relation (sister, boss...) that nobody in the conversation mentioned, or a life
    story of the avatar's own ("when I was a child", "my mum"). Sentences that point to a help line
    (``_HELP_LINE``) and "a doctor" are no invention."""
    if OWN_STORY.search(_lower(reply)):
        return True
    reply = _A_DOCTOR.sub("someone", " ".join(s for s in _SENTENCE_BREAK.split(reply) if not _HELP_LINE.search(s)))
    said_before = _lower(" ".join((*ctx.earlier_user, ctx.user_text)))
    relations_before = {m.group(1) for m in _RELATION.finditer(said_before)}
    for match in _RELATION.finditer(_lower(reply)):
        if match.group(1) not in relations_before:
            return True
    if ctx.asks:
        return False  # an answer may name things ("Biscuit would be a lovely name for a puppy")
    allowed = {ctx.avatar_name.lower()} if ctx.avatar_name else set()
    for match in _NAME.finditer(reply):
        name = match.group(1)
        if name in _NOT_NAMES or name.lower() in allowed:
            continue
        if re.search(rf"\b{re.escape(name.lower())}\b", said_before) is None:
            return True
    return False


# How an assistant answers a request, not how a friend answers a person: the message treated as input
# ("Thank you for providing the information."), a service's sign-off ("If there is anything else I can
# help with"), or a verdict on the message's emotion as a task ("They don't seem to have a strong
# positive or negative emotion").
ASSISTANT_SPEAK = re.compile(
    r"\b(?:thank you|thanks) for (?:providing|the (?:information|info|details|update|context|input)|"
    r"(?:sharing|giving) (?:that|this|the|your) (?:information|info|details)|your (?:message|question|input|query|"
    r"inquiry|understanding))|\bi appreciate (?:your|the) (?:understanding|information|input|opportunity|patience)|"
    r"\b(?:if|whether) (?:there is|there's|you have|you need) anything else|\bhow (?:can|may) i (?:assist|help) you|"
    r"\bfeel free to (?:ask|reach out|let me know|contact)|\blet me know if you (?:have|need) (?:any|more)|"
    r"\b(?:positive or negative|negative or positive) (?:emotion|sentiment|feeling)s?|\bas an ai\b|"
    r"\bi(?:'m| am) (?:just |only )?an? (?:ai|language model|assistant)\b|\b(?:is there|was there) anything "
    r"(?:specific|else|particular) (?:you|that you)|\bprovided information\b|\bthe information (?:you|provided)\b|"
    r"\bdo you have any (?:other |more |further )?questions\b|\bwhat else would you like to (?:discuss|know|ask)\b|"
    r"\bi understand that (?:this|there|the)\b")


def assistant_speak(reply: str, ctx: ReplyContext) -> bool:
    """An assistant's words, not a friend's: the message thanked for as information, a service's
    sign-off, or its emotion judged as a task."""
    return ASSISTANT_SPEAK.search(_lower(reply)) is not None


def repeated_opener(reply: str, ctx: ReplyContext) -> bool:
    """The reply starts with the same three words as the avatar's previous reply."""
    if not ctx.previous_reply:
        return False
    first = _WORD.findall(_lower(reply))[:3]
    return len(first) == 3 and first == _WORD.findall(_lower(ctx.previous_reply))[:3]


def unanswered(reply: str, ctx: ReplyContext) -> bool:
    """A direct question to the avatar left unanswered: the reply only asks back, or says nothing of
    what was asked."""
    if not ctx.asks:
        return False
    statements = [s for s in _SENTENCE_BREAK.split(reply.strip()) if s and not s.rstrip().endswith("?")]
    if not statements:
        return True
    asked = {w for w in _WORD.findall(_lower(ctx.user_text)) if w not in _STOP and len(w) > 2}
    answer = set(_WORD.findall(_lower(" ".join(statements))))
    # a suggestion answers "what should I do?" ("You could ask her over coffee.")
    opinion = re.search(r"\b(?:i think|i'?d|i would|i love|i like|i'?m|my|yes|no|probably|maybe|definitely|"
                        r"i haven'?t|i have|i don'?t|i can|you could|you might)\b", _lower(" ".join(statements)))
    return not (asked & answer) and opinion is None


# Words any reply could hold: they make a reply no more about this message.
_GENERIC_WORDS = frozenset(
    "sorry hear heard sound sounds sounded feel feels feeling feelings felt understand understandable understanding "
    "here listening listen support supporting tough hard difficult situation time times talk talking tell telling "
    "more going through must know want like well okay thing things something anything everything lot way much "
    "right now glad happy sad good great nice lovely wonderful awful terrible help helping care caring share "
    "sharing thank thanks pain painful heavy rough happened happening anyone everyone someone people moment "
    "experience process need needs make makes made wish hope hoping alone completely totally truly deeply "
    "that's it's you're i'm i'd i'll what's there's let's don't can't isn't won't stressful frustrating "
    "frustrated scary frightening frightened worried worrying worry upset lonely unfair exciting excited proud "
    "heartbreaking awkward disappointing disappointed devastating devastated hurt hurting emotion emotions "
    "emotional concern concerns anxious anxiety fun amazing imagine holding handle handling deal dealing cope "
    "coping carry fine wonder kind able maybe perhaps around else".split()
)


def specific_words(text: str) -> set[str]:
    """Content words of ``text``, each cut to its first five letters (so "crosswords" meets "crossword")."""
    return {w[:5] for w in _WORD.findall(_lower(text)) if w not in _STOP and w not in _GENERIC_WORDS and len(w) > 2}


def heard_words(ctx: ReplyContext) -> set[str]:
    """``specific_words`` of what the person said: this message and their last two."""
    return specific_words(ctx.user_text).union(*(specific_words(line) for line in ctx.earlier_user[-2:]))


# A goodbye for now, in the message's last sentence: "bye", "night!", "speak later", "gotta go", "off to bed".
# Never "goodbye" (said of someone lost, or a farewell the risk detector reads first).
_SIGN_OFF = re.compile(
    r"(?:^|[,;]\s*)(?:ok(?:ay)?|right|anyway|well|alright|ha|haha|lol)?\W*(?:bye+(?: for now| then)?|good ?night|night(?: night)?|"
    r"nighty night|ttyl|cya|see (?:ya|you)(?: later| soon| tomorrow)?|later)\W*(?:x+)?\W*$"
    r"|(?:^|[,;]\s*|\b(?:anyway|ok|okay|right|so|well)\W+)(?:i'?ll )?(?:speak|talk|chat)(?: to you)? (?:later|soon|tomorrow|in the morning)\b"
    r"|\bcatch you later\b"
    r"|\b(?:gotta|got to|have to|need to|must|better|should)(?: get)? go(?:ing)?(?=\W*(?:$|[,.!;]|now\b|x\b|bye\b))"
    r"|\b(?:i'?ll|i'?d|i must|gotta) let you go\b"
    r"|\b(?:off to (?:bed|sleep)|heading (?:off|to bed)|signing off|logging off|off (?:now|for the night))\b"
    r"|^(?:anyway|ok(?:ay)?|right|well|alright),? (?:i'?m )?off to \w+")


def last_sentence(user_text: str) -> str:
    """The message's last sentence, as written ("" for an empty message)."""
    parts = [part for part in re.split(r"(?<=[.!?])\s+(?=\S)", user_text.strip()) if part]
    return parts[-1] if parts else ""


def signs_off(user_text: str) -> bool:
    """The message ends with a goodbye for now (``_SIGN_OFF`` in its last sentence). The reply sees them off
    (``openings`` family "signed_off"); a goodbye needs nothing said back, so ``generic`` leaves it alone."""
    last = last_sentence(user_text)
    return bool(last) and _SIGN_OFF.search(_lower(last)) is not None


def generic(reply: str, ctx: ReplyContext) -> bool:
    """A reply that could answer any message: it has no content word of what the person said (this
    message or their last two) and at most one of its own beyond the words every reply has ("I hear you. I'm sorry you're feeling this
    way."). A question to the avatar (judged by ``unanswered``), a goodbye for now (``signs_off``) and a
    message with almost no words of its own ("ok", "haha thanks") are left alone."""
    if ctx.asks or signs_off(ctx.user_text):
        return False
    if len(specific_words(ctx.user_text)) < 2:
        return False
    mine = specific_words(reply)
    # two specific words of its own ("Waiting for results is so hard.") make it about something
    return not (mine & heard_words(ctx)) and len(mine) < 2


def over_limit(reply: str, ctx: ReplyContext) -> bool:
    """Longer than the reply prompt allows."""
    return len(reply.split()) > ctx.max_words


DETECTORS: dict[str, Callable[[str, ReplyContext], bool]] = {
    "tone_mismatch": tone_mismatch,
    "advice_or_blame": advice_or_blame,
    "agreement_opener": agreement_opener,
    "emotion_label": emotion_label,
    "third_person": third_person,
    "assistant_speak": assistant_speak,
    "speaker_voice": speaker_voice,
    "judged": judged,
    "invented": invented,
    "repeated_opener": repeated_opener,
    "unanswered": unanswered,
    "over_limit": over_limit,
    "generic": generic,
}


def faults(reply: str, ctx: ReplyContext, *, names: Sequence[str] | None = None) -> tuple[str, ...]:
    """The names of the faults ``reply`` has (all detectors, or those in ``names``)."""
    chosen = DETECTORS if names is None else {n: DETECTORS[n] for n in names}
    return tuple(name for name, detect in chosen.items() if detect(reply, ctx))
