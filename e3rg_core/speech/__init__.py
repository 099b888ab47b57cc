"""Stage 3a: the reply spoken in the avatar's voice, with the emotion audible.

Backends (``registry.SPEECH``): ``embedded`` (hibari and Piper voices on CPU, the default) and
``openvoice`` (MeloTTS + OpenVoice tone colour conversion, GPU box). Each avatar names its backend
and voice in ``profile.toml`` ``[voice]``; ``create_speaker(config, backend)`` builds one. Importing
this package loads no model.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from e3rg_core.config import Config
    from e3rg_core.memory.profiles import Profile, VoiceSettings
    from e3rg_core.speech.base import Speaker


def bank_file(config: "Config", backend: str) -> Path:
    """The emotion bank of ``backend``: ``speech_<backend>.toml`` in the configured or shipped folder."""
    from e3rg_core.speech.banks import BANKS_DIR

    folder = Path(config.speech.bank_dir).expanduser() if config.speech.bank_dir else BANKS_DIR
    return folder / f"speech_{backend}.toml"


def speaker_options(config: "Config", backend: str) -> dict[str, Any]:
    """The constructor options of a speech backend, from the config."""
    options: dict[str, Any] = {"bank_path": bank_file(config, backend), "seed": config.speech.seed}
    own = config.backend_options("speech", backend)  # the backend's [speech.<backend>] table, if it has one
    if own is not None:
        options.update(own.backend_kwargs(config))
    return options


def create_speaker(config: "Config", backend: str = "embedded") -> "Speaker":
    """Build a speech backend and load its models here, so that missing weights, packages or a GPU
    stop the app at start-up (its warm-up builds the speaker) rather than in the middle of a turn."""
    from e3rg_core import registry

    speaker = registry.create("speech", backend, speaker_options(config, backend))
    load = getattr(speaker, "load", None)  # a backend that would otherwise load its models on first use
    if callable(load):
        load()
    return speaker


def voice_for(profile: "Profile") -> "VoiceSettings":
    """The avatar's voice settings, with its reference clip (for voice-cloning backends) in ``options``."""
    import dataclasses

    voice = profile.voice
    if profile.reference_speech is not None and "reference_speech" not in voice.options:
        voice = dataclasses.replace(voice, options={**voice.options, "reference_speech": str(profile.reference_speech)})
    return voice
