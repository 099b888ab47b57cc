"""The video emotion banks and the request checks."""

from __future__ import annotations

import pytest

from e3rg_core.emotions import COARSE
from e3rg_core.errors import ConfigError, InputError
from e3rg_core.video.bank import DICETALK_BANK, MESH_BANK, MESH_KEYS, load_mesh_bank
from e3rg_core.video.base import check_request
from e3rg_core.video.dicetalk import load_bank


def test_shipped_mesh_bank_covers_every_class():
    bank = load_mesh_bank()
    assert sorted(bank) == sorted(COARSE) and bank["neutral"] == {"relax": 1.0}  # the photo's smile taken away
    assert all(0.0 <= values.get("relax", 0.0) <= 1.0 for values in bank.values())
    assert bank["happy"]["corner_up"] > 0 > bank["sad"]["corner_up"]
    assert bank["sad"]["chin_raise"] > 0 and bank["surprised"]["jaw_open"] > bank["fear"]["jaw_open"] > 0
    assert bank["surprised"]["brow_raise"] > 0 > bank["angry"]["brow_raise"]
    assert bank["sad"]["brow_inner_raise"] > 0 and bank["disgusted"]["upper_lip_raise"] > 0
    assert all(key in MESH_KEYS for values in bank.values() for key in values)


def test_shipped_dicetalk_bank_names_the_eight_priors():
    assert load_bank(DICETALK_BANK) == {label: label for label in COARSE}


@pytest.mark.parametrize("text, message", [
    ("[happy]\ncorner_up = 0.1\n", "missing"),
    ("".join(f"[{c}]\n" for c in COARSE) + "[joy]\n", "unknown"),
    ("".join(f"[{c}]\n" for c in COARSE).replace("[happy]\n", "[happy]\nsmile = 0.1\n"), "not a unit"),
    ("".join(f"[{c}]\n" for c in COARSE).replace("[happy]\n", "[happy]\ncorner_up = 3.0\n"), "-1..1"),
    ("[happy\n", "not valid TOML"),
])
def test_bad_mesh_banks_are_refused(tmp_path, text, message):
    path = tmp_path / "bank.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_mesh_bank(path)


def test_missing_bank_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_mesh_bank(tmp_path / "none.toml")
    assert MESH_BANK.is_file()


def test_check_request():
    assert check_request("sad", 0.4) == ("sad", 0.4)
    assert check_request("happy", 3) == ("happy", 1.0) and check_request("fear", -1) == ("fear", 0.0)
    with pytest.raises(InputError, match="choose from neutral, happy"):
        check_request("joyful", 0.5)  # fine labels go through the emotion wheel first
    with pytest.raises(InputError, match="NaN"):
        check_request("sad", float("nan"))
