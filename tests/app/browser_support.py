"""Support for the browser tests: a fake webcam and microphone, the app in a subprocess, chromium.

Chromium's fake capture devices play files in a loop: ``--use-file-for-fake-video-capture`` wants a
Y4M (or MJPEG) file, ``--use-file-for-fake-audio-capture`` a PCM WAV. The webcam shows the amara
portrait; the microphone says "I failed my driving test again today." in the embedded voice, so
speech recognition, the scripted understander of ``tests/app/serve.py`` and the chat all see a
sentence whose words the tests know.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import wave
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SENTENCE = "I failed my driving test again today."
#: silence after the sentence, so one loop of the fake microphone is a whole utterance
PAD_S = 1.0
CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--use-fake-device-for-media-stream",
                 "--use-fake-ui-for-media-stream")


@dataclass(frozen=True)
class FakeMedia:
    """The files chromium plays as its camera and microphone."""

    y4m_path: Path
    wav_path: Path
    loop_s: float  # length of one loop of the microphone file

    @property
    def record_s(self) -> float:
        """How long to record so the clip holds every word of the sentence, wherever the loop stands.

        Any window one loop long covers every instant of the loop; a second more covers a whole
        word that straddles the window's edge, and the moments lost between a click and the
        recorder starting or stopping.
        """
        return self.loop_s + 1.0

    def chromium_args(self) -> list[str]:
        return [*CHROMIUM_ARGS, f"--use-file-for-fake-video-capture={self.y4m_path}",
                f"--use-file-for-fake-audio-capture={self.wav_path}"]


def make_fake_media(folder: Path) -> FakeMedia:
    """A 640x480 Y4M of the amara portrait and a 48 kHz 16-bit mono WAV of the sentence."""
    import imageio_ffmpeg

    from e3rg_core.memory.profiles import VoiceSettings
    from e3rg_core.speech.embedded import EmbeddedSpeaker

    ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
    folder.mkdir(parents=True, exist_ok=True)
    y4m = folder / "face.y4m"
    # the square portrait fills the frame's height, so the face is ~90 px wide, as on a laptop camera
    subprocess.run([ffmpeg, "-nostdin", "-y", "-loglevel", "error", "-loop", "1", "-i",
                    str(ROOT / "avatars/amara/portrait.png"), "-t", "2", "-r", "10",
                    "-vf", "scale=-2:480,pad=640:480:(ow-iw)/2:0", "-pix_fmt", "yuv420p", str(y4m)],
                   check=True, timeout=120)
    speech = EmbeddedSpeaker().synthesize(SENTENCE, emotion="neutral", intensity=0.0,
                                          voice=VoiceSettings(voice="heart"), out_path=folder / "speech_24k.wav")
    wav = folder / "speech.wav"
    # chromium reads 16-bit PCM; 48 kHz is the capture rate it asks for, so no resampling on its side
    subprocess.run([ffmpeg, "-nostdin", "-y", "-loglevel", "error", "-i", str(speech.wav_path),
                    "-af", f"apad=pad_dur={PAD_S}", "-ar", "48000", "-ac", "1", "-c:a", "pcm_s16le", str(wav)],
                   check=True, timeout=120)
    with wave.open(str(wav), "rb") as w:
        loop_s = w.getnframes() / w.getframerate()
    return FakeMedia(y4m_path=y4m, wav_path=wav, loop_s=loop_s)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AppServer:
    """``tests/app/serve.py`` in a subprocess, restartable on the same port, data and cache.

    Its output goes to a log file (a pipe nobody reads would fill and stall the server), whose
    tail is shown when it fails to start.
    """

    def __init__(self, root: Path, *, start_timeout_s: float = 120.0, args: tuple[str, ...] = ()) -> None:
        self.root, self.data, self.cache = root, root / "data", root / "cache"
        self.args = tuple(args)  # more options of tests/app/serve.py, e.g. ("--auth", "a:pw")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = root / "server.log"
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen | None = None
        self._log_offset = 0
        self._launched = 0.0

    def log_tail(self, n_lines: int = 40) -> str:
        try:
            return "".join(self.log_path.read_text(errors="replace").splitlines(True)[-n_lines:])
        except FileNotFoundError:
            return ""

    def start(self) -> None:
        """Start the server and wait until it listens."""
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start the server without waiting for it (``wait_ready``), so a test makes its media meanwhile."""
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.app.serve", "--port", str(self.port), "--data", str(self.data),
                 "--cache", str(self.cache), *self.args], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        self._launched = time.monotonic()

    def wait_ready(self) -> None:
        """Wait until the launched server listens (``start_timeout_s`` from its launch)."""
        if self.proc is None:
            raise RuntimeError("the app was not launched")
        deadline = self._launched + self.start_timeout_s
        while time.monotonic() < deadline:
            with self.log_path.open("rb") as log:
                log.seek(self._log_offset)
                if any(line.startswith(b"READY") for line in log):
                    return
            if self.proc.poll() is not None:
                raise RuntimeError(f"the app died (exit {self.proc.returncode}):\n{self.log_tail()}")
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"the app did not start in {self.start_timeout_s:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
        self.proc = None

    def restart(self) -> None:
        """Stop the server and start a new one on the same port, data and cache."""
        self.stop()
        self.start()
