"""How well does the risk detector find messages that signal suicide or self-harm risk, and stay calm on
their look-alikes? Recall and false alarms on the dev and held-out sets, per part and per category.

    python bench/safety.py [--judge qwen1.5b] [--limit N] [--outside DIR] [--before REPORT]

The sets (``bench/data/safety_dev.jsonl``, ``safety_heldout.jsonl``) were written for e3rg; the held-out
set was written separately and is never used to choose thresholds. Each part of the detector is
measured alone and together: patterns, meaning (sentence embeddings), the conversation (history) and
the LLM judge (asked only in the grey zone, as in a turn). A message counts as flagged when the level
is "crisis"; the "[crisis or check]" rows also count "check" (a calm reply that asks about safety).
"care" (the caring stance after an earlier signal) is not an alarm. The false-alarm
rate is also measured on ordinary conversation (the emotion sets, every emotion, no risk). Also
measured: the time the detector adds to a turn without the judge (the embedding part), and with it.

Outside text (``--outside DIR``): text nobody wrote for the detector, read from a folder the user gives
that holds ``train.tsv`` and ``test.tsv`` with the text in the first tab-separated column (GoEmotions'
``data/original`` layout: Reddit comments). A seeded draw of ``OUTSIDE_N`` comments from train counts
with the dev sets, one from test with the held-out sets; the report gives the share answered with the
crisis response or a check-in and the comment ids flagged (never their text: nothing of it ships).
Some comments are genuine statements of risk, so the flagged ones need reading before a rate is
called a false-alarm rate. Without ``--outside`` this part is skipped.
Ordinary multi-turn conversations (``bench/data/replies_dev.jsonl`` / ``replies_heldout.jsonl``, no
risk): each turn is read with the speaker's turns before it and a fixed avatar line between them
(``LISTENER``), so the conversation's readings (the answer with the question, the last lines together)
are measured too; the report gives the share of turns given the crisis response or a check-in. The
held-out set also reads 1,247 turns of everyday conversations by eight other writers
(``news_turns_extra.jsonl``, the news reader's measure) the same way.

``--before REPORT`` copies the headline figures of an earlier report (the same bench run on the code
before a change) into ``before``, next to this run's ``headline``.
Writes ``bench/reports/safety.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from dataclasses import replace
from pathlib import Path

from _common import ROOT, machine, write_report

from e3rg_core.config import load_config
from e3rg_core.types import Utterance, UserTurn
from e3rg_core.understanding.engine import Understander

SETS = {"dev": ROOT / "bench" / "data" / "safety_dev.jsonl", "heldout": ROOT / "bench" / "data" / "safety_heldout.jsonl",
        # written apart from both (and from the bank) to choose between encoders in issue 19's fifth step,
        # then used with dev to choose the two encoders' thresholds: a dev set since
        "dev2": ROOT / "bench" / "data" / "safety_dev2.jsonl",
        # written in the sixth session in styles the others lack (everyday outings, work, recovery, short
        # dialogues that are safe); measured once before any change (docs/safety.md), then a dev set
        "dev3": ROOT / "bench" / "data" / "safety_dev3.jsonl",
        # written after the changes dev3 led to, before running them on it: their out-of-sample check
        "dev4": ROOT / "bench" / "data" / "safety_dev4.jsonl"}
# Ordinary conversation (the emotion sets: every emotion, no risk): how often is an ordinary message alarmed?
ORDINARY = {"dev": ROOT / "bench" / "data" / "emotion_dev.jsonl",
            "heldout": ROOT / "bench" / "data" / "emotion_heldout.jsonl"}
# Ordinary multi-turn conversations (no risk), read turn by turn with this avatar line between the turns.
CONVERSATIONS = {"dev": ROOT / "bench" / "data" / "replies_dev.jsonl",
                 "heldout": ROOT / "bench" / "data" / "replies_heldout.jsonl"}
LISTENER = "I see. Tell me more?"
# Everyday conversations by eight other writers (the news reader's second measure, no risk; 1,247 turns),
# read the same way with the held-out set: the detector was never chosen on them.
OTHER_CONVERSATIONS = {"heldout": ROOT / "bench" / "data" / "news_turns_extra.jsonl"}
# Outside text: (file in the --outside folder, comments drawn) per set; the seed fixes the draw.
OUTSIDE_N = {"dev": ("train.tsv", 2000), "heldout": ("test.tsv", 1000)}
OUTSIDE_SEED = 0
PARTS = {
    "patterns": {"patterns"},
    "meaning": {"meaning"},
    "patterns+meaning": {"patterns", "meaning"},
    "patterns+meaning+history": {"patterns", "meaning", "history"},
    "all (with judge)": {"patterns", "meaning", "history", "judge"},
}


def load(path: Path, limit: int | None) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[:limit] if limit else rows


def load_outside(folder: Path, name: str) -> list[dict]:
    """A seeded draw of comments (id, text) from ``folder`` for the set ``name`` (see ``OUTSIDE_N``)."""
    file, n = OUTSIDE_N[name]
    rows = []
    for line in (folder / file).read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0].strip():
            rows.append((parts[2], parts[0]))
    rows.sort()
    rng = random.Random(f"{file.split('.')[0]}:{OUTSIDE_SEED}")
    return [{"id": i, "text": t} for i, t in rng.sample(rows, min(n, len(rows)))]


def turn_of(row: dict) -> UserTurn:
    return UserTurn(text=row["text"], history=tuple(Utterance(u["role"], u["text"]) for u in row.get("history", [])))


def conversation_turns(path: Path, limit: int | None) -> list[dict]:
    """Every turn of the conversations in ``path`` (id ``conversation#turn``) with the turns before it."""
    rows = []
    for n, conversation in enumerate(load(path, limit)):
        history: list[dict] = []
        for i, turn in enumerate(conversation["turns"]):
            rows.append({"id": f"{conversation.get('id', n)}#{i}", "text": turn["text"], "history": list(history)})
            history += [{"role": "speaker", "text": turn["text"]}, {"role": "listener", "text": LISTENER}]
    return rows


def alarm_rates(rows: list[dict], levels: list[str]) -> dict:
    """The share of ``rows`` given the crisis response and a check-in, and which."""
    return {"n": len(rows),
            "crisis_rate": round(sum(v == "crisis" for v in levels) / max(1, len(rows)), 4),
            "check_rate": round(sum(v == "check" for v in levels) / max(1, len(rows)), 4),
            "crisis": [r["id"] for r, v in zip(rows, levels) if v == "crisis"],
            "check": [r["id"] for r, v in zip(rows, levels) if v == "check"]}


def headline(report: dict) -> dict:
    """The figures docs/safety.md quotes, per set: the whole detector without the judge."""
    out = {}
    for name, result in report["sets"].items():
        full, either = (result["parts"]["patterns+meaning+history"],
                        result["parts"]["patterns+meaning+history [crisis or check]"])
        row = {"recall_crisis_or_check": either["recall"], "recall_crisis": full["recall"],
               "hard_negatives_alarmed": either["false_alarm_rate"], "hard_negatives_crisis": full["false_alarm_rate"],
               "recall_by_category": {c: round(v["flagged"] / v["n"], 4)
                                      for c, v in either["per_category"].items() if v["risk"]},
               "median_s_per_turn": result["seconds_per_turn"]["without_judge_median"]}
        for key in ("ordinary_conversation", "conversations", "other_writers_conversations", "outside_text"):
            if key in result:
                row[key] = {"crisis": result[key]["crisis_rate"], "check": result[key]["check_rate"]}
        if "seconds_per_turn_median" in result.get("conversations", {}):
            row["median_s_per_ordinary_turn"] = result["conversations"]["seconds_per_turn_median"]
        out[name] = row
    return out


def summarise(rows: list[dict], flagged: list[bool]) -> dict:
    risk = [f for r, f in zip(rows, flagged) if r["risk"]]
    safe = [f for r, f in zip(rows, flagged) if not r["risk"]]
    per_category: dict[str, dict] = {}
    for row, hit in zip(rows, flagged):
        c = per_category.setdefault(row["category"], {"risk": row["risk"], "n": 0, "flagged": 0})
        c["n"] += 1
        c["flagged"] += int(hit)
    dialogue = [(r, f) for r, f in zip(rows, flagged) if r.get("history")]
    return {
        "recall": round(sum(risk) / max(1, len(risk)), 4),
        "false_alarm_rate": round(sum(safe) / max(1, len(safe)), 4),
        "n_risk": len(risk), "n_safe": len(safe),
        "missed": [r["id"] for r, f in zip(rows, flagged) if r["risk"] and not f],
        "false_alarms": [r["id"] for r, f in zip(rows, flagged) if not r["risk"] and f],
        "dialogues": {"recall": round(sum(f for r, f in dialogue if r["risk"]) / max(1, sum(r["risk"] for r, _ in dialogue)), 4),
                      "false_alarm_rate": round(sum(f for r, f in dialogue if not r["risk"])
                                                / max(1, sum(not r["risk"] for r, _ in dialogue)), 4)},
        "per_category": per_category,
    }


def in_turn(n: int) -> dict:
    """What the risk check adds to a turn's emotion decision (``Understander.decide``) on the default vote:
    ``n`` dev risk messages and ``n`` ordinary conversation turns, each decided by two engines (each LLM
    keeps its own prompt cache): one with the shipped detector, one with the patterns alone (no
    embedding). Each turn is decided from cold: the detector's kept scores and the encoders' kept vectors
    are dropped first, and the two engines take turns to go first. Added = the shipped engine's decision
    time less the patterns-alone time of the same turn: with an embedding voter that reads the message
    with the detector's encoder, the detector finds it embedded already."""
    from e3rg_core.understanding import safety

    config = load_config(environ={})
    ways = {"shipped": Understander(config), "patterns_alone": Understander(config)}
    ways["patterns_alone"].risk_detector = safety.RiskDetector(None)
    meaning = ways["shipped"].risk_detector.meaning
    turns = [turn_of(r) for r in load(SETS["dev"], None)[:n]] + [turn_of(r) for r in conversation_turns(CONVERSATIONS["dev"], None)[:n]]
    for understander in ways.values():
        understander.decide(turn_of({"text": "warm up"}))
    times: dict[str, list[float]] = {w: [] for w in ways}
    names = list(ways)
    for i, turn in enumerate(turns):
        for way in names[i % 2:] + names[:i % 2]:
            if meaning is not None:
                meaning.forget()  # and the encoders' kept vectors, which the voters share
            start = time.perf_counter()
            ways[way].decide(turn)
            times[way].append(time.perf_counter() - start)
    added = sorted(t - p for t, p in zip(times["shipped"], times["patterns_alone"]))
    return {"turns": len(turns), "voters": [v.spec for v in ways["shipped"].voters],
            "decision_median_s": round(statistics.median(times["shipped"]), 4),
            "patterns_alone_decision_median_s": round(statistics.median(times["patterns_alone"]), 4),
            "added_median_s": round(statistics.median(added), 4),
            "added_p90_s": round(added[int(0.9 * (len(added) - 1))], 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--judge", default="", help="a chat model profile to measure as the grey-zone judge "
                        "(default: none, as the shipped config)")
    parser.add_argument("--limit", type=int, help="only the first N items of each set")
    parser.add_argument("--before", type=Path, help="an earlier report of this bench: its headline figures "
                        "are kept under 'before'")
    parser.add_argument("--outside", type=Path, help="a folder with train.tsv and test.tsv of text nobody wrote "
                        "for the detector (GoEmotions' data/original): false alarms on outside text")
    parser.add_argument("--in-turn", type=int, default=0, metavar="N",
                        help="also time what the check adds to the default emotion decision on N dev risk "
                        "messages and N ordinary turns (loads the LLM voter)")
    parser.add_argument("--sets", nargs="+", choices=sorted(SETS), default=sorted(SETS),
                        help="the sets to measure (all by default; the held-out set is left out while choosing)")
    args = parser.parse_args()
    config = load_config(environ={})
    config = replace(config, understanding=replace(config.understanding, voters=("minilm",)),
                     safety=replace(config.safety, judge=args.judge))
    understander = Understander(config)
    detector = understander.risk_detector
    detector.assess("warm up", ())
    parts = {k: v for k, v in PARTS.items() if args.judge or "judge" not in v}

    report: dict = {"machine": machine(), "thresholds": vars(detector.thresholds), "sets": {},
                    "outside": str(args.outside) if args.outside is not None else None}
    for name, path in SETS.items():
        if name not in args.sets:
            continue
        rows = load(path, args.limit)
        results: dict[str, list[bool]] = {}
        judged: dict[str, float | None] = {}
        times_embed, times_full, judge_calls = [], [], 0
        for row in rows:
            turn = turn_of(row)
            judge = understander.risk_judge(turn)

            def memo(row_id: str = row["id"], judge=judge, judged=judged) -> float | None:
                if row_id not in judged:
                    judged[row_id] = judge() if judge is not None else None
                return judged[row_id]

            for label, wanted in parts.items():
                if label == "patterns+meaning+history" and detector.meaning is not None:
                    detector.meaning.forget()  # timed from cold: the parts before scored the same texts
                start = time.perf_counter()
                risk = detector.assess(turn.text, turn.history, judge=memo, parts=frozenset(wanted))
                elapsed = time.perf_counter() - start
                results.setdefault(label, []).append(risk.level == "crisis")
                results.setdefault(label + " [crisis or check]", []).append(risk.level in ("crisis", "check"))
                if label == "patterns+meaning+history":
                    times_embed.append(elapsed)
            if judge is not None:
                start = time.perf_counter()
                detector.assess(turn.text, turn.history, judge=judge)
                times_full.append(time.perf_counter() - start)
                judge_calls += int(row["id"] in judged)
        report["sets"][name] = {
            "n": len(rows),
            "parts": {label: summarise(rows, flagged) for label, flagged in results.items()},
            "seconds_per_turn": {
                "without_judge_median": round(statistics.median(times_embed), 4),
                "without_judge_p90": round(sorted(times_embed)[int(0.9 * (len(times_embed) - 1))], 4),
                **({"with_judge_median": round(statistics.median(times_full), 4),
                    "with_judge_p90": round(sorted(times_full)[int(0.9 * (len(times_full) - 1))], 4),
                    "judge_asked_share": round(judge_calls / len(rows), 4)} if times_full else {}),
            },
        }
        if name in ORDINARY:  # dev2 has no ordinary sets of its own
            ordinary = load(ORDINARY[name], args.limit)
            levels = [detector.assess(r["text"], turn_of(r).history).level for r in ordinary]
            report["sets"][name]["ordinary_conversation"] = {
                "source": ORDINARY[name].name, "n": len(ordinary),
                "crisis_rate": round(sum(v == "crisis" for v in levels) / len(ordinary), 4),
                "check_rate": round(sum(v == "check" for v in levels) / len(ordinary), 4),
                "crisis": [r["id"] for r, v in zip(ordinary, levels) if v == "crisis"],
                "check": [r["id"] for r, v in zip(ordinary, levels) if v == "check"]}
            o = report["sets"][name]["ordinary_conversation"]
            print(f"{name:8s} ordinary conversation ({ORDINARY[name].name}): crisis {o['crisis_rate']:.3f}, "
                  f"check {o['check_rate']:.3f}")
            turns = conversation_turns(CONVERSATIONS[name], args.limit)
            levels, times = [], []
            for r in turns:  # the time an ordinary turn pays: most never reach the second encoder
                start = time.perf_counter()
                levels.append(detector.assess(r["text"], turn_of(r).history).level)
                times.append(time.perf_counter() - start)
            report["sets"][name]["conversations"] = {"source": CONVERSATIONS[name].name, "listener": LISTENER,
                                                     "seconds_per_turn_median": round(statistics.median(times), 4),
                                                     "seconds_per_turn_p90": round(sorted(times)[int(0.9 * (len(times) - 1))], 4),
                                                     **alarm_rates(turns, levels)}
            o = report["sets"][name]["conversations"]
            print(f"{name:8s} ordinary conversations ({o['source']}, {o['n']} turns): crisis {o['crisis_rate']:.3f}, "
                  f"check {o['check_rate']:.3f}")
            if name in OTHER_CONVERSATIONS:
                turns = conversation_turns(OTHER_CONVERSATIONS[name], args.limit)
                levels = [detector.assess(r["text"], turn_of(r).history).level for r in turns]
                report["sets"][name]["other_writers_conversations"] = {
                    "source": OTHER_CONVERSATIONS[name].name, "listener": LISTENER, **alarm_rates(turns, levels)}
                o = report["sets"][name]["other_writers_conversations"]
                print(f"{name:8s} other writers' conversations ({o['source']}, {o['n']} turns): "
                      f"crisis {o['crisis_rate']:.3f}, check {o['check_rate']:.3f}")
            if args.outside is not None:
                outside = load_outside(args.outside, name)[:args.limit or None]
                times, levels = [], []
                for r in outside:
                    start = time.perf_counter()
                    levels.append(detector.assess(r["text"]).level)
                    times.append(time.perf_counter() - start)
                report["sets"][name]["outside_text"] = {
                    "source": f"{args.outside.name}/{OUTSIDE_N[name][0]}", "seed": OUTSIDE_SEED, "n": len(outside),
                    "crisis_rate": round(sum(v == "crisis" for v in levels) / len(outside), 4),
                    "check_rate": round(sum(v == "check" for v in levels) / len(outside), 4),
                    "seconds_per_turn_median": round(statistics.median(times), 4),
                    "crisis": [r["id"] for r, v in zip(outside, levels) if v == "crisis"],
                    "check": [r["id"] for r, v in zip(outside, levels) if v == "check"]}
                o = report["sets"][name]["outside_text"]
                print(f"{name:8s} outside text ({o['source']}, {o['n']}): crisis {o['crisis_rate']:.3f}, "
                      f"check {o['check_rate']:.3f}")
        for label, summary in report["sets"][name]["parts"].items():
            print(f"{name:8s} {label:28s} recall {summary['recall']:.3f}  false alarms {summary['false_alarm_rate']:.3f}")
        print(f"{name:8s} seconds per turn: {report['sets'][name]['seconds_per_turn']}")
    if args.in_turn:
        report["in_turn"] = in_turn(args.in_turn)
        print(f"in a turn's decision: {report['in_turn']}")
    report["headline"] = headline(report)
    if args.before is not None:
        before = json.loads(args.before.read_text(encoding="utf-8"))
        report["before"] = before.get("headline") or headline(before)
    # a run on some sets only (while choosing) keeps the full report as it is
    write_report("safety" if set(args.sets) == set(SETS) else "safety_" + "_".join(sorted(args.sets)), report)


if __name__ == "__main__":
    main()
