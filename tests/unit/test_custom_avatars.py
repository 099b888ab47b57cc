"""Stage 2: users' own avatars, the fast parts: the library over shipped + user folders, names, portrait
decoding, the voice-matching rules, and refusals that happen before any model runs."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from PIL import Image

from e3rg_core.errors import ConfigError, InputError
from e3rg_core.memory import AvatarLibrary, create_avatar
from e3rg_core.memory import custom
from e3rg_core.memory.profiles import AVATAR_ID, AVATARS_DIR, check_avatar_id

AMARA = AVATARS_DIR / "amara" / "portrait.png"
BODY = """display_name = "{name}"
age = "young"
gender = "{gender}"
timbre = "mid"
portrait = "portrait.png"

[voice]
voice = "joe"
"""


def _user_avatar(user_root: Path, avatar_id: str, *, name: str = "User", gender: str = "male") -> Path:
    folder = user_root / avatar_id
    folder.mkdir(parents=True)
    shutil.copy(AMARA, folder / "portrait.png")
    (folder / "profile.toml").write_text(BODY.format(name=name, gender=gender))
    return folder


@pytest.fixture
def library(tmp_path) -> AvatarLibrary:
    return AvatarLibrary(user_root=tmp_path / "users")


def _left_in(user_root: Path) -> list[str]:
    return sorted(p.name for p in user_root.iterdir()) if user_root.is_dir() else []


# -- the library over two folders ---------------------------------------------------------------


def test_without_user_root_the_library_is_the_shipped_one(tmp_path):
    assert AvatarLibrary().user_root is None
    assert AvatarLibrary().ids() == AvatarLibrary(AVATARS_DIR).ids() == AvatarLibrary().shipped_ids()
    assert AvatarLibrary().custom_ids() == ()
    assert AvatarLibrary(tmp_path / "missing").ids() == ()


def test_ids_are_the_union_and_a_shipped_id_wins(library):
    _user_avatar(library.user_root, "ada-123abc", name="Ada", gender="female")
    _user_avatar(library.user_root, "amara", name="Impostor")  # made by hand: must not shadow the shipped Amara
    (library.user_root / ".tmp-0123").mkdir()  # a staging folder is never an avatar
    assert set(library.ids()) == set(AvatarLibrary().ids()) | {"ada-123abc"}
    assert library.custom_ids() == ("ada-123abc",)
    assert library.is_custom("ada-123abc") and not library.is_custom("amara") and not library.is_custom("bob")
    assert library.get("amara").display_name == "Amara"
    assert library.get("amara").folder == (AVATARS_DIR / "amara").resolve()
    assert library.get("ada-123abc").display_name == "Ada"
    assert {p.id for p in library.profiles()} == set(library.ids())
    assert [p.id for p in library.find(gender="female", age="young", timbre="mid")] == ["ada-123abc"]
    assert library.resolve("ada-123abc").id == "ada-123abc"
    assert library.default().id == "amara"  # from the shipped library.toml


def test_a_gone_avatar_has_the_default_stand_in_with_a_note(library):
    _user_avatar(library.user_root, "ada-123abc", name="Ada", gender="female")
    assert library.stand_in("ada-123abc") == (library.get("ada-123abc"), "")
    assert library.stand_in("amara") == (library.get("amara"), "")
    library.delete_custom("ada-123abc")
    profile, note = library.stand_in("ada-123abc")
    assert profile.id == "amara" and note == ("The avatar 'ada-123abc' of this conversation no longer exists; "
                                              "Amara (amara) answers instead.")
    assert library.retired_ids() == ("margaret", "nova", "walter")
    profile, note = library.stand_in("nova")
    assert profile.id == "amara" and "'nova' of this conversation was retired" in note
    with pytest.raises(InputError, match="avatar id"):
        library.stand_in("../nova")


def test_equal_matches_prefer_a_shipped_avatar(library):
    shipped = AvatarLibrary().find(gender="male", age="elderly", timbre="low")[0]
    body = BODY.replace('age = "young"', 'age = "elderly"').replace('timbre = "mid"', 'timbre = "low"')
    folder = _user_avatar(library.user_root, "aaa-000000")
    (folder / "profile.toml").write_text(body.format(name="Aaa", gender="male"))
    assert library.resolve(gender="male", age="elderly", timbre="low").id == shipped.id
    _user_avatar(library.user_root, "bbb-111111")  # young, mid: no shipped avatar is
    assert library.resolve(gender="male", age="young", timbre="mid").id == "bbb-111111"


def test_a_broken_user_avatar_is_skipped_not_fatal(library):
    _user_avatar(library.user_root, "ok-111111")
    broken = _user_avatar(library.user_root, "bad-222222")
    (broken / "profile.toml").write_text("display_name = ")
    assert "bad-222222" not in {p.id for p in library.profiles()}
    assert "ok-111111" in {p.id for p in library.profiles()}
    with pytest.raises(ConfigError, match="not valid TOML"):
        library.get("bad-222222")


def test_changes_made_elsewhere_are_seen(library):
    other = AvatarLibrary(user_root=library.user_root)  # e.g. another worker of the app
    folder = _user_avatar(library.user_root, "ann-333333", name="Ann")
    assert library.get("ann-333333").display_name == "Ann"
    profile = folder / "profile.toml"
    profile.write_text(BODY.format(name="Annie", gender="male"))
    os.utime(profile, ns=(time.time_ns(), time.time_ns() + 10**9))  # a new mtime even on coarse clocks
    assert library.get("ann-333333").display_name == "Annie"
    other.delete_custom("ann-333333")
    assert "ann-333333" not in library.ids()
    with pytest.raises(InputError, match="unknown avatar 'ann-333333'"):
        library.get("ann-333333")


def test_delete_custom(library):
    _user_avatar(library.user_root, "tom-444444")
    library.get("tom-444444")
    library.delete_custom("tom-444444")
    assert _left_in(library.user_root) == [] and library.custom_ids() == ()
    with pytest.raises(InputError, match="no custom avatar 'tom-444444'"):
        library.delete_custom("tom-444444")
    with pytest.raises(InputError, match="ships with e3rg and cannot be deleted"):
        library.delete_custom("amara")
    with pytest.raises(InputError, match="ships with e3rg"):
        AvatarLibrary().delete_custom("amara")
    with pytest.raises(InputError, match="invalid avatar id"):
        library.delete_custom("../users")
    assert (AVATARS_DIR / "amara" / "profile.toml").is_file()


# -- whose avatar it is ---------------------------------------------------------------------------


def test_a_custom_avatar_is_seen_only_by_its_owner_until_published(library):
    from e3rg_core.memory import ownership

    mine = _user_avatar(library.user_root, "ada-123abc", name="Ada")
    ownership.write_owner(mine, ownership.AvatarOwner("browser:aaaa"))
    theirs = _user_avatar(library.user_root, "bob-456def", name="Bob")
    ownership.write_owner(theirs, ownership.AvatarOwner("browser:bbbb"))
    shipped = set(library.shipped_ids())
    assert {p.id for p in ownership.visible_profiles(library, "browser:aaaa")} == shipped | {"ada-123abc"}
    assert {p.id for p in ownership.visible_profiles(library, "browser:bbbb")} == shipped | {"bob-456def"}
    assert {p.id for p in ownership.visible_profiles(library, "")} == shipped  # the shared pool has none
    assert ownership.may_use(library, "amara", "anyone") and not ownership.may_use(library, "bob-456def", "browser:aaaa")
    assert not ownership.may_use(library, "zzz-000000", "browser:aaaa")  # unknown

    assert ownership.set_published(library, "bob-456def", True) == ownership.AvatarOwner("browser:bbbb", True)
    assert "bob-456def" in {p.id for p in ownership.visible_profiles(library, "browser:aaaa")}
    with pytest.raises(InputError, match="only the avatars you made"):  # published is not given away
        ownership.delete_own(library, "bob-456def", "browser:aaaa")
    ownership.set_published(library, "bob-456def", False)
    assert not ownership.may_use(library, "bob-456def", "browser:aaaa")
    with pytest.raises(InputError, match="everybody's already"):
        ownership.set_published(library, "amara", True)

    with pytest.raises(InputError, match="only the avatars you made"):
        ownership.delete_own(library, "ada-123abc", "browser:bbbb")
    ownership.delete_own(library, "ada-123abc", "browser:aaaa")
    assert library.custom_ids() == ("bob-456def",)
    with pytest.raises(InputError, match="ships with e3rg and cannot be deleted"):
        ownership.delete_own(library, "amara", "browser:aaaa")


def test_an_avatar_without_a_readable_owner_is_hidden_or_shared(library):
    from e3rg_core.memory import ownership

    _user_avatar(library.user_root, "old-111111")  # made before owners were recorded: the shared pool's
    damaged = _user_avatar(library.user_root, "bad-222222")
    (damaged / ownership.OWNER_FILE).write_text("{not json")
    assert ownership.may_use(library, "old-111111", "") and not ownership.may_use(library, "old-111111", "browser:a")
    assert not any(ownership.may_use(library, "bad-222222", who) for who in ("", "browser:a", "rater01"))
    with pytest.raises(InputError, match="cannot be read"):
        ownership.set_published(library, "bad-222222", True)


# -- names --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, slug", [
    ("Ada Lovelace", "ada-lovelace"),
    ("  José Álvarez  ", "jose-alvarez"),
    ("../../etc", "etc"),
    ("a/b\\c", "a-b-c"),
    ("李明", "avatar"),
    ("!!!", "avatar"),
    ("<script>alert(1)</script>", "script-alert-1-script"),
])
def test_ids_are_safe_slugs(name, slug):
    avatar_id = custom.new_avatar_id(custom.check_display_name(name))
    assert check_avatar_id(avatar_id) and AVATAR_ID.match(avatar_id)
    assert avatar_id.rsplit("-", 1) == [slug, avatar_id[-6:]]
    assert all(c in "0123456789abcdef" for c in avatar_id[-6:])
    assert custom.new_avatar_id(name) != custom.new_avatar_id(name)


@pytest.mark.parametrize("name, message", [
    ("", "give the avatar a name"),
    ("   ", "give the avatar a name"),
    ("x" * 500, "has 500 characters; at most 40"),
    ("Ann\x00", "control or invisible"),
    ("Ann\nLee", "control or invisible"),
    ("Ann\u202eeeL", "control or invisible"),  # right-to-left override
    (None, "must be text"),
])
def test_hostile_names_are_refused(name, message):
    with pytest.raises(InputError, match=message):
        custom.check_display_name(name)


def test_names_keep_their_text():
    assert custom.check_display_name("  Zoë \"Z\" O'Neil  ") == "Zoë \"Z\" O'Neil"
    assert len(custom.check_display_name("x" * 40)) == 40


# -- voice rules --------------------------------------------------------------------------------


def test_voice_matching_rules():
    assert custom.guess_gender(custom.FEMALE_F0_HZ) == "female" and custom.guess_gender(159.9) == "male"
    assert custom.matching_voice(custom.VOICE_F0_HZ["joe"], "male") == ("joe", 0.0)
    assert custom.matching_voice(custom.VOICE_F0_HZ["heart"], "female") == ("heart", 0.0)
    voice, shift = custom.matching_voice(custom.VOICE_F0_HZ["joe"] * 2 ** (3 / 12), "male")
    assert voice == "joe" and shift == pytest.approx(3.0, abs=0.05)
    assert custom.matching_voice(300.0, "male") == ("joe", 6.0)  # clamped to the profile bounds
    assert custom.matching_voice(90.0, "female") == ("heart", -6.0)
    assert [custom.timbre_for(f, "male") for f in (90, 120, 150)] == ["low", "mid", "high"]
    assert [custom.timbre_for(f, "female") for f in (170, 205, 240)] == ["low", "mid", "high"]
    assert custom.MIN_VOICED_S == 5.0 and custom.MAX_SAMPLE_S == 60.0


def test_thresholds_agree_with_the_backends():
    from e3rg_core.perception.asr import MAX_CLIP_S
    from e3rg_core.speech.embedded import VOICES
    from e3rg_core.speech.openvoice import MIN_REFERENCE_VOICED_S

    assert custom.MIN_VOICED_S == MIN_REFERENCE_VOICED_S and custom.MAX_SAMPLE_S == MAX_CLIP_S
    assert {VOICES[v].gender: v for v in VOICES} == custom.VOICE_FOR_GENDER


# -- portraits ----------------------------------------------------------------------------------


def test_portrait_is_stored_upright_rgb_and_small(tmp_path):
    photo = Image.new("RGB", (1600, 1200), (200, 30, 30))
    photo.paste((30, 30, 200), (0, 0, 800, 1200))  # left half blue
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 degrees clockwise to display"
    exif[0x8825] = {2: (51.0, 30.0, 0.0)}  # GPS: must not survive
    photo.save(tmp_path / "phone.jpg", exif=exif.tobytes())
    custom.save_portrait(tmp_path / "phone.jpg", tmp_path / "out.png")
    with Image.open(tmp_path / "out.png") as out:
        assert out.format == "PNG" and out.mode == "RGB" and out.size == (768, 1024)
        assert not out.getexif()
        top, bottom = out.getpixel((384, 10)), out.getpixel((384, 1010))
    assert top[2] > 150 and bottom[0] > 150  # turned: the left (blue) half is now on top


def test_transparent_portrait_goes_on_white(tmp_path):
    Image.new("RGBA", (200, 100), (0, 0, 0, 0)).save(tmp_path / "clear.png")
    custom.save_portrait(tmp_path / "clear.png", tmp_path / "out.png")
    with Image.open(tmp_path / "out.png") as out:
        assert out.mode == "RGB" and out.size == (200, 100) and out.getpixel((5, 5)) == (255, 255, 255)


def test_bad_portraits(tmp_path, monkeypatch):
    (tmp_path / "text.png").write_text("not an image")
    Image.new("RGB", (4097, 16)).save(tmp_path / "wide.png")
    shutil.copy(AMARA, tmp_path / "cut.png")
    with open(tmp_path / "cut.png", "r+b") as handle:
        handle.truncate(4000)
    (tmp_path / "page.eps").write_text("%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\nshowpage\n")
    cases = {"text.png": "'text.png' is not an image", "wide.png": "4097x16 px; at most 4096 px a side",
             "cut.png": "damaged", "page.eps": "not an image", "gone.png": "does not exist"}
    for name, message in cases.items():
        with pytest.raises(InputError, match=message):
            custom.save_portrait(tmp_path / name, tmp_path / "out.png")
    monkeypatch.setattr(custom, "MAX_PORTRAIT_BYTES", 1000)
    with pytest.raises(InputError, match="MB is accepted"):
        custom.save_portrait(AMARA, tmp_path / "out.png")


# -- refusals before any model runs ---------------------------------------------------------------


def test_create_needs_a_user_folder():
    with pytest.raises(ConfigError, match="no user folder"):
        create_avatar(AvatarLibrary(), rights_confirmed=True, display_name="Ann", portrait=AMARA, gender="female")
    with pytest.raises(ConfigError, match="is the shipped one"):
        create_avatar(AvatarLibrary(user_root=AVATARS_DIR), rights_confirmed=True, display_name="Ann", portrait=AMARA, gender="female")


@pytest.mark.parametrize("kwargs, message", [
    ({}, "without a voice sample, say whether"),
    ({"gender": "robot"}, "unknown gender 'robot'; choose from male, female"),
    ({"gender": "male", "age": "teen"}, "unknown age"),
    ({"gender": "male", "timbre": "deep"}, "unknown timbre"),
    ({"gender": "male", "display_name": "../\x1b[31m"}, "control"),
    ({"gender": "male", "portrait": Path("/etc/passwd")}, "not an image"),
    ({"gender": "male", "portrait": Path("/nonexistent.png")}, "does not exist"),
    ({"gender": "male", "rights_confirmed": False}, "confirm that you have the right to use this face"),
    ({"gender": "male", "rights_confirmed": "yes"}, "confirm that you have the right"),
])
def test_bad_requests_leave_nothing_behind(library, tmp_path, kwargs, message):
    args = {"display_name": "Ann", "portrait": AMARA, "workdir": tmp_path / "work", "rights_confirmed": True, **kwargs}
    with pytest.raises(InputError, match=message):
        create_avatar(library, **args)
    assert _left_in(library.user_root) == []
    assert _left_in(tmp_path / "work") == []


def test_the_number_of_custom_avatars_is_limited(library, monkeypatch):
    monkeypatch.setattr(custom, "MAX_CUSTOM_AVATARS", 3)
    for i in range(3):
        (library.user_root / f"u{i}").mkdir(parents=True)
        (library.user_root / f"u{i}" / "profile.toml").write_text("")
    with pytest.raises(InputError, match="already 3 custom avatars"):
        create_avatar(library, rights_confirmed=True, display_name="Ann", portrait=AMARA, gender="female")
    assert custom.MAX_CUSTOM_AVATARS == 3 and len(_left_in(library.user_root)) == 3


def test_stale_staging_is_swept(tmp_path):
    old, fresh = tmp_path / ".tmp-old", tmp_path / ".tmp-new"
    for folder in (old, fresh):
        (folder / "x").mkdir(parents=True)
    os.utime(old, (time.time() - 2 * custom.STALE_STAGING_S,) * 2)
    custom._sweep_stale(tmp_path)
    assert not old.exists() and fresh.exists()
