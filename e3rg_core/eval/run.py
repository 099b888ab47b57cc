"""Batch evaluation on AvaMERG-format dialogues, resumable: ``run_eval(options)`` (metrics: ``eval.report``).

Each item is one turn: the speaker's last line (with its clip, when the media folder has one) and the
dialogue before it. By default only the last turn of each conversation is run, the items E3RG scores
HIT on; ``all_turns`` runs every turn (E3RG computed Dist-n over every turn's reply). Stage 1 runs
through the same ``Pipeline`` as the app (a clip is heard, its voice and face join the vote);
``generate`` runs the whole turn and keeps the reply as text, speech and video named as the
challenge named them, ``dia{conversation_id}turn{turn_id}_{listenerID}_gen.{txt,wav,mp4}``, in
``<out>/generated/``, spoken and shown by the avatar that matches the listener profile.

Files in ``out``:

* ``run.json``: the settings that shape the results (models, voters, shots, map, data checksum...);
* ``items.jsonl``: one JSON object per item, appended and flushed as each finishes;
* ``summary.json``: the metrics (``eval.metrics``), the settings, the load report and the counts;
* ``table.md``: the paper's table, ``method | shots | HIT | Dist-1 | Dist-2 | Dist-3``.

Running again with the same ``out`` skips the items already in ``items.jsonl`` (a line cut off by a
kill is dropped; an item that failed is tried again) and recomputes the summary from every item.
Different settings are refused unless ``restart`` discards the previous run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from e3rg_core.config import Config, load_config
from e3rg_core.emotions import coarse_of
from e3rg_core.errors import BackendFailed, ConfigError, InputError
from e3rg_core.eval import metrics
from e3rg_core.eval.avamerg import Conversation, Dataset, Turn, load_avamerg
from e3rg_core.eval.report import render_table, summarize
from e3rg_core.types import Stage
from e3rg_core.voters import parse_voter

logger = logging.getLogger(__name__)

ITEMS = "items.jsonl"
RUN = "run.json"
SUMMARY = "summary.json"
TABLE = "table.md"
GENERATED = "generated"
_WORK = ".work"


@dataclass(frozen=True)
class EvalOptions:
    """One evaluation run. ``None`` settings come from the config (file, ``E3RG_*`` env, defaults)."""

    data: Path
    out: Path
    media: Path | None = None  # folder of dia{conv}utt{index}_{ID}.wav/.mp4 clips
    voters: tuple[str, ...] | None = None  # name[@shots][#sample][*weight]
    shots: int | None = None  # 0, 1 or 3
    vote: bool = True  # False: the responder alone predicts the emotion
    emotion_map: str | None = None  # "hit" or "video": the map the pipeline uses (HIT always uses "hit")
    generate: bool = False  # the whole pipeline: text, speech and video per item
    check: bool = False  # with generate: read the avatar's own face and voice back
    all_turns: bool = False  # every turn, not only each conversation's last
    limit: int | None = None  # the first N conversations
    use_media: bool = True  # False: text only, even where clips exist
    config_file: Path | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)  # more config settings, {"video.size_px": 192}
    restart: bool = False  # discard a previous run in ``out``


@dataclass(frozen=True)
class Item:
    conversation: Conversation
    turn: Turn
    last: bool  # the conversation's last turn: an item of E3RG's HIT

    @property
    def key(self) -> str:
        return f"{self.conversation.id}/{self.turn.turn_id}"


@dataclass(frozen=True)
class EvalResult:
    out: Path
    summary: Mapping[str, Any]
    table: str
    ran: int  # items run this time
    skipped: int  # items already in items.jsonl
    failed: int  # items that failed this time (recorded with their error, tried again next run)


def build_config(options: EvalOptions, *, environ: Mapping[str, str] | None = None) -> Config:
    """The configuration of a run: the config file and environment, then the options."""
    if not options.vote and options.voters:
        raise ConfigError("give either voters or no-vote (the responder alone), not both")
    if options.check and not options.generate:
        raise ConfigError("check reads the avatar's generated face and voice back; it needs generate")
    overrides: dict[str, Any] = {**options.overrides, "understanding.shots": options.shots,
                                 "understanding.emotion_map": options.emotion_map,
                                 "perception.check_output": bool(options.check and options.generate)}
    if options.voters:
        overrides["understanding.voters"] = ",".join(options.voters)
    config = load_config(options.config_file, overrides=overrides, environ=environ)
    if not options.vote:
        u = config.understanding
        config = dataclasses.replace(config, understanding=dataclasses.replace(u, voters=(u.responder,)))
    return config


def plan(dataset: Dataset, *, all_turns: bool = False, limit: int | None = None) -> list[Item]:
    """The items of a run: each conversation's last turn (or every turn), of the first ``limit``."""
    conversations = dataset.conversations[:limit] if limit is not None else dataset.conversations
    items = []
    for conv in conversations:
        turns = conv.turns if all_turns else conv.turns[-1:]
        items += [Item(conv, turn, turn is conv.turns[-1]) for turn in turns]
    return items


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_settings(config: Config, options: EvalOptions, data_sha256: str) -> dict[str, Any]:
    """The settings that change an item's result; a resumed run must match them."""
    u = config.understanding
    profiles = sorted({u.responder, *(parse_voter(v).profile for v in u.voters)})
    settings: dict[str, Any] = {
        "data_sha256": data_sha256,
        "voters": list(u.voters), "vote_method": u.vote_method, "shots": u.shots, "responder": u.responder,
        "response_prompt": u.response_prompt, "reply_emotion": u.reply_emotion, "emotion_map": u.emotion_map,
        "seed": u.seed, "models": {name: f"{config.profile(name).backend}:{config.profile(name).model}"
                                   for name in profiles},
        "media": bool(options.use_media and options.media is not None),
        "generate": options.generate,
    }
    if options.generate:
        v = config.video
        settings["video"] = {"backend": v.backend, "size_px": v.size_px, "fps": v.fps}
        settings["check"] = config.perception.check_output
    return settings


def method_name(config: Config) -> str:
    """The table's method cell, e.g. ``e3rg_core: minilm + qwen1.5b*0.5, soft vote; reply qwen1.5b``."""
    u = config.understanding
    if tuple(u.voters) == (u.responder,):
        return f"e3rg_core: {u.responder}, no vote"
    return f"e3rg_core: {' + '.join(u.voters)}, {u.vote_method} vote; reply {u.responder}"


# -- items.jsonl ------------------------------------------------------------------------------
def read_items(path: Path) -> dict[str, dict[str, Any]]:
    """The items recorded so far, by key (the last line of a key wins).

    A last line without its newline (the run was killed mid-write) is cut off the file, so the next
    append starts on a fresh line; other unreadable lines are skipped with a warning.
    """
    path = Path(path)
    if not path.is_file():
        return {}
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        logger.warning("%s: dropping a cut-off last line (%d bytes)", path, len(data) - keep)
        with open(path, "r+b") as f:
            f.truncate(keep)
        data = data[:keep]
    items: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            key = f"{row['conversation_id']}/{row['turn_id']}"
        except (json.JSONDecodeError, KeyError, TypeError):
            logger.warning("%s:%d: unreadable line skipped", path, n)
            continue
        items[key] = row
    return items


def _append(f: Any, row: Mapping[str, Any]) -> None:
    f.write(json.dumps(row, ensure_ascii=False) + "\n")
    f.flush()
    os.fsync(f.fileno())


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


# -- one item ---------------------------------------------------------------------------------
def generated_name(item: Item, suffix: str) -> str:
    """The challenge's name of a generated reply file, e.g. ``dia00001turn2_17_gen.wav``."""
    listener = item.conversation.listener.id or "unknown"
    return f"dia{item.conversation.id}turn{item.turn.turn_id}_{listener}_gen{suffix}"


def _avatar(pipeline: Any, item: Item) -> Any:
    """The avatar for the listener: an avatar called ``avamerg-<ID>`` if one is installed (the
    listener's own face and voice, as E3RG intends), else the best age/gender/timbre match."""
    listener = item.conversation.listener
    own = f"avamerg-{listener.id.lower()}"
    avatar_id = own if re.fullmatch(r"[a-z0-9_-]{1,50}", listener.id.lower()) else None
    return pipeline.library.resolve(avatar_id, age=listener.age, gender=listener.gender, timbre=listener.timbre)


def _media_options(item: Item, use_media: bool) -> list[tuple[Path | None, Path | None]]:
    """The clips to try, richest first: audio and video, audio alone, text alone."""
    q = item.turn.query
    options = [(q.audio_path, q.video_path), (q.audio_path, None), (None, None)] if use_media else [(None, None)]
    return list(dict.fromkeys(options))


def _run_item(pipeline: Any, item: Item, *, options: EvalOptions, out: Path) -> dict[str, Any]:
    workdir = out / _WORK / item.key.replace("/", "_")
    try:
        return _run_in(pipeline, item, options=options, out=out, workdir=workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run_in(pipeline: Any, item: Item, *, options: EvalOptions, out: Path, workdir: Path) -> dict[str, Any]:
    from e3rg_core.events import TurnRequest

    avatar = _avatar(pipeline, item) if options.generate else None
    start = time.perf_counter()
    notes = []
    values: dict[str, Any] = {}
    timings: dict[str, float] = {}
    for audio, video in _media_options(item, options.use_media):
        request = TurnRequest(text=item.turn.query.text, audio_path=audio, video_path=video,
                              history=item.turn.history, avatar_id=avatar.id if avatar else None,
                              context=item.turn.context or "")
        values, timings = {}, {}
        try:
            for step in pipeline.run(request, workdir):
                values[step.stage], timings[step.stage] = step.value, round(step.seconds, 3)
                if step.stage is Stage.UNDERSTOOD and not options.generate:
                    break
            break
        except InputError as exc:
            if Stage.HEARD in values or (audio is None and video is None):
                raise
            # an unreadable clip must not lose the turn: hear less of it
            notes.append(f"{(video or audio).name}: {exc}")
            logger.warning("item %s: %s; trying without it", item.key, exc)
    u = values[Stage.UNDERSTOOD]
    heard = values[Stage.HEARD]
    row = {
        "predicted": u.emotion, "coarse": u.coarse,
        "hit": coarse_of(u.emotion, map_name=metrics.HIT_MAP) == _gold_coarse(item.turn.gold)
        if item.turn.gold else None,
        "confidence": round(u.confidence, 4), "reply": u.reply, "reply_emotion": u.reply_emotion,
        "crisis": u.crisis,
        "risk": u.risk.as_dict(),
        "votes": [v.as_dict() for v in u.votes],
        "input": heard.input_kind,
        "media": {"audio": request.audio_path.name if request.audio_path else None,
                  "video": request.video_path.name if request.video_path else None},
        "media_note": "; ".join(notes + ([heard.note] if heard.note else [])),
        "timings_s": timings,
    }
    if options.generate:
        gen = out / GENERATED
        gen.mkdir(parents=True, exist_ok=True)
        files = {ext: generated_name(item, f".{ext}") for ext in ("txt", "wav", "mp4")}
        _write_atomic(gen / files["txt"], u.reply + "\n")
        os.replace(values[Stage.SPOKEN].wav_path, gen / files["wav"])
        os.replace(values[Stage.RENDERED].mp4_path, gen / files["mp4"])
        row["avatar"] = avatar.id
        row["files"] = {ext: f"{GENERATED}/{name}" for ext, name in files.items()}
        row["speech_s"] = round(values[Stage.SPOKEN].duration_s, 3)
        if values.get(Stage.CHECKED) is not None:
            row["consistency"] = values[Stage.CHECKED].as_dict()
    row["seconds"] = round(time.perf_counter() - start, 3)
    return row


def _gold_coarse(label: str | None) -> str | None:
    return coarse_of(label, map_name=metrics.HIT_MAP) if label else None


def _base_row(item: Item) -> dict[str, Any]:
    chain = item.turn.chain
    return {"conversation_id": item.conversation.id, "turn_id": item.turn.turn_id, "last_turn": item.last,
            "gold": item.turn.gold, "gold_raw": chain.speaker_emotion if chain and chain.speaker_emotion else None,
            "gold_coarse": _gold_coarse(item.turn.gold), "gold_response": item.turn.response}


# -- the run ----------------------------------------------------------------------------------
def _check_previous(out: Path, settings: Mapping[str, Any]) -> None:
    run_path, items_path = out / RUN, out / ITEMS
    if not run_path.is_file():
        if items_path.is_file() and items_path.stat().st_size:
            raise ConfigError(f"{items_path} exists but {run_path} does not, so its settings are unknown; "
                              "use --restart to discard it, or another --out")
        return
    try:
        previous = json.loads(run_path.read_text(encoding="utf-8"))["settings"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ConfigError(f"{run_path} is unreadable ({exc}); use --restart to discard the previous run") from exc
    if previous != settings:
        diffs = [f"{k} {settings.get(k)!r} (before: {previous.get(k)!r})"
                 for k in sorted(set(settings) | set(previous)) if settings.get(k) != previous.get(k)]
        raise ConfigError(f"{out} holds a run with other settings: {'; '.join(diffs)}. Use --restart to "
                          "discard it, or another --out")


def _discard(out: Path) -> None:
    for name in (ITEMS, RUN, SUMMARY, TABLE):
        (out / name).unlink(missing_ok=True)
    for name in (GENERATED, _WORK):
        shutil.rmtree(out / name, ignore_errors=True)


def _progress(total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, file=sys.stderr, unit="item", disable=not enabled or total == 0,
                dynamic_ncols=True, desc="eval")


def run_eval(options: EvalOptions, *, understander: Any = None, pipeline: Any = None,
             environ: Mapping[str, str] | None = None, progress: bool = True) -> EvalResult:
    """Run (or resume) an evaluation and write ``items.jsonl``, ``summary.json`` and ``table.md``.

    ``understander`` / ``pipeline`` replace the configured ones (tests, or models already loaded); an
    understander must be built from ``build_config(options)``, a pipeline's own config is used.
    """
    if options.limit is not None and options.limit < 1:
        raise ConfigError(f"limit must be at least 1 conversation, not {options.limit}")
    config = pipeline.config if pipeline is not None else build_config(options, environ=environ)
    dataset = load_avamerg(Path(options.data), media_dir=Path(options.media) if options.media else None)
    items = plan(dataset, all_turns=options.all_turns, limit=options.limit)
    settings = run_settings(config, options, _sha256(Path(options.data)))
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    if options.restart:
        _discard(out)
    _check_previous(out, settings)
    _write_atomic(out / RUN, json.dumps({"settings": settings, "data": str(options.data),
                                         "media": str(options.media) if options.media else None},
                                        indent=2, ensure_ascii=False) + "\n")
    done = read_items(out / ITEMS)
    todo = [item for item in items if item.key not in done or done[item.key].get("error")]
    skipped = len(items) - len(todo)
    if skipped:
        logger.info("resuming: %d of %d items already done", skipped, len(items))
    if todo and pipeline is None:
        from e3rg_core.pipeline import Pipeline

        pipeline = Pipeline(config, understander=understander)
    ran = failed = 0
    try:
        with open(out / ITEMS, "a", encoding="utf-8") as f, _progress(len(todo), progress) as bar:
            for item in todo:
                row = _base_row(item)
                try:
                    row.update(_run_item(pipeline, item, options=options, out=out))
                except (InputError, BackendFailed) as exc:
                    failed += 1
                    row["error"] = f"{type(exc).__name__}: {exc}"
                    logger.warning("item %s failed: %s", item.key, exc)
                _append(f, row)
                done[item.key] = row
                ran += 1
                bar.update(1)
    finally:
        shutil.rmtree(out / _WORK, ignore_errors=True)
        counts = {"conversations": dataset.report.conversations, "planned": len(items),
                  "ran_this_time": ran, "resumed": skipped}
        summary = summarize(done.values(), settings=settings, report=dataset.report.as_dict(), counts=counts,
                            method=method_name(config))
        table = render_table(summary)
        _write_atomic(out / SUMMARY, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
        _write_atomic(out / TABLE, table)
    return EvalResult(out=out, summary=summary, table=table, ran=ran, skipped=skipped, failed=failed)

