"""The pattern layer of the risk detector: first-person statements of suicidal thought, plans or
self-harm, read on the ``canonical`` text.

Patterns are precise rather than complete: they catch what is said plainly ("I want to die", "I've
been saving my pills", "I cut myself again") in one step and leave the indirect and the ambiguous to
the meaning layer. A match is dropped when the clause says it of someone else ("my friend wants to
die", "the character kills himself") or of an accident in the kitchen ("I cut myself chopping onions").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from e3rg_core.understanding.safety.text import matches_in, split_clauses

_PATTERNS: tuple[tuple[str, str], ...] = (
    ("explicit", r"\b(?:kill|killing|killed|hang|hanging|hanged|shoot|shooting|drown|drowning|off|offing|poison|poisoning) myself\b"),
    ("explicit", r"\bend(?:ing)? (?:it all|my (?:own )?life|everything|it (?:tonight|soon|for good|today|now|this week)|things(?! with\b| off with\b| between\b))"),
    ("explicit", r"\btak(?:e|ing) my (?:own )?life\b"),
    ("explicit", r"\b(?:commit|committing|attempt|attempted|attempting|contemplating|considering) suicide\b"),
    ("explicit", r"\bsuicidal\b"),
    ("explicit", r"\b(?:think|thinking|thought|thoughts) (?:about|of) (?:suicide|killing myself|dying|ending it|ending my life|taking my life)\b"),
    ("explicit", r"\bsuicide (?:note|letter|plan|attempt)\b"),
    ("explicit", r"\b(?:want|wanted|wanting|wish|wishing|plan|planning|going|ready|prepared|deserve|need) (?:to )?die\b(?! (?:of|from) (?:laugh|embarrass|shame|cute|boredom))"),
    ("explicit", r"\bi'?d rather (?:be dead|die)\b(?! than)"),
    ("passive_ideation", r"\bwish(?:ed)? i (?:was|were|had) (?:dead|never been born|never born|gone|not here)\b"),
    ("passive_ideation", r"\b(?:don't|do not|never|no longer) (?:want|wish|care) to (?:live|be alive|exist|be here anymore|wake up|keep living|go on living|be around anymore)\b"),
    ("passive_ideation", r"\b(?:hope|wish|pray|praying) (?:that )?i (?:don't|do not|never|won't|will not|wouldn't) wake up\b"),
    ("passive_ideation", r"\b(?:sleep|fall asleep|go to sleep|close my eyes) and (?:never|not) wake up\b"),
    ("passive_ideation", r"\bno (?:reason|point) (?:to|in|of) (?:live|living|going on|being alive|being here|existing|staying alive|carrying on|me being here)\b"),
    ("passive_ideation", r"\bcan'?t (?:go on|keep going|keep living|do this) (?:living|anymore|any more|much longer)\b"),
    ("passive_ideation", r"\b(?:stop|cease) (?:existing|being alive)\b"),
    ("passive_ideation", r"\b(?:disappear|vanish|not exist|not be here) (?:forever|for good|permanently)\b"),
    ("passive_ideation", r"\btired of (?:living|being alive|existing)\b"),
    ("burden_hopelessness", r"\bbetter off (?:dead|without me|if i (?:was|were|'?m) (?:gone|dead|not here))\b"),
    ("burden_hopelessness", r"\b(?:no ?one|nobody|noone) (?:would|will|'?d) (?:miss|notice|care)(?: me| if i (?:was|were|died|disappeared|'?m gone))"),
    ("burden_hopelessness", r"\b(?:everyone|everybody|my family|my kids|the world|people|they)(?: would|'?d| will) be (?:better|happier|fine|relieved|free)(?: off)? (?:without me|if i (?:was|were|'?m) (?:gone|dead|not here)|when i'?m gone)\b"),
    ("self_harm", r"\bself[\s-]*harm(?:ing|ed)?\b"),
    ("self_harm", r"\b(?:hurt|hurting|harm|harming|cut|cutting|burn|burning|burnt|burned|punish|punishing|scratch|scratching|starve|starving) (?:myself|my (?:arms?|wrists?|legs?|thighs?|skin|stomach))\b"),
    ("self_harm", r"\b(?:cut|cutting|slit|slitting|slash|slashing) (?:my )?wrists?\b"),
    ("self_harm", r"\b(?:relapsed|relapse|relapsing) (?:on |into |with )?(?:self-harm|cutting|hurting myself)\b"),
    # "overdose", not "overdose patients" or "overdose awareness" (the word naming other people's cases)
    ("plan_means", r"\boverdos(?:e|ed|ing)\b(?! (?:patients?|victims?|deaths?|cases?|calls?|awareness|prevention|crisis|"
                   r"epidemic|statistics|figures|rates?|reversal|kits?|training|ward|unit)|"
                   r" on (?:coffee|caffeine|sugar|chocolate|sweets|candy|cake|carbs|pizza|tv|netflix|sun|vitamin \w+))"),
    ("plan_means", r"\b(?:saving|saved|stockpiling|stockpiled|hoarding|hoarded|collecting|collected|counting|counted|stashing|stashed) (?:up )?(?:all )?(?:of )?(?:my |the |his |her )?(?:pills|tablets|meds|medication|medicine|sleeping pills|painkillers|paracetamol|insulin)\b"),
    ("plan_means", r"\blethal (?:dose|amount|quantity)\b"),
    ("plan_means", r"\b(?:how many|enough) (?:pills|tablets|paracetamol|sleeping pills|painkillers)\b[^.?!]{0,40}\b(?:die|dead|kill|lethal|not wake|never wake|end it|do it|enough)\b"),
    ("plan_means", r"\b(?:painless|quickest|easiest|best) way to (?:die|go|end it|kill(?! (?:the|a|an|this|that|these|those|"
                   r"some|all|it|them|him|her|time|weeds|fleas|ants|slugs|mould|mold|germs|bacteria|boss)\b))\b"),
    ("reckless_intent", r"\b(?:stop|stopped|stopping|quit|quitting) (?:taking )?my (?:insulin|meds|medication|medicine|pills)\b[^.?!]{0,50}\b(?:on purpose|deliberately|die|don't care|so i|happen)\b"),
    ("reckless_intent", r"\b(?:crash|drive|swerve|steer|driving|crashing|swerving) (?:my car |the car )?(?:into|off)\b[^.?!]{0,30}\b(?:on purpose|wall|tree|traffic|cliff|bridge|truck|lorry)\b"),
    ("reckless_intent", r"\b(?:walk|walking|step|stepping|jump|jumping) (?:into|in front of|off|from) (?:the |a )?(?:traffic|train|bus|truck|lorry|bridge|roof|building|cliff|ledge|platform)\b"),
    ("farewell", r"\bif i'?m (?:not|no longer) (?:here|around|alive) (?:next|tomorrow|by|after|anymore)\b"),
    ("farewell", r"\b(?:after|when) i'?m (?:gone|dead|not here)\b"),
    ("farewell", r"\b(?:goodbye|farewell) (?:letters?|notes?) (?:to|for) (?:everyone|the people i love|my (?:family|kids|"
                 r"children|parents|mum|mom|dad|wife|husband|partner|son|daughter|sister|brother|friends))\b"),
)
_COMPILED = tuple((category, re.compile(pattern)) for category, pattern in _PATTERNS)

# Someone else, or a story, is the subject: "my brother tried to kill himself", "the character wants to die".
_OTHERS = re.compile(
    r"\b(?:he|she|they|his|her|their|him|them|someone|somebody|people|character|characters|novel|story|book|film|"
    r"movie|essay|poem|song|lyrics|screenplay|script|game|protagonist|villain|hero|heroine|memoir|biography|"
    r"autobiography|documentary|podcast|article|episode|series|news|(?:a|the|this|that) (?:man|woman|guy|girl|boy|kid|"
    r"teenager|lad|lady|soldier|survivor)|detective|narrator|killer|victim|main character|my (?:friend|brother|"
    r"sister|mum|mom|mother|dad|father|uncle|aunt|cousin|grandma|grandpa|grandfather|grandmother|son|daughter|"
    r"partner|husband|wife|boyfriend|girlfriend|colleague|roommate|flatmate|neighbou?r|student|patient|client|"
    r"friend's|best friend|teammate)|(?:my )?(?:legs|feet|arms|back|body|phone|battery|laptop|computer|car|plants?|"
    r"team|ears|brain cells))\b"
)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|myself|im)\b")
# An accident or chore, not harm done on purpose: "I cut myself chopping onions", "burned myself on the oven".
_ACCIDENT = re.compile(
    r"\b(?:shaving|cooking|chopping|slicing|oven|stove|hob|iron|kettle|pan|knife slipped|accident|accidentally|"
    r"by accident|onions?|kitchen|baking|garden|gardening|paper cut|sunburn|sunburnt|hair|bread knife|tray|"
    r"soldering|workshop|crossing|hike|hiking|bungee|skydiv\w*|zip ?line|fare|stop|station|timetable)\b"
)
# Medicine kept on schedule, not saved up: "I counted my pills to make sure I didn't miss a dose".
_ROUTINE = re.compile(
    r"\b(?:miss(?:ed)? (?:a|my|any) (?:dose|pill|tablet)s?|next dose|daily dose|morning dose|refill|prescription|"
    r"pharmac\w+|chemist|organi[sz]er|pill ?box|as prescribed|dosette|blister pack|on schedule)\b"
)
# A game's own words: dying, killing and respawning there is play ("accidentally killed myself with my own
# grenade"). Also one of the detector's cues (``detector.cues``).
PLAY = re.compile(
    r"\b(?:boss|bosses|respawn\w*|spawn\w*|sniper|npc|xp|speedrun\w*|checkpoint|level \d+|final level|monopoly|"
    r"chess|fortnite|minecraft|elden ring|dark souls|zelda|mario|raid|quest|lobby|controller|console|ps5|xbox|"
    r"video game|my character|one-?shot|ranked|dnd|d&d|campaign|grenade|warzone|call of duty|apex|valorant|"
    r"roblox|the sims|hardcore mode|game over|in[- ]game)\b")
# Death feared in a moment now past ("I genuinely thought I was going to die" on a bad flight), or laughed at ("I was
# going to die laughing"): no wish to die. Not the present ("I feel like I'm going to die", left to the other layers).
_FEARED = re.compile(r"\b(?:thought|felt like|was sure|was convinced|were sure|were convinced)\s+(?:i|we)\s+(?:was|were)\s+"
                     r"(?:\w+\s+)?going to die\b|\bgoing to die (?:laughing|of (?:laughter|laughing|embarrassment|shame))\b")
_CLAUSE = re.compile(r"[.!?;\n]+|,\s*(?:but|and then|so)\b")
# A preference said by comparison ("I'd rather jump off a cliff than give the best man's speech"): the words name
# what the writer would rather not do, not what they mean to do; the meaning layer reads the message instead.
_RATHER = re.compile(r"\brather\b")
_THAN = re.compile(r"\bthan\b")


@dataclass(frozen=True)
class PatternMatch:
    category: str  # a risk category, e.g. "self_harm"
    matched: str  # the words that matched


def _said_of_others(clause: str, start: int) -> bool:
    before = clause[:start]
    others = list(_OTHERS.finditer(before))
    if not others:
        return False
    return _FIRST_PERSON.search(before[others[-1].end():]) is None


# A fragment of a few words with no subject of its own ("Overdose.", "Suicide, they said."): it goes on with
# the clause before it, and says no more of the writer than that clause did; not one that says when
# ("Overdose tonight."), which is a plan.
_FRAGMENT_WORDS = 3
_WHEN = re.compile(r"\b(?:tonight|today|tomorrow|now|soon|later|this (?:week|weekend|morning|evening)|next|when|after|"
                   r"before|by|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b")


def _goes_on_about_others(clauses: list[str], at: int) -> bool:
    """Is ``clauses[at]`` a fragment after a clause said of someone else ("My brother died last month. Overdose.")?"""
    clause = clauses[at]
    if at == 0 or len(clause.split()) > _FRAGMENT_WORDS or _FIRST_PERSON.search(clause) or _WHEN.search(clause):
        return False
    before = clauses[at - 1]
    return _said_of_others(before, len(before))


def match(text: str) -> PatternMatch | None:
    """The first first-person risk statement in ``text`` (already ``canonical``), or ``None``."""
    clauses = split_clauses(text, _CLAUSE)
    for at, category, found in matches_in(clauses, _COMPILED):
        clause = clauses[at]
        if _said_of_others(clause, found.start()) or _goes_on_about_others(clauses, at):
            continue
        if category in ("self_harm", "reckless_intent") and _ACCIDENT.search(clause):
            continue
        if found.group(0).startswith("killed ") and (PLAY.search(clause) or _ACCIDENT.search(clause)):
            continue  # "killed myself" said of the past is a game or an accident: nobody reports their own death
        if _RATHER.search(clause, 0, found.start()) and _THAN.search(clause, found.end()):
            continue  # a comparison: "I'd rather walk into the sea than mark another essay"
        if found.group(0).startswith("going") and _FEARED.search(clause):
            continue  # fear of dying told after it passed, or a laugh: "the turbulence was so bad I thought I was going to die"
        if category == "plan_means" and found.group(0).startswith(("count", "collect")) \
                and _ROUTINE.search(clause) and not re.search(r"\b(?:lethal|enough|all of)\b", clause):
            continue  # counted to keep to the schedule; saving or stockpiling them is never routine
        return PatternMatch(category, found.group(0))
    return None
