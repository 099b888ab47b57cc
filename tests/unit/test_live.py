"""Hands-free mode (issue 23): the endpointer, the browser's WAV pieces, the listener, barge-in and turn control.

The speech is the embedded voices' (``heart``, female; ``joe``, male), made once for the module; the
voice activity detector is the real Silero VAD inside faster-whisper. Noise and music are synthetic:
white noise at three levels, a held chord and a plucked melody. The microphone stream is sent the way
Gradio's streaming ``gr.Audio`` sends it: 44.1 kHz 16-bit WAV pieces of 0.5 s, each behind the first
piece's 44-byte header. One test runs the real Whisper base; the others recognise with a double.
"""

from __future__ import annotations

import io
import struct
import threading
import time
import wave
from pathlib import Path

import numpy as np
import pytest
import soundfile
import soxr

from e3rg_core.errors import ConfigError, InputError
from e3rg_core.live import chunks
from e3rg_core.live.control import TurnControl, spoken_part
from e3rg_core.live.echo import (BargeInOptions, BargeInReason, EchoOptions, decide_barge_in, echo_score,
                                 played_reference, reply_word_share)
from e3rg_core.live.listener import Listener, ListenerOptions, ListenerState
from e3rg_core.live.vad import WINDOW_S, WINDOW_SAMPLES, Endpointer, EndpointerOptions, SpeechEnd, SpeechStart, silero_model
from e3rg_core.perception.asr import Transcript

SR = 16000
MIC_HZ = 44100
USER_TEXT = "I had a really long day at work and I just want to talk about it."
OTHER_TEXT = "My brother called me this morning with some news about the new house."
REPLY_TEXT = "It sounds like that day asked a lot of you. What happened at work that stayed with you the most?"


# --- fixtures and signals ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def voices(tmp_path_factory) -> dict[str, np.ndarray]:
    """Three sentences from the embedded voices at 16 kHz: the person, another person, the avatar's reply."""
    from e3rg_core.memory.profiles import VoiceSettings
    from e3rg_core.speech.embedded import EmbeddedSpeaker

    folder = tmp_path_factory.mktemp("live-speech")
    speaker = EmbeddedSpeaker()
    out = {}
    for name, voice, text in (("user", "heart", USER_TEXT), ("other", "joe", OTHER_TEXT),
                              ("reply", "heart", REPLY_TEXT)):
        speech = speaker.synthesize(text, emotion="neutral", intensity=0.0, voice=VoiceSettings(voice=voice),
                                    out_path=folder / f"{name}.wav")
        samples, rate = soundfile.read(str(speech.wav_path), dtype="float32")
        out[name] = np.asarray(soxr.resample(samples, rate, SR), dtype=np.float32)
    return out


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(round(seconds * SR)), dtype=np.float32)


def white_noise(seconds: float, rms: float, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(int(seconds * SR)) * rms).astype(np.float32)


def chord(seconds: float) -> np.ndarray:
    """A held A-minor-ish chord of four sine tones."""
    t = np.arange(int(seconds * SR)) / SR
    return (0.1 * sum(np.sin(2 * np.pi * f * t) for f in (220.0, 261.6, 329.6, 440.0))).astype(np.float32)


def melody(seconds: float, seed: int = 0) -> np.ndarray:
    """Plucked notes with four harmonics, a new note every 0.25 s."""
    rng = np.random.default_rng(seed)
    notes = (261.6, 293.7, 329.6, 349.2, 392.0, 440.0, 493.9, 523.3)
    t = np.arange(SR // 4) / SR
    pieces = [np.exp(-6 * t) * sum(0.2 / h * np.sin(2 * np.pi * f * h * t) for h in (1, 2, 3, 4))
              for f in rng.choice(notes, size=int(seconds * 4))]
    return np.concatenate(pieces).astype(np.float32)


def speech_bounds(samples: np.ndarray) -> tuple[float, float]:
    """First and last 10 ms frame within 35 dB of the clip's loudest: where the voice is."""
    frames = samples[: len(samples) // 160 * 160].reshape(-1, 160)
    db = 10 * np.log10(np.mean(frames.astype(np.float64) ** 2, axis=1) + 1e-12)
    loud = np.flatnonzero(db > db.max() - 35)
    return loud[0] * 0.01, (loud[-1] + 1) * 0.01


def gradio_pieces(samples: np.ndarray, *, rate_hz: int = MIC_HZ, piece_s: float = 0.5) -> list[bytes]:
    """The stream as Gradio sends it: 16-bit pieces, each behind the first piece's WAV header."""
    resampled = soxr.resample(samples, SR, rate_hz) if rate_hz != SR else samples
    pcm = (np.clip(resampled, -1, 1) * 32767).astype("<i2").tobytes()
    step = int(piece_s * rate_hz) * 2
    payloads = [pcm[i: i + step] for i in range(0, len(pcm), step)]
    first = io.BytesIO()
    with wave.open(first, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate_hz)
        w.writeframes(payloads[0])
    header = first.getvalue()[:44]
    return [header + payload for payload in payloads]


def room_echo(samples: np.ndarray, *, delay_s: float, gain_db: float, snr_db: float, seed: int = 1) -> np.ndarray:
    """What a microphone hears of ``samples`` played by a loudspeaker: later, quieter, a few reflections, noise."""
    response = np.zeros(int(0.05 * SR))
    for at_s, gain in ((0.0, 1.0), (0.007, 0.5), (0.019, 0.3), (0.031, 0.2)):
        response[int(at_s * SR)] = gain
    heard = np.convolve(samples, response)[: len(samples)]
    heard = np.concatenate([np.zeros(int(delay_s * SR)), heard])[: len(samples)] * 10 ** (gain_db / 20)
    power = np.mean(heard ** 2)
    noise = np.random.default_rng(seed).standard_normal(len(heard)) * np.sqrt(power / 10 ** (snr_db / 10))
    return (heard + noise).astype(np.float32)


class Recogniser:
    """A transcriber double: says how much audio it was given, taking ``delay_s`` for each call."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.calls: list[float] = []  # duration of each WAV recognised

    def __call__(self, path: Path) -> Transcript:
        info = soundfile.info(str(path))
        assert (info.samplerate, info.channels, info.subtype) == (SR, 1, "PCM_16")
        time.sleep(self.delay_s)
        self.calls.append(info.duration)
        text = f"heard {info.duration:.2f} seconds"
        return Transcript(text=text, words=(), language="en", duration_s=info.duration, voiced_s=info.duration,
                          note="", seconds=self.delay_s)


def events_of(samples: np.ndarray, *, options: EndpointerOptions | None = None,
              piece: int = 8000) -> list[SpeechStart | SpeechEnd]:
    endpointer = Endpointer(options)
    events = []
    for i in range(0, len(samples), piece):
        events += endpointer.feed(samples[i: i + piece])
    return events + endpointer.flush()


# --- the endpointer ------------------------------------------------------------------------------


def test_pieces_of_any_size_give_the_whole_clips_probabilities(voices):
    clip = np.concatenate([silence(0.5), voices["user"]])
    clip = clip[: len(clip) // WINDOW_SAMPLES * WINDOW_SAMPLES]
    whole = np.asarray(silero_model()(clip)).reshape(-1)  # faster-whisper's own run over the clip
    one_by_one = Endpointer()
    probabilities = []
    for k in range(len(clip) // WINDOW_SAMPLES):
        one_by_one.feed(clip[k * WINDOW_SAMPLES: (k + 1) * WINDOW_SAMPLES])
        probabilities.append(one_by_one.last_probability)
    np.testing.assert_allclose(probabilities, whole, atol=1e-5)
    odd = Endpointer()
    for i in range(0, len(clip), 333):  # windows completed across pieces
        odd.feed(clip[i: i + 333])
    assert odd.now_s == pytest.approx(len(clip) / SR) and odd.last_probability == pytest.approx(whole[-1], abs=1e-5)
    assert events_of(clip, piece=333) == events_of(clip, piece=16000) == events_of(clip, piece=len(clip))


def test_a_sentence_is_one_turn_from_its_first_to_its_last_sound(voices):
    for name in ("user", "other"):
        clip = np.concatenate([silence(1.0), voices[name], silence(1.5)])
        first, last = speech_bounds(clip)
        events = events_of(clip)
        assert [type(e) for e in events] == [SpeechStart, SpeechEnd], events
        start, end = events
        assert abs(start.start_s - first) < 0.1, (start, first)
        assert start.at_s - start.start_s == pytest.approx(0.25, abs=0.1)  # min_speech_s of voiced windows
        assert abs(end.end_s - last) < 0.15, (end, last)
        assert end.at_s - end.end_s == pytest.approx(0.6, abs=0.04)  # the pause that ends a turn
        assert not end.cut and end.voiced_s > 0.6 * (last - first)


@pytest.mark.parametrize("name", ["silence", "noise -40 dB", "noise -20 dB", "noise -10 dB", "chord", "melody"])
def test_silence_noise_and_music_make_no_turn(name):
    signal = {"silence": lambda: silence(6.0), "noise -40 dB": lambda: white_noise(6.0, 0.01),
              "noise -20 dB": lambda: white_noise(6.0, 0.1), "noise -10 dB": lambda: white_noise(6.0, 0.3),
              "chord": lambda: chord(6.0), "melody": lambda: melody(6.0)}[name]()
    assert events_of(signal) == []


def test_clicks_and_snippets_shorter_than_the_minimum_make_no_turn(voices):
    first, _ = speech_bounds(voices["other"])
    snippet = voices["other"][int((first + 0.3) * SR): int((first + 0.45) * SR)]  # 150 ms of a word
    click = np.zeros(800, dtype=np.float32)
    click[:40] = 0.9
    stream = np.concatenate([silence(0.5), snippet, silence(1.0), click, silence(1.0), snippet, silence(1.0)])
    assert events_of(stream) == []
    # the same speech, longer, is a turn
    assert len(events_of(np.concatenate([silence(0.5), voices["other"], silence(1.0)]))) == 2


def test_a_turn_longer_than_the_maximum_is_cut_and_the_next_one_opens(voices):
    clip = np.concatenate([silence(0.5), voices["user"], silence(1.0)])
    first, last = speech_bounds(clip)
    events = events_of(clip, options=EndpointerOptions(max_speech_s=2.0))
    cut = events[1]
    assert isinstance(cut, SpeechEnd) and cut.cut and cut.end_s - cut.start_s == pytest.approx(2.0, abs=0.04)
    assert isinstance(events[2], SpeechStart) and events[2].start_s >= cut.end_s
    assert isinstance(events[-1], SpeechEnd) and not events[-1].cut and abs(events[-1].end_s - last) < 0.15


def test_flush_ends_an_open_turn_and_drop_forgets_it(voices):
    endpointer = Endpointer()
    assert isinstance(endpointer.feed(np.concatenate([silence(0.5), voices["user"][: 2 * SR]]))[0], SpeechStart)
    assert endpointer.speaking and endpointer.open_start_s is not None and endpointer.voiced_s > 0.5
    (end,) = endpointer.flush()
    assert isinstance(end, SpeechEnd) and not endpointer.speaking
    endpointer.feed(voices["user"][: 2 * SR])
    endpointer.drop()
    assert endpointer.open_start_s is None and endpointer.flush() == []


@pytest.mark.parametrize("options, message", [
    (dict(threshold=1.2), "threshold must be between 0 and 1"),
    (dict(release_threshold=0.6), "release_threshold must be above 0 and at most threshold"),
    (dict(min_speech_s=0.01), "min_speech_s must be from 0.032"),
    (dict(end_pause_s=float("nan")), "end_pause_s must be a finite number"),
    (dict(max_speech_s=0.1), "max_speech_s must be above min_speech_s"),
    (dict(threshold="high"), "threshold must be a finite number"),
])
def test_endpointer_options_say_what_is_allowed(options, message):
    with pytest.raises(ConfigError, match=message):
        EndpointerOptions(**options)


@pytest.mark.parametrize("samples, message", [
    (np.zeros((2, 512), dtype=np.float32), "1-D array"),
    (np.zeros(512, dtype=np.int16), "float samples"),
    (np.full(512, np.nan, dtype=np.float32), "NaN or infinite"),
])
def test_the_endpointer_refuses_samples_it_cannot_judge(samples, message):
    with pytest.raises(InputError, match=message):
        Endpointer().feed(samples)


# --- the browser's pieces ------------------------------------------------------------------------


def _pcm16(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-20000, 20000, n).astype("<i2")


def test_pieces_behind_the_first_pieces_header_decode_whole():
    values = _pcm16(44100)
    payloads = [values[:4410].tobytes(), values[4410:20000].tobytes(), values[20000:21000].tobytes(),
                values[21000:].tobytes()]  # longer and shorter than the header says
    first = io.BytesIO()
    with wave.open(first, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(44100)
        w.writeframes(payloads[0])
    header = first.getvalue()[:44]
    decoded = [chunks.parse_wav(header + payload) for payload in payloads]
    assert all(d.sample_rate_hz == 44100 for d in decoded)
    np.testing.assert_array_equal(np.concatenate([d.samples for d in decoded]),
                                  (values / 32768).astype(np.float32))


@pytest.mark.parametrize("size", [0, 0xFFFFFFFF])
def test_a_header_with_unknown_lengths_reads_to_the_end(size):
    values = _pcm16(1000)
    header = struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", size, b"WAVE", b"fmt ", 16, 1, 1, 16000, 32000, 2, 16,
                         b"data", size)
    decoded = chunks.parse_wav(header + values.tobytes())
    np.testing.assert_array_equal(decoded.samples, (values / 32768).astype(np.float32))


def test_a_well_formed_file_keeps_its_lengths_and_chunks_after_the_data_are_not_sound():
    values = _pcm16(999)
    data = values.tobytes()
    listing = b"LIST" + struct.pack("<I", 12) + b"INFOISFT\x02\x00\x00\x00e3"
    fmt = struct.pack("<4sIHHIIHH", b"fmt ", 16, 1, 1, 8000, 16000, 2, 16)
    body = b"WAVE" + fmt + b"data" + struct.pack("<I", len(data)) + data + listing
    decoded = chunks.parse_wav(b"RIFF" + struct.pack("<I", len(body)) + body)
    np.testing.assert_array_equal(decoded.samples, (values / 32768).astype(np.float32))
    # the same with a wrong RIFF length (as a shared header has): the LIST chunk is still recognised
    decoded = chunks.parse_wav(b"RIFF" + struct.pack("<I", 36) + body)
    assert len(decoded.samples) == len(values)


@pytest.mark.parametrize("subtype", ["PCM_U8", "PCM_16", "PCM_24", "PCM_32", "FLOAT", "DOUBLE"])
def test_every_pcm_and_float_layout_decodes_to_mono(tmp_path, subtype):
    t = np.arange(4800) / 48000
    stereo = np.stack([0.5 * np.sin(2 * np.pi * 440 * t), 0.25 * np.sin(2 * np.pi * 440 * t)], axis=1)
    path = tmp_path / "stereo.wav"
    soundfile.write(str(path), stereo, 48000, subtype=subtype)
    decoded = chunks.read_wav_file(path)
    assert decoded.sample_rate_hz == 48000 and decoded.samples.shape == (4800,)
    np.testing.assert_allclose(decoded.samples, stereo.mean(axis=1), atol=1.5 / 128 if subtype == "PCM_U8" else 1e-4)


@pytest.mark.parametrize("data, message", [
    (b"", "is not a WAV file"),
    (b"OggS" + bytes(60), "is not a WAV file"),
    (b"RIFF\x24\x00\x00\x00WAVEfmt \x08\x00\x00\x00\x01\x00\x01\x00", "too short"),
    (b"RIFF\x24\x00\x00\x00WAVEdata\x04\x00\x00\x00abcd", "data chunk comes before its fmt chunk"),
    (struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 40, b"WAVE", b"fmt ", 16, 7, 1, 8000, 8000, 1, 8, b"data", 4)
     + b"abcd", "8-bit format tag 0x0007 samples is not accepted"),
    (struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 40, b"WAVE", b"fmt ", 16, 1, 1, 4000, 8000, 2, 16, b"data", 4)
     + b"abcd", "at 4000 Hz is not accepted"),
    (struct.pack("<4sI4s4sIHHIIHH", b"RIFF", 28, b"WAVE", b"fmt ", 16, 1, 1, 16000, 32000, 2, 16),
     "has no data chunk"),
])
def test_a_corrupt_piece_says_what_is_accepted(data, message):
    with pytest.raises(InputError, match=message) as caught:
        chunks.parse_wav(data)
    assert "RIFF/WAVE" in str(caught.value)


def test_numpy_audio_as_gradio_hands_it_over():
    stereo = np.stack([_pcm16(100), _pcm16(100, seed=1)], axis=1)
    decoded = chunks.from_array(stereo, sample_rate_hz=48000)
    np.testing.assert_allclose(decoded.samples, stereo.mean(axis=1) / 32768, atol=1e-6)
    with pytest.raises(InputError, match="from 8000 to 192000 Hz"):
        chunks.from_array(stereo, sample_rate_hz=100)
    with pytest.raises(InputError, match="not accepted"):
        chunks.from_array(np.array(["a", "b"]), sample_rate_hz=16000)
    with pytest.raises(InputError, match=r"\[n\] or \[n, channels\]"):
        chunks.from_array(np.zeros((2, 2, 2)), sample_rate_hz=16000)


# --- the listener --------------------------------------------------------------------------------


def _stream(voices) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """The person, a pause, another person, a pause; with where each voice is."""
    parts, bounds, at = [silence(1.0)], [], 1.0
    for name in ("user", "other"):
        first, last = speech_bounds(voices[name])
        bounds.append((at + first, at + last))
        at += len(voices[name]) / SR + 1.5
        parts += [voices[name], silence(1.5)]
    return np.concatenate(parts), bounds


def test_the_listener_turns_gradios_pieces_into_utterances(voices, tmp_path):
    stream, bounds = _stream(voices)
    recogniser = Recogniser()
    listener = Listener(tmp_path, transcribe=recogniser)
    states, utterances = [], []
    for piece in gradio_pieces(stream):
        utterances += listener.feed_wav(piece)
        states.append(listener.state)
    listener.close()
    assert [u.wav_path.name for u in utterances] == ["utterance-0001.wav", "utterance-0002.wav"]
    assert ListenerState.HEARING_SPEECH in states and states[-1] is ListenerState.LISTENING
    assert listener.heard_s == pytest.approx(len(stream) / SR, abs=0.05)
    for utterance, (first, last) in zip(utterances, bounds):
        assert abs(utterance.start_s - first) < 0.1 and abs(utterance.end_s - last) < 0.15, (utterance, first, last)
        info = soundfile.info(str(utterance.wav_path))
        assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
        assert info.duration == pytest.approx(utterance.duration_s, abs=1e-3)
        assert utterance.duration_s == pytest.approx(utterance.end_s - utterance.start_s + 0.3 + 0.2, abs=0.01)
        assert not utterance.cut
        samples, _ = soundfile.read(str(utterance.wav_path), dtype="float32")
        lead = int(round((first - utterance.start_s + 0.3) * SR))  # where the voice starts in the WAV
        assert 0 < lead and np.max(np.abs(samples[:lead])) < 0.01 < np.max(np.abs(samples[lead: lead + 1600]))
        # the words are those of the whole utterance, from a recognition during the pause or at the end
        assert utterance.transcript is not None and utterance.transcript_wait_s is not None
        assert float(utterance.transcript.text.split()[1]) >= utterance.end_s - utterance.start_s


def test_file_bytes_and_array_pieces_are_heard_alike(voices, tmp_path):
    clip = np.concatenate([silence(0.7), voices["other"], silence(1.0)])
    pieces = gradio_pieces(clip)
    by_bytes = Listener(tmp_path / "bytes")
    by_file = Listener(tmp_path / "file")
    by_array = Listener(tmp_path / "array")
    found = {"bytes": [], "file": [], "array": []}
    for k, piece in enumerate(pieces):
        found["bytes"] += by_bytes.feed_wav(piece)
        path = tmp_path / f"piece{k}.wav"
        path.write_bytes(piece)
        found["file"] += by_file.feed_file(path)
        decoded = chunks.parse_wav(piece)
        found["array"] += by_array.feed_samples((decoded.samples * 32767).astype(np.int16),
                                                sample_rate_hz=decoded.sample_rate_hz)
    spans = {name: [(u.start_s, u.end_s) for u in found[name]] for name in found}
    assert len(spans["bytes"]) == 1 and spans["bytes"] == spans["file"] == spans["array"]
    assert found["bytes"][0].transcript is None and found["bytes"][0].transcript_wait_s is None


def test_noise_and_music_give_no_utterance(tmp_path):
    stream = np.concatenate([white_noise(3.0, 0.1), chord(3.0), melody(3.0), white_noise(3.0, 0.3, seed=2)])
    recogniser = Recogniser()
    listener = Listener(tmp_path, transcribe=recogniser)
    found = []
    for piece in gradio_pieces(stream):
        found += listener.feed_wav(piece)
        assert listener.state is ListenerState.LISTENING
    assert found + listener.flush() == [] and recogniser.calls == []
    assert list(tmp_path.glob("*.wav")) == []


def test_a_corrupt_piece_is_refused_and_the_listener_goes_on(voices, tmp_path):
    clip = np.concatenate([silence(0.7), voices["other"], silence(1.0)])
    pieces = gradio_pieces(clip)
    listener = Listener(tmp_path)
    found = []
    for k, piece in enumerate(pieces):
        if k == 3:
            with pytest.raises(InputError, match="not a WAV file"):
                listener.feed_wav(b"\x1aE\xdf\xa3 webm, not wav" + piece[44:])
            with pytest.raises(InputError, match="does not exist"):
                listener.feed_file(tmp_path / "gone.wav")
            with pytest.raises(InputError, match="too long"):
                listener.feed_samples(np.zeros(61 * 16000, dtype=np.float32), sample_rate_hz=16000)
        found += listener.feed_wav(piece)
    assert len(found) == 1
    assert abs(found[0].end_s - (0.7 + speech_bounds(voices["other"])[1])) < 0.15


def test_long_speech_is_cut_at_the_maximum_and_handed_over(voices, tmp_path):
    options = ListenerOptions(endpointer=EndpointerOptions(max_speech_s=2.0))
    listener = Listener(tmp_path, options=options)
    found = []
    for piece in gradio_pieces(np.concatenate([silence(0.5), voices["user"], silence(1.0)])):
        found += listener.feed_wav(piece)
    assert found[0].cut and found[0].end_s - found[0].start_s == pytest.approx(2.0, abs=0.04)
    assert not found[-1].cut and len(found) >= 2
    assert found[0].duration_s == pytest.approx(found[0].end_s - found[0].start_s + 0.3, abs=0.01)  # no post-roll
    assert all(u.duration_s <= 2.0 + WINDOW_S + 0.3 + 0.2 for u in found)


def test_recognition_runs_while_speaking_and_the_last_is_reused_after_the_pause(voices, tmp_path):
    first, last = speech_bounds(voices["user"])
    speech = np.concatenate([silence(0.5), voices["user"][: int((last + 0.02) * SR)]])
    recogniser = Recogniser(delay_s=0.05)
    listener = Listener(tmp_path, transcribe=recogniser, options=ListenerOptions(partial_every_s=1.0))
    texts = set()
    for i in range(0, len(speech), 8000):
        assert listener.feed_samples(speech[i: i + 8000], sample_rate_hz=SR) == []
        assert listener.wait_for_recognition(2.0)  # as if in real time: the recogniser keeps up
        texts.add(listener.partial_text)
    assert len(recogniser.calls) >= 3 and len(texts - {""}) == len(recogniser.calls)
    so_far = listener.speech_so_far()
    assert so_far is not None and so_far.confirmed and so_far.partial_text == listener.partial_text
    # the pause: a recognition starts 0.15 s in and finishes before the end is known
    assert listener.feed_samples(silence(0.3), sample_rate_hz=SR) == []
    assert listener.wait_for_recognition(2.0)
    n_calls = len(recogniser.calls)
    (utterance,) = listener.feed_samples(silence(0.6), sample_rate_hz=SR)
    assert utterance.partial_reused and len(recogniser.calls) == n_calls  # no recognition after the pause
    assert utterance.partials == n_calls and utterance.transcript_wait_s < 0.05
    assert float(utterance.transcript.text.split()[1]) >= utterance.end_s - utterance.start_s
    listener.close()


def test_without_a_recognition_covering_the_end_the_utterance_is_recognised_once(voices, tmp_path):
    recogniser = Recogniser(delay_s=0.05)
    options = ListenerOptions(partial_every_s=30.0, early_pause_s=10.0)  # no recognition while speaking
    listener = Listener(tmp_path, transcribe=recogniser, options=options)
    (utterance,) = listener.feed_samples(np.concatenate([silence(0.5), voices["other"], silence(1.0)]),
                                         sample_rate_hz=SR)
    assert recogniser.calls == [pytest.approx(utterance.duration_s, abs=1e-3)]
    assert not utterance.partial_reused and utterance.partials == 0
    assert utterance.transcript_wait_s >= 0.05


def test_a_failing_recogniser_leaves_the_utterance_without_words(voices, tmp_path):
    from e3rg_core.errors import BackendFailed

    def broken(path: Path) -> Transcript:
        raise BackendFailed("Whisper fell over")

    listener = Listener(tmp_path, transcribe=broken)
    (utterance,) = listener.feed_samples(np.concatenate([silence(0.5), voices["other"], silence(1.0)]),
                                         sample_rate_hz=SR)
    assert utterance.transcript is None and utterance.wav_path.is_file()


def test_flush_discard_and_close(voices, tmp_path):
    listener = Listener(tmp_path)
    speech = np.concatenate([silence(0.5), voices["other"][: 2 * SR]])
    assert listener.feed_samples(speech, sample_rate_hz=SR) == [] and listener.is_speaking
    (utterance,) = listener.flush()
    assert not utterance.cut and not listener.is_speaking
    listener.feed_samples(speech, sample_rate_hz=SR)
    listener.discard()
    assert listener.speech_so_far() is None and listener.flush() == []
    listener.close()
    with pytest.raises(InputError, match="closed"):
        listener.feed_samples(speech, sample_rate_hz=SR)


@pytest.mark.parametrize("options, message", [
    (dict(pre_roll_s=-1.0), "pre_roll_s must be a number from 0 to 2 s"),
    (dict(partial_every_s=0.0), "partial_every_s must be a number from 0.2 to 30 s"),
    (dict(post_roll_s=0.8), "post_roll_s .* must be at most the endpointer's end_pause_s"),
    (dict(endpointer={"threshold": 0.5}), "must be an EndpointerOptions"),
])
def test_listener_options_say_what_is_allowed(options, message):
    with pytest.raises(ConfigError, match=message):
        ListenerOptions(**options)


@pytest.mark.slow
def test_with_whisper_the_words_are_ready_soon_after_the_pause(voices, tmp_path_factory):
    """The real Whisper base, fed in real time: prints how long after the pause the words were ready."""
    from e3rg_core.perception.asr import WhisperTranscriber

    whisper = WhisperTranscriber(cache_dir=tmp_path_factory.mktemp("live-asr"))
    listener = Listener(tmp_path_factory.mktemp("live-whisper"), transcribe=whisper.transcribe)
    found, started = [], time.perf_counter()
    for k, piece in enumerate(gradio_pieces(np.concatenate([silence(0.8), voices["user"], silence(1.2)]))):
        time.sleep(max(0.0, k * 0.5 - (time.perf_counter() - started)))
        found += listener.feed_wav(piece)
    listener.close()
    (utterance,) = found
    words = set(utterance.transcript.text.lower().replace(".", "").replace(",", "").split())
    assert {"long", "day", "work", "talk"} <= words, utterance.transcript.text
    print(f"\nwords ready {utterance.transcript_wait_s:.2f} s after the pause was detected "
          f"({utterance.partials} recognitions while speaking, last reused: {utterance.partial_reused})")
    assert utterance.transcript_wait_s < 5.0


def test_a_recognition_window_holds_the_clip_and_its_padding():
    from e3rg_core.perception.asr import WINDOW_PAD_S, window_frames

    assert window_frames(None, 3.0) is None
    assert window_frames(10.0, 3.0) == 1000  # log-mel frames, 100 a second
    assert window_frames(10.0, 7.35) == 1236  # the clip and WINDOW_PAD_S after it, in an even number of frames
    assert WINDOW_PAD_S == 5.0
    assert window_frames(10.0, 26.0) is None  # no shorter than Whisper's own 30 s: the whole window
    with pytest.raises(ConfigError, match="positive number of seconds"):
        window_frames(0.0, 3.0)


@pytest.mark.slow
def test_the_hands_free_window_hears_the_words_the_whole_window_hears(voices, tmp_path_factory, tmp_path):
    """Whisper base reading a 10-s window (hands-free talk) against its 30-s one: the same words."""
    from e3rg_core.media.audio import write_wav
    from e3rg_core.perception.asr import WhisperTranscriber
    from e3rg_core.ui.live import RECOGNITION_WINDOW_S

    whisper = WhisperTranscriber(cache_dir=tmp_path_factory.mktemp("live-asr-window"))
    for name in ("user", "other"):
        path = tmp_path / f"{name}.wav"
        write_wav(path, np.concatenate([silence(0.3), voices[name], silence(0.2)]), SR)
        whole, short = whisper.transcribe(path), whisper.transcribe(path, window_s=RECOGNITION_WINDOW_S)
        assert _words(short.text) == _words(whole.text), (short.text, whole.text)
        print(f"\n{name}: {whole.seconds:.2f} s in 30 s, {short.seconds:.2f} s in {RECOGNITION_WINDOW_S:g} s")


def _words(text: str) -> list[str]:
    return "".join(c for c in text.lower() if c.isalpha() or c in " '").split()


# --- barge-in ------------------------------------------------------------------------------------


def _mic_and_reference(heard: np.ndarray, reply: np.ndarray, *, at_s: float, duration_s: float):
    end = int(at_s * SR)
    mic = heard[end - int(duration_s * SR): end]
    return mic, played_reference(reply, sample_rate_hz=SR, playback_s=at_s, duration_s=duration_s)


@pytest.mark.parametrize("at_s, duration_s", [(1.6, 0.4), (2.5, 0.8), (4.0, 1.5), (5.5, 0.8)])
def test_the_reply_coming_back_through_the_room_is_echo(voices, at_s, duration_s):
    reply = voices["reply"]
    heard = room_echo(reply, delay_s=0.18, gain_db=-18, snr_db=10)
    mic, reference = _mic_and_reference(heard, reply, at_s=at_s, duration_s=duration_s)
    reading = echo_score(mic, reference)
    assert reading.is_echo and reading.score >= 0.8 and reading.lag_s == pytest.approx(0.18, abs=0.02), reading
    decision = decide_barge_in(mic, voiced_s=duration_s, avatar_speaking=True, reference=reference)
    assert not decision.interrupt and decision.reason is BargeInReason.ECHO_SOUND, decision.describe()


@pytest.mark.parametrize("at_s, duration_s", [(1.6, 0.4), (2.5, 0.8), (4.0, 1.5), (5.5, 0.8)])
def test_another_voice_or_the_person_over_the_echo_barges_in(voices, at_s, duration_s):
    reply = voices["reply"]
    echo = room_echo(reply, delay_s=0.18, gain_db=-18, snr_db=10)
    first, _ = speech_bounds(voices["other"])
    person = voices["other"][int(first * SR):]
    person = np.concatenate([silence(at_s - duration_s), person])[: len(echo)]
    person = np.pad(person, (0, len(echo) - len(person)))
    mic, reference = _mic_and_reference(person, reply, at_s=at_s, duration_s=duration_s)
    scale = np.sqrt(np.mean(_mic_and_reference(echo, reply, at_s=at_s, duration_s=duration_s)[0] ** 2)
                    / np.mean(mic ** 2))
    for heard in (person * scale, echo + 2 * scale * person):  # alone; 6 dB over the echo
        mic, reference = _mic_and_reference(heard, reply, at_s=at_s, duration_s=duration_s)
        decision = decide_barge_in(mic, voiced_s=duration_s, avatar_speaking=True, reference=reference)
        assert decision.interrupt and decision.reason is BargeInReason.PERSON_SPEAKING, decision.describe()
        assert decision.echo.score < 0.75


def test_the_reply_s_own_words_do_not_barge_in_and_short_or_silent_cases_wait(voices):
    mic = voices["other"][: SR]
    reference = played_reference(voices["reply"], sample_rate_hz=SR, playback_s=2.0, duration_s=1.0)
    decision = decide_barge_in(mic, voiced_s=0.8, avatar_speaking=True, reference=reference,
                               heard_text="what happened at work", reply_text=REPLY_TEXT)
    assert not decision.interrupt and decision.reason is BargeInReason.ECHO_WORDS and decision.word_share == 1.0
    decision = decide_barge_in(mic, voiced_s=0.8, avatar_speaking=True, reference=reference,
                               heard_text="wait, stop", reply_text="Wait here, I will stop by.")
    assert decision.interrupt and decision.word_share is None  # two words say nothing
    assert decide_barge_in(mic, voiced_s=0.1, avatar_speaking=True,
                           reference=reference).reason is BargeInReason.TOO_SHORT
    assert decide_barge_in(mic[:2000], voiced_s=0.5, avatar_speaking=True,
                           reference=reference).reason is BargeInReason.TOO_SHORT
    assert decide_barge_in(mic, voiced_s=1.0, avatar_speaking=False,
                           reference=reference).reason is BargeInReason.AVATAR_SILENT
    assert reply_word_share("What happened, at work?", REPLY_TEXT) == (1.0, 4)
    assert reply_word_share("my dog ran away at work", REPLY_TEXT) == (pytest.approx(2 / 6), 6)


def test_the_listener_and_barge_in_together(voices, tmp_path):
    """The echo of the reply opens a turn in the listener; the check calls it echo; the person's voice barges in."""
    reply = voices["reply"]
    for heard, expected in ((room_echo(reply, delay_s=0.15, gain_db=-12, snr_db=15), False),
                            (np.concatenate([silence(1.0), voices["other"]])[: len(reply)], True)):
        listener = Listener(tmp_path / str(expected))
        decision = None
        for i in range(0, len(heard), 8000):
            listener.feed_samples(heard[i: i + 8000], sample_rate_hz=SR)
            so_far = listener.speech_so_far()
            if so_far is not None and so_far.voiced_s >= 0.2 and len(so_far.samples) >= 0.4 * SR:
                reference = played_reference(reply, sample_rate_hz=SR, playback_s=(i + 8000) / SR,
                                             duration_s=len(so_far.samples) / SR)
                decision = decide_barge_in(so_far.samples, voiced_s=so_far.voiced_s, avatar_speaking=True,
                                           reference=reference)
                break
        assert decision is not None and decision.interrupt is expected, decision
        if not expected:
            listener.discard()
            assert listener.speech_so_far() is None


def test_the_reference_is_the_played_part_at_16_khz(voices):
    reply24 = soxr.resample(voices["reply"], SR, 24000).astype(np.float32)
    part = played_reference(reply24, sample_rate_hz=24000, playback_s=3.0, duration_s=1.0, max_lag_s=0.5)
    assert len(part) == pytest.approx(1.5 * SR, abs=2)
    assert np.corrcoef(part, voices["reply"][int(1.5 * SR): int(1.5 * SR) + len(part)])[0, 1] > 0.99
    assert len(played_reference(reply24, sample_rate_hz=24000, playback_s=0.2, duration_s=1.0)) == \
        pytest.approx(0.2 * SR, abs=2)
    with pytest.raises(InputError, match="finite"):
        played_reference(reply24, sample_rate_hz=24000, playback_s=float("inf"), duration_s=1.0)
    with pytest.raises(InputError, match="too short"):
        echo_score(np.zeros(1000, dtype=np.float32), part)


@pytest.mark.parametrize("make, message", [
    (lambda: EchoOptions(threshold=1.0), "threshold must be between 0 and 1"),
    (lambda: EchoOptions(n_bands=0), "n_bands must be an integer from 1 to 32"),
    (lambda: EchoOptions(high_hz=9000.0), "high_hz must be at most 8000 Hz"),
    (lambda: BargeInOptions(min_voiced_s=0.0), "min_voiced_s must be above 0"),
])
def test_echo_options_say_what_is_allowed(make, message):
    with pytest.raises(ConfigError, match=message):
        make()


# --- turn control --------------------------------------------------------------------------------


PIECES = [("Hello there.", 1.0), ("How are you feeling today?", 2.0), ("Tell me.", 1.0)]


@pytest.mark.parametrize("at_s, spoken", [
    (0.0, ""), (0.5, "Hello"), (1.0, "Hello there."), (1.9, "Hello there. How are you"),
    (3.0, "Hello there. How are you feeling today?"), (9.0, "Hello there. How are you feeling today? Tell me."),
])
def test_the_spoken_part_at_a_playback_time(at_s, spoken):
    part = spoken_part(PIECES, at_s)
    everything = " ".join(text for text, _ in PIECES)
    assert part.spoken == spoken and " ".join(filter(None, [part.spoken, part.unspoken])) == everything
    assert part.total_s == 4.0


def test_interrupting_cancels_the_current_reply_once():
    control = TurnControl()
    assert control.interrupt(at_s=1.0) is None  # nothing is being said
    reply = control.begin()
    for text, duration_s in PIECES:
        reply.add_piece(text, duration_s)
    assert not reply.cancelled and control.interrupt(at_s=1.0, turn=reply.turn + 1) is None  # a stale word
    interruption = control.interrupt(at_s=1.9, turn=reply.turn)
    assert reply.cancelled and interruption.part.spoken == "Hello there. How are you"
    assert reply.interruption is interruption and control.interrupt(at_s=3.0) is interruption
    following = control.begin()
    assert following.turn == reply.turn + 1 and not following.cancelled
    newer = control.begin()
    assert following.cancelled and following.interruption is None  # replaced, not interrupted
    control.finish(newer.turn)
    assert control.current is None and control.interrupt(at_s=0.5) is None
    with pytest.raises(InputError, match="finite number of seconds"):
        control.interrupt(at_s=-1.0)
    with pytest.raises(InputError, match="finite number of seconds"):
        newer.add_piece("Hi.", float("nan"))


def test_turn_control_is_safe_across_threads():
    control = TurnControl()
    reply = control.begin()
    woke = threading.Event()
    threading.Thread(target=lambda: reply.wait_cancelled(5.0) and woke.set(), daemon=True).start()

    def speak(k: int) -> None:
        for i in range(200):
            reply.add_piece(f"w{k}_{i}", 0.01)

    threads = [threading.Thread(target=speak, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    results = [control.interrupt(at_s=1.0) for _ in range(50)]
    for thread in threads:
        thread.join()
    assert woke.wait(2.0) and all(result is results[0] for result in results)
    n_spoken = len(results[0].part.spoken.split())
    assert n_spoken <= 100 and n_spoken + len(results[0].part.unspoken.split()) <= 800
    assert len(reply.pieces) == 800
