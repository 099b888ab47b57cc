"""Custom avatars: a user's portrait and voice sample become a new avatar under the library's ``user_root``.

``create_avatar`` checks everything before anything is written to the library:

* the name: 1-40 printable characters; the id is a slug of it plus 6 hex digits (``"ada-3f9c1e"``);
* the portrait: an image of at most 20 MB and 4096 px a side with exactly one usable face (the
  face-mesh checks of ``video.landmarks``); it is stored as ``portrait.png``, upright (EXIF
  orientation applied), RGB, at most 1024 px a side, without the upload's metadata (GPS and such);
* the voice sample (optional; any audio or video file): at least 5 s of speech and at most 60 s in
  all. It is kept as ``reference.wav`` for the voice-cloning backend (openvoice), and the embedded
  voice that resembles it is chosen now: ``heart`` or ``joe`` by gender, shifted towards the sample's
  median pitch. Without a sample the gender must be given.

The avatar folder is built in ``<user_root>/.tmp-<uuid>/`` and renamed into place, so the library
never lists a half-written avatar (nor one without its ``owner.json``, ``memory.ownership``); a
failure leaves nothing behind.
"""

from __future__ import annotations

import datetime
import logging
import math
import os
import shutil
import tempfile
import time
import unicodedata
import uuid
from dataclasses import dataclass
from pathlib import Path

from e3rg_core.errors import ConfigError, InputError
from e3rg_core.memory.ownership import AvatarOwner, write_owner
from e3rg_core.memory.profiles import (AGES, GENDERS, PITCH_SHIFT_RANGE, TIMBRES, AvatarLibrary, Profile,
                                       VoiceSettings, check_avatar_id, save_profile)

logger = logging.getLogger(__name__)

MAX_CUSTOM_AVATARS = 200
MAX_NAME_CHARS = 40
SLUG_CHARS = 32  # of the id; the rest is "-" and 6 hex digits

MAX_PORTRAIT_BYTES = 20 * 1024 * 1024
MAX_PORTRAIT_SIDE_PX = 4096  # checked before decoding, so a decompression bomb is refused cheaply
STORED_PORTRAIT_SIDE_PX = 1024  # the stored portrait's longer side; renderers crop far smaller
# Pillow's decoders for photo formats only: EPS/PS would run Ghostscript on the upload.
PORTRAIT_FORMATS = ("PNG", "JPEG", "MPO", "WEBP", "BMP", "TIFF", "GIF")
# A second face at least this share of the largest one's area makes it unclear whose avatar this is;
# smaller ones (a poster, a crowd far behind) are ignored, and the renderers animate the largest.
SECOND_FACE_AREA_SHARE = 0.25
# A frontal face: larger angles (the face mesh's own estimate, ``head_pose_deg``) show too little of one
# side of the face for the animator to move it. Measured: the shipped portraits |yaw| <= 2.1, |pitch| <= 1.9.
MAX_YAW_DEG = 25.0
MAX_PITCH_DEG = 25.0
MAX_ROLL_DEG = 20.0
_FRONTAL_PITCH_DEG = -9.0  # what the forehead-chin angle reads on a frontal face (-7..-11 on the shipped portraits)
# A class other than neutral read at least this sure on the still warns the uploader: every emotion starts
# from that face (a smiling photo keeps reading happy, bench/face_expression.py).
STRONG_EXPRESSION_P = 0.5

MIN_VOICED_S = 5.0  # = speech.openvoice.MIN_REFERENCE_VOICED_S, measured the same way (timeline.voiced_spans)
MAX_SAMPLE_S = 60.0  # = perception.asr.MAX_CLIP_S
REFERENCE_RATE_HZ = 24000  # reference.wav: full band for the OpenVoice converter (22.05 kHz), not 16 kHz
ANALYSIS_RATE_HZ = 16000
F0_MIN_HZ, F0_MAX_HZ = 60.0, 400.0  # pyin's search range: deep male to high female speaking voices
MAX_PITCH_ANALYSIS_S = 20.0  # of voiced audio; pyin costs ~0.07 s per second of it
# Fewer pitched frames than this, or a smaller share of the voiced audio, is noise or whispering, not
# a voice. Measured per sentence: the embedded voices' speech is 30-83 % pitched frames (the deep
# joe voice lowest), 8 s of white or pink noise 0-7 % (rumble, narrow-band noise, does pass).
MIN_PITCHED_S = 0.5
MIN_PITCHED_SHARE = 0.15
PYIN_FRAME = 1536  # 96 ms at 16 kHz: 5.8 periods of F0_MIN_HZ; found more of joe's low frames than 1024
PYIN_HOP = 256

# Gender guess and voice choice: the speaking F0 of adult women is mostly 165-255 Hz, of men
# 85-155 Hz; 160 Hz splits them. Only a guess (a low female or a high male voice lands on the other
# side): the user can override it by giving ``gender``.
FEMALE_F0_HZ = 160.0
VOICE_FOR_GENDER = {"female": "heart", "male": "joe"}
# The embedded voices' median speaking F0, MEASURED with ``measure_voice`` (the path uploads take:
# ffmpeg to 24 kHz mono WAV, voiced spans, resampled to 16 kHz, librosa.pyin 60-400 Hz, median of the
# voiced frames) on EmbeddedSpeaker's neutral speech (intensity 0.5, seed 0, no avatar offsets) of
# four sentences of 4-6 s each: "The weather has been lovely this week...", "I really did not
# expect to hear from you today...", "Please remember to bring the blue folder...", "We could cook
# dinner together on Sunday...". Per sentence: heart 194.9-201.8 Hz, joe 81.5-92.0 Hz; the constants
# are the medians of the four. Re-measure when a voice, its bank or the analysis settings change.
VOICE_F0_HZ = {"heart": 199.2, "joe": 87.5}
# Timbre bands by gender, Hz: below the first -> "low", from the second up -> "high", else "mid".
# About +-1 standard deviation around the typical speaking F0 (men ~120 Hz, women ~205 Hz).
TIMBRE_BANDS_HZ = {"male": (100.0, 140.0), "female": (180.0, 230.0)}

STALE_STAGING_S = 3600.0  # leftovers of a crashed creation older than this are swept
CREDITS = ("uploaded by a user of this e3rg instance; the uploader is responsible for the rights to "
           "this face and voice")


@dataclass(frozen=True)
class VoiceSample:
    """What ``measure_voice`` found in a recording."""

    duration_s: float
    voiced_s: float  # the parts with sound, short pauses included (as openvoice measures it)
    pitched_s: float  # frames pyin found a pitch in (within the first MAX_PITCH_ANALYSIS_S voiced)
    f0_hz: float | None  # median F0 of the pitched frames; None when there are too few


# -- names --------------------------------------------------------------------------------------


def check_display_name(name: str) -> str:
    """The stripped name if it is 1-40 printable characters, else ``InputError``."""
    if not isinstance(name, str):
        raise InputError(f"the avatar's name must be text, not {type(name).__name__}")
    name = unicodedata.normalize("NFC", name).strip()
    if not name:
        raise InputError(f"give the avatar a name (1-{MAX_NAME_CHARS} characters)")
    if len(name) > MAX_NAME_CHARS:
        raise InputError(f"the avatar's name has {len(name)} characters; at most {MAX_NAME_CHARS} are allowed")
    if not name.isprintable():
        raise InputError("the avatar's name contains control or invisible characters; use letters, digits, "
                         "spaces and punctuation")
    return name


def slugify(name: str) -> str:
    """Lowercase a-z, 0-9 and single dashes from ``name`` (accents dropped); ``"avatar"`` when none is left."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    slug = "".join(c if c.isascii() and c.isalnum() else "-" for c in ascii_name)
    slug = "-".join(part for part in slug.split("-") if part)[:SLUG_CHARS].strip("-")
    return slug or "avatar"


def new_avatar_id(name: str) -> str:
    """A fresh id for an avatar called ``name``: its slug, a dash and 6 hex digits of a uuid."""
    return check_avatar_id(f"{slugify(name)}-{uuid.uuid4().hex[:6]}")


# -- portrait -----------------------------------------------------------------------------------


def save_portrait(source: Path, dest: Path) -> None:
    """Decode an uploaded image and write it upright, RGB, at most 1024 px a side, as PNG."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    source = Path(source)
    if not source.is_file():
        raise InputError(f"portrait {source.name!r} does not exist")
    size_bytes = source.stat().st_size
    if size_bytes > MAX_PORTRAIT_BYTES:
        raise InputError(f"portrait {source.name!r} is {size_bytes / 2**20:.1f} MB; "
                         f"at most {MAX_PORTRAIT_BYTES // 2**20} MB is accepted")
    accepted = "use a PNG, JPEG or WebP photo"
    Image.init()  # registers every plugin, so the formats below can be named
    formats = [f for f in PORTRAIT_FORMATS if f in Image.OPEN]
    try:
        with Image.open(source, formats=formats) as image:
            width, height = image.size
            if max(width, height) > MAX_PORTRAIT_SIDE_PX:
                raise InputError(f"portrait {source.name!r} is {width}x{height} px; "
                                 f"at most {MAX_PORTRAIT_SIDE_PX} px a side is accepted")
            upright = ImageOps.exif_transpose(image)
            if upright.mode in ("RGBA", "LA", "PA") or (upright.mode == "P" and "transparency" in upright.info):
                rgba = upright.convert("RGBA")  # transparent parts become white, as video.landmarks does
                rgb = Image.new("RGB", rgba.size, (255, 255, 255))
                rgb.paste(rgba, mask=rgba.getchannel("A"))
            else:
                rgb = upright.convert("RGB")
    except UnidentifiedImageError as exc:
        raise InputError(f"portrait {source.name!r} is not an image; {accepted}") from exc
    except Image.DecompressionBombError as exc:
        raise InputError(f"portrait {source.name!r} is too large to decode; at most "
                         f"{MAX_PORTRAIT_SIDE_PX} px a side is accepted") from exc
    except (OSError, SyntaxError, ValueError) as exc:  # truncated or corrupt files
        raise InputError(f"portrait {source.name!r} is damaged and cannot be decoded ({exc}); {accepted}") from exc
    rgb.thumbnail((STORED_PORTRAIT_SIDE_PX, STORED_PORTRAIT_SIDE_PX), Image.Resampling.LANCZOS)
    dest.parent.mkdir(parents=True, exist_ok=True)
    rgb.save(dest, format="PNG")


@dataclass(frozen=True)
class PortraitCheck:
    """What ``check_face`` measured on an accepted portrait."""

    face_px: float  # face width, cheek to cheek, in the stored portrait
    yaw_deg: float  # head turned sideways; the sign says which way
    pitch_deg: float  # head tipped up or down, less what a frontal face reads
    roll_deg: float  # head tilted: + clockwise as seen
    expression: str  # what the expression model reads on the still (``perception.face``)
    expression_p: float

    @property
    def warning(self) -> str:
        """A sentence for the uploader when the face shows a strong expression, else ""."""
        if self.expression == "neutral" or self.expression_p < STRONG_EXPRESSION_P:
            return ""
        return (f"the face in this photo looks {self.expression} ({self.expression_p:.0%} by the expression "
                "model). Every emotion the avatar shows starts from this face, so others will read it too: "
                "a photo with a relaxed face, mouth closed, reads best")


def head_pose_deg(points) -> tuple[float, float, float]:
    """Yaw, pitch and roll (degrees) of a face from its 468-point mesh (x, y, z in image pixels).

    The mesh's z is depth at the scale of x: the cheeks' depth difference over their distance gives
    the yaw, the forehead's and chin's the pitch (less ``_FRONTAL_PITCH_DEG``, what a frontal face
    reads), the eye line's slope the roll.
    """
    import numpy as np

    from e3rg_core.video import topology

    left, right = points[234].astype(float), points[454].astype(float)
    top, chin = points[topology.FOREHEAD].astype(float), points[topology.CHIN].astype(float)
    yaw = math.degrees(math.atan2(left[2] - right[2], float(np.hypot(*(right[:2] - left[:2])))))
    pitch = math.degrees(math.atan2(top[2] - chin[2], chin[1] - top[1])) - _FRONTAL_PITCH_DEG
    left_eye, right_eye = topology.eye_centres(points)
    roll = math.degrees(math.atan2(right_eye[1] - left_eye[1], right_eye[0] - left_eye[0]))
    return yaw, pitch, roll


def _read_expression(rgb) -> tuple[str, float]:
    """The class the expression model reads on a still and its probability (neutral, 0 without a face)."""
    from e3rg_core.perception.face import FaceExpressionReader

    reading = FaceExpressionReader(max_frames=1).read_frames([rgb])
    if not reading.frames_with_face:
        return "neutral", 0.0
    return reading.top, float(reading.distribution.get(reading.top, 0.0))


def expression_warning(portrait: Path) -> str:
    """``PortraitCheck.warning`` for a stored portrait: a sentence when its face shows a strong expression."""
    from e3rg_core.video.landmarks import read_rgb

    top, p = _read_expression(read_rgb(Path(portrait)))
    return PortraitCheck(face_px=0.0, yaw_deg=0.0, pitch_deg=0.0, roll_deg=0.0, expression=top,
                         expression_p=p).warning


def check_face(portrait: Path, *, shown_as: str) -> PortraitCheck:
    """``InputError`` unless ``portrait`` shows one usable face: large enough, the only large one, and
    frontal (within ``MAX_YAW_DEG`` / ``MAX_PITCH_DEG`` / ``MAX_ROLL_DEG``). ``shown_as`` names it in
    messages. Also reads the still's expression, for ``PortraitCheck.warning``."""
    from e3rg_core.video.facemesh import FaceMesh
    from e3rg_core.video.landmarks import find_face, prepare_portrait, read_rgb

    mesh = FaceMesh()
    try:
        prepared = prepare_portrait(portrait, size_px=256, cache_dir=None, mesh_factory=lambda: mesh)
    except InputError as exc:  # its messages name our scratch path; name the upload instead
        raise InputError(str(exc).replace(str(portrait), repr(shown_as))) from exc
    rgb = read_rgb(portrait)
    areas = sorted((d.area_px for d in mesh.detect(rgb)), reverse=True)
    if len(areas) > 1 and areas[1] >= SECOND_FACE_AREA_SHARE * areas[0]:
        n_faces = sum(a >= SECOND_FACE_AREA_SHARE * areas[0] for a in areas)
        raise InputError(f"portrait {shown_as!r} shows {n_faces} faces; use a photo of one person")
    yaw, pitch, roll = head_pose_deg(find_face(mesh, rgb, portrait))
    turned = [f"{what} {abs(angle):.0f} degrees" for what, angle, most in
              (("turned", yaw, MAX_YAW_DEG), ("tipped up or down", pitch, MAX_PITCH_DEG),
               ("tilted", roll, MAX_ROLL_DEG)) if abs(angle) > most]
    if turned:
        raise InputError(f"the face in portrait {shown_as!r} is {' and '.join(turned)}; use a frontal photo "
                         f"(looking into the camera, head upright: at most {MAX_YAW_DEG:.0f} degrees turned, "
                         f"{MAX_PITCH_DEG:.0f} tipped, {MAX_ROLL_DEG:.0f} tilted)")
    top, p = _read_expression(rgb)
    return PortraitCheck(face_px=prepared.face_px, yaw_deg=yaw, pitch_deg=pitch, roll_deg=roll, expression=top,
                         expression_p=p)


# -- voice --------------------------------------------------------------------------------------


def measure_voice(wav: Path) -> VoiceSample:
    """Duration, voiced duration and median F0 of a WAV file."""
    import librosa
    import numpy as np

    from e3rg_core.media.audio import read_audio
    from e3rg_core.speech.timeline import voiced_spans

    audio = read_audio(wav)
    samples, rate_hz = audio.samples, audio.sample_rate_hz
    if not np.isfinite(samples).all():
        raise InputError("the voice sample holds invalid samples")
    spans = voiced_spans(samples, rate_hz)
    voiced_s = float(sum(end - start for start, end in spans))
    if not spans:
        return VoiceSample(audio.duration_s, 0.0, 0.0, None)
    voiced = np.concatenate([samples[int(a * rate_hz):int(b * rate_hz)] for a, b in spans])
    voiced = voiced[: int(MAX_PITCH_ANALYSIS_S * rate_hz)]
    if rate_hz != ANALYSIS_RATE_HZ:
        voiced = librosa.resample(voiced, orig_sr=rate_hz, target_sr=ANALYSIS_RATE_HZ)
    f0, is_voiced, _ = librosa.pyin(voiced, fmin=F0_MIN_HZ, fmax=F0_MAX_HZ, sr=ANALYSIS_RATE_HZ,
                                    frame_length=PYIN_FRAME, hop_length=PYIN_HOP)
    pitched = f0[is_voiced & np.isfinite(f0)]
    pitched_s = len(pitched) * PYIN_HOP / ANALYSIS_RATE_HZ
    enough = pitched_s >= MIN_PITCHED_S and len(pitched) >= MIN_PITCHED_SHARE * len(f0)
    return VoiceSample(audio.duration_s, voiced_s, pitched_s, float(np.median(pitched)) if enough else None)


def guess_gender(f0_hz: float) -> str:
    """``"female"`` from ``FEMALE_F0_HZ`` up, else ``"male"``: a guess, overridable by the user."""
    return "female" if f0_hz >= FEMALE_F0_HZ else "male"


def timbre_for(f0_hz: float, gender: str) -> str:
    """``"low"``, ``"mid"`` or ``"high"`` by the gender's ``TIMBRE_BANDS_HZ``."""
    low_below, high_from = TIMBRE_BANDS_HZ[gender]
    return "low" if f0_hz < low_below else "high" if f0_hz >= high_from else "mid"


def matching_voice(f0_hz: float, gender: str) -> tuple[str, float]:
    """The embedded voice for ``gender`` and the pitch shift (semitones, clamped) towards ``f0_hz``."""
    voice = VOICE_FOR_GENDER[gender]
    shift = 12.0 * math.log2(f0_hz / VOICE_F0_HZ[voice])
    return voice, round(min(max(shift, PITCH_SHIFT_RANGE[0]), PITCH_SHIFT_RANGE[1]), 1) + 0.0  # no -0.0


def _read_sample(source: Path, dest: Path) -> VoiceSample:
    """Decode ``source`` to ``dest`` (mono WAV) and check it holds 5-60 s with a voice in it."""
    from e3rg_core.perception.asr import extract_audio

    try:
        extract_audio(source, dest, sample_rate_hz=REFERENCE_RATE_HZ, max_seconds=MAX_SAMPLE_S)
    except InputError as exc:
        raise InputError(f"voice sample: {exc}") from exc
    sample = measure_voice(dest)
    if sample.voiced_s < MIN_VOICED_S:
        raise InputError(f"the voice sample has {sample.voiced_s:.1f} s of speech (in {sample.duration_s:.1f} s); "
                         f"at least {MIN_VOICED_S:.0f} s is needed: record a longer clip of one person talking")
    if sample.f0_hz is None:
        raise InputError("no voice found in the sample: it holds sound but no pitch of a speaking voice; "
                         "record one person talking, without music or loud noise")
    return sample


# -- the avatar ---------------------------------------------------------------------------------


def _choice(key: str, value: str | None, allowed: tuple[str, ...]) -> str | None:
    if value is not None and value not in allowed:
        raise InputError(f"unknown {key} {value!r}; choose from {', '.join(allowed)}")
    return value


def _sweep_stale(user_root: Path) -> None:
    """Remove staging and trash folders left by a crashed process."""
    now = time.time()
    for entry in user_root.iterdir():
        if entry.name.startswith((".tmp-", ".trash-")):
            try:
                if now - entry.stat().st_mtime > STALE_STAGING_S:
                    shutil.rmtree(entry, ignore_errors=True)
            except FileNotFoundError:
                pass


def _licence(display_name: str, voice: VoiceSettings, has_sample: bool) -> str:
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    sample = ("  `reference.wav` is the uploaded sample (mono, 24 kHz), for voice-cloning backends."
              if has_sample else "")
    what = "face and voice" if has_sample else "face"
    return (f"# {display_name}: sources and licences\n\n"
            f"This avatar was {CREDITS}. Created {today}. The uploader confirmed that they have the right "
            f"to use this {what}.\n\n"
            "- **Portrait** (`portrait.png`): the uploaded image, turned upright, downscaled and without its "
            "metadata.\n"
            f"- **Voice**: the embedded `{voice.voice}` voice shifted by {voice.pitch_shift_semitones:+.1f} "
            f"semitones.{sample}\n")


def create_avatar(library: AvatarLibrary, *, display_name: str, portrait: Path, voice_sample: Path | None = None,
                  age: str = "young", gender: str | None = None, timbre: str | None = None,
                  owner: str = "", workdir: Path | None = None, rights_confirmed: bool = False) -> Profile:
    """Check a user's portrait and voice sample and store them as a new avatar under ``library.user_root``.

    ``owner`` is whose avatar it is (``memory.ownership``: only they see it until an operator
    publishes it; "" is the shared pool). ``gender`` and ``timbre`` override what the voice sample
    suggests; without a sample ``gender`` is required. ``rights_confirmed`` must be True: the uploader
    says they have the right to use the face (their own, or one they have permission for) and the
    voice; it is recorded in the avatar's ``LICENSE.md``. ``workdir`` holds the decoded uploads while
    they are checked (default: a temporary folder); nothing is written under ``user_root`` until
    every check has passed. Returns the new avatar's profile, as the library reads it.
    """
    if library.user_root is None:
        raise ConfigError("this avatar library has no user folder: build it with AvatarLibrary(user_root=...)")
    user_root = library.user_root
    if user_root.resolve() == library.root.resolve():
        raise ConfigError(f"the user avatar folder {user_root} is the shipped one; use a folder in the data dir")
    if rights_confirmed is not True:
        raise InputError("confirm that you have the right to use this face and this voice (your own, or a "
                         "person's who agreed) before making an avatar of them")
    display_name = check_display_name(display_name)
    age = _choice("age", age, AGES) or "young"
    gender = _choice("gender", gender, GENDERS)
    timbre = _choice("timbre", timbre, TIMBRES)
    if voice_sample is None and gender is None:
        raise InputError("without a voice sample, say whether the avatar's voice should be female or male")
    if len(library.custom_ids()) >= MAX_CUSTOM_AVATARS:
        raise InputError(f"there are already {MAX_CUSTOM_AVATARS} custom avatars, the most this e3rg keeps; "
                         "delete one first")
    portrait = Path(portrait)

    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="e3rg-avatar-", dir=workdir) as scratch_dir:
        scratch = Path(scratch_dir)
        save_portrait(portrait, scratch / "portrait.png")
        portrait_check = check_face(scratch / "portrait.png", shown_as=portrait.name)
        if portrait_check.warning:
            logger.info("custom avatar portrait: %s", portrait_check.warning)
        if voice_sample is not None:
            sample = _read_sample(Path(voice_sample), scratch / "reference.wav")
            gender = gender or guess_gender(sample.f0_hz)
            voice_name, shift = matching_voice(sample.f0_hz, gender)
            timbre = timbre or timbre_for(sample.f0_hz, gender)
            logger.info("voice sample: %.1f s voiced, median F0 %.0f Hz -> %s, %s, %+.1f st", sample.voiced_s,
                        sample.f0_hz, gender, voice_name, shift)
        else:
            voice_name, shift = VOICE_FOR_GENDER[gender], 0.0
            timbre = timbre or "mid"
        voice = VoiceSettings(backend="embedded", voice=voice_name, pitch_shift_semitones=shift)

        user_root.mkdir(parents=True, exist_ok=True)
        _sweep_stale(user_root)
        avatar_id = new_avatar_id(display_name)
        while avatar_id in library.ids():  # 16.7 M suffixes per name: a clash is rare, but never shadow
            avatar_id = new_avatar_id(display_name)
        staging = user_root / f".tmp-{uuid.uuid4().hex}"
        folder = staging / avatar_id
        final = user_root / avatar_id
        try:
            folder.mkdir(parents=True)
            shutil.copyfile(scratch / "portrait.png", folder / "portrait.png")
            if voice_sample is not None:
                shutil.copyfile(scratch / "reference.wav", folder / "reference.wav")
            write_owner(folder, AvatarOwner(owner))  # before the rename: never listed without an owner
            (folder / "LICENSE.md").write_text(_licence(display_name, voice, voice_sample is not None),
                                               encoding="utf-8")
            profile = Profile(id=avatar_id, display_name=display_name, age=age, gender=gender, timbre=timbre,
                              language="en", portrait=folder / "portrait.png", voice=voice, folder=folder,
                              reference_speech=folder / "reference.wav" if voice_sample is not None else None,
                              credits="LICENSE.md")
            save_profile(profile, staging)  # reads it back
            os.rename(folder, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    try:
        created = library.get(avatar_id)
    except Exception:
        shutil.rmtree(final, ignore_errors=True)
        raise
    logger.info("created the custom avatar %r (%s)", avatar_id, display_name)
    return created
