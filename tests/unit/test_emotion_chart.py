"""The page's emotion chart heads with the class the page names (the vote's decision)."""

import gradio as gr

from e3rg_core.emotions import CANDIDATES, COARSE
from e3rg_core.types import EmotionVote
from e3rg_core.ui import views
from e3rg_core.understanding.voting import soft_vote


def chart_heading(scores):
    return gr.Label(num_top_classes=3).postprocess(scores).label


def test_the_chart_heads_with_the_predicted_class():
    # sad's words share its mass; one happy word is the single most probable label
    scores = {"joyful": 0.30, "sad": 0.22, "lonely": 0.20, "devastated": 0.18}
    rest = (1 - sum(scores.values())) / (len(CANDIDATES) - len(scores))
    probs = {c: scores.get(c, rest) for c in CANDIDATES}
    result = soft_vote([EmotionVote("minilm", "joyful", "", True, 0.0, probs)])
    shown = views.emotion_scores(result.coarse_distribution, predicted=result.coarse)
    assert set(shown) == set(COARSE)
    assert chart_heading(shown) == result.coarse == "sad"


def test_equal_shares_head_with_the_predicted_class():
    shown = views.emotion_scores({"happy": 0.45, "sad": 0.45, "neutral": 0.1}, predicted="sad")
    assert chart_heading(shown) == "sad"
    assert chart_heading(views.emotion_scores({"happy": 0.45, "sad": 0.45, "neutral": 0.1})) == "happy"


def test_a_class_the_crisis_rule_chose_is_shown_alone_with_what_the_vote_read():
    vote = {"neutral": 0.8, "sad": 0.05, "happy": 0.15}
    assert views.emotion_scores(vote, predicted="sad") == {"sad": 0.05}
    assert chart_heading(views.emotion_scores(vote, predicted="sad")) == "sad"
    assert views.vote_overruled(vote, "sad") == "The safety check chose sad; the emotion vote alone read neutral (0.80)."
    assert views.vote_overruled(vote, "neutral") == ""
    assert views.vote_overruled({"happy": 0.45, "sad": 0.45}, "sad") == ""
