"""``render``: the command line subcommand."""

from __future__ import annotations

import argparse
import json

import pytest

from e3rg_core.errors import InputError
from e3rg_core.media.mp4 import probe
from e3rg_core.video.command import add_command, read_visemes
from tests.video_support import make_speech, portrait_path


def _run(argv, capsys):
    parser = argparse.ArgumentParser()
    parser.add_argument("--config")
    add_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    assert args.func(args) == 0
    return capsys.readouterr().out


def test_render_a_portrait_with_a_fine_label(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("E3RG_CACHE_DIR", str(tmp_path / "cache"))
    speech = make_speech(tmp_path / "s.wav", duration_s=1.2)
    (tmp_path / "v.json").write_text(json.dumps([
        {"start_s": u.start_s, "end_s": u.end_s, "symbol": u.symbol} for u in speech.visemes]))
    out = _run(["render", "--portrait", str(portrait_path()), "--audio", str(speech.wav_path), "--emotion", "joyful",
                "--visemes", str(tmp_path / "v.json"), "--size", "256", "-o", str(tmp_path / "o.mp4"), "--json"], capsys)
    payload = json.loads(out)
    assert payload["emotion"] == "happy" and payload["intensity"] == 0.9  # the wheel's joyful
    assert (payload["width"], payload["n_frames"]) == (256, 30)
    assert probe(tmp_path / "o.mp4").audio_codec == "aac"


def test_render_a_shipped_avatar_and_name_the_known_ones(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("E3RG_CACHE_DIR", str(tmp_path / "cache"))
    speech = make_speech(tmp_path / "s.wav", duration_s=0.6)
    out = _run(["render", "--avatar", "kofi", "--audio", str(speech.wav_path), "--emotion", "sad",
                "--size", "192", "-o", str(tmp_path / "o.mp4"), "--json"], capsys)
    payload = json.loads(out)
    assert (payload["emotion"], payload["width"], payload["n_frames"]) == ("sad", 192, 15)
    with pytest.raises(InputError, match="unknown avatar 'bob'; choose from .*amara"):
        _run(["render", "--avatar", "bob", "--audio", str(speech.wav_path), "-o", str(tmp_path / "x.mp4")], capsys)
    assert not (tmp_path / "x.mp4").exists()


def test_bad_viseme_file(tmp_path):
    (tmp_path / "v.json").write_text('[{"start": 0}]')
    with pytest.raises(InputError, match="start_s"):
        read_visemes(tmp_path / "v.json")
