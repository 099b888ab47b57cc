"""The transformers chat backend, loaded from tiny random checkpoints saved in the real on-disk format."""

from __future__ import annotations

import functools
import importlib.util
import math
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from e3rg_core import registry  # noqa: E402
from e3rg_core.emotions import CANDIDATES  # noqa: E402
from e3rg_core.errors import BackendFailed, BackendUnavailable, ConfigError, InputError  # noqa: E402
from e3rg_core.understanding.base import ChatMessage, ChatModel, StreamingChat, TurnMedia  # noqa: E402
from e3rg_core.understanding.hf import TransformersChat  # noqa: E402
from tests.backends import tiny_hf  # noqa: E402

SYSTEM = ChatMessage("system", "You take part in a conversation as the Listener.")
PROMPTS = [
    "I failed my driving test again today.",
    "My dog died last week and the house feels empty.",
    "I got the job! I can't believe it, I start on Monday.",
    "Someone scratched my car and drove away.",
]


def turn(text: str) -> list[ChatMessage]:
    return [SYSTEM, ChatMessage("user", text)]


@pytest.fixture(scope="module")
def qwen2_dir(tmp_path_factory) -> Path:
    return tiny_hf.save_tiny_qwen2(tmp_path_factory.mktemp("tiny-qwen2"))


def score_tolerance(chat: TransformersChat) -> dict:
    """How near the backend's scores must be to a CPU reference pass: exact to 1e-4 on the CPU; on a GPU
    (device auto picks it) other kernels move a log-probability near -30 by up to 3e-3 (seen on an H200)."""
    return {"abs": 1e-4} if str(chat.device).startswith("cpu") else {"abs": 1e-2}


@pytest.fixture(scope="module")
def chat(qwen2_dir) -> TransformersChat:
    return TransformersChat(model=str(qwen2_dir))


@pytest.fixture(scope="module")
def omni_dir(tmp_path_factory) -> Path:
    return tiny_hf.save_tiny_omni(tmp_path_factory.mktemp("tiny-omni"))


@pytest.fixture(scope="module")
def omni_chat(omni_dir) -> TransformersChat:
    """The Omni backend; its processor is recorded, and is a text+audio double where torchvision is missing."""
    from transformers import Qwen2_5OmniProcessor

    real = Qwen2_5OmniProcessor.from_pretrained.__func__

    def recorded(cls, path, **kwargs):
        if tiny_hf.vision_available():
            return tiny_hf.RecordingProcessor(real(cls, path, **kwargs))
        return tiny_hf.RecordingProcessor(tiny_hf.AudioTextOmniProcessor.from_pretrained(path, **kwargs))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Qwen2_5OmniProcessor, "from_pretrained", classmethod(recorded))
        return TransformersChat(model=str(omni_dir))


@pytest.fixture(scope="module")
def sine_wav(tmp_path_factory) -> Path:
    return tiny_hf.write_sine_wav(tmp_path_factory.mktemp("media") / "tone.wav")


def reference_scores(model, inputs: dict, tokenizer, choices, **extra) -> dict[str, float]:
    """Log-likelihood of each choice + end token, from one uncached forward pass over the whole text."""
    scores = {}
    prompt_ids = inputs["input_ids"]
    for choice in choices:
        ids = tokenizer(choice, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        full = torch.cat([prompt_ids, torch.tensor([ids])], dim=1)
        batch = dict(inputs, input_ids=full, attention_mask=torch.ones_like(full))
        with torch.no_grad():
            logits = model(**batch, **extra).logits[0].float()
        logp = torch.log_softmax(logits[prompt_ids.shape[1] - 1 : -1], dim=-1)
        scores[choice] = float(logp[torch.arange(len(ids)), torch.tensor(ids)].sum())
    return scores


# --- text models --------------------------------------------------------------------------------


def test_backend_is_a_chat_model_created_through_the_registry(qwen2_dir):
    from safetensors.torch import load_file

    created = registry.create("understanding", "transformers", {"model": str(qwen2_dir), "device": "cpu"})
    assert isinstance(created, TransformersChat)
    assert isinstance(created, ChatModel)
    assert created.omni is False
    assert created.device == "cpu" and created.dtype == torch.float32
    saved = load_file(qwen2_dir / "model.safetensors")
    assert torch.equal(created._lm.lm_head.weight.cpu(), saved["lm_head.weight"])  # the saved weights, not new ones


def test_greedy_answer_is_a_deterministic_non_empty_string(chat):
    first = chat.chat(turn(PROMPTS[0]), max_tokens=8, temperature=0)
    assert isinstance(first, str) and first
    assert first == first.strip()
    assert chat.chat(turn(PROMPTS[0]), max_tokens=8, temperature=0) == first


def test_max_tokens_bounds_the_answer(chat, monkeypatch):
    generated = []
    generate = chat._lm.generate

    def counting(**kwargs):
        output = generate(**kwargs)
        generated.append(output.shape[1] - kwargs["input_ids"].shape[1])
        return output

    monkeypatch.setattr(chat._lm, "generate", counting)
    chat.chat(turn(PROMPTS[1]), max_tokens=3, temperature=0)
    chat.chat(turn(PROMPTS[1]), max_tokens=9, temperature=0)
    assert generated[0] <= 3 and generated[0] < generated[1] <= 9


def test_sampling_is_reproducible_with_a_seed(chat):
    a = chat.chat(turn(PROMPTS[2]), max_tokens=12, temperature=1.0, seed=7)
    b = chat.chat(turn(PROMPTS[2]), max_tokens=12, temperature=1.0, seed=7)
    assert a == b
    others = {chat.chat(turn(PROMPTS[2]), max_tokens=12, temperature=1.0, seed=s) for s in range(4)}
    assert len(others) > 1  # the seed, not chance, made a == b


@pytest.mark.parametrize("text", PROMPTS)
def test_choices_answer_is_always_one_of_them(chat, text):
    answer = chat.chat(turn(text), max_tokens=4, temperature=0.7, seed=1, choices=CANDIDATES)
    assert answer in CANDIDATES
    assert set(chat.last_choice_scores) == set(CANDIDATES)
    assert answer == max(chat.last_choice_scores, key=chat.last_choice_scores.get)


def test_choices_accept_multi_token_and_multi_word_labels(chat):
    choices = ["very sad", "not sure at all", "joyful"]
    for text in PROMPTS:
        assert chat.chat(turn(text), max_tokens=4, choices=choices) in choices


def test_choice_scores_equal_an_uncached_forward_pass(chat, qwen2_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(qwen2_dir)
    model = AutoModelForCausalLM.from_pretrained(qwen2_dir).eval()
    messages = [{"role": m.role, "content": m.content} for m in turn(PROMPTS[3])]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    inputs = dict(tokenizer(prompt, add_special_tokens=False, return_tensors="pt"))
    expected = reference_scores(model, inputs, tokenizer, CANDIDATES[:10])
    answer = chat.chat(turn(PROMPTS[3]), max_tokens=4, choices=CANDIDATES[:10])
    assert chat.last_choice_scores == pytest.approx(expected, **score_tolerance(chat))
    assert answer == max(expected, key=expected.get)
    # scores are log-probabilities of complete answers, so they sum to at most 1 as probabilities
    assert sum(math.exp(s) for s in expected.values()) <= 1.0


def test_media_is_ignored_by_a_text_model(chat, sine_wav):
    plain = chat.chat(turn(PROMPTS[0]), max_tokens=6, temperature=0)
    media = TurnMedia(audio_path=sine_wav)
    assert chat.chat(turn(PROMPTS[0]), max_tokens=6, temperature=0, media=media) == plain


def test_missing_model_folder_is_a_config_error_naming_it(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises((ConfigError, BackendUnavailable), match=re.escape(str(missing))):
        TransformersChat(model=str(missing))


def test_hub_id_missing_from_the_cache_is_unavailable_naming_it():
    with pytest.raises(BackendUnavailable, match="e3rg-tests/no-such-model"):
        TransformersChat(model="e3rg-tests/no-such-model", local_files_only=True)


def test_folder_without_weights_is_a_config_error_naming_it(tmp_path, qwen2_dir):
    broken = tmp_path / "config-only"
    broken.mkdir()
    (broken / "config.json").write_text((qwen2_dir / "config.json").read_text())
    with pytest.raises(ConfigError, match="config-only"):
        TransformersChat(model=str(broken))


def test_tokenizer_without_chat_template_is_a_config_error(tmp_path):
    path = tiny_hf.save_tiny_qwen2(tmp_path / "base-model", chat_template=None)
    with pytest.raises(ConfigError, match="chat template"):
        TransformersChat(model=str(path))


def test_chat_template_that_rejects_the_messages_is_a_config_error(tmp_path):
    # like Gemma's template, which refuses a system message
    template = (
        "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
        + tiny_hf.CHATML_TEMPLATE
    )
    path = tiny_hf.save_tiny_qwen2(tmp_path / "no-system", chat_template=template)
    chat_model = TransformersChat(model=str(path))
    assert isinstance(chat_model.chat([ChatMessage("user", PROMPTS[0])], max_tokens=2, temperature=0), str)
    with pytest.raises(ConfigError, match="System role not supported"):
        chat_model.chat(turn(PROMPTS[0]), max_tokens=2)


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_cuda_without_a_gpu_stops_at_start_up_saying_what_to_install_or_set(qwen2_dir, device):
    with pytest.raises(BackendUnavailable, match=r"needs an NVIDIA GPU with CUDA.*install a CUDA build of PyTorch "
                                                 r"\(pip install torch --index-url .*\).*device = \"cpu\""):
        TransformersChat(model=str(qwen2_dir), device=device)


def test_unknown_device_is_a_config_error(qwen2_dir):
    with pytest.raises(ConfigError, match="unknown device 'gpu'; choose from auto, cpu, cuda, cuda:N"):
        TransformersChat(model=str(qwen2_dir), device="gpu")


def test_weights_that_cannot_fit_stop_before_they_load(qwen2_dir, monkeypatch):
    """A model too big for the memory left (a 7B omni model in float32 on a CPU box) is refused with the
    sizes, before from_pretrained reads a byte of the weights."""
    from e3rg_core.understanding import hf

    transformers = pytest.importorskip("transformers")

    def never(*args, **kwargs):
        raise AssertionError("the weights were loaded")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", never)
    monkeypatch.setattr(hf, "_free_bytes", lambda torch_module, device: 1_000)
    weights = hf._weight_bytes(qwen2_dir)
    assert weights > 0
    with pytest.raises(BackendUnavailable, match=r"needs about [\d.]+ GB for its weights in float32 on cpu, and this "
                                                 r"machine has 0.0 GB free.*device = \"cuda\""):
        TransformersChat(model=str(qwen2_dir), device="cpu")


def test_unknown_dtype_is_a_config_error(qwen2_dir):
    with pytest.raises(ConfigError, match="float64"):
        TransformersChat(model=str(qwen2_dir), dtype="float64")


def test_importing_the_module_loads_no_torch():
    code = "import sys, e3rg_core.understanding.hf\nprint('torch' in sys.modules, 'numpy' in sys.modules)"
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert result.stdout.split() == ["False", "False"]  # neither torch nor numpy loads at import


# --- streaming ----------------------------------------------------------------------------------


def generating_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "e3rg-hf-generate"]


def counted_forward(monkeypatch, chat_model, *, delay_s: float = 0.0, fail_at: int | None = None) -> list[int]:
    """Make each forward pass of the model count itself, sleep ``delay_s`` and fail on call ``fail_at``."""
    calls: list[int] = []
    forward = chat_model._lm.forward

    @functools.wraps(forward)
    def counting(*args, **kwargs):
        calls.append(1)
        if fail_at is not None and len(calls) >= fail_at:
            raise RuntimeError("simulated out of memory")
        time.sleep(delay_s)
        return forward(*args, **kwargs)

    monkeypatch.setattr(chat_model._lm, "forward", counting)
    return calls


@pytest.mark.parametrize("text", PROMPTS)
def test_streamed_pieces_join_to_the_greedy_answer(chat, text):
    assert isinstance(chat, StreamingChat)
    pieces = list(chat.chat_stream(turn(text), max_tokens=60, temperature=0))
    assert all(isinstance(p, str) and p for p in pieces)
    assert "".join(pieces).strip() == chat.chat(turn(text), max_tokens=60, temperature=0)


def test_a_long_answer_arrives_in_many_pieces(chat):
    pieces = list(chat.chat_stream(turn(PROMPTS[1]), max_tokens=60, temperature=0))
    assert len(pieces) > 3 and len(pieces[0]) < len("".join(pieces)) / 4


def test_streamed_sampling_follows_the_seed_like_chat(chat):
    streamed = "".join(chat.chat_stream(turn(PROMPTS[2]), max_tokens=12, temperature=1.0, seed=7)).strip()
    assert streamed == chat.chat(turn(PROMPTS[2]), max_tokens=12, temperature=1.0, seed=7)


def test_closing_a_stream_early_stops_the_generating_thread(chat, monkeypatch):
    expected = chat.chat(turn(PROMPTS[1]), max_tokens=100, temperature=0)
    calls = counted_forward(monkeypatch, chat, delay_s=0.05)  # 100 tokens would now take over 5 s
    stream = chat.chat_stream(turn(PROMPTS[1]), max_tokens=100, temperature=0)
    first = next(stream)
    assert generating_threads() and len(calls) < 20  # the first word came early; generation goes on
    n_at_close, started = len(calls), time.perf_counter()
    stream.close()
    assert time.perf_counter() - started < 1.0
    assert not generating_threads()
    assert len(calls) <= n_at_close + 2  # the stopping criterion ended generation at the next token
    assert expected.startswith(first.strip())
    monkeypatch.undo()
    assert chat.chat(turn(PROMPTS[1]), max_tokens=100, temperature=0) == expected  # the model is free again


def test_failure_in_the_generating_thread_is_backend_failed(chat, monkeypatch):
    calls = counted_forward(monkeypatch, chat, fail_at=3)
    with pytest.raises(BackendFailed, match="simulated out of memory"):
        list(chat.chat_stream(turn(PROMPTS[1]), max_tokens=40, temperature=0))
    assert len(calls) == 3 and not generating_threads()
    monkeypatch.undo()
    assert chat.chat(turn(PROMPTS[1]), max_tokens=4, temperature=0)  # the lock was released


def test_stream_errors_are_mapped_like_chat(chat):
    with pytest.raises(InputError, match="at least one message"):
        list(chat.chat_stream([], max_tokens=4))


# --- Qwen2.5-Omni -------------------------------------------------------------------------------


def test_omni_checkpoint_is_detected_and_loads_without_talker(omni_chat, omni_dir):
    from safetensors.torch import load_file

    saved = load_file(omni_dir / "model.safetensors")
    assert any(key.startswith("talker.") for key in saved)
    assert any(key.startswith("token2wav.") for key in saved)
    assert omni_chat.omni is True
    thinker = omni_chat._lm  # the talker and token2wav were never built: only the thinker answers
    assert type(thinker).__name__ == "Qwen2_5OmniThinkerForConditionalGeneration"
    # on a GPU machine device auto loads the thinker there in bfloat16: compare with the saved tensors
    # cast the same way (seen on an H200)
    for loaded, name in ((thinker.lm_head.weight, "thinker.lm_head.weight"),
                         (thinker.get_input_embeddings().weight, "thinker.model.embed_tokens.weight")):
        assert torch.equal(loaded.cpu(), saved[name].to(loaded.dtype))


@pytest.mark.skipif(tiny_hf.vision_available(), reason="pillow and torchvision are installed here")
def test_omni_without_torchvision_is_unavailable_and_says_what_to_install(omni_dir):
    with pytest.raises(BackendUnavailable, match="torchvision"):
        TransformersChat(model=str(omni_dir))


def test_omni_text_turn_is_deterministic_at_temperature_zero(omni_chat):
    a = omni_chat.chat(turn(PROMPTS[0]), max_tokens=6, temperature=0)
    assert isinstance(a, str) and a
    assert omni_chat.chat(turn(PROMPTS[0]), max_tokens=6, temperature=0) == a
    assert omni_chat._processor.calls[-1]["use_audio_in_video"] is False


def test_omni_hears_the_turn_audio(omni_chat, sine_wav):
    heard = omni_chat.chat(turn(PROMPTS[1]), max_tokens=6, temperature=0, media=TurnMedia(audio_path=sine_wav))
    assert isinstance(heard, str) and heard
    call = omni_chat._processor.calls[-1]
    (samples,) = call["audio"]
    assert samples.dtype == np.float32 and samples.shape == (16000,)
    assert call["use_audio_in_video"] is False and call["videos"] is None
    prompt = omni_chat._processor.prompts[-1]
    assert prompt.count("<|AUDIO|>") == 1
    assert prompt.index("<|AUDIO|>") < prompt.index(PROMPTS[1])  # the recording precedes the user's words
    # the audio reaches the model: it changes how likely each answer is
    omni_chat.chat(turn(PROMPTS[1]), max_tokens=2, choices=CANDIDATES[:5])
    silent = dict(omni_chat.last_choice_scores)
    omni_chat.chat(turn(PROMPTS[1]), max_tokens=2, choices=CANDIDATES[:5], media=TurnMedia(audio_path=sine_wav))
    assert omni_chat.last_choice_scores != pytest.approx(silent, abs=1e-6)


def test_omni_resamples_audio_to_16_khz(omni_chat, tmp_path):
    wav = tiny_hf.write_sine_wav(tmp_path / "8k.wav", sample_rate_hz=8000, duration_s=0.5)
    omni_chat.chat(turn(PROMPTS[2]), max_tokens=2, temperature=0, media=TurnMedia(audio_path=wav))
    (samples,) = omni_chat._processor.calls[-1]["audio"]
    assert samples.shape == (8000,)  # 0.5 s at 16 kHz
    assert 0.3 < float(np.abs(samples).max()) < 0.7  # a 0.5-amplitude tone stays one


def test_omni_choices_with_audio_are_one_of_them_and_exact(omni_chat, omni_dir, sine_wav):
    from transformers import Qwen2_5OmniForConditionalGeneration

    media = TurnMedia(audio_path=sine_wav)
    for text in PROMPTS[:3]:
        assert omni_chat.chat(turn(text), max_tokens=4, choices=CANDIDATES, media=media) in CANDIDATES
    answer = omni_chat.chat(turn(PROMPTS[3]), max_tokens=4, choices=CANDIDATES[:8], media=media)
    call = omni_chat._processor.calls[-1]
    inputs = dict(omni_chat._processor.inner(**call))
    thinker = Qwen2_5OmniForConditionalGeneration.from_pretrained(omni_dir, enable_audio_output=False).thinker
    expected = reference_scores(thinker.eval(), inputs, omni_chat._tokenizer, CANDIDATES[:8],
                                use_audio_in_video=False)
    assert omni_chat.last_choice_scores == pytest.approx(expected, **score_tolerance(omni_chat))
    assert answer == max(expected, key=expected.get)


def test_omni_sees_64_uniformly_sampled_video_frames(omni_chat, tmp_path, sine_wav):
    frames = tiny_hf.write_frames_npy(tmp_path / "clip.npy", n_frames=100)
    media = TurnMedia(audio_path=sine_wav, video_path=frames)
    answer = omni_chat.chat(turn(PROMPTS[0]), max_tokens=4, temperature=0, media=media)
    assert isinstance(answer, str)
    call = omni_chat._processor.calls[-1]
    (video,) = call["videos"]
    assert video.shape == (64, 56, 56, 3) and video.dtype == np.uint8
    frame_ids = video[:, 0, 0, 0].astype(int)
    assert frame_ids[0] == 0 and frame_ids[-1] == 99 and np.all(np.diff(frame_ids) > 0)
    assert call["use_audio_in_video"] is False and len(call["audio"]) == 1
    prompt = omni_chat._processor.prompts[-1]
    assert prompt.index("<|VIDEO|>") < prompt.index("<|AUDIO|>") < prompt.index(PROMPTS[0])


def test_short_videos_keep_every_frame(omni_chat, tmp_path):
    frames = tiny_hf.write_frames_npy(tmp_path / "short.npy", n_frames=6)
    omni_chat.chat(turn(PROMPTS[1]), max_tokens=2, temperature=0, media=TurnMedia(video_path=frames))
    (video,) = omni_chat._processor.calls[-1]["videos"]
    assert video[:, 0, 0, 0].tolist() == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("kind", ["audio", "video"])
def test_missing_media_file_is_an_input_error(omni_chat, tmp_path, kind):
    missing = tmp_path / ("gone.wav" if kind == "audio" else "gone.npy")
    media = TurnMedia(audio_path=missing) if kind == "audio" else TurnMedia(video_path=missing)
    with pytest.raises(InputError, match="gone"):
        omni_chat.chat(turn(PROMPTS[0]), max_tokens=2, media=media)


def test_unreadable_media_is_an_input_error(omni_chat, tmp_path):
    bad_wav = tmp_path / "noise.wav"
    bad_wav.write_bytes(b"not a wav file at all")
    with pytest.raises(InputError, match="noise.wav"):
        omni_chat.chat(turn(PROMPTS[0]), max_tokens=2, media=TurnMedia(audio_path=bad_wav))
    bad_frames = tmp_path / "flat.npy"
    np.save(bad_frames, np.zeros((4, 8), dtype=np.uint8))
    with pytest.raises(InputError, match="flat.npy"):
        omni_chat.chat(turn(PROMPTS[0]), max_tokens=2, media=TurnMedia(video_path=bad_frames))


@pytest.mark.skipif(importlib.util.find_spec("av") is not None, reason="PyAV is installed here")
def test_encoded_video_without_pyav_is_unavailable_naming_it(omni_chat, tmp_path):
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"\x00" * 64)
    with pytest.raises(BackendUnavailable, match="pip install av"):
        omni_chat.chat(turn(PROMPTS[0]), max_tokens=2, media=TurnMedia(video_path=clip))


def test_omni_stream_with_audio_joins_to_the_chat_answer(omni_chat, sine_wav):
    media = TurnMedia(audio_path=sine_wav)
    pieces = list(omni_chat.chat_stream(turn(PROMPTS[1]), max_tokens=40, temperature=0, media=media))
    assert omni_chat._processor.calls[-1]["audio"] is not None  # the stream heard the recording too
    assert len(pieces) > 1
    assert "".join(pieces).strip() == omni_chat.chat(turn(PROMPTS[1]), max_tokens=40, temperature=0, media=media)


# --- GPU ----------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_loads_on_cuda_in_bfloat16_and_answers(qwen2_dir):
    gpu_chat = TransformersChat(model=str(qwen2_dir), device="auto")
    assert gpu_chat.device == "cuda" and gpu_chat.dtype == torch.bfloat16
    assert next(gpu_chat._lm.parameters()).is_cuda
    assert isinstance(gpu_chat.chat(turn(PROMPTS[0]), max_tokens=6, temperature=0), str)
    for text in PROMPTS:
        assert gpu_chat.chat(turn(text), max_tokens=4, choices=CANDIDATES) in CANDIDATES


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.skipif(not tiny_hf.vision_available(), reason="the Omni processor needs pillow and torchvision")
def test_omni_loads_on_cuda_and_hears_audio(omni_dir, sine_wav):
    gpu_chat = TransformersChat(model=str(omni_dir))
    assert gpu_chat.omni and gpu_chat.device == "cuda" and gpu_chat.dtype == torch.bfloat16
    media = TurnMedia(audio_path=sine_wav)
    assert isinstance(gpu_chat.chat(turn(PROMPTS[0]), max_tokens=6, temperature=0, media=media), str)
    assert gpu_chat.chat(turn(PROMPTS[1]), max_tokens=4, choices=CANDIDATES, media=media) in CANDIDATES
