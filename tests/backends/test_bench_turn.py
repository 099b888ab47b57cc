"""``bench/turn.py --quick`` end to end with a scripted LLM: the report's arithmetic and the plot.

The speech, video, hearing and output check are the real embedded models (the video at 256 px to
keep the test short); only the LLM and the embedding voter are doubles. No timing is asserted.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from e3rg_core.config import load_config
from e3rg_core.pipeline import STAGES, Pipeline
from e3rg_core.understanding.engine import Understander
from tests.doubles import FixedClassifier, ScriptedChat

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench():
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCH))  # the benches import their shared helpers as ``_common``
        yield importlib.import_module("turn")


@pytest.fixture(scope="module")
def report_dir(bench, tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    config = load_config(environ={"E3RG_CACHE_DIR": str(home / "cache"), "E3RG_DATA_DIR": str(home / "data")})
    config = replace(config, video=replace(config.video, size_px=256),
                     understanding=replace(config.understanding, openings=False))  # the scripted reply as written
    understander = Understander(config, backends={
        "qwen1.5b": ScriptedChat(label="sad", reply="That sounds hard. I'm glad you told me."),
        "minilm": FixedClassifier("sad")})
    out = tmp_path_factory.mktemp("reports")
    bench.run(Pipeline(config, understander=understander), out, quick=True)
    return out


def test_quick_runs_a_typed_and_a_webcam_turn_through_every_stage(report_dir):
    report = json.loads((report_dir / "turn.json").read_text(encoding="utf-8"))
    rows = report["rows"]
    assert [(r["turn"], r["input"]) for r in rows] == [("dev016", "text"), ("webcam", "video")]
    assert "shifts" in rows[1]["heard_text"].lower()  # Whisper heard the clip's sentence
    for row in rows:
        assert list(row["stages_s"]) == list(STAGES)
        stages = row["stages_s"]
        assert row["first_audio_s"] == pytest.approx(stages["heard"] + stages["understood"] + stages["spoken"],
                                                     abs=2e-3)
        assert row["finished_video_s"] == pytest.approx(row["first_audio_s"] + stages["rendered"], abs=2e-3)
        assert row["rendered_rtf"] == pytest.approx(stages["rendered"] / row["reply_audio_s"], rel=0.02)
        assert row["reply_emotion"] == "sad" and row["check"].startswith("meant sad")
        assert row["wav_bytes"] > 0 and row["mp4_bytes"] > 0 and row["n_frames"] > 0
    assert report["stages"]["heard"]["n"] == 1  # typed turns are not counted as hearing
    assert report["stages"]["rendered"]["n"] == 2
    assert report["memory"]["max_rss_mib_end"] >= report["memory"]["max_rss_mib_after_cold_start"] > 100
    assert set(report["goals"]) == {"understood_s", "heard_s", "spoken_rtf", "rendered_rtf"}
    assert len(report["machine"]["load_average_1_5_15_before"]) == 3


def test_the_plot_stacks_each_stage_in_its_colour(bench, report_dir):
    rows = json.loads((report_dir / "turn.json").read_text(encoding="utf-8"))["rows"]
    image = Image.open(report_dir / "turn.png").convert("RGB")
    assert image.size == (960, 540)
    bars = image.crop((70, 80, 940, 460))  # below the legend, above the turn labels
    colours = {colour for _, colour in bars.getcolors(maxcolors=1 << 16)}
    visible = [stage for stage in STAGES if max(r["stages_s"][stage] for r in rows) >= 0.05]
    assert {"heard", "rendered", "checked"} <= set(visible)  # the scripted LLM's stage is too thin to see
    for stage in visible:
        assert bench.COLOURS[stage] in colours, stage


def test_each_turn_also_runs_streamed_and_is_compared_with_itself(report_dir):
    report = json.loads((report_dir / "turn.json").read_text(encoding="utf-8"))
    rows, streamed = report["rows"], report["streamed_rows"]
    assert [r["turn"] for r in streamed] == [r["turn"] for r in rows]
    whole = {r["turn"]: r for r in rows}
    for row in streamed:
        assert row["pieces"] >= 1  # the scripted model answers whole: its sentences may share a piece
        assert 0 < row["first_audio_s"] < row["first_video_s"] <= row["finished_video_s"] <= row["total_s"]
        assert row["reply"] == "That sounds hard. I'm glad you told me."
        assert row["reply_audio_s"] == pytest.approx(whole[row["turn"]]["reply_audio_s"], abs=0.5)
    ratios = report["streamed"]["finished_ratio_to_whole"]["per_turn"]
    assert ratios == [round(s["finished_video_s"] / whole[s["turn"]]["finished_video_s"], 3) for s in streamed]
    assert set(report["stream_goals"]) == {"first_audio_s", "first_video_s", "finished_ratio"}
