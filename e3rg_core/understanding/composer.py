"""A reply composed from parts a small model does reliably (issue 20): an opening chosen by the feeling
(``openings``), a short restatement of what happened said to the person as "you", and a closing line
(a reflection or a gentle question) from a bank per feeling, varied by turn.

Only the restatement is written by the model, as a short extraction task that begins with "You"; it is
kept only when it passes ``restatement_ok``: second person, no "I", nothing the person did not say
(its content words come from the conversation), about this message, short, and free of the faults a
caring listener would not make. When the model's restatement fails twice, ``flipped`` says the
person's own first sentence back with its pronouns turned ("My card got declined." -> "Your card got
declined."), when that sentence is short and plain enough to turn safely.
"""

from __future__ import annotations

import hashlib
import re
from typing import Iterator, Sequence

from e3rg_core.understanding import faults
from e3rg_core.understanding.person import (SAID_ACTS, amazed, done_to_writer, has_first_person, lacks_subject,
                                            reported_quote, second_person, speaks_to_listener, with_subject)
from e3rg_core.understanding.safety.text import canonical

MAX_RESTATEMENT_WORDS = 18
_WORD = re.compile(r"[a-z']+")
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|we'd|we'll|us|our|ours)\b")
_CONTENT_STOP = faults._STOP | {"you", "your", "you're", "you've", "you'd", "you'll", "yours", "yourself", "been",
                                "got", "get", "getting", "gets", "just", "still", "even", "all", "one", "out", "up",
                                "into", "over", "off", "back", "now", "today", "again",
                                "i'm", "i've", "i'd", "i'll", "im", "ive", "we're", "we've", "we'd", "we'll",
                                "lol", "lmao", "tbh", "omg", "ngl", "haha", "honestly", "literally", "tho"}


def _stems(text: str) -> set[str]:
    return {w[:5] for w in _WORD.findall(canonical(spelled_out(text))) if w not in _CONTENT_STOP and len(w) > 2}


# Chat spellings said back in full, as a voice would say them ("vet says its prolly a tooth thing but they
# wanna do bloodwork" -> "... it's probably a tooth thing but they want to do bloodwork").
_CHAT_WORDS = {"prolly": "probably", "probs": "probably", "wanna": "want to", "gonna": "going to", "gotta": "got to",
               "dunno": "don't know", "kinda": "kind of", "sorta": "sort of", "tho": "though", "thru": "through",
               "cuz": "because", "coz": "because", "ppl": "people", "pls": "please", "plz": "please",
               "tmrw": "tomorrow", "tmr": "tomorrow", "2moro": "tomorrow", "tonite": "tonight", "rly": "really",
               "abt": "about", "w/": "with", "thats": "that's", "theres": "there's", "whats": "what's",
               "hes": "he's", "shes": "she's", "theyre": "they're", "youre": "you're", "ive": "I've", "ill": "I'll"}
_CHAT_WORD = re.compile(r"(?<![\w'])(" + "|".join(re.escape(w) for w in sorted(_CHAT_WORDS, key=len, reverse=True))
                        + r")(?![\w'])", re.IGNORECASE)
# "its" that is "it's": before what follows "it is" or "it has", not before a noun it owns ("its tail").
_ITS = re.compile(r"\bits(?= (?:a|an|the|so|just|really|not|probably|prolly|been|going|gonna|getting|fine|ok|okay|"
                  r"over|all|only|too|still|always|never|like|about|my|your|his|her|our|their|time|late|done|"
                  r"gone|true|weird|hard|[a-z]+ing)\b)"
                  # ... and before a number where it begins a sentence ("its 2:40am and theres a noise in the loft")
                  r"|(?:^|(?<=[.!?,] ))its(?= \d)", re.IGNORECASE)


# Contractions typed without their apostrophe, so that they turn ("dont know" -> "don't know").
_APOSTROPHE = re.compile(r"\b(do|did|does|is|was|were|are|could|would|should|have|has|had|ca|wo)nt\b", re.IGNORECASE)
_ID = re.compile(r"\bid (?=never|rather|be|have|like|love|just|probably|been)", re.IGNORECASE)
_ILL_VERB = re.compile(r" (?:be|call|go|get|try|see|have|just|never|text|ring|do|make|tell|let|probably|definitely|"
                       r"need|come|take|miss|ask|keep|stay|wait|send|check|pick|bring|find|look)\b", re.IGNORECASE)


def spelled_out(text: str) -> str:
    """``text`` with chat spellings in full ("prolly" -> "probably", "wanna" -> "want to", "its a" ->
    "it's a", "dont" -> "don't", "id never" -> "I'd never"); "ill" is "I'll" only where it begins the
    message before a verb ("ill call her", not "I feel ill" or "ill again today")."""
    def word(match: re.Match) -> str:
        low = match.group(1).lower()
        if low == "ill" and (re.search(r"\w[\s,]*$", text[:match.start()]) or not _ILL_VERB.match(text, match.end())):
            return match.group(1)  # "I feel ill", "ill again today"
        if low in ("ive", "ill") or match.group(1)[:1].islower():
            return _CHAT_WORDS[low]
        return _CHAT_WORDS[low][:1].upper() + _CHAT_WORDS[low][1:]
    text = _ID.sub("I'd ", _APOSTROPHE.sub(lambda m: m.group(1) + "n't", text))
    return _ITS.sub("it's", _CHAT_WORD.sub(word, text))


def restatement_ok(sentence: str, *, user_text: str, earlier: Sequence[str] = (), begins_you: bool = True) -> bool:
    """Whether ``sentence`` restates the message faithfully: to "you" (beginning with it, if
    ``begins_you``), no "I", short, a statement, about this message, and with at most one content word
    that nobody in the conversation said. The person's own sentence turned (``begins_you`` false) may
    also be reported ("You said the other boy got nothing.")."""
    said = canonical(sentence)
    words = said.split()
    if not 3 <= len(words) <= MAX_RESTATEMENT_WORDS or not said.rstrip().endswith("."):
        return False
    if _FIRST_PERSON.search(said) or "?" in said or "!" in said or not re.search(r"\byou", said):
        return False
    reported = said[len(_REPORTED):] if not begins_you and re.match(_REPORTED + _SAID_WHAT, said) else said
    if (begins_you and not said.startswith("you")) or _AWKWARD_START.match(reported) or (
            begins_you and _MODEL_AWKWARD.match(said)):
        return False
    if not _roles_kept(reported, user_text, earlier):
        return False
    mine, message = _stems(sentence), _stems(user_text)
    conversation = message.union(*(_stems(line) for line in earlier))
    if len(mine & message) < min(2 if begins_you else 1, len(message)):
        return False  # not about what they just said (the person's own sentence turned is, by one word)
    return len(mine - conversation) <= 1  # the person's facts, not new ones


_REPORTED = "you said "
# the person as a subject; "me and jordan broke up" in chat as much as "I"
_SUBJECT_I = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|im|ive|we|we're|we've|we'd)\b|(?:^|[.!?,;]\s*)me and\b")
_OWNER = re.compile(r"\b(?:my|our|me|i|we)\b")
_NOT_OWN = {"his", "her", "their", "your", "a", "the", "whose", "its", "an", "someone's", "everyone's"}


def _roles_kept(said: str, user_text: str, earlier: Sequence[str]) -> bool:
    """Who did what, as far as words can tell: "you <did>" only when the message has the person as a
    subject, said ("I texted her") or left out ("Texted her last night"), so "She texted me" is no "You
    texted her"; and "your X" only when they said "my X" or "our X" (a friend's dad is not "your dad")."""
    message = canonical(user_text)
    if re.match(r"you\b(?!r)", said) and not _SUBJECT_I.search(message) and not any(
            lacks_subject(part) for _, part in _sentences(user_text)):
        return False
    words = _WORD.findall(" ".join(canonical(line) for line in (*earlier, user_text)))
    owned = {words[j] for i, w in enumerate(words) if _OWNER.fullmatch(w) for j in range(i + 1, min(i + 4, len(words)))}
    # a family member named bare ("dad's dementia", "told mum") is the person's own
    owned.update(w for i, w in enumerate(words) if _KIN_WORD.fullmatch(w) and not (i and words[i - 1] in _NOT_OWN))
    for line in (*earlier, user_text):  # "your numbers" in what the nurse said to them is theirs
        for quote in _QUOTE_SPAN.findall(canonical(line)):
            owned.update(m.group(1) for m in re.finditer(r"\byour ([a-z']+)", quote))
    owned_stems = {w[:5] for w in owned}
    return all(m.group(1)[:5] in owned_stems for m in re.finditer(r"\byour ([a-z']+)", said))


# A quotation, closed or running to the end of the line (its apostrophes inside it).
_QUOTE_SPAN = re.compile(r"(?:^|(?<=\s))['\"]([^\"]+?)(?:['\"](?=[\s,.!?;:]|$)|$)")
# Sentences that start so are no restatement ("Sorry if you're...", "You know it's dumb..."); "you said
# yes" is one.
_SAID_WHAT = r"(?!" + SAID_ACTS + r"\b)"  # "you said sorry" is what they did, not a report
_AWKWARD_START = re.compile(r"(?:sorry|if|yours|you know|you mean|you see|you said(?! " + SAID_ACTS + r"\b)|"
                            r"because|cos|ok|okay|yes|no|well|anyway|also)\b")
# ... and, from the model, a restatement of what the person told or asked (the avatar, as often as not:
# "You told me..."); the person's own "I told her I'd think about it" turned is what happened.
_MODEL_AWKWARD = re.compile(r"you (?:told|asked)\b")
# "just", "still" before an "-ing" word stay: "still shaking" is said back as "You're still shaking."
_LEADING = re.compile(r"^(?:"
                      # a cheer in sarcasm with no comma ("oh great the landlord is putting the rent up again")
                      r"oh (?:great|brilliant|fantastic|wonderful|perfect|lovely|joy|fab|super|marvellous)|"
                      r"and|but|so|then|(?:just|still)(?!\s+(?!(?:no|some|any|every)thing\b)[a-z]{2,}ing\b)|also|oh|"
                      r"ok|okay|well|anyway|of course|update|turns out|turned out|bro|idk|ugh|um+|nvm|never ?mind|"
                      # a cheer that opens bad news ("fab, the boiler's packed in", "thrilled to report my laptop
                      # died"), sarcastic or not: what happened is said back, not the cheer
                      r"(?:thrilled|delighted|happy|pleased|excited|proud|cheerfully) to (?:report|announce|say|share|"
                      r"inform you)(?: that)?|"
                      r"(?:oh |so )?(?:woo+hoo|yay|fab|fantastic|brilliant|lovely|great|perfect|cheers(?: \w+)?|"
                      r"wonderful|amazing|marvellous|super)(?=,)|"
                      # a filler that opens the message ("like word for word, he didn't...")
                      r"like(?= \w+ for \w+|,)|"
                      r"hmm+|(?:yeah|yes|yep|yup|nah|no|nope)(?=,)|"
                      # what the news is, said after its kind ("Good news is no surgery", "the bad news: they
                      # cut my hours"): the kind is the listener's to take, not to say back
                      r"(?:the )?(?:only )?(?:good|bad) news (?:is|was)(?: that)?|"
                      r"(?:the )?(?:good|bad) news(?=:)|"
                      # what the trouble is, after its name ("problem is she wants our dad there")
                      r"(?:the )?(?:only |main |real )?(?:problem|trouble|issue|catch|thing)"
                      r" (?:is|was)(?: that)?)\b:?[\s,\u2014\u2013-]*",
                      re.IGNORECASE)

# Their word -> the word said back to them. "you" in a message means the avatar, so such a message is
# not turned (see ``flipped``).
# "..., thank you very much." at the end is no thanks to the avatar.
_FILLERS = re.compile(r"\s*\b(?:lol|lmao|tbh|rn|omg|ngl|haha+|honestly|literally|like,)\b\s*"
                      r"|,\s*thank you very much(?=[\s.!?]*$)", re.IGNORECASE)
_TRAILING = re.compile(r"[\s,]+(?:tho|though|lol|lmao|haha\w*|tbh|ngl|rn|so|and|but|or|like|(?:but )?whatever)$",
                       re.IGNORECASE)
# A hedge that ends a sentence after a comma: said back, it becomes the avatar's doubt ("Just tired, I
# guess." was "You're tired, you guess.").
_HEDGE = re.compile(r",\s*i (?:guess|suppose|think|reckon)$", re.IGNORECASE)
# A sentence runs to its end mark, but a quotation inside it keeps its own ("she texted back 'coffee sunday?' so
# that's something" is one sentence).
_SENTENCE = re.compile(r"(?:(?<!\w)['\"][^'\"\n]{1,80}['\"](?!\w)|[^.!?])+[.!?]*")
_AFTER_QUOTED_END = re.compile(r"(?<=[.!?]['\"])\s+(?=[A-Z])")
# "... says you're 'being dramatic.'": its full stop goes after the quotation ("'being dramatic'.")
_ENDS_QUOTED = re.compile(r"\.(['\"])$")


_LAUGH_BREAK = re.compile(r"\s+(?:lol|lmao|haha+|hahah\w*)\s+(?=(?:i|i'm|im|my|we|he|she|they|it|the|our|his|her|their|"
                          r"mum|mom|dad|now|then|so)\b)", re.IGNORECASE)
_TRAILING_OFF = re.compile(r"\s*(?:\.{2,}|\u2026)\s*(?=[a-z])")
_QUOTE_PART = re.compile(r"((?:^|(?<=\s))['\"][^'\"]+['\"])")


# Pictographs and the joiners between them: never said back (a voice reads them as their names, or not at all).
_EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0F\u200D]+")


def _sentences(user_text: str) -> list[tuple[str, str]]:
    """The message's sentences, each as written and without the fillers and leading words that are not
    said back."""
    text = " ".join(user_text.replace("\u2019", "'").split())
    text = _TRAILING_OFF.sub(" ", text)  # "it was... not the same": one sentence, not "it was."
    # "i cant stop crying lol my mum came running in": a laugh between two clauses ends the first, so the words
    # are not said back as one run-on sentence (not inside a quotation)
    text = "".join(part if i % 2 else _LAUGH_BREAK.sub(". ", part) for i, part in enumerate(_QUOTE_PART.split(text)))
    out = []
    # a quotation that ends its sentence ("... said 'we just don't have budget this year.' So it's not even about
    # my work."): what follows a capital letter after it is a sentence of its own
    # (a quotation's closing mark left at the start of the next, when a "don't" in it hid where it closed, is dropped)
    raws = [re.sub(r"^['\"]\s+", "", raw.strip()) for match in _SENTENCE.finditer(text)
            for raw in _AFTER_QUOTED_END.split(match.group(0))]
    for raw in raws:
        if not raw:
            continue
        # fillers are left out of the person's words, not of a quotation ("it said 'lol no chance'")
        plain = spelled_out("".join(part if i % 2 else _FILLERS.sub(" ", part)
                                    for i, part in enumerate(_QUOTE_PART.split(raw)))).strip()
        plain = re.sub(r"\s+(?=[,;:])", "", plain)  # "lovely tbh, said" loses its filler, not "lovely , said"
        plain = " ".join(_EMOJI.sub(" ", plain).split())  # "the driver handed it in 🙏": the words are said back
        out.append((raw, _HEDGE.sub("", _LEADING.sub("", plain.lstrip(" ,;:-")).rstrip(".!? ,"))))
    return out


# Where a long sentence divides into clauses that stand alone ("..., but he read every one of them").
_CLAUSE = re.compile(r",?\s+(?:but|because|and then|and now)\s+|,\s+so\s+|\s+so\s+(?=(?:i|i'm|we|he|she|they|it|you|"
                     # "so" before who or what a clause is about, not "so thin"
                     r"that|now|there|the|my|our|his|her|their|this|everyone|nobody)\b)|,?\s+and\s+(?=(?:he|she|they|i|we|it)\b)"
                     # "... at the supermarket and the woman behind me just paid for my whole shop": someone named
                     # after "and" in a long sentence begins a clause of their own
                     r"|\s+and\s+(?=(?:the|my|his|her|their|our)\s+\w+(?:\s+\w+){0,3}\s+(?:just\s+)?(?:has|had|was|is|"
                     r"were|are|did|got|gave|paid|said|told|took|came|went|made|sent|left|[a-z]{2,}ed)\b)", re.IGNORECASE)


# A question typed without its question mark ("how do i bring it up without a fight", "do you think
# there's life out there"): a question word or an auxiliary, then who it asks about.
_QUESTION = re.compile(
    r"^(?:(?:how|what|wat|wut|why|where|when|who|which)\s+(?:do|does|did|can|could|should|would|will|is|are|was|am|"
    r"has|have|if|much|many|long|often|else)\b|(?:do|does|did|can|could|should|would|will|is|are|am|have|has|"
    r"was|were|shud|shld|cud|wud)\s+(?:i|you|u|we|they|he|she|it|there|anyone|people|someone|kids|this|that)\b|"
    r"(?:is|are|was|were)\s+(?:a|an|the|my|your|our|his|her|their)\s+\w+\s+(?:too|very|really|ok|okay|normal|bad|"
    r"weird|enough|still|even|going|gonna|worth|a|an)\b|"
    r"(?:what|wat|how|who|where)(?:'s|s)\s+(?:your|ur|yours|you|u|the best|a good)\b|"
    r"(?:random|quick|serious|dumb|silly|weird|honest) question\b|"
    r"(?:any|got any)\s+(?:(?:last|more|other|good|quick|final|last[- ]minute)\s+)?(?:tips|ideas|advice|idea|thoughts|"
    r"suggestions?|recommendations?|pointers)\b|which\s+(?:one|ones|of|would|should)\b|"
    r"(?:you|u)\s+(?:ever|think|reckon)\b|ever\s+(?:been|tried|had|seen|done)\b|"
    r"(?:what|how)\s+about\s+(?:you|u)\b|thoughts\W*$|"
    # "what helps with the sore throat", "what works for a stiff neck"
    r"(?:what|which)\s+(?:helps|works|worked|helped)\s+(?:with|for|when|if|best)\b)", re.IGNORECASE)


_WH_QUESTION = re.compile(r"(?:how|what|why|where|when|who|which)\s+(?:do|does|did|can|could|should|would|will|am|"
                          r"shall)\s+(?:i|we)\b", re.IGNORECASE)


# A request to the avatar, whatever its end mark ("Tell me something nice.", "cheer me up"): answered, never said
# back ("Tell you something nice.").
_REQUEST = re.compile(r"^(?:(?:please|pls|plz|just|go on|so|ok|okay)\W+)*(?:tell me (?:something|a joke|a story|a fact|"
                      r"one thing|what you think|honestly|straight|about (?:you|your)|(?:a |one )?(?:good|nice|happy|"
                      r"funny) thing|(?:you|u) (?:have|had|know|'ve|ve|got)\b)|say something|cheer me up|distract me|"
                      r"make me (?:laugh|smile)|recommend\b|"
                      r"suggest (?:something|some|a|an)\b|give me (?:(?:some|a|an|one) )?(?:ideas?|tips?|advice|reasons?|"
                      r"something|words?|pep talk))", re.IGNORECASE)


def is_question(sentence: str) -> bool:
    """Whether ``sentence`` asks something: a question mark, or the shape of a question typed with no
    end mark at all ("Did it anyway." is no question)."""
    sentence = _QUOTE_PART.sub(" ", sentence.strip()).strip()  # "she texted back 'coffee sunday?'" asks nothing
    if "?" in sentence:
        return not amazed(sentence)
    lead = _LEADING.sub("", sentence)
    if _REQUEST.match(lead) or _ASKED_WITH_STOP.match(lead):
        return True
    return not sentence.endswith((".", "!")) and _QUESTION.match(lead) is not None and not _GOES_ON.match(lead)


# "which is amazing except Mum's just had her hip replaced": a message that goes on from the one before, typed
# without its question mark, unless it weighs one thing against another ("which is better, the 8am or the 10am")
_GOES_ON = re.compile(r"which\s+(?:is|was)\b(?!\s+(?:better|best|worse|worst|easier|easiest|cheaper|cheapest|quicker|"
                      r"faster|nicer|healthier|safer|more|less|right|correct|the (?:best|right|better|one)))", re.IGNORECASE)


# A question typed with a full stop, in a shape no statement has ("is it petty to put a camera in the office
# fridge. asking for me", "what do i do."); not "Did it anyway." or "Can I just say, you were brilliant." It may
# follow a lead-in ("ok real question do u think...", "like what do i even do if...") or end a sentence after a
# comma ("they want me to say a few words, what do i even say").
_ASKED_WITH_STOP = re.compile(r"(?:.*[,;]\s*(?=(?:what|how) (?:do|should|can) i (?:even )?\w+\W*$))?(?:like,? )?"
                              r"(?:(?:honest|real|serious|quick|random|genuine|stupid|dumb) question\W*)?(?:is it|is that|would it be|would that be|should i|should we|do you think|do u think|"
                              r"what should i|how do i|how should i|what do i)\s+\S[^!]*\.?$", re.IGNORECASE)


def asks_listener(user_text: str) -> bool:
    """Whether the message asks the avatar something (a question, with or without its question mark)."""
    return any(is_question(raw) for raw, _ in _sentences(user_text))


def question(user_text: str) -> str:
    """The sentences of the message that ask something, as written ("" if none)."""
    return " ".join(raw for raw, _ in _sentences(user_text) if is_question(raw))


# The start of a sentence that leads into the point rather than making it.
_PREAMBLE = re.compile(r"(?:sorry if|sorry but|sorry,|i know|i mean|i guess|to be honest|the thing is)\b", re.IGNORECASE)


# A part of a sentence that cannot stand alone ("When I got home, ...").
_SUBORDINATE = re.compile(r"(?:when|if|after|before|although|though|because|since|while|as|once|until|unless|"
                          r"whenever|even|despite|instead|apart|besides|like|with|without)\b", re.IGNORECASE)


def _candidates(user_text: str, max_words: int) -> Iterator[tuple[str, bool]]:
    """The message's sentences in order (each with whether it was a whole sentence); a sentence longer
    than ``max_words`` gives its clauses instead. Questions are passed over."""
    for raw, sentence in _sentences(user_text):
        if is_question(raw) or _WH_QUESTION.match(sentence):
            continue  # "what do I wear." is a question typed with a full stop, not "What do you wear."
        shown = _SHOWN_WORDS.split(sentence, 1)[0]
        if shown != sentence and len(shown.split()) >= 5:
            # "cried at mile 24 when i saw my dad holding a sign that said 'RUN FASTER, I'M COLD'": what happened,
            # without the words shown on the thing (said back, they would be the avatar's)
            yield shown, False
        if len(sentence.split()) <= max_words:
            yield sentence, True
            if _PREAMBLE.match(sentence) and "," in sentence:
                # "Sorry if I'm not making sense, everything feels foggy": what follows the preamble
                yield sentence.split(",", 1)[1].strip(), True
            elif "," in sentence and len(sentence.split(",", 1)[0].split()) <= 3:
                # "word for word, he didn't even change the chart colors": what follows a short lead-in
                yield sentence.split(",", 1)[1].strip(), True
        else:
            clauses = [clause.strip(" ,") for clause in _CLAUSE.split(sentence)]
            yield from ((clause, False) for clause in clauses)
            head = sentence.split(", ", 1)[0]
            if head != clauses[0] and not _SUBORDINATE.match(head):
                # "I was told in my review that I'm 'not leadership material', two weeks after ...": the
                # point comes before the first comma
                yield head, False
            main = _TRAILING_CLAUSE.split(clauses[0], 1)[0]
            if main != clauses[0] and len(main.split()) >= 5:
                # "My flatmate has been carrying my laundry up three flights of stairs without me even
                # asking": what happened, without the circumstance after it
                yield main, False


# Words written on a thing, quoted at the end of a sentence ("a sign that said 'RUN FASTER'", "a card reading 'get well'").
_SHOWN_WORDS = re.compile(r",?\s+(?:(?:that|which) (?:said|says|read|reads)|saying|reading)\s*:?\s*(?=['‘“\"].{2,}['’”\"]\W*$)",
                          re.IGNORECASE)


# A circumstance that ends a sentence and can be left off without changing what happened in it.
_TRAILING_CLAUSE = re.compile(r",?\s+(?:without|when|whenever|after|before|until|since|"
                              r"as soon as)\s+", re.IGNORECASE)


# A sentence about someone else that can be reported as theirs ("You said the other boy got nothing."):
# it begins with who or what it is about.
_THIRD_SUBJECT = re.compile(r"(?:he|she|they|it|it's|he's|she's|they're|there|there's|everyone|everybody|someone|"
                            r"everything|nothing|something|"
                            r"somebody|nobody|no one|the(?! same)|a|an|his|her|their|this|that|these|those|some|"
                            r"every|each|half|most|all)\b", re.IGNORECASE)
# ... and says what happened: a verb in it, not a fragment ("a cinema ticket from 2019").
_VERB = re.compile(r"\b(?:[a-z]+n't|is|was|are|were|has|have|had|did|does|do|can|could|will|would|seems?|[a-z]{2,}ed|said|made|"
                   r"got|took|came|went|found|left|ran|sat|told|gave|knew|saw|felt|kept|lost|paid|put|hit|wrote|"
                   r"drove|fell|ate|sent|brought|bought|broke|woke|spent|sold|caught|chose|flew|forgot|froze|grew|hid|"
                   r"held|met|shook|slept|spoke|stole|stood|stuck|swore|taught|threw|wore|won|"
                   r"says|makes|wants|thinks|knows|looks|sounds|feels|gets|goes|"
                   r"comes|keeps|texts|hits|calls|works|takes)\b|'(?:s|re|d)\b", re.IGNORECASE)
# ... or a present tense after who it is about ("the dog needs a walk", "the job ad closes on the 30th").
_PRESENT_AFTER_SUBJECT = re.compile(r"(?:the|a|an|his|her|their|this|that|every|each)\s+(?:[a-z]+\s+){1,2}?"
                                    r"(?!(?:is|was|has|does|his|this|yes|us|plus|less|bus|gas)\b)[a-z]{2,}[^s'\s]s\b",
                                    re.IGNORECASE)
# What follows a subject named bare and tells what happened: "'s" (is, has) and a word, or a verb;
# a past tense only with what it acts on ("council rejected the plan", "rash cleared up"), as headline
# pieces ("offer accepted on the flat", "grant approved") are no sentences.
_THEN_VERB = (r"(?:'s\s+\w+|\s+(?:is|was|are|were|has|have|had|got|came|went|says|said|kept|left|took|broke|fell|"
              r"ran|won|lost|sent|cost|needs|wants|starts|ends|closes|opens|thinks|reckons|believes|suspects|suggests|"
              r"seems|looks|knows|keeps|told|gave|found|wasn't|isn't|hasn't|didn't|"
              r"won't|can't|doesn't|[a-z]{2,}ed\s+(?:the|a|an|my|his|her|him|them|it|its|their|us|me|up|out|off|down|back|"
              r"over|away|everything|all|\d+)))\b")
# A thing named bare and what was done to it, its "was" left out as chat does ("flight to Lisbon cancelled",
# "appointment moved again"): said back as "the flight to Lisbon was cancelled".
_DONE_TO_THING = re.compile(r"(?P<thing>[a-z]+(?: (?:to|from|at|with) [A-Za-z]+)?) (?P<done>cancell?ed|postponed|delayed|"
                            r"moved|closed|rejected|denied|declined|refused|approved|accepted|confirmed|sold out|"
                            r"stolen|nicked|towed|flooded|scrapped|cut|shut)\b", re.IGNORECASE)
_NOT_A_THING = re.compile(r"(?:i|you|he|she|it|we|they|this|that|these|those|there|who|what|which|my|your|his|her|"
                          r"our|their|the|a|an|just|still|got|get|was|is|be|been|being|already|never|finally|"
                          r"everything|something|nothing|all|one)\b", re.IGNORECASE)
# A thing named bare at the start, as chat leaves out its "the" ("results were awful", "bike got nicked",
# "rent's going up"): a word that is no pronoun, article, adverb, verb, place of one's own ("work") or
# person of one's own (``_KIN``), then a verb.
_BARE_NOUN = re.compile(
    r"(?!(?:i|you|he|she|it|we|they|this|that|these|those|there|here|what|which|who|and|but|so|or|if|yes|no|yeah|"
    r"nah|ok|okay|well|just|still|now|then|today|tonight|yesterday|tomorrow|also|anyway|maybe|everyone|everybody|"
    r"nobody|someone|somebody|something|nothing|everything|all|some|any|both|each|one|two|three|mine|yours|his|her|"
    r"hers|their|our|my|your|a|an|the|no|not|never|always|only|even|really|honestly|actually|literally|apparently|"
    r"seriously|sorry|thanks|please|lol|omg|woohoo|yay|ugh|wow|oh|ah|hey|hi|hello|good|bad|great|life|time|work|"
    r"school|uni|college|home|church|class|cost|feel|felt|got|get|went|came|made|had|has|was|is|let|can|will|"
    r"would|could|should|might|must)\b)[a-z]{3,}(?<!ly)(?<!ing)(?<!ed)" + _THEN_VERB, re.IGNORECASE)
# A parent or grandparent called by name as family do ("since Mum died", "rang Dad").
_PARENTS = r"mum|mom|mam|mummy|mommy|dad|daddy|grandma|grandpa|gran|granny|nan|nana|nanna|grandad|granddad"
# A family member, friend or part of oneself named bare, as the person's own ("dad's dementia is getting
# worse", "Grandma fell again", "mate cancelled again", "knee's swollen"): said back as theirs ("Your
# dad's dementia...").
_KIN = (r"(?:" + _PARENTS + r"|mama|"
        r"papa|mate|boss|partner|wife|husband|boyfriend|girlfriend|bf|gf|son|daughter|brother|sister|flatmate|"
        r"roommate|bestie|hubby|fiance|fiancee|landlord|landlady|hair|knee|ankle|wrist|hip|shoulder|neck|tooth|skin)"
        r"(?:'s)?")
_KIN_WORD = re.compile(_KIN)
# Someone's someone doing something ("Neha's mother has flown in"): the possessive already says whose, so no
# "the" goes before it as before a thing named bare ("car's broken again" -> "the car's broken again").
# Two words may follow a name's or a day's ("Mateo's school play was tonight", "today's quick chat was 50 minutes"),
# not a thing's named bare ("puppy's parvo test was negative" is said back with "the" before it).
_POSSESSOR = re.compile(r"(?:[A-Za-z]+'s |[A-Z][a-z]+'s [a-z]+ |(?:[Tt]oday|[Tt]onight|[Yy]esterday)'s [a-z]+ )[a-z]+ "
                        r"(?:has|have|had|is|was|were|are|did|does|got|gets|keeps|kept|said|says|"
                        r"wants|wanted|thinks|thought|[a-z]{2,}ed)\b")
# A parent named bare is said back to the person as theirs ("since your mum died"), or the avatar would seem to
# speak of its own mum.
_PARENT = re.compile(r"\b(" + _PARENTS + r")\b", re.IGNORECASE)
_OWNERS = {"my", "your", "his", "her", "their", "our", "a", "an", "the", "whose", "this", "that", "every", "any"}


def owned_kin(text: str) -> str:
    """``text`` (already turned to "you") with a parent named bare made the person's: "Mum" -> "your mum",
    unless an owner or an article comes in the two words before it in the same phrase ("your lovely Mum",
    "his dad", "your 90-year-old dad"), or it follows another family member with "and" ("your mum and dad"),
    or it is quoted ("called my boss 'mum'")."""
    def own(match: re.Match) -> str:
        if match.start() and text[match.start() - 1] in "'\"‘“":
            return match.group(0)
        before = []
        for token in reversed(text[:match.start()].split()):
            if token[-1] in ",;:.!?" or len(before) == 2:
                break
            before.insert(0, token.lower())
        if any(w in _OWNERS or w.endswith("'s") for w in before) or (
                len(before) == 2 and before[1] in ("and", "or", "&") and _KIN_WORD.fullmatch(before[0])):
            return match.group(0)
        return ("Your " if match.start() == 0 else "your ") + match.group(1).lower()
    return _PARENT.sub(own, text)


_BARE_KIN = re.compile(_KIN + r"(?:" + _THEN_VERB + r"|\s+(?:[a-z]{2,}ed|died|rang|woke|forgot|made|gave|told|"
                       r"sent|found|brought|bought|thought|knew|saw|says|thinks|wants)\b)", re.IGNORECASE)
_NAME_SUBJECT = re.compile(r"(?!(?:I|The|This|That|These|Those|It|Its|My|Our|Your)\b)[A-Z][a-z]{2,} (?:is|was|has|had|"
                           r"just|said|says|told|[a-z]{2,}ed|came|went|made|got|took|gave|ran|left|sent|found|kept|"
                           r"wants|thinks|keeps|asked|brought|ate|stole|broke|lost|won|put|bought|sold|threw|wrote|"
                           r"forgot|drank|never|always|still|finally)\b")
_WHEN = re.compile(r"(?:today|yesterday|tonight|this morning|last night|then|now),?\s+", re.IGNORECASE)


# A quotation inside a sentence ("She texted me 'please just come'"): said back word for word, so only
# one with nobody in it to turn ("'I'm fine'" said back as "'you're fine'" would change who spoke).
_QUOTE_OPEN = re.compile(r"(?:^|(?<=\s))['‘“\"]")
_QUOTED = re.compile(r"(?:^|(?<=\s))['‘“\"]([^'’”\"]+)['’”\"](?=[\s,.!?;:]|$)")


def _quotes_kept(sentence: str) -> bool:
    """Whether ``sentence`` can be said back with its quotations as they are: none, or each closed and
    with no one in it ("I", "you") whose person would be muddled."""
    if not _QUOTE_OPEN.search(sentence):
        return True
    inner = _QUOTED.findall(sentence)
    rest = _QUOTED.sub("", sentence)
    return bool(inner) and not _QUOTE_OPEN.search(rest) and not any(
        has_first_person(q) or speaks_to_listener(q) for q in inner)


_SHOUTED_RUN = re.compile(r"\b[A-Z][A-Z']*(?:[\s,]+[A-Z][A-Z']*)+\b")


def unshouted(text: str) -> str:
    """A message written mostly in capitals in sentence case instead ("THEY'LL STILL TAKE ME!!!" -> "They'll
    still take me!!!"): said back in capitals, it would shout. Other messages are returned as they are."""
    letters = [c for c in text if c.isalpha()]
    if len(letters) < 8 or sum(c.isupper() for c in letters) < 0.6 * len(letters):
        # a shouted stretch in a message that is not ("JUST GOT THE CALL. benign!!!"): in lower case, so it is
        # not said back half in capitals ("You gOT THE CALL."); an acronym alone ("the CEO") keeps its capitals
        return _capital_i(_SHOUTED_RUN.sub(_lowered_run, text))
    lowered = _capital_i(text.lower())
    return re.sub(r"(^\W*|[.!?]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), lowered)


def _lowered_run(match: re.Match) -> str:
    """A run of capitalised words in lower case, unless it is two of an acronym's length (three letters or fewer):
    "the UK NHS" keeps its capitals, "GOT THE JOB" does not."""
    run = match.group(0)
    words = re.findall(r"[A-Z']+", run)
    return run.lower() if len(words) >= 3 or any(len(w) >= 4 for w in words) else run


def _capital_i(text: str) -> str:
    """``text`` with the pronoun "i" capitalised."""
    return re.sub(r"\bi(?=\b|')", "I", text)


# Where a message turns to other news: a new sentence, or "..., then", "..., but", "; ".
_TURN = re.compile(r"(?<=[.!?])\s+|,?\s+(?:then|but|and then|and now|though|although)\s+|;\s*|\s+-\s+")


def later_parts(user_text: str) -> list[str]:
    """What the message says from each place it turns on (``_TURN``), after its start: "Got approved for the flat,
    then Mum rang to say Grandad's back in hospital." -> ["Mum rang to say Grandad's back in hospital."]."""
    return [user_text[m.end():] for m in _TURN.finditer(user_text) if user_text[m.end():].strip()]


def sentences_of(user_text: str) -> list[str]:
    """The message's sentences, each as written."""
    return [raw for raw, _ in _sentences(user_text)]


def flipped(user_text: str, *, max_words: int = 17) -> str:
    """The first sentence of the message that can be said back to the person, turned to "you" ("Your
    card got declined on a first date."), or "" when none turns safely: sentences that are questions,
    speak to the avatar ("you"), quote someone, are too long, or do not pass ``restatement_ok`` are
    passed over; of a long sentence, a clause of it with the person in it may be said. When no sentence
    has the person in it, the first that is about someone else is reported as theirs ("You said the
    other boy got nothing.")."""
    user_text = spelled_out(unshouted(user_text))
    third, short, brief, bare = [], [], [], []
    others = False  # the last whole sentence with a subject had someone or something else as it
    for first, whole in _candidates(user_text, max_words):
        if whole and _RELATIVE.match(first) and not first.lower().startswith("which means"):
            continue  # "Who was behind me.": a fragment that leans on the sentence before it
        subjectless = whole and lacks_subject(first)
        if subjectless and others and not has_first_person(first):
            continue  # "It was IN THE BREAD. Baked into the loaf.": the ring was baked in, not "You baked..."
        if whole and not subjectless:
            others = not has_first_person(first.split(",")[0]) and (
                _OTHER_SUBJECT.match(first) is not None or _NAME_SUBJECT.match(first) is not None
                and not first.split()[0].lower().endswith("ly"))
        told = reported_quote(first)  # "My mum told me 'I never wanted...'" -> "... told me she never wanted..."
        first = told or first
        if _BARE_KIN.match(first):
            first = "my " + first[0].lower() + first[1:]  # "Dad's dementia is getting worse" is their dad's
        words = first.split()
        if whole and len(words) == 2 and _SHORT_DONE.match(first):
            short.append(first)  # "got AAB": said back ("You got AAB.") only when nothing longer is
        if whole and len(words) == 2 and _SHORT_THIRD.match(first):
            brief.append(first)  # "They're blooming.": "You said they're blooming." only when nothing longer is
        if not (3 if whole else 4) <= len(words) <= max_words or not _quotes_kept(first):
            continue
        if told is None and speaks_to_listener(first) or whole and done_to_writer(first):
            continue  # "walked past me in the corridor": who did it is not said, so not "You walked past..."
        if not (has_first_person(first) or whole and lacks_subject(first)):
            about = first[_WHEN.match(first).end():] if _WHEN.match(first) else first
            if (done := _DONE_TO_THING.match(about)) is not None and not _NOT_A_THING.match(about):
                # "flight to Lisbon cancelled 45 mins before boarding": what was done to a thing, its "was" left out
                when = first[:len(first) - len(about)]
                about = f"the {done.group('thing')} was {done.group('done')}{about[done.end():]}"
                first, words = when + about, about.split()
            if _BARE_NOUN.match(about) and not _NAME_SUBJECT.match(about) and not about.split()[0].isupper() \
                    and not _POSSESSOR.match(about):
                # "results were awful", "bike got nicked": a thing named bare, as chat leaves out "the"
                first = first[:len(first) - len(about)] + "the " + about[0].lower() + about[1:]
                about, words = "the " + about[0].lower() + about[1:], first.split()
            if len(words) >= 4 and (_THIRD_SUBJECT.match(about) or _NAME_SUBJECT.match(about)
                                    or _POSSESSOR.match(about)) and (
                    (_VERB.search(first) or _PRESENT_AFTER_SUBJECT.match(about)) and not first.isupper()):
                third.append(first)
            continue
        sentence = owned_kin(with_subject(second_person(_TRAILING.sub("", first).rstrip(" ,"))))
        sentence = sentence[0].upper() + _ENDS_QUOTED.sub(r"\1", sentence[1:]) + "."
        if restatement_ok(sentence, user_text=user_text, begins_you=False):
            says = len(faults.specific_words(sentence))
            if not bare and says >= 2 or says >= 3 and not _POINTS_BACK.search(sentence):
                return sentence
            # "You did tell her.", "You're a bit emotional.": said only when no later part says clearly more
            bare.append(sentence)
    if bare:
        return bare[0]
    for first in third:
        if len(first.split()) > MAX_RESTATEMENT_WORDS - 2:
            continue
        if _THIRD_SUBJECT.match(first) or _WHEN.match(first):
            first = first[0].lower() + first[1:]
        sentence = owned_kin(_reported(_TRAILING.sub("", first).rstrip(" ,")))
        if restatement_ok(sentence, user_text=user_text, begins_you=False):
            return sentence
    for first in short:
        sentence = "You " + second_person(first)[:1].lower() + second_person(first)[1:] + "."
        if restatement_ok(sentence, user_text=user_text, begins_you=False):
            return sentence
    for first in brief:
        sentence = "You said " + first[0].lower() + first[1:] + "."
        if restatement_ok(sentence, user_text=user_text, begins_you=False):
            return sentence
    return ""


# Someone or something else as a sentence's subject; a sentence after it with none of its own goes on about them.
_OTHER_SUBJECT = re.compile(r"(?:he|she|they|it|it's|he's|she's|they're|the|his|her|their|this|that|these|those)\b",
                            re.IGNORECASE)


# A word that leans on a sentence before it ("I keep saying it out loud to the cat."): such a sentence does not
# stand in for the one before it
_POINTS_BACK = re.compile(r"\b(?:it|that|this|these|those|them|there|then)\b", re.IGNORECASE)


# Two words that tell how someone is or what they are doing ("They're blooming", "She's gone").
_SHORT_THIRD = re.compile(r"(?:they're|they've|she's|he's)\s+[a-z]{3,}$", re.IGNORECASE)


# Two words that tell what the person did, their subject left out ("got AAB", "passed again").
_SHORT_DONE = re.compile(r"(?:got|passed|won|failed|lost|missed|finished|quit|nailed|smashed|aced|made)\s+\S+$",
                         re.IGNORECASE)


# The words that begin a fragment said back inside a longer one ("Whole team, no warning."): the rest
# keep their capital, as a name might ("Dinner. Maria cancelled." is said back as two).
_JOINS_LOWER = faults._STOP | {
    "no", "not", "never", "third", "fourth", "fifth", "second", "first", "last", "another", "still", "again", "only",
    "zero", "nothing", "none", "every", "all", "whole", "he", "he's", "she", "she's", "they", "they're", "it", "it's",
    "that's", "there's"}
_SUBJECT_PRONOUN = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|im|ive|me|we|we're|we've|we'd|we'll|us)\b")
MAX_ECHO_WORDS = 12
MAX_COUNT_WORDS = 9  # a piece of a message said back that counts something, with no verb in it
_COUNT = re.compile(r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|"
                    r"hundred|a hundred|first|second|third|fourth|fifth|last|another|whole)\s+(?:whole\s+|more\s+|full\s+)?"
                    r"(?:days?|weeks?|months?|years?|hours?|minutes?|nights?|times?|steps?|people|attempts?|goes|rounds?|"
                    r"miles?|day|night|week)\b", re.IGNORECASE)


def _echoable(raw: str, piece: str) -> bool:
    """Whether a piece of a message (``raw``: its sentence as typed) may be said back as it came: no
    question, no words to the avatar, no quotation, and no person doing something in it, said ("I'm fine")
    or left out ("Gave the speech")."""
    return not (is_question(raw) or speaks_to_listener(piece) or _QUOTE_OPEN.search(piece)
                or _SUBJECT_PRONOUN.search(canonical(piece)) or lacks_subject(piece))


# The start of an answer to the avatar's "what's yours?", left off when the answer is said back ("mine's
# autumn. conkers, jumpers, no wasps" -> "Autumn, conkers, jumpers, no wasps."), not "Yours is autumn...".
_MINE = re.compile(r"^mine(?:'s| is| was| would be| has to be)\s+(?=\S)", re.IGNORECASE)


_VERB_IN = re.compile(r"\b(?:is|are|was|were|am|be|been|being|has|have|had|do|does|did|went|got|gets|get|go|goes|came|"
                      r"come|said|says|made|make|took|take|ran|sat|fell|think|thinks|need|needs|want|wants|can|can't|"
                      r"could|will|won't|would|should|must|runs|run)\b|\w{3,}(?:ed|ing)\b|'(?:s|re|ve|d|ll)\b")


def echoed(user_text: str) -> str:
    """A message of short pieces with no one doing anything in them ("whole team. no warning.",
    "Pneumonia. He's 82.", "ugh worst day ever tbh") said back as it came, the way a listener repeats
    the words that matter ("Whole team, no warning."): "my" turned to "your", fillers left off. ""
    when the message is longer, asks something, speaks to the avatar, quotes someone, has the person as
    a subject ("I'm fine" said back as "You're fine" is no listening), or has fewer than two words of its
    own to say back."""
    user_text = spelled_out(unshouted(user_text))
    pieces = []
    for raw, piece in _sentences(user_text):
        piece = _TRAILING.sub("", piece if pieces else _MINE.sub("", piece)).strip(" ,;:-")
        if not piece:
            continue
        # a longer sentence of short pieces with no verb in it ("no surgery, just 8 weeks of physical therapy") is
        # said in its pieces; one with a verb would be said back word for word, as the avatar's own
        verbless = not _VERB_IN.search(canonical(piece))
        parts = [part.strip() for part in piece.split(",")] if len(piece.split()) > 6 and verbless else [piece]
        # a count of something, with no verb ("Three days of the same migraine now.", "Last day at the post office
        # today."), says what is, not who did what, and may be longer
        longest = MAX_COUNT_WORDS if len(parts) == 1 and _COUNT.match(piece) and verbless and not _VERB.search(piece) \
            else 6
        if not _echoable(raw, piece) or any(not part or len(part.split()) > longest for part in parts):
            return ""
        pieces.extend(owned_kin(second_person(part)) for part in parts)
    if not pieces or not 2 <= sum(len(p.split()) for p in pieces) <= MAX_ECHO_WORDS:
        return ""
    plain = all(re.fullmatch(r"(?:[\w' ,%$£€&-]|(?<=\d):(?=\d))+", p) for p in pieces)  # "10:30" a time
    if not plain or len(faults.specific_words(" ".join(pieces))) < 2:
        return ""
    said = pieces[0][0].upper() + pieces[0][1:]
    for piece in pieces[1:]:
        first = piece.split()[0]
        if first.lower() in _JOINS_LOWER or first.islower():
            said += ", " + piece[0].lower() + piece[1:]
        else:
            said += ". " + piece
    return said + "."


MAX_PIECE_WORDS = 4
_DONE = re.compile(r"[a-z]{2,}ed\b", re.IGNORECASE)


_RELATIVE = re.compile(r"(?:which|who|whom|whose|where)\b", re.IGNORECASE)


def last_piece(user_text: str) -> str:
    """The short piece a message ends on, said back alone when the whole message cannot be ("Driving test
    on Thursday. Fourth attempt." -> "Fourth attempt.", "... and said thanks. small win" -> "Small win."):
    a listener repeats the words that land, and the whole message said back word for word would read as
    the avatar's own. "" when the message ends on a question, on words to the avatar, a quotation, the
    person as a subject ("no way im getting back to sleep"), a piece longer than ``MAX_PIECE_WORDS``
    words, or one with fewer than two words of its own."""
    user_text = spelled_out(unshouted(user_text))
    pieces = [(raw, _TRAILING.sub("", _FILLERS.sub(" ", piece)).strip(" ,;:-")) for raw, piece in _sentences(user_text)]
    pieces = [(raw, piece) for raw, piece in pieces if piece]  # "... third try. lol": the filler is no piece
    if not pieces:
        return ""
    raw, piece = pieces[-1]
    piece = re.split(r"[,;:]\s*", piece)[-1].strip() if len(piece.split()) > MAX_PIECE_WORDS else piece
    if (not piece or len(piece.split()) > MAX_PIECE_WORDS or not re.fullmatch(r"[\w' %$£€&-]+", piece)
            or not _echoable(raw, piece) or _DONE.match(piece) or _RELATIVE.match(piece)):
        return ""  # _DONE: "needed AAA for Edinburgh"; _RELATIVE: "which is almost worse" leans on what came before
    if len(faults.specific_words(piece)) < 2:
        return ""
    piece = owned_kin(second_person(piece))
    return piece[0].upper() + piece[1:] + "."


# A sentence that reports what someone said ("They said they'd call by Friday"): its verb, near the start,
# after someone who can tell the person something (not "it", "the sign").
_SAID = re.compile(r"\b(said|says)\b(?!\s+to\b)", re.IGNORECASE)
_TOLD = {"said": "told you", "says": "tells you"}
_TELLER = re.compile(r"(?:(?:he|she|they)\b|(?!(?:It|The|This|That|There|These|Those|Every|Some|A|An)\b)[A-Z][a-z]+\b|"
                     r"(?:the|her|his|their|our) (?:\w+ )?(?:nurse|doctor|vet|boss|manager|teacher|landlord|landlady|coach|"
                     r"surgeon|oncologist|dentist|examiner|lawyer|agent|friend|neighbou?r|mum|mom|dad|mother|father|"
                     r"sister|brother|wife|husband|partner|girlfriend|boyfriend|son|daughter|aunt|uncle|grandma|"
                     r"grandpa|recruiter|interviewer|officer|receptionist|therapist|counsel+or|tutor|principal)s?\b)",
                     re.IGNORECASE)


def _reported(sentence: str) -> str:
    """A sentence about someone else reported to the person: "You said the bus was late.", or, when
    someone in it plainly tells the person something, without a second "said" ("They told you they'd
    call by Friday.", "The nurse said you can go home tomorrow.")."""
    said = _SAID.search(sentence)
    before = sentence[:said.start()].split() if said else []
    if said is None or not 1 <= len(before) <= 4 or _SAID.search(sentence, said.end()) or _QUOTE_OPEN.search(sentence):
        return "You said " + sentence + "."
    if speaks_to_listener(sentence):  # words said to them, turned from a quotation: "The note said you dropped this"
        return sentence[0].upper() + sentence[1:] + "."
    if not _TELLER.match(sentence):
        return "You said " + sentence + "."
    return sentence[0].upper() + sentence[1:said.start()] + _TOLD[said.group(1).lower()] + sentence[said.end():] + "."


# Closing lines by the opening's family group: reflections and gentle questions, several each, none
# cheerful for bad news and none with advice. The group of a question-less plain message is "plain".
CLOSINGS: dict[str, tuple[str, ...]] = {
    "loss": ("How are you holding up?", "That's so much to carry.", "I'm here, whenever you want to talk.",
             "Go gently with yourself today.", "How are you doing with it all?", "That leaves such a gap."),
    "lonely": ("Loneliness like that is heavy.", "How long has it felt this way?", "I'm glad we're talking.",
               "That kind of quiet can really hurt."),
    "worry": ("What's worrying you most?", "That would shake anyone.", "How are you holding up?",
              "No wonder it's on your mind.", "Not knowing is the hardest part."),
    "unfair": ("You didn't deserve that.", "Anyone would be upset.", "How are you feeling about it now?",
               "That's not right at all.", "No wonder it's getting to you."),
    # frustration that no one is to blame for, or said in sarcasm: nothing about deserving it
    "fed_up": ("No wonder it's getting to you.", "How are you feeling about it now?", "That would test anyone.",
               "That's a lot to put up with."),
    "sting": ("Anyone would cringe at that.", "Those moments replay in our heads, don't they?",
              "How are you feeling about it now?", "It happens to more people than you'd think."),
    "guilt": ("It says a lot that you care this much.", "Go easy on yourself.", "What's weighing on you most?"),
    "letdown": ("After all that hope, too.", "How are you feeling about it now?", "That's really deflating.",
                "What a shame."),
    "hard": ("How are you holding up?", "That's a lot to deal with.", "What's been hardest?",
             "I'm here if you want to talk it through."),
    "care": ("I'm here with you.", "Take all the time you need.", "How are you feeling right now?"),
    "memory": ("What do you remember most?", "Moments like that stay with us.", "Tell me more about it."),
    "good": ("How did it feel?", "Tell me everything!", "What was the best part?", "What happens next?",
             "You must be buzzing.", "How are you celebrating?"),
    "pride": ("You earned this.", "How did it feel?", "All that work paid off.", "What was the best part?"),
    "surprise": ("How did it happen?", "Did you see it coming?", "What happens next?"),
    "impressed": ("What was that like?", "Tell me more.", "What did you make of it?", "I'd love to hear more."),
    # good news after a hard stretch, or good news the vote read as a painful feeling: glad, not jubilant
    "glad": ("That must mean a lot.", "Hold on to that one.", "How did that feel?", "You needed that.",
             "That's worth holding on to."),
    # a message whose own words say it went badly but that no opening answered (the vote read joy, or
    # was unsure): neither gloomy (happy tears) nor light ("What's it like?" to "I'm a wreck")
    "feeling": ("How are you feeling about it all?", "How are you doing with it all?",
                "How is that sitting with you?"),
    "thanked": ("I'm here whenever you want to talk.", "I'm always happy to listen.",
                "It's been good talking with you."),
    # fits a plan, a thing done or a thing seen alike: not "How is it going so far?" to "You booked flights
    # to Porto." nor "What's it like?" to "They said they'd call by Friday."
    "plain": ("Tell me more.", "How do you feel about it?", "What do you make of it?", "Go on, I'm listening.",
              "What's on your mind about it?"),
}
# a kindness or a thank-you is met as one ("That must mean a lot."), not with "How are you celebrating?"
_GROUP = {"pride": "pride", "warm": "glad", "excited": "good", "joy": "good", "surprise": "surprise",
          "impressed": "impressed", "glad": "glad", "kind": "glad", "praised": "thanked", "bright_side": "feeling",
          "mixed": "feeling"}
# Said only where someone or something was lost ("That leaves such a gap." to a diagnosis reads as if
# they had died).
_AFTER_A_LOSS = {"That leaves such a gap."}
_LOST = re.compile(r"\b(?:died|dead|death|passed away|passed on|funeral|lost (?:my|our|her|his|their)|put (?:\w+ )?down|"
                   r"gone|miss (?:her|him|them)|grave|widow\w*|bereave\w*)\b")


# Said only where something was hoped for, tried for or waited on ("After all that hope, too." to a team made
# redundant, or to "stayed till 11 and still didn't finish", gives them a hope they never spoke of).
_AFTER_A_HOPE = {"After all that hope, too."}
_HOPED_FOR = re.compile(r"\b(?:hop(?:e|ed|es|ing|eful)|fingers crossed|wanted|wanting|applied|application|interview\w*|"
                        r"audition\w*|shortlist\w*|wait(?:ed|ing)|counting on|looking forward|dream\w*|tried|trying|"
                        r"didn'?t get|did not get|not get in|rejected|rejection|turned (?:me )?down|so close|missed out|"
                        r"fell through|bid|offer)\b")
# Closing lines said only where the person (this message or their last three) spoke of what they lean on.
_SAID_ONLY_AFTER = ((_AFTER_A_LOSS, _LOST), (_AFTER_A_HOPE, _HOPED_FOR))


# Something still to come, told with nothing done yet ("Flying tomorrow for the first time in eleven
# years", "My parents are flying in for the defence in May"): no closing that asks how it went ("How did it
# feel?"), and joy looks forward. A message that also tells of something done ("I got the job! I start next
# month") keeps them: the deed is what it asks about.
_AHEAD = re.compile(r"\b(?:tomorrow|next (?:week|month|year|weekend|term|time|\w+day)|"
                    r"(?:on|this) (?:mon|tues|wednes|thurs|fri|satur|sun)day|"
                    r"in (?:january|february|march|april|june|july|august|september|october|november|december|"
                    r"may(?= *(?:[.,;!?]|$)))|"
                    r"(?<!time )(?<!first )in (?:a (?:week|month|fortnight|year)|"
                    r"(?:two|three|four|five|six|a few|\d+) (?:days|weeks|months))|"
                    r"going to|gonna|about to|can't wait|cannot wait|coming up|looking forward|"
                    r"(?:i|we|he|she|they)(?:'ll| will))\b")
_DONE_ALREADY = re.compile(r"\b(?:was|were|had|did|got|went|came|made|took|gave|said|told|found|won|lost|left|saw|"
                           r"ran|met|bought|brought|thought|felt|heard|sent|kept|held|wrote|broke|fell|ate|drank|"
                           r"(?!(?:excited|tired|scared|worried|married|engaged|pleased|thrilled|interested|bored|"
                           r"stressed|relieved|delighted|terrified|prepared|organised|organized|booked)\b)"
                           r"[a-z]{3,}ed)\b")
_HOW_IT_WENT = re.compile(r"\b(?:did|was|were|celebrating|paid off|earned)\b")  # closings about something done
_LOOKING_AHEAD = ("What are you most looking forward to?", "That's something to look forward to.")
_CHEERFUL_GROUPS = frozenset({"good", "glad", "surprise", "impressed", "pride"})


def ahead(user_text: str) -> bool:
    """The message tells of something still to come and of nothing done yet (``_AHEAD``)."""
    text = canonical(user_text)
    return _AHEAD.search(text) is not None and _DONE_ALREADY.search(text) is None


# Asking whether an ordinary feeling is all right ("Is it normal to feel numb more than sad?", "Am I wrong to
# be annoyed?", "am i overreacting??"): a caring listener says it is, in the person's own words, before anything
# else. Only feelings a listener can always stand behind: a question about something done or to do ("Am I
# being unreasonable if I ask for a meeting?", "Is it okay to keep that from my dad?") is the model's to answer,
# and so is a feeling a listener should ask about, not wave through ("empty", "like a burden").
_FEELINGS = (r"(?:guilty|numb|sad|sadder|angry|annoyed|jealous|hurt|upset|nervous|anxious|relieved|lonely|"
             r"homesick|embarrassed|happy|excited|disappointed|bitter|resentful|scared|afraid|frustrated|confused|"
             r"emotional|grumpy|irritated|overwhelmed|heartbroken|sentimental|nostalgic|proud|weepy|teary|cross)")


def _felt(verb: str) -> str:
    """A feeling had (``verb``: "feel", "be"...), as the questions say it: "(still) feel (so) guilty (about it)"."""
    return (r"(?:(?:still|so|this|really|a bit|a little|kind of|more|less) )*" + verb + " "
            r"(?:(?:so|this|really|a bit|a little|kind of|more|less|still|quite) )*" + _FEELINGS +
            r"(?: (?:more than|than|and|or|but not) " + _FEELINGS + r")?"
            r"(?: (?:(?:about|at|with|by) (?:it|that|this|him|her|them|everything)|all the time|"
            r"sometimes|still|now|again|already|for (?:\w+ ){0,8}?\w+|"
            r"(?:about|at|of|towards|over|after|with) (?:a|an|the|my|our|his|her|their|this|that) (?:\w+ )?\w+|"
            r"(?:at|towards|about|of) (?:\w+ ){0,3}?(?:people|women|men|kids|children|couples|parents|friends|families|"
            r"everyone|everybody)(?: (?:on|at|in) (?:\w+ )?\w+)?))?")


def _cry(verb: str) -> str:
    """Crying (``verb``: "cry" or "cry(?:ing)?"), as the questions say it: "(still) cry at the school gate"."""
    return r"(?:still )?" + verb + r"(?: (?:at|on|in|over|about|after) (?:\w+ ){0,4}?\w+)?"


_FELT = _felt("(?:feel|be|get|feeling|being|getting)")  # "to feel...", "for being..."
_IS_IT = re.compile(r"(?:^|[.!?,]\s*)(?:do you think |would you say )?(?:is it|is that|it's|it is) "
                    r"(?P<judge>normal|weird|okay|ok|wrong|bad|silly|stupid|dumb|strange|selfish|crazy) "
                    r"(?:(?P<to>to) (?P<act>" + _FELT + "|" + _cry("cry(?:ing)?") + r")|(?P<that>that|if) i (?P<felt>"
                    + _felt("(?:feel|am|get)") + "|" + _cry("cry") + r"))\s*\?*$")
_AM_I = re.compile(r"(?:^|[.!?,]\s*)am i (?P<judge>wrong|overreacting|being (?:petty|unreasonable|silly|stupid|"
                   r"dramatic|oversensitive|too sensitive|ridiculous|a baby)|petty|silly|crazy|mad|too sensitive)"
                   r"(?: (?P<act>(?:to|for) " + _FELT + r"))?\s*\?*(?=\s*(?:$|[.!?]))")
# Judges that weigh a feeling, not something done: "am I being silly?" needs no "to feel ..." after it to be
# reassured ("am I being unreasonable?" or "am I wrong?" alone may be about a deed, the model's to answer).
_FEELING_JUDGES = frozenset({"overreacting", "being silly", "being dramatic", "being oversensitive",
                             "being too sensitive", "being ridiculous", "being a baby", "silly", "too sensitive"})
# The person asking whether a lapse makes them a bad parent, friend or person ("am I a terrible mum",
# "does that make me a bad friend"): a listener says they are not, unless harm is told in the message or
# the speaker's two lines before it (``_NOT_TO_REASSURE``).
_SELF_JUDGED = re.compile(
    r"(?:^|[.!?,]\s*)(?:am i|does (?:that|this|it) make me|have i been|was i) (?:just |really |such )?(?P<who>an? "
    r"(?:terrible|bad|awful|horrible|rubbish|crap|useless|selfish|shit|shitty|horrid|failure of an?|lousy) "
    r"(?:person|parent|mum|mom|mother|dad|father|friend|sister|brother|daughter|son|wife|husband|partner|"
    r"girlfriend|boyfriend|human(?: being)?|teacher|boss|grandparent|grandma|grandad|aunt|uncle|owner|"
    r"flatmate|housemate|colleague))\s*\?*(?=\s*(?:$|[.!?]))")
# Harm to someone, or the body, in the message: no feeling in it is waved through ("Is it normal to feel happy
# when he gets hurt?"), and whether a body's state is normal is no listener's to say ("numb after the surgery").
_HARM_DONE = (r"kill\w*|hit(?:ting)?|punch\w*|stab\w*|slap\w*|smack\w*|kick\w*|shov\w*|abus\w*|neglect\w*|"
              r"hurt(?:ing)? (?:him|her|them|someone|people|myself|you)|gets? hurt|revenge|beat\w* (?:him|her|them|up)")
_NOT_TO_REASSURE = re.compile(r"\b(?:" + _HARM_DONE + r"|jab|vaccin\w*|pills?|"
                              r"tablets?|meds|medication|dose|chemo|surgery|operation|injection|symptoms?|pain|arm|"
                              r"legs?|hands?|feet|foot|face|chest|head|stomach|scan|side effects?|flu|covid|virus|"
                              r"fever|period|(?:i'?m|i am|being|while|during|my|in|get|got|getting) pregnan\w*|pregnancy)\b")
# ... and in the speaker's two lines before it, only harm done or risk told rules it out: the body and grief
# words there are no reason to withhold it ("she was holding her hand the whole time" before "would it be weird
# to ask her at the funeral?"); a risk told earlier is the risk detector's, whose caring stance has no reassurance.
_HARM_BEFORE = re.compile(r"\b(?:" + _HARM_DONE + r"|suicid\w*|overdos\w*|self[- ]harm\w*|(?:cut|cutting|burn\w*) "
                          r"myself|starv\w*|purg\w*|vomit\w*|throw\w* up|pills?|tablets?|cheat\w*|steal\w*|stole|"
                          r"stalk\w*|spy\w*|lied|lying|gun|knife|drunk|drugs?)\b")
_NORMAL = {"normal": "It's completely normal", "okay": "It's completely okay", "ok": "It's completely okay"}
# Asking whether something done or planned looks foolish ("Is it weird that I haven't washed his bed yet?",
# "Would it be daft to try negotiating with him?", "Is that mad at my age?"): only the judges of looking odd,
# which a listener can stand behind; "bad", "wrong" or "selfish" weigh a deed, the model's to answer. The
# model's own answers judged against the person ("I'd say it's unusual and not normal ... It would be better
# if you did so now." to someone whose dog had just died).
_LOOKS_ODD = re.compile(r"(?:^|[.!?,]\s*)(?:do you think |would you say |honestly )?(?P<verb>is it|is that|would it be|"
                        r"would that be|is this) (?:a bit |kind of |really |totally )?(?P<judge>weird|strange|odd|silly|"
                        r"daft|mad|crazy|petty|dumb|stupid|ridiculous|cheesy|sad|pathetic|unhinged)"
                        r"(?: (?:that|if) (?:i|we)\b[^?.!]*| to [^?.!]*| (?:at my age|of me|for me))?"
                        r"\s*\?*(?=\s*(?:$|[.!?]))")
# ... unless what was done is a body's or a risk's business, or a wrong to someone: that is not waved through
# ("is it weird that I haven't eaten in three days?").
_NOT_WAVED = re.compile(r"\b(?:eat|ate|eaten|eating|food|sleep\w*|slept|drink\w*|drank|drunk|alcohol|wine|beer|"
                        r"vodka|drugs?|weed|smok\w*|cut\w*|burn\w*|starv\w*|purg\w*|vomit\w*|throw\w* up|weigh\w*|"
                        r"binge\w*|diet\w*|cheat\w*|lie|lied|lying|steal\w*|stole|spy\w*|track\w*|stalk\w*|"
                        r"read (?:his|her|their) \w+|gun|knife|die|died|dead|death|suicid\w*|alone|hide|hid|hiding|last|goodbye|"
                        r"notes?|letters?|give away|giving away|gave away|sell\w*|sold)\b")


def reassured(user_text: str, earlier: Sequence[str] = ()) -> str:
    """The answer to a question whether an ordinary feeling is all right (``_IS_IT``, ``_AM_I``): that it is,
    said back in their words ("It's completely normal to feel numb more than sad.", "I don't think you're
    wrong to be annoyed."), or to one whether a lapse makes them a bad person (``_SELF_JUDGED``: "I don't
    think you're a terrible parent."), or to one whether something done looks odd (``_LOOKS_ODD``: "I don't think
    it's weird at all."); "" when the message asks no such thing. ``earlier`` (the speaker's
    lines before, oldest first): harm told in the last two rules out reassurance as harm in the message does."""
    text = re.sub(r"\bi'm\b", "i am", spelled_out(canonical(user_text)).strip())
    # "is it bad that part of me is still excited?" asks about the person's own feeling
    text = re.sub(r"\b(?:a |some )?part of me (?:is|feels)\b", lambda m: "i am" if m.group(0).endswith("is") else "i feel",
                  text)
    if _NOT_TO_REASSURE.search(text):
        return ""
    before = [canonical(line) for line in list(earlier)[-2:]]  # harm told just before rules reassurance out too
    if (judged := _SELF_JUDGED.search(text)) is not None:
        if any(_HARM_BEFORE.search(line) for line in before):
            return ""
        return f"I don't think you're {judged.group('who')}."
    if (am := _AM_I.search(text)) is not None:
        if am.group("judge") not in _FEELING_JUDGES and am.group("act") is None:
            return ""  # "am I being unreasonable?" about something done: not a feeling to reassure
        act = " " + second_person(am.group("act")) if am.group("act") else ""
        return f"I don't think you're {am.group('judge')}{act}."
    if (it := _IS_IT.search(text)) is None:
        odd = _LOOKS_ODD.search(text)
        if odd is None or _NOT_WAVED.search(text) or any(_HARM_BEFORE.search(line) for line in before):
            return ""
        would = " would be" if odd.group("verb").startswith("would") else "'s"
        return f"I don't think it{would} {odd.group('judge')} at all."
    judge = it.group("judge")
    lead = _NORMAL.get(judge, f"It's not {judge} at all")
    # "that I feel guilty" is said as "to feel guilty": "that you feel guilty" would name their feeling for them
    act = it.group("act") if it.group("to") else re.sub(r"^am (still )?", r"\1be ", it.group("felt"))
    return f"{lead} to {second_person(act)}."


# A promise to tell the avatar how something to come turns out.
_WILL_TELL = re.compile(r"\b(?:let you know how|keep you posted|tell you how (?:it|they) (?:goes|go)|update you|"
                        r"report back)\b")


#: The opening families of a goodbye (``openings.family``): nothing is said back, and ``seeing_off`` closes.
SEEN_OFF = ("signed_off", "signed_off_gently")
_NIGHT = re.compile(r"\b(?:bed|sleep|night|goodnight|nighty|tonight)\b")
_OFF_TO = re.compile(r"\boff to (work|school|uni|class|college|the gym|my shift|practice|the office)\b")


def seeing_off(user_text: str) -> str:
    """The closing of a goodbye (``openings.signs_off``): "Sleep well." for the night, "I hope work goes well." for where
    they are off to, else an open door."""
    text = canonical(user_text)
    if _NIGHT.search(text):
        return "Sleep well."
    found = _OFF_TO.search(text)
    if found:
        return f"I hope {found.group(1).replace('my ', 'your ')} goes well."
    return "I'm here whenever you want to talk."


def closing(fam: str | None, user_text: str, *, said: str = "", previous_reply: str = "", seed: int = 0,
            earlier: Sequence[str] = ()) -> str:
    """A closing line for a reply of opening family ``fam``: varied by message, not in the previous reply,
    sharing as few words as possible with what the reply already says (``said``), and speaking of a
    gap only where the person (``user_text`` or ``earlier``) spoke of a loss."""
    if fam in SEEN_OFF:
        return seeing_off(user_text)
    group = _GROUP.get(fam or "", fam if fam in CLOSINGS else "plain")
    if group == "thanked" and _WILL_TELL.search(canonical(user_text)):
        return "I'll be rooting for you."  # "thanks, I'll let you know how it goes"
    options = CLOSINGS[group]
    if ahead(user_text):
        kept = tuple(line for line in options if not _HOW_IT_WENT.search(canonical(line)))
        options = (kept + _LOOKING_AHEAD if group in _CHEERFUL_GROUPS else kept) or options
    spoken = [canonical(line) for line in (*earlier[-3:], user_text)]
    for lines, told in _SAID_ONLY_AFTER:
        if not any(told.search(line) for line in spoken):
            options = tuple(line for line in options if line not in lines) or options
    start = int.from_bytes(hashlib.sha256(f"{seed}\2{user_text}".encode("utf-8", "replace")).digest()[:4], "big")
    taken = set(_WORD.findall(canonical(said)))
    previous = canonical(previous_reply)
    best, best_cost = "", None
    for i in range(len(options)):
        line = options[(start + i) % len(options)]
        if canonical(line) in previous:
            continue
        shared = set(_WORD.findall(canonical(line))) & taken
        # a content word said twice in one reply reads as a script ("No wonder you're upset. ... Anyone would be
        # upset."); a shared "you" or "that" hardly shows
        cost = len(shared) + 10 * len(shared - faults._STOP)
        if best_cost is None or cost < best_cost:
            best, best_cost = line, cost
    return best or options[start % len(options)]
