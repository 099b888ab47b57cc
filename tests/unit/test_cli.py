import json

import pytest

from e3rg_core.cli import build_parser, main, read_history
from e3rg_core.errors import InputError
from e3rg_core.types import Utterance


def test_history_json(tmp_path):
    f = tmp_path / "h.json"
    f.write_text(json.dumps([{"role": "speaker", "text": "I had my test."},
                             {"role": "listener", "utterance": "How did it go?"}]))
    assert read_history(f) == (Utterance("speaker", "I had my test."), Utterance("listener", "How did it go?"))


def test_history_lines(tmp_path):
    f = tmp_path / "h.txt"
    f.write_text("Speaker: I had my test.\n\nListener: How did it go?\nuser: badly: I failed\n")
    assert read_history(f)[-1] == Utterance("speaker", "badly: I failed")


@pytest.mark.parametrize("name,content,match", [
    ("h.json", "{not json", "not valid JSON"),
    ("h.json", '{"role": "speaker"}', "JSON list"),
    ("h.json", '[{"role": "narrator", "text": "x"}]', "role in"),
    ("h.txt", "Narrator: once upon a time", "must start with 'Speaker:'"),
])
def test_history_errors(tmp_path, name, content, match):
    f = tmp_path / name
    f.write_text(content)
    with pytest.raises(InputError, match=match):
        read_history(f)


def test_missing_history_file_is_a_clean_error(tmp_path, capsys):
    assert main(["understand", "--text", "hi", "--history", str(tmp_path / "nope.json")]) == 2
    assert "cannot read history file" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["audio", "video"])
def test_a_missing_turn_recording_is_a_clean_error_before_any_model_loads(tmp_path, capsys, kind):
    assert main(["understand", "--text", "hi", f"--{kind}", str(tmp_path / "nope")]) == 2
    assert f"--{kind} {tmp_path / 'nope'}: no such file" in capsys.readouterr().err


def test_parser_rejects_two_shots():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["understand", "--text", "x", "--shots", "2"])


def test_an_operator_publishes_and_deletes_custom_avatars(tmp_path, monkeypatch, capsys):
    import shutil

    from e3rg_core.memory.ownership import AvatarOwner, read_owner, write_owner
    from e3rg_core.memory.profiles import AVATARS_DIR

    monkeypatch.setenv("E3RG_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("E3RG_CONFIG", raising=False)
    folder = tmp_path / "avatars" / "sam-3f9c1e"
    shutil.copytree(AVATARS_DIR / "kofi", folder)
    write_owner(folder, AvatarOwner("browser:" + "a" * 32))
    assert main(["avatars", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"id": "sam-3f9c1e", "name": "Kofi", "owner": "browser:" + "a" * 32, "published": False}]
    assert main(["avatars", "publish", "sam-3f9c1e"]) == 0 and read_owner(folder).published
    assert main(["avatars", "unpublish", "sam-3f9c1e"]) == 0 and not read_owner(folder).published
    capsys.readouterr()
    assert main(["avatars", "publish", "amara"]) == 2 and "everybody's already" in capsys.readouterr().err
    assert main(["avatars", "delete", "sam-3f9c1e"]) == 0 and not folder.exists()
    assert main(["avatars", "delete", "sam-3f9c1e"]) == 2 and "no custom avatar" in capsys.readouterr().err
