"""Re-score vote variants from the per-voter outputs that ``bench/emotion_voters.py`` kept: no LLM run.

    python bench/emotion_rescore.py --cache /tmp/e3rg-emotion-cache [--voters minilm,mpnet,qwen1.5b] [--name emotion_rescore]

The voters and their weights default to the config's (``understanding.voters``): embedding voters
(``minilm``, ``mpnet``) and one LLM voter; ``--llm-weight`` overrides the LLM's weight.

Each embedding voter's classifier is built from the prototypes in this tree (``--leave-out`` drops
messages from its bank, to measure what they bring) and applied to its model's kept embeddings; the LLM
voter's raw label scores are calibrated as ``Understander._calibrated`` does (``calibrate`` below
mirrors it, its defaults the engine's; a unit test holds the two together); the voters are combined
by the engine's own ``soft_vote``; the risk detector's kept level applies the crisis rule
(``--no-crisis-rule`` leaves it out). Prints per-set accuracy, neutral recall, contempt answered and
the confusion, and writes them as a report when ``--name`` is given.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from _common import write_report  # first: it puts the repository on sys.path
from _classes import class_report, format_report

from e3rg_core.config import load_config
from e3rg_core.emotions import CANDIDATES, COARSE, coarse_of
from e3rg_core.types import EmotionVote
from e3rg_core.understanding import voting
from e3rg_core.understanding.voting import soft_vote
from e3rg_core.voters import parse_voter

SETS = ("emotion_dev", "emotion_broad_dev", "emotion_heldout", "emotion_broad_heldout",
        "goemotions_dev", "goemotions_train", "goemotions_test")
CLASS_OF = np.array([COARSE.index(coarse_of(c, map_name="hit")) for c in CANDIDATES])


def load(cache: Path, name: str) -> dict | None:
    path = cache / f"{name}.npz"
    return dict(np.load(path)) if path.is_file() else None


def calibrate(llm: np.ndarray, content_free: np.ndarray, *, neutral_shift: float = 2.0,
              sharpen: float = 1.0) -> np.ndarray:
    """Calibrated label probabilities ``(n, 36)`` from raw log-probabilities, as the engine calibrates."""
    prior = np.log(np.exp(content_free).mean(axis=0))
    n = CANDIDATES.index("neutral")
    prior[n] = np.delete(prior, n).mean() - neutral_shift
    adjusted = sharpen * (np.atleast_2d(llm) - prior)
    adjusted -= adjusted.max(axis=1, keepdims=True)
    p = np.exp(adjusted)
    return p / p.sum(axis=1, keepdims=True)


def embedding_probs(clf, data: dict, model: str = "all-minilm-l6-v2") -> np.ndarray:
    vectors = data[f"emb_{model}"]
    out = []
    for v, has_prev in zip(vectors, data["has_previous"]):
        scores = clf.classify_vectors(v[0], v[1] if has_prev else None)
        out.append([scores[c] for c in CANDIDATES])
    return np.array(out)


def decide(emb: np.ndarray | None, llm: np.ndarray | None, risk, *, llm_weight: float,
           crisis_rule: bool = True, class_vote: bool = True,
           more: tuple[tuple[np.ndarray, float], ...] = ()) -> list[str]:
    """The coarse class per item: the engine's soft vote (the embedding voters their class heads), then
    its crisis rule; ``class_vote=False``: the plain product over the labels, as before issue 21's third
    pass. ``emb`` is the first embedding voter (weight 1), ``more`` further ones with their weights."""
    preds = []
    voters = (("emb", emb, 1.0), *((f"emb{j}", p, w) for j, (p, w) in enumerate(more, start=2)), ("llm", llm, llm_weight))
    heads = {name for name, _, _ in voters if name != "llm"}
    for i in range(len(risk)):
        votes, weights = [], {}
        for name, probs, w in voters:
            if probs is not None and w > 0:
                votes.append(EmotionVote(name, "neutral", "", True, 0.0, dict(zip(CANDIDATES, probs[i].tolist()))))
                weights[name] = w
        coarse = soft_vote(votes, weights=weights, class_heads=heads if class_vote else None).coarse
        if crisis_rule and risk[i] == "crisis" and coarse not in ("sad", "fear"):
            coarse = "sad"
        preds.append(coarse)
    return preds


def _without(factory, leave_out: Path):
    """The classifier built with the messages in ``leave_out`` dropped from its bank."""
    import json

    from e3rg_core.understanding import embedding

    drop = json.loads(leave_out.read_text("utf-8"))
    load = embedding.load_utterances
    embedding.load_utterances = lambda: {k: tuple(u for u in v if u not in set(drop.get(k, ())))
                                         for k, v in load().items()}
    try:
        return factory()
    finally:
        embedding.load_utterances = load


def main() -> None:
    from e3rg_core.understanding.embedding import EmbeddingClassifier

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--voters", help="comma-separated voters, as the config names them (default: the config's)")
    parser.add_argument("--llm-weight", type=float, help="default: the LLM voter's weight in --voters")
    parser.add_argument("--llm-neutral-shift", type=float, default=2.0, help="nats below the others' mean prior (the engine's)")
    parser.add_argument("--llm-sharpen", type=float, default=1.0,
                        help="x the calibrated log-probabilities (the engine: 1; its weight is the knob)")
    parser.add_argument("--leave-out", type=Path, help="JSON {label: [messages]} left out of the embedding bank")
    parser.add_argument("--no-crisis-rule", action="store_true")
    parser.add_argument("--class-factor", type=float,
                        help="the LLM's factor in the class vote (default: voting.LABEL_SCORER_CLASS_FACTOR)")
    parser.add_argument("--no-class-vote", action="store_true",
                        help="choose the feeling by the plain product over the labels (the vote before the class vote)")
    parser.add_argument("--name", help="write bench/reports/<name>.json")
    args = parser.parse_args()
    if args.class_factor is not None:
        voting.LABEL_SCORER_CLASS_FACTOR = args.class_factor
    config = load_config(overrides={"understanding.voters": args.voters})
    embedders, llms = [], []
    for voter in map(parse_voter, config.understanding.voters):
        profile = config.profile(voter.profile)
        (embedders if profile.backend == "embedding" else llms).append((voter, profile.model))
    if not embedders or len(llms) != 1:
        raise SystemExit("--voters: one or more embedding voters and one LLM voter")
    llm_voter = llms[0][0]
    args.llm = llm_voter.profile
    if args.llm_weight is None:
        args.llm_weight = llm_voter.weight
    classifiers = [(model, voter.weight, EmbeddingClassifier(model) if args.leave_out is None
                    else _without(lambda m=model: EmbeddingClassifier(m), args.leave_out))
                   for voter, model in embedders]
    content_free = np.load(args.cache / f"content_free_{args.llm}.npy")
    report: dict = {"benchmark": "emotion_rescore",
                    "voters": [v.spec for v, _ in embedders] + [f"{args.llm}*{args.llm_weight}"],
                    "llm_neutral_shift": args.llm_neutral_shift,
                    "class_factor": voting.LABEL_SCORER_CLASS_FACTOR, "llm_sharpen": args.llm_sharpen,
                    "left_out": str(args.leave_out or ""), "crisis_rule": not args.no_crisis_rule,
                    "class_vote": not args.no_class_vote, "sets": {}}
    for name in SETS:
        data = load(args.cache, name)
        if data is None:
            continue
        probs = [(embedding_probs(clf, data, model), w) for model, w, clf in classifiers]
        llm = calibrate(data["llm"], content_free, neutral_shift=args.llm_neutral_shift, sharpen=args.llm_sharpen)
        (emb, first_weight), more = probs[0], tuple(probs[1:])
        if first_weight != 1.0:
            raise SystemExit("give the first embedding voter weight 1; weigh the others against it")
        preds = decide(emb, llm, data["risk"], llm_weight=args.llm_weight, crisis_rule=not args.no_crisis_rule,
                       class_vote=not args.no_class_vote, more=more)
        result = class_report(list(data["golds"]), preds)
        result["crisis_items"] = int((data["risk"] == "crisis").sum())
        result["median_llm_s"] = round(float(np.median(data["llm_s"])), 3)
        report["sets"][name] = result
        print(format_report(name, result), flush=True)
    if args.name:
        write_report(args.name, report)


if __name__ == "__main__":
    main()
