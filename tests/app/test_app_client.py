"""The launched app driven with gradio_client: a turn, a reload, a restart, new session, export."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.app.browser_support import AppServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = AppServer(tmp_path_factory.mktemp("served"))
    server.start()
    yield server
    server.stop()


def _client(server):
    from gradio_client import Client

    return Client(server.url, verbose=False)


OUT = ("emotion", "reply_text", "reply_audio", "reply_video", "emotion_note", "timings", "chat", "timeline", "sid",
       "text_in", "audio_in", "video_in", "check_note", "correction")


def _turn(client, sid, text, avatar="nova", audio=None):
    from gradio_client import handle_file

    result = client.predict(sid, avatar, text, handle_file(str(audio)) if audio else None, None, api_name="/turn")
    return dict(zip(OUT, result))


def test_turn_reload_restart_new_session_export(server, tmp_path):
    client = _client(server)
    first = _turn(client, None, "I failed my driving test again today.")
    assert first["emotion"]["label"] == "sad" and "disappointed" in first["emotion_note"]
    assert first["reply_text"] and Path(first["reply_audio"]).suffix == ".wav"
    assert Path(first["reply_video"]).suffix == ".mp4" and Path(first["reply_video"]).stat().st_size > 1000
    assert "total" in first["timings"] and first["text_in"] == ""
    sid = first["sid"]
    assert len(sid) == 32

    second = _turn(_client(server), sid, "My sister called and we laughed for an hour.")  # a reloaded page
    assert second["sid"] == sid and second["emotion"]["label"] == "happy"
    texts = [m["content"][0].get("text") for m in second["chat"] if m["role"] == "user"]
    assert texts == ["I failed my driving test again today.", "My sister called and we laughed for an hour."]

    server.stop()
    server.start()  # same data dir, same port
    client = _client(server)
    third = _turn(client, sid, "Anyway, thanks for listening.")
    assert third["sid"] == sid and sum(m["role"] == "user" for m in third["chat"]) == 3

    exported = client.predict(sid, api_name="/export")
    with zipfile.ZipFile(exported) as archive:
        assert len(json.loads(archive.read("session.json"))["turns"]) == 3

    fresh = client.predict("margaret", api_name="/new_session")
    assert fresh[0] != sid and fresh[1] == []


def test_a_spoken_turn_is_transcribed(server, tmp_path):
    from e3rg_core.memory.profiles import VoiceSettings
    from e3rg_core.speech.embedded import EmbeddedSpeaker

    clip = EmbeddedSpeaker().synthesize("I failed my driving test again today.", emotion="neutral", intensity=0.0,
                                        voice=VoiceSettings(voice="joe"), out_path=tmp_path / "me.wav")
    out = _turn(_client(server), None, "", avatar="walter", audio=clip.wav_path)
    user = [m for m in out["chat"] if m["role"] == "user"][0]["content"][0]["text"]
    assert "driving test" in user.lower() and user.startswith("🎙")
    assert out["emotion"]["label"] == "sad"


def test_errors_reach_the_client_and_lose_nothing(server):
    from gradio_client.exceptions import AppError

    client = _client(server)
    ok = _turn(client, None, "Hello there.")
    with pytest.raises(AppError, match="nothing to answer"):
        _turn(client, ok["sid"], "   ")
    with pytest.raises(AppError, match="unknown avatar 'bob'"):
        _turn(client, ok["sid"], "Hi.", avatar="bob")
    again = _turn(client, ok["sid"], "Still here.")
    assert sum(m["role"] == "user" for m in again["chat"]) == 2


def test_a_custom_avatar_from_the_page_persists(server, tmp_path):
    from gradio_client import handle_file

    from e3rg_core.memory.profiles import VoiceSettings
    from e3rg_core.speech.embedded import EmbeddedSpeaker

    sample = EmbeddedSpeaker().synthesize(
        "Hello, this is my voice. I am recording a few sentences so the avatar can sound a little like me. "
        "Thank you for listening.", emotion="neutral", intensity=0.0, voice=VoiceSettings(voice="joe"),
        out_path=tmp_path / "sample.wav")
    client = _client(server)
    note, _gallery, update = client.predict("Sam", "young", None, handle_file(str(ROOT / "avatars/walter/portrait.png")),
                                            handle_file(str(sample.wav_path)), None, api_name="/create_avatar")
    chosen = update["value"]  # the avatar dropdown now shows the new avatar
    assert "Created **Sam**" in note and "male" in note and chosen.startswith("sam-")
    out = _turn(client, None, "I failed my driving test again today.", avatar=chosen)
    assert Path(out["reply_video"]).stat().st_size > 1000
    assert (server.data / "avatars" / chosen / "reference.wav").is_file()
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="needs at least 5 s|at least 5 s is needed"):
        short = EmbeddedSpeaker().synthesize("Hi.", emotion="neutral", intensity=0.0, voice=VoiceSettings(voice="joe"),
                                             out_path=tmp_path / "short.wav")
        client.predict("Tim", "young", None, handle_file(str(ROOT / "avatars/walter/portrait.png")),
                       handle_file(str(short.wav_path)), None, api_name="/create_avatar")
