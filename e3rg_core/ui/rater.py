"""The rater app of a human-evaluation study: consent, blinded trials, ratings, the organiser's report.

``build_rater_app(config, study_path)`` returns ``(demo, launch_kwargs)``; ``python app.py --study
study.toml`` launches it. The page, for one rater:

* who: the login name (``ui.auth``), else the ``?rater=`` URL parameter; neither, and nothing is shown;
* consent: the study's consent text and instructions, "I agree"; kept server-side as an append-only
  marker file next to the ratings (``<data_dir>/ratings/<study id>.consent.jsonl``), so it is asked once
  per rater, not once per browser;
* the trials, in the rater's own order (``e3rg_core.rating.plan``): the dialogue, the replies A, B, ...
  side by side (text, audio, video), a 1..5 radio per criterion with the verbal anchors, the A/B
  question; the store refuses a rating before every video was played. Everything lives in the store, so
  a reload or a server restart continues at the first unrated item.
* the Organiser tab (users in ``ui.organisers`` only): the report's CSVs, summary and plot.

Blinding: the page holds panel labels, opaque tokens and media copied under neutral names into
``<tmp>/e3rg-rating/<study id>/``; never a system name or an item id (that would give attention checks
away). Every handler checks the rater, the trial position and the answers itself: all are endpoints.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import re
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import gradio as gr

from e3rg_core.config import Config
from e3rg_core.errors import E3rgError, InputError
from e3rg_core.rating import RatingStore, Study, Trial, load_study, make_plan, write_report
from e3rg_core.rating.plan import SIDE_LABELS
from e3rg_core.rating.records import utc_now
from e3rg_core.ui.launch import launch_settings

logger = logging.getLogger(__name__)

RATER_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MEDIA = ("video", "audio")
ROLE_NAMES = {"speaker": "Speaker", "listener": "Listener"}
PREFERENCE_LABELS = {"none": "No preference"}
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")
NO_RATER = ("### Who is rating?\nOpen the link you were given (it ends in `?rater=YOUR_ID`) or log in. "
            "Rater ids are 1-64 letters, digits, `.`, `_` or `-`.")
GENERIC_ERROR = "Your answer could not be saved. Reload the page and try again."


def rating_media_dir(study: Study) -> Path:
    """Where the blinded media copies of ``study`` are served from (inside the temp dir Gradio may serve)."""
    return Path(tempfile.gettempdir()) / "e3rg-rating" / study.id


def md_text(text: str) -> str:
    """``text`` shown literally in Markdown: no HTML, no emphasis, links or headings."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))


class ConsentLog:
    """Append-only JSONL of who agreed to a study's consent text, when, and to which text (its SHA-256)."""

    def __init__(self, path: Path, consent_text: str) -> None:
        self.path = Path(path)
        self.digest = hashlib.sha256(consent_text.encode("utf-8")).hexdigest()
        self._lock = threading.Lock()

    def has(self, rater_id: str) -> bool:
        """Whether ``rater_id`` agreed to this very consent text."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return False
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a crash
            if record.get("rater") == rater_id and record.get("consent_sha256") == self.digest:
                return True
        return False

    def add(self, rater_id: str) -> None:
        """Record that ``rater_id`` agreed now."""
        line = json.dumps({"rater": rater_id, "consent_sha256": self.digest, "at": utc_now()}) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)
                f.flush()


@dataclass(frozen=True)
class RaterPage:
    """Where a rater stands: the consent form, a trial (shown now), or done with every item."""

    rater: str
    state: Literal["consent", "trial", "done"]
    trial: Trial | None = None


class RaterService:
    """The rater app's logic without Gradio: who rates, where they are, what they answered."""

    def __init__(self, study: Study, store: RatingStore, consents: ConsentLog, media_dir: Path,
                 organisers: tuple[str, ...]) -> None:
        self.study, self.store, self.consents = study, store, consents
        self.media_dir = Path(media_dir)
        self.organisers = tuple(organisers)
        # strings that must never reach a rater: system names and item ids (gold ids give checks away)
        self._secret_words = tuple(study.systems) + tuple(i.id for i in study.items) + tuple(g.id for g in study.gold)

    @staticmethod
    def rater_of(request: gr.Request | None) -> str:
        """The login name, else the ``?rater=`` parameter; ``InputError`` when neither is a valid id."""
        name = getattr(request, "username", None) if request is not None else None
        if not name and request is not None:
            params = getattr(request, "query_params", None) or {}
            name = params.get("rater")
        if not name:
            raise InputError(NO_RATER)
        if not isinstance(name, str) or not RATER_ID.fullmatch(name):
            raise InputError("this rater id is not allowed; use 1-64 letters, digits, '.', '_' or '-'")
        return name

    def is_organiser(self, request: gr.Request | None) -> bool:
        name = getattr(request, "username", None) if request is not None else None
        return bool(name) and name in self.organisers

    def current(self, rater_id: str) -> Trial | None:
        """The first trial ``rater_id`` has not finished, or None when all are done."""
        plan = make_plan(self.study, rater_id, media_dir=self.media_dir)
        return plan.next_trial(self.store.completed_items(rater_id))

    def show(self, rater_id: str) -> Trial | None:
        trial = self.current(rater_id)
        if trial is not None:
            self.store.record_shown(rater_id, trial.item_id)
        return trial

    def page(self, rater_id: str) -> RaterPage:
        """What ``rater_id`` sees now: the consent form until they agree, then the trial due, then done."""
        if not self.consents.has(rater_id):
            return RaterPage(rater_id, "consent")
        trial = self.show(rater_id)
        return RaterPage(rater_id, "done") if trial is None else RaterPage(rater_id, "trial", trial)

    def agree(self, rater_id: str) -> RaterPage:
        """Record the rater's agreement to the consent form; the first trial due follows."""
        self.consents.add(rater_id)
        return self.page(rater_id)

    def due(self, rater_id: str, position: Any) -> Trial:
        """The trial on the rater's screen, checked against the ``position`` the page says it shows."""
        if not self.consents.has(rater_id):
            raise InputError("agree to the consent form first")
        if isinstance(position, float) and position.is_integer():
            position = int(position)
        if isinstance(position, bool) or not isinstance(position, int):
            raise InputError(f"the trial position must be a whole number, not {position!r}")
        trial = self.current(rater_id)
        if trial is None:
            raise InputError("you have rated every item; thank you")
        if position != trial.position:
            raise InputError(f"item {position} is not the one due (item {trial.position}); reload the page")
        return trial

    def play(self, rater_id: str, position: Any, label: str, media: str) -> int:
        """Log one play of panel ``label``'s ``media`` on the trial due; return that medium's plays so far."""
        trial = self.due(rater_id, position)
        if media not in MEDIA:
            raise InputError(f"media must be one of {', '.join(MEDIA)}, not {media!r}")
        panel = next((p for p in trial.panels if p.label == label), None)
        if panel is None:
            raise InputError(f"this item has no reply {label!r}; choose from "
                             f"{', '.join(p.label for p in trial.panels)}")
        if media == "audio" and panel.audio is None:
            raise InputError(f"reply {label} has no separate audio")
        return self.store.record_play(rater_id, trial.item_id, panel.token, media)

    def submit(self, rater_id: str, position: Any, scores: list[list[Any]], preferences: list[Any]) -> None:
        """Store the answers of the trial due: ``scores[side][criterion]`` and one choice per pair question."""
        trial = self.due(rater_id, position)
        unplayed = set(self.store.unplayed_videos(rater_id, trial.item_id))
        if unplayed:  # said first: the rater must watch before answering
            labels = [p.label for p in trial.panels if p.token in unplayed]
            raise InputError(f"play the video before rating: reply {', '.join(labels)} "
                             f"{'has' if len(labels) == 1 else 'have'} not been played yet")
        by_token = {}
        for panel in trial.panels:
            given = scores[panel.side] if panel.side < len(scores) else []
            by_token[panel.token] = {c.id: v for c, v in zip(trial.criteria, given) if v is not None}
        choices = {}
        for k, question in enumerate(trial.pairs):
            answer = preferences[k] if k < len(preferences) else None
            if answer is None:
                raise InputError("answer every question: the preference question has no answer")
            choices[question.key] = answer
        self.store.record_ratings(rater_id, trial.item_id, by_token, preferences=choices)

    def safe_message(self, exc: Exception) -> str:
        """The error's text for a rater, unless it names a system or an item."""
        text = str(exc) if isinstance(exc, E3rgError) else ""
        if not text or any(word in text for word in self._secret_words):
            if not isinstance(exc, InputError):
                logger.exception("rating failed", exc_info=exc)
            return GENERIC_ERROR
        return text

    def report(self, request: gr.Request | None) -> tuple[list[str], str | None, str]:
        """Write the report into a fresh folder of the temp dir: the files, the plot and a Markdown summary."""
        if not self.is_organiser(request):
            raise InputError("only the study's organisers may build the report; log in as one")
        out_dir = Path(tempfile.gettempdir()) / "e3rg-rating-reports" / uuid.uuid4().hex
        report = write_report(self.store, out_dir)
        summary = json.loads(report.summary_json.read_text(encoding="utf-8"))
        files = [str(report.ratings_csv), str(report.preferences_csv), str(report.summary_json)]
        return files, (str(report.plot) if report.plot else None), summary_markdown(summary, self.study)


def summary_markdown(summary: dict[str, Any], study: Study) -> str:
    """The organiser's tables: mean [95 % CI] per system x criterion, alpha per criterion, win rates."""
    names = {c.id: c.name for c in study.criteria}

    def num(value: Any, digits: int = 2) -> str:
        return "–" if value is None else f"{value:.{digits}f}"

    lines = [f"**{summary['n_raters']} raters, {summary['n_ratings']} ratings** ({summary['interval']})", "",
             "| system | " + " | ".join(md_text(names[c]) for c in study.criterion_ids) + " |",
             "|---|" + "---|" * len(study.criterion_ids)]
    cells = {(s["system"], s["criterion"]): s for s in summary["scores"]}
    for system in study.systems:
        row = []
        for c in study.criterion_ids:
            s = cells.get((system, c))
            row.append("–" if s is None
                       else f"{num(s['mean'])} [{num(s['ci_low'])}, {num(s['ci_high'])}] (n={s['n']})")
        lines.append(f"| {md_text(system)} | " + " | ".join(row) + " |")
    alpha = summary["krippendorff_alpha_ordinal"]
    lines += ["", "| Krippendorff's alpha (ordinal) | " + " | ".join(md_text(names[c]) for c in study.criterion_ids)
              + " |", "|---|" + "---|" * len(study.criterion_ids),
              "| all raters | " + " | ".join(num(alpha.get(c), 3) for c in study.criterion_ids) + " |"]
    if summary["win_rates"]:
        lines += ["", "| criterion | system | vs | win rate | wins / losses / ties |", "|---|---|---|---|---|"]
        lines += [f"| {md_text(names.get(w['criterion'], w['criterion']))} | {md_text(w['system'])} | "
                  f"{md_text(w['other'])} | {num(w['rate'])} | {w['wins']} / {w['losses']} / {w['ties']} |"
                  for w in summary["win_rates"]]
    failed = [g for g in summary["gold"] if g.get("n_failed")]
    if failed:
        lines += ["", "Attention checks failed: " + ", ".join(
            f"{md_text(g['rater'])} ({g['n_failed']} of {g['n_checks']})" for g in failed)]
    return "\n".join(lines)


def build_rater_app(config: Config, study_path: Path, *, data_dir: Path | None = None) -> tuple[gr.Blocks, dict]:
    """The rater app of the study in ``study_path`` and the keyword arguments for ``launch``."""
    study = load_study(Path(study_path))
    root = Path(data_dir) if data_dir is not None else config.data_dir
    store = RatingStore(root / "ratings" / f"{study.id}.sqlite3", study)
    consents = ConsentLog(root / "ratings" / f"{study.id}.consent.jsonl", study.consent)
    organisers = tuple(getattr(config.ui, "organisers", ()) or ())
    service = RaterService(study, store, consents, rating_media_dir(study), organisers)
    _warn_unblinded_text(study)
    with gr.Blocks(title=study.title or "Rating study") as demo:
        w = _rater_layout(study)
        _wire_rater(demo, w, service)
    demo.queue(max_size=config.ui.queue_size, default_concurrency_limit=4)
    return demo, launch_settings(config)


class RaterWidgets(SimpleNamespace):
    """The rater page's components by name (``_rater_layout`` fills it)."""


def _rater_layout(study: Study) -> RaterWidgets:
    """The consent form, one trial's panels (a reply each) and questions, the thank-you, the Organiser tab."""
    w = RaterWidgets(study=study)
    gr.Markdown(f"# {md_text(study.title or 'Rating study')}")
    w.message = gr.Markdown("Loading…", elem_id="rater_message")
    with gr.Tab("Rating", elem_id="rating_tab"):
        with gr.Column(visible=False, elem_id="consent") as w.consent_col:
            gr.Markdown(md_text(study.consent) if study.consent else "")
            if study.instructions:
                gr.Markdown("### Instructions\n" + md_text(study.instructions))
            w.agree = gr.Button("I agree", variant="primary", elem_id="agree")
        with gr.Column(visible=False, elem_id="rating") as w.rating_col:
            w.progress = gr.Markdown(elem_id="progress")
            w.context = gr.Markdown(elem_id="context")
            w.instruction = gr.Markdown(elem_id="instruction")
            w.position = gr.Number(value=0, precision=0, visible=False, label="position", elem_id="position")
            w.panel_cols, w.texts, w.audios, w.videos, w.radios = [], [], [], [], []
            with gr.Row(equal_height=False):
                for side in range(len(study.systems)):
                    _panel(w, study, side)
            w.prefs = [gr.Radio(choices=[], label=study.preference_question or "Preference", value=None,
                                elem_id=f"preference_{k}") for k in range(len(study.pairs))]
            w.submit = gr.Button("Submit", variant="primary", elem_id="submit")
        w.done = gr.Markdown(visible=False, elem_id="done")
    with gr.Tab("Organiser", visible=False, elem_id="organiser_tab") as w.organiser_tab:
        w.build = gr.Button("Build report", elem_id="build_report")
        w.report_files = gr.File(label="Report files", file_count="multiple", interactive=False,
                                 elem_id="report_files")
        w.report_plot = gr.Image(label="Scores", type="filepath", interactive=False, elem_id="report_plot")
        w.report_md = gr.Markdown(elem_id="report_summary")
    w.flat_radios = [r for per_panel in w.radios for r in per_panel]
    w.page = [w.message, w.consent_col, w.rating_col, w.done, w.progress, w.context, w.instruction, w.position,
              *w.panel_cols, *w.texts, *w.audios, *w.videos, *w.flat_radios, *w.prefs, w.organiser_tab]
    return w


def _panel(w: RaterWidgets, study: Study, side: int) -> None:
    """One reply's panel: its text, audio, video and a 1..5 radio per criterion."""
    with gr.Column(visible=False, elem_id=f"panel_{side}") as col:
        w.panel_cols.append(col)
        w.texts.append(gr.Markdown(elem_id=f"panel_{side}_text"))
        w.audios.append(gr.Audio(type="filepath", interactive=False, buttons=[], label="Voice",
                                 elem_id=f"panel_{side}_audio"))
        w.videos.append(gr.Video(interactive=False, buttons=[], label="Video", elem_id=f"panel_{side}_video"))
        w.radios.append([gr.Radio(choices=[(f"{s} — {c.anchor(s)}", s) for s in range(1, 6)],
                                  label=f"{c.name}: {c.question}", value=None, elem_id=f"panel_{side}_{c.id}")
                         for c in study.criteria])


def _rendered(w: RaterWidgets, view: RaterPage | str, organiser: bool) -> tuple:
    """Every page output for a rater's page, or for ``view`` = the message of a page without a rater."""
    # what no trial shows; a trial overwrites it below
    out: dict[Any, Any] = {c: None for c in [*w.flat_radios, *w.audios, *w.videos]}
    out.update({w.progress: "", w.context: "", w.instruction: "", w.position: 0, **{t: "" for t in w.texts},
                **{col: gr.update(visible=False) for col in w.panel_cols},
                **{radio: gr.update(value=None, visible=False) for radio in w.prefs}})
    out[w.organiser_tab] = gr.update(visible=organiser)
    state = view.state if isinstance(view, RaterPage) else None
    out.update({w.consent_col: gr.update(visible=state == "consent"), w.rating_col: gr.update(visible=state == "trial"),
                w.done: gr.update(visible=state == "done")})
    if state is None:
        out[w.message] = view
    elif state == "consent":
        out[w.message] = f"Welcome, **{md_text(view.rater)}**. Please read the consent form."
    elif state == "done":
        out.update({w.message: "", w.done: gr.update(visible=True, value="## Thank you!\nYou have rated every item. "
                                                                         "You can close this page.")})
    else:
        out[w.message] = ""
        out.update(_trial_values(w, view.trial))
    return tuple(out[c] for c in w.page)


def _trial_values(w: RaterWidgets, trial: Trial) -> dict[Any, Any]:
    """The outputs that show ``trial``: its context, each reply's panel, the preference questions."""
    out: dict[Any, Any] = {w.progress: f"### Item {trial.position} of {trial.n_trials}",
                           w.context: context_markdown(trial), w.position: trial.position,
                           w.instruction: f"**{md_text(trial.instruction)}**" if trial.instruction else ""}
    for side in range(len(w.panel_cols)):
        panel = trial.panels[side] if side < len(trial.panels) else None
        out[w.panel_cols[side]] = gr.update(visible=panel is not None)
        out[w.texts[side]] = f"### Reply {panel.label}\n{md_text(panel.text)}" if panel else ""
        out[w.audios[side]] = gr.update(value=str(panel.audio) if panel and panel.audio else None,
                                        visible=bool(panel and panel.audio))
        out[w.videos[side]] = str(panel.video) if panel else None
        for radio in w.radios[side]:
            out[radio] = None
    labels = {p.token: p.label for p in trial.panels}
    for k, radio in enumerate(w.prefs):
        if k < len(trial.pairs):
            q = trial.pairs[k]
            choices = [(f"Reply {labels[q.left]}", "left"), (f"Reply {labels[q.right]}", "right"),
                       (PREFERENCE_LABELS["none"], "none")]
            out[radio] = gr.update(choices=choices, value=None, label=q.question, visible=True)
        else:
            out[radio] = gr.update(value=None, visible=False)
    return out


def _wire_rater(demo: gr.Blocks, w: RaterWidgets, service: RaterService) -> None:
    """The rater's events (each also an endpoint, so each checks the rater itself) and the organiser's."""
    def render(request: gr.Request | None, act=None) -> tuple:
        """The page after ``act(rater)`` (by default: as it stands); no valid rater only shows why, unless
        the request acts, when it is refused."""
        try:
            rater = service.rater_of(request)
        except InputError as exc:
            if act is not None:
                raise gr.Error(service.safe_message(exc), title="Not saved") from exc
            return _rendered(w, str(exc), service.is_organiser(request))
        try:
            return _rendered(w, (act or service.page)(rater), service.is_organiser(request))
        except E3rgError as exc:
            raise gr.Error(service.safe_message(exc), title="Not saved") from exc

    def rater_start(request: gr.Request):
        """Show the rater's current state: the consent form, the trial due, or the thank-you page."""
        return render(request)

    def rater_consent(request: gr.Request):
        """Record the rater's agreement to the consent form, then show the first trial due."""
        return render(request, service.agree)

    def rater_play(position: int, label: str, media: str, request: gr.Request) -> int:
        """Log one play of a reply's video or audio on the trial due; returns that medium's plays so far."""
        try:
            return service.play(service.rater_of(request), position, label, media)
        except E3rgError as exc:
            raise gr.Error(service.safe_message(exc), title="Not saved") from exc

    def rater_submit(request: gr.Request, pos, *answers):
        """Store the trial's answers (every reply's scores, then the preferences); show the next trial."""
        n_criteria, n_scores = len(w.study.criteria), len(w.flat_radios)
        scores = [list(answers[side * n_criteria:(side + 1) * n_criteria]) for side in range(len(w.panel_cols))]

        def answered(rater: str) -> RaterPage:
            service.submit(rater, pos, scores, list(answers[n_scores:]))
            return service.page(rater)
        return render(request, answered)

    def submit_from_page(request: gr.Request, pos, *answers):
        """The page's Submit: a refused answer is a warning, and the answers stay as they are.

        (A ``gr.Error`` would mark every output of the event, i.e. the whole trial, as failed.)
        """
        try:
            return rater_submit(request, pos, *answers)
        except gr.Error as exc:
            gr.Warning(exc.message, title="Not saved")
            return tuple(gr.skip() for _ in w.page)

    def organiser_report(request: gr.Request):
        """Build the report (organisers only): the CSVs and summary.json, the plot, the summary tables."""
        try:
            return service.report(request)
        except E3rgError as exc:
            raise gr.Error(str(exc), title="No report") from exc

    answers = [w.position, *w.flat_radios, *w.prefs]
    demo.load(rater_start, inputs=None, outputs=w.page, api_name="rater_start")
    w.agree.click(rater_consent, inputs=None, outputs=w.page, api_name="rater_consent")
    w.submit.click(submit_from_page, inputs=answers, outputs=w.page, api_visibility="private", show_progress="minimal")
    # the same handler for clients, which get the refusal as an error
    api_submit = gr.Button(visible=False, elem_id="api_submit")
    api_submit.click(rater_submit, inputs=answers, outputs=w.page, api_name="rater_submit")
    gr.api(rater_play, api_name="rater_play")
    _wire_plays(w, service)
    w.build.click(organiser_report, inputs=None, outputs=[w.report_files, w.report_plot, w.report_md],
                  api_name="organiser_report")


def _wire_plays(w: RaterWidgets, service: RaterService) -> None:
    """Each play of a reply's video or audio on the page is logged (the store refuses ratings before)."""
    for side in range(len(w.panel_cols)):
        label = SIDE_LABELS[side]
        for media, component in (("video", w.videos[side]), ("audio", w.audios[side])):
            def on_play(pos, request: gr.Request, _label=label, _media=media):
                try:
                    service.play(service.rater_of(request), pos, _label, _media)
                except E3rgError as exc:
                    raise gr.Error(service.safe_message(exc), title="Not saved") from exc

            component.play(on_play, inputs=[w.position], outputs=None, api_visibility="private",
                           trigger_mode="multiple")


def context_markdown(trial: Trial) -> str:
    """The dialogue so far, one line per utterance, shown literally."""
    if not trial.context:
        return ""
    lines = [f"**{ROLE_NAMES.get(u.role, md_text(u.role))}:** {md_text(u.text)}" for u in trial.context]
    return "### The conversation so far\n" + "\n\n".join(lines)


def _warn_unblinded_text(study: Study) -> None:
    """Log a warning when a text every rater sees names a compared system."""
    texts = {"study.title": study.title, "study.consent": study.consent, "study.instructions": study.instructions,
             "preference.question": study.preference_question}
    texts.update({f"items.{i.id}": " ".join([*(u.text for u in i.context), *(o.text for o in i.outputs.values())])
                  for i in study.items})
    for where, text in texts.items():
        for system in study.systems:
            if re.search(rf"\b{re.escape(system)}\b", text or "", flags=re.IGNORECASE):
                logger.warning("%s names the system %r, which raters will see", where, system)
