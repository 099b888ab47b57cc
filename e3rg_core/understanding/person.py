"""Saying a person's words back to them: the first person turned into the second ("my card got
declined" -> "your card got declined"). One place for the composed reply's restatement and the crisis
answer's reflection; each decides for itself which words are safe to say back."""

from __future__ import annotations

import re

_TURN = {"i": "you", "i'm": "you're", "i've": "you've", "i'd": "you'd", "i'll": "you'll", "me": "you",
         "my": "your", "mine": "yours", "mine's": "yours is", "myself": "yourself", "am": "are", "we": "you",
         "we're": "you're", "we've": "you've", "we'd": "you'd", "we'll": "you'll", "us": "you", "our": "your", "ours": "yours",
         "ourselves": "yourselves", "im": "you're", "ive": "you've"}
_WAS_AFTER = {"i", "we"}  # "I was" -> "you were"
# Words that may stand between "I" and its "was" ("I just wasn't around"); a verb there ("All I did was")
# makes the "was" another subject's.
_BETWEEN = {"just", "still", "never", "always", "also", "even", "really", "honestly", "actually", "literally",
            "kind", "sort", "so", "too", "already", "basically", "totally", "definitely", "probably"}
_SECOND = re.compile(r"\b(?:you|your|you're|yours|yourself|u|ur)\b", re.IGNORECASE)
_FIRST = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in sorted(_TURN, key=len, reverse=True)) + r")\b",
                    re.IGNORECASE)


def speaks_to_listener(text: str) -> bool:
    """Does ``text`` already say "you"? Turned round, who is who would be muddled."""
    return _SECOND.search(text) is not None


def has_first_person(text: str) -> bool:
    """Does ``text`` say "I", "me", "my", "we"...: anything to turn?"""
    return _FIRST.search(text) is not None


def second_person(text: str) -> str:
    """``text`` with its first person turned into the second, word by word, keeping everything else
    (case, punctuation). "I was" / "we wasn't" agree ("you were", "you weren't"), also with one word
    between ("I just wasn't around" -> "you just weren't around"); "and me" reads "and you"."""
    words = text.split()
    lowered = [w.lower().strip(",;:.!?") for w in words]
    out = []
    for i, (word, low) in enumerate(zip(words, lowered)):
        tail = word[len(word.rstrip(",;:.!?")):]
        before = {lowered[i - 1]} if i else set()
        if i > 1 and lowered[i - 1] not in _TURN and (lowered[i - 1] in _BETWEEN or lowered[i - 1].endswith("ly")):
            before.add(lowered[i - 2])  # one word between: "i just was", not "all I did was"
        if low in ("was", "wasn't") and before & _WAS_AFTER:
            new = "were" if low == "was" else "weren't"
        else:
            new = _TURN.get(low)
        if new is not None and i == 0 and word[:1].isupper():
            new = new.capitalize()  # the sentence's first word keeps its capital ("I" anywhere else does not)
        out.append((new + tail) if new is not None else word)
    return " ".join(out)


# What one says that is a deed, not a report of words ("said sorry", "said yes"): the composer says it back
# as what the person did.
SAID_ACTS = r"(?:yes|no|sorry|goodbye|thanks|thank you)"
# A sentence that begins without its subject ("Gave the best man speech yesterday", "can't do this
# anymore", "gonna hide under my desk"): the person is its subject, said as "you".
_NO_SUBJECT = re.compile(
    r"^(?:can'?t|cannot|won'?t|don'?t|didn'?t|do not|haven'?t|hadn'?t|couldn'?t|shouldn'?t|want|wanna|need|just|really|keep|kept|feel|felt|wish|hope|"
    r"hate|have|had|never|honestly|sometimes|always|still|almost|already|finally|got|gave|found|went|made|saw|"
    r"took|lost|left|forgot|spent|told|tried|called|heard|met|bought|sold|started|finished|passed|failed|"
    r"missed|broke|fell|ran|won|ate|cried|laughed|woke|slept|moved|quit|came|drove|wrote|sent|nearly|"
    r"paid|sat|stood|hit|cut|held|caught|brought|thought|taught|built|swam|drank|wore|threw|grew|drew|flew|rode|"
    r"hid|shook|stole|chose|froze|spoke|dug|hung|began|did|waited|stayed|worked|queued|walked|played|watched|"
    r"cooked|baked|cleaned|painted|booked|applied|emailed|texted|rang|phoned|visited|"
    r"accidentally|literally|actually|said " + SAID_ACTS + r")\b",
    re.IGNORECASE)
_PROGRESSIVE = re.compile(r"^(?:thinking|feeling|going|gonna|trying|planning|getting|being|having|doing|working|"
                          r"starting|looking|sitting|lying|stuck)\b", re.IGNORECASE)
# Any other "-ing" word that begins a sentence and is followed by what a verb takes ("Flying tomorrow",
# "watching a documentary") reads as the person doing it; not a noun ("Nothing", "Morning", "Driving test")
# ... nor a word that joins what it names to the sentence before ("it went to 400 people. including the CEO")
_ING = re.compile(r"^(?!(?:no|some|any|every)thing\b|morning|evening|during|wedding|ceiling|spring|string|bring|"
                  r"king|ring|sing|swing|thing|wing|sibling|darling|pudding|including|excluding|regarding|considering|"
                  r"concerning|according|following|pending|notwithstanding)[a-z]{3,}ing(?:$|[ ,]+(?:a|an|the|my|our|"
                  r"his|her|their|this|that|some|all|to|in|on|at|for|with|from|about|around|through|up|out|back|home|"
                  r"again|now|tomorrow|today|tonight|so|too|really)\b)", re.IGNORECASE)
# ... or the subject of a verb that follows ("Waiting for results is the worst part").
_FINITE = re.compile(r"\b(?:is|was|are|were|isn't|wasn't|has|makes|made|feels|felt|means|takes|took|sucks|helps|"
                     r"hurts|gets|got|can|will|would)\b", re.IGNORECASE)
# A past tense that begins a sentence and takes an object ("Appealed the fine", "Showed up at...",
# "Planted tomatoes"): a verb; "Tired of...", "Excited to..." are no verbs.
_PAST_WITH_OBJECT = re.compile(r"^[a-z]{3,}ed (?:a|an|the|my|our|his|her|their|some|up|off|down|over|online|home|back|"
                               r"him|them|it|[a-z]+s)\b|"
                               # a count or a test's result ("viewed 6 places this weekend", "tested positive again"),
                               # not after a verb whose subject is as often a thing ("survived 3 house moves")
                               r"^(?!(?:survived|lasted|outlived|weighed|measured|cost)\b)[a-z]{3,}ed (?:\d+|two|three|"
                               r"four|five|six|seven|eight|nine|ten|twelve|twenty|fifty|hundreds|positive|negative)\b",
                               re.IGNORECASE)
# "Still insists on..." has its subject elsewhere: an adverb and a verb that does not go with "I".
_ADVERB_THIRD = re.compile(r"^(?:just|really|never|honestly|sometimes|always|still|almost|already|finally|nearly|"
                           r"accidentally|literally|actually) [a-z]+[^s']s\b", re.IGNORECASE)
_ADVERB_ING = re.compile(r"^(?:just|really|still|honestly|literally|actually|finally|never|not|definitely|probably|always) "
                         r"[a-z]{2,}ing\b", re.IGNORECASE)


def _progressive(text: str) -> bool:
    return bool(_PROGRESSIVE.match(text) or _ING.match(text)) and not _FINITE.search(text)


# What was done to the writer, said without "I was" ("diagnosed with type 1 diabetes at 34", "laid off
# this morning"): words that are only ever passive at a sentence's start.
_PASSIVE = re.compile(r"^(?:diagnosed|promoted|fired|sacked|hired|dumped|ghosted|scammed|robbed|mugged|bitten|stung|"
                      r"laid off|made redundant|shortlisted|discharged)\b", re.IGNORECASE)


# A word or two, then the writer as the object ("walked past me", "gave us a lift").
_DONE_TO_ME = re.compile(r"^[a-z']+(?: [a-z']+)? (?:me|us)\b", re.IGNORECASE)


# ... or a line that goes on with what someone did in the line before ("then had the nerve to ask me to 'polish
# it up'" after "my manager presented MY report"): the writer as the object, or a nerve only others have.
_GOES_ON = re.compile(r"^(?:and |then |and then |also |plus )+(?:\w+ ){0,6}?(?:me|us)\b|"
                      r"^(?:and |then |and then |also |plus )*(?:had|has) the (?:nerve|audacity|cheek|gall)\b", re.IGNORECASE)


def done_to_writer(text: str) -> bool:
    """Does ``text`` begin with a verb done to the writer, who did it left out ("walked past me in the
    corridor", "then had the nerve to ask me...")? Not "They offered me...", which names them."""
    return lacks_subject(text) and (_DONE_TO_ME.match(text) is not None or _GOES_ON.match(text) is not None)


# How the writer is, "I'm" left out ("tired of being the only one who cleans", "proud of my son").
_FEELING = re.compile(r"^(?:just |really |a bit |kind of |pretty |very |still |so )?(?:tired|sick|fed up|scared|"
                      r"terrified|worried|excited|nervous|stressed|exhausted|knackered|shattered|gutted|bored|proud|"
                      r"relieved|grateful|thankful|lonely|homesick|heartbroken|devastated|embarrassed|ashamed|"
                      r"overwhelmed|done with|over it|buzzing|thrilled|chuffed|starving|freezing|skint|sad|angry|"
                      r"anxious|furious|miserable)\b(?! (?:me|us|him|her|them|my|our)\b)", re.IGNORECASE)


def lacks_subject(text: str) -> bool:
    """Does ``text`` begin with a verb, or with how the writer is, its subject (the writer) left out?"""
    if _ADVERB_THIRD.match(text):
        return False
    return bool(_NO_SUBJECT.match(text) or _progressive(text) or _PAST_WITH_OBJECT.match(text)
                or _PASSIVE.match(text) or _FEELING.match(text) or re.match(r"been\b", text, re.IGNORECASE))


def with_subject(text: str) -> str:
    """``text`` (already in the second person) with "you" put before a verb that begins it: "gave the
    speech" -> "you gave the speech", "gonna hide" -> "you're gonna hide", "been awake" -> "you've been
    awake", "still shaking" -> "you're still shaking"; any other text unchanged."""
    if not lacks_subject(text):
        return text
    first = text[:1].lower() + text[1:]
    if re.match(r"been\b", first):
        return "you've " + first
    if _PASSIVE.match(first):
        return "you were " + first
    if _FEELING.match(first):
        return "you're " + first
    if _progressive(first) or _ADVERB_ING.match(first):
        return "you're " + first
    return "you " + first


# A quotation that ends a sentence and was said to the person ("My mum told me 'I never wanted you to
# quit piano.'", "The nurse said 'you can go home tomorrow'"): told back as reported speech, its "you"
# being the person and its "I" the one who said it.
_SAYS_QUOTE = re.compile(r"^(?P<who>[^'‘“\"]{1,50}?)\s+(?P<verb>said|says|told me|tells me|texted me|texts me|wrote|"
                         r"messaged me|wrote to me|replied|goes|went)\s*[,:]?\s*['‘“\"](?P<quote>.+?)[.!?,]*['’”\"]?$",
                         re.IGNORECASE)
_SHE = re.compile(r"\b(?:she|mum|mom|mother|mama|sister|wife|girlfriend|aunt|auntie|grandma|gran|granny|nan|nana|"
                  r"grandmother|daughter|niece|girl|woman|lady)\b", re.IGNORECASE)
_HE = re.compile(r"\b(?:he|dad|father|papa|brother|husband|boyfriend|uncle|grandpa|grandad|granddad|grandfather|son|"
                 r"nephew|boy|man|guy)\b", re.IGNORECASE)
_THEIRS = {
    "she": {"i": "she", "i'm": "she's", "i've": "she's", "i'd": "she'd", "i'll": "she'll", "me": "her", "my": "her",
            "mine": "hers", "myself": "herself", "am": "is"},
    "he": {"i": "he", "i'm": "he's", "i've": "he's", "i'd": "he'd", "i'll": "he'll", "me": "him", "my": "his",
           "mine": "his", "myself": "himself", "am": "is"},
    "they": {"i": "they", "i'm": "they're", "i've": "they've", "i'd": "they'd", "i'll": "they'll", "me": "them",
             "my": "their", "mine": "theirs", "myself": "themselves", "am": "are"},
}
# After "I", words whose form is the same for "she"/"he" (a past tense, a modal); a present tense is
# made to agree ("I need" -> "she needs"), and "they" is said where it cannot be.
_SAME_AFTER_I = re.compile(r"(?:(?!(?:need|feed|bleed|succeed|proceed|exceed)$)[a-z]+ed|was|wasn't|can|can't|could|"
                           r"couldn't|would|wouldn't|will|won't|should|shouldn't|did|didn't|had|hadn't|said|told|"
                           r"thought|knew|made|saw|felt|got|left|went|came|took|gave|found|meant|lost|kept)$")
_ADVERBS = {"never", "always", "just", "really", "still", "also", "even", "honestly", "actually", "only", "truly"}
_AGREE = {"have": "has", "do": "does", "don't": "doesn't", "go": "goes", "am": "is"}


def _agreeing(verb: str) -> str | None:
    """The third person singular of a present tense verb ("need" -> "needs"), or ``None``."""
    if verb in _AGREE:
        return _AGREE[verb]
    if not re.fullmatch(r"[a-z]{2,}", verb):
        return None
    if re.search(r"(?:s|sh|ch|x|z|o)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


_WE = re.compile(r"\b(?:we|we're|we've|we'd|we'll|us|our|ours|ourselves)\b", re.IGNORECASE)


def reported_quote(sentence: str) -> str | None:
    """``sentence`` with the quotation that ends it told as reported speech, or ``None`` when it has
    none or cannot be turned safely (a "we" in it, a second clause with an "I", a quote that speaks of
    nobody). "My sister said 'you always make everything about you'" -> "My sister said you always make
    everything about you"; "My mum told me 'I never wanted you to quit'" -> "My mum told me she never
    wanted you to quit"; the person's own "my", "me" are left for ``second_person``."""
    match = _SAYS_QUOTE.match(sentence.strip())
    if match is None:
        return None
    who, quote = match.group("who"), match.group("quote").replace("\u2019", "'").strip(" ,")
    if re.search(r"['\"”](?:\s|$)", quote):
        return None  # the quotation closes before the sentence ends ("He wrote 'you never listen' on the card")
    if sentence.strip().rstrip("'’\"”").endswith("?"):
        return None  # a question asked ("she said 'can I go again tomorrow?'") is not told as a statement
    if speaks_to_listener(who) or _WE.search(quote) or not (has_first_person(quote) or speaks_to_listener(quote)):
        return None
    if has_first_person(quote) and re.search(r"[,;:]", quote):
        return None  # "I need some space, don't call me": an order in it does not report well
    she, he = _SHE.search(who) is not None, _HE.search(who) is not None
    pronoun = "she" if she and not he else "he" if he and not she else "they"
    words = quote.split()
    lowered = [w.lower().strip(",;:.!?") for w in words]
    agree: dict[int, str] = {}  # where a verb after "I" must change for "she"/"he"
    for i, low in enumerate(lowered):
        if low != "i":
            continue
        j = i + 1
        while j < len(lowered) and lowered[j] in _ADVERBS:
            j += 1
        if j == len(lowered):
            pronoun = "they"
        elif not _SAME_AFTER_I.match(lowered[j]):
            verb = _agreeing(lowered[j])
            if verb is None:
                pronoun = "they"
            else:
                agree[j] = verb
    table = _THEIRS[pronoun]
    out = []
    for i, (word, low) in enumerate(zip(words, lowered)):
        tail = word[len(word.rstrip(",;:.!?")):]
        if low in ("was", "wasn't") and i and lowered[i - 1] == "i" and pronoun == "they":
            new = "were" if low == "was" else "weren't"
        elif i in agree and pronoun != "they":
            new = agree[i]
        else:
            new = table.get(low)
        out.append(new + tail if new is not None else word)
    verb = "said" if match.group("verb").lower() in ("goes", "went") else match.group("verb")
    return f"{who} {verb} {' '.join(out)}"


# News told in a statement's order with its amazement in the marks ("they've let me in anyway????", "they offered
# me the job on the spot??"): no question to the avatar.
_AMAZED = re.compile(r"^(?:(?:wait|omg|update|so|and|but|ok|okay|guess what)\W+)*(?:i|i'm|i've|i'd|im|ive|we|we've|"
                     r"we're|they|they've|they're|he|he's|she|she's|it|it's|my|our|his|her|their|the)\b(?!.*\b(?:you|u|"
                     r"your|ur)\b)[^?]*(?:\?{2,}|\?!|!\?)[?!]*$"
                     # ... or a few words of disbelief with no question word ("but three weeks??", "seriously?!")
                     r"|^(?:(?:but|and|so|like|wait|omg)\W+)*(?!(?:what|why|how|when|where|who|which|is|are|do|does|did|"
                     r"can|could|should|would|will|am|have|has|any|you|u)\b)(?:(?!you\b|u\b)[\w']+\W*?){1,3}\s*"
                     r"(?:\?{2,}|\?!|!\?)[?!]*$", re.IGNORECASE)


def amazed(sentence: str) -> bool:
    """Is ``sentence`` news told in a statement's order, its amazement in its marks (``_AMAZED``)?"""
    return _AMAZED.match(sentence.strip()) is not None
