"""Per-class emotion figures of the engine's own decision, on e3rg's sets or on GoEmotions.

    python bench/emotion_classes.py [--voters minilm,qwen1.5b*0.5]           # e3rg's labelled sets
    python bench/emotion_classes.py --goemotions DIR [--splits dev,train] [--per-class 40]

Every item goes through ``Understander.decide`` (the voters, the vote and the safety rule, as in the
app), and the coarse class it decides is compared with the gold class: accuracy, recall and
precision per class, the confusion matrix, how often each class is answered (contempt above all)
and the median decision time. e3rg's sets are scored under the "hit" map (HIT).

GoEmotions (Demszky et al. 2020, Reddit comments, 27 emotions + neutral) is read from ``DIR``, a
folder holding the release's ``train.tsv`` / ``dev.tsv`` / ``test.tsv``, ``emotions.txt`` (the 28
label names, one a line, in id order) and ``ekman_mapping.json`` (the release's own map from its
labels to Ekman's six): nothing of it ships with e3rg. A comment counts when all its labels fall in
one Ekman class (or it is only neutral); ``--per-class`` such comments are drawn per class with a
fixed seed. Ekman's names become e3rg's coarse classes (joy -> happy, sadness -> sad ...); e3rg's
eighth class, contempt, has no gold item there, so answering it is always wrong.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from _common import ROOT, llm_threads, load_dev_set, machine, write_report  # first: it puts the repository on sys.path
from _classes import class_report, format_report

from e3rg_core.config import load_config
from e3rg_core.emotions import coarse_of
from e3rg_core.types import UserTurn
from e3rg_core.understanding.engine import Understander

E3RG_SETS = ("emotion_dev.jsonl", "emotion_heldout.jsonl", "emotion_broad_dev.jsonl",
             "emotion_broad_heldout.jsonl")
EKMAN_TO_COARSE = {"anger": "angry", "disgust": "disgusted", "fear": "fear", "joy": "happy",
                   "sadness": "sad", "surprise": "surprised", "neutral": "neutral"}


def load_goemotions(folder: Path, split: str, *, per_class: int, seed: int) -> list[tuple[str, UserTurn, str]]:
    """(comment id, turn, coarse gold) for a class-balanced draw from one GoEmotions split."""
    names = [line.strip() for line in (folder / "emotions.txt").read_text("utf-8").splitlines() if line.strip()]
    ekman = json.loads((folder / "ekman_mapping.json").read_text("utf-8"))
    to_class = {label: cls for cls, labels in ekman.items() for label in labels}
    to_class["neutral"] = "neutral"
    by_class: dict[str, list[tuple[str, str]]] = {cls: [] for cls in EKMAN_TO_COARSE}
    for line in (folder / f"{split}.tsv").read_text("utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or not parts[0].strip():
            continue
        classes = {to_class[names[int(i)]] for i in parts[1].split(",")}
        if len(classes) == 1:
            by_class[classes.pop()].append((parts[2], parts[0]))
    rng = random.Random(f"{split}:{seed}")
    items = []
    for cls in EKMAN_TO_COARSE:
        pool = sorted(by_class[cls])
        for comment_id, text in rng.sample(pool, min(per_class, len(pool))):
            items.append((comment_id, UserTurn(text=text), EKMAN_TO_COARSE[cls]))
    return items


def decide_all(understander: Understander, items: list) -> tuple[list[str], list[float], list[dict]]:
    preds, seconds, rows = [], [], []
    for i, (item_id, turn, gold) in enumerate(items):
        u = understander.decide(turn).decision
        preds.append(u.coarse)
        seconds.append(u.timings_s["emotion_s"])
        rows.append({"id": item_id, "gold": gold, "pred": u.coarse, "label": u.emotion})
        if (i + 1) % 50 == 0:
            print(f"  {i + 1}/{len(items)}", flush=True)
    return preds, seconds, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--voters", help="comma-separated voters (default: the config's)")
    parser.add_argument("--config")
    parser.add_argument("--goemotions", type=Path, help="folder of the GoEmotions release (see above)")
    parser.add_argument("--splits", default="dev,train")
    parser.add_argument("--per-class", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sets", default=",".join(E3RG_SETS), help="e3rg sets in bench/data")
    parser.add_argument("--name", help="report name (default: emotion_classes or emotion_public)")
    parser.add_argument("--llm-threads", type=int,
                        help="llama.cpp threads (default: the config's; 1 on a 2-core machine others share)")
    args = parser.parse_args()
    config = load_config(args.config, overrides={"understanding.voters": args.voters})
    understander = Understander(config)
    llm_threads(understander, args.llm_threads)
    understander.decide(UserTurn(text="Warming up."))  # first-call allocations and the LLM's prior
    report: dict = {"benchmark": "emotion_classes", "machine": machine(), "llm_threads": args.llm_threads,
                    "voters": list(config.understanding.voters), "vote_method": config.understanding.vote_method,
                    "sets": {}}
    if args.goemotions:
        report.update(benchmark="emotion_public", source="GoEmotions (Ekman classes + neutral, single-class comments)",
                      per_class=args.per_class, seed=args.seed)
        sets = {split: load_goemotions(args.goemotions, split, per_class=args.per_class, seed=args.seed)
                for split in args.splits.split(",")}
    else:
        sets = {}
        for name in args.sets.split(","):
            path = ROOT / "bench" / "data" / name
            if path.is_file():
                sets[name] = [(i, turn, coarse_of(gold, map_name="hit")) for i, turn, gold in load_dev_set(path)]
    started = time.perf_counter()
    for name, items in sets.items():
        print(f"{name}: {len(items)} items", flush=True)
        preds, seconds, rows = decide_all(understander, items)
        result = class_report([gold for _, _, gold in items], preds, seconds=seconds)
        result["rows"] = rows
        report["sets"][name] = result
        print(format_report(name, result), flush=True)
    report["bench_wall_s"] = round(time.perf_counter() - started, 1)
    write_report(args.name or ("emotion_public" if args.goemotions else "emotion_classes"), report)


if __name__ == "__main__":
    main()
