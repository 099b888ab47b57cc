"""The avatar's answer to a message that signals risk: calm, warm, about what the person said.

It follows common crisis-line guidance: say back what they told you without judging, ask directly
whether they are thinking of ending their life and whether they are safe now (asking does not plant
the idea), give a way to reach help now (``resources``, from the config so a deployment can localise
it), and keep the conversation open. It is written from parts rather than by the small LLM, which
cannot be trusted here; the parts name the specifics of the message (the pills, the rope, the
letters) so the answer is about this person, and vary from message to message.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from e3rg_core.types import RiskAssessment
from e3rg_core.understanding.person import (has_first_person, lacks_subject, second_person, speaks_to_listener,
                                            with_subject)
from e3rg_core.understanding.safety.harm import harm_sentences
from e3rg_core.understanding.safety.medical import medical_sentences
from e3rg_core.understanding.safety.text import canonical

#: The help resources said at the end of a crisis response (``[safety] resources`` in the config).
DEFAULT_RESOURCES = (
    "If you might act on these thoughts, please call your local emergency number now. You can also "
    "talk to a crisis line at any hour: in the US call or text 988, in the UK and Ireland call "
    "Samaritans on 116 123, or find a line near you at findahelpline.com."
)

# What the message names, in the words the answer uses: (pattern on the canonical text, phrase).
_SPECIFICS: tuple[tuple[str, str], ...] = (
    (r"\b(?:pills|tablets|meds|medication|medicine|paracetamol|painkillers|sleeping pills|overdose)\b", "the pills"),
    (r"\binsulin\b", "stopping your insulin"),
    (r"\brope\b|\bhang", "the rope"),
    (r"\bgun\b|\brifle\b|\bshoot", "the gun"),
    (r"\bbridge\b", "the bridge"),
    (r"\broof\b|\bledge\b|\bcliff\b|\bjump", "going somewhere high"),
    (r"\btrain\b|\btracks\b|\bplatform\b", "the train"),
    (r"\btraffic\b|\bcar\b|\bdrive\b|\bdriving\b|\bcrash", "the car"),
    (r"\b(?:letters?|notes?)\b", "the letters you've written"),
    (r"\bgiv(?:e|ing|en) (?:away|my)\b|\bgave away\b", "giving your things away"),
    (r"\bcut(?:ting)?\b|\bblade\b|\brazor\b|\bstitches\b|\bscars?\b", "hurting yourself"),
    (r"\bburn(?:ing|ed|t)?\b|\blighter\b", "hurting yourself"),
)
_SPECIFICS_COMPILED = tuple((re.compile(p), phrase) for p, phrase in _SPECIFICS)

_OPENINGS = {
    "explicit": ("Thank you for telling me that you're thinking about ending your life. I'm taking it seriously, "
                 "and I'm really glad you said it.",
                 "I hear how much pain you're in if you're thinking about ending your life, and I'm glad you "
                 "told me."),
    "passive_ideation": ("It sounds like you're so worn down that you wish it could all stop, and I'm really glad "
                         "you told me.",
                         "It sounds like things have got so heavy that you don't want to go on, and I'm glad you "
                         "said it to me."),
    "burden_hopelessness": ("It sounds like you've been carrying the feeling that others would be better off "
                            "without you. That is a painful thing to hold, and it isn't the truth about you.",
                            "It sounds like you feel there's no way forward, and that you're a weight on others. "
                            "I'm really glad you told me."),
    "plan_means": ("What you've told me about {specific} worries me, and I'm really glad you said it out loud.",
                   "Thank you for telling me about {specific}. I'm taking it seriously because I care what "
                   "happens to you."),
    "farewell": ("What you said about {specific} sounds like it might be a goodbye, and I'm worried about you.",
                 "When you talk about {specific}, it sounds like you might be saying goodbye, and I'm really glad "
                 "you told me."),
    "self_harm": ("It sounds like you've been hurting yourself to get through how much it hurts inside. You "
                  "deserve care, not more pain, and I'm glad you told me.",
                  "Thank you for trusting me with this. Hurting yourself tells me how much you're going through."),
    "reckless_intent": ("What you said about {specific} worries me, and I'm really glad you told me.",
                        "It sounds like you've been putting yourself in danger with {specific}, and I'm worried "
                        "about you."),
    "obfuscated": ("I'm really glad you told me this, and I'm taking it seriously.",),
    "unspecified": ("I'm really glad you told me this, and I'm taking what you said seriously.",
                    "Thank you for telling me. What you said matters, and I'm taking it seriously."),
}
_DEFAULT_SPECIFIC = {"plan_means": "how you might do it", "farewell": "how things will be after you're gone",
                     "reckless_intent": "putting yourself in danger"}
# When only the meaning of the message (or the conversation, or the judge) signalled risk and it names
# no means, the category is the nearest expression's, a guess: the answer does not put words in the
# person's mouth, it says it is asking because it cares, then asks directly.
_TENTATIVE = ("I might be reading this wrong, but something in what you said made me want to check on you.",
              "I may have this wrong, and if so I'm sorry, but I'd rather ask than guess.",
              "Some of what you said worries me a little, and I'd rather ask than guess.")
_OUTRIGHT = re.compile(r"\b(?:kill(?:ing)? (?:my ?self|me)|suicide|end (?:it|it all|my life|things|everything)|"
                       r"take my (?:own )?life|want to die|going to die)\b")
_ECHO = ("When you say {echo}, I hear how much pain you're in, and I'm really glad you told me.",
         "Thank you for telling me that {echo}. I'm taking it seriously, because I care what happens to you.")
_ECHO_TENTATIVE = ("When you say {echo}, I might be reading it wrong, but it worries me, and I'd rather ask "
                   "than guess.",
                   "You said {echo}, and I want to be sure I understand, because I care what happens to you.")
_ASK = ("Can I ask you directly: are you thinking about ending your life, and are you safe right now?",
        "Are you thinking about suicide, and are you safe where you are right now?")
# When the person has said it outright ("I'm going to end it tonight"), asking whether they are thinking
# of suicide repeats them back: ask about now instead, so that a "yes" means danger as it does after
# the other questions (the detector reads a short answer to any of them that way).
_ASK_EXPLICIT = ("Have you done anything to hurt yourself already, or are you thinking of acting on it soon? "
                 "Your safety is what matters to me right now.",
                 "Are you thinking of acting on it soon, and do you have what you would use with you right now? "
                 "I want you to be safe.")
_ASK_SELF_HARM = ("Are you hurt right now, or thinking about ending your life?",
                  "Are you safe right now, and do you need care for any injury?")
_CLOSE = ("You don't have to go through this alone; I'm here and I'd like to keep talking with you.",
          "Is there someone you trust who could be with you now? I'm here, and I'm staying with you.")


# Saying back the person's own words is the first thing crisis-line guidance asks for ("you said you
# don't see the point of waking up"): the reply is about this person, not a fixed paragraph. Only a short
# clause is said back, in the second person; a clause that speaks to the avatar ("you") or cannot be
# turned cleanly is not, and the openings above are used.
_RISK_WORDS = re.compile(
    r"\b(?:die|dying|dead|death|end\w*|kill\w*|suicid\w*|wak\w*|alive|liv\w*|point|anymore|gone|disappear\w*|"
    r"stop|over|burden|better off|without me|goodbye|bye|letters?|notes?|pills|tablets|rope|gun|bridge|jump\w*|"
    r"hurt\w*|cut\w*|burn\w*|bleed\w*|harm\w*|tonight|enough|give up|go on|tired|miss me|around|exist\w*|"
    r"sleep|forever|here|away|won'?t need|won'?t be|where (?:i'?m|you're) going)\b")
_FILLERS = re.compile(r"^(?:(?:honestly|tbh|ngl|lol|idk|like|so|and|but|just|well|ok|okay|yeah|i mean|"
                      r"sometimes|lately|anyway|also|um|uh)\b[,\s]*)+")
_TRAILING = re.compile(r"(?:[,\s]+(?:lol|tbh|ngl|haha\w*|honestly|idk|i guess|anyway|really))+$")
# The clause said back must begin with the person or the people around them, so that no line of it heard
# alone ("it would be easier if you just disappeared") sounds like the avatar's own wish
_SUBJECT = re.compile(r"^(?:you|your|everyone|everybody|everything|nobody|no one|nothing|noone|life|they|people|"
                      r"tonight|tomorrow|all you)\b")
REFLECT_WORDS = 20  # the longest clause said back


def reflect(text: str) -> str:
    """The riskiest short clause of ``text`` said back in the second person ("you don't see the point of
    waking up tomorrow"), or ``""`` when no clause can be said back cleanly."""
    said = canonical(text)
    clauses = [c.strip(" ,-") for c in re.split(r"[.!?;\n]+|,\s+(?:but|and|so)\s+", said) if c.strip(" ,-")]
    best, hits = "", -1
    for clause in clauses:
        clause = _TRAILING.sub("", _FILLERS.sub("", clause)).strip(" ,-")
        n = len(_RISK_WORDS.findall(clause))
        if clause and n >= hits:  # ties: the later clause, where the point usually is
            best, hits = clause, n
    if not best or hits == 0 or len(best.split()) > REFLECT_WORDS or len(best.split()) < 3:
        return ""
    if speaks_to_listener(best):
        return ""  # spoken to the avatar: turning the persons round would muddle who is who
    if re.search(r"\b(?:abt|n|fr|rn|bc|cuz|ppl|tho|thru|ya|w|idc|imo|smh|af|pls|plz)\b", best):
        return ""  # shorthand that reads badly said back
    if not has_first_person(best) and not lacks_subject(best):
        return ""  # not about the writer in words that can be said back
    best = with_subject(second_person(best))
    if not _SUBJECT.match(best):
        return ""
    return re.sub(r"\s+", " ", best).strip()


def specific(text: str) -> str:
    """The means or act the message names, as the crisis answer says it ("the pills"), or ``""``."""
    said = canonical(text)
    for pattern, phrase in _SPECIFICS_COMPILED:
        if pattern.search(said):
            return phrase
    return ""


def crisis_sentences(text: str, risk: RiskAssessment, *, resources: str = DEFAULT_RESOURCES) -> list[str]:
    """The crisis answer to ``text``, one spoken piece at a time: to a risk of suicide or self-harm, to an
    emergency of the body (``medical.medical_sentences``), or to harm done to the writer by someone else
    (``harm.harm_sentences``, with the question about suicide when the message also came near that)."""
    if risk.situation and "medical" in risk.sources:
        return medical_sentences(text, risk.situation, check_in=check_in(text) if risk.category != "medical" else "")
    if risk.situation and ("harm" in risk.sources or "harm-meaning" in risk.sources):
        return harm_sentences(text, risk.situation, check_in=check_in(text) if risk.category != "harm" else "",
                              tentative="harm-meaning" in risk.sources)
    pick = int.from_bytes(hashlib.sha256(text.encode("utf-8", "replace")).digest()[:4], "big")
    category = risk.category if risk.category in _OPENINGS else "unspecified"
    named = means = specific(text)
    if category in _DEFAULT_SPECIFIC:
        named = named or _DEFAULT_SPECIFIC[category]
    elif named and category in ("obfuscated", "unspecified", "explicit") and named not in ("hurting yourself",):
        category = "plan_means"  # the message names a means: speak to it
    options = _OPENINGS[category]
    opening = options[pick % len(options)].format(specific=named or "what you're planning")
    # read from meaning alone, the category is the nearest expression's, a guess (whichever category it is:
    # "i already gave them away, they went to a good home" came nearest an explicit one): say the person's
    # own words back, or ask because it cares, and never put words in their mouth
    guessed = "patterns" not in risk.sources
    echo = "" if means else reflect(text)
    if echo:
        opening = (_ECHO_TENTATIVE if guessed else _ECHO)[pick % 2].format(echo=echo)
    elif guessed and (not means or category == "self_harm"):
        # a word of self-harm read by meaning alone ("there's not much left to cut" of a budget) is no
        # sign the person hurts themself: the opening asks, and the question after it names it
        opening = _TENTATIVE[pick % len(_TENTATIVE)]
    outright = risk.category in ("explicit", "obfuscated") and bool(_OUTRIGHT.search(canonical(text)))
    ask = (_ASK_SELF_HARM if category == "self_harm" else _ASK_EXPLICIT if outright else _ASK)[(pick // 3) % 2]
    close = _CLOSE[(pick // 5) % len(_CLOSE)]
    return [opening, ask, resources.strip(), close]


# Each asks plainly, in at most 15 words: said after the reply, the two together keep to its length limit
# (prompts.MAX_WORDS); the longer ones (17 to 20 words) took six check-in replies on the dev sets over it.
_CHECK_IN = (
    "Can I ask directly, because it matters: are you having thoughts of ending your life?",
    "I want to check, just in case: are you thinking about harming yourself?",
    "What you said worries me a little: are you having thoughts of hurting yourself?",
)


@lru_cache(maxsize=1)
def _safety_questions() -> frozenset[str]:
    """The avatar's questions about safety (check-ins and the crisis response's), canonical."""
    return frozenset(canonical(q) for q in (*_CHECK_IN, *_ASK, *_ASK_EXPLICIT, *_ASK_SELF_HARM))


def asked_recently(listener_lines: list[str], *, turns: int = 3) -> bool:
    """One of the avatar's last ``turns`` replies already asked about safety (a check-in or a crisis
    response): a person who answered it is not asked again at once."""
    return any(q in canonical(line) for line in listener_lines[-turns:] for q in _safety_questions())


def check_in(text: str) -> str:
    """The gentle, direct question added to a reply when a message comes near risk but less surely."""
    pick = int.from_bytes(hashlib.sha256(text.encode("utf-8", "replace")).digest()[:4], "big")
    return _CHECK_IN[pick % len(_CHECK_IN)]
