"""MP4 writing through the packaged ffmpeg, checked by decoding the file."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile

from e3rg_core.errors import BackendFailed
from e3rg_core.media.mp4 import Mp4Writer, probe, read_audio_track, read_frames


def _frames(n, size=64):
    for i in range(n):
        frame = np.zeros((size, size, 3), np.uint8)
        frame[:, : (i * 3) % size] = (200, 80, 40)
        yield frame


def test_frames_and_audio_round_trip(tmp_path):
    rate = 22050
    t = np.arange(int(1.0 * rate)) / rate
    soundfile.write(str(tmp_path / "a.wav"), (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), rate)
    with Mp4Writer(tmp_path / "out.mp4", width=64, height=64, fps=25, audio_path=tmp_path / "a.wav",
                   preset="ultrafast") as writer:
        for frame in _frames(25):
            writer.write(frame)
    info = probe(tmp_path / "out.mp4")
    assert (info.width, info.height, info.fps, info.n_frames) == (64, 64, 25.0, 25)
    assert info.video_codec == "h264" and info.audio_codec == "aac"
    assert abs(info.audio_duration_s - 1.0) < 0.04
    decoded = list(read_frames(tmp_path / "out.mp4"))
    assert abs(int(decoded[10][32, 5, 0]) - 200) < 20  # the content survives encoding
    assert len(read_audio_track(tmp_path / "out.mp4")) == pytest.approx(16000, abs=700)


def test_video_only(tmp_path):
    with Mp4Writer(tmp_path / "v.mp4", width=64, height=64, fps=10, audio_path=None) as writer:
        for frame in _frames(5):
            writer.write(frame)
    info = probe(tmp_path / "v.mp4")
    assert info.audio_codec is None and info.n_frames == 5


def test_wrong_frame_and_failed_encode(tmp_path):
    writer = Mp4Writer(tmp_path / "w.mp4", width=64, height=64, fps=25, audio_path=None)
    with pytest.raises(ValueError, match="uint8"):
        writer.write(np.zeros((32, 32, 3), np.uint8))
    writer.abort()
    assert not (tmp_path / "w.mp4").exists()
    with pytest.raises(BackendFailed, match="ffmpeg"):
        with Mp4Writer(tmp_path / "x.mp4", width=64, height=64, fps=25, audio_path=tmp_path / "missing.wav") as w:
            w.write(next(_frames(1)))


def test_an_error_inside_the_block_removes_the_partial_file(tmp_path):
    with pytest.raises(RuntimeError):
        with Mp4Writer(tmp_path / "p.mp4", width=64, height=64, fps=25, audio_path=None) as writer:
            writer.write(next(_frames(1)))
            raise RuntimeError("renderer failed")
    assert not (tmp_path / "p.mp4").exists()


@pytest.mark.parametrize("pre_encoded", [False, True])
def test_clips_join_under_one_audio_track_encoded_at_the_join_or_before(tmp_path, pre_encoded):
    from e3rg_core.media.mp4 import AacEncoding, concat_mp4

    rate = 22050
    t = np.arange(int(2.0 * rate)) / rate
    soundfile.write(str(tmp_path / "a.wav"), (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), rate)
    clips = []
    for k, n in enumerate((25, 25)):
        clips.append(tmp_path / f"c{k}.mp4")
        with Mp4Writer(clips[-1], width=64, height=64, fps=25, audio_path=None, preset="ultrafast") as writer:
            for frame in _frames(n):
                writer.write(frame)
    audio = AacEncoding(tmp_path / "a.wav", tmp_path / "a.m4a").result() if pre_encoded else tmp_path / "a.wav"
    concat_mp4(clips, tmp_path / "j.mp4", audio_path=audio, durations_s=[1.0, 1.0], copy_audio=pre_encoded)
    info = probe(tmp_path / "j.mp4")
    assert info.n_frames == 50 and info.audio_codec == "aac"
    assert info.audio_duration_s == pytest.approx(2.0, abs=0.04)


def test_a_failed_background_audio_encoding_says_so(tmp_path):
    from e3rg_core.media.mp4 import AacEncoding

    with pytest.raises(BackendFailed, match="could not encode"):
        AacEncoding(tmp_path / "missing.wav", tmp_path / "a.m4a").result()
