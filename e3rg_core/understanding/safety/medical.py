"""A medical emergency or a panic attack happening now, said in the message.

"I've been having chest pains all evening" needs one answer: get help now. Before this, the meaning
layer read it near risk and the avatar asked about suicide; the model alone would have sympathised.
``urgent`` finds, on the ``canonical`` text, the signs anyone should act on at once (chest pain,
not being able to breathe, the signs of a stroke, bleeding that will not stop, a throat swelling,
someone collapsed or not breathing) and a panic attack under way; ``medical_sentences`` is the
avatar's answer, written from parts: call the emergency number now, or, in a panic attack, slow
breathing and grounding with the emergency number kept for pain or breathlessness that is new or
does not ease. It never diagnoses.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from e3rg_core.understanding.safety.text import matches_in, split_clauses

_SENTENCE = re.compile(r"[.!?;\n]+")
_NOW_PAST = re.compile(r"\b(?:last (?:year|month|week)|years? ago|months? ago|when i was|used to|back in|in the past|"
                       r"had (?:a|my) (?:heart attack|stroke) in)\b")
_LIGHT = re.compile(r"\b(?:lol|lmao|haha\w*|jk|kidding|laughing|laughed|so funny|hilarious)\b|\U0001f602|\U0001f923|\U0001f480")
# A sign told as explained or over, a doctor's finding passed on ("echo was completely normal, she thinks the chest
# pain was a pulled muscle" got "please call your local emergency number now"; issue 20, twenty-second pass).
_RESOLVED = re.compile(r"\b(?:(?:was|were|came back|come back|looked|looks|are) (?:completely |totally |all |perfectly )?normal|all clear|nothing (?:serious|wrong|to worry about)|"
                       r"false alarm|(?:was|were|it'?s|turned out to be|turns out to be) (?:just |only |probably )?"
                       r"(?:a pulled muscle|muscular|indigestion|heartburn|reflux|anxiety|a panic attack|nothing)|"
                       r"pulled muscle|(?:went|gone|has gone|had gone) away|(?:eased|settled|calmed) (?:off|down)|"
                       r"(?:ruled|cleared) (?:it )?out)\b")
# ... unless it is back or still there ("the gp said it was anxiety last time but this feels different").
_BACK = re.compile(r"\b(?:again|(?:came|come) back(?! (?:completely |totally |all |perfectly )?(?:normal|clear|fine|negative|ok))|back now|is back|it'?s back|still|worse|right now|now|tonight|"
                   r"different|keeps?|won'?t (?:stop|go)|this time|but)\b")
# Not an emergency in the same words: a blocked nose, a sore gym chest, a film, a game, someone's story.
_NOT = re.compile(r"\b(?:through my nose|blocked nose|stuffy|hay ?fever|bench press|chest day|workout|gym|sore|"
                  r"film|movie|show|episode|book|novel|game|character|scene|story|dream|joke|smell|smells|stinks|"
                  r"perfume|humid\w*|heat|mask|corset|suit|tie)\b")

# Asked about, not happening as they write: see a doctor soon, and call at once if it comes on strongly.
_ASKS = re.compile(r"\b(?:should i (?:be worried|worry|see|go)|is it (?:normal|bad|serious|worrying)|could it be|"
                   r"what (?:could|does|might) (?:it|that|this) mean|why does|when i (?:climb|run|walk|exercise|lie))\b")
# Not being able to breathe is an emergency when the body says so, not as a figure of speech.
_BODY = re.compile(r"\b(?:properly|at all|chest|asthma|inhaler|wheez\w*|lips|blue|chok\w*|allergic|swell\w*|"
                   r"ambulance|gasping|help|right now|throat|heart)\b")

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((kind, re.compile(p)) for kind, p in (
    ("panic", r"\b(?:i'?m|i am|im) (?:having|in the middle of|in) (?:a |another |an )?(?:panic|anxiety) attack\b|"
              r"\b(?:panic|anxiety) attack (?:right )?(?:now|rn)\b|\b(?:i'?m|i am|im|can'?t stop) panicking\b"),
    ("medical", r"\b(?:chest (?:pains?|(?:to )?hurts?|is hurting|hurting|(?:feels?|is) (?:really |so |very )?(?:tight|heavy)|"
                r"tightness|pressure)|(?:pains?|pressure|tightness|heaviness|ache) in my chest|(?:left arm|jaw) (?:is |feels )?(?:numb|tingling)|"
                r"my chest (?:hurts|is hurting|is tight|feels tight|feels heavy|is killing me)|"
                r"(?:crushing|sharp|bad) pain in my (?:chest|left arm))\b"),
    ("breath", r"\b(?:can'?t|cannot|can not|struggling to|hard to|trouble|barely) (?:breath\w*|catch my breath|get (?:my )?breath)\b"),
    ("medical", r"\b(?:worst headache of my life|(?:sudden|suddenly|came on (?:all at once|suddenly))[^.?!]{0,30}headache|"
                r"headache[^.?!]{0,30}(?:came on (?:all at once|suddenly|out of nowhere)))\b"),
    ("medical", r"\b(?:(?:my |her |his )?face (?:is )?drooping|(?:words|speech) (?:are |is )?(?:coming out )?(?:wrong|"
                r"jumbled|garbled|slurred)|can'?t (?:lift|raise|move) (?:my|his|her|their|one) (?:\w+ )?(?:arm|leg)|slurr(?:ed|ing) (?:speech|my words)|(?:numb|weak|numbness|"
                r"weakness) (?:on|down) (?:one|my left|my right|the left|the right) side|can'?t (?:move|feel) (?:my|one) "
                r"(?:arm|leg|side of my face))\b"),
    ("medical", r"\b(?:won'?t stop bleeding|can'?t stop (?:the )?bleeding|bleeding (?:a lot|heavily|badly|everywhere)|"
                r"losing a lot of blood)\b"),
    ("medical", r"\b(?:throat (?:is )?(?:swelling|closing|tight)|tongue (?:is )?swelling|(?:having|in) anaphyla\w*)\b"),
    ("someone", r"\b(?:collapsed(?! into| (?:on|onto|in) (?:the |my )?(?:sofa|couch|bed|chair)| laughing| in (?:a )?(?:heap|giggles))|"
                r"(?:is|'?s) unconscious|(?:is|'?s) not breathing|isn'?t breathing|stopped breathing|"
                r"(?:can'?t|cannot) wake (?:him|her|them|my \w+)(?: up)?|is unresponsive|"
                r"(?:is|'?s) having a (?:seizure|fit|heart attack|stroke)|turning blue|"
                r"(?:is |'?s |he'?s |she'?s |baby |and )not breathing|"
                r"(?:fell|fallen|passed out|fainted|blacked out|hit (?:his|her|their) head)[^.?!]{0,40}\b(?:won'?t|can'?t|"
                r"isn'?t|not) (?:wake|waking|respond|responding)|(?:passed out|fainted|collapsed)[^.?!]{0,30}can'?t wake)\b"),
    ("medical", r"\b(?:i think )?i'?m having a (?:heart attack|stroke|seizure|allergic reaction)\b"),
))


@dataclass(frozen=True)
class UrgentMatch:
    kind: str  # "medical" (the writer, now), "ask" (a sign asked about), "someone" (a person with them) or "panic"
    matched: str


# ... said after it, the sign is still there or back ("but it's back tonight"); not "still a bit shaken".
_STILL_THERE = re.compile(r"\b(?:again|(?:is|it'?s|they'?re|are) back|back now|still (?:hurts?|hurting|there|have|has|got|"
                          r"getting|feel (?:it|the)|tight|heavy|pain\w*)|(?:getting|feels?|is) worse|won'?t (?:stop|go|ease))\b")


def _resolved(clause: str) -> bool:
    return _RESOLVED.search(clause) is not None and _BACK.search(clause) is None


def urgent(text: str) -> UrgentMatch | None:
    """The first sign in ``text`` (already ``canonical``) of a medical emergency or a panic attack happening
    now, or ``None``. A sign told as explained or over in its own clause or in every clause after it that says
    anything of it ("Had chest pains on the train and went to A&E. Everything came back normal.") is no emergency."""
    if _LIGHT.search(text):
        return None
    clauses = split_clauses(text, _SENTENCE)
    for at, kind, found in matches_in(clauses, _PATTERNS):
        clause, later = clauses[at], clauses[at + 1:]
        if _NOW_PAST.search(clause) or _NOT.search(clause) or _resolved(clause) or (
                any(_resolved(c) for c in later) and not any(_STILL_THERE.search(c) for c in later)):
            continue
        if kind == "breath" and not _BODY.search(clause):
            continue  # "so much work I can't breathe" is a figure of speech
        kind = "medical" if kind == "breath" else kind
        if kind == "someone" and re.search(r"\b(?:building|bridge|roof|tent|shelf|wall|market|economy|"
                                           r"stock|team|deal|plan|project|talks|chain|sale|purchase|mortgage|business|company|firm|marriage|"
                                           r"relationship|ceiling|tunnel|cake|souffl\w*|sponge|scaffolding|fence|shed|"
                                           r"government|coalition|negotiations)\b", clause):
            continue  # "the roof collapsed", "the deal collapsed", "the whole chain's collapsed"
        if kind == "someone" and re.search(r"\b(?:phone|laptop|computer|battery|car|baby monitor)\b", clause):
            continue
        if kind == "medical" and _ASKS.search(clause):
            kind = "ask"  # "should I be worried that my chest hurts when I climb stairs?"
        return UrgentMatch(kind, found.group(0))
    return None


#: The numbers said: the local one first, then the commonest.
CALL = ("please call your local emergency number now: 911 in the US and Canada, 999 in the UK, 112 in most "
        "of Europe.")
_OPENINGS = {
    "medical": ("That could be serious, and I don't want you to wait with it.",
                "I'm worried about you: that needs a doctor's help right away."),
    "someone": ("That sounds frightening, and it needs help right now.",
                "Please don't wait with this: they need help now."),
}
_NEXT = {
    "medical": ("If you're alone, unlock the door and sit or lie somewhere safe while you wait. I'm here with you.",
                "Tell the person on the phone exactly what you're feeling. I'm here with you."),
    "someone": ("They can tell you what to do until help arrives. I'm here with you.",
                "Stay on the line with them; they will guide you until help comes. I'm here with you."),
}
_PANIC = (
    "I'm here with you. A panic attack is frightening, and it will pass.",
    "Let's slow your breathing together: in gently through your nose for four, and out slowly through your "
    "mouth for six.",
    "Feel your feet on the floor, and name a few things you can see around you.",
    "If the pain or breathlessness feels different from your usual panic, or doesn't ease, " + CALL,
)


_ASKED = ("I'm glad you asked about it. That's worth a doctor's look soon, so please don't put it off.",
          "If it comes on strongly, lasts more than a few minutes, or comes with breathlessness, sweating or "
          "feeling sick, " + CALL)


def medical_sentences(text: str, kind: str, *, check_in: str = "") -> list[str]:
    """The avatar's answer to a medical emergency or panic attack of ``kind`` in ``text``, one spoken piece
    at a time; ``check_in`` (the question about suicide, when the message also came near that) before the end."""
    if kind == "panic":
        parts = list(_PANIC)
    elif kind == "ask":
        parts = list(_ASKED)
    elif kind in _OPENINGS:
        pick = int.from_bytes(hashlib.sha256(text.encode("utf-8", "replace")).digest()[:4], "big")
        parts = [_OPENINGS[kind][pick % 2], CALL[0].upper() + CALL[1:], _NEXT[kind][(pick // 2) % 2]]
    else:
        raise ValueError(f"unknown kind of emergency {kind!r}; one of medical, ask, someone, panic")
    return parts[:-1] + [check_in, parts[-1]] if check_in else parts


def answered_recently(listener_lines: list[str], *, turns: int = 2) -> bool:
    """One of the avatar's last ``turns`` replies was this answer (it says ``CALL``, capitalised or not): the
    next message gets a calm reply."""
    return any(CALL[1:] in line for line in listener_lines[-turns:])
