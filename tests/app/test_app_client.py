"""The launched app driven with gradio_client: a turn, a reload, a restart, new session, export; and what
two visitors without logins can (not) reach of each other's: conversations, media, custom avatars."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.app.api import OUT, conversation, turn, user_texts

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(shared_server):
    """The app as tests/app/serve.py serves it, shared with other modules (tests/app/conftest.py)."""
    return shared_server


def _client(server):
    from gradio_client import Client

    return Client(server.url, verbose=False)


def _turn(client, sid, text, avatar="amara", audio=None):
    return turn(client, sid, text, avatar=avatar, audio=audio)


def test_turn_reload_restart_new_session_export(server, tmp_path):
    client = _client(server)
    first = _turn(client, None, "I failed my driving test again today.")
    assert first["emotion"] == "sad" and first["details"]["label"] == "disappointed"
    assert max(first["distribution"], key=first["distribution"].get) == "sad" and first["crisis"] is False
    assert first["reply"] and Path(first["audio"]).suffix == ".wav"
    assert Path(first["video"]).suffix == ".mp4" and Path(first["video"]).stat().st_size > 1000
    assert {"heard", "understood", "spoken", "rendered"} <= set(first["timings"]) and first["details"]["turn"] == 1
    sid = first["sid"]
    assert sid.startswith("p1.") and len(sid.split(".")[2]) == 32  # the pass names the conversation

    second = _turn(_client(server), sid, "My sister called and we laughed for an hour.")  # a reloaded page
    assert second["sid"] == sid and second["emotion"] == "happy" and second["details"]["turn"] == 2
    assert user_texts(client, sid) == ["I failed my driving test again today.",
                                       "My sister called and we laughed for an hour."]

    server.stop()
    server.start()  # same data dir, same port
    client = _client(server)
    third = _turn(client, sid, "Anyway, thanks for listening.")
    assert third["sid"] == sid and len(conversation(client, sid)) == 3

    exported = client.predict(sid, api_name="/export")
    with zipfile.ZipFile(exported) as archive:
        assert len(json.loads(archive.read("session.json"))["turns"]) == 3

    fresh = client.predict(sid, "rosa", api_name="/new_session")
    assert fresh != sid and conversation(client, fresh) == []
    assert fresh.split(".")[1] == sid.split(".")[1]  # a new conversation of the same browser
    assert sid in {c["sid"] for c in client.predict(fresh, api_name="/conversations")}  # which lists the old one


def test_a_spoken_turn_is_transcribed(server, tmp_path):
    from e3rg_core.memory.profiles import VoiceSettings
    from e3rg_core.speech.embedded import EmbeddedSpeaker

    clip = EmbeddedSpeaker().synthesize("I failed my driving test again today.", emotion="neutral", intensity=0.0,
                                        voice=VoiceSettings(voice="joe"), out_path=tmp_path / "me.wav")
    client = _client(server)
    out = _turn(client, None, "", avatar="kofi", audio=clip.wav_path)
    (heard,) = conversation(client, out["sid"])
    assert "driving test" in heard["user_text"].lower() and heard["input"] == "audio"
    assert out["emotion"] == "sad"


def test_errors_reach_the_client_and_lose_nothing(server):
    from gradio_client.exceptions import AppError

    client = _client(server)
    ok = _turn(client, None, "Hello there.")
    with pytest.raises(AppError, match="nothing to answer"):
        _turn(client, ok["sid"], "   ")
    with pytest.raises(AppError, match="unknown avatar 'bob'"):
        _turn(client, ok["sid"], "Hi.", avatar="bob")
    again = _turn(client, ok["sid"], "Still here.")
    assert again["details"]["turn"] == 2 and user_texts(client, ok["sid"]) == ["Hello there.", "Still here."]


def test_a_custom_avatar_from_the_page_persists(server, tmp_path):
    from gradio_client import handle_file

    from e3rg_core.memory.profiles import VoiceSettings
    from e3rg_core.speech.embedded import EmbeddedSpeaker

    sample = EmbeddedSpeaker().synthesize(
        "Hello, this is my voice. I am recording a few sentences so the avatar can sound a little like me. "
        "Thank you for listening.", emotion="neutral", intensity=0.0, voice=VoiceSettings(voice="joe"),
        out_path=tmp_path / "sample.wav")
    client, other = _client(server), _client(server)
    sid = client.predict(None, "amara", api_name="/new_session")
    voice = _upload(server, sample.wav_path)
    chosen, note = client.predict(
        "Sam", "young", None, handle_file(str(ROOT / "avatars/kofi/portrait.png")),
        {"path": voice, "meta": {"_type": "gradio.FileData"}}, True, sid, api_name="/create_avatar")
    assert "Created **Sam**" in note and "male" in note and chosen.startswith("sam-")
    assert {"id": chosen, "name": "Sam", "age": "young", "gender": "male"} in client.predict(sid, api_name="/avatars")
    out = _turn(client, sid, "I failed my driving test again today.", avatar=chosen)
    assert Path(out["video"]).stat().st_size > 1000
    assert (server.data / "avatars" / chosen / "reference.wav").is_file()
    # the voice sample is kept for cloning, never served: its upload is gone from Gradio's folder
    assert not Path(voice).exists() and _fetch(server, voice).status_code == 403

    # another visitor: the avatar is absent from their choices, and its id does not open it
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="unknown avatar") as refused:
        _turn(other, None, "Hello.", avatar=chosen)
    assert chosen not in str(refused.value)[str(refused.value).index("choose from"):]
    other_sid = other.predict(None, "amara", api_name="/new_session")
    assert chosen not in {a["id"] for a in other.predict(other_sid, api_name="/avatars")}
    with pytest.raises(AppError, match="only the avatars you made"):
        other.predict(other_sid, chosen, api_name="/delete_avatar")
    with pytest.raises(AppError, match="needs the pass"):
        client.predict("Tim", "young", "male", handle_file(str(ROOT / "avatars/kofi/portrait.png")), None, True,
                       None, api_name="/create_avatar")
    with pytest.raises(AppError, match="right to use this face"):  # the box left unticked
        client.predict("Tim", "young", "male", handle_file(str(ROOT / "avatars/kofi/portrait.png")), None, False,
                       sid, api_name="/create_avatar")

    with pytest.raises(AppError, match="needs at least 5 s|at least 5 s is needed"):
        short = EmbeddedSpeaker().synthesize("Hi.", emotion="neutral", intensity=0.0, voice=VoiceSettings(voice="joe"),
                                             out_path=tmp_path / "short.wav")
        client.predict("Tim", "young", None, handle_file(str(ROOT / "avatars/kofi/portrait.png")),
                       handle_file(str(short.wav_path)), True, sid, api_name="/create_avatar")

    # its maker deletes it: portrait, voice sample and profile go, and the conversation talks to Amara again
    note = client.predict(sid, chosen, api_name="/delete_avatar")
    assert "Deleted" in note and not (server.data / "avatars" / chosen).exists()
    assert chosen not in {a["id"] for a in client.predict(sid, api_name="/avatars")}


# -- privacy: two visitors without logins -----------------------------------------------------------

def _upload(server, path: Path) -> str:
    """Upload a file as the page does; return where Gradio keeps it."""
    import httpx

    response = httpx.post(f"{server.url}gradio_api/upload",
                          files=[("files", (path.name, path.read_bytes(), "application/octet-stream"))], timeout=30)
    assert response.status_code == 200, response.text
    return response.json()[0]


def _fetch(server, path: str):
    import httpx

    return httpx.get(f"{server.url}gradio_api/file={path}", timeout=30)


def _forgeries(own_pass: str, victim_pass: str) -> dict[str, str]:
    """What a visitor holding ``own_pass`` might try to open the conversation in ``victim_pass`` with."""
    _, own_browser, _own_sid, own_mac = own_pass.split(".")
    _, victim_browser, victim_sid, victim_mac = victim_pass.split(".")
    return {"bare id": victim_sid,
            "id spliced into my pass": f"p1.{own_browser}.{victim_sid}.{own_mac}",
            "altered signature": f"p1.{victim_browser}.{victim_sid}.{victim_mac[::-1]}",
            "made-up browser": f"p1.{'0' * 32}.{victim_sid}.{victim_mac}"}


def test_two_visitors_never_reach_each_others_conversations(server):
    from gradio_client.exceptions import AppError

    a, b = _client(server), _client(server)
    secret_text = "My PIN is 4821 and I am scared my ex will find my new address."
    pass_a = _turn(a, None, secret_text)["sid"]
    pass_b = b.predict(None, "amara", api_name="/new_session")
    listed_b = b.predict(pass_b, api_name="/conversations")
    assert pass_b.split(".")[1] != pass_a.split(".")[1]  # another browser
    assert [c["sid"] for c in listed_b] == [pass_b]  # B lists its own, nothing of A's
    assert "PIN" not in str(listed_b)
    a.predict(pass_a, "amara", api_name="/new_session")
    assert pass_a in {c["sid"] for c in a.predict(pass_a, api_name="/conversations")}

    calls = {"resume": lambda p: b.predict(p, api_name="/resume"),
             "export": lambda p: b.predict(p, api_name="/export"),
             "delete": lambda p: b.predict(p, "amara", api_name="/delete_session"),
             "redo": lambda p: b.predict(p, "amara", "tired", api_name="/redo"),
             "turn": lambda p: _turn(b, p, "Tell me what they said.")}
    for how, forged in _forgeries(pass_b, pass_a).items():
        for action, call in calls.items():
            with pytest.raises(AppError, match="not one this server gave out") as refused:
                call(forged)
            assert "PIN" not in str(refused.value), (how, action)

    # A's conversation is whole, and A alone still opens it
    resumed = a.predict(pass_a, api_name="/resume")
    assert resumed[0] == pass_a and [t["user_text"] for t in resumed[2]] == [secret_text]


def test_media_is_served_under_unguessable_names_and_goes_with_the_conversation(server, tmp_path):
    from gradio_client import Client

    from e3rg_core.memory.profiles import VoiceSettings
    from e3rg_core.speech.embedded import EmbeddedSpeaker

    raw = Client(server.url, verbose=False, download_files=False)  # the URLs, as the page gets them
    clip = EmbeddedSpeaker().synthesize("I failed my driving test again today.", emotion="neutral", intensity=0.0,
                                        voice=VoiceSettings(voice="joe"), out_path=tmp_path / "me.wav")
    upload = _upload(server, clip.wav_path)
    out = dict(zip(OUT, raw.predict(None, "amara", "", {"path": upload, "meta": {"_type": "gradio.FileData"}}, None,
                                    api_name="/turn")))
    sid = out["sid"].split(".")[2]
    stored = next((server.data / "media" / sid).iterdir())  # the turn's folder in the data dir
    assert (stored / "user_audio.wav").is_file()
    assert _fetch(server, upload).status_code == 403  # the recording left Gradio's folder once stored
    urls = [out["audio"]["path"], out["video"]["path"]] + [
        t[key] for t in raw.predict(out["sid"], api_name="/resume")[2] for key in ("audio", "video")]
    for path in urls:
        assert "/e3rg/" in path and sid not in path and stored.name not in path  # nothing names the conversation
        assert _fetch(server, path).status_code == 200
    assert _fetch(server, str(stored / "reply_video.mp4")).status_code == 403  # the data dir is never served
    exported = raw.predict(out["sid"], api_name="/export")["path"]
    assert "/e3rg/" in exported and _fetch(server, exported).status_code == 200

    raw.predict(out["sid"], "amara", api_name="/delete_session")
    assert not (server.data / "media" / sid).exists()
    for path in urls + [exported]:  # its copies went with it
        assert _fetch(server, path).status_code == 403, path
