"""An emergency of the body or a panic attack now (``safety.medical``): found, told apart from figures of
speech, and answered by sending for help (patterns only: no model)."""

from __future__ import annotations

import pytest

from e3rg_core.types import RiskAssessment, Utterance
from e3rg_core.understanding.safety import RiskDetector, canonical, crisis_sentences
from e3rg_core.understanding.safety.medical import medical_sentences, urgent


@pytest.mark.parametrize("text, kind", [
    ("I've had a pain in my chest for the last hour.", "medical"),
    ("cant breathe properly, my inhaler isnt helping", "medical"),
    ("Mum's speech is slurred and her face is drooping.", "medical"),
    ("My brother collapsed at the bus stop.", "someone"),
    ("My partner isn't breathing!", "someone"),
    ("I'm having a panic attack on the train.", "panic"),
    ("Should I be worried that my chest hurts when I walk uphill?", "ask"),
])
def test_an_emergency_is_found_with_its_kind(text, kind):
    found = urgent(canonical(text))
    assert found is not None and found.kind == kind, found


@pytest.mark.parametrize("text", [
    "This deadline is so tight I can't breathe.",
    "I laughed so hard I couldn't breathe lol",
    "Collapsed into bed at nine, what a week.",
    "The shelf collapsed and all my books fell.",
    "Our whole chain's collapsed, the buyers pulled out this morning.",
    "The sponge collapsed the second it came out of the tin.",
    "I had a panic attack last month before my exam.",
    "My chest is sore after the gym.",
    "My heart is broken.",
])
def test_a_figure_of_speech_or_the_past_is_not(text):
    assert urgent(canonical(text)) is None


def test_the_detector_sends_for_help_instead_of_asking_about_suicide():
    text = "I've been having chest pains all evening."
    risk = RiskDetector(None).assess(text)
    assert (risk.level, risk.category, risk.situation, risk.sources) == ("crisis", "medical", "medical", ("medical",))
    said = " ".join(crisis_sentences(text, risk))
    assert "emergency number now" in said and "911" in said and "999" in said and "112" in said
    assert "suicide" not in said and "ending your life" not in said


def test_a_panic_attack_gets_slow_breathing_and_the_number_for_when_it_is_not_panic():
    text = "I'm having a panic attack right now"
    said = " ".join(crisis_sentences(text, RiskDetector(None).assess(text)))
    assert "breath" in said and "emergency number" in said


def test_a_risk_of_suicide_said_plainly_keeps_the_crisis_response():
    risk = RiskDetector(None).assess("I took all my pills and now I want to die, my chest hurts")
    assert risk.level == "crisis" and not risk.situation and "patterns" in risk.sources


def test_risk_read_by_meaning_keeps_its_question_after_the_call_for_help():
    risk = RiskAssessment(level="crisis", category="self_harm", sources=("medical",), situation="medical")
    said = crisis_sentences("it's deeper than usual and won't stop bleeding", risk)
    assert "emergency number now" in " ".join(said)
    assert any("hurting yourself" in s or "ending your life" in s for s in said[:-1])


def test_the_answer_is_not_repeated_at_once():
    detector = RiskDetector(None)
    first = "My dad collapsed in the kitchen"
    history = (Utterance("speaker", first), Utterance("listener", " ".join(crisis_sentences(first, detector.assess(first)))))
    again = detector.assess("he collapsed again, the ambulance is coming", history)
    assert again.level == "care" and again.situation == "someone"


def test_every_kind_has_its_answer_and_an_unknown_one_is_refused():
    for kind in ("medical", "ask", "someone", "panic"):
        parts = medical_sentences("something", kind)
        assert len(parts) >= 2 and all(p.strip() for p in parts)
    with pytest.raises(ValueError, match="panic"):
        medical_sentences("x", "sprain")


@pytest.mark.parametrize("text, urgent_now", [
    ("the cardiologist called. echo was completely normal, she thinks the chest pain was a pulled muscle", False),
    ("my chest pain went away after an hour", False),
    ("the doctor said to call if the chest pain came back and it has, it's crushing", True),
    ("chest pain again tonight, the gp said it was probably anxiety last time but this feels different", True),
    ("Is it normal for my chest to hurt when I run?", True),  # asked about: see a doctor
    # explained in a later sentence, not back in it ("still a bit shaken" is the person, not the pain)
    ("Had chest pains on the train and went to A&E. The ECG came back normal; the doctor thinks I pulled a muscle. "
     "Still a bit shaken.", False),
    ("Had chest pains on the train and went to A&E. Everything came back normal. But it's back tonight", True),
    ("Had chest pains on the train and went to A&E. They said it was nothing. It still hurts when I breathe in", True),
])
def test_a_sign_told_as_explained_or_over_is_no_emergency_unless_it_is_back(text, urgent_now):
    assert (urgent(canonical(text)) is not None) == urgent_now
