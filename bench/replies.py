"""How often does the avatar say what a caring listener would not? The embedded responder answers
multi-turn conversations written for e3rg, turn after turn with its own replies in the history, and
each reply is checked by the fault detectors (``e3rg_core.understanding.faults``).

    python bench/replies.py [--set dev|dev2|...|dev11|heldout|heldout2] [--limit N] [--prompt emotion_aware|strategy|e3rg]
                            [--no-screen] [--no-openings] [--free] [--name NAME]

``bench/data/replies_dev.jsonl`` is for choosing what to change, ``replies_dev2.jsonl`` (15
conversations written later, by the engineer changing the composer) a second check that a change
carries beyond the set it was chosen on, ``replies_dev3.jsonl`` (33 conversations in styles the others
lack: texting and typos, mixed news, questions mid-conversation, quotations with "I" or "you" in them,
long messages, answers to the avatar's own question) a third, and ``replies_dev4.jsonl`` (36 conversations
written by someone who had read no code, measured before the changes made with it) a fourth, and ``replies_dev5.jsonl`` (40 conversations, 140 turns,
written the same way in issue 20's eighteenth pass) a fifth, ``replies_dev6.jsonl`` (40 conversations, 140 turns, the nineteenth pass) a sixth and ``replies_dev7.jsonl`` (the same size, the twentieth pass, measured before any change it led to) a seventh, ``replies_dev8.jsonl`` (40 conversations, 148 turns, the twenty-second pass, written by a helper who read no code and measured before any change) an eighth, ``replies_dev9.jsonl`` (40 conversations, 149 turns, the twenty-sixth pass, written the same way and measured first) a ninth, ``replies_dev10.jsonl`` (40 conversations, 159 turns, the twenty-eighth pass, the same way) a tenth, ``replies_dev11.jsonl`` (40 conversations, 175 turns, the twenty-ninth pass, the same way, with more turns where the news turns midway) an eleventh; ``replies_heldout.jsonl`` was written separately and is only
measured, as is ``replies_heldout2.jsonl`` (36 conversations written by a helper who read no code, first
measured in issue 20's tenth pass). The report gives the share of replies with any fault, each
detector's share (and the share among replies the risk detector left alone: no crisis response or
check-in, which are long on purpose and count as over the limit), Dist-1/2 (E3RG's per-response mean and over the corpus), the seconds to decide the
emotion and to write the reply, and every reply with its faults. Writes ``bench/reports/<NAME>.json``
(default ``replies_<set>``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

from _common import ROOT, llm_threads, machine, write_report

from e3rg_core.config import load_config
from e3rg_core.eval import metrics
from e3rg_core.types import Utterance, UserTurn
from e3rg_core.understanding import engine
from e3rg_core.understanding.engine import Understander
from e3rg_core.understanding.faults import DETECTORS, ReplyContext, faults

SETS = {name: ROOT / "bench" / "data" / f"replies_{name}.jsonl" for name in ("dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7", "dev8", "dev9", "dev10", "dev11", "heldout", "heldout2")}


def load(path: Path, limit: int | None, only: str | None = None) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if only:
        wanted = set(only.split(","))
        rows = [row for row in rows if row["id"] in wanted]
    return rows[:limit] if limit else rows


def summary(rows: list[dict]) -> dict:
    """The report's figures over ``rows``: the share with any fault, per detector, Dist-1/2."""
    replies = [r["reply"] for r in rows]
    written = [r for r in rows if r.get("risk", "none") in ("none", "care")]  # no crisis response, no check-in
    return {
        "any_fault_share": round(sum(bool(r["faults"]) for r in rows) / len(rows), 4),
        # the replies the model wrote alone: turns the risk detector left alone (none, or care)
        "any_fault_share_unflagged": round(sum(bool(r["faults"]) for r in written) / max(1, len(written)), 4),
        "unflagged_replies": len(written),
        "per_detector": {name: round(sum(name in r["faults"] for r in rows) / len(rows), 4) for name in DETECTORS},
        "guard_replaced_share": round(sum(bool(r["guarded"]) for r in rows) / len(rows), 4),
        "dist": {"e3rg_mean_per_response": {f"dist-{n}": metrics.distinct_e3rg(replies, n) for n in (1, 2)},
                 "corpus": {f"dist-{n}": metrics.distinct_corpus(replies, n) for n in (1, 2)}},
    }


def rescore(path: Path) -> None:
    """Apply today's detectors to the replies stored in an earlier report (same context as when run)."""
    report = json.loads(path.read_text(encoding="utf-8"))
    earlier: list[str] = []
    previous, conversation = "", None
    for row in report["rows"]:
        if row["conversation"] != conversation:
            earlier, previous, conversation = [], "", row["conversation"]
        ctx = ReplyContext(row["user"], news=row["news"], asks=row["asks"], earlier_user=tuple(earlier),
                           previous_reply=previous)
        row["faults"] = list(faults(row["reply"], ctx))
        earlier.append(row["user"])
        previous = row["reply"]
    report.update(summary(report["rows"]), rescored=True)
    print(json.dumps({k: report[k] for k in ("any_fault_share", "any_fault_share_unflagged", "per_detector")},
                     indent=1))
    write_report(path.stem, report)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--set", choices=sorted(SETS), default="dev")
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--only", metavar="IDS", help="only these conversations (comma-separated ids), for quick probes")
    parser.add_argument("--prompt", help="the reply prompt (default: the config's response_prompt)")
    parser.add_argument("--no-screen", action="store_true",
                        help="say every written sentence (no faulty sentence left out): the step before screening")
    parser.add_argument("--name", help="report name (default replies_<set>)")
    parser.add_argument("--no-openings", action="store_true", help="let the model begin every reply itself")
    parser.add_argument("--free", action="store_true",
                        help="let the model write each reply on from its opening (no composed reply: the step before)")
    parser.add_argument("--llm-threads", type=int,
                        help="llama.cpp threads (default: the config's; 1 on a 2-core machine others share)")
    parser.add_argument("--rescore", metavar="REPORT",
                        help="check the replies of an earlier report again with today's detectors (no model runs)")
    args = parser.parse_args()
    if args.rescore:
        rescore(Path(args.rescore))
        return
    config = load_config(environ={})
    if args.prompt:
        config = replace(config, understanding=replace(config.understanding, response_prompt=args.prompt))
    if args.no_screen:
        engine.SCREENED_FAULTS = ()
    if args.free:
        engine.COMPOSE = False
    if args.no_openings:
        config = replace(config, understanding=replace(config.understanding, openings=False))
    understander = Understander(config)
    llm_threads(understander, args.llm_threads)
    understander.understand(UserTurn(text="Hello there."))  # first-call allocations and the LLM's prior

    conversations = load(SETS[args.set], args.limit, args.only)
    rows, decide_s, reply_s = [], [], []
    for conversation in conversations:
        history: tuple[Utterance, ...] = ()
        earlier: list[str] = []
        previous = ""
        for turn in conversation["turns"]:
            start = time.perf_counter()
            decided = understander.decide(UserTurn(text=turn["text"], history=history))
            decided_at = time.perf_counter()
            reply = " ".join(understander.reply_sentences(decided))
            u = understander.finish(decided, reply, reply_s=time.perf_counter() - decided_at)
            decide_s.append(decided_at - start)
            reply_s.append(time.perf_counter() - decided_at)
            ctx = ReplyContext(turn["text"], news=turn["news"], asks=turn["asks"], earlier_user=tuple(earlier),
                               previous_reply=previous)
            found = faults(u.reply, ctx)
            rows.append({"conversation": conversation["id"], "topic": conversation["topic"], "user": turn["text"],
                         "news": turn["news"], "asks": turn["asks"], "emotion": u.emotion, "risk": u.risk.level,
                         "guarded": list(u.guarded), "reply": u.reply, "faults": list(found)})
            print(f"{conversation['id']} {','.join(found) or '-':30s} {u.reply[:90]}")
            history += (Utterance("speaker", turn["text"]), Utterance("listener", u.reply))
            earlier.append(turn["text"])
            previous = u.reply

    report = {
        "machine": machine(), "llm_threads": args.llm_threads, "set": args.set, "conversations": len(conversations), "replies": len(rows),
        "responder": config.understanding.responder, "prompt": config.understanding.response_prompt,
        "openings": config.understanding.openings,
        "screened": list(engine.SCREENED_FAULTS), "composed": engine.COMPOSE,
        **summary(rows),
        "seconds": {"decide_median": round(statistics.median(decide_s), 3),
                    "reply_median": round(statistics.median(reply_s), 3),
                    "reply_p90": round(sorted(reply_s)[int(0.9 * (len(reply_s) - 1))], 3)},
        "rows": rows,
    }
    print(json.dumps({k: report[k] for k in ("any_fault_share", "any_fault_share_unflagged", "per_detector", "dist",
                                             "seconds")}, indent=1))
    write_report(args.name or f"replies_{args.set}", report)


if __name__ == "__main__":
    main()
