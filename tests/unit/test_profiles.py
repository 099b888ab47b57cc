"""Stage 2: avatar profiles, their validation and their retrieval."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from e3rg_core.errors import ConfigError, InputError
from e3rg_core.memory import AvatarLibrary, load_profile, save_profile
from e3rg_core.memory.profiles import AVATARS_DIR

GOOD = """display_name = "Test"
age = "young"
gender = "male"
timbre = "low"
portrait = "face.png"

[voice]
voice = "joe"
pitch_shift_semitones = 1.5
"""


def _avatar(root: Path, avatar_id: str, body: str = GOOD, portrait: bool = True) -> Path:
    folder = root / avatar_id
    folder.mkdir(parents=True)
    if portrait:
        shutil.copy(AVATARS_DIR / "amara" / "portrait.png", folder / "face.png")
    (folder / "profile.toml").write_text(body)
    return folder / "profile.toml"


def test_shipped_avatars_load_and_look_and_sound_different():
    library = AvatarLibrary()
    profiles = library.profiles()
    assert len(profiles) >= 3
    assert len({p.portrait.read_bytes() for p in profiles}) == len(profiles)
    voices = {(p.voice.backend, p.voice.voice, p.voice.pitch_shift_semitones, p.voice.rate) for p in profiles}
    assert len(voices) == len(profiles)
    assert {p.gender for p in profiles} == {"female", "male"}
    for p in profiles:
        assert (p.folder / "LICENSE.md").is_file(), f"{p.id} states no licence"
        assert "public domain" in (p.folder / "LICENSE.md").read_text().lower() or "CC0" in (p.folder / "LICENSE.md").read_text()
    assert library.default().id == "amara"


def test_good_profile(tmp_path):
    profile = load_profile(_avatar(tmp_path, "tom"))
    assert (profile.id, profile.age, profile.gender, profile.timbre, profile.language) == ("tom", "young", "male", "low", "en")
    assert profile.voice.voice == "joe" and profile.voice.pitch_shift_semitones == 1.5 and profile.voice.rate == 1.0
    assert profile.portrait == (tmp_path / "tom" / "face.png").resolve()


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.replace('age = "young"', 'age = "teen"'), "field 'age' = 'teen' is not allowed; one of child, young"),
    (lambda s: s.replace('gender = "male"\n', ""), "field 'gender' is missing"),
    (lambda s: s.replace('timbre = "low"', 'timbre = "deep"'), "field 'timbre'"),
    (lambda s: s.replace('display_name = "Test"', 'display_name = ""'), "display_name"),
    (lambda s: s.replace('face.png', 'nothere.png'), "field 'portrait': file .* does not exist"),
    (lambda s: s.replace('face.png', '../../etc/passwd'), "points outside the avatar folder"),
    (lambda s: s + 'reference_speech = "ref.wav"\n', "unknown field"),  # after [voice]: a voice key
    (lambda s: s.replace("pitch_shift_semitones = 1.5", "pitch_shift_semitones = 20"), "outside -6..6"),
    (lambda s: s.replace("[voice]", "mood = 1\n[voice]"), "unknown field\\(s\\) mood"),
    (lambda s: s.replace('age = "young"', 'age = "young'), "not valid TOML"),
])
def test_bad_profiles_name_the_field(tmp_path, edit, message):
    with pytest.raises(ConfigError, match=message):
        load_profile(_avatar(tmp_path, "tom", edit(GOOD)))


def test_missing_reference_clip(tmp_path):
    body = GOOD.replace("[voice]", 'reference_speech = "ref.wav"\n\n[voice]')
    with pytest.raises(ConfigError, match="reference_speech.*does not exist"):
        load_profile(_avatar(tmp_path, "tom", body))


def test_save_round_trips(tmp_path):
    profile = load_profile(_avatar(tmp_path / "a", "tom"))
    path = save_profile(profile, tmp_path / "a")
    assert load_profile(path) == profile


@pytest.mark.parametrize("bad", ["../amara", "Amara", "", "a/b", "x" * 80, ".hidden", "amara\x00"])
def test_unsafe_ids_are_refused(bad):
    with pytest.raises(InputError, match="invalid avatar id"):
        AvatarLibrary().get(bad)


def test_retrieval_by_id_then_attributes_then_default(tmp_path):
    _avatar(tmp_path, "tom")
    _avatar(tmp_path, "ann", GOOD.replace('gender = "male"', 'gender = "female"').replace('age = "young"', 'age = "elderly"'))
    (tmp_path / "library.toml").write_text('default = "ann"\n')
    library = AvatarLibrary(tmp_path)
    assert library.resolve("tom").id == "tom"
    # an AvaMERG listener id we do not have falls through to its attributes
    assert library.resolve("listener_17", gender="male", age="elderly", timbre="high").id == "tom"
    assert library.resolve(age="elderly", gender="female", timbre="low").id == "ann"
    assert library.resolve().id == "ann"
    with pytest.raises(InputError, match="unknown avatar 'bob'; choose from ann, tom"):
        library.get("bob")
    with pytest.raises(InputError, match="unknown gender"):
        library.resolve(gender="robot")
