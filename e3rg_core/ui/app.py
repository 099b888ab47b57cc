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
import functools
import inspect
import json
import logging
import os
import secrets
import tempfile
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import gradio as gr

from e3rg_core.config import Config
from e3rg_core.emotions import CANDIDATES
from e3rg_core.errors import E3rgError
from e3rg_core.ui import scripts
from e3rg_core.ui.access import Passes
from e3rg_core.ui.handlers import PageHandlers, PageView, TurnResult, TurnView, last
from e3rg_core.ui.launch import ensure_stream_tools, launch_settings
from e3rg_core.ui.live import RECOGNITION_WINDOW_S, STATUS_TEXT, LiveRooms, listener_options
from e3rg_core.ui.served import SWEEP_EVERY_S, TTL_S, ServedFiles
from e3rg_core.ui.service import ChatService
from e3rg_core.understanding.safety import DEFAULT_RESOURCES

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
.e3rg-hidden { display: none !important; }
#live_status { font-size: 1.15rem; font-weight: 600; }
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
    logger.exception("unexpected error in a handler")
    return gr.Error(f"Something went wrong inside e3rg ({type(exc).__name__}); the conversation is unchanged.",
                    title=title)


def shown(title: str = "Could not finish the turn") -> Callable[[Callable], Callable]:
    """The one error wrapper of the page's events: an ``E3rgError`` becomes a ``gr.Error`` saying what is
    allowed; anything else is logged and becomes a plain message (the conversation is unchanged)."""
    def wrap(fn: Callable) -> Callable:
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def generator(*args, **kwargs):
                try:
                    yield from fn(*args, **kwargs)
                except gr.Error:
                    raise
                except Exception as exc:
                    raise _error(exc, title) from exc
            return generator

        @functools.wraps(fn)
        def plain(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except gr.Error:
                raise
            except Exception as exc:
                raise _error(exc, title) from exc
        return plain
    return wrap


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


class Widgets(SimpleNamespace):
    """The page's components by name (``_layout`` fills it; the wiring functions read it)."""


def build_app(config: Config, *, service: ChatService | None = None,
              stream: bool | None = None) -> tuple[gr.Blocks, dict[str, Any]]:
    """The Blocks app and the keyword arguments for ``launch``.

    ``stream``: speak and show each reply while it is being made (``e3rg_core.streaming``); by
    default on when ffmpeg and ffprobe can be found (``ensure_stream_tools``). The API's ``/turn`` and
    ``/redo`` answer whole files either way.
    """
    from gradio.utils import get_upload_folder

    service = service or ChatService(config)
    stream = ensure_stream_tools() if stream is None else bool(stream)
    secret = ui_secret(config)
    passes = Passes(secret, shared=config.ui.shared_conversations)
    served = ServedFiles(Path(get_upload_folder()) / "e3rg", secret)
    # Gradio's own copies (uploads, files a handler returns) live as long as the served copies
    with gr.Blocks(title="e3rg: empathetic talking avatar", delete_cache=(int(SWEEP_EVERY_S), int(TTL_S))) as demo:
        handlers = PageHandlers(config, service, passes, served,
                                resources=config.safety.resources.strip() or DEFAULT_RESOURCES,
                                discard=lambda *paths: _discard_uploads(demo, *paths))
        w = _layout(handlers, passes, stream)
        _wire_page(demo, w, handlers)
        _wire_turns(w, handlers, stream)
        if stream:  # hands-free talk needs the streamed voice (its player says where it is)
            rooms = LiveRooms(Path(tempfile.gettempdir()) / "e3rg-live" / uuid.uuid4().hex[:12],
                              lambda: functools.partial(service.pipeline.perceiver.transcriber().transcribe,
                                                        window_s=RECOGNITION_WINDOW_S),
                              options=listener_options(config.ui.pause_s, config.ui.max_recording_s))
            _wire_live(demo, w, handlers, rooms)
        _wire_sessions(w, handlers)
        _wire_avatars(w, handlers)
        _wire_api(w, handlers)
    demo.queue(max_size=config.ui.queue_size, default_concurrency_limit=1)
    return demo, {**launch_settings(config), "css": CSS, **({"js": scripts.page_js(STATUS_TEXT)} if stream else {})}


# -- layout ---------------------------------------------------------------------------------------
def _layout(handlers: PageHandlers, passes: Passes, stream: bool) -> Widgets:
    """Every component of the page (and the API's own inputs and outputs, never shown)."""
    w = Widgets(stream=stream)
    # BrowserState sends its secret to every page: it gets a key that unlocks nothing on the server
    w.sid_store = gr.BrowserState(None, storage_key=STORAGE_KEY, secret=passes.storage_key)
    gr.Markdown("# e3rg: an empathetic talking avatar\nTell the avatar how your day went, by typing, "
                "speaking or on camera. It works out how you feel, answers with empathy, and replies "
                "in its own voice and face.")
    with gr.Row():
        with gr.Column(scale=2):
            _talk_column(w, handlers)
        with gr.Column(scale=5):
            _reply_column(w, stream)
    w.chat = gr.Chatbot(label="Conversation", height=420, elem_id="chat", buttons=["copy"])
    w.timeline = gr.ScatterPlot(x="turn", y="emotion", color="who",
                                label="Emotion timeline per turn (blue: you, orange: the avatar)",
                                elem_id="timeline", height=280, x_title="turn", y_title="emotion",
                                color_map={"you": "#1f77b4", "avatar": "#ff7f0e"})
    with gr.Accordion("Conversations", open=False) as w.conversations:
        with gr.Row():
            w.new_btn = gr.Button("New conversation", elem_id="new_session")
            # the handler checks the chosen pass itself, so a client may send one it was given
            w.past = gr.Dropdown(label="Past conversations", choices=[], allow_custom_value=True, elem_id="past")
            w.resume = gr.Button("Resume", elem_id="resume")
        with gr.Row():
            w.export_btn = gr.Button("Export (JSON + media, zip)", elem_id="export")
            w.export_file = gr.File(label="Export", interactive=False, elem_id="export_file")
            w.delete_btn = gr.Button("Delete this conversation", variant="stop", elem_id="delete")
    with gr.Accordion("Make your own avatar", open=False):
        _avatar_form(w)
    with gr.Column(visible=False):
        _api_components(w)
    return w


def _talk_column(w: Widgets, handlers: PageHandlers) -> None:
    """The avatar's choice, the user's turn (text, microphone or webcam), Send and the correction."""
    # the page's config holds the shipped avatars only; each visitor's own join on load
    public = [p for p in handlers.service.library.profiles() if p.id in handlers.shipped]
    w.gallery = gr.Gallery(value=[(str(p.portrait), f"{p.display_name} · {p.age} {p.gender}") for p in public],
                           label="Avatar", columns=4, height=180, allow_preview=False, elem_id="avatar_gallery")
    # custom avatars join the choices at run time, so the service (not the widget) checks the id
    w.avatar = gr.Dropdown(choices=[(f"{p.display_name} ({p.id})", p.id) for p in public],
                           value=handlers.default_avatar, label="Talking to", allow_custom_value=True,
                           elem_id="avatar")
    with gr.Tab("Type"):
        w.text_in = gr.Textbox(label="Your message", lines=3, max_length=2000,
                               placeholder="How are you feeling today?", elem_id="text_in")
    with gr.Tab("Microphone"):
        w.audio_in = gr.Audio(sources=["microphone", "upload"], type="filepath", label="Speak", elem_id="audio_in")
    with gr.Tab("Hands-free", elem_id="handsfree_tab", visible=w.stream):
        gr.Markdown("Press record once, then just talk: the avatar answers when you pause, and stops when "
                    "you talk over it. Headphones help; the browser cancels most of the avatar's own voice.")
        # a file, read by e3rg_core.live.chunks: Gradio's numpy reading trusts each piece's header, which is
        # the first piece's, and cut every piece the page had joined while the server was busy to that length
        # no live waveform: drawing it took Chromium about a quarter of a core while it listened (0.97 -> 0.74)
        w.live_mic = gr.Audio(sources=["microphone"], streaming=True, type="filepath", label="Talk",
                              elem_id="live_mic", waveform_options=gr.WaveformOptions(show_recording_waveform=False))
        w.live_status = gr.HTML(STATUS_TEXT["off"], elem_id="live_status")
        # set by the server (live_state) and the page's script (player_state); never shown
        w.live_state = gr.Textbox("off", elem_id="live_state", elem_classes=["e3rg-hidden"], show_label=False)
        w.player = gr.Textbox("{}", elem_id="player_state", elem_classes=["e3rg-hidden"], show_label=False)
        w.heard = gr.Textbox("", elem_id="heard", elem_classes=["e3rg-hidden"], show_label=False)
        w.barge = gr.Number(0, elem_id="barge", elem_classes=["e3rg-hidden"], show_label=False)
        w.voice_piece = gr.Textbox("", elem_id="voice_piece", elem_classes=["e3rg-hidden"], show_label=False)
    with gr.Tab("Webcam"):
        # kept as recorded (WebM from Chromium): e3rg decodes it with its own ffmpeg
        w.video_in = gr.Video(sources=["webcam", "upload"], include_audio=True, label="Record yourself",
                              elem_id="video_in",
                              webcam_options=gr.WebcamOptions(mirror=True, constraints={
                                  "video": {"width": {"ideal": 640}, "height": {"ideal": 480}}}))
    w.send = gr.Button("Send", variant="primary", elem_id="send")
    with gr.Row():
        w.correction = gr.Dropdown(choices=list(CANDIDATES), value=None, allow_custom_value=True,
                                   label="Not right? I feel…", elem_id="correction", scale=3)
        w.redo = gr.Button("Redo the reply", elem_id="redo", scale=1)


def _reply_column(w: Widgets, stream: bool) -> None:
    """The predicted emotion, the reply's text, voice and face, and the notes under them."""
    with gr.Row(equal_height=True):
        w.emotion = gr.Label(label="Your emotion", num_top_classes=3, elem_id="emotion")
        w.reply_text = gr.Textbox(label="Reply", lines=5, interactive=False, elem_id="reply_text")
    with gr.Row(equal_height=True):
        # streamed on the page; a whole turn's files go to the other pair
        w.live_audio = gr.Audio(label="Voice", streaming=True, autoplay=True, interactive=False,
                                elem_id="live_audio", visible=stream)
        w.live_video = gr.Video(label="Avatar", streaming=True, autoplay=True, interactive=False,
                                elem_id="live_video", visible=stream)
        # hands-free: the avatar listening (blinks, breathing; the person's emotion once known)
        w.listening_face = gr.Video(label="Avatar", autoplay=True, loop=True, interactive=False, buttons=[],
                                    elem_id="listening_face", visible=stream)
        w.reply_audio = gr.Audio(label="Voice", type="filepath", interactive=False, autoplay=True,
                                 elem_id="reply_audio", visible=not stream)
        w.reply_video = gr.Video(label="Avatar", interactive=False, autoplay=True, elem_id="reply_video",
                                 visible=not stream)
    w.emotion_note = gr.Markdown(elem_id="emotion_note")
    w.check_note = gr.Markdown(elem_id="check_note")
    w.timings = gr.Markdown(elem_id="timings")


def _avatar_form(w: Widgets) -> None:
    gr.Markdown("Upload a portrait with one clear, frontal face and, optionally, at least 5 seconds "
                "of someone speaking. Only upload a face and voice you have the right to use.")
    with gr.Row():
        w.new_name = gr.Textbox(label="Name", max_length=40, elem_id="new_name")
        w.new_age = gr.Dropdown(["child", "young", "middle-aged", "elderly"], value="young", label="Age")
        w.new_gender = gr.Dropdown(["female", "male", "other"], value=None, label="Gender (optional with a voice)",
                                   elem_id="new_gender")
    with gr.Row():
        # image_mode=None: the handler gets the upload itself (create_avatar converts it), not
        # a converted copy that would leave the original, metadata and all, in Gradio's folder
        w.new_portrait = gr.Image(type="filepath", label="Portrait", sources=["upload", "webcam"],
                                  image_mode=None, elem_id="new_portrait")
        w.new_voice = gr.Audio(type="filepath", sources=["upload", "microphone"], label="Voice sample",
                               elem_id="new_voice")
    w.new_rights = gr.Checkbox(label="I have the right to use this face and this voice: they are mine, or "
                                     "the person's who agreed to it", value=False, elem_id="new_rights")
    with gr.Row():
        w.create_btn = gr.Button("Create avatar", elem_id="create_avatar")
        w.delete_avatar_btn = gr.Button("Delete the avatar I am talking to (one I made)", variant="stop",
                                        elem_id="delete_avatar")
    w.create_note = gr.Markdown(elem_id="create_note")


def _api_components(w: Widgets) -> None:
    """The API's inputs and outputs, named for scripts (never shown; the page has its own widgets)."""
    w.api_sid = gr.Textbox(label="sid")
    w.api_avatar = gr.Textbox(label="avatar")
    w.api_text = gr.Textbox(label="text")
    w.api_audio_in = gr.Audio(sources=["upload"], type="filepath", label="audio")
    w.api_video_in = gr.Video(sources=["upload"], include_audio=True, label="video")
    w.api_feeling = gr.Textbox(label="feeling")
    w.api_emotion = gr.Textbox(label="emotion")
    w.api_distribution = gr.JSON(label="distribution")
    w.api_reply = gr.Textbox(label="reply")
    w.api_audio = gr.Audio(type="filepath", label="voice")
    w.api_video = gr.Video(label="face")
    w.api_timings = gr.JSON(label="timings")
    w.api_crisis = gr.Checkbox(label="crisis")
    w.api_details = gr.JSON(label="details")
    w.api_turn = gr.Button(elem_id="api_turn")
    w.api_redo = gr.Button(elem_id="api_redo")
    w.api_create = gr.Button(elem_id="api_create_avatar")
    w.api_export = gr.Button(elem_id="api_export")
    w.api_name = gr.Textbox(label="name")
    w.api_age = gr.Textbox(label="age")
    w.api_gender = gr.Textbox(label="gender")
    w.api_portrait = gr.Image(type="filepath", sources=["upload"], image_mode=None, label="portrait")
    w.api_voice = gr.Audio(sources=["upload"], type="filepath", label="voice_sample")
    w.api_rights = gr.Checkbox(label="rights_confirmed")
    w.api_avatar_id = gr.Textbox(label="avatar_id")
    w.api_note = gr.Textbox(label="note")
    w.api_file = gr.File(label="export")


# -- values -> widgets ----------------------------------------------------------------------------
def _timeline(rows: list[dict[str, Any]]) -> Any:
    import pandas as pd

    turns = max((round(r["turn"]) for r in rows), default=1)
    frame = pd.DataFrame(rows, columns=["turn", "emotion", "who"])
    return gr.update(value=frame, x_lim=[0.5, turns + 0.5])  # keeps the points off the frame's edge


def _page(w: Widgets, view: PageView) -> dict[Any, Any]:
    """A conversation opened (load, resume): its pass, avatar, turns and the caller's lists."""
    return {w.sid_store: view.token, w.avatar: gr.update(choices=list(view.avatar_choices), value=view.avatar_id),
            w.gallery: gr.update(value=list(view.gallery)), w.chat: view.chat, w.timeline: _timeline(view.timeline),
            w.past: gr.update(choices=list(view.past), value=None)}


def _fresh_page(w: Widgets, view: PageView) -> dict[Any, Any]:
    """A new, empty conversation: the last turn's widgets cleared too."""
    return {**_page(w, view), w.export_file: None, w.reply_text: "", w.reply_audio: None, w.reply_video: None,
            w.emotion_note: "", w.emotion: {}, w.timings: "", w.text_in: "", w.check_note: ""}


def _turn_update(w: Widgets, view: TurnView) -> dict[Any, Any]:
    """A turn so far on the page; its last view also clears the inputs and repaints the conversation."""
    out: dict[Any, Any] = {w.check_note: view.check_note}
    if view.emotion is not None:
        out.update({w.emotion: view.emotion, w.emotion_note: view.emotion_note, w.reply_text: view.reply_text})
    elif view.reply_text:
        out[w.reply_text] = view.reply_text
    for widget, value in ((w.reply_audio, view.reply_audio), (w.reply_video, view.reply_video),
                          (w.live_audio, view.live_audio), (w.live_video, view.live_video)):
        if value is not None:
            out[widget] = value
    if view.stored is not None:
        out.update({w.reply_video: view.reply_video, w.timings: view.timings, w.chat: view.stored.chat,
                    w.timeline: _timeline(view.stored.timeline), w.sid_store: view.stored.token,
                    w.text_in: "", w.audio_in: None, w.video_in: None, w.correction: None})
    return out


def _result(r: TurnResult) -> tuple:
    """A turn's result as the API's outputs (``_api_outputs``)."""
    return r.sid, r.emotion, r.distribution, r.reply, r.audio, r.video, r.timings, r.crisis, r.details()


def _api_outputs(w: Widgets) -> list[Any]:
    return [w.api_sid, w.api_emotion, w.api_distribution, w.api_reply, w.api_audio, w.api_video, w.api_timings,
            w.api_crisis, w.api_details]


# -- events ---------------------------------------------------------------------------------------
def _wire_page(demo: gr.Blocks, w: Widgets, h: PageHandlers) -> None:
    """Opening the page and choosing the avatar."""
    @shown("Could not open the page")
    def on_load(token, request: gr.Request):
        return _page(w, h.load(token, login=_user(request)))

    demo.load(on_load, inputs=[w.sid_store], outputs=[w.sid_store, w.avatar, w.gallery, w.chat, w.timeline, w.past],
              api_visibility="private")

    @shown("Not allowed")
    def pick_avatar(token, evt: gr.SelectData, request: gr.Request):
        chosen = h.pick_avatar(token, evt.index, login=_user(request))
        return chosen if chosen is not None else gr.update()

    w.gallery.select(pick_avatar, [w.sid_store], w.avatar, api_visibility="private")

    @shown("Could not change the avatar")
    def change_avatar(token, avatar_id, request: gr.Request):
        h.change_avatar(token, avatar_id, login=_user(request))

    w.avatar.change(change_avatar, inputs=[w.sid_store, w.avatar], outputs=None, api_visibility="private")


def _wire_turns(w: Widgets, h: PageHandlers, stream: bool) -> None:
    """The page's turns and redos: streamed, or in whole files (the API has its own, ``_wire_api``)."""
    @GPU(duration=120)
    @shown()
    def respond(sid, avatar_id, text, audio, video, request: gr.Request, progress=gr.Progress()):
        """One turn: the emotion and reply first, then the voice, then the face."""
        for view in h.turn(sid, avatar_id, text, audio, video, login=_user(request), stream=stream,
                           progress=progress):
            yield _turn_update(w, view)

    @GPU(duration=120)
    @shown()
    def redo_turn(sid, avatar_id, feeling, request: gr.Request, progress=gr.Progress()):
        """Redo the last turn with the user's own emotion."""
        for view in h.redo(sid, avatar_id, feeling, login=_user(request), stream=stream, progress=progress):
            yield _turn_update(w, view)

    outputs = [w.emotion, w.reply_text, w.reply_audio, w.reply_video, w.emotion_note, w.timings, w.chat,
               w.timeline, w.sid_store, w.text_in, w.audio_in, w.video_in, w.check_note, w.correction]
    if stream:
        outputs += [w.live_audio, w.live_video]
    heavy = {"concurrency_limit": TURNS_IN_FLIGHT, "concurrency_id": HEAVY, "api_visibility": "private"}
    turn_inputs = [w.sid_store, w.avatar, w.text_in, w.audio_in, w.video_in]
    w.send.click(respond, inputs=turn_inputs, outputs=outputs, **heavy)
    w.text_in.submit(respond, inputs=turn_inputs, outputs=outputs, **heavy)
    w.redo.click(redo_turn, inputs=[w.sid_store, w.avatar, w.correction], outputs=outputs, **heavy)


def _wire_live(demo: gr.Blocks, w: Widgets, h: PageHandlers, rooms: LiveRooms) -> None:
    """Hands-free talk: the microphone streams, a pause ends the person's turn, talking over the reply cuts it."""
    def key(request: gr.Request) -> str:
        return str(getattr(request, "session_hash", "") or "")

    @shown("Hands-free talk stopped")
    def live_start(sid, avatar_id, request: gr.Request):
        """The microphone opened: the room is ready and the avatar's listening face is shown."""
        rooms.room(key(request)).changed("listening")
        note = rooms.open(key(request), h.conversation_id(sid, login=_user(request)))
        if note:
            gr.Warning(note)
        return "listening", h.listening_face(sid, avatar_id, login=_user(request))

    w.live_mic.start_recording(live_start, inputs=[w.sid_store, w.avatar], outputs=[w.live_state, w.listening_face],
                               api_visibility="private", concurrency_limit=None, show_progress="hidden")

    @shown("Could not hear that")
    def live_hear(chunk, player, sid, request: gr.Request):
        """One piece of the microphone: listening, hearing, a finished utterance, or a barge-in."""
        if chunk is None:
            return gr.skip(), gr.skip(), gr.skip()
        state = _player(player)
        update = rooms.hear(key(request), chunk, playing=state[0], position_s=state[1])
        if update.cut is not None and update.stored is not None:  # the reply was stored: cut it there
            h.interrupted(sid, update.stored, update.cut, login=_user(request))
        status = update.status if rooms.room(key(request)).changed(update.status) else gr.skip()
        return (status, update.utterance if update.utterance else gr.skip(),
                time.time() if update.barge_in is not None else gr.skip())

    w.live_mic.stream(live_hear, inputs=[w.live_mic, w.player, w.sid_store], outputs=[w.live_state, w.heard, w.barge],
                      stream_every=0.25, time_limit=None, concurrency_limit=None, concurrency_id="live",
                      api_visibility="private", show_progress="hidden")
    w.barge.change(None, inputs=[w.barge], outputs=None, js=scripts.PAUSE_JS)
    w.voice_piece.change(None, inputs=[w.voice_piece], outputs=None, js=scripts.PIECE_JS)
    w.live_mic.start_recording(None, inputs=None, outputs=None, js=scripts.START_JS)

    @shown("Hands-free talk stopped")
    def live_stop(request: gr.Request):
        rooms.stop(key(request))
        rooms.room(key(request)).changed("off")
        return "off"

    w.live_mic.stop_recording(live_stop, inputs=None, outputs=[w.live_state], api_visibility="private",
                              concurrency_limit=None, show_progress="hidden")

    @GPU(duration=120)
    @shown()
    def live_respond(sid, avatar_id, utterance_id, request: gr.Request):
        """A hands-free turn: the utterance answered as a streamed turn; the listening face shows the emotion."""
        if not utterance_id:
            return
        room, emotion, turn = rooms.room(key(request)), None, uuid.uuid4().hex
        for view in h.live_turn(sid, avatar_id, room, utterance_id, key=key(request), rooms=rooms,
                                login=_user(request)):
            out = _turn_update(w, view)
            if w.live_audio in out:  # the page's own player sounds each piece at once (scripts.PAGE_JS)
                out[w.voice_piece] = json.dumps({"path": out.pop(w.live_audio), "turn": turn})
            if room.changed("thinking"):
                out[w.live_state] = "thinking"
            if view.emotion is not None and emotion is None:
                emotion = max(view.emotion, key=view.emotion.get)
                face = h.listening_face(sid, avatar_id, emotion, login=_user(request), cached_only=True)
                if face:
                    out[w.listening_face] = face
            yield out
        if emotion is not None:  # ready for the next time this emotion comes up
            h.prepare_listening_face(sid, avatar_id, emotion, login=_user(request))
        room.changed("listening")
        yield {w.live_state: "listening"}

    outputs = [w.emotion, w.reply_text, w.reply_audio, w.reply_video, w.emotion_note, w.timings, w.chat, w.timeline,
               w.sid_store, w.text_in, w.audio_in, w.video_in, w.check_note, w.correction, w.voice_piece, w.live_video,
               w.live_state, w.listening_face]
    w.heard.change(live_respond, inputs=[w.sid_store, w.avatar, w.heard], outputs=outputs, api_visibility="private",
                   concurrency_limit=TURNS_IN_FLIGHT, concurrency_id=HEAVY, show_progress="hidden")
    def live_close(request: gr.Request):
        rooms.close(key(request))

    demo.unload(live_close)


def _player(value: Any) -> tuple[bool, float]:
    """The page's word on its voice player: (playing, seconds into the reply); anything odd is (False, 0)."""
    try:
        state = json.loads(value) if isinstance(value, str) and value else {}
        t = float(state.get("t", 0.0))
        return bool(state.get("playing")) and t >= 0 and t == t, max(0.0, t) if t == t else 0.0
    except (ValueError, TypeError, AttributeError):
        return False, 0.0


def _wire_sessions(w: Widgets, h: PageHandlers) -> None:
    """New, resume, list, export and delete conversations, from the page."""
    fresh_outputs = [w.sid_store, w.chat, w.timeline, w.past, w.avatar, w.gallery, w.export_file, w.reply_text,
                     w.reply_audio, w.reply_video, w.emotion_note, w.emotion, w.timings, w.text_in, w.check_note]

    @shown("Could not start a conversation")
    def page_new_session(sid, avatar_id, request: gr.Request):
        return _fresh_page(w, h.new_session(sid, avatar_id, login=_user(request)))

    w.new_btn.click(page_new_session, inputs=[w.sid_store, w.avatar], outputs=fresh_outputs, api_visibility="private")

    @shown("Could not open the conversation")
    def resume_session(chosen, request: gr.Request):
        view = h.resume(chosen, login=_user(request))
        if view.note:  # its avatar was retired: the default answers from now on
            gr.Info(view.note)
        return _page(w, view)

    w.resume.click(resume_session, inputs=[w.past], outputs=[w.sid_store, w.avatar, w.gallery, w.chat, w.timeline,
                                                             w.past], api_visibility="private")

    @shown("Not allowed")
    def list_conversations(sid, request: gr.Request):
        return gr.update(choices=list(h.conversations(sid, login=_user(request))))

    w.conversations.expand(list_conversations, inputs=[w.sid_store], outputs=[w.past], api_visibility="private")

    @shown("Could not export")
    def export_session(sid, request: gr.Request):
        return str(h.export(sid, login=_user(request)))

    w.export_btn.click(export_session, inputs=[w.sid_store], outputs=[w.export_file], api_visibility="private")
    w.api_export.click(export_session, inputs=[w.api_sid], outputs=[w.api_file], api_name="export")

    @shown("Could not delete")
    def page_delete_session(sid, avatar_id, request: gr.Request):
        view = h.delete_session(sid, avatar_id, login=_user(request))
        gr.Info(view.note)
        return _fresh_page(w, view)

    w.delete_btn.click(page_delete_session, inputs=[w.sid_store, w.avatar], outputs=fresh_outputs,
                       api_visibility="private")


def _wire_avatars(w: Widgets, h: PageHandlers) -> None:
    """Make and delete one's own avatars, from the page and the API."""
    @GPU(duration=60)
    @shown("Could not create the avatar")
    def page_create_avatar(name, age, gender, portrait, voice, rights, sid, request: gr.Request):
        made = h.create_avatar(name, age, gender, portrait, voice, rights, sid, login=_user(request))
        return (made.note, gr.update(value=list(made.gallery)),
                gr.update(choices=list(made.avatar_choices), value=made.avatar_id), None, None)

    form = [w.new_name, w.new_age, w.new_gender, w.new_portrait, w.new_voice, w.new_rights]
    w.create_btn.click(page_create_avatar, inputs=[*form, w.sid_store],
                       outputs=[w.create_note, w.gallery, w.avatar, w.new_portrait, w.new_voice],
                       api_visibility="private", concurrency_limit=TURNS_IN_FLIGHT, concurrency_id=HEAVY)

    @GPU(duration=60)
    @shown("Could not create the avatar")
    def api_create_avatar(name, age, gender, portrait, voice, rights, sid, request: gr.Request):
        """A custom avatar for the browser of ``sid``: returns its id and a note."""
        made = h.create_avatar(name, age, gender, portrait, voice, rights, sid, login=_user(request))
        return made.avatar_id, made.note

    api_form = [w.api_name, w.api_age, w.api_gender, w.api_portrait, w.api_voice, w.api_rights, w.api_sid]
    w.api_create.click(api_create_avatar, inputs=api_form, outputs=[w.api_avatar_id, w.api_note],
                       api_name="create_avatar", concurrency_limit=TURNS_IN_FLIGHT, concurrency_id=HEAVY)

    @shown("Could not delete the avatar")
    def page_delete_avatar(sid, avatar_id, request: gr.Request):
        made = h.delete_avatar(sid, avatar_id, login=_user(request))
        return (made.note, gr.update(value=list(made.gallery)),
                gr.update(choices=list(made.avatar_choices), value=made.avatar_id))

    w.delete_avatar_btn.click(page_delete_avatar, inputs=[w.sid_store, w.avatar],
                              outputs=[w.create_note, w.gallery, w.avatar], api_visibility="private")


def _wire_api(w: Widgets, h: PageHandlers) -> None:
    """The endpoints for scripts (``docs/api.md``): each returns values, never the page's widgets."""
    heavy = {"concurrency_limit": TURNS_IN_FLIGHT, "concurrency_id": HEAVY}

    @GPU(duration=120)
    @shown()
    def turn(sid, avatar, text, audio, video, request: gr.Request, progress=gr.Progress()):
        """One whole turn: returns the sid for the next, the emotion, its distribution, the reply, voice, face,
        timings, whether it got the crisis response, and details (fine label, confidence, risk level)."""
        return _result(last(h.turn(sid, avatar, text, audio, video, login=_user(request), progress=progress)))

    w.api_turn.click(turn, inputs=[w.api_sid, w.api_avatar, w.api_text, w.api_audio_in, w.api_video_in],
                     outputs=_api_outputs(w), api_name="turn", **heavy)

    @GPU(duration=120)
    @shown()
    def redo(sid, avatar, feeling, request: gr.Request, progress=gr.Progress()):
        """Redo the last turn with the user's own emotion; returns what ``/turn`` returns."""
        return _result(last(h.redo(sid, avatar, feeling, login=_user(request), progress=progress)))

    w.api_redo.click(redo, inputs=[w.api_sid, w.api_avatar, w.api_feeling], outputs=_api_outputs(w),
                     api_name="redo", **heavy)

    @shown("Could not start a conversation")
    def new_session(sid: str | None, avatar: str | None, request: gr.Request) -> str:
        """A new conversation (in the browser of ``sid``, else a new one); returns its sid."""
        return h.new_session(sid, avatar, login=_user(request)).token

    @shown("Could not open the conversation")
    def resume(sid: str, request: gr.Request) -> tuple[str, str, list]:
        """Open a conversation: returns its sid, its avatar and its turns (text, emotion, reply, media paths)."""
        view = h.resume(sid, login=_user(request))
        return view.token, view.avatar_id, h.conversation(view.token, login=_user(request))

    @shown("Not allowed")
    def conversations(sid: str | None, request: gr.Request) -> list:
        """The caller's conversations, newest first: each a title and the sid that opens it."""
        return [{"title": label, "sid": token} for label, token in h.conversations(sid, login=_user(request))]

    @shown("Could not delete")
    def delete_session(sid: str, avatar: str | None, request: gr.Request) -> str:
        """Delete the conversation of ``sid`` (turns, recordings, replies); returns a new conversation's sid."""
        return h.delete_session(sid, avatar, login=_user(request)).token

    @shown("Not allowed")
    def avatars(sid: str | None, request: gr.Request) -> list:
        """The avatars the caller may talk to: id, name, age and gender of each."""
        return h.avatars(sid, login=_user(request))

    @shown("Could not delete the avatar")
    def delete_avatar(sid: str, avatar: str, request: gr.Request) -> str:
        """Delete a custom avatar the caller made; returns a note."""
        return h.delete_avatar(sid, avatar, login=_user(request)).note

    for fn in (new_session, resume, conversations, delete_session, avatars, delete_avatar):
        gr.api(fn, api_name=fn.__name__)
