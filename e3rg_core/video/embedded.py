"""``mesh``: the embedded talking-head renderer, real time on a CPU.

The portrait's 468-point face mesh (cached per portrait) carries a rig of action units; each frame
the animator sets the units from the visemes and loudness of the speech, the emotion bank and a
life track (blinks, head motion), the mesh warps the portrait, the mouth interior is painted in,
and ffmpeg encodes H.264 + AAC as the frames arrive.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from e3rg_core.errors import BackendUnavailable, ConfigError
from e3rg_core.types import Speech, Video
from e3rg_core.video.base import check_request

if TYPE_CHECKING:
    from e3rg_core.config import Config

logger = logging.getLogger(__name__)

_INSTALL = "pip install -r requirements.txt && pip install --no-deps -r requirements-nodeps.txt"


@dataclass(frozen=True)
class MeshOptions:
    """``[video.mesh]`` (``E3RG_VIDEO_MESH_<FIELD>``): how the mesh renderer encodes its H.264."""

    preset: str = "veryfast"  # x264 preset
    crf: int = 20

    def __post_init__(self) -> None:
        if not 0 <= self.crf <= 51:
            raise ConfigError(f"video.mesh.crf must lie in 0..51, not {self.crf}")

    def backend_kwargs(self, config: Config) -> dict[str, Any]:
        """``MeshRenderer``'s arguments: these options and the shared [video] settings."""
        v = config.video
        return {"cache_dir": config.cache_dir, "fps": v.fps, "size_px": v.size_px, "seed": v.seed,
                "bank_path": Path(v.bank).expanduser() if v.bank else None, "preset": self.preset, "crf": self.crf}


class MeshRenderer:
    """Landmark-driven portrait animation (MediaPipe face mesh + piecewise-affine warp)."""

    name = "mesh"

    def __init__(self, *, cache_dir: Path | None = None, fps: int = 25, size_px: int = 512, seed: int = 0,
                 bank_path: Path | None = None, preset: str = "veryfast", crf: int = 20,
                 map_scale: float = 0.25) -> None:
        try:
            import cv2  # noqa: F401
            import scipy.spatial  # noqa: F401
        except ImportError as exc:
            raise BackendUnavailable(f"the mesh renderer needs OpenCV and SciPy ({exc}); install: {_INSTALL}") from exc
        from e3rg_core.media.mp4 import X264_PRESETS, ffmpeg_exe
        from e3rg_core.video.bank import MESH_BANK, load_mesh_bank

        if not 1 <= fps <= 60 or not 128 <= size_px <= 2048 or size_px % 2:
            raise ConfigError(f"fps must be 1..60 and size_px an even number in 128..2048 (got {fps}, {size_px})")
        if preset not in X264_PRESETS:
            raise ConfigError(f"x264 preset {preset!r} is unknown; choose from {', '.join(X264_PRESETS)}")
        ffmpeg_exe()
        self.fps, self.size_px, self.seed = int(fps), int(size_px), int(seed)
        self.preset, self.crf, self.map_scale = preset, int(crf), float(map_scale)
        self.cache_dir = Path(cache_dir) / "video" if cache_dir is not None else None
        self.bank = load_mesh_bank(Path(bank_path) if bank_path else MESH_BANK)
        self._mesh = None
        self._puppets: dict[tuple[str, int], object] = {}

    def _face_mesh(self):
        if self._mesh is None:
            from e3rg_core.video.facemesh import FaceMesh

            self._mesh = FaceMesh()
        return self._mesh

    def puppet(self, portrait: Path):
        """The animatable portrait (built once per file content and kept)."""
        from e3rg_core.video.landmarks import file_digest, prepare_portrait
        from e3rg_core.video.puppet import Puppet

        key = (file_digest(Path(portrait)), self.size_px)
        if key not in self._puppets:
            prepared = prepare_portrait(Path(portrait), size_px=self.size_px, cache_dir=self.cache_dir,
                                        mesh_factory=self._face_mesh)
            self._puppets = {key: Puppet(prepared, map_scale=self.map_scale)}  # keep the latest only
        return self._puppets[key]

    def performance(self, speech: Speech, *, emotion: str, intensity: float, n_frames: int, envelope: np.ndarray,
                    start_s: float = 0.0):
        """The per-frame weights and head pose for one reply (or a piece of one starting at ``start_s``)."""
        from e3rg_core.video.animator import perform

        return perform(n_frames=n_frames, fps=self.fps, envelope=envelope, visemes=speech.visemes,
                       emotion=self.bank[emotion], intensity=intensity, seed=self.seed, start_s=start_s)

    def frames(self, speech: Speech, *, portrait: Path, emotion: str, intensity: float,
               start_s: float = 0.0) -> Iterator[np.ndarray]:
        """The video frames, without encoding (what the benchmark times as the animator)."""
        from e3rg_core.media.audio import envelope, read_audio

        emotion, intensity = check_request(emotion, intensity)
        audio = read_audio(Path(speech.wav_path))
        n_frames = max(1, math.ceil(audio.duration_s * self.fps - 1e-6))
        env = envelope(audio.samples, audio.sample_rate_hz, fps=self.fps, n_frames=n_frames)
        puppet = self.puppet(portrait)
        show = self.performance(speech, emotion=emotion, intensity=intensity, n_frames=n_frames, envelope=env,
                                start_s=start_s)
        for weights, head in zip(show.weights, show.head):
            yield puppet.frame(weights, head)

    def render(self, speech: Speech, *, portrait: Path, emotion: str, intensity: float, out_path: Path,
               start_s: float = 0.0) -> Video:
        """Animate the portrait speaking ``speech`` and write an H.264 + AAC MP4 to ``out_path``.

        ``start_s``: where this clip starts in a reply rendered in pieces (the face moves on from there).
        """
        from e3rg_core.media.mp4 import Mp4Writer

        started = time.perf_counter()
        frames = self.frames(speech, portrait=portrait, emotion=emotion, intensity=intensity, start_s=start_s)
        first = next(frames)  # fails early (bad portrait, bad audio) before ffmpeg starts
        with Mp4Writer(Path(out_path), width=self.size_px, height=self.size_px, fps=self.fps,
                       audio_path=Path(speech.wav_path), preset=self.preset, crf=self.crf) as writer:
            writer.write(first)
            for frame in frames:
                writer.write(frame)
        n_frames = writer.n_frames
        logger.info("rendered %d frames of %s in %.2f s", n_frames, emotion, time.perf_counter() - started)
        return Video(mp4_path=Path(out_path), fps=float(self.fps), n_frames=n_frames, width=self.size_px,
                     height=self.size_px, duration_s=n_frames / self.fps, emotion=emotion)
