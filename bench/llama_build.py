"""Prompt and decode speed of llama.cpp builds on this machine: the native build against the portable one.

    python bench/llama_build.py --build native=.venv/bin/python --build portable=/tmp/v/bin/python [--rounds 3]

Each ``--build LABEL=PYTHON`` names the interpreter of a virtual environment that has its own
llama-cpp-python build (only llama_cpp is imported there). For each build this script starts that
interpreter on this very file in worker mode, which loads the embedded Qwen2.5-Coder-1.5B GGUF
(assembled once in the e3rg cache by this venv), reads a fixed prompt of 266 tokens (Qwen2.5) and decodes
64 tokens greedily, ``--runs`` times with the KV cache cleared between runs; the builds take turns for
``--rounds`` rounds. It records the medians over all runs:
prompt tokens/s (the prompt's tokens over the time to the first new token) and decode tokens/s (the
63 tokens after the first over their time), the load time, and llama.cpp's own system info line
(which SIMD it was compiled with). A worker that dies of a signal is recorded as a crash (a
segmentation fault is exit -11): that is what a build with Intel AMX instructions does here.

Writes ``bench/reports/llama_build.json`` (``--out NAME`` for another name), with each build's speed
relative to the first one named and the load averages before and after. The CPU cores may be shared
with other work: builds are measured one at a time, in turns, and the load averages say how busy it was.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

N_DECODE = 64
N_CTX = 2048
# a fixed prompt of 266 tokens (Qwen2.5), shaped like a turn's: instructions, a short dialogue, the message
PROMPT = (
    "You are a warm, patient listener. Answer in two short sentences, in plain words, and ask at most one "
    "question. Do not give advice unless you are asked for it.\n\n"
    + "".join(
        f"Speaker: {line}\nListener: I hear you. Tell me more about that.\n"
        for line in (
            "I moved to a new city last month for work and I still do not know anyone here.",
            "The job is fine, but the evenings are long and the flat is very quiet.",
            "My sister calls on Sundays, which helps, but she has two small children and little time.",
            "I tried a climbing gym on Tuesday. Everyone seemed to know each other already.",
            "I keep telling myself that it takes a year to feel at home somewhere new.",
            "Today a colleague asked me to lunch for the first time, and I said yes before I could think.",
        )
    )
    + "Speaker: We talked for an hour about hiking and she invited me to walk with her friends on Saturday. "
    "I am excited, and a little nervous that I will not fit in.\nListener:"
)


def worker(model: Path, runs: int, threads: int) -> dict:
    """Measure the llama_cpp importable here (another venv's build); returns the worker's report."""
    import llama_cpp

    started = time.perf_counter()
    llm = llama_cpp.Llama(model_path=str(model), n_ctx=N_CTX, n_threads=threads, n_batch=512, seed=0,
                          verbose=False)
    load_s = time.perf_counter() - started
    tokens = llm.tokenize(PROMPT.encode("utf-8"))
    rows = []
    for _ in range(runs):
        llm.reset()  # n_tokens = 0: the next evaluation starts at position 0, nothing of the last run is reused
        start = time.perf_counter()
        generated = llm.generate(tokens, temp=0.0, top_k=1, reset=True)
        next(generated)
        first = time.perf_counter()
        for _, _token in zip(range(N_DECODE - 1), generated):
            pass
        end = time.perf_counter()
        generated.close()
        rows.append({"prompt_tok_s": len(tokens) / (first - start), "decode_tok_s": (N_DECODE - 1) / (end - first)})
    info = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
    return {
        "llama_cpp_python": llama_cpp.__version__,
        "library": str(Path(llama_cpp.__file__).parent / "lib"),
        "system_info": info,
        "load_s": round(load_s, 3),
        "prompt_tokens": len(tokens),
        "decode_tokens": N_DECODE,
        "runs": [{k: round(v, 2) for k, v in row.items()} for row in rows],
        "prompt_tok_s": round(statistics.median(r["prompt_tok_s"] for r in rows), 2),
        "decode_tok_s": round(statistics.median(r["decode_tok_s"] for r in rows), 2),
    }


def measure(label: str, python: Path, model: Path, runs: int, threads: int, timeout_s: float) -> dict:
    """Run the worker under ``python``; a crash or a failure is recorded, not raised."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    cmd = [str(python), str(Path(__file__).resolve()), "--worker", "--model", str(model), "--runs", str(runs),
           "--threads", str(threads)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return {"label": label, "python": str(python), "ok": False, "error": f"no answer in {timeout_s:.0f} s"}
    if proc.returncode != 0:
        return {"label": label, "python": str(python), "ok": False, "exit_code": proc.returncode,
                "error": "killed by signal %d%s" % (-proc.returncode, " (segmentation fault)" if proc.returncode == -11
                                                    else "") if proc.returncode < 0 else proc.stderr.strip()[-800:]}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"label": label, "python": str(python), "ok": True, **result}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="append", default=[], metavar="LABEL=PYTHON",
                        help="a build to measure: a label and the python of the venv that holds it (repeatable)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; in each, every build is measured in turn")
    parser.add_argument("--runs", type=int, default=2, help="runs per build and round (one model load)")
    parser.add_argument("--threads", type=int, default=2,
                        help="llama.cpp threads (the app's: 2 here); 1 when other work keeps the cores busy, since "
                             "threads that wait on each other at every step slow down far more than the load explains")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one build may take")
    parser.add_argument("--out", default="llama_build", help="report name in bench/reports/")
    parser.add_argument("--note", action="append", default=[], metavar="LABEL=TEXT",
                        help="how a build was made (its flags), kept in the report beside it")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(Path(args.model), args.runs, args.threads)))
        return 0
    if not args.build:
        parser.error("name at least one --build LABEL=PYTHON")
    builds = []
    for item in args.build:
        label, sep, python = item.partition("=")
        if not sep or not label or not Path(python).is_file():
            parser.error(f"--build {item!r}: give LABEL=PATH with the path of an existing python")
        builds.append((label, Path(python)))
    notes = dict(item.partition("=")[::2] for item in args.note)

    from _common import machine, write_report  # the e3rg venv's side: finds the model, writes the report

    from e3rg_core.config import load_config
    from e3rg_core.understanding.embedded import EMBEDDED_MODELS, assemble

    model = assemble(EMBEDDED_MODELS["qwen2.5-coder-1.5b-instruct-q4_k_m"],
                     cache_dir=load_config(environ={}).cache_dir / "models")
    load_before = os.getloadavg()
    rounds: dict[str, list[dict]] = {label: [] for label, _ in builds}
    for n in range(args.rounds):  # builds take turns, so that other work on the machine weighs on each alike
        for label, python in builds:
            print(f"round {n + 1}: measuring {label} ({python}) ...", flush=True)
            row = measure(label, python, model, args.runs, args.threads, args.timeout)
            rounds[label].append(row)
            print(json.dumps({k: row.get(k) for k in ("label", "ok", "prompt_tok_s", "decode_tok_s", "error")}))
    results = []
    for label, done in rounds.items():
        row = next((r for r in done if not r["ok"]), None) or dict(done[-1])
        if row["ok"]:
            runs = [run for r in done for run in r["runs"]]
            row.update(runs=runs, load_s=round(statistics.median(r["load_s"] for r in done), 3),
                       prompt_tok_s=round(statistics.median(r["prompt_tok_s"] for r in runs), 2),
                       decode_tok_s=round(statistics.median(r["decode_tok_s"] for r in runs), 2))
        if label in notes:
            row["how_built"] = notes[label]
        results.append(row)
    base = results[0]
    for row in results[1:]:
        if base.get("ok") and row.get("ok"):
            row["vs_" + base["label"]] = {k: round(row[k] / base[k], 3) for k in ("prompt_tok_s", "decode_tok_s")}
    flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), "")
    cpu = machine()
    cpu["amx"] = " amx_int8" in flags
    cpu["avx512f"] = " avx512f" in flags
    cpu["load_avg_before"], cpu["load_avg_after"] = load_before, os.getloadavg()
    write_report(args.out, {"bench": "llama_build", "model": "qwen2.5-coder-1.5b-instruct-q4_k_m",
                            "threads": args.threads, "rounds": args.rounds, "runs_per_round": args.runs,
                            "machine": cpu, "builds": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
