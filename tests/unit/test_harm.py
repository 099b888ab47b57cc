"""Harm done to the writer by someone else (``safety.harm``): found, told apart from its look-alikes, and
answered with care on every path the risk detector serves (patterns only: no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e3rg_core.types import RiskAssessment, Utterance
from e3rg_core.understanding.safety import RiskDetector, canonical, crisis_sentences
from e3rg_core.understanding.safety.harm import disclosed, harm_sentences

DEV = Path(__file__).resolve().parents[2] / "bench" / "data" / "harm_dev.jsonl"


@pytest.mark.parametrize("text, kind", [
    ("My wife slapped me again tonight.", "physical"),
    ("my stepdad used to kick me when i was little", "physical"),
    ("Some guy attacked me outside the pub.", "assault"),
    ("i was raped last year and never told anyone", "sexual"),
    ("He said he'd kill me if I told anyone.", "threat"),
    ("I'm scared he will hurt me when he finds out.", "threat"),
    ("My boyfriend won't let me see my family.", "control"),
])
def test_a_disclosure_is_found_with_its_kind(text, kind):
    found = disclosed(canonical(text))
    assert found is not None and found.kind == kind, found


@pytest.mark.parametrize("text", [
    "My dad beat me at chess again, he's unbeatable.",
    "Somebody beat me to the last ticket.",
    "hit me up when you get home",
    "It finally hit me that she's gone.",
    "He hurt me so much when he walked out.",
    "My husband would never hit me.",
    "My sister's husband hits her and I don't know how to help.",
    "She hit me with a snowball lol",
    "My parents kicked me out last week.",
    "My mum's going to kill me when she sees this mess.",
    "My trainer pushes me hard but I love it.",
])
def test_its_look_alikes_are_not(text):
    assert disclosed(canonical(text)) is None


def test_the_dev_set():
    rows = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    harm = [disclosed(canonical(r["text"])) is not None for r in rows if r["harm"]]
    safe = [disclosed(canonical(r["text"])) is not None for r in rows if not r["harm"]]
    assert len(harm) >= 25 and len(safe) >= 25
    assert sum(harm) / len(harm) >= 0.9  # measured 1.0 (bench/reports/situations.json)
    assert sum(safe) / len(safe) <= 0.1  # measured 0.0


def test_the_detector_answers_harm_as_a_crisis_with_its_own_response():
    detector = RiskDetector(None)  # patterns only
    text = "My husband hit me again last night."
    risk = detector.assess(text)
    assert (risk.level, risk.category, risk.situation, risk.sources) == ("crisis", "harm", "physical", ("harm",))
    said = " ".join(crisis_sentences(text, risk))
    assert "your fault" in said and "safe" in said and "1-800-799-7233" in said
    assert "suicide" not in said and "ending your life" not in said and "988" not in said


def test_a_risk_of_suicide_keeps_the_crisis_response():
    risk = RiskDetector(None).assess("he hits me every day and I want to die")
    assert risk.level == "crisis" and risk.category == "explicit" and not risk.situation


def test_the_harm_response_is_not_repeated_at_once():
    detector = RiskDetector(None)
    first = "My boyfriend choked me during a fight."
    reply = " ".join(crisis_sentences(first, detector.assess(first)))
    history = (Utterance("speaker", first), Utterance("listener", reply))
    again = detector.assess("he also hit me last week", history)
    assert again.level == "care" and again.situation == "physical"


def test_harm_near_a_risk_of_suicide_asks_about_both():
    near = RiskAssessment(level="crisis", category="passive_ideation", sources=("harm",), situation="physical")
    said = crisis_sentences("he hits me and I'm so tired of all of it", near)
    assert any("safe" in s for s in said) and any("hurting yourself" in s or "ending your life" in s for s in said)


def test_every_kind_has_its_answer_and_an_unknown_one_is_refused():
    for kind in ("physical", "assault", "sexual", "threat", "control"):
        parts = harm_sentences("something happened", kind)
        assert len(parts) >= 4 and all(p.strip() for p in parts)
    with pytest.raises(ValueError, match="physical"):
        harm_sentences("x", "robbery")


def test_a_parent_or_teacher_doing_it_names_the_child_lines_too():
    said = " ".join(harm_sentences("my dad hits me when he's angry", "physical"))
    assert "Childline" in said and "1-800-799-7233" in said
    assert "Childline" not in " ".join(harm_sentences("my boyfriend hits me", "physical"))
    assert disclosed(canonical("the boys at school hit me every day")).kind == "assault"  # bullies: no domestic abuse line
