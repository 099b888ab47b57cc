"""The risk detector: does this message, read with the conversation, signal a risk of suicide or
self-harm to the person who wrote it?

Four parts, each measured alone and together in ``bench/safety.py``:

1. **patterns** (``patterns.py``) on the canonical text (``text.py`` undoes spacing, leetspeak, emoji
   and slang): plain first-person statements, at once;
2. **meaning** (``meaning.py``): sentence embeddings against expressions of risk and their harmless
   look-alikes, for what is said indirectly ("I've sorted out who gets my cat");
3. **the conversation**: the speaker's earlier lines are read the same way, the answer is read with
   the avatar's question before it ("do you have a plan?" / "yes. saturday."), and the last lines
   together (hopelessness that builds over turns);
4. **a judge**: the chat LLM asked yes or no (a calibrated probability), only in the grey zone where
   the meaning layer is unsure or an earlier line signalled risk, so most turns never pay for it.

Thresholds favour recall: a false alarm costs a gentle check-in, a miss can cost a life. They were
chosen on ``bench/data/safety_dev.jsonl`` only.

The result's ``level`` is ``"crisis"`` (this message signals risk: answer with the crisis response),
``"check"`` (the meaning comes near risk but less surely: reply calmly, then ask directly whether they
are thinking of harming themselves, with help shown on the page), ``"care"`` (an earlier message
signalled risk and this one does not: stay calm and caring) or ``"none"``. Two tiers keep recall high
without giving one ordinary message in eight the full crisis response (measured on the dev sets).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from e3rg_core.types import RiskAssessment, Utterance
from e3rg_core.understanding.safety import harm, medical, patterns
from e3rg_core.understanding.safety.meaning import JointScorer, MeaningScore, MeaningScorer
from e3rg_core.understanding.safety.response import asked_recently
from e3rg_core.understanding.safety.text import THANKS_WORDS, canonical

logger = logging.getLogger(__name__)

#: A yes/no risk judge: the probability (0..1) that the turn signals risk, or None when it cannot tell.
Judge = Callable[[], "float | None"]

# Signs that a message is not about the writer's own danger: a practical question, a story, a light
# tone, someone else as the subject. Each lowers the meaning margin by ``Thresholds.cue``; patterns
# are not affected, so "how many pills would it take to not wake up?" is still caught.
_CUES = {
    "question": re.compile(
        r"\b(?:how (?:do|does|should|can|could|many|much|long|often|to)|what (?:length|size|time|temperature|"
        r"should|do|is the best)|any (?:tips|ideas|advice)|should i|is it (?:normal|ok|okay|safe|bad)|"
        r"can you (?:suggest|recommend|help)|recommend|tips for|ideas for)\b"),
    "story": re.compile(
        r"\b(?:novel|story|stories|character|characters|screenplay|script|chapter|poem|poetry|lyrics|essay|"
        r"thriller|plot|scene|audience|stage|in class|studying|the game|my game|fiction|film|movie|book|"
        r"playwright|narrator)\b"),
    "light": re.compile(
        r"(?:!!|\blol\b|\blmao\b|\bhaha\w*|\U0001f602|\U0001f923|\bthriving\b|\bexcited\b|can't wait|"
        r"\bnext year\b|\bjk\b|\bkidding\b|\bnot actually\b|\bi mean\b|\bcame out wrong\b)"),
    "play": patterns.PLAY,  # a game's own words: dying, killing and respawning there is play
    "accident": re.compile(  # harm by accident at home, not on purpose ("like an accident" and "no accident" aside)
        r"(?<!like an )(?<!like a )(?<!no )(?<!not an )(?<!not a )(?<!wasn't an )\b(?:accident|accidentally|by accident)\b"
        r"|\b(?:(?:knife|blade|hand) slipped|without (?:a |an )?(?:glove|oven glove|mitt)|oven|stove|hob|frying pan|"
        r"saucepan|kettle|cast iron|soldering|chopping|slicing|grater|mandoline|paper cut|sunburn\w*|splinter|"
        r"stubbed)\b"),
    "hyperbole": re.compile(  # the everyday figures of speech: "the death of me", "these shoes are killing me"
        r"\b(?:(?:the )?death of me|(?:is|are|was|were) killing me|dying (?:to|for) (?:see|try|know|meet|go|hear|get|a)\b|"
        r"to die for|(?:die|died|dying) (?:of|from) (?:boredom|embarrassment|shame|laughter|laughing|cuteness|heat)|"
        r"kill me now|somebody end me|i'?m dead (?:\U0001f480|lol|lmao)|\U0001f480)"),
    "work": re.compile(  # a job that meets risk words every day: "as a nurse I see overdoses"
        r"\b(?:as an?|i'?m an?|i am an?|i work as an?|training as an?) (?:nurse|doctor|paramedic|pharmacist|carer|"
        r"care worker|vet|therapist|counsell?or|psychologist|psychiatrist|social worker|firefighter|police officer|"
        r"medic|gp|surgeon|coroner|lifeguard|first aider)\b|\b(?:my|our) (?:patients|clients|ward)\b"),
    "recovered": re.compile(  # risk in the past, said as a milestone: "five years since I last self-harmed"
        r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|a few|many) (?:years?|months?) (?:clean|free|"
        r"since i (?:last|stopped|was))\b|\bsince my attempt\b|\bso (?:glad|grateful) i (?:stayed|survived|made it)\b"),
    "others": re.compile(
        r"^(?:my|our|his|her) (?:friend|best friend|mate|best mate|brother|sister|mum|mom|dad|father|mother|uncle|"
        r"aunt|cousin|grandma|grandpa|son|daughter|partner|husband|wife|boyfriend|girlfriend|roommate|flatmate|"
        r"colleague|cat|dog)\b|^(?:he|she|they)\b"),
}


# ... unless it says it is meant: "i want to die lol. not joking"
_EARNEST = re.compile(r"\b(?:not (?:joking|kidding)|no joke|i mean it|for real|fr|seriously|srsly|deadass|"
                      r"not a (?:joke|meme))\b|\bnot lol\b")


# A passing moment told as it happened, with the everyday figure of speech for it: shame at one embarrassing moment
# ("I wanted the ground to swallow me, I called my teacher mum in front of the whole class", "I want to disappear
# after what I said at dinner") or a meal eaten past full ("I ate so much I want to lie on the floor and never get
# up"). ``_LASTING`` keeps the crisis response where the message says more than the moment ("every day",
# "anymore", "everyone hates me", "for good") or names suicide, self-harm or a means; a pattern's match is softened
# only where it is a wish to die, vanish or hide (``_SOFT_WISH``), never "kill myself" or a plan.
_PASSING_MOMENT = re.compile(
    r"\b(?:embarrass\w*|mortif\w*|humiliat\w*|cringe\w*|blush\w*|(?:went|go|turned|bright|so) (?:bright )?red|"
    r"in front of (?:everyone|everybody|the whole|all|my|the|\d+)|live (?:this|it|that) down|"
    r"(?:everyone|everybody|the whole \w+|they all|people) (?:saw|heard|laughed|stared|turned|was staring|were staring)|"
    r"(?:ground|earth|floor) to (?:swallow|open)|mic was (?:still )?on|repl(?:y|ied) (?:to )?all|"
    r"what i (?:said|did) (?:at|in|to|on|last)|called (?:my|the) \w+ (?:mum|mom|dad|mummy)|"
    r"(?:ate|eaten|eating) (?:so|too) much|so (?:full|stuffed)|food coma|(?:second|third|fourth) (?:plate|helping|slice)s?)")
_LASTING = re.compile(
    r"\b(?:every ?day|every single|always|all the time|anymore|any more|any longer|no point|can'?t (?:take|do|cope|go on)|"
    r"(?:everyone|everybody|people) hates?|(?:nobody|no ?one) (?:likes|cares|would|will|wants)|better off|burden|"
    r"worthless|useless|pathetic|kill(?:ing)? myself|suicid\w*|self[- ]?harm\w*|end (?:it|my life|things)|pills|"
    r"for good|forever|permanently|for (?:days|weeks|months|years)|my (?:whole )?life)\b")
_SOFT_WISH = re.compile(r"\b(?:want|wanted|wanting|wish|wishing|wished)(?: to)? (?:die|disappear|vanish)\b")


def passing_moment(text: str, found: str = "") -> bool:
    """``text`` (canonical) tells of a passing moment (``_PASSING_MOMENT``: an embarrassment, a meal eaten past full)
    and says no more of the writer than a wish to vanish at it (not ``_LASTING`` nor ``_EARNEST``); ``found``, the
    words a pattern matched, if any, is such a wish (``_SOFT_WISH``)."""
    return (_PASSING_MOMENT.search(text) is not None and _LASTING.search(text) is None
            and _EARNEST.search(text) is None and (not found or _SOFT_WISH.search(found) is not None))


# An outburst at a trifle said as a condition, read as risk by the patterns ("if I hear that song one more time in
# this shop I'm going to end it all"): the figure of speech more often than not, so the avatar asks directly (a
# check-in) rather than answering with the crisis response. Not "one more day" or night of this, not where the
# message says more than the moment (``_LASTING``, the act itself aside), says when ("tonight", "soon") or says it
# is meant (``_EARNEST``).
_ONE_MORE = re.compile(r"\bif (?:i|we) (?:\S+ ){0,6}one more (?!(?:day|night|week|month|year|minute|hour|morning|"
                       r"second|breath)s?\b)\w+")
# ... not where what there is "one more" of is a hurt, an illness or its treatment ("one more round of chemo",
# "one more beating", "one more panic attack"): that is no trifle
_NO_TRIFLE = re.compile(r"\b(?:chemo\w*|treatments?|dialysis|surgery|operations?|hospital|scans?|therapy|injections?|"
                        r"diagnos\w*|pain|hurt\w*|beat\w*|hit|hits|bull\w*|abus\w*|attacks?|flashbacks?|nightmares?|"
                        r"funerals?|loss|miscarriage|rejections?|breakup|break-up|fights?|rows?|arguments?|insults?|"
                        r"failures?|fail\w*|mistakes?|relapses?|drinks?|pills?)\b")
_ACT = re.compile(r"\b(?:kill(?:ing)? myself|end (?:it|it all|things))\b")
_SOON = re.compile(r"\b(?:tonight|today|tomorrow|soon|this (?:week|weekend)|on purpose)\b")


def outburst(text: str) -> bool:
    """``text`` (canonical) is an outburst at a trifle said as a condition on "one more" of it (``_ONE_MORE``),
    with no hurt, illness or treatment named (``_NO_TRIFLE``)."""
    return (_ONE_MORE.search(text) is not None and _LASTING.search(_ACT.sub(" ", text)) is None
            and not _EARNEST.search(text) and not _SOON.search(text) and not _NO_TRIFLE.search(text))


# ... unless the milestone is broken: "three years clean and I cut again tonight"
_RELAPSE = re.compile(r"\b(?:again|relaps\w*|gone|ruined|broke|lost it|back to)\b")


def cues(text: str) -> tuple[str, ...]:
    """The signs in ``text`` (canonical) that it is not about the writer's own danger."""
    return tuple(name for name, pattern in _CUES.items() if pattern.search(text)
                 and not (name == "recovered" and _RELAPSE.search(text)))


# A question put to the avatar with no word about the writer ("if you could travel anywhere, where would
# you go?", "do you ever get lonely?"): meaning alone asks about safety but never gives the crisis response.
_TO_LISTENER = re.compile(r"\b(?:you|your|you'?d|you'?re)\b")
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|i'?m|i'?d|i'?ve|i'?ll|we|us|our)\b")


# ... typed without its question mark, as chat often is ("how would you even start that conversation with mum",
# "what would you do"): asking the avatar what it would do. Not "how do you hide burn marks...", whose "you" is
# anyone, the writer included.
_ASKS_YOU = re.compile(r"^(?:(?:how|what|why|where|when|who|which) would you|would you)\b")


def to_listener(text: str) -> bool:
    """Is ``text`` (canonical) a question about the avatar that says nothing of the writer?"""
    asked = text.rstrip().endswith("?") or _ASKS_YOU.match(text.strip()) is not None
    return asked and bool(_TO_LISTENER.search(text)) and not _FIRST_PERSON.search(text)


_REASSURING = re.compile(r"^(?:no|nope|nah|not really|i'?m (?:safe|ok|okay|fine|alright)|i am (?:safe|ok|okay|fine)|"
                         r"i won'?t|no plan|never|i'?m not going to)\b")
# A short answer that does not deny it, to the avatar's own question about suicide or self-harm.
_AFFIRMING = re.compile(r"^(?:yes|yeah|yep|yup|ya|maybe|sometimes|kind of|kinda|sort of|i think so|i guess|probably|"
                        r"a (?:bit|little)|a lot|honestly|i don'?t know|idk|not sure|i do|i am|i have|always|every day|"
                        r"all the time|more than|tonight|today|soon|i might)\b")
# The avatar's question about suicide or self-harm in other words than e3rg's own check-ins (a reply
# written by a chat model: "Do you mean suicide?", "are you thinking of hurting yourself?")
_RISK_QUESTION = re.compile(r"\b(?:suicid\w*|kill(?:ing)? yourself|end(?:ing)? (?:your|it all|your own) life|"
                            r"(?:hurt|harm)(?:ing)? yourself|self[- ]harm\w*|take your (?:own )?life)\b[^.!]*\?")


def asks_about_risk(text: str) -> bool:
    """Is ``text`` (canonical) a question about suicide or self-harm?"""
    return bool(_RISK_QUESTION.search(text))


def questions_in(text: str) -> str:
    """The sentences of ``text`` (the avatar's line) that ask something: what a short message after it may
    answer ("do you have a plan?" / "yes. saturday."). The avatar's statements are not read with the message:
    "You've started writing everything down." before "Honestly I'm scared and furious at the same time." read
    as a note written and gave an ordinary turn the crisis response."""
    return " ".join(s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.rstrip().endswith("?"))


# Thanks for help that worked ("just wanted to say thanks for last night, talking it through really helped",
# "thanks, that makes sense"), with no word of an ending: meaning alone reads thanks near a farewell, and the
# farewells of the safety sets all thank too, but each says goodbye, "everything", "always", "these months",
# "for trying" or "last". Such thanks get no check-in from meaning alone; patterns and the crisis tier still speak.
_THANKS = re.compile(r"\b(?:" + THANKS_WORDS + r")\b")
_HELPED = re.compile(r"\b(?:helped|helps|helping|(?:feel|feeling|i'?m) (?:a (?:bit|little|lot) )?better|makes sense|"
                     r"good (?:idea|shout|point)|needed (?:that|this|a plan|to hear)|will do|i'?ll try)\b")
_ENDING = re.compile(r"\b(?:goodbye|bye|farewell|last(?!\s+(?:night|week|weekend|month|year|term|"
                     r"(?:mon|tues|wednes|thurs|fri|satur|sun)day))|everything|always|all (?:these|this time|you'?ve|the)|forever|"
                     r"anymore|any more|fault|trying|tried|sorry|forgive|miss|won'?t|never|gone|leave|leaving|"
                     r"remember|kind(?:er|est)?|end|over|done|enough|tired|pointless)\b")


def thanks_for_help(text: str) -> bool:
    """Does ``text`` (canonical) thank the avatar for help that worked, with no word of an ending?"""
    return bool(_THANKS.search(text) and _HELPED.search(text)) and not _ENDING.search(text)


ANSWER_WORDS = 12  # a message shorter than this is also read with the avatar's question and the lines before
MIN_WORDS = 4  # a shorter message ("ok", "fine", "now a walk") is too short for meaning alone to call risk


def meaning_may_say(text: str) -> bool:
    """May the meaning of ``text`` (canonical) alone call it risk? Not a line too short to mean much, nor a
    question put to the avatar that says nothing of the writer: those signal risk only by the patterns."""
    return len(text.split()) >= MIN_WORDS and not to_listener(text)


CARE_TURNS = 3  # the caring stance lasts this many of the speaker's messages after the last risk signal
HISTORY_LINES = 4  # earlier speaker lines read for risk


@dataclass(frozen=True)
class Thresholds:
    """Where the meaning layer and the judge call a message risk (chosen on the dev set)."""

    # The meaning layer reads ``MeaningScore.score``: the kNN margin (risk_sim - safe_sim, less the cues)
    # moved by the linear probe's log-odds. Every value below was chosen on the dev sets (safety_dev, the
    # emotion dev set, the dev conversations) by a random search of 700 settings after the bank grew from
    # 600 to 3,800 expressions: recall first (crisis or check 1.0 and crisis >= 0.93 on dev), then the
    # fewest alarms on hard negatives, ordinary messages and conversation turns (crisis counted twice).
    # The defaults are for the two encoders read together (``JointScorer``, the shipped detector), chosen on
    # the dev sets and the validation set safety_dev2 together (docs/safety.md, "two encoders read together") by
    # the same rule: recall (crisis or check) at least 0.97 and crisis at least 0.90, then the fewest alarms.
    # ``ONE_ENCODER`` below holds the values for MiniLM alone, chosen before.
    margin: float = 0.01  # score at or above which meaning alone says crisis (-0.02 with the small bank)
    check_margin: float = -0.03  # from here up to ``margin``: "check" (reply, then ask gently about safety).
    # Was -0.07, chosen for a dev recall of 1.0; re-chosen by the goal instead (dev recall, crisis or
    # check, at least 0.97, then the fewest alarms; check_sim 0.40..0.46 and this -0.07..-0.01 searched):
    # dev recall 1.0 -> 0.973, look-alikes alarmed 0.092 -> 0.025, ordinary messages 0.058 -> 0.025,
    # conversation turns 0.087 -> 0.056. Measured after the choice on the held-out sets: recall 0.943 both,
    # look-alikes 0.177 -> 0.124, ordinary 0.167 -> 0.075, conversation turns 0.135 -> 0.103.
    # ... when risk_sim (the mean cosine of the 3 nearest risk expressions) is also at least this. Text
    # far from everything in the bank (Reddit comments, "I parked on level 3") is far from the safe side
    # too, so its margin is noise: at 0.3, 16 % of 2000 GoEmotions comments got the crisis response.
    sim: float = 0.45  # (0.4 with the small bank: a larger bank puts every text nearer some risk expression)
    check_sim: float = 0.33  # the floor of risk_sim for "check" (a score from ``check_margin`` up; 0.4 alone)
    # The probe's probability of risk as a floor of its own: 0.25 (crisis) and 0.05 (check) with the small
    # bank; now the probe speaks through ``score`` and these floors are off (a test may still set them).
    probe: float = 0.0
    check_probe: float = 0.0
    context_sim: float = 0.4  # the floor for earlier lines and for a message after an earlier risk signal (0.35 alone):
    # these are short or joined texts
    answer_sim: float = 0.47  # the floor for a short message read with the avatar's question or the lines
    # before it when nothing earlier signalled risk (0.3 with the small bank gave the crisis response to
    # "My friend Tasha says I should just block him" and "It worked! Tastes better than the takeaway")
    # the avatar's question alone must score this for a short message to be read joined to it when nothing
    # earlier signalled risk (the questions about a plan, a time, safety: 0.03 to 0.33; e3rg's gentle closing
    # questions, "How are you holding up?", "How is that sitting with you?": -0.16 to -0.02)
    asked_margin: float = 0.0
    cue: float = 0.05  # each sign of "not about my own danger" lowers the margin by this
    grey_margin: float = -0.1  # from here up to ``margin`` the judge is asked
    grey_sim: float = 0.25
    context_margin: float = 0.0  # a message after an earlier risk signal in the conversation (stricter:
    # the avatar already answered with care, and repeating the crisis response to "I watched a film" fails the person)
    judge: float = 0.5  # the judge's probability at or above which it says risk
    # A check-in from meaning alone is not asked where the message, alone and with the speaker's two lines
    # before it, is at least this much nearer (mean cosine of the 3 nearest) to everyday conversation than
    # to risk. At 0 on the dev sets: 4 of 16 look-alikes' check-ins and 11 of 25 in ordinary conversations
    # not asked, none of the 18 risk messages' check-ins lost; ``inf`` turns it off.
    everyday: float = 0.0
    # A crisis response from meaning alone is a check-in instead where the message read with the speaker's two
    # lines before it (none of which signalled risk) is at least this much nearer to everyday conversation than
    # to risk: the conversation explains the words ("I just want to sleep through one night." after a barking
    # dog; "there's not much left to cut" after a rent rise). On the reply bench's dev conversations such joined
    # readings were 0.05 to 0.15 nearer to everyday talk; of the 38 risk messages of the safety sets that reach
    # the crisis tier by meaning alone after earlier lines, one is as near (0.061, dev), none held-out above
    # -0.067 (issue 20, twenty-second pass). ``inf`` turns it off.
    explained_everyday: float = 0.05


# The thresholds for one encoder alone (all-MiniLM-L6-v2), chosen on the dev sets before the second
# encoder joined it (issue 19's fourth step).
ONE_ENCODER = Thresholds(margin=0.0, check_margin=-0.03, sim=0.45, check_sim=0.4, answer_sim=0.47, context_sim=0.35)


def _nearer_everyday(score: MeaningScore, by: float) -> bool:
    """The reading ``score`` is at least ``by`` nearer (mean cosine of the 3 nearest) to everyday conversation
    than to risk."""
    return score.ordinary_sim - score.risk_sim >= by


class RiskDetector:
    """Assesses the risk in a message and its conversation. ``encoder`` embeds sentences (``None``: patterns
    only); ``second``, a second encoder, reads with it where it comes near risk (``JointScorer``). The
    thresholds default to those chosen for what is given: ``Thresholds()`` for two encoders, ``ONE_ENCODER``."""

    def __init__(self, encoder: Any | None = None, *, second: Any | None = None,
                 thresholds: Thresholds | None = None) -> None:
        if second is not None and encoder is None:
            raise ValueError("a second encoder reads with a first one; give the first as encoder")
        meaning = MeaningScorer(encoder) if encoder is not None else None
        self.meaning: MeaningScorer | JointScorer | None = (
            JointScorer(meaning, MeaningScorer(second)) if meaning is not None and second is not None else meaning)
        # harm done to the writer, said in other words than the patterns know (the first encoder alone)
        self.harm_meaning = harm.HarmMeaning(encoder, safe=meaning.safe_vectors) if meaning is not None else None
        self.thresholds = thresholds or (Thresholds() if second is not None else ONE_ENCODER)

    def _meaning_says(self, score: MeaningScore | None, *, margin: float, sim: float, probe: float = 0.0) -> bool:
        return score is not None and score.score >= margin and score.risk_sim >= sim and score.probe >= probe

    def _everyday(self, current: str, earlier: Sequence[str], own: MeaningScore | None) -> bool:
        """Whether ``current`` is at least as near to everyday conversation as to risk, alone and read with
        the speaker's last two ``earlier`` lines (where there are any): a risk said across turns ("She'll
        get it on Sunday. I won't be around to give it to her myself.") is nearer to risk read together."""
        if own is None or self.meaning is None:
            return False
        readings = [own, *self.meaning.score_many([" ".join([*earlier[-2:], current])] if earlier else [])]
        return all(_nearer_everyday(s, self.thresholds.everyday) for s in readings)

    def assess(self, text: str, history: Sequence[Utterance] = (), *, judge: Judge | None = None,
               parts: frozenset[str] = frozenset({"patterns", "meaning", "history", "judge"})) -> RiskAssessment:
        """The risk in ``text`` (the speaker's message) after ``history`` (oldest first).

        ``judge`` is asked only in the grey zone; ``parts`` switches parts off for measurement.
        """
        t = self.thresholds
        current = canonical(text)
        earlier = [canonical(u.text) for u in history if u.role == "speaker" and u.text.strip()][-HISTORY_LINES:]
        last_listener = next((u.text for u in reversed(history) if u.role == "listener"), "")
        use_history = "history" in parts and bool(history)
        # The avatar's own question about suicide reads as risk whatever follows it ("who made you?"
        # after a check-in): an answer to it counts when it affirms, not by its meaning with the question.
        asked_about_safety = bool(last_listener) and (asked_recently([last_listener], turns=1)
                                                      or asks_about_risk(canonical(last_listener)))

        found = patterns.match(current) if "patterns" in parts else None
        earlier_found = [patterns.match(e) if "patterns" in parts else None for e in earlier] if use_history else []

        scores: dict[str, MeaningScore] = {}

        def score(texts: dict[str, str]) -> None:
            """Score ``texts`` into ``scores``, each margin lowered by the cues of its own text (the score's
            safe_sim absorbs them). The joined readings are scored only where a rule reads them."""
            if self.meaning is not None and "meaning" in parts and texts:
                scores.update({k: replace(v, safe_sim=v.safe_sim + t.cue * len(cues(text)))
                               for (k, text), v in zip(texts.items(), self.meaning.score_many(list(texts.values())))})

        score({"current": current, **({f"earlier{i}": e for i, e in enumerate(earlier)} if use_history else {})})
        own = scores.get("current")

        # Which earlier speaker lines signalled risk, counted back from the latest.
        # (by the same rule as the message itself: ``meaning_may_say``; a line that meaning alone reads near risk
        # but that is nearer still to everyday conversation signals none: "I've left two polite notes and
        # nothing changed." made the next message, "I just want to sleep through one night.", a crisis. The
        # check-in rule reads it so (``_everyday``); of the 28 earlier lines of the safety sets' risk
        # conversations that meaning reads as risk, one is as near to everyday talk, of the reply bench's
        # conversations 9 of 33; issue 20, twenty-second pass)
        earlier_risk = [
            earlier_found[i] is not None
            or (meaning_may_say(e)
                and self._meaning_says(scores.get(f"earlier{i}"), margin=t.margin, sim=t.context_sim)
                and not _nearer_everyday(scores[f"earlier{i}"], t.everyday))
            for i, e in enumerate(earlier)
        ] if use_history else []
        since = next((n for n, hit in enumerate(reversed(earlier_risk)) if hit), None)  # 0: the line just before
        context = since is not None and since < CARE_TURNS

        sources: list[str] = []
        if found is not None:
            sources.append("patterns")
        short = len(current.split()) < MIN_WORDS
        if meaning_may_say(current) and self._meaning_says(own, margin=t.margin, sim=t.sim, probe=t.probe):
            sources.append("meaning")
        # The conversation: after an earlier risk signal a weaker one counts; otherwise the answer read
        # with the avatar's question, and the last lines read together.
        history_says = listener_question = widened = False
        if use_history and not sources:
            if context and short or not context and len(current.split()) < ANSWER_WORDS:
                asked = questions_in(last_listener) if not asked_about_safety else ""
                question = canonical(asked)
                # the question alone is read only where the rule below reads it (nothing earlier signalled risk)
                score({**({"answer": question + " " + current} if asked else {}),
                       **({"asked": question} if asked and not context else {}),
                       **({"together": " ".join(earlier[-2:] + [current])} if earlier and not context else {})})
            if context:
                # a short answer ("yes", "saturday") to the avatar's question is read with the question,
                # unless it says no or safe
                history_says = (self._meaning_says(own, margin=t.context_margin, sim=t.context_sim) if not short else
                                _REASSURING.search(current) is None
                                and self._meaning_says(scores.get("answer"), margin=t.margin, sim=t.context_sim))
            elif len(current.split()) < ANSWER_WORDS:
                # a short message that may mean risk only with what came before ("I won't need plans")
                # ... read with the avatar's question only where that question came near risk itself ("do you have
                # a plan?"): one word after "How are you feeling about it all?" ("numb") answers a question about
                # feelings, and the question's words alone pulled the joined reading over the line
                answered = self._meaning_says(scores.get("asked"), margin=t.asked_margin, sim=0.0)
                answer_says = answered and self._meaning_says(scores.get("answer"), margin=t.margin, sim=t.answer_sim)
                together_says = self._meaning_says(scores.get("together"), margin=t.margin, sim=t.answer_sim)
                history_says = answer_says or together_says
                if together_says and not answer_says and len(earlier) > 2:
                    # the last lines read together say risk, but read with the line before them they do not: the
                    # line that explained them slid out of the reading ("driving test tomorrow" / "third attempt" /
                    # "any last tips" / "passed."). A check-in, not the crisis response.
                    score({"wider": " ".join(earlier[-3:] + [current])})
                    widened = not self._meaning_says(scores.get("wider"), margin=t.margin, sim=t.answer_sim)
            # A question put to the avatar ("who made you?", "what would you do?") read with the lines
            # before it is at most a check-in, as its own meaning is: the joined reading is the earlier
            # lines' meaning, and the question adds nothing of the writer's own
            listener_question = history_says and not context and to_listener(current)
            history_says = history_says and not listener_question
            if asked_about_safety and len(current.split()) < ANSWER_WORDS and _AFFIRMING.search(current):
                history_says = True  # "yes", "sometimes", "i don't know" to "are you thinking about suicide?"
        grey = own is not None and not short and self._meaning_says(own, margin=t.grey_margin, sim=t.grey_sim)
        judged = None
        asks_judge = judge is not None and "judge" in parts
        if not sources and asks_judge and (grey or context or history_says or self.meaning is None):
            judged = judge()
            if judged is not None and judged >= t.judge:
                sources.append("judge")
        if history_says and (judged is None or not asks_judge):
            sources.append("history")  # no judge to ask: recall first

        # Plain words said in a joking tone ("ugh mondays make me want to die lol") and read as risk by the
        # patterns alone: hyperbole more often than not, but masked pain sometimes, so the avatar asks
        # directly (a check-in) rather than answering with the crisis response or letting it pass.
        joking = sources == ["patterns"] and "light" in cues(current) and not context and not _EARNEST.search(current)
        # A wish to vanish or die at a passing moment, read as risk by the patterns or by meaning alone
        # (``passing_moment``): the figure of speech more often than not, so the avatar meets the moment and asks
        # directly (a check-in) rather than answering with the crisis response.
        passing = bool(sources) and set(sources) <= {"patterns", "meaning"} and not context \
            and (passing_moment(current, found.matched if found is not None else "")
                 or found is not None and outburst(current))
        # Meaning alone read risk in the message, but read with the speaker's lines before it (none of which
        # signalled risk) it is not near risk: the conversation may explain it ("back in bed with a fever" /
        # "I'm so tired of being tired"), or not. The avatar asks (a check-in) rather than answering with
        # the crisis response.
        explained = told_everyday = False
        if sources == ["meaning"] and earlier and not context:
            score({"explained": " ".join(earlier[-2:] + ([canonical(last_listener)] if last_listener else []) + [current]),
                   "own_lines": " ".join(earlier[-2:] + [current])})
            own_lines = scores.get("own_lines")
            explained = not self._meaning_says(scores.get("explained"), margin=t.check_margin, sim=t.check_sim)
            told_everyday = not explained and own_lines is not None and _nearer_everyday(own_lines, t.explained_everyday)
            explained = explained or told_everyday
        explained = explained or widened and sources == ["history"]
        if sources and not (joking or passing or explained):
            category = found.category if found is not None else (own.category if own is not None else "unspecified")
            evidence = found.matched if found is not None else (own.nearest if own is not None else "")
            level = "crisis"
        elif joking or passing and found is not None:
            category, evidence, level = found.category, found.matched, "check"
        elif passing:
            category, evidence, level = own.category, own.nearest, "check"
        elif explained:
            category, evidence, level = own.category, own.nearest, "check"
        # A question about the avatar says nothing of the writer: meaning alone asks about safety only as
        # near risk as the crisis response needs, not from the check-in band ("do you believe in bucket lists?")
        elif (listener_question or not short and self._meaning_says(
                own, margin=t.margin if to_listener(current) else t.check_margin, sim=t.check_sim,
                probe=t.check_probe)) and (
                judged is None or judged >= t.judge / 2):
            category, evidence, level = own.category, own.nearest, "check"
        elif context:
            category, evidence, level = "earlier", "an earlier message", "care"
        else:
            category, evidence, level = "", "", "none"
        # A check-in from meaning alone (no pattern) to a message nearer to everyday conversation than to
        # risk, read alone and with the speaker's two lines before it, is not asked (docs/safety.md,
        # "everyday conversation"): "I'm using an app but I keep forgetting the verbs." came near "I typed
        # out exactly what I'll do and when, step by step", and asking about suicide there fails the person.
        # A crisis reading that the speaker's own lines made everyday talk (``told_everyday``) stays a check-in:
        # meaning read risk in the message at the crisis tier ("After this weekend it won't matter to me anymore.").
        if level == "check" and found is None and not told_everyday and (
                self._everyday(current, earlier, own) or not context and thanks_for_help(current)):
            category, evidence, level = ("earlier", "an earlier message", "care") if context else ("", "", "none")
        score = max([own.score if own is not None else -1.0, judged if judged is not None else -1.0,
                     1.0 if found is not None else -1.0])
        # An emergency of the body now ("chest pains all evening", "my dad collapsed") gets its own answer
        # (call for help now) unless the patterns read a risk of suicide. Meaning alone reading risk in it
        # keeps the question about suicide after the call for help ("it won't stop bleeding"), rather than
        # asking about suicide instead of sending for help.
        listener = [u.text for u in history if u.role == "listener"]
        emergency = medical.urgent(current) if "patterns" in parts else None
        told = emergency is not None and medical.answered_recently(listener)
        if emergency is not None and not (level == "crisis" and found is not None) and not (
                told and level in ("crisis", "check")):
            if told:  # said just now: stay caring, do not repeat it
                level, category, sources = "care", category or "medical", []
            else:
                category = category if level in ("crisis", "check") else "medical"
                level, evidence, sources = "crisis", emergency.matched, ["medical"]
            return RiskAssessment(level=level, category=category, sources=tuple(sources), evidence=evidence[:120],
                                  score=1.0, judged=judged, situation=emergency.kind)
        # Harm done to the writer by someone else: the harm response (with the question about suicide too
        # when the message came near that), unless a suicide crisis response is due, or the avatar gave the
        # harm response in one of its last three replies (then it stays caring instead of repeating it).
        hurt = harm.disclosed(current) if "patterns" in parts else None
        if hurt is None and self.harm_meaning is not None and "meaning" in parts and level != "crisis":
            hurt = self.harm_meaning.disclosed(current)
        if hurt is not None and level != "crisis":
            if harm.answered_recently(listener):
                level = "care" if level == "none" else level
                category = category or "harm"
            else:
                category = category if level == "check" else "harm"
                level, evidence = "crisis", hurt.matched
                sources.append("harm")
            if hurt.by_meaning and "harm" in sources:
                sources[sources.index("harm")] = "harm-meaning"
            return RiskAssessment(level=level, category=category, sources=tuple(sources), evidence=evidence[:120],
                                  score=round(float(max(score, 1.0)), 4), judged=judged, situation=hurt.kind)
        return RiskAssessment(level=level, category=category, sources=tuple(sources), evidence=evidence[:120],
                              score=round(float(score), 4), judged=judged)
