"""Human-evaluation studies: study files, per-rater plans, blinding, the append-only store, the analysis."""

from __future__ import annotations

import csv
import io
import json
import math
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from e3rg_core.errors import ConfigError, InputError
from e3rg_core.rating import (
    DEFAULT_CRITERIA,
    EXPORT_COLUMNS,
    GOLD_SYSTEM,
    RatingRow,
    RatingStore,
    agreement,
    export_csv,
    gold_failures,
    krippendorff_alpha,
    load_study,
    make_plan,
    preference_counts,
    study_from_batch,
    summarize,
    win_rates,
    write_report,
)
from e3rg_core.rating.criteria import check_anchors
from e3rg_core.rating.plan import side_order, trial_order

# System names made of letters that never occur in hex digests, so "no system name in a file name" is a
# real check, not luck.
SYSTEMS = ("zulu", "omikron")
N_ITEMS = 6


# --- fixtures -------------------------------------------------------------------------------------


def _toml(data: dict) -> str:
    """A small TOML writer for the study dicts of these tests (tables, arrays of tables, inline tables)."""
    out: list[str] = []

    def value(v) -> str:
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return str(v)
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"
        return "[" + ", ".join(value(x) for x in v) + "]"

    def is_tables(k, v) -> bool:
        return k in ("items", "gold", "criteria") and isinstance(v, list) and all(isinstance(x, dict) for x in v)

    def table(prefix: str, d: dict, header: str) -> None:
        if header:
            out.append(header)
        for k, v in d.items():
            if not isinstance(v, dict) and not is_tables(k, v):
                out.append(f"{json.dumps(k)} = {value(v)}")
        for k, v in d.items():
            name = f"{prefix}.{json.dumps(k)}" if prefix else json.dumps(k)
            if isinstance(v, dict):
                table(name, v, f"[{name}]")
            elif is_tables(k, v):
                for x in v:
                    table(name, x, f"[[{name}]]")

    table("", data, "")
    return "\n".join(out) + "\n"


def _write_media(folder: Path, name: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(f"media {name}".encode())
    return f"{folder.name}/{name}"


def _study_dict(root: Path, *, n_items: int = N_ITEMS) -> dict:
    items = []
    for k in range(1, n_items + 1):
        item_id = f"dia{k:05d}turn1"
        items.append({
            "id": item_id,
            "context": [{"role": "speaker", "text": f"Something happened to me, number {k}."}],
            "outputs": {s: {"text": f"Reply {n} to item {k}.",
                            "video": _write_media(root / f"out_{s}", f"{item_id}_gen.mp4"),
                            "audio": _write_media(root / f"out_{s}", f"{item_id}_gen.wav")}
                        for n, s in enumerate(SYSTEMS)},
        })
    return {
        "study": {"id": "unit-study", "title": "Unit study", "secret": "s" * 32, "systems": list(SYSTEMS),
                  "consent": "I agree.", "instructions": "Rate the replies."},
        "preference": {"pairs": [list(SYSTEMS)]},
        "items": items,
        "gold": [
            {"id": "check-choose-2", "position": 3, "instruction": "Attention check: choose 2 for every question.",
             "text": "Please choose 2.", "video": _write_media(root / "gold", "check1.mp4"), "expect_all": [2, 2]},
            {"id": "check-mismatch", "text": "A reply whose face does not fit its words.",
             "video": _write_media(root / "gold", "check2.mp4"), "expect": {"consistency": [1, 2]}},
        ],
    }


def _save(root: Path, data: dict) -> Path:
    path = root / "study.toml"
    path.write_text(_toml(data), encoding="utf-8")
    return path


@pytest.fixture
def study(tmp_path):
    return load_study(_save(tmp_path, _study_dict(tmp_path)))


@pytest.fixture
def store(tmp_path, study):
    with RatingStore(tmp_path / "db" / "ratings.sqlite3", study) as s:
        yield s


def _answer(store, plan, trial, *, score=4, choice="left", play=True):
    """Play every video of ``trial`` and rate every panel ``score`` on every criterion."""
    store.record_shown(plan.rater_id, trial.item_id)
    if play:
        for panel in trial.panels:
            store.record_play(plan.rater_id, trial.item_id, panel.token, "video")
    scores = {p.token: {c.id: score for c in trial.criteria} for p in trial.panels}
    store.record_ratings(plan.rater_id, trial.item_id, scores, preferences={q.key: choice for q in trial.pairs})


# --- study file -----------------------------------------------------------------------------------


def test_a_valid_study_loads_with_the_default_criteria(study, tmp_path):
    assert study.id == "unit-study" and study.systems == SYSTEMS
    assert [c.id for c in study.criteria] == ["expressiveness", "consistency", "naturalness", "empathy", "lip_sync"]
    assert [c.name for c in study.criteria[:3]] == ["Emotional Expressiveness", "Multimodal Consistency", "Naturalness"]
    assert len(study.items) == N_ITEMS and study.pairs == (SYSTEMS,)
    output = study.items[0].outputs["zulu"]
    assert output.video == (tmp_path / "out_zulu" / "dia00001turn1_gen.mp4").resolve() and output.video.is_absolute()
    assert study.items[0].context[0].role == "speaker"
    gold = {g.id: g for g in study.gold}
    assert gold["check-choose-2"].position == 3
    assert gold["check-choose-2"].expect == {c: (2, 2) for c in study.criterion_ids}
    assert gold["check-mismatch"].expect == {"consistency": (1, 2)} and gold["check-mismatch"].position is None
    assert "s" * 32 not in repr(study)  # the secret stays out of logs


def test_default_anchors_are_five_distinct_descriptions_per_criterion():
    for criterion in DEFAULT_CRITERIA:
        assert check_anchors(list(criterion.anchors)) == criterion.anchors
        assert criterion.anchor(1) != criterion.anchor(5)


def _broken(root: Path, change) -> str:
    data = _study_dict(root)
    change(data)
    with pytest.raises(ConfigError) as info:
        load_study(_save(root, data))
    return str(info.value)


def _set_video(data, path):
    data["items"][1]["outputs"]["zulu"]["video"] = path


@pytest.mark.parametrize("change, field, words", [
    (lambda d: _set_video(d, "out_zulu/nowhere.mp4"), "items[1].outputs.zulu.video", "file not found"),
    (lambda d: _set_video(d, "out_zulu/dia00002turn1_gen.wav"), "items[1].outputs.zulu.video", ".mp4"),
    (lambda d: d["items"][2]["outputs"].update(bravo=d["items"][2]["outputs"]["zulu"]),
     "items[2].outputs.bravo", "unknown system 'bravo'"),
    (lambda d: d["items"][2]["outputs"].pop("omikron"), "items[2].outputs.omikron", "missing"),
    (lambda d: d["items"][3].update(id="dia00001turn1"), "items[3].id", "duplicate id 'dia00001turn1'"),
    (lambda d: d["gold"][0].update(id="dia00002turn1"), "gold[0].id", "duplicate id"),
    (lambda d: d.update(criteria=[{"id": "warmth", "name": "Warmth", "anchors": ["a", "b", "c", "d"]}]),
     "criteria[0].anchors", "exactly 5"),
    (lambda d: d.update(criteria=[{"id": "warmth", "name": "Warmth", "anchors": ["a", "b", "b", "d", "e"]}]),
     "criteria[0].anchors", "same anchor"),
    (lambda d: d.update(criteria=[{"id": "warmth", "name": "Warmth", "anchors": ["a", " ", "c", "d", "e"]}]),
     "criteria[0].anchors", "score 2 is empty"),
    (lambda d: d["study"].update(secret="short"), "study.secret", "16 characters"),
    (lambda d: d["study"].update(systems=["zulu", "zulu"]), "study.systems[1]", "duplicate system"),
    (lambda d: d["study"].update(systems=["zulu", "gold"]), "study.systems[1]", "reserved"),
    (lambda d: d["preference"].update(pairs=[["zulu", "bravo"]]), "preference.pairs[0]", "unknown system 'bravo'"),
    (lambda d: d["gold"][1].update(expect={"warmth": [1, 2]}), "gold[1].expect.warmth", "unknown criterion"),
    (lambda d: d["gold"][1].update(expect={"consistency": [4, 2]}), "gold[1].expect.consistency", "low <= high"),
    (lambda d: d["gold"][0].update(position=99), "gold[0].position", "1..8"),
    (lambda d: d["gold"][1].update(position=3), "gold[1].position", "already taken"),
    (lambda d: d["items"][0]["context"].append({"role": "narrator", "text": "x"}), "items[0].context[1].role",
     "choose from speaker, listener"),
    (lambda d: d["items"][0]["outputs"]["zulu"].update(vidoe="x.mp4"), "items[0].outputs.zulu.vidoe", "unknown key"),
])
def test_study_problems_name_their_field(tmp_path, change, field, words):
    message = _broken(tmp_path, change)
    line = next((ln for ln in message.splitlines() if ln.strip().startswith(field + ":")), None)
    assert line is not None, message
    assert words in line


def test_every_problem_is_reported_at_once(tmp_path):
    def two(d):
        _set_video(d, "out_zulu/nowhere.mp4")
        d["items"][3]["id"] = "dia00001turn1"

    message = _broken(tmp_path, two)
    assert "2 problem(s)" in message and "items[1].outputs.zulu.video" in message and "items[3].id" in message


def test_criteria_can_be_chosen_from_the_defaults_or_written(tmp_path):
    data = _study_dict(tmp_path)
    data["criteria"] = [{"id": "naturalness"},
                        {"id": "warmth", "name": "Warmth", "question": "How warm is it?",
                         "anchors": ["Cold", "Cool", "Neutral", "Warm", "Very warm"]}]
    data["gold"][1]["expect"] = {"warmth": [1, 2]}
    study = load_study(_save(tmp_path, data))
    assert study.criterion_ids == ("naturalness", "warmth")
    assert study.criteria[0] == DEFAULT_CRITERIA[2] and study.criteria[1].anchor(4) == "Warm"


def test_unreadable_study_files_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_study(tmp_path / "none.toml")
    (tmp_path / "bad.toml").write_text("[study\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_study(tmp_path / "bad.toml")


# --- study from batch folders -----------------------------------------------------------------------


def _batch(folder: Path, turns, *, listener="3", skip=(), sub="") -> Path:
    media = folder / sub if sub else folder
    media.mkdir(parents=True)
    for conv, turn in turns:
        stem = f"dia{conv}turn{turn}_{listener}_gen"
        for ext in ("txt", "wav", "mp4"):
            if (conv, turn, ext) not in skip:
                data = f"reply {conv}/{turn} from {folder.name}\n" if ext == "txt" else b"\0" * 8
                (media / f"{stem}.{ext}").write_bytes(data.encode() if isinstance(data, str) else data)
    return folder


def test_study_from_batch_keeps_the_turns_every_system_has_complete(tmp_path):
    a = _batch(tmp_path / "batches" / "sysa", [("00012", "3"), ("00002", "1"), ("00040", "2")])
    b = _batch(tmp_path / "batches" / "sysb", [("00012", "3"), ("00002", "1"), ("00040", "2"), ("00099", "1")],
               skip={("00040", "2", "wav")}, sub="generated")  # the layout of python -m e3rg_core.eval --out
    (b / "items.jsonl").write_text('{"conversation_id": "00012", "turn_id": 3, "reply": "no history"}\n'
                                   '{"conversation_id": "00002", "tu', encoding="utf-8")  # a run killed mid-line
    (a / "items.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"conversation_id": "00012", "turn_id": 3, "context": "a scene description, not the dialogue",
         "dialogue_history": [{"index": 0, "role": "speaker", "utterance": "I failed my exam."},
                              {"index": 1, "role": "listener", "utterance": "Oh no, I'm sorry."},
                              {"index": 2, "role": "speaker", "utterance": "And I studied so hard!"}]},
        {"id": "dia00002turn1", "context": [{"role": "user", "text": "My dog is back \"home\"!\n"}]},
    ]) + "\n", encoding="utf-8")
    study = study_from_batch({"sys-a.v1": a, "sysb": b}, tmp_path / "study", title="Batch study", preference=True)

    assert [i.id for i in study.items] == ["dia00002turn1", "dia00012turn3"]
    assert study.systems == ("sys-a.v1", "sysb") and study.pairs == (("sys-a.v1", "sysb"),)
    assert study.id == "study" and study.title == "Batch study" and len(study.secret) == 32
    first, second = study.items
    assert [(u.role, u.text) for u in second.context] == [
        ("speaker", "I failed my exam."), ("listener", "Oh no, I'm sorry."), ("speaker", "And I studied so hard!")]
    assert [(u.role, u.text) for u in first.context] == [("speaker", 'My dog is back "home"!\n'.strip())]
    assert second.outputs["sysb"].text == "reply 00012/3 from sysb"
    assert second.outputs["sys-a.v1"].video == (a / "dia00012turn3_3_gen.mp4").resolve()
    text = (tmp_path / "study" / "study.toml").read_text(encoding="utf-8")
    assert str(tmp_path) not in text and '"../batches/sysb/generated/dia00012turn3_3_gen.wav"' in text
    with pytest.raises(ConfigError, match="overwrite=True"):
        study_from_batch({"sysa": a, "sysb": b}, tmp_path / "study" / "study.toml")


def test_study_from_batch_takes_the_context_from_the_avamerg_dialogues(tmp_path):
    dialogues = Path(__file__).parents[2] / "e3rg_core" / "eval" / "sample" / "dialogues.json"
    a = _batch(tmp_path / "a", [("00001", "1")], listener="17", sub="generated")
    b = _batch(tmp_path / "b", [("00001", "1")], listener="17")
    (item,) = study_from_batch({"sysa": a, "sysb": b}, tmp_path / "s", dialogues=dialogues).items
    assert item.id == "dia00001turn1" and [u.role for u in item.context] == ["speaker", "listener", "speaker"]
    assert item.context[0].text == "My cat Miso didn't come home last night."
    assert item.context[-1].text.startswith("The neighbour found her by the road")
    with pytest.raises(ConfigError, match="cannot take the context"):
        study_from_batch({"sysa": a, "sysb": b}, tmp_path / "t", dialogues=tmp_path / "none.json")


def test_study_from_batch_refuses_folders_with_nothing_in_common(tmp_path):
    a = _batch(tmp_path / "a", [("00001", "1")])
    b = _batch(tmp_path / "b", [("00002", "1")])
    with pytest.raises(ConfigError, match="no conversation turn is complete"):
        study_from_batch({"sysa": a, "sysb": b}, tmp_path / "out")
    with pytest.raises(ConfigError, match="does not exist"):
        study_from_batch({"sysa": a, "sysc": tmp_path / "missing"}, tmp_path / "out")


# --- plans and blinding ----------------------------------------------------------------------------------


def test_a_rater_always_gets_the_same_plan_and_raters_differ(study, tmp_path):
    one, again = make_plan(study, "R01", media_dir=tmp_path / "m1"), make_plan(study, "R01", media_dir=tmp_path / "m2")
    assert one.item_ids == again.item_ids and one.n_trials == N_ITEMS + 2
    for position in range(1, one.n_trials + 1):
        a, b = one.trial(position), again.trial(position)
        assert [(p.token, p.side, p.video.name) for p in a.panels] == \
            [(p.token, p.side, p.video.name) for p in b.panels]
    orders = {trial_order(study, f"R{k:02d}") for k in range(10)}
    assert len(orders) > 1
    sides = {side_order(study, f"R{k:02d}", item.id) for k in range(10) for item in study.items}
    assert sides == {SYSTEMS, SYSTEMS[::-1]}  # both systems are shown on the left for some trials


def test_attention_checks_sit_at_their_positions(study):
    for rater in ("R01", "R02", "someone@example.org"):
        order = trial_order(study, rater)
        assert order[2] == "check-choose-2"
        assert "check-mismatch" in order and sorted(order) == sorted([i.id for i in study.items] +
                                                                     ["check-choose-2", "check-mismatch"])


def test_trials_show_no_system_name(study, tmp_path):
    plan = make_plan(study, "R01", media_dir=tmp_path / "served")
    for position in range(1, plan.n_trials + 1):
        trial = plan.trial(position)
        for system in SYSTEMS + (GOLD_SYSTEM,):
            assert system not in repr(trial).replace(str(tmp_path), "")
        for panel in trial.panels:
            assert panel.video.parent == tmp_path / "served" and len(panel.video.stem) == 32
            assert panel.video.read_bytes().startswith(b"media ")
        assert [p.label for p in trial.panels] == ["A", "B"][:len(trial.panels)]
    gold_trial = plan.trial(3)
    assert gold_trial.instruction.startswith("Attention check") and len(gold_trial.panels) == 1 and not gold_trial.pairs


def test_blind_names_are_neutral_stable_and_keyed_by_the_secret(tmp_path, study):
    video = study.items[0].outputs["zulu"].video
    name = study.blind_name(video)
    assert name.endswith(".mp4") and all(ch in "0123456789abcdef" for ch in name[:-4])
    assert not any(s in name for s in SYSTEMS)
    assert study.blind_name(video) == name  # same file, same name
    other_system = study.blind_name(study.items[0].outputs["omikron"].video)
    assert other_system != name
    first = study.blind_copy(video, tmp_path / "served")
    assert first.name == name and first.read_bytes() == video.read_bytes()
    assert study.blind_copy(video, tmp_path / "served") == first
    assert sorted(p.name for p in (tmp_path / "served").iterdir()) == [name]  # no temporary file left

    data = _study_dict(tmp_path)
    data["study"]["secret"] = "t" * 32
    resecret = load_study(_save(tmp_path, data))
    assert resecret.blind_name(video) != name
    assert resecret.token(study.items[0].id, "zulu") != study.token(study.items[0].id, "zulu")
    with pytest.raises(InputError, match="not a media file"):
        study.blind_copy(tmp_path / "study.toml", tmp_path / "served")


# --- the store ---------------------------------------------------------------------------------------


def _first_pair_trial(plan):
    return next(plan.trial(k) for k in range(1, plan.n_trials + 1) if len(plan.trial(k).panels) == 2)


def test_ratings_need_every_video_played_first(store, study, tmp_path):
    plan = make_plan(study, "R01", media_dir=tmp_path / "served")
    trial = _first_pair_trial(plan)
    scores = {p.token: {c: 3 for c in study.criterion_ids} for p in trial.panels}
    prefs = {q.key: "none" for q in trial.pairs}
    with pytest.raises(InputError, match="play the video before rating: reply A, B have"):
        store.record_ratings("R01", trial.item_id, scores, preferences=prefs)
    assert store.record_play("R01", trial.item_id, trial.panels[0].token, "audio") == 1
    assert store.record_play("R01", trial.item_id, trial.panels[0].token, "video") == 1
    assert store.unplayed_videos("R01", trial.item_id) == (trial.panels[1].token,)
    with pytest.raises(InputError, match="play the video before rating: reply B has"):
        store.record_ratings("R01", trial.item_id, scores, preferences=prefs)
    assert not store.ratings_complete("R01", trial.item_id)
    assert store.record_play("R01", trial.item_id, trial.panels[1].token, "video") == 1
    store.record_ratings("R01", trial.item_id, scores, preferences=prefs)
    assert store.ratings_complete("R01", trial.item_id)
    assert not store.ratings_complete("R02", trial.item_id)
    assert store.n_events()["ratings"] == 2 * len(study.criteria)


@pytest.mark.parametrize("change, words", [
    (lambda s, p, t: s[t.panels[1].token].pop("naturalness"), "reply B has no score for Naturalness"),
    (lambda s, p, t: s[t.panels[0].token].update(naturalness=6), "whole number 1..5"),
    (lambda s, p, t: s[t.panels[0].token].update(naturalness=True), "whole number 1..5"),
    (lambda s, p, t: s[t.panels[0].token].update(warmth=3), "unknown criterion 'warmth'"),
    (lambda s, p, t: s.pop(t.panels[0].token), "reply A has no scores"),
    (lambda s, p, t: s.update({"0123456789abcdef": {}}), "is not a stimulus of item"),
    (lambda s, p, t: p.clear(), "preference question"),
    (lambda s, p, t: p.update({t.pairs[0].key: "zulu"}), "preference question"),
])
def test_incomplete_or_wrong_answers_are_refused_and_nothing_is_stored(store, study, tmp_path, change, words):
    plan = make_plan(study, "R01", media_dir=tmp_path / "served")
    trial = _first_pair_trial(plan)
    for panel in trial.panels:
        store.record_play("R01", trial.item_id, panel.token, "video")
    scores = {p.token: {c: 3 for c in study.criterion_ids} for p in trial.panels}
    prefs = {q.key: "left" for q in trial.pairs}
    change(scores, prefs, trial)
    with pytest.raises(InputError, match=words):
        store.record_ratings("R01", trial.item_id, scores, preferences=prefs)
    assert store.n_events()["ratings"] == 0 and store.n_events()["preferences"] == 0


def test_bad_rater_ids_tokens_and_media_are_input_errors(store, study):
    item = study.items[0]
    token = study.token(item.id, "zulu")
    with pytest.raises(InputError, match="rater id"):
        store.record_play("../etc", item.id, token, "video")
    with pytest.raises(InputError, match="not a stimulus of item"):
        store.record_play("R01", study.items[1].id, token, "video")
    with pytest.raises(InputError, match="media must be"):
        store.record_play("R01", item.id, token, "subtitles")
    with pytest.raises(InputError, match="no item"):
        store.record_shown("R01", "dia99999turn9")


def test_plans_resume_after_the_items_already_rated(store, study, tmp_path):
    plan = make_plan(study, "R07", media_dir=tmp_path / "served")
    for position in (1, 2):
        _answer(store, plan, plan.trial(position))
    later = make_plan(study, "R07", media_dir=tmp_path / "served")  # a reload: a fresh plan object
    done = store.completed_items("R07")
    assert done == set(plan.item_ids[:2])
    assert later.next_trial(done).position == 3 and later.remaining(done) == plan.n_trials - 2
    for position in range(3, plan.n_trials + 1):
        _answer(store, plan, plan.trial(position))
    assert later.next_trial(store.completed_items("R07")) is None


def test_the_side_each_system_was_shown_on_is_recorded(store, study, tmp_path):
    seen = set()
    for rater in ("R01", "R02", "R03", "R04"):
        plan = make_plan(study, rater, media_dir=tmp_path / "served")
        for position in range(1, plan.n_trials + 1):
            trial = plan.trial(position)
            _answer(store, plan, trial)
            for panel in trial.panels:
                system = study.resolve_token(trial.item_id, panel.token)
                rows = [r for r in store.rows() if (r.rater, r.item, r.system) == (rater, trial.item_id, system)]
                assert rows and {r.swap for r in rows} == {panel.side}
                seen.add((system, panel.side))
    assert {(s, side) for s in SYSTEMS for side in (0, 1)} <= seen


def test_the_log_is_append_only_and_the_latest_answer_wins(store, study, tmp_path):
    plan = make_plan(study, "R01", media_dir=tmp_path / "served")
    trial = _first_pair_trial(plan)
    _answer(store, plan, trial, score=2, choice="left")
    _answer(store, plan, trial, score=5, choice="right")
    assert store.n_events()["ratings"] == 2 * 2 * len(study.criteria)
    assert {r.score for r in store.rows()} == {5} and len(store.rows()) == 2 * len(study.criteria)
    (pref,) = store.preference_rows()
    right_system = study.resolve_token(trial.item_id, trial.pairs[0].right)
    assert pref.choice == ("a" if right_system == pref.system_a else "b")
    conn = sqlite3.connect(store.db_path)
    try:
        for statement in ("UPDATE ratings SET score = 1", "DELETE FROM ratings", "DELETE FROM plays",
                          "UPDATE preferences SET choice = 'none'", "DELETE FROM shown"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                conn.execute(statement)
    finally:
        conn.close()
    assert {r.score for r in store.rows()} == {5}


def test_four_threads_rating_at_once_lose_nothing(store, study, tmp_path):
    errors = []

    def rate(rater):
        try:
            plan = make_plan(study, rater, media_dir=tmp_path / "served")
            for position in range(1, plan.n_trials + 1):
                _answer(store, plan, plan.trial(position), score=1 + position % 5)
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=rate, args=(f"T{k}",)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    per_rater = (N_ITEMS * len(SYSTEMS) + 2) * len(study.criteria)
    assert store.n_events()["ratings"] == 4 * per_rater and len(store.rows()) == 4 * per_rater
    assert all(store.completed_items(f"T{k}") == set(trial_order(study, f"T{k}")) for k in range(4))


def test_a_second_store_on_the_file_sees_everything(store, study, tmp_path):
    plan = make_plan(study, "R01", media_dir=tmp_path / "served")
    _answer(store, plan, plan.trial(1))
    with RatingStore(store.db_path, study) as again:
        assert again.rows() == store.rows() and again.completed_items("R01") == {plan.item_ids[0]}


def test_some_other_database_is_not_taken_over(tmp_path, study):
    path = tmp_path / "other.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    with pytest.raises(ConfigError, match="some other SQLite database"):
        RatingStore(path, study)


# --- export ----------------------------------------------------------------------------------------------


class _Clock:
    """One second later on every call, from midnight."""

    def __init__(self):
        self.t = 0

    def __call__(self):
        self.t += 1
        return f"2026-01-01T00:00:{self.t - 1:02d}.000000+00:00"


def test_the_export_is_exactly_the_long_format_csv(tmp_path):
    data = _study_dict(tmp_path, n_items=2)
    data["criteria"] = [{"id": "naturalness"}, {"id": "lip_sync"}]
    del data["gold"], data["preference"]
    study = load_study(_save(tmp_path, data))
    with RatingStore(tmp_path / "r.sqlite3", study, clock=_Clock()) as store:
        plan = make_plan(study, "R01", media_dir=tmp_path / "served")
        trial = plan.trial(plan.position_of("dia00001turn1"))
        tok = {study.resolve_token(trial.item_id, p.token): p.token for p in trial.panels}
        side = {study.resolve_token(trial.item_id, p.token): p.side for p in trial.panels}
        store.record_shown("R01", "dia00001turn1")                      # :00
        store.record_play("R01", "dia00001turn1", tok["zulu"], "video")     # :01
        store.record_play("R01", "dia00001turn1", tok["omikron"], "video")  # :02
        store.record_play("R01", "dia00001turn1", tok["zulu"], "audio")     # :03
        store.record_play("R01", "dia00001turn1", tok["zulu"], "video")     # :04
        store.record_ratings("R01", "dia00001turn1", {tok["zulu"]: {"naturalness": 4, "lip_sync": 3},
                                                      tok["omikron"]: {"naturalness": 2, "lip_sync": 5}})  # :05
        store.record_play("R01", "dia00001turn1", tok["omikron"], "video")  # :06
        store.record_ratings("R01", "dia00001turn1", {tok["zulu"]: {"naturalness": 5, "lip_sync": 3},
                                                      tok["omikron"]: {"naturalness": 2, "lip_sync": 4}})  # :07
        out = export_csv(store.rows(), tmp_path / "ratings.csv")
    z, o = side["zulu"], side["omikron"]
    expected = (
        "rater,item,system,criterion,score,swap,shown_at,answered_at,audio_plays,video_plays\n"
        f"R01,dia00001turn1,omikron,lip_sync,4,{o},2026-01-01T00:00:00.000000+00:00,2026-01-01T00:00:07.000000+00:00,0,2\n"
        f"R01,dia00001turn1,omikron,naturalness,2,{o},2026-01-01T00:00:00.000000+00:00,2026-01-01T00:00:07.000000+00:00,0,2\n"
        f"R01,dia00001turn1,zulu,lip_sync,3,{z},2026-01-01T00:00:00.000000+00:00,2026-01-01T00:00:07.000000+00:00,1,2\n"
        f"R01,dia00001turn1,zulu,naturalness,5,{z},2026-01-01T00:00:00.000000+00:00,2026-01-01T00:00:07.000000+00:00,1,2\n"
    )
    assert {z, o} == {0, 1}
    assert out.read_bytes().decode("utf-8") == expected
    assert tuple(next(csv.reader(io.StringIO(expected)))) == EXPORT_COLUMNS


# --- analysis ---------------------------------------------------------------------------------------------


def _row(rater, item, system, score, criterion="naturalness"):
    return RatingRow(rater, item, system, criterion, score, 0, "", "", 0, 1)


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", Annenberg School for Communication,
# section C: 4 observers x 12 units with missing values (None). Published: nominal 0.743, ordinal 0.815,
# interval 0.849, ratio 0.797.
KRIPPENDORFF_2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


@pytest.mark.parametrize("level, published", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849),
                                              ("ratio", 0.797)])
def test_alpha_matches_krippendorffs_published_example(level, published):
    rows = [_row(rater, f"unit{u:02d}", "zulu", v) for rater, values in KRIPPENDORFF_2011.items()
            for u, v in enumerate(values, start=1) if v is not None]
    assert round(krippendorff_alpha(rows, "naturalness", level=level), 3) == published


def test_alpha_is_nan_where_it_is_undefined(study):
    same = [_row(r, "i1", "zulu", 3) for r in ("A", "B")] + [_row(r, "i2", "zulu", 3) for r in ("A", "B")]
    assert math.isnan(krippendorff_alpha(same, "naturalness"))
    alone = [_row("A", "i1", "zulu", 3), _row("B", "i2", "zulu", 4)]
    assert math.isnan(krippendorff_alpha(alone, "naturalness"))
    gold_only = [_row(r, "check", GOLD_SYSTEM, s) for r, s in (("A", 1), ("B", 5))]
    assert math.isnan(agreement(gold_only, study)["naturalness"])


def test_t_interval_matches_the_hand_worked_value(study):
    # zulu naturalness: 3, 4, 5, 4 -> mean 4, s = sqrt(2/3) = 0.81650, s/sqrt(4) = 0.40825,
    # t(0.975, df=3) = 3.18245 (tables), half width 1.29922 -> [2.70078, 5.29922]
    rows = [_row("A", "i1", "zulu", 3), _row("A", "i2", "zulu", 4), _row("B", "i1", "zulu", 5),
            _row("B", "i2", "zulu", 4), _row("A", "i1", "omikron", 2), _row("A", "check", GOLD_SYSTEM, 1)]
    scores = {(s.system, s.criterion): s for s in summarize(rows, study)}
    zulu = scores[("zulu", "naturalness")]
    assert (zulu.n, zulu.mean, zulu.method) == (4, 4.0, "t")
    assert zulu.ci_low == pytest.approx(2.70078, abs=1e-4) and zulu.ci_high == pytest.approx(5.29922, abs=1e-4)
    single = scores[("omikron", "naturalness")]
    assert single.n == 1 and single.mean == 2.0 and math.isnan(single.ci_low)
    assert scores[("zulu", "empathy")].n == 0 and math.isnan(scores[("zulu", "empathy")].mean)
    assert len(scores) == len(SYSTEMS) * len(study.criteria)


def test_bootstrap_over_items_is_reproducible_and_brackets_the_mean(study):
    rows = [_row(r, f"i{k}", "zulu", 1 + (k * 7 + ord(r)) % 5) for r in "ABC" for k in range(8)]
    first = [s for s in summarize(rows, study, method="bootstrap") if s.system == "zulu"][2]
    again = [s for s in summarize(rows, study, method="bootstrap") if s.system == "zulu"][2]
    assert first == again and first.method == "bootstrap"
    assert first.ci_low < first.mean < first.ci_high
    with pytest.raises(InputError, match="choose from t, bootstrap"):
        summarize(rows, study, method="jackknife")


def test_win_rates_count_paired_scores_and_ties_half(study):
    # A: i1 4>3 win, i2 2=2 tie, i3 1<5 loss; B: i1 5>4 win, i2 4=4 tie; B's i3 has no omikron score
    rows = [_row("A", "i1", "zulu", 4), _row("A", "i1", "omikron", 3), _row("A", "i2", "zulu", 2),
            _row("A", "i2", "omikron", 2), _row("A", "i3", "zulu", 1), _row("A", "i3", "omikron", 5),
            _row("B", "i1", "zulu", 5), _row("B", "i1", "omikron", 4), _row("B", "i2", "zulu", 4),
            _row("B", "i2", "omikron", 4), _row("B", "i3", "zulu", 3)]
    rates = {(w.system, w.other, w.criterion): w for w in win_rates(rows, study)}
    zulu = rates[("zulu", "omikron", "naturalness")]
    assert (zulu.wins, zulu.losses, zulu.ties, zulu.n, zulu.rate) == (2, 1, 2, 5, 0.6)
    omikron = rates[("omikron", "zulu", "naturalness")]
    assert (omikron.wins, omikron.losses, omikron.ties, omikron.rate) == (1, 2, 2, 0.4)
    assert rates[("zulu", "omikron", "empathy")].n == 0 and math.isnan(rates[("zulu", "omikron", "empathy")].rate)


def test_gold_failure_rate_per_rater(study):
    def check(rater, item, score):
        return [RatingRow(rater, item, GOLD_SYSTEM, c, score, 0, "", "", 0, 1) for c in study.criterion_ids]

    rows = (check("A", "check-choose-2", 2) + check("A", "check-mismatch", 1) + check("B", "check-choose-2", 3)
            + check("B", "check-mismatch", 2) + [_row("C", "i1", "zulu", 4)])
    results = {g.rater: g for g in gold_failures(rows, study)}
    assert (results["A"].n_checks, results["A"].n_failed, results["A"].failure_rate) == (2, 0, 0.0)
    b = results["B"]
    assert (b.n_failed, b.failure_rate, b.failed_items) == (1, 0.5, ("check-choose-2",))
    assert results["C"].n_checks == 0 and math.isnan(results["C"].failure_rate)


def test_preference_counts_and_the_report_files(store, study, tmp_path):
    for rater, choice in (("R01", "left"), ("R02", "right"), ("R03", "none")):
        plan = make_plan(study, rater, media_dir=tmp_path / "served")
        for position in range(1, plan.n_trials + 1):
            _answer(store, plan, plan.trial(position), score=1 + (position + len(rater)) % 5, choice=choice)
    (count,) = preference_counts(store.preference_rows(), study)
    assert (count.system_a, count.system_b) == SYSTEMS
    assert count.n == 3 * N_ITEMS and count.none == N_ITEMS and count.a + count.b == 2 * N_ITEMS

    report = write_report(store, tmp_path / "report")
    summary = json.loads(report.summary_json.read_text(encoding="utf-8"))
    assert "NaN" not in report.summary_json.read_text(encoding="utf-8")
    assert summary["n_raters"] == 3 and summary["n_ratings"] == 3 * N_ITEMS * len(SYSTEMS) * len(study.criteria)
    assert set(summary["krippendorff_alpha_ordinal"]) == set(study.criterion_ids)
    assert {g["rater"]: g["n_checks"] for g in summary["gold"]} == {"R01": 2, "R02": 2, "R03": 2}
    with report.ratings_csv.open(encoding="utf-8") as f:
        assert sum(1 for _ in f) == 1 + len(store.rows())
    from PIL import Image

    with Image.open(report.plot) as image:
        assert image.format == "PNG" and image.width > 500 and image.height > 300
        colours = {c for _, c in image.convert("RGB").getcolors(1 << 20)}
    assert (0x00, 0x72, 0xB2) in colours and (0xE6, 0x9F, 0x00) in colours  # one bar colour per system


def test_importing_the_rating_library_loads_no_ui_and_no_heavy_module():
    code = ("import sys, e3rg_core.rating; "
            "print(sorted(m for m in ('gradio', 'numpy', 'scipy', 'PIL', 'krippendorff') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_organiser_commands(tmp_path, capsys):
    from e3rg_core.rating.__main__ import main

    a = _batch(tmp_path / "a", [("00001", "1"), ("00002", "1")])
    b = _batch(tmp_path / "b", [("00001", "1"), ("00002", "1")])
    assert main(["from-batch", "--system", f"sysa={a}", "--system", f"sysb={b}", "--out", str(tmp_path / "st"),
                 "--preference"]) == 0
    assert main(["validate", str(tmp_path / "st" / "study.toml")]) == 0
    assert "st: 2 items, 0 attention checks, systems sysa, sysb" in capsys.readouterr().out
    study = load_study(tmp_path / "st" / "study.toml")
    with RatingStore(tmp_path / "r.sqlite3", study) as store:
        for rater in ("R1", "R2"):
            plan = make_plan(study, rater, media_dir=tmp_path / "served")
            for position in (1, 2):
                trial = plan.trial(position)
                _answer(store, plan, trial, score=2 + int(trial.item_id[3:8]))  # both raters agree
    assert main(["report", str(tmp_path / "st" / "study.toml"), str(tmp_path / "r.sqlite3"),
                 "--out", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out
    assert "Krippendorff's alpha (ordinal) naturalness: 1.000" in out and "scores.png" in out
    assert main(["validate", str(tmp_path / "missing.toml")]) == 2
    assert "does not exist" in capsys.readouterr().err
