"""``python -m e3rg_core.eval`` end to end on the shipped sample: the real embedding voter (minilm), real
speech recognition, voice, speech and video, and a scripted chat model as the LLM (a test double)."""

import dataclasses
import json
import wave

import pytest

from e3rg_core.eval.__main__ import main
from e3rg_core.eval.avamerg import SAMPLE_DIR
from e3rg_core.eval.run import EvalOptions, build_config, run_eval
from e3rg_core.media.mp4 import probe
from e3rg_core.understanding.engine import Understander
from tests.doubles import ScriptedChat

pytestmark = pytest.mark.slow

DATA = SAMPLE_DIR / "dialogues.json"
VOTERS = "minilm,qwen1.5b*0.5"
REPLY = "That sounds so hard. I am here with you."


class CountingChat(ScriptedChat):
    """The scripted LLM, counting the replies it writes (one per item run)."""

    def replies(self) -> int:
        return sum(1 for call in self.calls if not call["choices"])


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval-env")
    return {"E3RG_CACHE_DIR": str(root / "cache"), "E3RG_DATA_DIR": str(root / "data")}


@pytest.fixture(autouse=True)
def _environment(env, monkeypatch):
    for key, value in env.items():
        monkeypatch.setenv(key, value)


@pytest.fixture(scope="module")
def chat():
    return CountingChat(label="sad", reply=REPLY)


@pytest.fixture(scope="module")
def understander(env, chat):
    config = build_config(EvalOptions(data=DATA, out=DATA, voters=tuple(VOTERS.split(","))), environ=env)
    # These tests count the scripted replies the CLI asks for; the risk detector's meaning layer (which
    # gives one sample message, a child's height marks on a door frame, a check-in) is measured in
    # tests/backends/test_safety_detector.py and bench/safety.py. Its patterns still run here.
    config = dataclasses.replace(config, safety=dataclasses.replace(config.safety, meaning=False))
    # ... and the scripted reply is what the CLI stores (openings are tested in tests/unit/test_engine.py)
    config = dataclasses.replace(config, understanding=dataclasses.replace(config.understanding, openings=False))
    return Understander(config, backends={"qwen1.5b": chat})


def _items(out):
    return [json.loads(line) for line in (out / "items.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_sample_with_its_clips(tmp_path, understander, capsys):
    out = tmp_path / "run"
    code = main(["--data", str(DATA), "--media", str(SAMPLE_DIR / "media"), "--out", str(out),
                 "--voters", VOTERS, "--no-progress"], understander=understander)
    printed = capsys.readouterr().out
    assert code == 0
    table = (out / "table.md").read_text(encoding="utf-8")
    assert printed.startswith(table) and table.startswith("| method | shots | HIT | Dist-1 | Dist-2 | Dist-3 |")
    assert "| e3rg_core: minilm + qwen1.5b*0.5, soft vote; reply qwen1.5b | 0 |" in table
    items = {row["conversation_id"]: row for row in _items(out)}
    assert sorted(items) == ["00001", "00002", "00003", "00004", "00005", "00006"]  # one per conversation
    assert all(row["last_turn"] and not row.get("error") for row in items.values())
    # the four clips were heard (typed text kept, voice read); the others are text-only
    assert {k for k, row in items.items() if row["input"] == "audio"} == {"00001", "00002", "00003", "00004"}
    assert items["00001"]["media"]["audio"] == "dia00001utt4_3.wav"
    assert {v["voter"] for v in items["00001"]["votes"]} >= {"minilm", "qwen1.5b*0.5"}
    assert (items["00005"]["gold"], items["00005"]["gold_raw"], items["00006"]["gold"]) == (None, "bittersweet", None)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    e = summary["emotion"]
    scored = [row for row in items.values() if row["gold"]]
    assert (e["items"], e["last_turns_without_gold"]) == (4, 2)
    assert e["hit"] == pytest.approx(sum(row["hit"] for row in scored) / 4)
    # every reply is the same 9 distinct words: each is fully distinct; the corpus is 6 copies of it
    dist = summary["dist"]["predicted"]
    assert dist["responses"] == 6 and dist["e3rg_mean_per_response"]["dist-1"] == 1.0
    assert dist["corpus"]["dist-1"] == pytest.approx(9 / 54)
    assert summary["load_report"]["counts"]["unknown_labels"] == 1
    assert summary["settings"]["media"] is True and summary["counts"]["ran_this_time"] == 6


def test_resume_after_a_kill_runs_only_the_missing_items(tmp_path, understander, chat, capsys):
    out = tmp_path / "run"
    argv = ["--data", str(DATA), "--out", str(out), "--voters", VOTERS, "--all-turns", "--no-media",
            "--no-progress"]
    before = chat.replies()
    assert main(argv, understander=understander) == 0
    assert chat.replies() - before == 14
    lines = (out / "items.jsonl").read_text(encoding="utf-8").splitlines()
    # a kill: 9 items written, the 10th cut off mid-line
    (out / "items.jsonl").write_text("\n".join(lines[:9]) + "\n" + lines[9][:25], encoding="utf-8")
    (out / "summary.json").unlink()
    before = chat.replies()
    assert main(argv, understander=understander) == 0
    assert chat.replies() - before == 5  # only the missing items
    rows = _items(out)
    assert len(rows) == 14 and len({(r["conversation_id"], r["turn_id"]) for r in rows}) == 14
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["counts"]["resumed"] == 9 and summary["counts"]["recorded"] == 14
    assert summary["emotion"]["items"] == 4  # HIT still on last turns only
    assert summary["emotion_all_turns"]["items"] == 11
    assert "9 resumed" in capsys.readouterr().out
    # other settings are refused, unless the old run is discarded
    assert main(argv + ["--shots", "3"], understander=understander) == 2
    assert "shots 3 (before: 0)" in capsys.readouterr().err
    assert main(argv + ["--limit", "1", "--restart"], understander=understander) == 0
    assert len(_items(out)) == 3  # the first conversation's three turns


def test_a_failing_item_is_recorded_and_tried_again(tmp_path, understander, env):
    data = json.loads(DATA.read_text(encoding="utf-8"))[:2]
    data[1]["turns"][-1]["dialogue_history"][-1]["utterance"] = "word " * 1200  # over max_input_chars
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    options = EvalOptions(data=path, out=tmp_path / "run", voters=tuple(VOTERS.split(",")))
    result = run_eval(options, understander=understander, environ=env, progress=False)
    assert (result.ran, result.failed) == (2, 1)
    failed = [row for row in _items(tmp_path / "run") if row.get("error")]
    assert len(failed) == 1 and failed[0]["error"].startswith("InputError: the message has")
    assert result.summary["counts"]["failed"] == 1 and result.summary["emotion"]["items"] == 1
    again = run_eval(options, understander=understander, environ=env, progress=False)
    assert (again.ran, again.skipped, again.failed) == (1, 1, 1)


def test_generate_names_the_files_as_the_challenge(tmp_path, understander, capsys):
    out = tmp_path / "run"
    code = main(["--data", str(DATA), "--out", str(out), "--voters", VOTERS, "--generate", "--limit", "1",
                 "--no-media", "--set", "video.size_px=192", "--no-progress"], understander=understander)
    assert code == 0, capsys.readouterr().err
    row = _items(out)[0]
    gen = out / "generated"
    # conversation 00001, its last turn (2), listener ID 17 (middle-aged female, mid: no such avatar, so the
    # default, the woman Amara)
    assert row["files"] == {"txt": "generated/dia00001turn2_17_gen.txt", "wav": "generated/dia00001turn2_17_gen.wav",
                            "mp4": "generated/dia00001turn2_17_gen.mp4"}
    assert row["avatar"] == "amara"
    assert (gen / "dia00001turn2_17_gen.txt").read_text(encoding="utf-8").strip() == REPLY == row["reply"]
    with wave.open(str(gen / "dia00001turn2_17_gen.wav")) as w:
        duration_s = w.getnframes() / w.getframerate()
    assert duration_s == pytest.approx(row["speech_s"], abs=0.01) and duration_s > 1.0
    video = probe(gen / "dia00001turn2_17_gen.mp4")
    assert (video.width, video.height) == (192, 192) and video.audio_codec == "aac"
    names = sorted(p.name for p in out.iterdir())
    assert names == ["generated", "items.jsonl", "run.json", "summary.json", "table.md"]  # no work files left
    assert json.loads((out / "run.json").read_text())["settings"]["video"]["size_px"] == 192
