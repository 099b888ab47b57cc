"""The page's hands-free rooms (``e3rg_core.ui.live``) without a browser: utterances, barge-in, echo, bad pieces."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import soundfile

from e3rg_core.errors import InputError
from e3rg_core.ui.live import LiveRooms
from tests.unit import test_live
from tests.unit.test_live import SR, Recogniser, room_echo, silence, white_noise

MIC_HZ = 48000


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> dict[str, np.ndarray]:
    """The person, another person and the avatar's reply, as in ``tests/unit/test_live.py``."""
    return test_live.voices.__wrapped__(tmp_path_factory)


def pieces(samples: np.ndarray, piece_s: float = 0.1) -> list[tuple[int, np.ndarray]]:
    """The stream as Gradio's numpy microphone hands it over: (rate, int16 samples) every ``piece_s``."""
    import soxr

    pcm = (np.clip(soxr.resample(samples, SR, MIC_HZ), -1, 1) * 32767).astype(np.int16)
    step = int(piece_s * MIC_HZ)
    return [(MIC_HZ, pcm[i: i + step]) for i in range(0, len(pcm), step)]


def hear_all(rooms: LiveRooms, key: str, samples: np.ndarray, *, playing: bool = False, start_s: float = 0.0):
    """Feed every piece in order (``playing``: the reply plays from ``start_s`` on); the updates, and any later
    ones the room's thread had not finished when its piece went back."""
    updates = []
    for k, chunk in enumerate(pieces(samples)):
        updates.append(rooms.hear(key, chunk, playing=playing, position_s=start_s + k * 0.1))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # what the room is still hearing comes with later (silent) pieces
        late = rooms.hear(key, (MIC_HZ, np.zeros(480, np.int16)), playing=False)
        updates.append(late)
        if late.utterance is None and not rooms.room(key)._inbox.qsize():
            break
        time.sleep(0.05)
    return updates


@pytest.fixture()
def rooms(tmp_path):
    made = LiveRooms(tmp_path / "live", lambda: Recogniser())
    yield made
    for key in list(made._rooms):
        made.close(key)


def test_a_pause_ends_an_utterance_that_waits_for_its_turn(rooms, speech):
    updates = hear_all(rooms, "page", np.concatenate([silence(0.5), speech["user"], silence(1.2)]))
    statuses = [u.status for u in updates]
    assert "hearing" in statuses and statuses[0] == "listening"
    ids = [u.utterance for u in updates if u.utterance]
    assert len(ids) == 1
    utterance = rooms.take("page", ids[0])
    assert utterance.transcript.text.startswith("heard") and Path(utterance.wav_path).is_file()
    with pytest.raises(InputError, match="answered already"):
        rooms.take("page", ids[0])


def test_the_page_is_told_at_the_pause_and_the_turn_waits_for_the_words(tmp_path, speech):
    rooms = LiveRooms(tmp_path / "live", lambda: Recogniser(delay_s=1.0))
    try:
        told = None
        for chunk in pieces(np.concatenate([silence(0.5), speech["user"], silence(1.0)])):
            update = rooms.hear("page", chunk)
            told = told or update.utterance
        assert told is not None  # before the (1-s) recognition of the last words ended
        began = time.monotonic()
        utterance = rooms.take("page", told)
        assert utterance.transcript.text.startswith("heard") and time.monotonic() - began > 0.1
    finally:
        rooms.close("page")


def test_silence_and_noise_make_no_utterance(rooms):
    updates = hear_all(rooms, "page", np.concatenate([silence(1.0), white_noise(2.0, 0.05), silence(1.0)]))
    assert not any(u.utterance for u in updates) and {u.status for u in updates} == {"listening"}


REPLY = "It sounds like that day asked a lot of you."


def playing_reply(rooms, speech, folder: Path):
    """The avatar's reply on the page of room "page": its voice handed to the room; the reply's cancel token."""
    room = rooms.room("page")
    reply_wav = folder / "reply.wav"
    soundfile.write(str(reply_wav), speech["reply"], SR)
    reply = room.begin_reply()
    room.add_piece(str(reply_wav), REPLY)
    return reply


def test_talking_over_the_reply_cuts_it_where_it_was(rooms, speech, tmp_path):
    reply = playing_reply(rooms, speech, tmp_path)
    reply.add_piece(REPLY, len(speech["reply"]) / SR)
    updates = hear_all(rooms, "page", np.concatenate([silence(0.3), speech["other"], silence(1.2)]), playing=True,
                       start_s=0.5)
    cut = [u for u in updates if u.barge_in is not None]
    assert len(cut) == 1 and cut[0].cut is not None and reply.cancelled
    assert 0.5 < cut[0].barge_in < 2.0 and cut[0].cut.part.spoken  # cut soon after the person began
    assert any(u.utterance for u in updates)  # and what they said is answered


def test_the_replys_own_echo_neither_cuts_it_nor_makes_a_turn(rooms, speech, tmp_path):
    reply = playing_reply(rooms, speech, tmp_path)
    echo = room_echo(speech["reply"], delay_s=0.15, gain_db=-18, snr_db=15)
    updates = hear_all(rooms, "page", echo, playing=True)
    assert not any(u.barge_in is not None for u in updates) and not reply.cancelled
    assert not any(u.utterance for u in updates)


def test_a_bad_piece_is_refused_and_the_room_goes_on(rooms, speech):
    with pytest.raises(InputError):
        rooms.hear("page", "not audio at all")
    with pytest.raises(InputError, match="page session"):
        rooms.hear("", (MIC_HZ, np.zeros(480, np.int16)))
    with pytest.raises(InputError, match="NaN"):  # told with its own piece, or with the next one
        rooms.hear("page", (MIC_HZ, np.zeros(10, np.float64) + np.nan))
        time.sleep(0.3)
        rooms.hear("page", (MIC_HZ, np.zeros(480, np.int16)))
    updates = hear_all(rooms, "page", np.concatenate([speech["user"], silence(1.2)]))
    assert any(u.utterance for u in updates)  # the room still hears


def test_a_second_tab_listening_in_the_same_conversation_is_told(rooms):
    assert rooms.open("tab-1", "c" * 32) == ""
    assert "another tab" in rooms.open("tab-2", "c" * 32)
    assert rooms.open("tab-3", "d" * 32) == ""  # another conversation


def test_pieces_the_page_joined_while_the_server_was_busy_are_heard_whole(rooms, speech, tmp_path):
    """The page's microphone joins the pieces it records while one is unanswered and sends them behind the
    first piece's header, as a file (``type="filepath"``): every sample is heard, not the header's length
    (Gradio's own numpy reading cut each to it)."""
    from tests.unit.test_live import gradio_pieces

    said = np.concatenate([silence(0.5), speech["user"], silence(1.2)])
    sent = gradio_pieces(said, rate_hz=MIC_HZ, piece_s=0.25)
    header, payloads = sent[0][:44], [piece[44:] for piece in sent]
    joined = [payloads[0]] + [b"".join(payloads[i: i + 3]) for i in range(1, len(payloads), 3)]  # a busy server
    ids = []
    for k, payload in enumerate(joined):
        path = tmp_path / f"piece-{k}.wav"
        path.write_bytes(header + payload)
        ids += [u for u in [rooms.hear("page", str(path)).utterance] if u]
    room = rooms.room("page")
    assert room.submit((MIC_HZ, np.zeros(0, np.int16)), False, 0.0).wait(10)  # heard after all before it
    assert abs(room.listener.heard_s - len(said) / SR) < 0.05  # the resampler holds a few ms back
    ids += [u for u in [rooms.hear("page", (MIC_HZ, np.zeros(480, np.int16))).utterance] if u]
    assert len(ids) == 1
