"""The output check speaks a reply neutrally once for all the emotions it is checked in, in one folder."""

from pathlib import Path
from types import SimpleNamespace

from e3rg_core.config import load_config
from e3rg_core.memory import AvatarLibrary
from e3rg_core.perception import consistency
from e3rg_core.stages import Stages
from e3rg_core.types import Speech

AVATARS = Path(__file__).resolve().parents[2] / "avatars"


def said(path: Path, text: str, emotion: str) -> Speech:
    return Speech(wav_path=path, sample_rate_hz=24000, duration_s=1.0, text=text, emotion=emotion, intensity=1.0,
                  voice="embedded:heart")


def test_a_reply_checked_in_several_emotions_is_spoken_neutrally_once_per_folder(tmp_path, monkeypatch):
    stages = Stages(load_config(environ={"E3RG_DATA_DIR": str(tmp_path / "data")}), library=AvatarLibrary(AVATARS))
    avatar = stages.library.get("amara")
    spoken, compared = [], []

    def speak(text, *, emotion, intensity, avatar, out_path):
        Path(out_path).write_bytes(b"RIFF")
        spoken.append((text, emotion, Path(out_path)))
        return said(Path(out_path), text, emotion)

    monkeypatch.setattr(stages, "speak", speak)
    monkeypatch.setattr(stages, "neutral_face", lambda avatar, workdir: None)
    monkeypatch.setattr(stages, "perceiver", SimpleNamespace(face_reader=lambda: None, voice_reader=lambda: None))
    monkeypatch.setattr(consistency, "check_output", lambda **kw: compared.append(kw["neutral_wav"]))
    video = SimpleNamespace(mp4_path=tmp_path / "x.mp4")
    first, other = tmp_path / "first", tmp_path / "other"
    first.mkdir(), other.mkdir()
    for emotion in ("happy", "sad", "angry"):
        stages.check(said(first / f"{emotion}.wav", "Hello there.", emotion), video, avatar, first)
    assert [s[1] for s in spoken] == ["neutral"] and compared == [first / "reply_neutral.wav"] * 3
    stages.check(said(first / "x.wav", "Another reply.", "sad"), video, avatar, first)
    stages.check(said(other / "x.wav", "Another reply.", "sad"), video, avatar, other)
    assert len(spoken) == 3  # a new text, and the same one in another folder, are spoken again
