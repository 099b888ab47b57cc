"""``dicetalk``: an adapter to a local DICE-Talk checkout (diffusion talking head with emotion priors).

DICE-Talk (Tan et al., CC BY-NC-SA 4.0) is not a package: point ``video.dicetalk.dir`` at a clone
of its repository with the checkpoints its README downloads (``checkpoints/DICE-Talk``, the SVD-xt
image-to-video model, whisper-tiny, the YOLO face detector, RIFE). It needs a CUDA GPU with at least
20 GB of memory and takes minutes per 10 s of speech.

What the adapter adds around the upstream ``DICE_Talk`` class:

* the 8 emotion priors are located and checked when the backend is created, not mid-request;
* portraits go through e3rg's own checks first (no face, several faces, RGBA, grey, huge), because
  upstream crashes with an unrelated error when its detector finds no face;
* calls are serialised: upstream keeps its settings in one class-level object that every call mutates;
* E3RG's settings: ``emo_scale`` 6.0, ``ref_scale`` 3.0, 25 steps, minimum resolution 512, expand ratio
  0.5, crop on. Upstream treats seed 0 as "keep the previous seed", so 0 means its default, 72589.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from e3rg_core.emotions import COARSE
from e3rg_core.errors import BackendFailed, BackendUnavailable, ConfigError, InputError
from e3rg_core.types import Speech, Video
from e3rg_core.video.base import check_request

if TYPE_CHECKING:
    from e3rg_core.config import Config

logger = logging.getLogger(__name__)

MIN_GPU_MEMORY_GB = 20.0
PRIOR_SHAPE = (1, 256)
UPSTREAM_DEFAULT_SEED = 72589
#: files the upstream constructor opens, relative to the checkout
REQUIRED = (
    "dice_talk.py",
    "config/inference/dice_talk.yaml",
    "checkpoints/DICE-Talk/unet.pth",
    "checkpoints/DICE-Talk/pose_guider.pth",
    "checkpoints/DICE-Talk/audio_linear.pth",
    "checkpoints/DICE-Talk/emo_model.pth",
    "checkpoints/stable-video-diffusion-img2vid-xt",
    "checkpoints/whisper-tiny",
    "checkpoints/yoloface_v5m.pt",
    "checkpoints/RIFE/flownet.pkl",
)
# one lock for every instance: upstream's settings live on the class, shared by all of them
_UPSTREAM_LOCK = threading.Lock()


@dataclass(frozen=True)
class DiceTalkOptions:
    """``[video.dicetalk]`` (``E3RG_VIDEO_DICETALK_<FIELD>``): where DICE-Talk is and how it samples."""

    dir: str = ""  # a DICE-Talk checkout with its checkpoints/ folder
    device: int = 0  # CUDA device index
    steps: int = 25
    ref_scale: float = 3.0
    emo_scale: float = 6.0
    expand_ratio: float = 0.5
    crop: bool = True

    def __post_init__(self) -> None:
        if self.steps < 1 or self.expand_ratio < 0 or self.device < 0:
            raise ConfigError("video.dicetalk.steps must be >= 1, expand_ratio >= 0 and device >= 0")
        if self.ref_scale < 0 or self.emo_scale < 0:
            raise ConfigError("video.dicetalk.ref_scale and emo_scale must be >= 0")

    def backend_kwargs(self, config: Config) -> dict[str, Any]:
        """``DiceTalkRenderer``'s arguments: these options and the shared [video] settings."""
        v = config.video
        return {"checkout": Path(self.dir).expanduser() if self.dir else None, "device": self.device,
                "steps": self.steps, "ref_scale": self.ref_scale, "emo_scale": self.emo_scale,
                "min_resolution": v.size_px, "expand_ratio": self.expand_ratio, "crop": self.crop, "seed": v.seed,
                "bank_path": Path(v.bank).expanduser() if v.bank else None, "cache_dir": config.cache_dir}


def load_bank(path: Path) -> dict[str, str]:
    """coarse class -> prior name, from ``[priors]`` of the dicetalk emotion bank."""
    from e3rg_core.video.bank import read_toml

    table = read_toml(path).get("priors")
    if not isinstance(table, dict) or sorted(table) != sorted(COARSE):
        raise ConfigError(f"emotion bank {path}: [priors] must name a prior for each of {', '.join(COARSE)}")
    return {label: str(name) for label, name in table.items()}


def load_prior(path: Path) -> np.ndarray:
    """Read one DICE-Talk emotion prior (a pickled dict with ``mu`` float32[1, 256])."""
    if not path.is_file():
        raise BackendUnavailable(f"DICE-Talk emotion prior {path} is missing; the checkout's examples/emo/ holds them")
    try:
        data = np.load(path, allow_pickle=True).item()  # upstream's own format; a local, trusted checkout
        mu = np.asarray(data["mu"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path} is not a DICE-Talk emotion prior (a pickled dict with 'mu'): {exc}") from exc
    if mu.shape != PRIOR_SHAPE or not np.issubdtype(mu.dtype, np.floating) or not np.isfinite(mu).all():
        raise ConfigError(f"{path}: 'mu' must be finite float32{list(PRIOR_SHAPE)}, got {mu.dtype}{list(mu.shape)}")
    return mu.astype(np.float32)


def check_gpu(device: int, min_memory_gb: float = MIN_GPU_MEMORY_GB) -> str:
    """Name of CUDA device ``device`` if it has enough memory; ``BackendUnavailable`` otherwise."""
    need = f"DICE-Talk needs a CUDA GPU with at least {min_memory_gb:.0f} GB of memory"
    try:
        import torch
    except ImportError as exc:
        raise BackendUnavailable(f"{need} and PyTorch with CUDA; torch is not installed. "
                                 "Use the 'mesh' video backend on CPU.") from exc
    if not torch.cuda.is_available():
        why = "this PyTorch is a CPU build" if torch.version.cuda is None else "no CUDA device is visible"
        raise BackendUnavailable(f"{need}; CUDA is not available here ({why}, torch {torch.__version__}): on a GPU "
                                 "machine install a CUDA build of PyTorch (DICE-Talk's requirements.txt). "
                                 "Use the 'mesh' video backend on CPU.")
    if not 0 <= device < torch.cuda.device_count():
        raise BackendUnavailable(f"{need}; CUDA device {device} does not exist "
                                 f"({torch.cuda.device_count()} visible)")
    props = torch.cuda.get_device_properties(device)
    total_gb = props.total_memory / 1e9
    if total_gb < min_memory_gb:
        raise BackendUnavailable(f"{need}; device {device} ({props.name}) has {total_gb:.1f} GB")
    return str(props.name)


_UPSTREAM_MODULES: dict[Path, ModuleType] = {}


def _import_upstream(checkout: Path) -> ModuleType:
    """Import the checkout's ``dice_talk`` module once (it imports ``src.*`` from the checkout root)."""
    if checkout in _UPSTREAM_MODULES:
        return _UPSTREAM_MODULES[checkout]
    if str(checkout) not in sys.path:
        sys.path.insert(0, str(checkout))
    spec = importlib.util.spec_from_file_location("dice_talk", checkout / "dice_talk.py")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise BackendUnavailable(f"DICE-Talk's code cannot be imported ({exc}); install its requirements: "
                                 f"pip install -r {checkout / 'requirements.txt'}") from exc
    _UPSTREAM_MODULES[checkout] = module
    return module


class DiceTalkRenderer:
    """DICE-Talk behind e3rg's ``Renderer`` protocol."""

    name = "dicetalk"

    def __init__(self, *, checkout: Path | None, device: int = 0, steps: int = 25, ref_scale: float = 3.0,
                 emo_scale: float = 6.0, min_resolution: int = 512, expand_ratio: float = 0.5, crop: bool = True,
                 seed: int = 0, bank_path: Path | None = None, cache_dir: Path | None = None,
                 min_memory_gb: float = MIN_GPU_MEMORY_GB) -> None:
        from e3rg_core.video.bank import DICETALK_BANK

        # Everything missing is said at once, at start-up: the checkout, its files and priors, the GPU, ffmpeg.
        problems: list[str] = []
        self.bank = load_bank(Path(bank_path) if bank_path else DICETALK_BANK)
        self.checkout = Path(checkout).expanduser().resolve() if checkout and str(checkout).strip() else None
        if self.checkout is None:
            problems.append("it needs video.dicetalk.dir (E3RG_VIDEO_DICETALK_DIR): a DICE-Talk checkout with its "
                            "checkpoints/")
        elif missing := [name for name in REQUIRED if not (self.checkout / name).exists()]:
            problems.append(f"DICE-Talk checkout {self.checkout} lacks {', '.join(missing)}; clone it and "
                            "download the checkpoints as its README says")
        else:
            self.priors = {label: self.checkout / "examples" / "emo" / f"{name}.npy"
                           for label, name in self.bank.items()}
            for path in sorted(set(self.priors.values())):
                try:
                    load_prior(path)
                except BackendUnavailable as exc:
                    problems.append(str(exc))
        try:
            self.gpu = check_gpu(device, min_memory_gb)
        except BackendUnavailable as exc:
            problems.append(str(exc))
        if shutil.which("ffmpeg") is None:  # upstream muxes by calling `ffmpeg` from PATH
            problems.append("DICE-Talk calls the ffmpeg program; install it (apt-get install ffmpeg)")
        if problems:
            raise BackendUnavailable("the dicetalk video backend cannot start here: " + "; ".join(problems))
        self.options = {"min_resolution": int(min_resolution), "inference_steps": int(steps),
                        "ref_scale": float(ref_scale), "emo_scale": float(emo_scale)}
        self.expand_ratio, self.crop = float(expand_ratio), bool(crop)
        self.seed = int(seed) or UPSTREAM_DEFAULT_SEED
        self.cache_dir = cache_dir
        with _UPSTREAM_LOCK:
            module = _import_upstream(self.checkout)
            self._pipe = module.DICE_Talk(device)
        logger.info("DICE-Talk loaded from %s on %s", self.checkout, self.gpu)

    def render(self, speech: Speech, *, portrait: Path, emotion: str, intensity: float, out_path: Path,
               start_s: float = 0.0) -> Video:
        """Run DICE-Talk on the portrait and speech with the class's emotion prior (intensity is not used).

        Each clip starts from the portrait, so ``start_s`` (a piece of a streamed reply) changes nothing.
        """
        from e3rg_core.media.mp4 import probe

        emotion, intensity = check_request(emotion, intensity)
        logger.debug("DICE-Talk has no intensity control; %s at %.2f uses the full prior", emotion, intensity)
        wav = Path(speech.wav_path)
        if not wav.is_file():
            raise InputError(f"audio file {wav} does not exist")
        out_path = Path(out_path)
        with tempfile.TemporaryDirectory(prefix="e3rg-dicetalk-") as tmp:
            image = self._checked_portrait(Path(portrait), Path(tmp))
            produced = Path(tmp) / "dicetalk.mp4"
            with _UPSTREAM_LOCK:
                self._run(image, wav, self.priors[emotion], produced)
            if not produced.is_file() or produced.stat().st_size == 0:
                raise BackendFailed("DICE-Talk finished without writing a video (is ffmpeg working?)")
            out_path.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(produced), str(out_path))
        info = probe(out_path)
        return Video(mp4_path=out_path, fps=info.fps, n_frames=info.n_frames, width=info.width,
                     height=info.height, duration_s=info.duration_s, emotion=emotion)

    def _checked_portrait(self, portrait: Path, folder: Path) -> Path:
        """e3rg's portrait checks, then a plain RGB PNG for upstream (which reads with OpenCV)."""
        import cv2

        from e3rg_core.video.facemesh import FaceMesh
        from e3rg_core.video.landmarks import MAX_SIDE_PX, find_face, read_rgb

        rgb = read_rgb(portrait)
        scale = min(1.0, MAX_SIDE_PX / max(rgb.shape[:2]))
        if scale < 1.0:
            rgb = cv2.resize(rgb, (round(rgb.shape[1] * scale), round(rgb.shape[0] * scale)), interpolation=cv2.INTER_AREA)
        find_face(FaceMesh(), rgb, portrait)
        path = folder / "portrait.png"
        cv2.imwrite(str(path), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
        return path

    def _run(self, image: Path, wav: Path, prior: Path, produced: Path) -> None:
        """One upstream call; the caller holds the lock."""
        try:
            face_info: dict[str, Any] = self._pipe.preprocess(str(image), expand_ratio=self.expand_ratio)
        except (UnboundLocalError, IndexError, TypeError) as exc:  # upstream's way of saying "no face"
            raise InputError("DICE-Talk's face detector found no face in the portrait; use a frontal photo") from exc
        if int(face_info.get("face_num", 0)) <= 0:
            raise InputError("DICE-Talk's face detector found no face in the portrait; use a frontal photo")
        if self.crop:
            cropped = image.with_name("portrait.crop.png")
            self._pipe.crop_image(str(image), str(cropped), face_info["crop_bbox"])
            image = cropped
        try:
            code = self._pipe.process(str(image), str(wav), str(prior), str(produced), seed=self.seed, **self.options)
        except RuntimeError as exc:
            if "out of memory" in str(exc).lower():
                raise BackendFailed(f"DICE-Talk ran out of GPU memory on {self.gpu}; it needs >= "
                                    f"{MIN_GPU_MEMORY_GB:.0f} GB free") from exc
            raise BackendFailed(f"DICE-Talk failed: {exc}") from exc
        if code == -1:
            raise InputError("DICE-Talk found no face in the portrait while preparing it; use a frontal photo")
