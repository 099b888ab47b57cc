"""The per-class emotion bench: its figures on a small example and its reading of a GoEmotions release."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench():
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCH))  # the benches import their shared helpers as ``_common``
        yield importlib.import_module("_classes"), importlib.import_module("emotion_classes")


def test_per_class_figures_and_the_confusion_matrix(bench):
    classes, _ = bench
    golds = ["neutral", "neutral", "sad", "sad", "angry"]
    preds = ["neutral", "contempt", "sad", "happy", "contempt"]
    r = classes.class_report(golds, preds, seconds=[0.1, 0.2, 0.3, 0.4, 0.5])
    assert r["accuracy"] == 0.4 and r["contempt_share"] == 0.4
    assert r["per_class"]["neutral"] == {"support": 2, "recall": 0.5, "precision": 1.0}
    assert r["per_class"]["angry"]["recall"] == 0.0 and r["macro_recall"] == pytest.approx((0.5 + 0.5 + 0) / 3, abs=1e-4)
    assert r["confusion"]["angry"]["contempt"] == 1 and "contempt" not in r["per_class"]  # no gold contempt
    assert r["median_decision_s"] == 0.3
    assert "confusion" not in classes.format_report("x", r).splitlines()[0]


def test_goemotions_is_read_as_single_class_comments_balanced_per_class(bench, tmp_path):
    _, emotion_classes = bench
    names = ["joy", "anger", "annoyance", "neutral", "fear"]  # a release's label list, in id order
    (tmp_path / "emotions.txt").write_text("\n".join(names) + "\n")
    (tmp_path / "ekman_mapping.json").write_text(json.dumps({"anger": ["anger", "annoyance"], "joy": ["joy"],
                                                             "fear": ["fear"]}))
    rows = [("made-up happy line", "0", "a1"), ("made-up cross line", "1,2", "a2"),  # anger + annoyance: one class
            ("made-up mixed line", "0,1", "a3"),  # joy and anger: two classes, left out
            ("made-up plain line", "3", "a4"), ("made-up plain line two", "3", "a5"), ("made-up scared line", "4", "a6")]
    (tmp_path / "dev.tsv").write_text("".join(f"{t}\t{labels}\t{i}\n" for t, labels, i in rows))
    items = emotion_classes.load_goemotions(tmp_path, "dev", per_class=1, seed=0)
    golds = sorted(gold for _, _, gold in items)
    assert golds == ["angry", "fear", "happy", "neutral"]  # one per class present, Ekman names mapped
    assert {i for i, _, _ in items} >= {"a1", "a2", "a6"} and "a3" not in {i for i, _, _ in items}
    again = emotion_classes.load_goemotions(tmp_path, "dev", per_class=1, seed=0)
    assert [i for i, _, _ in again] == [i for i, _, _ in items]  # the draw is reproducible


def test_the_rescoring_bench_calibrates_as_the_engine_does():
    """bench/emotion_rescore.py re-scores kept LLM outputs with a copy of the engine's calibration."""
    import types

    import numpy as np

    from e3rg_core.emotions import CANDIDATES
    from e3rg_core.understanding.engine import _CONTENT_FREE, Understander

    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCH))
        rescore = importlib.import_module("emotion_rescore")
    rng = np.random.default_rng(0)
    raw = {t: rng.normal(-4, 1.5, len(CANDIDATES)) for t in (*_CONTENT_FREE, "message")}

    class Kept:
        def choice_logprobs(self, messages, choices):
            return dict(zip(choices, raw[messages].tolist()))

    fake = types.SimpleNamespace(_priors={}, _emotion_messages=lambda turn, shots: turn.text)
    engine = Understander._calibrated(fake, Kept(), "llm", 0, "message")
    bench = rescore.calibrate(raw["message"], np.stack([raw[t] for t in _CONTENT_FREE]))[0]
    assert np.allclose([engine[c] for c in CANDIDATES], bench, atol=1e-9)
