"""Stage 2: identity memory. Avatar profiles (face, voice, age/gender/timbre) and their retrieval."""

from e3rg_core.memory.profiles import AvatarLibrary, Profile, VoiceSettings, load_profile, save_profile

__all__ = ["AvatarLibrary", "Profile", "VoiceSettings", "load_profile", "save_profile"]
