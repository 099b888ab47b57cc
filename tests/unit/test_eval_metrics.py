"""The challenge's metrics, checked against values worked out by hand (the arithmetic is in the comments)."""

import json

import pytest

from e3rg_core.emotions import COARSE
from e3rg_core.eval import metrics
from e3rg_core.eval.report import render_table, summarize
from e3rg_core.eval.run import read_items

# -- emotion ----------------------------------------------------------------------------------
GOLD = ["devastated", "anxious", "furious", "proud", "embarrassed"]
PRED = ["devastated", "afraid", "annoyed", "proud", "sad"]
# coarse under the hit map:   gold  sad  sad   angry happy disgusted
#                             pred  sad  fear  angry happy sad
# coarse under the video map: gold  surprised fear angry happy disgusted
#                             pred  surprised fear angry happy sad


def test_hit_is_coarse_accuracy_under_the_hit_map():
    # hit map: hits on items 1, 3, 4 -> 3 / 5
    assert metrics.hit_rate(GOLD, PRED) == pytest.approx(3 / 5)
    # the video map sends anxious and afraid both to fear, and devastated to surprised: items 1-4 -> 4 / 5
    assert metrics.hit_rate(GOLD, PRED, map_name="video") == pytest.approx(4 / 5)
    # free-form gold labels are normalised first: worried -> anxious -> sad
    assert metrics.hit_rate(["worried"], ["sad"]) == 1.0


def test_fine_accuracy_and_macro_f1():
    # exact matches: devastated, proud -> 2 / 5
    assert metrics.accuracy(GOLD, PRED) == pytest.approx(0.4)
    # fine classes in gold or pred: devastated, anxious, furious, proud, embarrassed, afraid, annoyed, sad (8);
    # F1 = 2TP / (2TP + FP + FN): devastated 2/2 = 1, proud 1, the other six have TP = 0 -> 0; (1 + 1) / 8
    assert metrics.macro_f1(GOLD, PRED) == pytest.approx(2 / 8)
    # coarse classes present: sad, angry, happy, disgusted, fear (5)
    # sad: TP 1 (item 1), FP 1 (item 5), FN 1 (item 2) -> 2 / (2 + 1 + 1) = 0.5; angry 1; happy 1;
    # disgusted: FN 1 -> 0; fear: FP 1 -> 0; (0.5 + 1 + 1) / 5 = 0.5
    assert metrics.macro_f1(GOLD, PRED, coarse=True) == pytest.approx(0.5)
    assert metrics.f1_scores(["a", "a", "b"], ["a", "b", "b"]) == pytest.approx({"a": 2 / 3, "b": 2 / 3})


def test_confusion_matrix_has_gold_rows_and_predicted_columns():
    m = metrics.confusion_matrix(GOLD, PRED, coarse=True)
    assert m.labels == COARSE
    ix = {c: i for i, c in enumerate(COARSE)}
    expected = {("sad", "sad"): 1, ("sad", "fear"): 1, ("angry", "angry"): 1, ("happy", "happy"): 1,
                ("disgusted", "sad"): 1}
    for g in COARSE:
        for p in COARSE:
            assert m.counts[ix[g]][ix[p]] == expected.get((g, p), 0), (g, p)
    fine = metrics.confusion_matrix(["a", "b", "b"], ["a", "a", "b"])
    assert fine.labels == ("a", "b") and fine.counts == ((1, 0), (1, 1))


def test_empty_and_mismatched_inputs():
    assert metrics.hit_rate([], []) is None
    assert metrics.accuracy([], []) is None
    assert metrics.macro_f1([], []) is None
    with pytest.raises(ValueError, match="2 gold labels but 1"):
        metrics.hit_rate(["sad", "sad"], ["sad"])


# -- Dist-n -----------------------------------------------------------------------------------
TEXTS = ["I am so SO sorry", "I am so sad.", "Sorry!"]
# tokens (lower-cased, whitespace split, punctuation kept):
#   A: i am so so sorry   (5)      B: i am so sad.   (4)      C: sorry!   (1)


def test_distinct_as_e3rg_computes_it_mean_of_per_response_ratios():
    # Dist-1: A {i, am, so, sorry} 4/5 = 0.8; B 4/4 = 1; C 1/1 = 1 -> (0.8 + 1 + 1) / 3 = 0.9333
    assert metrics.distinct_e3rg(TEXTS, 1) == pytest.approx(2.8 / 3)
    # Dist-2: A (i am)(am so)(so so)(so sorry) 4/4; B (i am)(am so)(so sad.) 3/3; C has no bigram and is
    # left out, as E3RG does -> (1 + 1) / 2 = 1.0
    assert metrics.distinct_e3rg(TEXTS, 2) == pytest.approx(1.0)
    # Dist-3: A 3/3, B 2/2, C left out -> 1.0
    assert metrics.distinct_e3rg(TEXTS, 3) == pytest.approx(1.0)


def test_distinct_corpus_level_on_the_same_texts():
    # unigrams: 5 + 4 + 1 = 10; unique: i, am, so, sorry, sad., sorry! = 6 -> 0.6
    assert metrics.distinct_corpus(TEXTS, 1) == pytest.approx(6 / 10)
    # bigrams: 4 + 3 = 7; unique: (i am)(am so)(so so)(so sorry)(so sad.) = 5 -> 5/7
    assert metrics.distinct_corpus(TEXTS, 2) == pytest.approx(5 / 7)
    # trigrams: 3 + 2 = 5; unique: (i am so)(am so so)(so so sorry)(am so sad.) = 4 -> 0.8
    assert metrics.distinct_corpus(TEXTS, 3) == pytest.approx(4 / 5)


def test_distinct_edge_cases():
    assert metrics.tokens("  Hello   THERE. ") == ["hello", "there."]
    assert metrics.distinct_e3rg(["ok"], 2) is None  # no response has a bigram
    assert metrics.distinct_corpus([], 1) is None
    # the same reply twice: each reply alone is fully distinct, the corpus is half repeated
    assert metrics.distinct_e3rg(["a b", "a b"], 1) == 1.0
    assert metrics.distinct_corpus(["a b", "a b"], 1) == 0.5
    report = metrics.distinct_report(TEXTS)
    assert report["responses"] == 3
    assert report["e3rg_mean_per_response"]["dist-1"] == pytest.approx(2.8 / 3)
    assert report["corpus"]["dist-2"] == pytest.approx(5 / 7)
    with pytest.raises(ValueError):
        metrics.ngrams(["a"], 0)


# -- the run's summary: E3RG's protocol -------------------------------------------------------
def _row(conv, turn, last, gold, pred, reply, gold_response="Oh no.", **extra):
    return {"conversation_id": conv, "turn_id": turn, "last_turn": last, "gold": gold, "predicted": pred,
            "reply": reply, "gold_response": gold_response, "seconds": 1.0, **extra}


def test_summary_scores_hit_on_last_turns_and_dist_on_every_reply():
    rows = [
        _row("1", "0", False, "anxious", "happy", "a b c"),  # not a last turn: no part in HIT
        _row("1", "1", True, "anxious", "sad", "a b c"),  # hit (sad = sad)
        _row("2", "0", True, "proud", "sad", "a a b"),  # miss
        _row("3", "0", True, None, "sad", "d e"),  # no gold: left out of HIT, kept for Dist
        {"conversation_id": "4", "turn_id": "0", "last_turn": True, "gold": "sad", "error": "BackendFailed: x"},
    ]
    s = summarize(rows, settings={"shots": 0, "emotion_map": "video"}, report={}, counts={}, method="m")
    e = s["emotion"]
    # HIT over the last turns with a gold label and no error: rows 2 and 3 -> 1 / 2
    assert (e["items"], e["hit"], e["last_turns"], e["last_turns_without_gold"]) == (2, 0.5, 3, 1)
    # the run's own map differs from the hit map, so its coarse accuracy is reported beside HIT:
    # anxious -> fear vs sad -> sad (miss), proud -> happy vs sad (miss) -> 0
    assert e["coarse_accuracy_video_map"] == 0.0
    # every turn with a gold label: rows 1-3 -> 1 hit of 3
    assert s["emotion_all_turns"]["hit"] == pytest.approx(1 / 3)
    # Dist over the 4 replies: per reply 1-gram ratios 1, 1, 2/3, 1 -> mean 11/12
    assert s["dist"]["predicted"]["e3rg_mean_per_response"]["dist-1"] == pytest.approx(11 / 12)
    # corpus: 3 + 3 + 3 + 2 = 11 unigrams; unique a b c d e = 5
    assert s["dist"]["predicted"]["corpus"]["dist-1"] == pytest.approx(5 / 11)
    assert s["counts"]["failed"] == 1 and s["counts"]["ok"] == 4
    table = render_table(s)
    assert table.splitlines()[0] == "| method | shots | HIT | Dist-1 | Dist-2 | Dist-3 |"
    assert "| m | 0 | 50.0 | 0.917 |" in table


def test_read_items_drops_a_cut_off_last_line(tmp_path):
    path = tmp_path / "items.jsonl"
    full = [json.dumps({"conversation_id": "1", "turn_id": "0", "predicted": "sad"}),
            json.dumps({"conversation_id": "1", "turn_id": "0", "predicted": "happy"})]  # a retry: the last wins
    path.write_text("\n".join(full) + "\n" + '{"conversation_id": "2", "tu', encoding="utf-8")
    items = read_items(path)
    assert list(items) == ["1/0"] and items["1/0"]["predicted"] == "happy"
    assert path.read_text(encoding="utf-8").endswith("}\n")  # the next append starts on a fresh line
    assert read_items(tmp_path / "none.jsonl") == {}
