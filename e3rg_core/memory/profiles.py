"""Avatar identities: one folder per avatar under ``avatars/``, each with a ``profile.toml``.

::

    avatars/
      library.toml            default = "amara"; retired = [ids of removed avatars]
      amara/
        profile.toml          display name, age, gender, timbre, language, portrait, [voice]
        portrait.png
        LICENSE.md            where the portrait and voice come from, and their licences

``profile.toml`` (``portrait`` is required; ``reference_speech`` / ``reference_video`` are optional
files in the same folder, used by voice-cloning and video backends)::

    display_name = "Amara"
    age = "young"              # child | young | middle-aged | elderly   (AvaMERG's identity profile)
    gender = "female"          # male | female
    timbre = "high"            # high | mid | low
    language = "en"
    portrait = "portrait.png"
    credits = "LICENSE.md"

    [voice]
    backend = "embedded"       # a speech backend name (registry.SPEECH)
    voice = "heart"            # one of that backend's voices
    pitch_shift_semitones = 0.0
    rate = 1.0                 # speaking-rate multiplier
    energy_db = 0.0

Users' own avatars (``memory.custom.create_avatar``) live in the same layout under a second folder,
the ``user_root`` of ``AvatarLibrary`` (the app uses ``<data_dir>/avatars``); shipped ids win.

Retrieval follows E3RG's intent (the listener's own face and voice by ID) with AvaMERG's fallback:
the avatar with the same age, gender and timbre, then the library's default.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import tomllib
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from e3rg_core.errors import ConfigError, InputError

logger = logging.getLogger(__name__)

AVATARS_DIR = Path(__file__).resolve().parents[2] / "avatars"
AGES: tuple[str, ...] = ("child", "young", "middle-aged", "elderly")
GENDERS: tuple[str, ...] = ("male", "female")
TIMBRES: tuple[str, ...] = ("high", "mid", "low")
LANGUAGES: tuple[str, ...] = ("en",)
PORTRAIT_SUFFIXES: tuple[str, ...] = (".png", ".jpg", ".jpeg", ".webp")
AVATAR_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

# Natural ranges for per-avatar voice settings: wider shifts sound processed rather than different.
PITCH_SHIFT_RANGE = (-6.0, 6.0)
RATE_RANGE = (0.7, 1.4)
ENERGY_RANGE_DB = (-6.0, 6.0)

_TOP_KEYS = {"display_name", "age", "gender", "timbre", "language", "portrait", "reference_speech",
             "reference_video", "credits", "default", "voice"}
_VOICE_KEYS = {"backend", "voice", "pitch_shift_semitones", "rate", "energy_db", "options"}


@dataclass(frozen=True)
class VoiceSettings:
    """How an avatar sounds: a backend voice plus small, natural offsets applied on top of emotion."""

    backend: str = "embedded"
    voice: str = "heart"
    pitch_shift_semitones: float = 0.0
    rate: float = 1.0  # speaking-rate multiplier, > 1 is faster
    energy_db: float = 0.0
    options: Mapping[str, Any] = field(default_factory=dict)  # backend-specific, e.g. an OpenVoice style


@dataclass(frozen=True)
class Profile:
    """One avatar identity. Paths are absolute."""

    id: str
    display_name: str
    age: str
    gender: str
    timbre: str
    language: str
    portrait: Path
    voice: VoiceSettings
    folder: Path
    reference_speech: Path | None = None
    reference_video: Path | None = None
    credits: str = ""
    default: bool = False


def check_avatar_id(avatar_id: str) -> str:
    """Return ``avatar_id`` if it is a safe folder name, else raise ``InputError``."""
    if not isinstance(avatar_id, str) or not AVATAR_ID.match(avatar_id):
        raise InputError(
            f"invalid avatar id {avatar_id!r}; ids are 1-64 characters of a-z, 0-9, '_' and '-', "
            "starting with a letter or digit"
        )
    return avatar_id


def _choice(data: Mapping[str, Any], key: str, allowed: tuple[str, ...], where: Path) -> str:
    value = data.get(key)
    if value is None:
        raise ConfigError(f"{where}: field '{key}' is missing; one of {', '.join(allowed)}")
    if value not in allowed:
        raise ConfigError(f"{where}: field '{key}' = {value!r} is not allowed; one of {', '.join(allowed)}")
    return value


def _number(data: Mapping[str, Any], key: str, default: float, bounds: tuple[float, float], where: str) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{where}: field '{key}' must be a number, not {value!r}")
    if not bounds[0] <= value <= bounds[1]:
        raise ConfigError(f"{where}: field '{key}' = {value} is outside {bounds[0]:g}..{bounds[1]:g}")
    return float(value)


def _file(folder: Path, data: Mapping[str, Any], key: str, where: Path, *, required: bool) -> Path | None:
    name = data.get(key)
    if name is None:
        if required:
            raise ConfigError(f"{where}: field '{key}' is missing; name a file in {folder}")
        return None
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: field '{key}' must be a file name, not {name!r}")
    path = (folder / name).resolve()
    if folder.resolve() not in path.parents:
        raise ConfigError(f"{where}: field '{key}' = {name!r} points outside the avatar folder")
    if not path.is_file():
        raise ConfigError(f"{where}: field '{key}': file {path} does not exist")
    return path


def voice_from_table(table: Any, where: str) -> VoiceSettings:
    """Validate a ``[voice]`` table."""
    if table is None:
        table = {}
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where}: field 'voice' must be a table")
    unknown = set(table) - _VOICE_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) voice.{', voice.'.join(sorted(unknown))}; "
                          f"allowed: {', '.join(sorted(_VOICE_KEYS))}")
    for key in ("backend", "voice"):
        if key in table and (not isinstance(table[key], str) or not table[key]):
            raise ConfigError(f"{where}: field 'voice.{key}' must be a non-empty string")
    options = table.get("options", {})
    if not isinstance(options, Mapping):
        raise ConfigError(f"{where}: field 'voice.options' must be a table")
    return VoiceSettings(
        backend=table.get("backend", "embedded"),
        voice=table.get("voice", "heart"),
        pitch_shift_semitones=_number(table, "pitch_shift_semitones", 0.0, PITCH_SHIFT_RANGE, f"{where} [voice]"),
        rate=_number(table, "rate", 1.0, RATE_RANGE, f"{where} [voice]"),
        energy_db=_number(table, "energy_db", 0.0, ENERGY_RANGE_DB, f"{where} [voice]"),
        options=dict(options),
    )


def load_profile(path: Path) -> Profile:
    """Read and validate ``avatars/<id>/profile.toml``; errors name the file and the field."""
    path = Path(path)
    folder = path.parent
    avatar_id = check_avatar_id(folder.name)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"avatar profile {path} does not exist") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read avatar profile {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown field(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(_TOP_KEYS))}")
    name = data.get("display_name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{path}: field 'display_name' is missing or empty")
    portrait = _file(folder, data, "portrait", path, required=True)
    if portrait.suffix.lower() not in PORTRAIT_SUFFIXES:
        raise ConfigError(f"{path}: field 'portrait' = {portrait.name!r} is not an image; use {', '.join(PORTRAIT_SUFFIXES)}")
    credits = data.get("credits", "")
    if not isinstance(credits, str):
        raise ConfigError(f"{path}: field 'credits' must be a string")
    default = data.get("default", False)
    if not isinstance(default, bool):
        raise ConfigError(f"{path}: field 'default' must be true or false")
    return Profile(
        id=avatar_id,
        display_name=name.strip(),
        age=_choice(data, "age", AGES, path),
        gender=_choice(data, "gender", GENDERS, path),
        timbre=_choice(data, "timbre", TIMBRES, path),
        language=_choice({"language": data.get("language", "en")}, "language", LANGUAGES, path),
        portrait=portrait,
        voice=voice_from_table(data.get("voice"), str(path)),
        folder=folder.resolve(),
        reference_speech=_file(folder, data, "reference_speech", path, required=False),
        reference_video=_file(folder, data, "reference_video", path, required=False),
        credits=credits,
        default=default,
    )


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(float(value)) if isinstance(value, float) else str(value)
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a valid TOML basic string


def save_profile(profile: Profile, root: Path) -> Path:
    """Write ``profile`` as ``root/<id>/profile.toml`` (its portrait and clips must already be there)."""
    folder = Path(root) / check_avatar_id(profile.id)
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"display_name = {_toml_value(profile.display_name)}"]
    for key in ("age", "gender", "timbre", "language"):
        lines.append(f"{key} = {_toml_value(getattr(profile, key))}")
    lines.append(f"portrait = {_toml_value(profile.portrait.name)}")
    for key in ("reference_speech", "reference_video"):
        if getattr(profile, key) is not None:
            lines.append(f"{key} = {_toml_value(getattr(profile, key).name)}")
    if profile.credits:
        lines.append(f"credits = {_toml_value(profile.credits)}")
    if profile.default:
        lines.append("default = true")
    v = profile.voice
    lines += ["", "[voice]", f"backend = {_toml_value(v.backend)}", f"voice = {_toml_value(v.voice)}",
              f"pitch_shift_semitones = {_toml_value(float(v.pitch_shift_semitones))}",
              f"rate = {_toml_value(float(v.rate))}", f"energy_db = {_toml_value(float(v.energy_db))}"]
    if v.options:
        lines += ["", "[voice.options]"] + [f"{k} = {_toml_value(val)}" for k, val in v.options.items()]
    path = folder / "profile.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    load_profile(path)  # what we wrote must read back
    return path


class AvatarLibrary:
    """The shipped avatars under ``root``, plus the users' own under ``user_root`` when given.

    Ids are the union of both folders. A shipped id always wins: a folder under ``user_root`` named
    like a shipped avatar is ignored (and ``memory.custom.create_avatar`` never makes one). The default
    avatar comes from the shipped ``library.toml``. Profiles are read on first use and re-read when
    their ``profile.toml`` changes or disappears, so avatars created or deleted by another library
    instance (another worker of the app) are seen too.
    """

    def __init__(self, root: Path = AVATARS_DIR, *, user_root: Path | None = None):
        self.root = Path(root)
        self.user_root = Path(user_root) if user_root is not None else None
        self._cache: dict[str, tuple[Path, int, Profile]] = {}  # id -> (profile.toml, its mtime_ns, profile)

    @staticmethod
    def _ids_in(root: Path | None) -> frozenset[str]:
        if root is None or not root.is_dir():
            return frozenset()
        return frozenset(p.name for p in root.iterdir()
                         if AVATAR_ID.match(p.name) and (p / "profile.toml").is_file())

    def shipped_ids(self) -> tuple[str, ...]:
        """The ids of the avatars that ship with e3rg (under ``root``), sorted."""
        return tuple(sorted(self._ids_in(self.root)))

    def custom_ids(self) -> tuple[str, ...]:
        """The ids of the users' avatars (under ``user_root``) that no shipped avatar shadows, sorted."""
        return tuple(sorted(self._ids_in(self.user_root) - self._ids_in(self.root)))

    def ids(self) -> tuple[str, ...]:
        """The ids of the avatars in the library, sorted."""
        return tuple(sorted(self._ids_in(self.root) | self._ids_in(self.user_root)))

    def is_custom(self, avatar_id: str) -> bool:
        """Whether ``avatar_id`` is a user's avatar (under ``user_root``) rather than a shipped one."""
        check_avatar_id(avatar_id)
        return avatar_id in self.custom_ids()

    def _path(self, avatar_id: str) -> Path | None:
        for root in (self.root, self.user_root):
            if root is not None and (root / avatar_id / "profile.toml").is_file():
                return root / avatar_id / "profile.toml"
        return None

    def get(self, avatar_id: str) -> Profile:
        """The avatar called ``avatar_id``; an unknown id is an ``InputError`` listing the known ones."""
        check_avatar_id(avatar_id)
        path = self._path(avatar_id)
        if path is None:
            self._cache.pop(avatar_id, None)
            raise InputError(f"unknown avatar {avatar_id!r}; choose from {', '.join(self.ids()) or '(none installed)'}")
        try:
            mtime_ns = path.stat().st_mtime_ns
        except FileNotFoundError:  # deleted between the check and now
            self._cache.pop(avatar_id, None)
            raise InputError(f"avatar {avatar_id!r} was just deleted; choose from {', '.join(self.ids())}") from None
        cached = self._cache.get(avatar_id)
        if cached is None or cached[0] != path or cached[1] != mtime_ns:
            self._cache[avatar_id] = (path, mtime_ns, load_profile(path))
        return self._cache[avatar_id][2]

    def profiles(self) -> tuple[Profile, ...]:
        """Every avatar, sorted by id. A user's avatar whose files are broken is skipped with a warning
        (one bad upload must not take the library down); a broken shipped avatar is a ``ConfigError``."""
        shipped = self._ids_in(self.root)
        out = []
        for avatar_id in self.ids():
            try:
                out.append(self.get(avatar_id))
            except (ConfigError, InputError) as exc:
                if avatar_id in shipped:
                    raise
                logger.warning("skipping the broken custom avatar %r: %s", avatar_id, exc)
        return tuple(out)

    def find(self, *, age: str | None = None, gender: str | None = None, timbre: str | None = None) -> tuple[Profile, ...]:
        """Avatars matching every attribute given (``None`` matches anything), sorted by id."""
        wanted = _check_attributes(age=age, gender=gender, timbre=timbre)
        return tuple(p for p in self.profiles() if all(getattr(p, k) == v for k, v in wanted.items()))

    def default(self) -> Profile:
        """The default avatar: ``default = "<id>"`` in the shipped ``library.toml``, else the shipped
        profile flagged default, else the first shipped avatar (a user's avatar only when none ships)."""
        index = self.root / "library.toml"
        if index.is_file():
            try:
                data = tomllib.loads(index.read_text(encoding="utf-8"))
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"{index} is not valid TOML: {exc}") from exc
            if "default" in data:
                try:
                    return self.get(data["default"])
                except InputError as exc:
                    raise ConfigError(f"{index}: field 'default': {exc}") from exc
        shipped = self.shipped_ids()
        flagged = [p for p in (self.get(i) for i in shipped) if p.default]
        if flagged:
            return flagged[0]
        ids = shipped or tuple(p.id for p in self.profiles())
        if not ids:
            raise ConfigError(f"no avatars in {self.root}: add a folder with a profile.toml")
        return self.get(ids[0])

    def retired_ids(self) -> tuple[str, ...]:
        """Shipped avatars that were removed (``retired = [...]`` in ``library.toml``): stored conversations
        and clients may still name them."""
        index = self.root / "library.toml"
        if not index.is_file():
            return ()
        try:
            retired = tomllib.loads(index.read_text(encoding="utf-8")).get("retired", [])
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{index} is not valid TOML: {exc}") from exc
        if not isinstance(retired, list) or not all(isinstance(r, str) and AVATAR_ID.match(r) for r in retired):
            raise ConfigError(f"{index}: field 'retired' must be a list of avatar ids")
        return tuple(r for r in retired if r not in self._ids_in(self.root))

    def stand_in(self, avatar_id: str) -> tuple[Profile, str]:
        """The avatar a stored conversation names, or the default when that one is gone.

        Returns the profile and a note: "" when ``avatar_id`` is in the library, else a sentence saying
        which avatar is gone and who stands in (a retired shipped avatar, a deleted custom one).
        Never an error for a well-formed id: a conversation outlives the avatars it was had with.
        """
        check_avatar_id(avatar_id)
        if avatar_id in self.ids():
            return self.get(avatar_id), ""
        default = self.default()
        why = "was retired" if avatar_id in self.retired_ids() else "no longer exists"
        return default, (f"The avatar {avatar_id!r} of this conversation {why}; "
                         f"{default.display_name} ({default.id}) answers instead.")

    def resolve(self, avatar_id: str | None = None, *, age: str | None = None, gender: str | None = None,
                timbre: str | None = None) -> Profile:
        """By id, else the best age/gender/timbre match, else the default avatar.

        An id that is known wins. An id that is well-formed but unknown (e.g. an AvaMERG listener id
        with no avatar here) falls through to the attributes. The attribute match wants all given
        attributes; failing that, the same gender with as many of age and timbre as possible. Among
        equally good matches a shipped avatar comes first: a user's uploaded face is used for another
        turn only when it fits better.
        """
        if avatar_id is not None:
            check_avatar_id(avatar_id)
            if avatar_id in self.ids():
                return self.get(avatar_id)
            logger.info("no avatar %r; matching by attributes", avatar_id)
        wanted = _check_attributes(age=age, gender=gender, timbre=timbre)
        if wanted:
            shipped = self._ids_in(self.root)
            exact = sorted(self.find(**wanted), key=lambda p: p.id not in shipped)  # stable: by id within each group
            if exact:
                return exact[0]
            candidates = [p for p in self.profiles() if gender is None or p.gender == gender]
            if candidates:
                def score(p: Profile) -> int:
                    return 2 * (p.age == age) + (p.timbre == timbre)
                return max(candidates, key=lambda p: (score(p), p.default, p.id in shipped))
        return self.default()

    def delete_custom(self, avatar_id: str) -> None:
        """Remove a user's avatar folder; a shipped or unknown id is an ``InputError``."""
        check_avatar_id(avatar_id)
        if avatar_id in self._ids_in(self.root):
            raise InputError(f"avatar {avatar_id!r} ships with e3rg and cannot be deleted; "
                             "only avatars made by users can")
        if self.user_root is None or avatar_id not in self._ids_in(self.user_root):
            custom = ", ".join(self.custom_ids()) or "(none)"
            raise InputError(f"no custom avatar {avatar_id!r}; the custom avatars are: {custom}")
        folder = self.user_root / avatar_id
        # moved aside first so the library never lists a half-deleted avatar
        trash = self.user_root / f".trash-{uuid.uuid4().hex}"
        os.rename(folder, trash)
        self._cache.pop(avatar_id, None)
        if trash.is_symlink():
            trash.unlink()
        else:
            shutil.rmtree(trash, ignore_errors=True)
        logger.info("deleted the custom avatar %r", avatar_id)


def _check_attributes(**attributes: str | None) -> dict[str, str]:
    allowed = {"age": AGES, "gender": GENDERS, "timbre": TIMBRES}
    out = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if value not in allowed[key]:
            raise InputError(f"unknown {key} {value!r}; choose from {', '.join(allowed[key])}")
        out[key] = value
    return out
