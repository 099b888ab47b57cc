"""The Gradio Blocks app: talk to an avatar by webcam, microphone or text, in sessions that persist.

``build_app(config)`` returns ``(demo, launch_kwargs)``; ``app.py`` launches it. The page:

* left: the avatar (a gallery of portraits), the turn (text, microphone or webcam), Send; the
  correction box ("not right? I feel ...") that redoes the last turn with the user's own label;
* right, side by side: the predicted emotion, the reply text, the reply audio and video, with the
  turn's per-stage timings;
* below: the conversation (every earlier turn's text, audio and video), the emotion timeline, the
  sessions (new, resume, export as zip, delete) and the custom-avatar form.

The session id lives in the browser (``gr.BrowserState`` under a fixed key, signed with the
configured secret), the session itself in SQLite under the data directory, which is never served:
a reload or a server restart brings the conversation back. Turns wait in a bounded queue; every
model runs one request at a time, so different stages of different turns overlap (one turn
rendering while the next is understood) without two on one model.
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path
from typing import Any

import gradio as gr

from e3rg_core.config import Config
from e3rg_core.understanding.safety import DEFAULT_RESOURCES
from e3rg_core.emotions import CANDIDATES
from e3rg_core.errors import E3rgError
from e3rg_core.pipeline import StageFailure, StageResult
from e3rg_core.ui import views
from e3rg_core.streaming import EmotionDecided, RenderedPiece, SpokenPiece
from e3rg_core.ui.launch import ensure_stream_tools, launch_settings
from e3rg_core.ui.service import ChatService, Committed

logger = logging.getLogger(__name__)

STORAGE_KEY = "e3rg_session"
HEAVY = "pipeline"  # the concurrency id shared by every event that runs a model
#: turns in flight at once; each model still runs one request at a time (the pipeline's stage
#: locks), so one turn can be rendering while the next is being understood
TURNS_IN_FLIGHT = 3

try:  # ZeroGPU on Hugging Face Spaces; a no-op decorator anywhere else
    import spaces  # type: ignore

    GPU = spaces.GPU
except ImportError:  # pragma: no cover - depends on the host
    def GPU(fn=None, **_kwargs):  # noqa: N802
        return fn if callable(fn) else (lambda f: f)

CSS = """
#emotion .output-class { font-size: 1.1rem; }
#reply_text textarea { font-size: 1.05rem; }
"""

#: Keeps the streamed face on the streamed voice. The voice starts first (its pieces are ready
#: before their video); the face's pieces are silent, and whenever the voice's position lies in
#: video already received, the face is moved there, so it joins in sync instead of lagging.
LIVE_SYNC_JS = """
() => {
  setInterval(() => {
    const voice = document.querySelector('#live_audio audio');
    const face = document.querySelector('#live_video video');
    if (!voice || !face) return;
    face.muted = true;
    if (voice.paused || voice.ended) return;
    const t = voice.currentTime;
    for (let i = 0; i < face.buffered.length; i++) {
      if (face.buffered.start(i) <= t && t < face.buffered.end(i)) {
        if (Math.abs(face.currentTime - t) > 0.2) face.currentTime = t;
        if (face.paused) face.play().catch(() => {});
        return;
      }
    }
  }, 200);
}
"""


def ui_secret(config: Config) -> str:
    """The configured secret, else one made once and kept in the data dir (so restarts keep sessions)."""
    if config.ui.secret:
        return config.ui.secret
    path = config.data_dir / "ui_secret"
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        value = secrets.token_hex(32)
        partial = path.with_suffix(".part")
        partial.write_text(value, encoding="utf-8")
        os.chmod(partial, 0o600)
        partial.replace(path)
        return value


def _user(request: gr.Request | None) -> str:
    return (getattr(request, "username", None) or "") if request is not None else ""


def _error(exc: Exception) -> gr.Error:
    if isinstance(exc, E3rgError):
        return gr.Error(str(exc), title="Could not finish the turn")
    logger.exception("unexpected error in a turn")
    return gr.Error(f"Something went wrong inside e3rg ({type(exc).__name__}); the conversation is unchanged.")


def build_app(config: Config, *, service: ChatService | None = None,
              stream: bool | None = None) -> tuple[gr.Blocks, dict[str, Any]]:
    """The Blocks app and the keyword arguments for ``launch``.

    ``stream``: speak and show each reply while it is being made (``e3rg_core.streaming``); by
    default on when ffmpeg and ffprobe can be found (``ensure_stream_tools``). The ``/turn`` and
    ``/redo`` API endpoints answer whole files either way.
    """
    service = service or ChatService(config)
    stream = ensure_stream_tools() if stream is None else bool(stream)
    secret = ui_secret(config)
    default_avatar = service.library.default().id

    def gallery_items():
        return [(str(p.portrait), f"{p.display_name} · {p.age} {p.gender}") for p in service.avatars()]

    def avatar_choices():
        return [(f"{p.display_name} ({p.id})", p.id) for p in service.avatars()]

    def painted(session) -> tuple[list, Any]:
        turns = session.turns
        return views.chat_messages(turns), _timeline(views.timeline_rows(turns))

    def _timeline(rows):
        import pandas as pd

        turns = max((round(r["turn"]) for r in rows), default=1)
        frame = pd.DataFrame(rows, columns=["turn", "emotion", "who"])
        return gr.update(value=frame, x_lim=[0.5, turns + 0.5])  # keeps the points off the frame's edge

    with gr.Blocks(title="e3rg: empathetic talking avatar", delete_cache=(1800, 3600)) as demo:
        sid_store = gr.BrowserState(None, storage_key=STORAGE_KEY, secret=secret)
        gr.Markdown("# e3rg: an empathetic talking avatar\nTell the avatar how your day went, by typing, "
                    "speaking or on camera. It works out how you feel, answers with empathy, and replies "
                    "in its own voice and face.")
        with gr.Row():
            with gr.Column(scale=2):
                gallery = gr.Gallery(value=gallery_items(), label="Avatar", columns=4, height=180,
                                     allow_preview=False, elem_id="avatar_gallery")
                # custom avatars join the choices at run time, so the service (not the widget) checks the id
                avatar = gr.Dropdown(choices=avatar_choices(), value=default_avatar, label="Talking to",
                                     allow_custom_value=True, elem_id="avatar")
                with gr.Tab("Type"):
                    text_in = gr.Textbox(label="Your message", lines=3, max_length=2000,
                                         placeholder="How are you feeling today?", elem_id="text_in")
                with gr.Tab("Microphone"):
                    audio_in = gr.Audio(sources=["microphone", "upload"], type="filepath", label="Speak",
                                        elem_id="audio_in")
                with gr.Tab("Webcam"):
                    # kept as recorded (WebM from Chromium): e3rg decodes it with its own ffmpeg
                    video_in = gr.Video(sources=["webcam", "upload"], include_audio=True,
                                        label="Record yourself", elem_id="video_in",
                                        webcam_options=gr.WebcamOptions(mirror=True, constraints={
                                            "video": {"width": {"ideal": 640}, "height": {"ideal": 480}}}))
                send = gr.Button("Send", variant="primary", elem_id="send")
                with gr.Row():
                    correction = gr.Dropdown(choices=list(CANDIDATES), value=None, allow_custom_value=True,
                                             label="Not right? I feel…", elem_id="correction", scale=3)
                    redo = gr.Button("Redo the reply", elem_id="redo", scale=1)
            with gr.Column(scale=5):
                with gr.Row(equal_height=True):
                    emotion = gr.Label(label="Your emotion", num_top_classes=3, elem_id="emotion")
                    reply_text = gr.Textbox(label="Reply", lines=5, interactive=False, elem_id="reply_text")
                with gr.Row(equal_height=True):
                    # streamed on the page; the whole files (for /turn and /redo) sit in the hidden pair
                    live_audio = gr.Audio(label="Voice", streaming=True, autoplay=True, interactive=False,
                                          elem_id="live_audio", visible=stream)
                    live_video = gr.Video(label="Avatar", streaming=True, autoplay=True, interactive=False,
                                          elem_id="live_video", visible=stream)
                    reply_audio = gr.Audio(label="Voice", type="filepath", interactive=False, autoplay=True,
                                           elem_id="reply_audio", visible=not stream)
                    reply_video = gr.Video(label="Avatar", interactive=False, autoplay=True, elem_id="reply_video",
                                           visible=not stream)
                emotion_note = gr.Markdown(elem_id="emotion_note")
                check_note = gr.Markdown(elem_id="check_note")
                timings = gr.Markdown(elem_id="timings")
        chat = gr.Chatbot(label="Conversation", height=420, elem_id="chat", buttons=["copy"])
        timeline = gr.ScatterPlot(x="turn", y="emotion", color="who", label="Emotion timeline per turn (blue: you, orange: the avatar)",
                                  elem_id="timeline", height=280, x_title="turn", y_title="emotion",
                                  color_map={"you": "#1f77b4", "avatar": "#ff7f0e"})
        with gr.Accordion("Conversations", open=False):
            with gr.Row():
                new_btn = gr.Button("New conversation", elem_id="new_session")
                past = gr.Dropdown(label="Past conversations", choices=[], elem_id="past")
                resume = gr.Button("Resume", elem_id="resume")
            with gr.Row():
                export_btn = gr.Button("Export (JSON + media, zip)", elem_id="export")
                export_file = gr.File(label="Export", interactive=False, elem_id="export_file")
                delete_btn = gr.Button("Delete this conversation", variant="stop", elem_id="delete")
        with gr.Accordion("Make your own avatar", open=False):
            gr.Markdown("Upload a portrait with one clear, frontal face and, optionally, at least 5 seconds "
                        "of someone speaking. Only upload a face and voice you have the right to use.")
            with gr.Row():
                new_name = gr.Textbox(label="Name", max_length=40, elem_id="new_name")
                new_age = gr.Dropdown(["child", "young", "middle-aged", "elderly"], value="young", label="Age")
                new_gender = gr.Dropdown(["female", "male", "other"], value=None, label="Gender (optional with a voice)")
            with gr.Row():
                new_portrait = gr.Image(type="filepath", label="Portrait", sources=["upload", "webcam"],
                                        elem_id="new_portrait")
                new_voice = gr.Audio(type="filepath", sources=["upload", "microphone"], label="Voice sample",
                                     elem_id="new_voice")
            create_btn = gr.Button("Create avatar", elem_id="create_avatar")
            create_note = gr.Markdown(elem_id="create_note")

        # -- events -------------------------------------------------------------------------------
        def on_load(sid, request: gr.Request):
            session = service.open_session(sid, owner=_user(request))
            messages, plot = painted(session)
            choices = views.session_choices(service.sessions(owner=_user(request)))
            return (session.info.id, gr.update(choices=avatar_choices(), value=session.info.avatar_id),
                    messages, plot, gr.update(choices=choices, value=None))

        demo.load(on_load, inputs=[sid_store], outputs=[sid_store, avatar, chat, timeline, past],
                  api_visibility="private")

        def pick_avatar(evt: gr.SelectData):
            profiles = service.avatars()
            return profiles[evt.index].id if 0 <= evt.index < len(profiles) else gr.update()

        gallery.select(pick_avatar, None, avatar, api_visibility="private")

        outputs = [emotion, reply_text, reply_audio, reply_video, emotion_note, timings, chat, timeline, sid_store,
                   text_in, audio_in, video_in, check_note, correction]

        def _paint(events, request, workdir=None):
            """Turn the service's events into page updates: emotion + text, then audio, then video.

            A streamed turn also sends each spoken piece to the live voice and each rendered piece,
            silent, to the live face (every piece once: a streamed output appends what it is given).
            """
            current: dict[Any, Any] = {check_note: ""}
            perception = None
            said: list[str] = []
            try:
                for event in events:
                    if isinstance(event, SpokenPiece):
                        said.append(event.text)
                        current[reply_text] = " ".join(said)
                        yield {**current, live_audio: str(event.speech.wav_path)}
                    elif isinstance(event, RenderedPiece):
                        from e3rg_core.media.mp4 import without_audio

                        silent = event.video.mp4_path.with_name(event.video.mp4_path.stem + "_face.mp4")
                        yield {**current, live_video: str(without_audio(event.video.mp4_path, silent))}
                    elif isinstance(event, StageResult) and event.stage == "heard":
                        perception = event.value.perception
                    elif (u := _understanding_of(event)) is not None:
                        source = "corrected" if u.votes and u.votes[0].voter == "user" else "predicted"
                        note = views.emotion_markdown(
                            u.emotion, u.coarse, u.confidence, source=source,
                            cues=perception.cues if perception else "",
                            notes=perception.notes if perception else (),
                            voters=[v.voter for v in u.votes] if source == "predicted" else (),
                            risk=u.risk.level, resources=config.safety.resources.strip() or DEFAULT_RESOURCES)
                        current.update({emotion: views.emotion_scores(u.coarse_distribution),
                                        reply_text: u.reply or " ".join(said), emotion_note: note})
                        yield current
                    elif isinstance(event, StageResult) and isinstance(event.value, StageFailure):
                        current[check_note] = views.failure_markdown(event.value.message)
                        yield current
                    elif isinstance(event, StageResult) and event.stage == "rendered":
                        current[reply_video] = str(event.value.mp4_path)
                        yield current
                    elif isinstance(event, StageResult) and event.stage == "checked":
                        current[check_note] = views.consistency_markdown(event.value.summary())
                    elif isinstance(event, StageResult) and event.stage == "spoken":
                        current[reply_audio] = str(event.value.wav_path)
                        yield current
                    elif isinstance(event, Committed):
                        turn = event.turn
                        session = service.session(event.session.id, owner=_user(request))
                        messages, plot = painted(session)
                        current.update({
                            reply_audio: views.served_copy(turn.media["reply_audio"]),
                            reply_video: views.served_copy(turn.media["reply_video"]) if "reply_video" in turn.media else None,
                            timings: views.timings_markdown(turn.record.timings_s, turn.record.details.get("streamed")),
                            chat: messages, timeline: plot, sid_store: event.session.id,
                            text_in: "", audio_in: None, video_in: None, correction: None,
                        })
                        yield current
            except Exception as exc:  # every failure: a clear message, the session untouched
                raise _error(exc) from exc

        def _turn(live, sid, avatar_id, text, audio, video, request, progress):
            try:
                session = service.open_session(sid, owner=_user(request), avatar_id=avatar_id)
                progress(0.05, desc="listening")
                events = service.turn(session.info.id, avatar_id=avatar_id, text=text or "", audio_path=audio,
                                      video_path=video, owner=_user(request), stream=live)
            except Exception as exc:
                raise _error(exc) from exc
            yield from _paint(_progressed(events, progress), request)

        def _redo(live, sid, avatar_id, feeling, request, progress):
            try:
                events = service.regenerate(sid or "", feeling or "", avatar_id=avatar_id, owner=_user(request),
                                            stream=live)
                first = next(events)
            except Exception as exc:
                raise _error(exc) from exc

            def chained():
                yield first
                yield from events

            yield from _paint(_progressed(chained(), progress), request)

        @GPU(duration=120)
        def respond(sid, avatar_id, text, audio, video, request: gr.Request, progress=gr.Progress()):
            """One turn: the emotion and reply first, then the voice, then the face (whole files)."""
            yield from _turn(False, sid, avatar_id, text, audio, video, request, progress)

        @GPU(duration=120)
        def respond_live(sid, avatar_id, text, audio, video, request: gr.Request, progress=gr.Progress()):
            """One turn, streamed: the voice starts with the reply's first sentence, the face follows."""
            yield from _turn(True, sid, avatar_id, text, audio, video, request, progress)

        @GPU(duration=120)
        def redo_turn(sid, avatar_id, feeling, request: gr.Request, progress=gr.Progress()):
            """Redo the last turn with the user's own emotion (whole files)."""
            yield from _redo(False, sid, avatar_id, feeling, request, progress)

        @GPU(duration=120)
        def redo_live(sid, avatar_id, feeling, request: gr.Request, progress=gr.Progress()):
            """Redo the last turn with the user's own emotion, streamed."""
            yield from _redo(True, sid, avatar_id, feeling, request, progress)

        turn_inputs = [sid_store, avatar, text_in, audio_in, video_in]
        redo_inputs = [sid_store, avatar, correction]
        heavy = {"concurrency_limit": TURNS_IN_FLIGHT, "concurrency_id": HEAVY}
        if stream:
            # the page streams; scripts get whole files from /turn and /redo (a streamed output would
            # reach them as an HLS playlist), wired to buttons that are never shown
            live_outputs = outputs + [live_audio, live_video]
            send.click(respond_live, inputs=turn_inputs, outputs=live_outputs, api_visibility="private", **heavy)
            text_in.submit(respond_live, inputs=turn_inputs, outputs=live_outputs, api_visibility="private", **heavy)
            redo.click(redo_live, inputs=redo_inputs, outputs=live_outputs, api_visibility="private", **heavy)
            api_turn = gr.Button(visible=False, elem_id="api_turn")
            api_redo = gr.Button(visible=False, elem_id="api_redo")
            api_turn.click(respond, inputs=turn_inputs, outputs=outputs, api_name="turn", **heavy)
            api_redo.click(redo_turn, inputs=redo_inputs, outputs=outputs, api_name="redo", **heavy)
        else:
            send.click(respond, inputs=turn_inputs, outputs=outputs, api_name="turn", **heavy)
            text_in.submit(respond, inputs=turn_inputs, outputs=outputs, api_visibility="private", **heavy)
            redo.click(redo_turn, inputs=redo_inputs, outputs=outputs, api_name="redo", **heavy)

        def change_avatar(sid, avatar_id, request: gr.Request):
            if sid and avatar_id:
                try:
                    service.set_avatar(sid, avatar_id, owner=_user(request))
                except E3rgError as exc:
                    raise _error(exc) from exc

        avatar.change(change_avatar, inputs=[sid_store, avatar], outputs=None, api_visibility="private")

        def new_session(avatar_id, request: gr.Request):
            session = service.new_session(avatar_id, owner=_user(request))
            messages, plot = painted(session)
            choices = views.session_choices(service.sessions(owner=_user(request)))
            return (session.info.id, messages, plot, gr.update(choices=choices, value=None), None, "", None, None,
                    "", {}, "", "", "")

        new_outputs = [sid_store, chat, timeline, past, export_file, reply_text, reply_audio, reply_video,
                       emotion_note, emotion, timings, text_in, check_note]
        new_btn.click(new_session, inputs=[avatar], outputs=new_outputs, api_name="new_session")

        def resume_session(chosen, request: gr.Request):
            if not chosen:
                raise gr.Error("Pick a conversation from the list first.")
            try:
                session = service.session(chosen, owner=_user(request))
            except E3rgError as exc:
                raise _error(exc) from exc
            messages, plot = painted(session)
            return session.info.id, gr.update(value=session.info.avatar_id), messages, plot

        resume.click(resume_session, inputs=[past], outputs=[sid_store, avatar, chat, timeline], api_name="resume")

        def export_session(sid, request: gr.Request):
            try:
                return str(service.export(sid or "", owner=_user(request)))
            except E3rgError as exc:
                raise _error(exc) from exc

        export_btn.click(export_session, inputs=[sid_store], outputs=[export_file], api_name="export")

        def delete_session(sid, avatar_id, request: gr.Request):
            try:
                service.delete(sid or "", owner=_user(request))
            except E3rgError as exc:
                raise _error(exc) from exc
            gr.Info("Conversation deleted.")
            return new_session(avatar_id, request)

        delete_btn.click(delete_session, inputs=[sid_store, avatar], outputs=new_outputs, api_name="delete_session")

        @GPU(duration=60)
        def create_avatar(name, age, gender, portrait, voice, sid, request: gr.Request):
            if not portrait:
                raise gr.Error("Upload a portrait first.")
            try:
                profile = service.create_avatar(display_name=name or "", portrait=Path(portrait),
                                                voice_sample=Path(voice) if voice else None, age=age or "young",
                                                gender=gender or None)
                if sid:
                    service.set_avatar(sid, profile.id, owner=_user(request))
            except Exception as exc:
                raise _error(exc) from exc
            note = (f"Created **{profile.display_name}** ({profile.id}): {profile.gender}, {profile.age}, "
                    f"voice {profile.voice.voice} {profile.voice.pitch_shift_semitones:+.1f} semitones.")
            return (note, gr.update(value=gallery_items()), gr.update(choices=avatar_choices(), value=profile.id))

        create_btn.click(create_avatar, inputs=[new_name, new_age, new_gender, new_portrait, new_voice, sid_store],
                         outputs=[create_note, gallery, avatar], api_name="create_avatar",
                         concurrency_limit=TURNS_IN_FLIGHT, concurrency_id=HEAVY)

    demo.queue(max_size=config.ui.queue_size, default_concurrency_limit=1)
    return demo, {**launch_settings(config), "css": CSS, **({"js": LIVE_SYNC_JS} if stream else {})}


def _understanding_of(event):
    """The emotion (and reply, once written) an event carries: a streamed turn's decision or stage 1's result."""
    if isinstance(event, EmotionDecided):
        return event.understanding
    if isinstance(event, StageResult) and event.stage == "understood":
        return event.value
    return None


def _progressed(events, progress):
    """Report each stage to the progress bar as it finishes."""
    fractions = {"heard": (0.2, "understanding"), "understood": (0.45, "speaking"), "spoken": (0.65, "animating"),
                 "rendered": (0.85, "checking its own face and voice"), "checked": (0.95, "saving")}
    for event in events:
        if isinstance(event, StageResult) and event.stage in fractions:
            progress(fractions[event.stage][0], desc=fractions[event.stage][1])
        yield event
