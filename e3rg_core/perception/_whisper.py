"""faster-whisper with Whisper's encoder and decoder on different CPU thread counts.

Imported by ``asr.WhisperTranscriber`` only, when it loads the model (this module imports faster-whisper).

CTranslate2 fixes a model's threads when it loads, but the two halves of Whisper want different
counts. The encoder runs a few large matrix products over the 30-s window, which two cores share
well: Whisper base's took 0.53-0.56 s on 2 threads against 0.93 s on 1. The decoder runs one small
step per token, too small to split: 19 tokens took 0.30 s on 2 threads against 0.24-0.28 s on 1, the
second thread mostly waiting. So the model loads twice, the encoder's copy on ``encoder_threads`` and
the decoding copy (greedy or beam search, word alignment, language detection) on one thread, which
also leaves the second core to the face reader while Whisper decodes. On the bench's 5-s clip a
transcription then took 0.13 s less CPU time. On 230 clips (the embedded voices, espeak-ng, noisy
copies, four real recordings) the words, timings and probabilities were those of the one-model
setup, except on 2 espeak-ng clips that the one-model setup itself transcribes differently from run
to run (CTranslate2's int8 kernels on 2 threads are not bit-exact between runs). The price is a
second copy of the weights in memory (about 80 MB for base in int8) and ~0.3 s more loading.
"""

from __future__ import annotations

import ctranslate2
import numpy as np
from faster_whisper import WhisperModel
from faster_whisper.transcribe import get_ctranslate2_storage


class SplitThreadWhisper(WhisperModel):
    """A CPU ``WhisperModel`` decoding on one thread, encoding on ``encoder_threads`` (0: CTranslate2's choice)."""

    def __init__(self, model_dir: str, *, compute_type: str, encoder_threads: int = 0) -> None:
        super().__init__(model_dir, device="cpu", compute_type=compute_type, cpu_threads=1, local_files_only=True)
        self._encoder = ctranslate2.models.Whisper(model_dir, device="cpu", compute_type=compute_type,
                                                   intra_threads=encoder_threads)

    def encode(self, features: np.ndarray) -> ctranslate2.StorageView:
        """The encoder's output for log-mel ``features`` ([80, frames] or [batch, 80, frames]), from its own copy."""
        if features.ndim == 2:
            features = np.expand_dims(features, 0)
        return self._encoder.encode(get_ctranslate2_storage(features))
