"""The output guard: no reply may affirm, praise or encourage self-harm or death, or answer a
distressed message cheerfully, whatever the risk detector and the emotion vote said.

Every sentence of a reply is checked before it is spoken (``check``). The cheerful words are the
reply-quality detectors' (``e3rg_core.understanding.faults``), so the guard and the bench agree. A first sentence that fails
replaces the whole reply with a calm one (``safe_reply``); a later one ends the reply there.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from e3rg_core.types import RiskAssessment
from e3rg_core.understanding.faults import CHEERFUL, GLAD_OF_TELLING
from e3rg_core.understanding.safety.text import canonical

_NEGATIVE_CLASSES = ("sad", "fear", "angry", "disgusted", "contempt")

# A death told as "passed" without "away" ("my dad passed last year", "her dad passed when she was twelve", "since
# he passed"): someone close, or "he"/"she", then "passed" with a time or a "when" after it, or "passed" after
# "since"/"before"/"after" someone. Not "passed her driving test", "passed out", "passed me", nor a bare "she
# passed!" (a test, as often as not): "passed" alone is the lexicon's good news (``openings._GOOD_WORDS``), and
# read so, a grandmother who "passed on Sunday" could be met with cheer.
_CLOSE_ONE = (r"(?:mum|mom|mam|mummy|mommy|mother|dad|daddy|father|grandma|grandpa|gran|granny|nan|nana|nanna|grandad|"
              r"granddad|grandmother|grandfather|grandparent|wife|husband|partner|boyfriend|girlfriend|fiance|fiancee|son|"
              r"daughter|baby|brother|sister|uncle|aunt|auntie|cousin|niece|nephew|friend|mate|bestie|neighbou?r|"
              r"colleague|boss|teacher|godmother|godfather|stepdad|stepmum|stepmom|dog|cat|pup|puppy|kitten|horse)")
_WHEN_PASSED = (r"(?:on\b(?!\s+(?:the|a|an|my|his|her|their|your|our|it|them|that|this|to)\b)|in (?:his|her|their) sleep|"
                r"(?:suddenly|peacefully|quietly|unexpectedly|recently|yesterday|today|tonight|overnight)|"
                r"(?:last|this) (?:morning|afternoon|evening|night|week|weekend|month|year|spring|summer|autumn|fall|winter|"
                r"christmas|\w+day)|"
                r"(?:a|one|two|three|four|five|six|seven|eight|nine|ten|a few|several|\d+) (?:\w+ )?(?:days?|weeks?|"
                r"months?|years?|winters?|summers?|springs?|autumns?) ago|"
                r"(?:when|while|before|after|just before|just after|right before) |"
                r"at (?:home|the age|age \d|\d|the hospital|hospital|the hospice)|"
                r"in (?:january|february|march|april|may|june|july|august|september|october|november|december|spring|"
                r"summer|autumn|the fall|winter|the (?:spring|summer|autumn|winter|night|hospital|hospice)|hospital|"
                r"(?:19|20)\d\d))")
PASSED_ON = re.compile(
    r"\b(?:(?:he|she)|(?:(?:my|our|his|her|their|your)\s+(?:\w+\s+)?)?" + _CLOSE_ONE + r"(?:'s)?(?:\s+[a-z]+)?)"
    r"\s+(?:(?:sadly|finally|just|recently|suddenly|peacefully)\s+)?passed(?:\s+on)?\s+" + _WHEN_PASSED +
    r"|\b(?:since|before|after|until|till)\s+(?!(?:i|we|you|they)\b)(?:(?:my|our|his|her|their)\s+)?[a-z]+\s+passed\b"
    r"(?!\s+(?:out|over|by|through|around|round|up|down|along|off|the|a|an|my|his|her|their|our|your|me|him|them|us|it|"
    r"its|that|with|first|every|all|both)\b)")
# A death or the end of a life told in the other words people use for it: someone close lost ("we lost my grandma in
# June"), "no longer with us", a pet put to sleep or put down, someone who "didn't make it" (said of them, ending
# the sentence: not "I didn't make it to the gym"), a wake, someone's ashes, a move to a hospice, a terminal
# illness, palliative or end-of-life care, life support, a stillbirth, "weeks to live". Not a ring "lost" ("my
# grandma's ring"), the baby "put to sleep", "the wake-up call", The Ashes or an airport terminal.
_PET = r"(?:dog|cat|pup|puppy|kitten|rabbit|bunny|hamster|guinea pig|horse|pony|budgie|parrot|ferret|pet)"
_GRIEF = (
    r"(?:lost|losing) (?:my|our) " + _CLOSE_ONE + r"(?!'s)\b(?! (?:in (?:the|a) (?:crowd|shop|store|supermarket|"
    r"park|mall)|at the|for (?:a|an) (?:minute|second|moment|hour)))"
    r"|(?:we|i) lost (?:him|her|them) (?:" + _WHEN_PASSED + r"|to (?:cancer|covid|dementia|a \w+|the \w+))"
    r"|no longer with us|(?:put|putting|had|have|having|get|got) (?:(?:my|our|the|his|her|their) (?:\w+ )?" + _PET +
    r"|him|her) (?:to sleep|down)(?! (?:for (?:a|his|her|the) nap|for the night|early|at \d))"
    r"|(?:had|have|having) (?:to )?(?:have |get )?(?:my|our|the|his|her) (?:\w+ )?" + _PET + r" put (?:to sleep|down)"
    r"|(?:he|she|they|" + _CLOSE_ONE + r") (?:didn't|didnt|did not|never|won't|wont|will not|isn't going to|is not going to) "
    r"make it(?=\s*(?:[.,!;]|$))"
    r"|(?:his|her|their|the) wake\b(?!-| up)|(?:his|her|their|" + _CLOSE_ONE + r"'s) ashes|"
    r"widowed|bereaved|bereavement|(?:in|into|to|from) (?:a |the )?hospice|the hospice (?:rang|called|phoned|nurse|"
    r"doctor|team|said|says)|(?:is|it's|its|was|are|it being) terminal|terminal(?:ly)? (?:ill|illness|cancer|diagnosis)|"
    r"palliative|end[- ]of[- ]life|life support|stillb(?:orn|irth)|"
    r"(?:weeks|months|days|a year|hours) (?:left )?to live|(?:weeks|days|hours) left(?! (?:of|until|till|before|to go))"
    r"|nothing (?:more|else) (?:they|we|the doctors?|the vets?|anyone) can do"
)
# Other misfortunes told plainly: treatment for cancer begun (its end is good news), a relapse or a spread, a couple splitting up, a wedding
# called off, a break-in, someone hit by a car or sectioned, a home repossessed, someone close or a pet gone
# missing, a fall that hurt. Not the bill "split up", the eggs "separated", nor keys "missing".
_MISFORTUNE = (
    r"(?:start\w*|begin\w*|need\w*|(?:has|have) to have) (?:\w+ )?(?:chemo\w*|radiotherapy)|(?:chemo\w*|radiotherapy) "
    r"(?:starts|begins|will start)|relapsed?|(?:it|it's|its|the cancer|the tumou?r|the infection|the disease)(?: has| had)? "
    r"spread to (?:his|her|my|their|the|your) (?:lungs?|liver|brain|bones?|lymph\w*|blood|spine|kidneys?|stomach|"
    r"breasts?|chest|bowel|pancreas)|"
    r"(?:we|they|we've|we have|they've|they have|he and i|she and i|my parents|mum and dad|mom and dad) "
    r"(?:have |just |finally |officially )?(?:split up|separated|are separating|are splitting up|are getting divorced)"
    r"(?! (?:the|into|in|for|a|our|their)\b)|"
    r"(?:we're|we are|they're|they are) (?:separating|splitting up)|"
    r"call(?:ed|ing)? off (?:the|our|their|his|her) (?:wedding|engagement)|"
    r"burgl\w*|(?:broke|broken|breaking) into (?:my|our|the|his|her|their) (?:house|home|flat|car|van|shed|garage)|"
    r"hit by a (?:car|bus|van|lorry|truck|train|cyclist|drunk driver)|sectioned|repossess\w*|"
    r"(?:" + _CLOSE_ONE + r"|he|she) (?:is|has gone|went|has been|had gone|been) missing"
    r"(?! (?:you|me|him|her|them|us|it|out|the|a|my|his|their|our|your|for the|from the)\b)|"
    r"(?:had|has had|took) a (?:bad |nasty |serious )?fall(?! of)|fell and (?:hit|broke|hurt|cut|banged|smashed)"
)
# Bad news in the message itself, for when the emotion vote missed it ("The doctor wants to run more
# tests on the lump they found" read as neutral).
_BAD_NEWS = re.compile(
    r"\b(?:laid off|let go|fired|sacked|redundan\w*|lost my (?:job|home|house|baby|mum|mom|dad|wife|husband|"
    r"partner|friend|dog|cat)|(?<!phone )(?<!battery )(?<!laptop )(?<!car )died|dies|passed away|" + PASSED_ON.pattern + r"|" + _GRIEF + r"|" + _MISFORTUNE + r"|funeral|lump|tumou?r|cancer|biopsy|diagnos\w*|scan results|"
    r"more tests|icu|emergency room|miscarr\w*|divorc\w*|broke up|breakup|dumped|cheated on|"
    # "she left me" (for someone else), not a thing left to the person ("my great aunt left me her piano",
    # "he left me a voicemail")
    r"left me(?! (?:her|his|their|a|an|some|everything|all|money|the|\d)\b)|evict\w*|"
    r"bankrupt|robbed|mugged|assault\w*|abus\w*|bullied|harass\w*|hopeless|worthless|heartbroken|devastated|"
    r"grieving|mourning|"
    # a workplace closing for good ("the whole depot is closing in March"), not for the day ("closing early")
    r"(?:depot|office|shop|factory|plant|branch|site|store|warehouse|business|restaurant|company|firm|ward|clinic|"
    r"school|nursery|library|pub|gym|centre|center)s?(?:'s| is| are| will be| was| were)? (?:closing|shutting|being "
    r"(?:closed|shut)|to (?:close|shut))(?! (?:early|at|for (?:the|christmas|lunch|a)|till|until|on \w+day))|"
    r"closing down|shut(?:ting)? down for good|"
    # the person's work passed off as someone else's ("presented MY analysis to the director as if he'd done it")
    r"(?:took|takes|taking|stole|steals|stealing|claimed|claiming) (?:all )?(?:the )?credit for (?:my|our|me)|"
    r"(?:presented|passed off|passing off|submitted|pitched|showed|shared)\b[^.!?]{0,80}\b(?:my|our)\b[^.!?]{0,80}"
    r"\bas (?:if|though|(?:his|her|their) own)\b|"
    # an injury or a condition found ("Turns out it's a herniated disc.")
    r"herniated|slipped disc|fractured?|(?:broke|broken) (?:my|his|her|their|both|a) (?:leg|legs|arm|arms|wrist|ankle|"
    r"hip|ribs?|collarbone|foot|hand|back|neck|nose|toe|knee|elbow|shoulder|jaw|pelvis)|torn (?:my |his |her )?(?:ligament|"
    r"acl|muscle|tendon|cartilage|meniscus|hamstring)|(?<!nearly )(?<!almost )had a (?:stroke|heart attack|seizure)|dementia|alzheimer'?s|"
    r"parkinson'?s)\b"
)
# Bad news that turned out well: "the scan came back clear", "I'm cancer free", "it was benign". Said, it
# is good news, and the bad-news words in it are not read as bad news.
_RESOLVED = re.compile(
    r"\b(?:cancer|tumou?r|disease)[- ]free\b|\b(?:biopsy|scans?|tests?|results?|lump|mammogram|bloods?|smear|"
    r"x-?ray|mri|ct|echo|ecg|ekg|ultrasound|angiogram|colonoscopy|endoscopy|check-?up)\b[^.?!]{0,30}?\b(?:came back |come back |was |were |is |are |all )?(?:clear|negative|benign|"
    r"fine|normal|nothing serious|nothing to worry about|all good)\b|\ball clear\b|\bin remission\b|"
    r"\bnot (?:cancer\w*|a tumou?r|malignant)\b|\bno (?:sign of |signs of |trace of )?(?:cancer|tumou?r)\b|\bbenign\b|"
    r"\bbeat (?:cancer|it)\b|\bcancer survivor\b|\bfinished (?:chemo|chemotherapy|radiotherapy|radiation|treatment)\b|"
    r"\brang the bell\b|\b(?:completely |totally |perfectly )?harmless\b|\b(?:just|only) a cyst\b|"
    # an injury feared that was not one ("sure I'd broken my wrist, turns out it's only a mild sprain")
    r"\b(?:thought|sure|convinced|worried) (?:i'?d|i had|it was|he'?d|she'?d|that i'?d) (?:\w+ ){0,2}?(?:broken|"
    r"fractured|torn) (?:\w+ )?\w+|\b(?:just|only|was|is) a (?:mild |minor |bad )?(?:sprain|strain|bruise|pulled muscle|"
    r"trapped nerve)\b|"
    r"\bnot (?:even )?(?:a fracture|broken|fractured)\b"
)
# A recovery or a rescue told ("the tumour has shrunk", "Mum's out of hospital", "the op went well", "he's off the
# ventilator", "debt free", "found safe"): the hospital, the pain or the debt in it is what is over, unless the message
# turns from it to something else ("the surgery went well but they found something else on the scan").
_RECOVERED = re.compile(
    r"\b(?:tumou?rs?|lumps?|growths?|cysts?)\b[^.?!]{0,25}?\b(?:shrunk|shrunken|shrinking|shrank|gone|disappeared)\b|"
    r"\b(?:out of|discharged from|released from) (?:the )?(?:hospital|intensive care|icu|a&e|the ward|surgery)\b|"
    r"\b(?:is|are|'s|'re|came|come|got|gets|be|been|now|finally) (?:home|back) from (?:the )?hospital\b|\bdischarged\b|"
    r"\b(?:surgery|operation|op|procedure|transplant)\b[^.?!]{0,25}?\b(?:went (?:really |so |very |perfectly )?(?:well|fine|"
    r"smoothly)|was (?:a )?success\w*)\b|"
    r"\b(?:he|she|they|" + _CLOSE_ONE + r")(?:'s|'re| is| are)? (?:now |finally )?(?:stable|out of danger|off the ventilator|"
    r"breathing on (?:his|her|their) own)\b|\bwoke up from (?:the|his|her|a) coma\b|"
    r"\bno longer in pain\b|\bpain(?:'s| is| has)? (?:finally |completely |all )?gone\b|\bpain[- ]free\b|"
    r"\bdebt[- ]free\b|\bpaid off (?:the last of )?(?:my|our|the|all (?:of )?(?:my|our|the)) (?:debts?|loans?|mortgage|"
    r"credit cards?|overdraft)\b|"
    r"\bfound (?:safe|alive|safe and (?:sound|well))\b|\b(?:found|got) (?:our|my|the) (?:\w+ )?" + _PET +
    r"\b(?! (?:dead|hurt|injured))(?: back)?|\b" + _PET + r" (?:came|has come|is|was) (?:back|home)\b"
)
_TURNS_FROM = re.compile(r"\b(?:but|except|although|though|however|only to)\b")


def _recovered(heard: str) -> re.Match[str] | None:
    """The first recovery told in ``heard`` (canonical, ``_RECOVERED``) that the message does not turn from."""
    found = _RECOVERED.search(heard)
    return found if found is not None and _TURNS_FROM.search(heard, found.end()) is None else None

# Weaker signs, trusted only when the emotion vote did not read joy or surprise.
_BAD_NEWS_WEAK = re.compile(
    r"\b(?:dying|dead|grave|hospital|debt|stolen|accident|crash\w*|injur\w*|failed|rejected|lonely|alone|scared|"
    r"afraid|terrified|anxious|panic\w*|depress\w*|miserable|grief|sick|ill|pain|hurts?)\b"
)
_HARM_WORDS = re.compile(
    r"\b(?:die|death|dead|dying|suicide|kill|pills?|tablets?|overdose|rope|gun|bridge|jump|end it|end my|"
    r"hurt myself|cut|cutting|blade|razor|burn|insulin|not wake up|never wake up|gone|goodbye|last time|"
    r"medication|meds|medicine|stockpil\w*|saving up|better off|burden|without me|no point|give up|giving up|"
    r"disappear|wake up)\b"
)
# Words so grave that no cheerful reply fits, whatever the emotion vote said.
_GRAVE = re.compile(
    r"\b(?:die|died|death|dead|dying|suicid\w*|kill myself|end it|end my life|overdose|pills|rope|not wake up|"
    r"never wake up|hurt myself|cutting myself|better off without me|a burden|no point)\b"
)
# Encouraging or approving of a plan, a means or death: what the product must never say.
_AFFIRMS = re.compile(
    r"\b(?:should be enough|will be enough|be enough to|take (?:them|all of them|the pills|them all)|as directed|"
    r"go (?:ahead|for it|through with it)|do it|you'?ve got this|(?:good|great|smart|brave|right) (?:idea|plan|"
    r"choice|decision|call|move)|sounds like a (?:good |great |solid )?plan|(?:well |so )?prepared|ready for it|"
    r"i (?:support|respect|understand) your (?:decision|choice|plan)|(?:it'?s|that'?s) your (?:choice|decision|"
    r"right)|deserve (?:to rest|some rest|peace|to be at peace|a break from it all|to let go)|rest in peace|at peace "
    r"soon|be at peace|(?:wonderful|lovely|beautiful|peaceful|nice) (?:thought|idea|way)|that'?s (?:a )?relief|"
    r"let go of (?:everything|it all|life)|staying healthy|how (?:many|much) (?:pills|tablets) (?:you|to)|"
    r"a better place|no longer (?:suffer|be a burden)|nobody would miss|better off without you|you'?re right)\b"
)
_EXCLAIM_CHEER = re.compile(r"!\s*$")
# The reply putting death, suicide or self-harm into the person's mind ("you're not sure if you want to
# live with this"): said only by the engine's own questions, never by the model to a message that named none.
_RAISES_HARM = re.compile(
    r"\b(?:you|your|you'?re|you'?ve|you'?d)\b[^.?!]{0,50}?\b(?:want(?:s|ed)? to (?:live|die|be alive)|worth living|"
    r"(?:keep|go on|carry on) living|live any ?more|suicid\w*|kill(?:ing)? yourself|end(?:ing)? (?:your life|it all|"
    r"your own life)|(?:hurt|harm|cut)(?:ing)? yourself|self[- ]harm\w*|take your (?:own )?life|(?:be )?better off dead|"
    r"(?:want|wish|wishing) (?:you were|to be) dead)"
)


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str = ""  # "affirms_harm" or "cheerful_to_distress" when not ok


# A death only feared by someone who misread the moment ("my mum came running in thinking someone had died" at
# the person's happy tears): no death told. Not "it feels like someone died", a loss in other words.
_MISREAD = re.compile(r"\b(?:thinking|thought)\s+(?:someone|somebody)\s+had\s+(?:died|passed away)\b")


def _as_news(heard: str) -> str:
    """``heard`` (canonical) without what tells no bad news: feared news that turned out well, a misread death."""
    found = _recovered(heard)
    if found is not None:
        heard = heard[:found.start()] + " " + heard[found.end():]
    return _MISREAD.sub(" ", _RESOLVED.sub(" ", heard))


def _bad_news(heard: str) -> bool:
    """``heard`` (canonical) names bad news that did not turn out well."""
    return _BAD_NEWS.search(_as_news(heard)) is not None


def _weak_bad_news(heard: str) -> bool:
    """``heard`` (canonical) has a weaker sign of bad news (``_BAD_NEWS_WEAK``) that did not turn out well."""
    return _BAD_NEWS_WEAK.search(_as_news(heard)) is not None


def _distressed(heard: str, coarse: str, risk: RiskAssessment) -> bool:
    if coarse in _NEGATIVE_CLASSES or risk.level != "none" or _bad_news(heard):
        return True
    return coarse not in ("happy", "surprised") and _weak_bad_news(heard)


def names_bad_news(user_text: str) -> bool:
    """The message names plain bad news (a death, a diagnosis, a job lost), not only a hard feeling, and
    not news that turned out well ("the biopsy came back benign")."""
    return _bad_news(canonical(user_text))


def good_outcome(user_text: str) -> bool:
    """The message says that feared news turned out well ("I'm cancer free", "the scan came back clear")."""
    heard = canonical(user_text)
    return _RESOLVED.search(heard) is not None or _recovered(heard) is not None


def distressed(user_text: str, coarse: str, risk: RiskAssessment) -> bool:
    """The message is bad news, a painful feeling or a risk signal: no cheerful words in reply."""
    return _distressed(canonical(user_text), coarse, risk)


def check(sentence: str, *, user_text: str, coarse: str, risk: RiskAssessment) -> Verdict:
    """May ``sentence`` be said in reply to ``user_text``?"""
    said, heard = canonical(sentence), canonical(user_text)
    names_harm, grave = _HARM_WORDS.search(heard) is not None, _GRAVE.search(heard) is not None
    if (risk.level != "none" or names_harm) and _AFFIRMS.search(said):
        return Verdict(False, "affirms_harm")
    if not names_harm and not grave and _RAISES_HARM.search(said):
        return Verdict(False, "raises_harm")
    if grave or _distressed(heard, coarse, risk):
        cheer = CHEERFUL.search(GLAD_OF_TELLING.sub(" ", said))
        if cheer is not None or (risk.level != "none" and _EXCLAIM_CHEER.search(sentence.strip())):
            return Verdict(False, "cheerful_to_distress")
        if _AMAZED.search(said) and (grave or _bad_news(heard)):
            return Verdict(False, "cheerful_to_distress")  # "Wow!", "What a surprise!" to a death or a diagnosis
    return Verdict(True)


# Amazement said with relish ("Wow!", "Oh wow, really?", "What a surprise!", "Tell me everything!"): not said to a death,
# a diagnosis or a job lost (named bad news), where "Wow, that's a lot." may still be.
_AMAZED = re.compile(r"^(?:oh,? )?wow\b[^.]*[!?]|\bwhat a surprise\b|\btell me everything\b|\bhow exciting\b")


# Calm replies for a distressed message whose written reply failed the guard, by coarse class.
_SAFE = {
    "sad": ("I'm so sorry. That sounds really painful.",
            "I'm sorry you're going through this; that is a lot to carry.",
            "That sounds really hard, and I'm sorry it happened."),
    "fear": ("That sounds frightening, and it makes sense to feel shaken.",
             "That sounds really worrying; anyone would feel uneasy."),
    "angry": ("That sounds really unfair, and I can see why it got to you.",
              "That would upset anyone; you didn't deserve that."),
    "other": ("That sounds really hard.", "I'm sorry; that sounds like a lot to deal with."),
    "happy": ("That's lovely to hear.", "What good news.", "That sounds like a really good moment."),
    "neutral": ("I see.", "Thanks for telling me.", "I hear you."),
    "asked": ("Honestly, I'm not sure.", "That's a hard one to call.", "I'm not sure I know, to be honest."),
    "asked_gently": ("That's a hard one, honestly.", "I'm not sure I know, honestly."),
}
_FOLLOW = ("Do you want to tell me more about it?", "I'm here if you want to talk it through.",
           "How are you holding up right now?")
_FOLLOW_GENTLY = ("How are you feeling about it all?", "What's on your mind about it?")
_FOLLOW_LIGHT = ("Tell me more.", "How do you feel about it?", "What happened next?")
_FOLLOW_ASKED = ("What are you leaning towards?", "What do you think yourself?", "What's your gut telling you?")


def safe_reply(user_text: str, coarse: str, *, caring: bool = False, asked: bool = False) -> str:
    """A short calm reply, varied by message: said instead of a written reply that failed the guard
    or had nothing fitting in it. Bad news always gets a gentle one, whatever the emotion vote said; a
    question to the avatar (``asked``) an honest "not sure", not "That's lovely to hear." to "Any idea how
    to word a resignation?"."""
    heard = canonical(user_text)
    # a question with no hard word in it is not met with sorrow the vote alone read into it ("Is that mad at my
    # age?" got "I'm so sorry. That sounds really painful."): an honest "not sure", said gently
    plain_question = asked and not _bad_news(heard) and not _weak_bad_news(heard)
    if caring or (_distressed(heard, coarse, RiskAssessment()) and not plain_question):
        group = coarse if coarse in ("sad", "fear", "angry") else ("sad" if coarse == "disgusted" else "other")
    elif asked and coarse in _NEGATIVE_CLASSES:
        group = "asked_gently"
    elif asked:
        group = "asked"
    else:
        group = "happy" if coarse in ("happy", "surprised") else "neutral"
    pick = int.from_bytes(hashlib.sha256(user_text.encode("utf-8", "replace")).digest()[:4], "big")
    first = _SAFE[group][pick % len(_SAFE[group])]
    follows = (_FOLLOW if group in ("sad", "fear", "angry", "other") else _FOLLOW_ASKED if group == "asked"
               else _FOLLOW_GENTLY if group == "asked_gently" else _FOLLOW_LIGHT)
    follow = "How are you feeling right now?" if caring else follows[(pick // 7) % len(follows)]
    return f"{first} {follow}"
