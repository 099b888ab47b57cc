"""Chat models run by Hugging Face transformers: any causal chat LM, or Qwen2.5-Omni with the turn's media.

* Text models: ``AutoTokenizer`` + ``AutoModelForCausalLM``; the prompt is the tokenizer's chat template.
* Qwen2.5-Omni (``model_type == "qwen2_5_omni"`` in config.json, or ``omni=True``): the thinker reads
  the turn's audio (16 kHz mono) and up to 64 uniformly sampled video frames, as E3RG does, given as
  ``{"type": "audio"|"video"|"text"}`` parts of the last user message. Output is text only: the
  checkpoint loads with ``enable_audio_output=False`` (talker and token2wav are never built) and
  answers come from the thinker's ``generate``. The processor needs pillow and torchvision.

``choices`` are answered by scoring, not sampling: each choice followed by the end-of-turn token is
scored by its log-likelihood as the continuation of the prompt (the prompt runs once; each choice
reuses a copy of its key/value cache) and the most likely one is returned, so the answer is always
exactly one of the choices, and temperature and seed do not change it.

``chat_stream`` streams a free answer from either kind of model: ``generate`` runs in a thread and
a ``TextIteratorStreamer`` hands its text over a word at a time.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import inspect
import logging
import threading
import wave
from pathlib import Path
from typing import Any, Iterator, Sequence

from e3rg_core.errors import BackendFailed, BackendUnavailable, ConfigError, InputError
from e3rg_core.understanding.base import ChatMessage, TurnMedia

logger = logging.getLogger(__name__)

SAMPLE_RATE_HZ = 16000  # Qwen2.5-Omni's Whisper-style audio encoder reads 16 kHz mono
MAX_VIDEO_FRAMES = 64  # E3RG samples 64 frames uniformly from the utterance's video
OMNI_MODEL_TYPES = ("qwen2_5_omni",)
DTYPES = ("auto", "float32", "bfloat16", "float16")
# AvaMERG ships each utterance's audio as its own file, so it is its own message part rather than
# interleaved with the video track. This one value goes to the processor, generate and forward.
USE_AUDIO_IN_VIDEO = False
_INSTALL = "pip install transformers torch"
CUDA_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cu126"
_LOAD_ERRORS = (OSError, ValueError, KeyError, RuntimeError)
_PCM_DTYPES = {1: "u1", 2: "<i2", 4: "<i4"}  # WAV sample width in bytes -> numpy dtype


def _is_local_folder(model: str) -> bool:
    """True for a local model folder; a path-like string naming no folder is a ConfigError."""
    path = Path(model).expanduser()
    if path.is_dir():
        return True
    if path.exists() or path.is_absolute() or model.startswith((".", "~")):
        raise ConfigError(
            f"no model folder at {model}: give a folder with config.json, the weights and the "
            "tokenizer files, or a Hugging Face hub id such as Qwen/Qwen2.5-1.5B-Instruct"
        )
    return False


def _placement(torch: Any, device: str, dtype: str) -> tuple[str, Any]:
    """Where and in which dtype to run: auto means cuda in bfloat16 if there is a GPU, else cpu in float32."""
    if dtype not in DTYPES:
        raise ConfigError(f"unknown dtype {dtype!r}; choose from {', '.join(DTYPES)}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cpu":
            logger.warning("no CUDA GPU here: the transformers backend runs on the CPU in float32 (slow)")
    elif device.startswith("cuda"):
        index = int(device.partition(":")[2] or 0)
        if not torch.cuda.is_available() or index >= torch.cuda.device_count():
            why = ("this PyTorch has no CUDA (a CPU build)" if torch.version.cuda is None
                   else f"PyTorch sees {torch.cuda.device_count()} CUDA device(s)")
            raise BackendUnavailable(
                f"device {device!r} needs an NVIDIA GPU with CUDA, and {why} (torch {torch.__version__}). "
                f"On a GPU machine install a CUDA build of PyTorch ({CUDA_TORCH}); elsewhere set "
                "device = \"cpu\" in the model profile, or choose a CPU profile such as qwen1.5b")
    elif device != "cpu":
        raise ConfigError(f"unknown device {device!r}; choose from auto, cpu, cuda, cuda:N")
    if dtype == "auto":
        return device, torch.bfloat16 if device.startswith("cuda") else torch.float32
    return device, getattr(torch, dtype)


def _weight_bytes(folder: Path) -> int:
    """Bytes of the weight files in a local model folder (safetensors, else PyTorch .bin)."""
    files = list(folder.glob("*.safetensors")) or list(folder.glob("*.bin"))
    return sum(f.stat().st_size for f in files)


def _free_bytes(torch: Any, device: str) -> int | None:
    """Memory free for the weights on ``device``: the GPU's free memory, or the host's MemAvailable."""
    if device.startswith("cuda"):
        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None  # not Linux: no check


def _check_memory(torch: Any, folder: Path, config: Any, device: str, dtype: Any, model: str) -> None:
    """Refuse to start a load that cannot fit (a 7B model in float32 on a laptop), before it begins."""
    saved_as = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None) or ""
    stored = {"float32": 4, "float64": 8}.get(str(saved_as).replace("torch.", ""), 2)  # else 16-bit
    need = _weight_bytes(folder) * torch.empty((), dtype=dtype).element_size() / stored
    free = _free_bytes(torch, device)
    if free is not None and need > free:
        where = f"GPU {device}" if device.startswith("cuda") else "this machine"
        raise BackendUnavailable(
            f"{model} needs about {need / 1e9:.1f} GB for its weights in {str(dtype).replace('torch.', '')} on "
            f"{device}, and {where} has {free / 1e9:.1f} GB free; run it on a GPU with more memory "
            "(device = \"cuda\"), or choose a smaller model (docs/gpu-box.md lists what each needs)")


def _read_pcm_wav(path: Path) -> tuple[Any, int]:
    import numpy as np

    with wave.open(str(path), "rb") as wav:
        width, n_channels, rate = wav.getsampwidth(), wav.getnchannels(), wav.getframerate()
        raw = wav.readframes(wav.getnframes())
    if width not in _PCM_DTYPES:
        raise wave.Error(f"{8 * width}-bit samples")
    samples = np.frombuffer(raw, dtype=_PCM_DTYPES[width]).astype(np.float32)
    samples = (samples - 128.0) / 128.0 if width == 1 else samples / float(2 ** (8 * width - 1))
    return samples.reshape(-1, n_channels).mean(axis=1), rate


def _load_audio(path: Path) -> Any:
    """The recording at ``path`` as 16 kHz mono float32 samples (PCM WAV natively, else soundfile)."""
    import numpy as np

    if not path.is_file():
        raise InputError(f"audio file not found: {path}")
    try:
        samples, rate = _read_pcm_wav(path)
    except (wave.Error, EOFError, ValueError) as wav_error:  # not PCM WAV: float, compressed or corrupt
        try:
            import soundfile
        except ImportError as exc:
            if path.suffix.lower() != ".wav":
                raise BackendUnavailable(f"reading {path} needs soundfile: pip install soundfile") from exc
            raise InputError(f"cannot read {path} ({wav_error}); other WAV encodings need soundfile") from exc
        try:
            samples, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
        except (RuntimeError, TypeError, ValueError) as exc:  # soundfile.LibsndfileError is a RuntimeError
            raise InputError(f"cannot read audio file {path}: {exc}") from exc
        samples = samples.mean(axis=1)
    if samples.size == 0:
        raise InputError(f"audio file {path} holds no samples")
    if rate != SAMPLE_RATE_HZ:
        try:
            from scipy.signal import resample_poly
        except ImportError as exc:
            raise BackendUnavailable(f"resampling {path} to 16 kHz needs scipy: pip install scipy") from exc
        samples = resample_poly(samples, SAMPLE_RATE_HZ, rate)
    return np.asarray(samples, dtype=np.float32)


def _load_frames(path: Path, max_frames: int = MAX_VIDEO_FRAMES) -> Any:
    """Up to ``max_frames`` uniformly sampled RGB frames of a video file (PyAV) or (n, h, w, 3) ``.npy``."""
    import numpy as np

    if not path.is_file():
        raise InputError(f"video file not found: {path}")
    if path.suffix.lower() == ".npy":
        try:
            frames = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read video frames {path}: {exc}") from exc
    else:
        try:
            import av
        except ImportError as exc:
            raise BackendUnavailable(f"decoding video {path} needs PyAV: pip install av") from exc
        try:
            with av.open(str(path)) as container:
                decoded = [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]
        except (OSError, ValueError, IndexError, av.FFmpegError) as exc:
            raise InputError(f"cannot decode video {path}: {exc}") from exc
        frames = np.stack(decoded) if decoded else np.zeros((0, 0, 0, 3), dtype=np.uint8)
    if frames.ndim != 4 or frames.shape[-1] != 3 or len(frames) == 0:
        raise InputError(f"video {path} must hold (n_frames, height, width, 3) frames, not {frames.shape}")
    keep = np.linspace(0, len(frames) - 1, num=min(len(frames), max_frames)).round().astype(int)
    return np.ascontiguousarray(frames[keep]).astype(np.uint8)


class TransformersChat:
    """A chat model run by transformers; Qwen2.5-Omni also hears and sees the turn's recording."""

    def __init__(
        self,
        model: str,
        *,
        device: str = "auto",
        dtype: str = "auto",
        omni: bool | None = None,
        trust_remote_code: bool = False,
        local_files_only: bool | None = None,
    ) -> None:
        try:
            import torch
            import transformers
            from transformers.utils import is_torchvision_available, is_vision_available
        except ImportError as exc:
            raise BackendUnavailable(f"this backend needs transformers and torch: {_INSTALL}") from exc
        self._torch = torch
        self.model_name = model
        is_local = _is_local_folder(model)
        source = str(Path(model).expanduser()) if is_local else model
        self.device, self.dtype = _placement(torch, device, dtype)
        hub: dict[str, Any] = {"trust_remote_code": trust_remote_code}
        if local_files_only is not None:
            hub["local_files_only"] = local_files_only
        weights: dict[str, Any] = {"dtype": self.dtype, **hub}
        if importlib.util.find_spec("accelerate") is not None:
            weights["device_map"] = self.device  # straight onto the device, not through host memory
        try:
            config = transformers.AutoConfig.from_pretrained(source, **hub)
            if is_local:  # before the slow part: a load that cannot fit stops here, with a message
                _check_memory(torch, Path(source), config, self.device, self.dtype, model)
            self.omni = config.model_type in OMNI_MODEL_TYPES if omni is None else omni
            if self.omni:
                try:
                    self._processor = transformers.Qwen2_5OmniProcessor.from_pretrained(source, **hub)
                except (ImportError, ValueError) as exc:
                    if not (is_vision_available() and is_torchvision_available()):
                        raise BackendUnavailable(
                            f"the Qwen2.5-Omni processor of {model} needs pillow and torchvision ({exc}); "
                            "install them with: pip install pillow torchvision"
                        ) from exc
                    raise
                self._tokenizer = self._processor.tokenizer
                template = self._processor.chat_template
                full = transformers.Qwen2_5OmniForConditionalGeneration.from_pretrained(
                    source, enable_audio_output=False, **weights
                )
                full.disable_talker()  # text output only; a no-op when the talker was never built
                self._lm = full.thinker
            else:
                self._processor = None
                self._tokenizer = transformers.AutoTokenizer.from_pretrained(source, **hub)
                template = self._tokenizer.chat_template
                if template:  # checked before the weights load, which is the slow part
                    self._lm = transformers.AutoModelForCausalLM.from_pretrained(source, **weights)
        except ImportError as exc:
            raise BackendUnavailable(f"cannot load {model}: {exc}; install what it names") from exc
        except _LOAD_ERRORS as exc:
            if is_local:
                raise ConfigError(f"cannot load a transformers chat model from {model}: {exc}") from exc
            raise BackendUnavailable(
                f"cannot load {model!r} from the Hugging Face hub or its local cache: {exc}; "
                "download it first or give a local folder"
            ) from exc
        if not template:
            raise ConfigError(
                f"the tokenizer of {model} has no chat template; use an instruction-tuned chat model "
                "(its tokenizer_config.json or chat_template.jinja defines one)"
            )
        self._lm.to(self.device).eval()
        # stop at the model's own end tokens and at the tokenizer's end of turn, whichever comes first
        eos = self._lm.generation_config.eos_token_id
        stops = {*([eos] if isinstance(eos, int) else eos or []), self._tokenizer.eos_token_id} - {None}
        pads = [self._lm.generation_config.pad_token_id, self._tokenizer.pad_token_id, *sorted(stops)]
        pad = next((p for p in pads if p is not None), None)
        self._stops = {"eos_token_id": sorted(stops) or None, "pad_token_id": pad}
        self._extra = {"use_audio_in_video": USE_AUDIO_IN_VIDEO} if self.omni else {}
        keeps_logits = "logits_to_keep" in inspect.signature(self._lm.forward).parameters
        self._prefill_extra = {"logits_to_keep": 1} if keeps_logits else {}
        self._lock = threading.Lock()  # one model serves one request at a time (Omni keeps rope state)
        self.last_choice_scores: dict[str, float] = {}  # choice -> log-likelihood, from the last call
        logger.info("loaded %s (omni: %s) on %s as %s", model, self.omni, self.device, self.dtype)

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        temperature: float = 0.2,
        seed: int | None = None,
        choices: Sequence[str] | None = None,
        media: TurnMedia | None = None,
    ) -> str:
        """Answer the messages; with ``choices`` the answer is the most likely one of them."""
        with self._lock, self._torch.inference_mode(), self._failures():
            inputs = self._inputs(messages, media)
            if choices:
                return self._best_choice(inputs, choices)
            output = self._lm.generate(**inputs, **self._generation(max_tokens, temperature, seed))
            new_tokens = output[0, inputs["input_ids"].shape[1]:]
            return self._tokenizer.decode(new_tokens, skip_special_tokens=True).strip()

    def chat_stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        temperature: float = 0.2,
        seed: int | None = None,
        media: TurnMedia | None = None,
    ) -> Iterator[str]:
        """Yield the free answer piece by piece, as ``chat`` would return it (joined and stripped).

        ``generate`` runs in a thread and hands decoded text to a ``TextIteratorStreamer`` (which
        releases text a word at a time); Qwen2.5-Omni streams the same way, from its thinker. When
        the consumer closes the stream early, a stopping criterion ends generation at the next
        token and the thread is joined before the model is released. An error in the thread is
        raised here, mapped as ``chat`` maps it.
        """
        from transformers import StoppingCriteriaList, TextIteratorStreamer

        with self._lock:
            with self._torch.inference_mode(), self._failures():
                inputs = self._inputs(messages, media)
            streamer = TextIteratorStreamer(self._tokenizer, skip_prompt=True, skip_special_tokens=True)
            abandoned = threading.Event()
            kwargs = {**self._generation(max_tokens, temperature, seed), "streamer": streamer,
                      "stopping_criteria": StoppingCriteriaList([_UntilSet(abandoned, self._torch)])}
            failures: list[Exception] = []

            def generate() -> None:
                try:
                    with self._torch.inference_mode():
                        self._lm.generate(**inputs, **kwargs)
                except Exception as exc:  # re-raised in the consumer's thread below
                    failures.append(exc)
                    streamer.end()  # wakes the consumer, which would otherwise wait forever

            thread = threading.Thread(target=generate, name="e3rg-hf-generate", daemon=True)
            thread.start()
            try:
                for piece in streamer:
                    if piece:
                        yield piece
            finally:
                abandoned.set()
                thread.join()
            if failures:
                with self._failures():
                    raise failures[0]

    @contextlib.contextmanager
    def _failures(self) -> Iterator[None]:
        """Map what a chat template or a forward pass raises to this package's errors."""
        from jinja2 import TemplateError

        try:
            yield
        except TemplateError as exc:
            raise ConfigError(f"the chat template of {self.model_name} rejects them: {exc}") from exc
        except (RuntimeError, ValueError, IndexError) as exc:  # torch.OutOfMemoryError is a RuntimeError
            raise BackendFailed(f"{self.model_name} failed while answering: {exc}") from exc

    def _inputs(self, messages: Sequence[ChatMessage], media: TurnMedia | None) -> dict[str, Any]:
        if not messages:
            raise InputError("chat needs at least one message")
        if self.omni:
            return self._omni_inputs(messages, media)
        if media is not None and (media.audio_path or media.video_path):
            logger.debug("%s reads text only; the turn's media is not used", self.model_name)
        return self._text_inputs(messages)

    def _text_inputs(self, messages: Sequence[ChatMessage]) -> dict[str, Any]:
        payload = [{"role": m.role, "content": m.content} for m in messages]
        prompt = self._tokenizer.apply_chat_template(payload, add_generation_prompt=True, tokenize=False)
        encoded = self._tokenizer(prompt, add_special_tokens=False, return_tensors="pt")
        return {key: encoded[key].to(self.device) for key in ("input_ids", "attention_mask")}

    def _omni_inputs(self, messages: Sequence[ChatMessage], media: TurnMedia | None) -> dict[str, Any]:
        audio = video = None
        if media is not None and media.audio_path is not None:
            audio = _load_audio(Path(media.audio_path))
        if media is not None and media.video_path is not None:
            video = _load_frames(Path(media.video_path))
        conversation = [{"role": m.role, "content": [{"type": "text", "text": m.content}]} for m in messages]
        parts = [{"type": kind} for kind, data in (("video", video), ("audio", audio)) if data is not None]
        users = [i for i, m in enumerate(messages) if m.role == "user"] or [len(messages) - 1]
        conversation[users[-1]]["content"][:0] = parts  # the recording belongs to the user's last turn
        prompt = self._processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
        inputs = self._processor(
            text=prompt,
            audio=None if audio is None else [audio],
            videos=None if video is None else [video],
            return_tensors="pt",
            padding=True,
            use_audio_in_video=USE_AUDIO_IN_VIDEO,
        )
        return dict(inputs.to(self.device).to(self.dtype))  # .to(dtype) casts floating tensors only

    def _generation(self, max_tokens: int, temperature: float, seed: int | None) -> dict[str, Any]:
        """Arguments of ``generate`` for a free answer; seeds torch's global generator when asked."""
        if seed is not None:
            self._torch.manual_seed(seed)
        kwargs: dict[str, Any] = {"max_new_tokens": max_tokens, "do_sample": temperature > 0}
        if temperature > 0:
            kwargs["temperature"] = temperature
        return {**kwargs, **self._stops, **self._extra}

    def _choice_ids(self, choice: str) -> list[int]:
        ids = list(self._tokenizer(choice, add_special_tokens=False)["input_ids"])
        if not ids:
            raise InputError(f"choice {choice!r} is empty for this tokenizer")
        end = self._tokenizer.eos_token_id  # the answer must stop right after the choice
        return ids + [end] if end is not None else ids

    def _best_choice(self, inputs: dict[str, Any], choices: Sequence[str]) -> str:
        torch = self._torch
        prefill = self._lm(**inputs, use_cache=True, **self._extra, **self._prefill_extra)
        first = torch.log_softmax(prefill.logits[0, -1].float(), dim=-1)
        scores: dict[str, float] = {}
        for choice in dict.fromkeys(choices):
            ids = self._choice_ids(choice)
            score = first[ids[0]]
            if len(ids) > 1:
                step = self._lm(
                    input_ids=torch.tensor([ids[:-1]], device=self.device),
                    past_key_values=copy.deepcopy(prefill.past_key_values),
                    use_cache=True,
                )
                logp = torch.log_softmax(step.logits[0].float(), dim=-1)
                targets = torch.tensor(ids[1:], device=logp.device)
                score = score + logp[torch.arange(len(targets), device=logp.device), targets].sum()
            scores[choice] = float(score)
        self.last_choice_scores = scores
        return max(scores, key=scores.__getitem__)


class _UntilSet:
    """A stopping criterion that ends generation once ``event`` is set (an abandoned stream)."""

    def __init__(self, event: threading.Event, torch: Any) -> None:
        self.event = event
        self._torch = torch

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        stop = self.event.is_set()
        return self._torch.full((input_ids.shape[0],), stop, dtype=self._torch.bool, device=input_ids.device)
