"""Start-up loads the voice of every shipped avatar, so a voice that cannot load stops the start."""

import shutil
from pathlib import Path

from e3rg_core.config import load_config
from e3rg_core.memory import AvatarLibrary
from e3rg_core.stages import Stages

AVATARS = Path(__file__).resolve().parents[2] / "avatars"


def test_the_voice_backends_of_every_shipped_avatar_are_loaded_first_the_turns(tmp_path):
    root = tmp_path / "avatars"
    shutil.copytree(AVATARS, root)
    profile = root / "kofi" / "profile.toml"
    profile.write_text(profile.read_text().replace('backend = "embedded"', 'backend = "openvoice"'))
    config = load_config(environ={"E3RG_DATA_DIR": str(tmp_path / "data")})
    stages = Stages(config, library=AvatarLibrary(root))
    assert stages._voice_backends(None) == ["embedded", "openvoice"]  # the default's first
    assert stages._voice_backends("kofi") == ["openvoice", "embedded"]
    assert Stages(config, library=AvatarLibrary(AVATARS))._voice_backends("rosa") == ["embedded"]
