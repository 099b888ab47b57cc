"""The Gradio Blocks app: talk to an avatar by webcam, microphone or text, in sessions that persist.

``build_app(config)`` returns ``(demo, launch_kwargs)``; ``app.py`` launches it. The page:

* left: the avatar (a gallery of portraits), the turn (text, microphone or webcam), Send; the
  correction box ("not right? I feel ...") that redoes the last turn with the user's own label;
* right, side by side: the predicted emotion, the reply text, the reply audio and video, with the
  turn's per-stage timings;
* below: the conversation (every earlier turn's text, audio and video), the emotion timeline, the
  sessions (new, resume, export as zip, delete) and the custom-avatar form.

Privacy: the browser keeps a signed *pass* (``gr.BrowserState``; the API's ``sid``) naming the
browser and its open conversation (``e3rg_core.ui.access``). Without logins a browser lists, opens and
continues only its own conversations and sees only its own custom avatars (plus the shipped and
published ones); with logins, each user their own; ``ui.shared_conversations`` makes one shared list
for visitors without a login. Every handler checks the pass itself (every event is also an
endpoint). The conversation lives in SQLite under the data directory, which is never served: the page
gets copies with unguessable names that expire (``e3rg_core.ui.served``), and a reload or a server
restart brings the conversation back. Turns wait in a bounded queue; every model runs one request at
a time, so different stages of different turns overlap (one turn rendering while the next is
understood) without two on one model.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from pathlib import Path
from typing import Any

import gradio as gr

from e3rg_core.config import Config
from e3rg_core.understanding.safety import DEFAULT_RESOURCES
from e3rg_core.emotions import CANDIDATES
from e3rg_core.errors import E3rgError, InputError
from e3rg_core.events import EmotionDecided, RenderedPiece, SpokenPiece, StageFailure, StageResult
from e3rg_core.types import Stage, Understanding
from e3rg_core.ui import views
from e3rg_core.ui.access import Caller, Passes
from e3rg_core.ui.launch import ensure_stream_tools, launch_settings
from e3rg_core.ui.served import SWEEP_EVERY_S, TTL_S, ServedFiles
from e3rg_core.ui.service import ChatService, Committed

logger = logging.getLogger(__name__)

STORAGE_KEY = "e3rg_pass"  # the browser's pass (e3rg_core.ui.access) in localStorage
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
    """The configured secret, else one made once and kept in the data dir (so restarts keep sessions).

    The file is ``pass_secret``: the ``ui_secret`` of earlier versions was handed to every page as
    ``gr.BrowserState``'s key, so it is no secret and is never used again.
    """
    if config.ui.secret:
        return config.ui.secret
    path = config.data_dir / "pass_secret"
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


def _error(exc: Exception, title: str = "Could not finish the turn") -> gr.Error:
    if isinstance(exc, E3rgError):
        return gr.Error(str(exc), title=title)
    logger.exception("unexpected error in a turn")
    return gr.Error(f"Something went wrong inside e3rg ({type(exc).__name__}); the conversation is unchanged.")


def _discard_uploads(demo: gr.Blocks, *paths: str | None) -> None:
    """Remove the uploads a finished request has stored elsewhere (recordings, portrait, voice sample).

    Gradio keeps an upload in its upload folder, where anyone holding its URL may fetch it, until its
    ``delete_cache`` sweep; once the store (or the avatar folder) holds its own copy it has no use.
    Only files inside Gradio's upload folder are removed, never a path a script passed in, nor a
    file Gradio keeps for a component's value: it names files by their content, so an upload of a
    shipped portrait is the very file the gallery shows.
    """
    from gradio.utils import get_upload_folder

    folder = Path(get_upload_folder()).resolve()
    kept = {str(Path(k).resolve()) for block in demo.blocks.values() for k in getattr(block, "keep_in_cache", ())}
    for path in paths:
        if not path:
            continue
        try:
            resolved = Path(path).resolve()
            ours = resolved.is_relative_to(folder / "e3rg") or str(resolved) in kept  # not an upload's alone
            if resolved.is_relative_to(folder) and resolved.parent != folder and not ours:
                resolved.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    resolved.parent.rmdir()  # Gradio's folder for that upload, once empty
        except OSError as exc:
            logger.warning("could not remove the upload %s: %s", path, exc)


def build_app(config: Config, *, service: ChatService | None = None,
              stream: bool | None = None) -> tuple[gr.Blocks, dict[str, Any]]:
    """The Blocks app and the keyword arguments for ``launch``.

    ``stream``: speak and show each reply while it is being made (``e3rg_core.streaming``); by
    default on when ffmpeg and ffprobe can be found (``ensure_stream_tools``). The ``/turn`` and
    ``/redo`` API endpoints answer whole files either way.
    """
    from gradio.utils import get_upload_folder

    service = service or ChatService(config)
    stream = ensure_stream_tools() if stream is None else bool(stream)
    secret = ui_secret(config)
    passes = Passes(secret, shared=config.ui.shared_conversations)
    served = ServedFiles(Path(get_upload_folder()) / "e3rg", secret)
    default_avatar = service.library.default().id
    shipped = set(service.library.shipped_ids())

    def who(token, request, *, title: str = "Not allowed") -> tuple[Caller, str]:
        """The caller a request's pass stands for and the conversation it names (a bad pass is refused)."""
        try:
            return passes.open(token, login=_user(request))
        except E3rgError as exc:
            raise _error(exc, title) from exc

    def gallery_items(owner: str):
        items = []
        for p in service.avatars(owner=owner):
            # a custom portrait lies in the data dir, which is never served: the page gets a copy
            path = str(p.portrait) if p.id in shipped else served.avatar_file(p.id, p.portrait)
            items.append((path, f"{p.display_name} · {p.age} {p.gender}"))
        return items

    def avatar_choices(owner: str):
        return [(f"{p.display_name} ({p.id})", p.id) for p in service.avatars(owner=owner)]

    def past_choices(caller: Caller):
        """The caller's conversations; each choice's value is the pass that opens it."""
        infos = service.sessions(owner=caller.owner)
        return [(label, passes.issue(caller.browser, sid)) for label, sid in views.session_choices(infos)]

    def painted(session) -> tuple[list, Any]:
        turns = session.turns
        serve = lambda path: served.conversation_file(session.info.id, path)  # noqa: E731
        return views.chat_messages(turns, serve=serve), _timeline(views.timeline_rows(turns))

    def _timeline(rows):
        import pandas as pd

        turns = max((round(r["turn"]) for r in rows), default=1)
        frame = pd.DataFrame(rows, columns=["turn", "emotion", "who"])
        return gr.update(value=frame, x_lim=[0.5, turns + 0.5])  # keeps the points off the frame's edge

    # Gradio's own copies (uploads, files a handler returns) live as long as the served copies
    with gr.Blocks(title="e3rg: empathetic talking avatar", delete_cache=(int(SWEEP_EVERY_S), int(TTL_S))) as demo:
        # BrowserState sends its secret to every page: it gets a key that unlocks nothing on the server
        sid_store = gr.BrowserState(None, storage_key=STORAGE_KEY, secret=passes.storage_key)
        gr.Markdown("# e3rg: an empathetic talking avatar\nTell the avatar how your day went, by typing, "
                    "speaking or on camera. It works out how you feel, answers with empathy, and replies "
                    "in its own voice and face.")
        with gr.Row():
            with gr.Column(scale=2):
                # the page's config holds the shipped avatars only; each visitor's own join on load
                public = [p for p in service.library.profiles() if p.id in shipped]
                gallery = gr.Gallery(value=[(str(p.portrait), f"{p.display_name} · {p.age} {p.gender}")
                                            for p in public],
                                     label="Avatar", columns=4, height=180, allow_preview=False,
                                     elem_id="avatar_gallery")
                # custom avatars join the choices at run time, so the service (not the widget) checks the id
                avatar = gr.Dropdown(choices=[(f"{p.display_name} ({p.id})", p.id) for p in public],
                                     value=default_avatar, label="Talking to", allow_custom_value=True,
                                     elem_id="avatar")
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
        with gr.Accordion("Conversations", open=False) as conversations:
            with gr.Row():
                new_btn = gr.Button("New conversation", elem_id="new_session")
                # the handler checks the chosen pass itself, so a client may send one it was given
                past = gr.Dropdown(label="Past conversations", choices=[], allow_custom_value=True, elem_id="past")
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
                new_gender = gr.Dropdown(["female", "male", "other"], value=None,
                                         label="Gender (optional with a voice)", elem_id="new_gender")
            with gr.Row():
                # image_mode=None: the handler gets the upload itself (create_avatar converts it), not
                # a converted copy that would leave the original, metadata and all, in Gradio's folder
                new_portrait = gr.Image(type="filepath", label="Portrait", sources=["upload", "webcam"],
                                        image_mode=None, elem_id="new_portrait")
                new_voice = gr.Audio(type="filepath", sources=["upload", "microphone"], label="Voice sample",
                                     elem_id="new_voice")
            new_rights = gr.Checkbox(label="I have the right to use this face and this voice: they are mine, or "
                                           "the person's who agreed to it", value=False, elem_id="new_rights")
            with gr.Row():
                create_btn = gr.Button("Create avatar", elem_id="create_avatar")
                delete_avatar_btn = gr.Button("Delete the avatar I am talking to (one I made)", variant="stop",
                                              elem_id="delete_avatar")
            create_note = gr.Markdown(elem_id="create_note")

        # -- events -------------------------------------------------------------------------------
        def on_load(token, request: gr.Request):
            try:
                caller, sid = passes.open(token, login=_user(request))
            except E3rgError:  # a pass from another server or secret, or a stale one: start afresh
                caller, sid = passes.open(None, login=_user(request))
            session = service.open_session(sid, owner=caller.owner)
            messages, plot = painted(session)
            return (passes.issue(caller.browser, session.info.id),
                    gr.update(choices=avatar_choices(caller.owner), value=session.info.avatar_id),
                    gr.update(value=gallery_items(caller.owner)), messages, plot,
                    gr.update(choices=past_choices(caller), value=None))

        demo.load(on_load, inputs=[sid_store], outputs=[sid_store, avatar, gallery, chat, timeline, past],
                  api_visibility="private")

        def pick_avatar(token, evt: gr.SelectData, request: gr.Request):
            caller, _ = who(token, request)
            profiles = service.avatars(owner=caller.owner)
            return profiles[evt.index].id if 0 <= evt.index < len(profiles) else gr.update()

        gallery.select(pick_avatar, [sid_store], avatar, api_visibility="private")

        outputs = [emotion, reply_text, reply_audio, reply_video, emotion_note, timings, chat, timeline, sid_store,
                   text_in, audio_in, video_in, check_note, correction]

        def _paint(events, caller: Caller, session_id: str, uploads=()):
            """Turn the service's events into page updates: emotion + text, then audio, then video.

            A streamed turn also sends each spoken piece to the live voice and each rendered piece,
            silent, to the live face (every piece once: a streamed output appends what it is given).
            Every file the page gets is a served copy of the conversation's (``ServedFiles``); once
            the turn is stored, its ``uploads`` (the user's recordings) leave Gradio's upload folder.
            """
            def serve(path):
                return served.conversation_file(session_id, path)

            current: dict[Any, Any] = {check_note: ""}
            perception = None
            said: list[str] = []
            try:
                for event in events:
                    if isinstance(event, SpokenPiece):
                        said.append(event.text)
                        current[reply_text] = " ".join(said)
                        yield {**current, live_audio: serve(event.speech.wav_path)}
                    elif isinstance(event, RenderedPiece):
                        from e3rg_core.media.mp4 import without_audio

                        silent = event.video.mp4_path.with_name(event.video.mp4_path.stem + "_face.mp4")
                        yield {**current, live_video: str(without_audio(event.video.mp4_path, silent))}
                    elif isinstance(event, StageResult) and event.stage is Stage.HEARD:
                        perception = event.value.perception
                    elif (u := _decision_of(event)) is not None:
                        source = "corrected" if u.corrected else "predicted"
                        note = views.emotion_markdown(
                            u.emotion, u.coarse, u.confidence, source=source,
                            cues=perception.cues if perception else "",
                            notes=perception.notes if perception else (),
                            voters=[v.voter for v in u.votes] if source == "predicted" else (),
                            risk=u.risk.level, resources=config.safety.resources.strip() or DEFAULT_RESOURCES)
                        current.update({emotion: views.emotion_scores(u.coarse_distribution, predicted=u.coarse),
                                        reply_text: u.reply if isinstance(u, Understanding) else " ".join(said),
                                        emotion_note: note})
                        yield current
                    elif isinstance(event, StageResult) and isinstance(event.value, StageFailure):
                        current[check_note] = views.failure_markdown(event.value.message)
                        yield current
                    elif isinstance(event, StageResult) and event.stage is Stage.RENDERED:
                        current[reply_video] = serve(event.value.mp4_path)
                        yield current
                    elif isinstance(event, StageResult) and event.stage is Stage.CHECKED:
                        current[check_note] = views.consistency_markdown(event.value.summary())
                    elif isinstance(event, StageResult) and event.stage is Stage.SPOKEN:
                        current[reply_audio] = serve(event.value.wav_path)
                        yield current
                    elif isinstance(event, Committed):
                        turn = event.turn
                        _discard_uploads(demo, *uploads)  # the store holds its own copies now
                        session = service.session(event.session.id, owner=caller.owner)
                        messages, plot = painted(session)
                        current.update({
                            reply_audio: serve(turn.media["reply_audio"]),
                            reply_video: serve(turn.media["reply_video"]) if "reply_video" in turn.media else None,
                            timings: views.timings_markdown(turn.record.timings_s, turn.record.details.get("streamed")),
                            chat: messages, timeline: plot, sid_store: passes.issue(caller.browser, event.session.id),
                            text_in: "", audio_in: None, video_in: None, correction: None,
                        })
                        yield current
            except Exception as exc:  # every failure: a clear message, the session untouched
                raise _error(exc) from exc

        def _turn(live, token, avatar_id, text, audio, video, request, progress):
            try:
                # no pass (a first API call) is a new browser; a conversation that is gone, or not
                # the caller's, gives way to a new one of theirs
                caller, sid = passes.open(token, login=_user(request))
                session = service.open_session(sid, owner=caller.owner, avatar_id=avatar_id)
                progress(0.05, desc="listening")
                events = service.turn(session.info.id, avatar_id=avatar_id, text=text or "", audio_path=audio,
                                      video_path=video, owner=caller.owner, stream=live)
            except Exception as exc:
                raise _error(exc) from exc
            yield from _paint(_progressed(events, progress), caller, session.info.id, uploads=(audio, video))

        def _redo(live, token, avatar_id, feeling, request, progress):
            try:
                caller, sid = passes.open(token, login=_user(request))
                if not sid:
                    raise InputError("there is no conversation open to redo; say something first")
                events = service.regenerate(sid, feeling or "", avatar_id=avatar_id, owner=caller.owner,
                                            stream=live)
                first = next(events)
            except Exception as exc:
                raise _error(exc) from exc

            def chained():
                yield first
                yield from events

            yield from _paint(_progressed(chained(), progress), caller, sid)

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

        def change_avatar(token, avatar_id, request: gr.Request):
            caller, sid = who(token, request)
            if sid and avatar_id:
                try:
                    service.set_avatar(sid, avatar_id, owner=caller.owner)
                except E3rgError as exc:
                    raise _error(exc, "Could not change the avatar") from exc

        avatar.change(change_avatar, inputs=[sid_store, avatar], outputs=None, api_visibility="private")

        def fresh_page(caller: Caller, session) -> tuple:
            """Every output of ``new_outputs`` for an empty conversation."""
            messages, plot = painted(session)
            return (passes.issue(caller.browser, session.info.id), messages, plot,
                    gr.update(choices=past_choices(caller), value=None), None, "", None, None, "", {}, "", "", "")

        def new_session(sid, avatar_id, request: gr.Request):
            """Start a new conversation in this browser (no ``sid``: in a new one); returns its pass first."""
            caller, _ = who(sid, request)
            try:
                session = service.new_session(avatar_id, owner=caller.owner)
            except E3rgError as exc:
                raise _error(exc, "Could not start a conversation") from exc
            return fresh_page(caller, session)

        new_outputs = [sid_store, chat, timeline, past, export_file, reply_text, reply_audio, reply_video,
                       emotion_note, emotion, timings, text_in, check_note]
        new_btn.click(new_session, inputs=[sid_store, avatar], outputs=new_outputs, api_name="new_session")

        def resume_session(chosen, request: gr.Request):
            """Open a conversation from the list; ``chosen`` is its pass (a bare id is refused)."""
            if not chosen:
                raise gr.Error("Pick a conversation from the list first.")
            caller, sid = who(chosen, request, title="Could not open the conversation")
            try:
                if not sid:
                    raise InputError("that pass names no conversation; pick one from the list")
                session, note = service.resume(sid, owner=caller.owner)
            except E3rgError as exc:
                raise _error(exc, "Could not open the conversation") from exc
            if note:  # its avatar was removed: the default answers from now on
                gr.Info(note)
            messages, plot = painted(session)
            return (passes.issue(caller.browser, sid), gr.update(value=session.info.avatar_id), messages, plot)

        resume.click(resume_session, inputs=[past], outputs=[sid_store, avatar, chat, timeline], api_name="resume")

        def list_conversations(sid, request: gr.Request):
            """The caller's conversations as they are now (titles and turn counts change with every turn)."""
            caller, _ = who(sid, request)
            return gr.update(choices=past_choices(caller))

        conversations.expand(list_conversations, inputs=[sid_store], outputs=[past], api_visibility="private")

        def export_session(sid, request: gr.Request):
            """The open conversation as a zip (JSON + media), served like its media and as short-lived."""
            caller, session_id = who(sid, request, title="Could not export")
            try:
                if not session_id:
                    raise InputError("there is no conversation open to export")
                service.session(session_id, owner=caller.owner)  # refused before anything is written
                return str(service.export(session_id, owner=caller.owner, folder=served.new_folder(session_id)))
            except E3rgError as exc:
                raise _error(exc, "Could not export") from exc

        export_btn.click(export_session, inputs=[sid_store], outputs=[export_file], api_name="export")

        def delete_session(sid, avatar_id, request: gr.Request):
            """Delete the open conversation (its turns, recordings, replies and served copies); open a new one."""
            caller, session_id = who(sid, request, title="Could not delete")
            try:
                if not session_id:
                    raise InputError("there is no conversation open to delete")
                service.delete(session_id, owner=caller.owner)
                served.forget_conversation(session_id)
                session = service.new_session(avatar_id, owner=caller.owner)
            except E3rgError as exc:
                raise _error(exc, "Could not delete") from exc
            gr.Info("Conversation deleted.")
            return fresh_page(caller, session)

        delete_btn.click(delete_session, inputs=[sid_store, avatar], outputs=new_outputs, api_name="delete_session")

        @GPU(duration=60)
        def create_avatar(name, age, gender, portrait, voice, rights, sid, request: gr.Request):
            """A custom avatar from a portrait and an optional voice sample; it is the caller's alone."""
            if not portrait:
                raise gr.Error("Upload a portrait first.")
            if not sid:
                raise gr.Error("Creating an avatar needs the pass (sid) of the browser it will belong to: "
                               "the sid returned by /new_session or /turn.", title="Could not create the avatar")
            caller, session_id = who(sid, request, title="Could not create the avatar")
            try:
                profile = service.create_avatar(owner=caller.owner, display_name=name or "", portrait=Path(portrait),
                                                voice_sample=Path(voice) if voice else None, age=age or "young",
                                                gender=gender or None, rights_confirmed=rights is True)
            except Exception as exc:
                raise _error(exc, "Could not create the avatar") from exc
            _discard_uploads(demo, portrait, voice)  # stored as the avatar's own (the portrait without metadata)
            if session_id:
                try:
                    service.set_avatar(session_id, profile.id, owner=caller.owner)
                except E3rgError as exc:  # the avatar exists; the conversation just keeps its own
                    logger.info("new avatar %s not set on session %s: %s", profile.id, session_id, exc)
            note = (f"Created **{profile.display_name}** ({profile.id}): {profile.gender}, {profile.age}, "
                    f"voice {profile.voice.voice} {profile.voice.pitch_shift_semitones:+.1f} semitones. "
                    "Only you can see it.")
            from e3rg_core.memory.custom import expression_warning

            warning = expression_warning(profile.portrait)
            note += f"\n\nNote: {warning}." if warning else ""
            return (note, gr.update(value=gallery_items(caller.owner)),
                    gr.update(choices=avatar_choices(caller.owner), value=profile.id), None, None)

        create_btn.click(create_avatar, inputs=[new_name, new_age, new_gender, new_portrait, new_voice, new_rights,
                                                sid_store],
                         outputs=[create_note, gallery, avatar, new_portrait, new_voice], api_name="create_avatar",
                         concurrency_limit=TURNS_IN_FLIGHT, concurrency_id=HEAVY)

        def delete_avatar(sid, avatar_id, request: gr.Request):
            """Delete a custom avatar the caller made (portrait, voice sample, profile); talk to the default again."""
            caller, _ = who(sid, request, title="Could not delete the avatar")
            try:
                if not avatar_id:
                    raise InputError("choose the avatar to delete under 'Talking to' first")
                service.delete_avatar(avatar_id, owner=caller.owner)
            except E3rgError as exc:
                raise _error(exc, "Could not delete the avatar") from exc
            served.forget_avatar(avatar_id)
            return (f"Deleted the avatar {avatar_id}, its portrait and its voice sample.",
                    gr.update(value=gallery_items(caller.owner)),
                    gr.update(choices=avatar_choices(caller.owner), value=default_avatar))

        delete_avatar_btn.click(delete_avatar, inputs=[sid_store, avatar], outputs=[create_note, gallery, avatar],
                                api_name="delete_avatar")

    demo.queue(max_size=config.ui.queue_size, default_concurrency_limit=1)
    return demo, {**launch_settings(config), "css": CSS, **({"js": LIVE_SYNC_JS} if stream else {})}


def _decision_of(event):
    """The emotion (and reply, once written) an event carries: a streamed turn's decision or stage 1's result."""
    if isinstance(event, EmotionDecided):
        return event.decision
    if isinstance(event, StageResult) and event.stage is Stage.UNDERSTOOD:
        return event.value
    return None


def _progressed(events, progress):
    """Report each stage to the progress bar as it finishes."""
    fractions = {Stage.HEARD: (0.2, "understanding"), Stage.UNDERSTOOD: (0.45, "speaking"),
                 Stage.SPOKEN: (0.65, "animating"), Stage.RENDERED: (0.85, "checking its own face and voice"),
                 Stage.CHECKED: (0.95, "saving")}
    for event in events:
        if isinstance(event, StageResult) and event.stage in fractions:
            progress(fractions[event.stage][0], desc=fractions[event.stage][1])
        yield event
