"""H.264 + AAC MP4 files through the static ffmpeg binary that ships in the ``imageio-ffmpeg`` wheel.

``Mp4Writer`` pipes raw RGB frames into ffmpeg and muxes an audio file alongside; ``probe`` and
``read_frames`` decode a finished file (used by the tests and the benchmark).
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from e3rg_core.errors import BackendFailed, BackendUnavailable

logger = logging.getLogger(__name__)

X264_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow")


def ffmpeg_exe() -> str:
    """Path of an ffmpeg binary: imageio-ffmpeg's own, else one on PATH."""
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError) as exc:
        found = shutil.which("ffmpeg")
        if found:
            return found
        raise BackendUnavailable(f"no ffmpeg binary ({exc}); install it with: pip install imageio-ffmpeg==0.8.1") from exc


class Mp4Writer:
    """Write RGB frames and an audio track to an MP4 (H.264 yuv420p + AAC, fast start)."""

    def __init__(self, out_path: Path, *, width: int, height: int, fps: float, audio_path: Path | None,
                 preset: str = "veryfast", crf: int = 20, audio_bitrate_kbps: int = 128) -> None:
        self.out_path = Path(out_path)
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        self.width, self.height = int(width), int(height)
        self.n_frames = 0
        cmd = [ffmpeg_exe(), "-nostdin", "-y", "-loglevel", "error",
               "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{self.width}x{self.height}", "-r", f"{fps}",
               "-i", "-"]
        if audio_path is not None:
            cmd += ["-i", str(audio_path), "-map", "0:v:0", "-map", "1:a:0",
                    "-c:a", "aac", "-b:a", f"{audio_bitrate_kbps}k"]
        cmd += ["-c:v", "libx264", "-preset", preset, "-crf", str(crf), "-pix_fmt", "yuv420p",
                "-movflags", "+faststart", str(self.out_path)]
        logger.debug("ffmpeg: %s", " ".join(cmd))
        self._log = tempfile.TemporaryFile()  # ffmpeg's messages, for the error; closed in close()
        self._process = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._log)

    def write(self, frame: np.ndarray) -> None:
        """Append one RGB uint8 frame of the writer's size."""
        if frame.shape != (self.height, self.width, 3) or frame.dtype != np.uint8:
            raise ValueError(f"frame must be uint8 [{self.height}, {self.width}, 3], got {frame.dtype} {frame.shape}")
        try:
            self._process.stdin.write(np.ascontiguousarray(frame).tobytes())
        except BrokenPipeError as exc:
            self.close()
            raise BackendFailed(f"ffmpeg stopped while writing {self.out_path}") from exc
        self.n_frames += 1

    def close(self) -> None:
        """Finish the file; raise ``BackendFailed`` with ffmpeg's message if encoding failed."""
        if self._process.stdin and not self._process.stdin.closed:
            try:
                self._process.stdin.close()
            except BrokenPipeError:
                pass
        code = self._process.wait()
        self._log.seek(0)
        message = self._log.read().decode("utf-8", "replace").strip()
        self._log.close()
        if code != 0:
            raise BackendFailed(f"ffmpeg failed to write {self.out_path} (exit {code}): {message[-500:]}")

    def abort(self) -> None:
        """Stop ffmpeg and remove the partial file."""
        self._process.kill()
        self._process.wait()
        self._log.close()
        self.out_path.unlink(missing_ok=True)

    def __enter__(self) -> "Mp4Writer":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


@dataclass(frozen=True)
class MediaInfo:
    """What a decoded MP4 holds."""

    width: int
    height: int
    fps: float
    n_frames: int
    video_codec: str
    audio_codec: str | None
    audio_duration_s: float | None

    @property
    def duration_s(self) -> float:
        return self.n_frames / self.fps


def read_frames(path: Path) -> Iterator[np.ndarray]:
    """Decode every frame of a video as RGB uint8 arrays."""
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    width, height = meta["size"]
    for raw in reader:
        yield np.frombuffer(raw, dtype=np.uint8).reshape(height, width, 3)


def read_audio_track(path: Path, *, sample_rate_hz: int = 16000) -> np.ndarray:
    """Decode a file's audio as mono float32 (empty when it has none)."""
    cmd = [ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-i", str(path), "-vn", "-ac", "1",
           "-ar", str(sample_rate_hz), "-f", "f32le", "-"]
    result = subprocess.run(cmd, capture_output=True, check=False)
    return np.frombuffer(result.stdout, dtype=np.float32) if result.returncode == 0 else np.zeros(0, np.float32)


def probe(path: Path) -> MediaInfo:
    """Decode a video completely and report its streams (exact frame count, audio length)."""
    result = subprocess.run([ffmpeg_exe(), "-nostdin", "-hide_banner", "-i", str(path)],
                            capture_output=True, text=True, check=False)
    header = result.stderr
    video = re.search(r"Stream #\S+.*?Video: (\w+).*?, (\d+)x(\d+)[, \[].*?([\d.]+) fps", header)
    if video is None:
        raise BackendFailed(f"{path} has no readable video stream: {header.strip()[-300:]}")
    audio = re.search(r"Stream #\S+.*?Audio: (\w+)", header)
    n_frames = sum(1 for _ in read_frames(path))
    audio_s = None
    if audio is not None:
        rate = 16000
        audio_s = len(read_audio_track(path, sample_rate_hz=rate)) / rate
    return MediaInfo(width=int(video.group(2)), height=int(video.group(3)), fps=float(video.group(4)),
                     n_frames=n_frames, video_codec=video.group(1),
                     audio_codec=audio.group(1) if audio else None, audio_duration_s=audio_s)


class AacEncoding:
    """A WAV encoded to AAC (an .m4a file) by ffmpeg in the background, while other work goes on."""

    def __init__(self, wav_path: Path, out_path: Path, *, bitrate_kbps: int = 128) -> None:
        self.out_path = Path(out_path)
        cmd = [ffmpeg_exe(), "-nostdin", "-y", "-loglevel", "error", "-i", str(wav_path), "-vn", "-c:a", "aac",
               "-b:a", f"{bitrate_kbps}k", str(self.out_path)]
        self._process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE)

    def result(self) -> Path:
        """The .m4a once ffmpeg is done; ``BackendFailed`` with its message if it failed."""
        _, err = self._process.communicate()
        if self._process.returncode != 0:
            raise BackendFailed(f"ffmpeg could not encode {self.out_path.name}: {err.decode(errors='replace')[-300:]}")
        return self.out_path


def concat_mp4(parts: Sequence[Path], out_path: Path, *, audio_path: Path, durations_s: Sequence[float],
               copy_audio: bool = False) -> Path:
    """Join MP4 clips of one encoder (same size, rate and codec) without re-encoding the video,
    under one audio track (``audio_path``, encoded once so no AAC priming gap falls between clips;
    with ``copy_audio`` it is already AAC, an ``AacEncoding``'s .m4a, and is copied).

    ``durations_s`` are the clips' video lengths: each clip starts where the last one's video ends
    (left to itself the concat demuxer would start it after the clip's longer, AAC-padded audio).
    """
    if not parts or len(parts) != len(durations_s):
        raise BackendFailed(f"{len(parts)} video pieces with {len(durations_s)} durations cannot be joined")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    listing = out_path.with_name(out_path.name + ".txt")
    listing.write_text("".join("file '" + str(Path(p).resolve()).replace("'", "'\\''") + f"'\nduration {d:.6f}\n"
                               for p, d in zip(parts, durations_s)), encoding="utf-8")
    tmp = out_path.with_name(out_path.stem + ".part" + out_path.suffix)
    cmd = [ffmpeg_exe(), "-nostdin", "-y", "-loglevel", "error", "-f", "concat", "-safe", "0", "-i", str(listing),
           "-i", str(audio_path), "-map", "0:v:0", "-map", "1:a:0", "-c:v", "copy",
           # the joined stream would start a frame late (the clips' B-frame delay): start it at zero
           "-bsf:v", "setts=pts=PTS-STARTPTS:dts=DTS-STARTPTS",
           *(["-c:a", "copy"] if copy_audio else ["-c:a", "aac", "-b:a", "128k"]),
           "-movflags", "+faststart", str(tmp)]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise BackendFailed(f"ffmpeg could not join {len(parts)} video pieces: {result.stderr.strip()[-300:]}")
        tmp.replace(out_path)
    finally:
        listing.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
    return out_path


def without_audio(path: Path, out_path: Path) -> Path:
    """A copy of the video with its audio track dropped (the picture is copied, not re-encoded)."""
    cmd = [ffmpeg_exe(), "-nostdin", "-y", "-loglevel", "error", "-i", str(path), "-map", "0:v:0", "-c:v", "copy",
           "-an", "-movflags", "+faststart", str(out_path)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise BackendFailed(f"ffmpeg could not copy the video of {path}: {result.stderr.strip()[-300:]}")
    return Path(out_path)
