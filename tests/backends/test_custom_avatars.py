"""Users' own avatars with the real face mesh, pyin and the embedded voices: a portrait and a voice
sample become an avatar that persists, sounds like the sample and can be cloned by openvoice."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile
from PIL import Image

from e3rg_core.errors import InputError
from e3rg_core.memory import AvatarLibrary, create_avatar, load_profile
from e3rg_core.memory import custom
from e3rg_core.memory.ownership import AvatarOwner, read_owner
from e3rg_core.memory.profiles import AVATARS_DIR, VoiceSettings

AMARA = AVATARS_DIR / "amara" / "portrait.png"
KOFI = AVATARS_DIR / "kofi" / "portrait.png"
# three sentences, 8-9 s spoken: enough for 5 s of voiced sound once the pauses are left out
SPEECH = ("Good morning, it is lovely to finally meet you in person. I have heard so many good things about "
          "your work. Shall we sit down and talk about the plans for the summer?")


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> dict[str, Path]:
    """The same text in each embedded voice (mp3 for joe: any audio file is accepted), plus a 2 s cut."""
    from e3rg_core.media.mp4 import ffmpeg_exe
    from e3rg_core.speech.embedded import EmbeddedSpeaker

    folder = tmp_path_factory.mktemp("samples")
    speaker = EmbeddedSpeaker()
    out = {}
    for voice in ("joe", "heart"):
        out[voice] = speaker.synthesize(SPEECH, emotion="neutral", intensity=0.5, voice=VoiceSettings(voice=voice),
                                        out_path=folder / f"{voice}.wav").wav_path
    subprocess.run([ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-i", str(out["joe"]), "-b:a", "64k",
                    str(folder / "joe.mp3")], check=True)
    out["joe.mp3"] = folder / "joe.mp3"
    y, rate = soundfile.read(out["joe"], dtype="float32")
    soundfile.write(folder / "short.wav", y[: 2 * rate], rate)
    out["short"] = folder / "short.wav"
    soundfile.write(folder / "silence.wav", np.zeros(8 * 16000, np.float32), 16000)
    out["silence"] = folder / "silence.wav"
    noise = np.random.default_rng(0).normal(0, 0.1, 8 * 16000).astype(np.float32)
    soundfile.write(folder / "noise.wav", noise, 16000)
    out["noise"] = folder / "noise.wav"
    return out


@pytest.fixture
def library(tmp_path) -> AvatarLibrary:
    return AvatarLibrary(user_root=tmp_path / "users")


def _left_in(user_root: Path) -> list[str]:
    return sorted(p.name for p in user_root.iterdir()) if user_root.is_dir() else []


def test_portrait_only_avatar_persists_and_can_be_deleted(library):
    profile = create_avatar(library, rights_confirmed=True, display_name="  Ada ../../etc  ", portrait=AMARA, gender="female",
                            owner="browser:" + "a" * 32)
    assert profile.id.startswith("ada-etc-") and profile.display_name == "Ada ../../etc"
    assert (profile.gender, profile.age, profile.timbre) == ("female", "young", "mid")
    assert (profile.voice.backend, profile.voice.voice, profile.voice.pitch_shift_semitones) == ("embedded", "heart", 0.0)
    assert profile.folder == (library.user_root / profile.id).resolve() and profile.reference_speech is None
    assert sorted(p.name for p in profile.folder.iterdir()) == ["LICENSE.md", "owner.json", "portrait.png", "profile.toml"]
    assert read_owner(profile.folder) == AvatarOwner("browser:" + "a" * 32)  # its creator's alone
    assert "the uploader is responsible for the rights to this face and voice" in (profile.folder / "LICENSE.md").read_text()
    with Image.open(profile.portrait) as image:
        assert image.mode == "RGB" and image.size == (1024, 1024)
    assert load_profile(profile.folder / "profile.toml") == profile
    again = AvatarLibrary(user_root=library.user_root)  # e.g. after a restart
    assert again.get(profile.id) == profile and again.is_custom(profile.id)
    assert profile.id in {p.id for p in again.profiles()} and again.default().id == "amara"
    assert _left_in(library.user_root) == [profile.id]  # no staging left

    second = create_avatar(library, rights_confirmed=True, display_name="Ada ../../etc", portrait=KOFI, gender="male")
    assert second.id != profile.id and second.voice.voice == "joe"
    again.delete_custom(profile.id)
    assert library.custom_ids() == (second.id,) and _left_in(library.user_root) == [second.id]


def test_joe_sample_gives_joe(library, samples):
    profile = create_avatar(library, rights_confirmed=True, display_name="Sam", portrait=KOFI, voice_sample=samples["joe.mp3"])
    assert profile.voice.voice == "joe" and abs(profile.voice.pitch_shift_semitones) <= 1.5
    assert profile.gender == "male" and profile.timbre == "low"  # ~88 Hz
    assert profile.reference_speech == profile.folder / "reference.wav"
    info = soundfile.info(profile.reference_speech)
    assert info.channels == 1 and info.samplerate == custom.REFERENCE_RATE_HZ
    assert info.duration == pytest.approx(soundfile.info(samples["joe"]).duration, abs=0.1)


def test_heart_sample_gives_heart_and_openvoice_accepts_it(library, samples):
    from e3rg_core.speech import voice_for
    from e3rg_core.speech.openvoice import read_reference

    profile = create_avatar(library, rights_confirmed=True, display_name="Kim", portrait=AMARA, voice_sample=samples["heart"], age="elderly")
    assert (profile.voice.voice, profile.gender, profile.age) == ("heart", "female", "elderly")
    assert abs(profile.voice.pitch_shift_semitones) <= 1.5
    reference = read_reference(voice_for(profile))  # what the openvoice backend checks on a GPU box
    assert reference.voiced_s >= custom.MIN_VOICED_S

    # the user overrides the guess: the voice follows the gender, shifted as far as allowed towards the sample
    low = create_avatar(library, rights_confirmed=True, display_name="Kim", portrait=AMARA, voice_sample=samples["heart"], gender="male",
                        timbre="mid")
    assert (low.voice.voice, low.gender, low.timbre, low.voice.pitch_shift_semitones) == ("joe", "male", "mid", 6.0)


@pytest.mark.parametrize("sample, message", [
    ("short", r"the voice sample has [0-2]\.\d s of speech \(in 2\.0 s\); at least 5 s is needed"),
    ("silence", r"has 0\.0 s of speech \(in 8\.0 s\)"),
    ("noise", "no voice found in the sample"),
])
def test_unusable_voice_samples(library, samples, sample, message):
    with pytest.raises(InputError, match=message):
        create_avatar(library, rights_confirmed=True, display_name="Ann", portrait=AMARA, voice_sample=samples[sample])
    assert _left_in(library.user_root) == []


def test_a_video_without_sound_or_a_text_file_is_no_voice(library, tmp_path):
    (tmp_path / "notes.txt").write_text("hello " * 100)
    with pytest.raises(InputError, match="voice sample: cannot read 'notes.txt'"):
        create_avatar(library, rights_confirmed=True, display_name="Ann", portrait=AMARA, voice_sample=tmp_path / "notes.txt")
    assert _left_in(library.user_root) == []


def test_portraits_without_one_usable_face_are_refused(library, tmp_path):
    Image.new("RGB", (400, 400), (128, 128, 128)).save(tmp_path / "grey.png")
    with Image.open(AMARA) as amara:
        half = amara.convert("RGB").resize((512, 512))
        pair = Image.new("RGB", (1024, 512))
        pair.paste(half, (0, 0))
        pair.paste(half, (512, 0))
        pair.save(tmp_path / "pair.jpg")
        amara.convert("RGB").resize((128, 128)).save(tmp_path / "tiny.png")
    shutil.copy(AMARA, tmp_path / "amara.txt")  # the content counts, not the name
    for name, message in {"grey.png": "no face found in portrait 'grey.png'", "pair.jpg": "shows 2 faces",
                          "tiny.png": "at least 64 px"}.items():
        with pytest.raises(InputError, match=message):
            create_avatar(library, rights_confirmed=True, display_name="Ann", portrait=tmp_path / name, gender="female")
    assert _left_in(library.user_root) == []
    assert create_avatar(library, rights_confirmed=True, display_name="Ann", portrait=tmp_path / "amara.txt", gender="female").voice.voice == "heart"


def _frontal_points(portrait: Path) -> np.ndarray:
    from e3rg_core.video.facemesh import FaceMesh
    from e3rg_core.video.landmarks import find_face, read_rgb

    return find_face(FaceMesh(), read_rgb(portrait), portrait)


def test_head_pose_reads_a_turn_of_the_mesh():
    """The mesh of a frontal face turned in 3D by a known angle reads that angle (within 3 degrees)."""
    points = _frontal_points(AMARA)
    yaw, pitch, roll = custom.head_pose_deg(points)
    assert abs(yaw) < 3 and abs(pitch) < 5 and abs(roll) < 2  # the shipped portraits are frontal
    centre = points.mean(axis=0)
    for degrees in (15, 30, 45):
        a = np.radians(degrees)
        turn = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])
        turned_yaw, _, _ = custom.head_pose_deg((points - centre) @ turn.T + centre)
        assert abs(abs(turned_yaw - yaw) - degrees) < 3, (degrees, turned_yaw)
        tilt = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
        _, _, tilted_roll = custom.head_pose_deg((points - centre) @ tilt.T + centre)
        assert abs(abs(tilted_roll - roll) - degrees) < 3, (degrees, tilted_roll)


def test_a_turned_face_is_refused_and_a_slight_turn_accepted(library, tmp_path):
    """The animator's own rendering of a shipped face turned about 35 degrees is no frontal portrait."""
    from e3rg_core.video.embedded import MeshRenderer
    from e3rg_core.video.rig import UNITS

    puppet = MeshRenderer(cache_dir=tmp_path / "cache", size_px=512).puppet(AMARA)
    for yaw_rad, name in ((0.9, "turned.png"), (0.25, "slight.png")):
        Image.fromarray(puppet.frame(np.zeros(len(UNITS)), np.array([0.0, yaw_rad, 0.0, 0.0, 0.0]))).save(tmp_path / name)
    with pytest.raises(InputError, match=r"'turned.png' is turned \d+ degrees; use a frontal photo"):
        create_avatar(library, rights_confirmed=True, display_name="Ann", portrait=tmp_path / "turned.png",
                      gender="female")
    assert _left_in(library.user_root) == []
    check = custom.check_face(tmp_path / "slight.png", shown_as="slight.png")
    assert 5 < abs(check.yaw_deg) < custom.MAX_YAW_DEG


def test_a_strong_expression_warns_and_a_neutral_face_does_not(tmp_path):
    """The astronaut's broad smile reads happy: a warning, not a refusal; the shipped faces read neutral."""
    from tests.video_support import portrait_path

    smiling = tmp_path / "smile.png"
    shutil.copy(portrait_path(), smiling)
    check = custom.check_face(smiling, shown_as="smile.png")
    assert check.expression == "happy" and check.expression_p >= custom.STRONG_EXPRESSION_P
    assert "looks happy" in check.warning and "relaxed face" in check.warning
    assert custom.expression_warning(smiling) == check.warning
    for avatar_id in ("amara", "daniel", "rosa", "kofi"):
        portrait = AVATARS_DIR / avatar_id / "portrait.png"
        neutral = custom.check_face(portrait, shown_as=avatar_id)
        assert neutral.expression == "neutral" and neutral.warning == "", (avatar_id, neutral)
        assert neutral.face_px >= 400  # the shipped faces are large: 512+ px from brow to chin
