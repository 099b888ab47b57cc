"""The summary of an evaluation run (metrics over the recorded items) and the paper-shaped table."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from e3rg_core.eval import metrics


def summarize(rows: Iterable[Mapping[str, Any]], *, settings: Mapping[str, Any], report: Mapping[str, Any],
              counts: Mapping[str, int], method: str) -> dict[str, Any]:
    """The metrics over every recorded item, with the settings, the load report and the counts."""
    rows = list(rows)
    ok = [r for r in rows if not r.get("error")]
    last = [r for r in ok if r.get("last_turn")]
    scored = [r for r in last if r.get("gold")]
    gold, pred = [r["gold"] for r in scored], [r["predicted"] for r in scored]
    emotion = {"protocol": "E3RG's HIT: one item per conversation, its last turn; items without a gold "
                           "label are left out; coarse classes under E3RG's hit map",
               "last_turns": len(last), "last_turns_without_gold": len(last) - len(scored),
               **metrics.emotion_report(gold, pred)}
    run_map = settings.get("emotion_map", metrics.HIT_MAP)
    if run_map != metrics.HIT_MAP:
        emotion[f"coarse_accuracy_{run_map}_map"] = metrics.hit_rate(gold, pred, map_name=run_map)
    summary: dict[str, Any] = {"method": method, "settings": dict(settings), "emotion": emotion}
    if any(not r.get("last_turn") for r in ok):
        labelled = [r for r in ok if r.get("gold")]
        summary["emotion_all_turns"] = metrics.emotion_report([r["gold"] for r in labelled],
                                                              [r["predicted"] for r in labelled])
    summary["dist"] = {
        "scope": "the replies of every item run" + (" (every turn, as E3RG computed Dist)"
                                                    if summary.get("emotion_all_turns") else " (last turns)"),
        "tokens": "lower-cased, stripped, split on whitespace (E3RG's)",
        "predicted": metrics.distinct_report([r["reply"] for r in ok]),
        "gold": metrics.distinct_report([r["gold_response"] for r in ok if r.get("gold_response")]),
    }
    seconds = [float(r.get("seconds", 0.0)) for r in ok]
    summary["counts"] = {**counts, "recorded": len(rows), "ok": len(ok), "failed": len(rows) - len(ok)}
    summary["seconds"] = {"total": round(sum(seconds), 3),
                          "mean_per_item": round(sum(seconds) / len(seconds), 3) if seconds else None}
    summary["load_report"] = dict(report)
    return summary


def _fmt(value: float | None, *, percent: bool = False) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.1f}" if percent else f"{value:.3f}"


def render_table(summary: Mapping[str, Any]) -> str:
    """The paper's table (HIT in %, Dist-n as E3RG reports it), a gold row, and what the numbers cover."""
    e3rg = summary["dist"]["predicted"]["e3rg_mean_per_response"]
    gold = summary["dist"]["gold"]["e3rg_mean_per_response"]
    corpus = summary["dist"]["predicted"]["corpus"]
    shots = summary["settings"].get("shots", "–")
    lines = ["| method | shots | HIT | Dist-1 | Dist-2 | Dist-3 |", "|---|---|---|---|---|---|",
             f"| {summary['method']} | {shots} | {_fmt(summary['emotion']['hit'], percent=True)} | "
             + " | ".join(_fmt(e3rg[f"dist-{n}"]) for n in (1, 2, 3)) + " |"]
    if summary["dist"]["gold"]["responses"]:
        cells = " | ".join(_fmt(gold[f"dist-{n}"]) for n in (1, 2, 3))
        lines.append(f"| gold responses (AvaMERG) | – | – | {cells} |")
    emotion = summary["emotion"]
    lines += [
        "",
        f"HIT (%): coarse-class accuracy under E3RG's hit map on the last turn of {emotion['items']} "
        f"conversations with a gold label ({emotion['last_turns_without_gold']} without one left out); "
        f"fine accuracy {_fmt(emotion['fine_accuracy'], percent=True)}, macro-F1 fine "
        f"{_fmt(emotion['macro_f1_fine'])}, coarse {_fmt(emotion['macro_f1_coarse'])}.",
        f"Dist-n: the mean of per-reply distinct-n ratios, as E3RG reports it, over "
        f"{summary['dist']['predicted']['responses']} replies; corpus-level distinct-1/2/3: "
        + " / ".join(_fmt(corpus[f"dist-{n}"]) for n in (1, 2, 3)) + ".",
    ]
    return "\n".join(lines) + "\n"
