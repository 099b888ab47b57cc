"""The openvoice backend, run through upstream's own model code with tiny random-weight checkpoints.

OpenVoice's converter is upstream's code (from openvoice-cli, see ``tests/openvoice_support.py``)
loading a tiny ``SynthesizerTrn`` checkpoint saved in upstream's format; MeloTTS and V1's text front
end are stand-ins that speak with the embedded hibari voice. ``test_real_openvoice`` runs the real
checkpoints on CUDA when ``E3RG_TEST_OPENVOICE_DIR`` is set.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from e3rg_core.config import Config, SpeechConfig
from e3rg_core.emotions import COARSE
from e3rg_core.errors import BackendUnavailable, ConfigError, InputError
from e3rg_core.memory.profiles import VoiceSettings
from e3rg_core.speech import create_speaker, prosody
from e3rg_core.speech.banks import ProsodyBank, bank_path, load_styles
from e3rg_core.speech.base import split_sentences
from e3rg_core.speech.openvoice import (MIN_REFERENCE_VOICED_S, V1_STYLES, OpenVoiceOptions, OpenVoiceSpeaker,
                                        read_reference, resolve_device)
from tests.openvoice_support import (LONG_TEXT, SHORT_TEXT, have_openvoice_cli, install_packages, install_upstream,
                                     real_source_se, write_checkpoints, write_reference)

TEXT = "I am so glad you told me. That sounds like a wonderful day!"
NEEDS_CLI = "OpenVoice's model code for the tests: pip install --no-deps openvoice-cli==0.0.5"


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    folder = tmp_path_factory.mktemp("references")
    return {"long": write_reference(folder / "long.wav"),
            "other": write_reference(folder / "other.wav", silence_s=0.5),  # same voice, other bytes
            "short": write_reference(folder / "short.wav", SHORT_TEXT, silence_s=4.0)}


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    """Checkpoint folders with placeholder weights: enough for the construction checks."""
    return write_checkpoints(tmp_path_factory.mktemp("layout"), real=False)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Checkpoint folders with tiny random-weight models that upstream's code loads and runs."""
    if not have_openvoice_cli():
        pytest.skip(NEEDS_CLI)
    return write_checkpoints(tmp_path_factory.mktemp("tiny"), real=True)


@pytest.fixture()
def upstream(monkeypatch):
    if not have_openvoice_cli():
        pytest.skip(NEEDS_CLI)
    return install_upstream(monkeypatch)


def make(ckpt, tmp_path: Path, **kwargs) -> OpenVoiceSpeaker:
    options = dict(checkpoints=ckpt.v2, v1_checkpoints=ckpt.v1, melo_dir=ckpt.melo, device="cpu",
                   cache_dir=tmp_path / "cache")
    return OpenVoiceSpeaker(**{**options, **kwargs})


def voice_of(reference: Path | None, name: str = "en-newest", **kwargs) -> VoiceSettings:
    options = {"reference_speech": str(reference)} if reference else {}
    return VoiceSettings(backend="openvoice", voice=name, options=options, **kwargs)


def load_tensor(path: Path):
    import torch

    return torch.load(str(path), weights_only=True)


# -- construction -----------------------------------------------------------------------------------

def test_construction_is_cheap_and_loads_nothing(layout, monkeypatch, tmp_path):
    install_packages(monkeypatch)
    started = time.perf_counter()
    speaker = make(layout, tmp_path)
    assert time.perf_counter() - started < 1.0
    assert speaker.device is None and speaker._stacks == {} and not hasattr(sys.modules["openvoice"], "api")
    assert speaker.voices() == ("en-newest", "en-styles") and speaker.speed == 0.8
    # importing the backend imports no model library
    code = "import sys, e3rg_core.speech.openvoice; print(sorted({'torch', 'openvoice', 'melo'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_config_errors(layout, monkeypatch):
    install_packages(monkeypatch)
    with pytest.raises(ConfigError, match="set speech.openvoice.dir to the checkpoints_v2 folder"):
        OpenVoiceSpeaker()
    with pytest.raises(ConfigError, match="openvoice.device must be auto, cpu, cuda or cuda:N, not 'gpu'"):
        OpenVoiceSpeaker(checkpoints=layout.v2, melo_dir=layout.melo, device="gpu")
    with pytest.raises(ConfigError, match="openvoice.speed must lie in 0.5..2"):
        OpenVoiceSpeaker(checkpoints=layout.v2, melo_dir=layout.melo, speed=3.0)


def test_missing_checkpoint_files_are_named(layout, monkeypatch, tmp_path):
    install_packages(monkeypatch)
    root = tmp_path / "copy"
    shutil.copytree(layout.v2.parent, root)
    v2, v1, melo = root / layout.v2.name, root / layout.v1.name, root / layout.melo.name
    with pytest.raises(BackendUnavailable, match="speech.openvoice.dir = .*nowhere .*is not a folder"):
        OpenVoiceSpeaker(checkpoints=root / "nowhere")
    (v2 / "base_speakers" / "ses" / "en-newest.pth").unlink()
    with pytest.raises(BackendUnavailable, match=r"V2\) is incomplete: missing base_speakers/ses/en-newest.pth"):
        OpenVoiceSpeaker(checkpoints=v2)
    (v1 / "base_speakers" / "EN" / "en_style_se.pth").unlink()
    (v1 / "converter" / "checkpoint.pth").unlink()
    with pytest.raises(BackendUnavailable, match="missing converter/checkpoint.pth, base_speakers/EN/en_style_se.pth"):
        OpenVoiceSpeaker(v1_checkpoints=v1)
    (melo / "checkpoint.pth").unlink()
    shutil.copy(layout.v2 / "base_speakers" / "ses" / "en-newest.pth", v2 / "base_speakers" / "ses")
    with pytest.raises(BackendUnavailable, match=r"melo_dir = .*\(MeloTTS EN_NEWEST\) is incomplete: missing checkpo"):
        OpenVoiceSpeaker(checkpoints=v2, melo_dir=melo)


@pytest.mark.parametrize("module, name", [("openvoice", "OpenVoice"), ("melo", "MeloTTS"), ("wavmark", "wavmark")])
def test_missing_packages_name_the_install(layout, monkeypatch, module, name):
    install_packages(monkeypatch)
    monkeypatch.setitem(sys.modules, module, None)  # import fails, as when it is not installed
    install = re.escape("pip install git+https://github.com/myshell-ai/OpenVoice")
    with pytest.raises(BackendUnavailable, match=f"needs {re.escape(name)}.*{install}"):
        OpenVoiceSpeaker(checkpoints=layout.v2, melo_dir=layout.melo)
    if module == "melo":  # the V1 styles need no MeloTTS
        assert OpenVoiceSpeaker(v1_checkpoints=layout.v1).folders["v2"] is None


def test_a_package_that_fails_to_import_is_reported_at_load(layout, monkeypatch, tmp_path):
    install_packages(monkeypatch)  # "openvoice" is there, "openvoice.api" is not
    speaker = make(layout, tmp_path)
    with pytest.raises(BackendUnavailable, match="OpenVoice cannot be imported .*pip install git"):
        speaker.load("en-newest")


def test_device_auto_falls_back_to_the_cpu_with_a_warning(monkeypatch, caplog):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    assert "running on the CPU" in caplog.text
    assert resolve_device("cpu") == "cpu"
    with pytest.raises(BackendUnavailable, match="CUDA device 1 is not available"):
        resolve_device("cuda:1")


def test_created_from_the_config_with_its_models_loaded(tiny, upstream, tmp_path):
    speech = SpeechConfig(options={"openvoice": OpenVoiceOptions(dir=str(tiny.v2), melo_dir=str(tiny.melo),
                                                                 device="cpu", speed=0.9)})
    speaker = create_speaker(Config(speech=speech, cache_dir=tmp_path), "openvoice")
    assert isinstance(speaker, OpenVoiceSpeaker)
    assert (speaker.speed, speaker.cache_dir, speaker.folders["v1"]) == (0.9, tmp_path, None)
    assert set(speaker._stacks) == {"en-newest"} and speaker.device == "cpu"  # loaded now, not in a turn


def test_what_cannot_load_stops_the_creation_from_the_config(layout, monkeypatch, tmp_path):
    """The app's warm-up creates the speaker: weights or code that cannot load stop it there, with one message."""
    install_packages(monkeypatch)  # "openvoice" is there, "openvoice.api" is not
    speech = SpeechConfig(options={"openvoice": OpenVoiceOptions(dir=str(layout.v2), melo_dir=str(layout.melo),
                                                                 device="cpu")})
    with pytest.raises(BackendUnavailable, match="OpenVoice cannot be imported .*pip install git"):
        create_speaker(Config(speech=speech, cache_dir=tmp_path), "openvoice")


# -- the emotion bank -------------------------------------------------------------------------------

def test_shipped_bank_covers_every_class_with_v1_styles():
    path = bank_path("openvoice")
    bank = ProsodyBank.from_file(path)
    styles = load_styles(path, V1_STYLES)
    assert set(bank.tables) == set(COARSE) == set(styles)
    assert all({s.style, s.strong_style} <= set(V1_STYLES) for s in styles.values())
    assert (styles["neutral"].style, styles["fear"].style, styles["sad"].style) == ("default", "terrified", "sad")
    assert (styles["angry"].style, styles["angry"].strong_style) == ("angry", "shouting")
    assert bank.at("sad", 1.0).rate < 1.0 < bank.at("happy", 1.0).rate
    assert bank.at("sad", 1.0).pitch_shift_semitones < 0 < bank.at("happy", 1.0).pitch_shift_semitones


def test_plans(layout, monkeypatch, tmp_path):
    install_packages(monkeypatch)
    speaker = make(layout, tmp_path)
    v2, v1 = voice_of(None), voice_of(None, "en-styles")
    assert speaker.plan("neutral", 0.0, v2).speed == pytest.approx(0.8)  # E3RG's MeloTTS speed
    sad = speaker.plan("sad", 1.0, v2)
    assert sad.style == "" and sad.speed == pytest.approx(0.8 * 0.82) and sad.prosody.energy_db == pytest.approx(-5.0)
    assert speaker.plan("sad", 1.0, voice_of(None, rate=1.1)).speed == pytest.approx(0.8 * 0.82 * 1.1)
    assert speaker.plan("angry", 0.5, v1).style == "angry"
    strong = speaker.plan("angry", 1.0, v1)
    assert strong.style == "shouting" and strong.speed == pytest.approx(1.05) and strong.prosody.energy_db == 0.0
    assert speaker.plan("fear", 0.5, v1).speed == pytest.approx(1.1 ** 0.5)


# -- the reference clip -----------------------------------------------------------------------------

def test_reference_checks(references, tmp_path):
    with pytest.raises(InputError, match="add reference_speech = .* to its profile.toml"):
        read_reference(voice_of(None))
    with pytest.raises(InputError, match="does not exist"):
        read_reference(voice_of(tmp_path / "none.wav"))
    corrupt = tmp_path / "corrupt.wav"
    corrupt.write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt " + os.urandom(300))
    with pytest.raises(InputError, match="cannot decode audio file"):
        read_reference(voice_of(corrupt))
    with pytest.raises(InputError) as short:
        read_reference(voice_of(references["short"]))
    found = re.search(r"has (\d+\.\d) s of voiced speech \(in (\d+\.\d) s\); OpenVoice needs at least 5\.0 s",
                      str(short.value))
    assert found, short.value
    assert 1.5 <= float(found[1]) <= 2.8 and 6.5 <= float(found[2]) <= 8.0  # ~2 s of speech, then 4 s of silence
    silent = tmp_path / "silent.wav"
    import soundfile

    soundfile.write(str(silent), np.zeros(24000 * 6, np.float32), 24000)
    with pytest.raises(InputError, match=r"has 0\.0 s of voiced speech \(in 6\.0 s\)"):
        read_reference(voice_of(silent))
    good = read_reference(voice_of(references["long"]))
    assert good.voiced_s >= MIN_REFERENCE_VOICED_S
    assert len(good.voiced) / good.sample_rate_hz == pytest.approx(good.voiced_s, abs=0.05)
    other = read_reference(voice_of(references["other"]))
    assert other.digest != good.digest and other.voiced_s == pytest.approx(good.voiced_s, abs=0.05)


def test_reference_errors_come_before_any_model_loads(layout, monkeypatch, tmp_path, references):
    install_packages(monkeypatch)  # loading a model would fail: openvoice.api does not exist
    speaker = make(layout, tmp_path)
    with pytest.raises(InputError, match="OpenVoice needs at least 5.0 s"):
        speaker.synthesize(TEXT, emotion="happy", intensity=1.0, voice=voice_of(references["short"]),
                           out_path=tmp_path / "out.wav")
    assert speaker._stacks == {} and not (tmp_path / "out.wav").exists()


@pytest.mark.parametrize("kwargs, error, message", [
    ({"voice": VoiceSettings(backend="openvoice")}, ConfigError,
     "unknown openvoice voice 'heart'; choose from en-newest, en-styles"),
    ({"voice": VoiceSettings()}, ConfigError, "voice backend 'embedded'"),
    ({"voice": VoiceSettings(backend="openvoice", voice="en-styles")}, ConfigError, "needs speech.openvoice.v1_dir"),
    ({"text": " "}, InputError, "empty"),
    ({"emotion": "joyful"}, InputError, "unknown speech emotion"),
])
def test_bad_requests_write_nothing(layout, monkeypatch, tmp_path, references, kwargs, error, message):
    install_packages(monkeypatch)
    speaker = make(layout, tmp_path, v1_checkpoints=None)
    request = {"text": "Hello.", "emotion": "happy", "intensity": 0.5, "voice": voice_of(references["long"]), **kwargs}
    with pytest.raises(error, match=message):
        speaker.synthesize(**request, out_path=tmp_path / "x.wav")
    assert not (tmp_path / "x.wav").exists()


# -- speaking through upstream's code ---------------------------------------------------------------

def test_v2_speaks_with_the_real_source_embedding(tiny, upstream, references, tmp_path):
    import soundfile

    speaker = make(tiny, tmp_path)
    speech = speaker.synthesize(TEXT, emotion="happy", intensity=1.0, voice=voice_of(references["long"]),
                                out_path=tmp_path / "out" / "happy.wav")
    melo_files = dict(config_path=str(tiny.melo / "config.json"), ckpt_path=str(tiny.melo / "checkpoint.pth"))
    assert upstream.melo_init == [dict(language="EN_NEWEST", device="cpu", use_hf=True, **melo_files)]
    assert [c["text"] for c in upstream.melo_calls] == split_sentences(TEXT)
    calls = {(c["speaker_id"], round(c["speed"], 4), c["quiet"]) for c in upstream.melo_calls}
    assert calls == {(0, round(0.8 * 1.1, 4), True)}  # E3RG's speed 0.8 times happy's rate
    (call,) = upstream.converts
    assert call["src_se"] is not None and call["src_se"].equal(load_tensor(real_source_se()))
    assert tuple(call["tgt_se"].shape) == (1, 256, 1) and not call["tgt_se"].equal(call["src_se"])
    assert (call["tau"], call["message"], call["version"]) == (0.3, "@MyShell", "v2")
    assert upstream.watermarks  # upstream's converter watermarked the output
    info = soundfile.info(str(speech.wav_path))
    assert (info.samplerate, speech.sample_rate_hz) == (22050, 22050) and info.subtype == "PCM_16"
    assert speech.duration_s == pytest.approx(info.duration, abs=1e-3)
    assert speech.duration_s == pytest.approx(call["source_s"], abs=0.03)  # the converter keeps the timing
    assert 2.0 < speech.duration_s < 8.0  # 12 words at speed 0.88
    assert (speech.voice, speech.emotion, speech.intensity, speech.text) == ("openvoice:en-newest", "happy", 1.0, TEXT)
    assert speech.visemes[0].start_s == 0.0 and speech.visemes[-1].end_s == pytest.approx(speech.duration_s, abs=1e-3)
    assert all(a.end_s == pytest.approx(b.start_s) for a, b in zip(speech.visemes, speech.visemes[1:]))
    assert len({v.symbol for v in speech.visemes} - {"sil"}) >= 5 and speech.phonemes
    samples, sr = soundfile.read(str(speech.wav_path), dtype="float32")
    assert prosody.active_level_dbfs(samples, sr) == pytest.approx(prosody.NEUTRAL_LEVEL_DBFS + 2.5, abs=1.5)
    assert not list((tmp_path / "out").glob("*.part"))


def test_voice_embedding_is_extracted_once_and_cached(tiny, upstream, references, tmp_path):
    say = dict(emotion="neutral", intensity=0.0)
    first = make(tiny, tmp_path)
    first.synthesize("Hello there.", voice=voice_of(references["long"]), out_path=tmp_path / "a.wav", **say)
    first.synthesize("Hello again.", voice=voice_of(references["long"]), out_path=tmp_path / "b.wav", **say)
    assert len(upstream.extracts) == 1 and len(upstream.extracts[0]) == 1  # ~10 s of speech: one piece
    cached = list((tmp_path / "cache" / "openvoice_se").glob("*.pth"))
    assert len(cached) == 1 and re.fullmatch(r"[0-9a-f]{64}\.pth", cached[0].name)
    assert load_tensor(cached[0]).equal(upstream.converts[0]["tgt_se"])

    second = make(tiny, tmp_path)  # a restart: the embedding comes from the cache
    second.synthesize("Hello there.", voice=voice_of(references["long"]), out_path=tmp_path / "c.wav", **say)
    assert len(upstream.extracts) == 1 and upstream.converts[-1]["tgt_se"].equal(upstream.converts[0]["tgt_se"])

    second.synthesize("Hello there.", voice=voice_of(references["other"]), out_path=tmp_path / "d.wav", **say)
    assert len(upstream.extracts) == 2  # another clip
    v1_voice = voice_of(references["long"], "en-styles")
    second.synthesize("Hello there.", voice=v1_voice, out_path=tmp_path / "e.wav", **say)
    assert len(upstream.extracts) == 3  # another converter: V1's embedding of the same clip
    assert len(list((tmp_path / "cache" / "openvoice_se").glob("*.pth"))) == 3

    cached[0].write_bytes(b"not a tensor")
    third = make(tiny, tmp_path)
    third.synthesize("Hello there.", voice=voice_of(references["long"]), out_path=tmp_path / "f.wav", **say)
    assert len(upstream.extracts) == 4 and load_tensor(cached[0]).equal(upstream.converts[0]["tgt_se"])


def test_v1_styles_and_their_source_embeddings(tiny, upstream, references, tmp_path):
    speaker = make(tiny, tmp_path)
    voice = voice_of(references["long"], "en-styles")
    angry = speaker.synthesize("Stop that right now.", emotion="angry", intensity=1.0, voice=voice,
                               out_path=tmp_path / "a.wav")
    speaker.synthesize("All right.", emotion="neutral", intensity=0.3, voice=voice, out_path=tmp_path / "n.wav")
    assert upstream.v1_init == [dict(config_path=str(tiny.v1 / "base_speakers" / "EN" / "config.json"), device="cpu")]
    assert upstream.converters[0]["args"] == (str(tiny.v1 / "converter" / "config.json"),)
    assert [(c["speaker"], round(c["speed"], 3)) for c in upstream.v1_calls] == [("shouting", 1.05), ("default", 1.0)]
    styled, default = upstream.converts
    assert styled["src_se"].equal(load_tensor(tiny.v1 / "base_speakers" / "EN" / "en_style_se.pth"))
    assert default["src_se"].equal(load_tensor(tiny.v1 / "base_speakers" / "EN" / "en_default_se.pth"))
    assert styled["version"] == "v1" and styled["tgt_se"].equal(default["tgt_se"])
    assert angry.voice == "openvoice:en-styles" and angry.sample_rate_hz == 22050 and angry.visemes


def test_same_seed_same_audio_and_requests_one_at_a_time(tiny, upstream, references, tmp_path):
    speaker = make(tiny, tmp_path)
    voice = voice_of(references["long"])
    outs = [tmp_path / f"{i}.wav" for i in range(3)]
    request = dict(emotion="sad", intensity=0.5, voice=voice)
    threads = [threading.Thread(target=speaker.synthesize, args=("Hello there.",), kwargs=dict(request, out_path=out))
               for out in outs[:2]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert upstream.peak == 1 and len(upstream.melo_calls) == 2
    assert outs[0].read_bytes() == outs[1].read_bytes()
    import torch

    torch.rand(1000)  # whatever else uses the global generator in between does not matter...
    state = torch.get_rng_state()
    speaker.synthesize("Hello there.", emotion="sad", intensity=0.5, voice=voice, out_path=outs[2])
    assert outs[2].read_bytes() == outs[0].read_bytes()
    assert torch.equal(torch.get_rng_state(), state)  # ...and synthesis leaves it alone
    speaker.seed = 1
    speaker.synthesize("Hello there.", emotion="sad", intensity=0.5, voice=voice, out_path=outs[2])
    assert outs[2].read_bytes() != outs[0].read_bytes()  # the converter's noise follows the seed


def test_broken_checkpoints_are_clear_errors(tiny, upstream, references, tmp_path):
    root = tmp_path / "broken"
    shutil.copytree(tiny.v2, root)
    (root / "converter" / "checkpoint.pth").write_bytes(b"garbage")
    with pytest.raises(BackendUnavailable, match="converter checkpoint .*checkpoint.pth cannot be loaded"):
        make(tiny, tmp_path, checkpoints=root).load("en-newest")
    shutil.copy(tiny.v2 / "converter" / "checkpoint.pth", root / "converter")
    import torch

    torch.save(torch.zeros(1, 128, 1), str(root / "base_speakers" / "ses" / "en-newest.pth"))
    speaker = make(tiny, tmp_path, checkpoints=root)
    with pytest.raises(BackendUnavailable, match=r"en-newest.pth is not an OpenVoice speaker embedding .*\[1, 128"):
        speaker.synthesize("Hello.", emotion="neutral", intensity=0.0, voice=voice_of(references["long"]),
                           out_path=tmp_path / "x.wav")
    assert not (tmp_path / "x.wav").exists()


@pytest.mark.gpu
def test_tiny_checkpoints_speak_on_cuda(tiny, upstream, references, tmp_path):
    """device="cuda" puts upstream's converter, the source embedding and the avatar's on the GPU and speaks
    there: finite, audible audio at the converter's rate, as long as the same request on the CPU (the samples
    themselves may differ between devices)."""
    import soundfile

    voice = voice_of(references["long"])
    request = dict(emotion="happy", intensity=1.0, voice=voice)
    speaker = make(tiny, tmp_path / "cuda", device="cuda")
    speech = speaker.synthesize(TEXT, **request, out_path=tmp_path / "cuda.wav")
    assert speaker.device == "cuda" and upstream.melo_init[0]["device"] == "cuda"
    stack = speaker._stacks["en-newest"]
    assert {p.device.type for p in stack.converter.model.model.parameters()} == {"cuda"}
    assert stack.source_for("").device.type == "cuda" and upstream.converts[0]["version"] == "v2"
    assert speaker._target_se(read_reference(voice), stack.converter).device.type == "cuda"
    samples, sr = soundfile.read(str(speech.wav_path), dtype="float32")
    assert sr == speech.sample_rate_hz == 22050 and np.isfinite(samples).all() and np.abs(samples).max() > 0.01
    assert prosody.active_level_dbfs(samples, sr) > -40.0 and 2.0 < speech.duration_s < 8.0
    on_cpu = make(tiny, tmp_path / "cpu").synthesize(TEXT, **request, out_path=tmp_path / "cpu.wav")
    assert len(soundfile.read(str(on_cpu.wav_path))[0]) == len(samples)


# -- the real thing -----------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.skipif(not os.environ.get("E3RG_TEST_OPENVOICE_DIR"),
                    reason="set E3RG_TEST_OPENVOICE_DIR to OpenVoice's checkpoints_v2 (and E3RG_TEST_MELO_DIR, "
                           "E3RG_TEST_OPENVOICE_V1_DIR, E3RG_TEST_OPENVOICE_REFERENCE where available)")
def test_real_openvoice(tmp_path):
    import soundfile
    import torch

    def folder(name: str) -> Path | None:
        return Path(os.environ[name]) if os.environ.get(name) else None

    reference = folder("E3RG_TEST_OPENVOICE_REFERENCE") or write_reference(tmp_path / "reference.wav", LONG_TEXT)
    speaker = OpenVoiceSpeaker(checkpoints=folder("E3RG_TEST_OPENVOICE_DIR"), melo_dir=folder("E3RG_TEST_MELO_DIR"),
                               v1_checkpoints=folder("E3RG_TEST_OPENVOICE_V1_DIR"), device="cuda",
                               cache_dir=tmp_path / "cache")
    cos = torch.nn.functional.cosine_similarity
    for name in ["en-newest"] + (["en-styles"] if speaker.folders["v1"] else []):
        voice = voice_of(reference, name)
        speech = speaker.synthesize(TEXT, emotion="sad", intensity=1.0, voice=voice, out_path=tmp_path / f"{name}.wav")
        assert 2.0 < speech.duration_s < 10.0 and speech.visemes and speech.sample_rate_hz == 22050
        samples, sr = soundfile.read(str(speech.wav_path))
        assert sr == speech.sample_rate_hz and np.abs(samples).max() > 0.05
        # the output sounds more like the avatar than like the base speaker
        stack = speaker._stacks[name]
        produced = stack.converter.model.extract_se([str(speech.wav_path)]).flatten()
        target = speaker._target_se(read_reference(voice), stack.converter).flatten()
        source = stack.source_for(speaker.plan("sad", 1.0, voice).style).flatten()
        assert cos(produced, target, dim=0) > cos(produced, source, dim=0)
