"""Stage 2: identity memory. Avatar profiles (face, voice, age/gender/timbre), their retrieval, users' own avatars."""

from e3rg_core.memory.custom import create_avatar
from e3rg_core.memory.profiles import AvatarLibrary, Profile, VoiceSettings, load_profile, save_profile

__all__ = ["AvatarLibrary", "Profile", "VoiceSettings", "create_avatar", "load_profile", "save_profile"]
