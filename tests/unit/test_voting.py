import pytest

from e3rg_core.errors import BackendFailed
from e3rg_core.types import EmotionVote
from e3rg_core.emotions import CANDIDATES
from e3rg_core.errors import ConfigError
from e3rg_core.understanding.voting import majority_vote, soft_vote, vote


def v(voter, label, scores=None):
    return EmotionVote(voter, label, label, True, 0.0, scores or {})


def test_unanimous():
    r = majority_vote([v("a", "sad"), v("b", "sad"), v("c", "sad")])
    assert (r.label, r.coarse, r.confidence) == ("sad", "sad", 1.0)
    assert r.distribution == {"sad": 1.0}


def test_coarse_majority_beats_fine_plurality():
    # two voters agree on the class (sad) in different words; one says joyful
    r = majority_vote([v("a", "joyful"), v("b", "lonely"), v("c", "devastated")])
    assert r.coarse == "sad" and r.label in ("lonely", "devastated")
    assert r.confidence == pytest.approx(2 / 3)
    assert r.coarse_distribution == pytest.approx({"sad": 2 / 3, "happy": 1 / 3})
    assert sum(r.distribution.values()) == pytest.approx(1.0)


def test_fine_label_within_winning_class_by_weight_then_order():
    r = majority_vote([v("a", "lonely"), v("b", "devastated"), v("c", "devastated"), v("d", "angry")])
    assert r.label == "devastated"
    r = majority_vote([v("a", "lonely"), v("b", "devastated")])
    assert r.label == "lonely"  # tie in class and label: the earliest voter wins


def test_tie_broken_by_scores_then_voter_order():
    assert majority_vote([v("a", "angry"), v("b", "sad")]).label == "angry"
    scores = {"sad": 0.7, "angry": 0.1}
    r = majority_vote([v("a", "angry"), v("b", "sad", scores)])
    assert r.label == "sad"  # the score-reporting voter tips the tie


def test_map_choice_changes_the_vote():
    votes = [v("a", "devastated"), v("b", "surprised")]
    assert majority_vote(votes, map_name="hit").coarse == "sad"  # tie sad/surprised, first voter
    r = majority_vote(votes, map_name="video")  # devastated -> surprised under the video map
    assert r.coarse == "surprised" and r.confidence == 1.0


def test_weights():
    r = majority_vote([v("a", "sad"), v("b", "happy"), v("c", "happy")], weights={"a": 3.0})
    assert r.coarse == "sad" and r.confidence == pytest.approx(0.6)
    with pytest.raises(BackendFailed):
        majority_vote([v("a", "sad")], weights={"a": 0.0})


def test_no_votes():
    with pytest.raises(BackendFailed):
        majority_vote([])


def probs(**peaks):
    rest = (1 - sum(peaks.values())) / (len(CANDIDATES) - len(peaks))
    return {c: peaks.get(c, rest) for c in CANDIDATES}


def test_soft_vote_is_a_product_of_experts():
    a = v("a", "sad", probs(sad=0.5, lonely=0.4))
    b = v("b", "joyful", probs(joyful=0.5, lonely=0.4))
    r = soft_vote([a, b])
    assert r.label == "lonely"  # both give it 0.4; each gives the other's favourite almost nothing
    assert sum(r.distribution.values()) == pytest.approx(1.0, abs=1e-3)
    assert r.confidence == pytest.approx(r.coarse_distribution["sad"])


def test_soft_vote_one_hot_voters_and_weights():
    r = soft_vote([v("a", "angry"), v("b", "sad"), v("c", "sad")])
    assert r.label == "sad"
    r = soft_vote([v("a", "angry"), v("b", "sad"), v("c", "sad")], weights={"a": 3.0})
    assert r.label == "angry"


def test_vote_dispatch():
    votes = [v("a", "sad")]
    assert vote(votes, method="majority").label == vote(votes, method="soft").label == "sad"
    with pytest.raises(ConfigError, match="choose from soft, majority"):
        vote(votes, method="ranked")


def test_soft_vote_decides_the_class_first():
    # 'joyful' is the single most probable label, but sad's three labels together outweigh happy:
    # the class the chart shows on top and the label's class must be the same
    a = v("a", "joyful", probs(joyful=0.30, sad=0.22, lonely=0.20, devastated=0.18))
    r = soft_vote([a])
    assert r.coarse == "sad" and r.label == "sad"
    assert max(r.coarse_distribution, key=r.coarse_distribution.get) == r.coarse
    assert r.confidence == pytest.approx(r.coarse_distribution["sad"])


def test_soft_vote_label_is_the_best_of_the_winning_class():
    a = v("a", "angry", probs(angry=0.35, annoyed=0.25, fear=0.38))
    b = v("b", "angry", probs(angry=0.35, annoyed=0.25, fear=0.38))
    r = soft_vote([a, b])
    assert (r.coarse, r.label) == ("angry", "angry")


def _probs(mass):
    rest = (1 - sum(mass.values())) / (len(CANDIDATES) - len(mass))
    return {c: mass.get(c, rest) for c in CANDIDATES}


def test_the_class_vote_backs_a_class_its_voters_name_in_different_words():
    head = v("emb", "lonely", _probs({"lonely": 0.55, "joyful": 0.4}))  # shares out its class head's sad
    llm = v("llm", "disappointed", _probs({"disappointed": 0.5, "joyful": 0.3}))  # scores each word alone
    plain = soft_vote([head, llm])
    voted = soft_vote([head, llm], class_heads={"emb"})
    assert plain.coarse == "happy"  # the product over words punishes "lonely" against "disappointed"
    assert (voted.coarse, voted.label) == ("sad", "lonely")
    assert voted.coarse_distribution["neutral"] == pytest.approx(plain.coarse_distribution["neutral"])
    assert max(voted.coarse_distribution, key=voted.coarse_distribution.get) == voted.coarse
    assert sum(voted.distribution.values()) == pytest.approx(1.0)


def test_a_word_scorer_that_favours_no_word_favours_no_class():
    even = v("llm", "neutral", {c: 1 / len(CANDIDATES) for c in CANDIDATES})
    shares = soft_vote([even], class_heads=()).coarse_distribution
    feelings = [k for k in shares if k != "neutral"]
    assert max(shares[k] for k in feelings) == pytest.approx(min(shares[k] for k in feelings))
