"""Each voter's raw output per message, kept so that vote and calibration variants are re-scored without
running the LLM again.

    python bench/emotion_voters.py --out /tmp/e3rg-emotion-cache [--goemotions DIR --splits dev,train]

For every item of e3rg's four labelled sets (and, with ``--goemotions``, the same class-balanced draw as
``bench/emotion_classes.py``), the turn is cleaned as ``Understander.decide`` cleans it, then kept:

* the LLM voter's raw log-probabilities over the 36 labels (``choice_logprobs``, before calibration),
  and its raw scores on the content-free messages the calibration divides by;
* the sentence embeddings of the message and of the speaker's previous line as the embedding voter
  reads them (canonical text, each embedded alone), for each embedding model named in ``--embedders``;
* the risk detector's level (the crisis rule turns a decision into "devastated" after the vote).

One ``<set>.npz`` per set under ``--out`` (ids, gold classes, arrays; no text), which
``bench/emotion_rescore.py`` reads. Keep it out of the repository: GoEmotions' rows are not e3rg's.
``--embeddings-only`` adds or replaces the named models' embeddings in an existing file and keeps the
LLM's scores and the risk levels there.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from _common import ROOT, llm_threads, load_dev_set  # first: it puts the repository on sys.path
from emotion_classes import E3RG_SETS, load_goemotions

from e3rg_core.config import load_config
from e3rg_core.emotions import CANDIDATES, coarse_of
from e3rg_core.types import UserTurn
from e3rg_core.understanding.embedding import sentence_encoder
from e3rg_core.understanding.engine import _CONTENT_FREE, Understander, clean_text, clip_history
from e3rg_core.understanding.safety.text import canonical


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--llm", default="qwen1.5b", help="the LLM voter's profile")
    parser.add_argument("--embedders", default="all-minilm-l6-v2", help="comma-separated embedding models")
    parser.add_argument("--goemotions", type=Path)
    parser.add_argument("--splits", default="dev,train")
    parser.add_argument("--per-class", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", help="comma-separated set names to (re)compute")
    parser.add_argument("--embeddings-only", action="store_true",
                        help="keep only the embeddings (to measure another embedding model; the LLM is not run)")
    parser.add_argument("--llm-threads", type=int, default=1,
                        help="llama.cpp threads (1: on a shared 2-core machine two threads stall at barriers)")
    args = parser.parse_args()
    config = load_config(overrides={"understanding.voters": f"minilm,{args.llm}"})
    understander = Understander(config)
    s = understander.settings
    backend = understander._backends[args.llm]
    llm_threads(understander, args.llm_threads)
    encoders = {name: sentence_encoder(name) for name in args.embedders.split(",")}
    sets = {name.removesuffix(".jsonl"): [(i, t, coarse_of(g, map_name="hit")) for i, t, g in
                                          load_dev_set(ROOT / "bench" / "data" / name)] for name in E3RG_SETS}
    if args.goemotions:
        for split in args.splits.split(","):
            sets[f"goemotions_{split}"] = load_goemotions(args.goemotions, split, per_class=args.per_class,
                                                         seed=args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    content_free = None if args.embeddings_only else np.array([[backend.choice_logprobs(understander._emotion_messages(UserTurn(text=t), s.shots),
                                                      CANDIDATES)[c] for c in CANDIDATES] for t in _CONTENT_FREE])
    if content_free is not None:
        np.save(args.out / f"content_free_{args.llm}.npy", content_free)
    for name, items in sets.items():
        if args.only and name not in args.only.split(","):
            continue
        started = time.perf_counter()
        llm, risk, ids, golds, llm_s = [], [], [], [], []
        vectors: dict[str, list] = {e: [] for e in encoders}
        for n, (item_id, turn, gold) in enumerate(items):
            turn = UserTurn(text=clean_text(turn.text, max_chars=s.max_input_chars),
                            history=clip_history(turn.history, max_utterances=s.history_utterances))
            if not args.embeddings_only:
                t = time.perf_counter()
                logp = backend.choice_logprobs(understander._emotion_messages(turn, s.shots), CANDIDATES)
                llm_s.append(time.perf_counter() - t)
                llm.append([logp[c] for c in CANDIDATES])
                risk.append(understander.assess_risk(turn).level)
            previous = [u.text for u in turn.history if u.role == "speaker" and u.text.strip()]
            for e, encoder in encoders.items():
                v = [encoder.embed([canonical(t)])[0] for t in [turn.text] + previous[-1:]]  # as classify does
                vectors[e].append(np.stack([v[0], v[1] if len(v) > 1 else np.zeros_like(v[0])]))
            ids.append(str(item_id))
            golds.append(gold)
            if (n + 1) % 50 == 0:
                print(f"  {name}: {n + 1}/{len(items)}", flush=True)
        kept = {}
        if args.embeddings_only and (args.out / f"{name}.npz").is_file():
            kept = dict(np.load(args.out / f"{name}.npz"))
            if kept["ids"].tolist() != ids:
                raise SystemExit(f"{name}: the kept file holds other items; run without --embeddings-only")
        np.savez(args.out / f"{name}.npz", **{**kept, **dict(
                 ids=np.array(ids), golds=np.array(golds),
                 has_previous=np.array([bool(np.any(v[1])) for v in vectors[next(iter(encoders))]]),
                 **({} if args.embeddings_only else dict(risk=np.array(risk), llm=np.array(llm), llm_s=np.array(llm_s))),
                 **{f"emb_{e}": np.array(v) for e, v in vectors.items()})})
        print(f"{name}: {len(items)} items in {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
