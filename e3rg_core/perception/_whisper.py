"""faster-whisper's ``WhisperModel`` with the encoder apart: its own CPU threads, and a hook once it has run.

Imported by ``asr.WhisperTranscriber`` only, when it loads the model (this module imports faster-whisper).

CTranslate2 fixes a model's threads when it loads, but the two halves of Whisper want different
counts. The encoder runs a few large matrix products over the 30-s window, which two cores share
well: Whisper base's took 0.53-0.56 s on 2 threads against 0.93 s on 1. The decoder runs one small
step per token, too small to split: 19 tokens took 0.30 s on 2 threads against 0.24-0.28 s on 1, the
second thread mostly waiting. So on CPU the model loads twice, the encoder's copy on
``encoder_threads`` and the decoding copy (greedy or beam search, word alignment, language detection)
on one thread. On the bench's 5-s clip a transcription then took 0.13 s less CPU time. On 230 clips
(the embedded voices, espeak-ng, noisy copies, four real recordings) the words, timings and
probabilities were those of the one-model setup, except on 2 espeak-ng clips that the one-model
setup itself transcribes differently from run to run (CTranslate2's int8 kernels on 2 threads are not
bit-exact between runs). The price is a second copy of the weights: for base in int8, 125 MB more
resident memory (290 MB against 165 MB) and 0.35 s more loading (0.8 s against 0.45 s).

``after_encoding`` lets a caller start other work once the encoder is done: the perceiver reads the
face then, on the core the decoder leaves free, instead of slowing the encoder down.

``window_frames`` makes the encoder read only the first frames of faster-whisper's 30-s window (the
clip and some of the silence padding it): its cost falls with the window (Whisper base on 2 threads:
0.9 s for 3000 frames, 0.12 s for 1000), at some cost in accuracy (``WhisperTranscriber.transcribe``).
"""

from __future__ import annotations

from typing import Callable

import ctranslate2
import numpy as np
from faster_whisper import WhisperModel
from faster_whisper.transcribe import get_ctranslate2_storage


class TwoPartWhisper(WhisperModel):
    """A ``WhisperModel`` whose encoder runs on ``encoder_threads`` (0: CTranslate2's choice), the rest on one (CPU)."""

    def __init__(self, model_dir: str, *, device: str, compute_type: str, encoder_threads: int = 0) -> None:
        super().__init__(model_dir, device=device, compute_type=compute_type, local_files_only=True,
                         cpu_threads=1 if device == "cpu" else 0)
        self._encoder = None
        if device == "cpu":
            self._encoder = ctranslate2.models.Whisper(model_dir, device="cpu", compute_type=compute_type,
                                                       intra_threads=encoder_threads)
        #: called after each encoder run; set by the one caller holding the model (``WhisperTranscriber``'s lock)
        self.after_encoding: Callable[[], None] | None = None
        #: the log-mel frames (100 a second) the encoder reads; None: the whole 30-s window (set like after_encoding)
        self.window_frames: int | None = None

    def encode(self, features: np.ndarray) -> ctranslate2.StorageView:
        """The encoder's output for log-mel ``features`` ([80, frames] or [batch, 80, frames])."""
        if self.window_frames is not None and features.shape[-1] > self.window_frames:
            features = np.ascontiguousarray(features[..., : self.window_frames])
        if self._encoder is None:
            output = super().encode(features)
        else:
            batch = features if features.ndim == 3 else np.expand_dims(features, 0)
            output = self._encoder.encode(get_ctranslate2_storage(batch))
        if self.after_encoding is not None:
            self.after_encoding()
        return output
