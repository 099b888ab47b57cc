"""The AvaMERG loader: the shipped sample, the untidy cases it tolerates, and what it refuses."""

import json
import shutil

import pytest

from e3rg_core.errors import InputError
from e3rg_core.eval.avamerg import SAMPLE_DIR, load_avamerg, media_name
from e3rg_core.memory import AvatarLibrary

DATA = SAMPLE_DIR / "dialogues.json"
MEDIA = SAMPLE_DIR / "media"


def _conv(cid="00001", turns=None, **extra):
    turns = [{"turn_id": "0", "context": "c", "response": "That is hard.",
              "dialogue_history": [{"index": 0, "role": "speaker", "utterance": "My dog ran away."}],
              "chain_of_empathy": {"speaker_emotion": "sad"}}] if turns is None else turns
    return {"conversation_id": cid, "speaker_profile": {"age": "young", "gender": "male", "timbre": "mid", "ID": 1},
            "listener_profile": {"age": "elderly", "gender": "female", "timbre": "low", "ID": 2},
            "topic": "t", "turns": turns, **extra}


def _write(tmp_path, data, name="d.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_the_sample_loads_with_its_media_and_report():
    ds = load_avamerg(DATA, media_dir=MEDIA)
    r = ds.report
    assert (r.conversations, r.turns, r.labelled_turns) == (6, 14, 11)
    assert [c.id for c in ds.conversations] == ["00001", "00002", "00003", "00004", "00005", "00006"]
    assert r.counts["missing_chain_of_empathy"] == 2  # 00006 has no chain_of_empathy, as the test split
    assert r.counts["unknown_labels"] == 1 and "bittersweet" in r.examples["unknown_labels"][0]
    assert r.counts["normalised_labels"] == 1 and "'worried' -> anxious" in r.examples["normalised_labels"][0]
    assert r.counts["lines_with_audio"] == 4 and r.counts["queries_without_media"] == 10
    first = ds.conversations[0]
    last = first.turns[-1]
    assert (last.turn_id, last.gold, last.chain.speaker_emotion) == ("2", "devastated", "devastated")
    # the speaker's line to answer and the dialogue before it
    assert last.query.index == 4 and last.query.text.startswith("Twelve years with her")
    assert [u.role for u in last.history] == ["speaker", "listener", "speaker", "listener"]
    assert last.query.audio_path == MEDIA / "dia00001utt4_3.wav" and last.query.video_path is None
    assert first.turns[0].query.audio_path is None  # no clip: text only
    # the capitalised label is the candidate itself; the unknown one keeps its raw text
    assert ds.conversations[2].turns[-1].gold == "furious"
    unknown = ds.conversations[4].turns[-1]
    assert unknown.gold is None and unknown.chain.speaker_emotion == "bittersweet"
    assert all(t.gold is None and t.chain is None for t in ds.conversations[5].turns)


def test_profiles_map_onto_the_avatars_attributes():
    ds = load_avamerg(DATA)
    listener = ds.conversations[3].listener  # written "Middle aged", "Female", "medium"
    assert (listener.id, listener.age, listener.gender, listener.timbre) == ("9", "middle-aged", "female", "mid")
    library = AvatarLibrary()
    picked = [library.resolve(age=c.listener.age, gender=c.listener.gender, timbre=c.listener.timbre).id
              for c in ds.conversations]
    # exact matches for 00002, 00003 and 00006; 00005 (young male, mid) takes the male avatar of its
    # timbre; a middle-aged woman (00001, 00004) has no match of age or timbre: the default, a woman
    assert picked == ["amara", "kofi", "rosa", "amara", "daniel", "amara"]
    assert library.get(picked[0]).gender == "female"


def test_unmapped_attributes_and_missing_ids_are_counted(tmp_path):
    conv = _conv()
    conv["listener_profile"] = {"age": "ageless", "gender": "female", "timbre": "squeaky"}
    ds = load_avamerg(_write(tmp_path, [conv]))
    listener = ds.conversations[0].listener
    assert (listener.id, listener.age, listener.gender, listener.timbre) == ("", None, "female", None)
    assert ds.report.counts["unmapped_attributes"] == 2 and ds.report.counts["missing_profile_id"] == 1


def test_missing_media_means_text_only(tmp_path):
    empty = tmp_path / "media"
    empty.mkdir()
    ds = load_avamerg(DATA, media_dir=empty)
    assert all(line.audio_path is None and line.video_path is None
               for c in ds.conversations for t in c.turns for line in t.lines)
    assert ds.report.counts["queries_without_media"] == 14
    with pytest.raises(InputError, match="media folder .* does not exist"):
        load_avamerg(DATA, media_dir=tmp_path / "nowhere")


def test_media_in_the_challenges_subfolders(tmp_path):
    (tmp_path / "audio_v5_0").mkdir()
    (tmp_path / "video_v5_0").mkdir()
    shutil.copy(MEDIA / "dia00002utt2_8.wav", tmp_path / "audio_v5_0" / "dia00002utt2_8.wav")
    (tmp_path / "video_v5_0" / media_name("00002", 2, "8", ".mp4")).write_bytes(b"\0")
    query = load_avamerg(DATA, media_dir=tmp_path).conversations[1].turns[-1].query
    assert query.audio_path.parent.name == "audio_v5_0" and query.video_path.name == "dia00002utt2_8.mp4"


def test_untidy_but_acceptable_records(tmp_path):
    turns = [{"turn_id": 0, "dialogue_history": [{"index": "0", "role": "Speaker", "utterance": " Hi  there "}],
              "chain_of_empathy": {"speaker_emotion": "  "}},
             {"turn_id": 1, "dialogue_history": [{"index": 0, "role": "listener", "utterance": "only me"}]}]
    data = [_conv(7, turns=turns), _conv("00008", turns=[])]
    ds = load_avamerg(_write(tmp_path, data))
    assert [c.id for c in ds.conversations] == ["00007"]  # an int id is zero-padded to 5 digits
    turn = ds.conversations[0].turns[0]
    assert (turn.turn_id, turn.query.text, turn.gold, turn.response) == ("0", "Hi there", None, "")
    counts = ds.report.counts
    assert counts["missing_chain_of_empathy"] == 1  # an empty speaker_emotion counts as missing
    assert counts["turns_without_speaker"] == 1 and counts["empty_conversations"] == 1


@pytest.mark.parametrize("content,message", [
    ("{not json", "is not valid JSON"),
    ('{"conversations": []}', "holds a JSON dict; expected a list of conversations"),
    ('["x"]', "conversation #0: expected an object"),
    ('[{"turns": []}]', "'conversation_id' is missing"),
    ('[{"conversation_id": "00001"}]', "'turns' must be a list"),
])
def test_malformed_files_are_input_errors_naming_the_file(tmp_path, content, message):
    path = _write(tmp_path, content)
    with pytest.raises(InputError, match=message) as info:
        load_avamerg(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("change,message", [
    (lambda c: c["turns"][0]["dialogue_history"][0].update(role="narrator"), "expected speaker or listener"),
    (lambda c: c["turns"][0]["dialogue_history"][0].update(utterance=None), "'utterance' must be a string"),
    (lambda c: c["turns"][0]["dialogue_history"][0].update(index=-1), "expected a non-negative integer"),
    (lambda c: c["turns"][0].update(dialogue_history="hello"), "'dialogue_history' must be a list"),
    (lambda c: c["turns"].append(dict(c["turns"][0])), "turn_id 0 appears twice"),
])
def test_malformed_records_say_where(tmp_path, change, message):
    conv = _conv()
    change(conv)
    with pytest.raises(InputError, match=message) as info:
        load_avamerg(_write(tmp_path, [conv]))
    assert "conversation #0 (00001), turn #" in str(info.value)


def test_duplicate_conversations_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="appears twice"):
        load_avamerg(_write(tmp_path, [_conv(), _conv()]))
    with pytest.raises(InputError, match="does not exist"):
        load_avamerg(tmp_path / "missing.json")
