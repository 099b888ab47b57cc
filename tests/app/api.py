"""Calling the app's API as a script does (``docs/api.md``): a turn's named result, a conversation's turns."""

from __future__ import annotations

#: the names of ``/turn``'s (and ``/redo``'s) outputs, in order
OUT = ("sid", "emotion", "distribution", "reply", "audio", "video", "timings", "crisis", "details")


def file(path):
    from gradio_client import handle_file

    return handle_file(str(path)) if path else None


def turn(client, sid, text, avatar="amara", audio=None, video=None) -> dict:
    """One ``/turn``; its outputs by name."""
    return dict(zip(OUT, client.predict(sid, avatar, text, file(audio), file(video), api_name="/turn")))


def conversation(client, sid) -> list[dict]:
    """The turns of the conversation ``sid`` names, as ``/resume`` returns them."""
    return client.predict(sid, api_name="/resume")[2]


def user_texts(client, sid) -> list[str]:
    return [t["user_text"] for t in conversation(client, sid)]
