"""Harm done to the writer by another person: a disclosure of abuse, assault or threats.

"My husband hit me again last night" is not a risk of suicide, but it is a safety matter, and the
reply a chat model writes to it ("That sounds so frustrating") can fail the person badly. A caring
listener believes them, says it is not their fault, asks whether they are safe now and says where
help is, without telling them what to do. ``disclosed`` finds such a disclosure on the ``canonical``
text; ``harm_sentences`` is the avatar's answer, written from parts like the crisis response.

The patterns are precise rather than complete, like the risk patterns: the writer is the one harmed
("... hit me", "I was raped", "he threatened to kill me", "he won't let me see my friends"), by a
person, not in a game, a sport, a joke or a denial ("he would never hit me").
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from e3rg_core.understanding.safety.text import canonical, clause_matches

# Who harms: a person close to the writer, or anyone named as a person.
_CLOSE = (r"husband|wife|partner|boyfriend|girlfriend|bf|gf|fianc[eé]e?|ex|ex-?husband|ex-?wife|ex-?partner|"
          r"ex-?boyfriend|ex-?girlfriend|dad|father|mum|mom|mother|stepdad|stepfather|step-?dad|stepmum|stepmom|"
          r"stepmother|parents|brother|sister|stepbrother|uncle|aunt|grandfather|grandad|grandpa|cousin|son|"
          r"daughter|carer|caregiver|husband's \w+|wife's \w+|mother-in-law|father-in-law|boss|teacher|coach|"
          r"landlord|flatmate|roommate|neighbou?r|manager|pastor|priest")
_AGENT = (rf"(?:he|she|they|(?:(?:my|her|his|our|the) )?(?:{_CLOSE})|(?:a|some|this|that|the) (?:man|guy|woman|stranger|bloke|lad|group|"
          r"gang|teacher|coach|customer|patient|driver)|(?:the|some|these|those|two|three|a few|a group of|older) "
          r"(?:boys|girls|kids|lads|men|women|guys|bullies|older kids|students)|bullies|someone|somebody|people at \w+)"
          # where they are: "the boys at school hit me"
          r"(?: (?:at|in|from|on) (?:school|work|college|uni|church|the \w+|my \w+))?"
          # who they are to the writer: "the man I live with"
          r"(?: (?:i live with|i'?m with|i'?m seeing|i'?m married to|i was with|i stay with))?")
# What they did to the writer. "kicked me out", "pushed me to", "beat me at chess" and "grabbed me a coffee"
# are other things (excluded below).
_PHYSICAL = (r"hit|hits|hitting|slap|slapped|slaps|slapping|punch|punched|punches|punching|kick|kicked|kicks|"
             r"kicking|beat|beats|beating|choke|choked|chokes|choking|strangle|strangled|strangles|strangling|shove|"
             r"shoved|shoves|shoving|push|pushed|pushes|grab|grabbed|grabs|drag|dragged|drags|"
             r"(?:throw|threw|throws) (?:\w+ ){1,3}at|smack|smacked|smacks|headbutted|burn|burned|burnt|stab|stabbed|"
             r"attack|attacked|attacks|assault|assaulted|assaults|abuse|abused|abuses|abusing|hurt|hurts|hurting|bruised|"
             r"bite|bites|bit|biting|scratch|scratches|scratched|pinned|pins|jumped|spat on|spits on")
_SEXUAL = (r"rape|raped|rapes|raping|molest|molested|molests|molesting|groped|gropes|sexually (?:assaulted|abused|harassed)|"
           r"forced himself on|forced herself on|forces himself on|drugged|spiked")
_GAP = (r"(?: (?:always|still|just|even|also|sometimes|often|again|keeps?|kept|has|had|'s|has been|have been|would|"
        r"used to|started|then|gets (?:angry|drunk|mad|jealous|violent) and|got (?:angry|drunk|mad|jealous|violent) and))*")
_NEGATION = re.compile(r"\b(?:never|not|n't|didn't|doesn't|don't|wouldn't|won't|hasn't|hadn't|isn't|wasn't|no one|nobody)\b|n't\b")

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((kind, re.compile(p)) for kind, p in (
    ("sexual", rf"\b{_AGENT}{_GAP} (?:{_SEXUAL}) me\b"),
    ("sexual", r"(?:\bi |^)(?:was|got|have been|'?ve been|am being|'?m being|keep getting|had been) (?:raped|molested|groped|"
               r"sexually (?:assaulted|abused|harassed)|drugged|spiked)\b"),
    ("sexual", rf"\b{_AGENT}{_GAP} (?:touched|touches|touching) me (?:inappropriately|without|when i|while i|at night|"
               r"in my sleep|down there|there|where)\b"),
    ("sexual", r"\b(?:wouldn'?t|didn'?t|won'?t|doesn'?t) stop (?:even )?(?:when|after|though) i (?:said|told him|told her|"
               r"begged|asked)(?: him| her)? (?:no|to stop)\b"),
    ("sexual", r"\b(?:made|makes|forced|forces|forcing) me (?:to )?(?:have sex|do sexual|do things i didn'?t want|"
               r"sleep with him|sleep with her)\b"),
    ("physical", rf"\b{_AGENT}{_GAP} (?:(?:{_PHYSICAL}) and )?(?:{_PHYSICAL}) me\b(?! (?:up|back|under the table|(?:so |too )?hard(?! against| into| onto| down| in the)|to (?!the (?:ground|floor|wall|door|bed)|the edge)|to (?:do|be|try|go|get|apply|finish|"
                 r"study|work|keep)|into (?:applying|doing|trying|going|buying)|a |an |some |the |with (?:an? idea|"
                 r"a question|the news|facts|questions)|at |in (?:chess|tennis|the race|the final)|emotionally|"
                 r"(?:so )?(?:much|deeply|badly) (?:by|with|when) (?:what|saying|his words|her words)))"),
    ("physical", r"(?:\bi |^)(?:was|got|have been|'?ve been|am being|'?m being|keep getting) (?:beaten(?: up)?|attacked|"
                 r"assaulted|stabbed|mugged|strangled|choked|punched|jumped|abused|physically abused)\b"
                 r"(?! (?:by (?:a |the )?(?:dog|bees?|wasps?|mosquito\w*|car|ball|wave|flu|virus|bug|cold))|"
                 r"(?:at|in) (?:chess|tennis|the race|the final|the game))"),
    ("physical", r"\b(?:pinned|held|holds|pins) me (?:down|against)\b"),
    ("physical", r"\b(?:someone|somebody|a (?:man|guy|stranger)|he|she|they) (?:spiked|put something in) my drinks?\b"
                 r"|\bmy drinks? (?:was|got) spiked\b"),
    ("physical", r"\b(?:black eye|bruises|split lip|broke my (?:arm|wrist|nose|rib|ribs|jaw))\b[^.?!]{0,30}\b(?:he|she|"
                 r"my (?:husband|wife|partner|boyfriend|girlfriend|bf|gf|dad|father|mum|mom|mother|stepdad))\b"),
    ("threat", rf"\b{_AGENT}{_GAP} (?:threatened|threatens|threatening|said (?:he|she|they)'?d|says (?:he|she|they)'?ll|"
               r"swore (?:he|she|they)'?d) (?:to )?(?:kill|hurt|hit|beat|"
               r"stab|shoot|strangle|burn|rape) me\b"),
    ("threat", r"\b(?:said|says|told me|swore|threatened that) (?:he|she|they)(?:'?d|'?ll| would| will| is going to| was "
               r"going to) (?:kill|hurt|hit|beat|stab|shoot|strangle|burn|rape|break my \w+) me\b"),
    ("threat", rf"\b(?:scared|afraid|terrified|frightened|worried)(?: that| of what)? {_AGENT} (?:will|'?ll|would|"
               r"might|is going to|'?s going to|gonna|could) (?:hurt|hit|kill|beat|attack|rape|do something to) me\b"),
    ("threat", rf"\b(?:i'?m|i am|im) (?:so |really |very |genuinely |actually )?(?:scared|afraid|terrified|frightened) "
               rf"(?:of|to go home to|to be alone with) my (?:{_CLOSE})\b"),
    ("control", r"\b(?:he|she|my (?:husband|wife|partner|boyfriend|girlfriend|bf|gf|fianc[eé]e?))\b(?:[^.?!]{0,50}?)? (?:won'?t|"
                r"doesn'?t|does not|will not|never) let(?:s)? me (?:leave|go out|see (?:my )?(?:friends|family|mum|mom|"
                r"parents|sister|brother)|have (?:my own )?(?:money|a phone|my phone|a bank account|my passport)|"
                r"talk to (?:anyone|my friends|my family)|work)\b"),
    ("control", rf"\b{_AGENT}{_GAP} (?:locks|locked|lock) me (?:in|out of the house|up)\b"),
    ("control", r"\b(?:he|she|my (?:husband|wife|partner|boyfriend|girlfriend|bf|gf))(?: \w+)? (?:takes|took|keeps|"
                r"kept|hides|hid) (?:all )?my (?:phone|keys|passport|bank card|money|wages|salary|pay|car keys)\b[^.?!]{0,40}"
                r"\b(?:so i can'?t|away|from me|every|whenever|when i|gives me|and gives|lets me have)\b"),
))

# Not harm: a game, a sport or a joke ("my brother beat me at chess", "she hit me with a snowball lol").
_PLAY = re.compile(
    r"\b(?:chess|tennis|football|soccer|rugby|hockey|basketball|boxing|sparring|spar|karate|judo|taekwondo|mma|"
    r"wrestling|training|match|race|game|games|video game|fortnite|minecraft|cards|scrabble|monopoly|quiz|golf|"
    r"snowball|pillow|water balloon|tag|dodgeball|nerf|paintball|laser tag|arm wrestl\w*|thumb war|tickl\w*|"
    r"rehearsal|play|the scene|stage|character|novel|story|film|movie|book|dream|dreamt|dreamed|nightmare|"
    r"baby|toddler|puppy|kitten|dog|cat|horse|little (?:brother|sister|cousin|one)|in (?:his|her|their) sleep)\b|\b(?:lol|lmao|haha\w*|jk|kidding)\b|\U0001f602|\U0001f923")
# ... unless it says it is meant
_EARNEST = re.compile(r"\b(?:not (?:joking|kidding)|no joke|i mean it|for real|seriously|really hurt|bruise\w*|bleed\w*)\b")
_CLAUSE = re.compile(r"[.!?;\n]+|,\s*(?:but|and then|so)\b")
# The one who did it is someone the writer lives or deals with (a partner, family, "he"): domestic abuse.
_KNOWN = re.compile(rf"\b(?:he|she|{_CLOSE})\b")
# ... a parent or another adult in charge of a child: the writer may be young, so the child lines are named too.
_ELDER = re.compile(r"\b(?:dad|father|mum|mom|mother|stepdad|stepfather|step-?dad|stepmum|stepmom|stepmother|parents|"
                    r"uncle|aunt|grandfather|grandad|grandpa|teacher|coach|carer|caregiver)\b")


@dataclass(frozen=True)
class HarmMatch:
    kind: str  # "physical" (by someone close), "assault" (by a stranger), "sexual", "threat" or "control"
    matched: str  # the words that matched (by meaning: the nearest expression of the bank)
    by_meaning: bool = False  # read by ``HarmMeaning``, not a pattern: the answer does not presume

    @property
    def by_elder(self) -> bool:
        """Done by a parent, a teacher or another adult in charge of a child."""
        return _ELDER.search(self.matched) is not None


def disclosed(text: str) -> HarmMatch | None:
    """The first disclosure in ``text`` (already ``canonical``) that another person harms, threatens or
    controls the writer, or ``None``."""
    for clause, kind, found in clause_matches(text, _CLAUSE, _PATTERNS):
        if kind != "control" and _NEGATION.search(found.group(0)):
            continue  # "he would never hit me", "she didn't hurt me"
        if kind in ("physical", "threat") and _PLAY.search(clause) and not _EARNEST.search(clause):
            continue
        if kind == "physical" and re.search(r"\bkick\w* me out\b", clause):
            continue  # thrown out of home: a hard thing, but not violence
        if kind == "physical" and re.search(r"\bbeats? me to\b", clause[found.start():found.end() + 4]):
            continue  # "someone beat me to it"
        if kind == "physical" and re.search(r"\bhurt(?:s|ing)? me\b", found.group(0)) and not re.search(
                r"\b(?:physically|bruise\w*|bleed\w*|hit|kick\w*|punch\w*|slap\w*|again|every time|when (?:he|she) "
                r"drinks|drunk)\b", clause):
            continue  # "he hurt me when he left" is a heartbreak, said in the same words
        if kind == "physical" and not _KNOWN.search(found.group(0)):
            kind = "assault"  # by a stranger, or not said by whom: no domestic abuse line
        return HarmMatch(kind, found.group(0))
    return None


@lru_cache(maxsize=1)
def harm_bank() -> dict[str, Any]:
    """``data/harm_bank.json``: expressions of harm by kind, and look-alikes (written for e3rg)."""
    raw = json.loads(resources.files("e3rg_core.understanding").joinpath("data/harm_bank.json").read_text("utf-8"))
    if not (isinstance(raw.get("harm"), dict) and isinstance(raw.get("safe"), list)):
        raise ValueError("harm_bank.json needs a 'harm' table of kind -> expressions and a 'safe' list")
    return raw


# Where meaning alone calls a message a disclosure: the mean cosine of its 3 nearest expressions of harm is at
# least SIM and beats that of its 3 nearest look-alikes and ordinary lines by MARGIN. Chosen on the dev sets
# (harm_dev, harm_dev2: 0.46 of their disclosures alone, 0.048 of their look-alikes, none of 2,614 other
# bench messages); patterns and meaning together, held-out read once: recall 0.357 -> 0.529, look-alikes
# 0 -> 0.014.
MEANING_SIM, MEANING_MARGIN = 0.5, 0.02
MEANING_MIN_WORDS = 4


class HarmMeaning:
    """Disclosures said in other words than the patterns know ("I told the doctor I fell. I didn't fall."):
    the message's sentence embedding against ``harm_bank.json``, with the risk bank's look-alikes and
    ordinary lines (``safe``: their unit vectors from the same encoder) on the safe side."""

    def __init__(self, encoder: Any, *, safe: Any | None = None, k: int = 3) -> None:
        bank = harm_bank()
        pairs = [(kind, canonical(t)) for kind, items in bank["harm"].items() for t in items]
        self.encoder, self.k, self._np = encoder, k, encoder.np
        self._kinds = [kind for kind, _ in pairs]
        self._texts = [t for _, t in pairs]
        self._harm = encoder.embed(self._texts)
        own = encoder.embed([canonical(t) for t in bank["safe"]])
        self._safe = own if safe is None else self._np.vstack([own, safe])

    def _top(self, sims: Any) -> float:
        k = min(self.k, sims.shape[-1])
        return float(self._np.sort(sims)[-k:].mean())

    def disclosed(self, text: str) -> HarmMatch | None:
        """A disclosure in ``text`` (canonical) by its meaning, with the nearest expression's kind, or ``None``."""
        if len(text.split()) < MEANING_MIN_WORDS:
            return None
        vector = self.encoder.embed([text])[0]
        harm_sims = self._harm @ vector
        harm, safe = self._top(harm_sims), self._top(self._safe @ vector)
        if harm < MEANING_SIM or harm - safe < MEANING_MARGIN:
            return None
        nearest = int(self._np.argmax(harm_sims))
        return HarmMatch(self._kinds[nearest], self._texts[nearest], by_meaning=True)


#: Where help is, by kind of harm (said at the end of the answer; ``[safety]`` resources localise the
#: suicide line only).
RESOURCES = {
    "sexual": ("If you're in danger right now, please call your local emergency number. You can talk to someone "
               "at any hour: in the US call RAINN on 1-800-656-4673, in England and Wales Rape Crisis on "
               "0808 500 2222, or find support near you at findahelpline.com."),
    "assault": ("If you're hurt or in danger right now, please call your local emergency number. You can find "
                "support near you at findahelpline.com."),
    "family": ("If you're in danger right now, please call your local emergency number. If you're young, "
               "Childline on 0800 1111 in the UK and Childhelp on 1-800-422-4453 in the US are there at any hour; "
               "adults can call the domestic abuse lines, 1-800-799-7233 in the US and 0808 2000 247 in the UK, "
               "or find a service near you at findahelpline.com."),
    "abuse": ("If you're in danger right now, please call your local emergency number. You can talk to someone "
              "in confidence: in the US call the National Domestic Violence Hotline on 1-800-799-7233, in the UK "
              "the National Domestic Abuse Helpline on 0808 2000 247, or find a service near you at "
              "findahelpline.com."),
}
_OPENINGS = {
    "physical": ("I'm so sorry. Nobody has the right to hurt you, and it is not your fault.",
                 "I'm really sorry that's happening to you. You don't deserve to be hurt, and it isn't your fault."),
    "assault": ("I'm so sorry. That must have been frightening, and none of it is your fault.",
                "I'm really sorry that happened to you. Nobody had the right to hurt you."),
    "sexual": ("I'm so sorry that happened to you. It was not your fault, and I'm glad you told me.",
               "Thank you for trusting me with this. What happened to you is not your fault."),
    "threat": ("That sounds frightening, and your fear makes sense. You deserve to feel safe.",
               "I'm so sorry. Being threatened like that is frightening, and it is not your fault."),
    "control": ("That isn't okay, and it isn't your fault. You deserve to see the people you love and make your own choices.",
                "I'm sorry. Being kept from your own life like that is a kind of harm, and it isn't your fault."),
}
_ASK = {
    "physical": ("Are you safe right now, and are you hurt?", "Are you somewhere safe right now?"),
    "assault": ("Are you safe right now, and are you hurt?", "Are you somewhere safe now, and has anyone looked after you?"),
    "sexual": ("Are you safe right now, and is there someone you trust who can be with you?",
               "Are you somewhere safe right now?"),
    "threat": ("Are you safe right now?", "Are you somewhere safe right now, away from them?"),
    "control": ("Do you feel safe at home?", "Are you safe where you are right now?"),
}
_END = ("I'm here, and we can take this one step at a time.",
        "Whatever you decide to do, I'm here to listen.")


# Read by meaning alone, the answer asks rather than presumes.
_TENTATIVE = ("I might be reading this wrong, but it sounds like someone may be hurting or frightening you. "
              "If so, none of it is your fault.",
              "I may have this wrong, but what you said worries me: it sounds like someone may be harming you, "
              "and that is never your fault.")


def harm_sentences(text: str, kind: str, *, check_in: str = "", tentative: bool = False) -> list[str]:
    """The avatar's answer to a disclosure of ``kind`` in ``text``, one spoken piece at a time; ``check_in``
    (the question about suicide, when the message also came near that) is asked before the end."""
    if kind not in _OPENINGS:
        raise ValueError(f"unknown kind of harm {kind!r}; one of {', '.join(_OPENINGS)}")
    pick = int.from_bytes(hashlib.sha256(text.encode("utf-8", "replace")).digest()[:4], "big")
    found = disclosed(canonical(text))
    young = kind in ("physical", "threat", "control") and found is not None and found.by_elder
    resources = RESOURCES["family" if young else kind if kind in RESOURCES else "abuse"]
    opening = _TENTATIVE[pick % 2] if tentative else _OPENINGS[kind][pick % 2]
    parts = [opening, _ASK[kind][(pick // 2) % 2], resources]
    if check_in:
        parts.append(check_in)
    parts.append(_END[(pick // 4) % 2])
    return parts


def answered_recently(listener_lines: list[str], *, turns: int = 3) -> bool:
    """One of the avatar's last ``turns`` replies was this answer (it says one of ``RESOURCES``): the next
    message about it gets a calm reply, not the same paragraph again."""
    return any(said in line for line in listener_lines[-turns:] for said in RESOURCES.values())
