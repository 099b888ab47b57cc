"""What the app shows, as plain data: no gradio here, so it is tested without a server.

Turns come from the session store (``e3rg_core.sessions``); these functions turn them into the
Chatbot's messages, the emotion timeline's rows and the little Markdown panels.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from e3rg_core.emotions import COARSE
from e3rg_core.sessions import StoredTurn

#: emoji per coarse class, for the emotion panel and the chat
EMOJI = {"neutral": "😐", "happy": "😊", "surprised": "😮", "angry": "😠", "fear": "😨", "sad": "😢",
         "disgusted": "🤢", "contempt": "😒"}
STAGE_NAMES = {"heard": "hear", "understood": "understand", "spoken": "speak", "rendered": "render"}


def emotion_scores(distribution: Mapping[str, float], *, predicted: str | None = None) -> dict[str, float]:
    """The coarse distribution as ``gr.Label`` confidences, every class present (but see below).

    ``gr.Label`` heads its chart with the class of the largest confidence, the first of equals. The
    vote decides the class with the largest share, so the predicted class is listed first: the chart's
    heading and top bar are the class the page names, even where rounding makes two shares equal.
    Where a rule after the vote chose the class (the crisis rule's "devastated"), the vote's bars would
    head the chart with another class: that class's bar is shown alone, at its share of the vote
    (``vote_overruled`` writes the note saying what the vote read).
    """
    if vote_overruled(distribution, predicted):
        return {str(predicted): round(float(distribution.get(predicted, 0.0)), 4)}
    order = [predicted] + [c for c in COARSE if c != predicted] if predicted in COARSE else list(COARSE)
    return {c: round(float(distribution.get(c, 0.0)), 4) for c in order}


def vote_overruled(distribution: Mapping[str, float], predicted: str | None) -> str:
    """A note when ``predicted`` is not the vote's top class (a rule after the vote chose it), else ""."""
    if predicted not in COARSE or not distribution:
        return ""
    top = max(distribution, key=lambda c: float(distribution[c]))
    if float(distribution.get(predicted, 0.0)) >= float(distribution[top]) - 1e-9:
        return ""
    return (f"The safety check chose {predicted}; the emotion vote alone read {top} "
            f"({float(distribution[top]):.2f}).")


def risk_markdown(level: str, resources: str) -> str:
    """The safety note shown with a turn whose message signalled risk ("crisis"), may have ("check"), or
    came after one ("care")."""
    if level == "crisis":
        return f"🛟 **Your safety matters. {html.escape(resources)}**"
    if level in ("care", "check"):
        return f"🛟 If you need to talk to someone now: {html.escape(resources)}"
    return ""


def emotion_markdown(label: str, coarse: str, confidence: float, *, source: str = "predicted",
                     cues: str = "", notes: Iterable[str] = (), voters: Iterable[str] = (),
                     risk: str = "none", resources: str = "") -> str:
    """The predicted emotion and what it rests on: the cues read from the face and voice, the voters;
    first, when the message signalled risk, where to find help."""
    who = "you said you feel" if source == "corrected" else "you seem to feel"
    safety_note = risk_markdown(risk, resources)
    text = (safety_note + "\n\n" if safety_note else "") + (
        f"### {EMOJI.get(coarse, '')} {who} **{html.escape(label)}**\n\ncoarse class *{coarse}*, confidence {confidence:.2f}")
    if voters:
        text += " · from " + ", ".join(html.escape(v) for v in voters)
    if cues:
        text += f"\n\nHow you came across: {html.escape(cues)}"
    for note in notes:
        text += f"\n\n_{html.escape(note)}_"
    return text


def failure_markdown(message: str) -> str:
    """A stage the turn had to do without; the reply's text and voice are kept."""
    return f"⚠ {html.escape(message)}. The reply's text and voice are saved."


def consistency_markdown(summary: str) -> str:
    """Whether the avatar's own face and voice carried the emotion it meant to show."""
    return f"Self-check: {html.escape(summary)}" if summary else ""


def timings_markdown(timings: Mapping[str, float], streamed: Mapping[str, float] | None = None) -> str:
    """Each stage's seconds; for a streamed turn (whose stages overlap) when the voice and face began."""
    if not timings:
        return ""
    parts = [f"{STAGE_NAMES.get(k, k)} {v:.2f} s" for k, v in timings.items()]
    if streamed:
        firsts = [f"{label} after {streamed[key]:.2f} s" for key, label in
                  (("first_audio_s", "voice began"), ("first_video_s", "face began")) if key in streamed]
        return "Timings (streamed, so the stages overlap): " + " · ".join(parts) + " · **" + " · ".join(firsts) + "**"
    return "Timings: " + " · ".join(parts) + f" · **total {sum(timings.values()):.2f} s**"


def chat_messages(turns: Iterable[StoredTurn], *, serve: Callable[[Path], str]) -> list[dict[str, Any]]:
    """The conversation as Chatbot messages: each turn's user text, then the reply with its audio and video.

    ``serve`` turns a stored file into the path the page may fetch (``ServedFiles.conversation_file``):
    the data directory itself is never served.
    """
    messages: list[dict[str, Any]] = []
    for turn in turns:
        r = turn.record
        user = r.user_text if r.input_kind == "text" else f"🎙 {r.user_text}" if r.input_kind == "audio" else f"📹 {r.user_text}"
        cues = r.details.get("cues") if isinstance(r.details, Mapping) else ""
        messages.append({"role": "user", "content": user + (f"\n\n({cues})" if cues else "")})
        title = f"{EMOJI.get(r.user_coarse, '')} {r.user_emotion} ({r.confidence:.2f})"
        if r.emotion_source == "corrected":
            title += " · corrected by you"
        risk = r.details.get("risk") if isinstance(r.details, Mapping) else None
        if isinstance(risk, Mapping) and risk.get("level") in ("crisis", "check", "care"):
            title += {"crisis": " · 🛟 safety response", "check": " · 🛟 safety check-in", "care": " · 🛟 caring"}[
                risk.get("level")]
        if isinstance(r.details, Mapping) and "interrupted" in r.details:
            title += " · ✋ interrupted"
        failed = r.details.get("failures") if isinstance(r.details, Mapping) else None
        if failed and "rendered" in failed:
            title += " · no video"
        check = r.details.get("consistency") if isinstance(r.details, Mapping) else None
        if check:
            marks = ["?" if check.get(k) is None else "✓" if check.get(k) else "✗" for k in ("face_ok", "voice_ok")]
            title += f" · face {marks[0]} voice {marks[1]}"
        messages.append({"role": "assistant", "content": r.reply_text, "metadata": {"title": title}})
        for key in ("reply_audio", "reply_video"):
            if key in turn.media and Path(turn.media[key]).is_file():
                messages.append({"role": "assistant", "content": {"path": serve(Path(turn.media[key]))}})
    return messages


def timeline_rows(turns: Iterable[StoredTurn]) -> list[dict[str, Any]]:
    """Rows for the emotion timeline: the user's and the avatar's coarse emotion per turn.

    The two are drawn a little either side of the turn number, so equal emotions do not hide each
    other (a nominal x axis would be tidier, but Gradio's scatter plot then draws no points).
    """
    rows = []
    for turn in turns:
        r = turn.record
        rows.append({"turn": turn.index + 0.9, "emotion": r.user_coarse, "who": "you"})
        rows.append({"turn": turn.index + 1.1, "emotion": r.reply_emotion, "who": "avatar"})
    return rows


def session_choices(infos: Iterable[Any]) -> list[tuple[str, str]]:
    """Dropdown choices for past sessions: (label, id), newest first."""
    choices = []
    for info in infos:
        title = info.title or "(no turns yet)"
        choices.append((f"{info.updated_at[:16].replace('T', ' ')} · {info.avatar_id} · {info.n_turns} turns · {title}", info.id))
    return choices
