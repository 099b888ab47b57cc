"""What the page and the API do, as plain functions of plain values: no gradio here.

``PageHandlers`` joins the chat service (``e3rg_core.ui.service``), the browsers' passes
(``e3rg_core.ui.access``) and the served copies of stored files (``e3rg_core.ui.served``). Every
handler takes the caller's pass (the API's ``sid``) and login and returns a typed value: a
``PageView`` (what the page shows of a conversation), a stream of ``TurnView`` (a turn as it is
made, ending with its ``TurnResult``), an ``AvatarsView``. A refusal is an ``E3rgError`` that says
what is allowed; ``e3rg_core.ui.app`` lays the page out, turns these values into widget updates and
errors into messages, and wires both to the page's events and the API's endpoints.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

from e3rg_core.config import Config
from e3rg_core.errors import BackendFailed, E3rgError, InputError
from e3rg_core.events import EmotionDecided, RenderedPiece, SpokenPiece, StageFailure, StageResult
from e3rg_core.types import Decision, Stage, Understanding
from e3rg_core.ui import views
from e3rg_core.ui.access import Caller, Passes
from e3rg_core.ui.served import ServedFiles
from e3rg_core.ui.service import ChatService, Committed

if TYPE_CHECKING:
    from e3rg_core.live import Interruption, Reply
    from e3rg_core.memory import Profile
    from e3rg_core.perception.asr import Transcript
    from e3rg_core.ui.live import LiveRooms, Room

logger = logging.getLogger(__name__)

#: a progress callback: ``progress(fraction, desc=...)``, as ``gr.Progress`` is called
Progress = Callable[..., Any]
#: the progress bar's fraction and words once each stage is done
PROGRESS = {Stage.HEARD: (0.2, "understanding"), Stage.UNDERSTOOD: (0.45, "speaking"),
            Stage.SPOKEN: (0.65, "animating"), Stage.RENDERED: (0.85, "checking its own face and voice"),
            Stage.CHECKED: (0.95, "saving")}


def _no_progress(*_args: Any, **_kwargs: Any) -> None:
    return None


@dataclass(frozen=True)
class PageView:
    """What the page shows of one open conversation: its pass, avatar, turns and the caller's lists."""

    token: str  # the pass (the API's sid) naming the caller's browser and this conversation
    avatar_id: str
    avatar_choices: tuple[tuple[str, str], ...]  # (label, avatar id) the caller may talk to
    gallery: tuple[tuple[str, str], ...]  # (portrait path the page may fetch, caption)
    chat: list[dict[str, Any]]  # the conversation as Chatbot messages
    timeline: list[dict[str, Any]]  # the emotion timeline's rows
    past: tuple[tuple[str, str], ...]  # (label, pass) of each of the caller's conversations
    note: str = ""  # something the caller should be told (e.g. its avatar was retired)


@dataclass(frozen=True)
class TurnResult:
    """A stored turn as scripts get it (the ``/turn`` and ``/redo`` endpoints)."""

    sid: str  # the pass to send with the next turn
    emotion: str  # the user's coarse emotion (one of emotions.COARSE)
    label: str  # the fine label (one of emotions.CANDIDATES)
    confidence: float
    distribution: dict[str, float]  # coarse class -> share of the votes
    reply: str
    audio: str  # the reply's voice (a served copy)
    video: str | None  # the reply's face, None when the video could not be made
    timings: dict[str, float]  # stage -> seconds; a streamed turn adds first_audio_s / first_video_s
    risk: str  # "none", "check", "care" or "crisis"
    turn: int  # 1-based position in the conversation
    note: str = ""  # a stage done without, or the self-check of the avatar's face and voice

    @property
    def crisis(self) -> bool:
        """The message signalled a risk of suicide or self-harm: the reply is the crisis response."""
        return self.risk == "crisis"

    def details(self) -> dict[str, Any]:
        """The rest of the result as plain JSON values."""
        return {"label": self.label, "confidence": round(self.confidence, 4), "risk": self.risk,
                "turn": self.turn, "note": self.note}


@dataclass(frozen=True)
class Stored:
    """The end of a turn: the conversation as stored, and the turn's result."""

    token: str
    chat: list[dict[str, Any]]
    timeline: list[dict[str, Any]]
    result: TurnResult
    session_id: str = ""
    turn_id: str = ""  # the stored turn (hands-free: an interruption while it plays cuts it)


@dataclass(frozen=True)
class TurnView:
    """What the page shows of a turn so far; every event of the turn gives the next one.

    ``live_audio`` and ``live_video`` carry a newly made piece of a streamed reply (each piece once:
    a streamed output appends what it is given); ``stored`` is set by the last view only.
    """

    emotion: dict[str, float] | None = None  # the coarse distribution, the predicted class first
    emotion_note: str = ""
    reply_text: str = ""
    reply_audio: str | None = None
    reply_video: str | None = None
    check_note: str = ""
    timings: str = ""
    live_audio: str | None = None
    live_video: str | None = None
    stored: Stored | None = None


@dataclass(frozen=True)
class AvatarsView:
    """The caller's avatars after one was made or deleted."""

    note: str
    avatar_id: str  # the avatar the page talks to now
    avatar_choices: tuple[tuple[str, str], ...]
    gallery: tuple[tuple[str, str], ...]
    avatars: list[dict[str, str]] = field(default_factory=list)  # id, name, age, gender: for scripts


def last(views_: Iterable[TurnView]) -> TurnResult:
    """The result a stream of turn views ends with (the API waits for the whole turn)."""
    final = None
    for view in views_:
        final = view
    if final is None or final.stored is None:
        raise BackendFailed("the turn ended before it was stored; the conversation is unchanged")
    return final.stored.result


class PageHandlers:
    """The app's handlers; one per app. ``discard(*paths)`` removes uploads once they are stored."""

    def __init__(self, config: Config, service: ChatService, passes: Passes, served: ServedFiles, *,
                 resources: str, discard: Callable[..., None] = _no_progress) -> None:
        self.config = config
        self.service = service
        self.passes = passes
        self.served = served
        self.resources = resources
        self.discard = discard
        self.default_avatar = service.library.default().id
        self.shipped = frozenset(service.library.shipped_ids())

    # -- what the page lists --------------------------------------------------------------------
    def gallery(self, owner: str) -> tuple[tuple[str, str], ...]:
        """Every avatar ``owner`` may talk to as (portrait the page may fetch, caption)."""
        items = []
        for p in self.service.avatars(owner=owner):
            # a custom portrait lies in the data dir, which is never served: the page gets a copy
            path = str(p.portrait) if p.id in self.shipped else self.served.avatar_file(p.id, p.portrait)
            items.append((path, f"{p.display_name} · {p.age} {p.gender}"))
        return tuple(items)

    def avatar_choices(self, owner: str) -> tuple[tuple[str, str], ...]:
        return tuple((f"{p.display_name} ({p.id})", p.id) for p in self.service.avatars(owner=owner))

    def avatar_list(self, owner: str) -> list[dict[str, str]]:
        return [{"id": p.id, "name": p.display_name, "age": p.age, "gender": p.gender}
                for p in self.service.avatars(owner=owner)]

    def past(self, caller: Caller) -> tuple[tuple[str, str], ...]:
        """The caller's conversations, newest first; each choice's value is the pass that opens it."""
        infos = self.service.sessions(owner=caller.owner)
        return tuple((label, self.passes.issue(caller.browser, sid)) for label, sid in views.session_choices(infos))

    def view(self, caller: Caller, session: Any, *, note: str = "") -> PageView:
        """The page for ``session``, opened by ``caller``."""
        chat, timeline = self._painted(session)
        return PageView(token=self.passes.issue(caller.browser, session.info.id), avatar_id=session.info.avatar_id,
                        avatar_choices=self.avatar_choices(caller.owner), gallery=self.gallery(caller.owner),
                        chat=chat, timeline=timeline, past=self.past(caller), note=note)

    def _painted(self, session: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        serve = lambda path: self.served.conversation_file(session.info.id, path)  # noqa: E731
        return views.chat_messages(session.turns, serve=serve), views.timeline_rows(session.turns)

    def conversation(self, token: Any, *, login: str = "") -> list[dict[str, Any]]:
        """The open conversation's turns as plain values (for scripts): text, emotion, reply, media."""
        caller, sid = self.passes.open(token, login=login)
        if not sid:
            raise InputError("that pass names no conversation; use the sid a turn returned")
        session = self.service.session(sid, owner=caller.owner)
        turns = []
        for turn in session.turns:
            r, media = turn.record, turn.media
            turns.append({"turn": turn.index + 1, "user_text": r.user_text, "input": r.input_kind,
                          "emotion": r.user_coarse, "label": r.user_emotion, "source": r.emotion_source,
                          "reply": r.reply_text, "avatar": r.avatar_id, "risk": _risk(r.details),
                          "interrupted": isinstance(r.details, Mapping) and "interrupted" in r.details,
                          "audio": self._serve(sid, media.get("reply_audio")),
                          "video": self._serve(sid, media.get("reply_video"))})
        return turns

    def conversation_id(self, token: Any, *, login: str = "") -> str:
        """The id of the conversation a valid pass names ("" for none); a bad pass is refused."""
        return self.passes.open(token, login=login)[1]

    def _serve(self, sid: str, path: Path | None) -> str | None:
        return self.served.conversation_file(sid, path) if path is not None and Path(path).is_file() else None

    # -- the page's events ----------------------------------------------------------------------
    def load(self, token: Any, *, login: str = "") -> PageView:
        """The page a browser opens with: its open conversation, else a new one (a bad pass starts afresh)."""
        try:
            caller, sid = self.passes.open(token, login=login)
        except E3rgError:  # a pass from another server or secret, or a stale one
            caller, sid = self.passes.open(None, login=login)
        return self.view(caller, self.service.open_session(sid, owner=caller.owner))

    def pick_avatar(self, token: Any, index: int, *, login: str = "") -> str | None:
        """The avatar under the gallery's ``index``-th portrait (None: no such portrait)."""
        caller, _ = self.passes.open(token, login=login)
        profiles = self.service.avatars(owner=caller.owner)
        return profiles[index].id if 0 <= index < len(profiles) else None

    def change_avatar(self, token: Any, avatar_id: str, *, login: str = "") -> None:
        caller, sid = self.passes.open(token, login=login)
        if sid and avatar_id:
            self.service.set_avatar(sid, avatar_id, owner=caller.owner)

    def new_session(self, token: Any, avatar_id: str | None, *, login: str = "") -> PageView:
        """A new conversation in this browser (no pass: in a new browser)."""
        caller, _ = self.passes.open(token, login=login)
        return self.view(caller, self.service.new_session(avatar_id, owner=caller.owner))

    def resume(self, chosen: Any, *, login: str = "") -> PageView:
        """Open a conversation from the list; ``chosen`` is its pass (a bare id is refused)."""
        if not chosen:
            raise InputError("pick a conversation from the list first")
        caller, sid = self.passes.open(chosen, login=login)
        if not sid:
            raise InputError("that pass names no conversation; pick one from the list")
        session, note = self.service.resume(sid, owner=caller.owner)  # note: its avatar was retired
        return self.view(caller, session, note=note)

    def conversations(self, token: Any, *, login: str = "") -> tuple[tuple[str, str], ...]:
        """The caller's conversations as they are now (titles and turn counts change with every turn)."""
        caller, _ = self.passes.open(token, login=login)
        return self.past(caller)

    def export(self, token: Any, *, login: str = "") -> Path:
        """The open conversation as a zip (JSON + media), served like its media and as short-lived."""
        caller, sid = self.passes.open(token, login=login)
        if not sid:
            raise InputError("there is no conversation open to export")
        self.service.session(sid, owner=caller.owner)  # refused before anything is written
        return self.service.export(sid, owner=caller.owner, folder=self.served.new_folder(sid))

    def delete_session(self, token: Any, avatar_id: str | None, *, login: str = "") -> PageView:
        """Delete the open conversation (turns, recordings, replies, served copies); open a new one."""
        caller, sid = self.passes.open(token, login=login)
        if not sid:
            raise InputError("there is no conversation open to delete")
        self.service.delete(sid, owner=caller.owner)
        self.served.forget_conversation(sid)
        return self.view(caller, self.service.new_session(avatar_id, owner=caller.owner),
                         note="Conversation deleted.")

    def create_avatar(self, name: str, age: str, gender: str | None, portrait: str | None, voice: str | None,
                      rights: Any, token: Any, *, login: str = "") -> AvatarsView:
        """A custom avatar from a portrait and an optional voice sample; it is the caller's alone."""
        if not portrait:
            raise InputError("upload a portrait first")
        if not token:
            raise InputError("creating an avatar needs the pass (sid) of the browser it will belong to: "
                             "the sid returned by /new_session or /turn")
        caller, sid = self.passes.open(token, login=login)
        profile = self.service.create_avatar(
            owner=caller.owner, display_name=name or "", portrait=Path(portrait),
            voice_sample=Path(voice) if voice else None, age=age or "young", gender=gender or None,
            rights_confirmed=rights is True)
        self.discard(portrait, voice)  # stored as the avatar's own (the portrait without metadata)
        if sid:
            try:
                self.service.set_avatar(sid, profile.id, owner=caller.owner)
            except E3rgError:  # the avatar exists; the conversation just keeps its own
                pass
        from e3rg_core.memory.custom import expression_warning

        note = (f"Created **{profile.display_name}** ({profile.id}): {profile.gender}, {profile.age}, "
                f"voice {profile.voice.voice} {profile.voice.pitch_shift_semitones:+.1f} semitones. "
                "Only you can see it.")
        warning = expression_warning(profile.portrait)
        note += f"\n\nNote: {warning}." if warning else ""
        return self._avatars(caller, note, profile.id)

    def delete_avatar(self, token: Any, avatar_id: str | None, *, login: str = "") -> AvatarsView:
        """Delete a custom avatar the caller made (portrait, voice sample, profile); talk to the default again."""
        caller, _ = self.passes.open(token, login=login)
        if not avatar_id:
            raise InputError("choose the avatar to delete under 'Talking to' first")
        self.service.delete_avatar(avatar_id, owner=caller.owner)
        self.served.forget_avatar(avatar_id)
        return self._avatars(caller, f"Deleted the avatar {avatar_id}, its portrait and its voice sample.",
                             self.default_avatar)

    def avatars(self, token: Any, *, login: str = "") -> list[dict[str, str]]:
        """The avatars the caller may talk to: the shipped ones, the published ones, and their own."""
        caller, _ = self.passes.open(token, login=login)
        return self.avatar_list(caller.owner)

    def _avatars(self, caller: Caller, note: str, avatar_id: str) -> AvatarsView:
        return AvatarsView(note=note, avatar_id=avatar_id, avatar_choices=self.avatar_choices(caller.owner),
                           gallery=self.gallery(caller.owner), avatars=self.avatar_list(caller.owner))

    # -- turns ----------------------------------------------------------------------------------
    def turn(self, token: Any, avatar_id: str | None, text: str | None, audio: str | None, video: str | None, *,
             login: str = "", stream: bool = False, progress: Progress = _no_progress,
             transcript: Transcript | None = None, reply: Reply | None = None) -> Iterator[TurnView]:
        """One turn: the emotion and reply first, then the voice, then the face; stored at the end.

        No pass (a first API call) is a new browser; a conversation that is gone, or not the
        caller's, gives way to a new one of theirs. ``stream``: the voice starts with the reply's
        first sentence and the face follows (``e3rg_core.streaming``). ``transcript`` and ``reply``:
        a hands-free turn's words, recognised already, and its cancel token (``ChatService.turn``).
        """
        caller, sid = self.passes.open(token, login=login)
        session = self.service.open_session(sid, owner=caller.owner, avatar_id=avatar_id)
        progress(0.05, desc="listening")
        events = self.service.turn(session.info.id, avatar_id=avatar_id, text=text or "", audio_path=audio,
                                   video_path=video, owner=caller.owner, stream=stream, transcript=transcript,
                                   reply=reply)
        yield from self._paint(_progressed(events, progress), caller, session.info.id, uploads=(audio, video))

    def live_turn(self, token: Any, avatar_id: str | None, room: Room, utterance_id: str, *, key: str,
                  rooms: LiveRooms, login: str = "", progress: Progress = _no_progress) -> Iterator[TurnView]:
        """A hands-free turn: the utterance the page's listener finished, answered as a streamed turn.

        The reply's voice pieces go to the room as they are made (to tell their echo from the
        person); if the person cuts the reply short, the turn stops and is stored with what was said.
        """
        utterance = rooms.take(key, utterance_id)
        reply = room.begin_reply()
        room.busy += 1
        began, decided, voiced = time.perf_counter(), None, None
        try:
            for view in self.turn(token, avatar_id, "", str(utterance.wav_path), None, login=login, stream=True,
                                  progress=progress, transcript=utterance.transcript, reply=reply):
                if view.emotion is not None and decided is None:
                    decided = time.perf_counter() - began
                if view.live_audio:
                    room.add_piece(view.live_audio, view.reply_text)
                    if voiced is None:  # where a hands-free turn's time goes (bench/live.py reads the log)
                        voiced = time.perf_counter() - began
                        logger.info("hands-free turn of %s: emotion decided %.2f s, first voice %.2f s after its "
                                    "words were taken", utterance.wav_path.name, decided or 0.0, voiced)
                if view.stored is not None:
                    room.stored = (view.stored.session_id, view.stored.turn_id)
                yield view
        finally:
            room.busy -= 1
            Path(utterance.wav_path).unlink(missing_ok=True)
        if reply.interruption is not None and room.stored is not None:  # cut after it was stored
            self.interrupted(token, room.stored, reply.interruption, login=login)

    def listening_face(self, token: Any, avatar_id: str | None, emotion: str = "neutral", *, login: str = "",
                       cached_only: bool = False) -> str | None:
        """A servable copy of the avatar's listening face (``Stages.listening_face``); with ``cached_only``
        None unless it was made already (``prepare_listening_face`` makes it for next time)."""
        avatar = self._avatar(token, avatar_id, login)
        path = self.service.pipeline.listening_face(avatar.id, emotion, render=not cached_only)
        return self.served.avatar_file(avatar.id, path) if path is not None else None

    def prepare_listening_face(self, token: Any, avatar_id: str | None, emotion: str, *, login: str = "") -> None:
        """Make the avatar's listening face of ``emotion`` in the background, after a turn (never during one)."""
        avatar = self._avatar(token, avatar_id, login)
        if self.service.pipeline.listening_face(avatar.id, emotion, render=False) is None:
            threading.Thread(target=_quietly, args=(self.service.pipeline.listening_face, avatar.id, emotion),
                             kwargs={"nice": 19}, name="e3rg-listening-face", daemon=True).start()

    def _avatar(self, token: Any, avatar_id: str | None, login: str) -> Profile:
        """The avatar ``avatar_id`` as the caller of ``token`` may use it."""
        caller, _ = self.passes.open(token, login=login)
        return self.service.avatar(avatar_id, owner=caller.owner)

    def interrupted(self, token: Any, stored: tuple[str, str], cut: Interruption, *, login: str = "") -> None:
        """The stored turn ``stored`` = (conversation id, turn id) was cut short while it played."""
        caller, _ = self.passes.open(token, login=login)
        self.service.interrupted(stored[0], stored[1], cut, owner=caller.owner)

    def redo(self, token: Any, avatar_id: str | None, feeling: str | None, *, login: str = "",
             stream: bool = False, progress: Progress = _no_progress) -> Iterator[TurnView]:
        """Redo the last turn with the user's own emotion ("not angry: tired")."""
        caller, sid = self.passes.open(token, login=login)
        if not sid:
            raise InputError("there is no conversation open to redo; say something first")
        events = self.service.regenerate(sid, feeling or "", avatar_id=avatar_id, owner=caller.owner, stream=stream)
        yield from self._paint(_progressed(events, progress), caller, sid)

    def _paint(self, events: Iterable[Any], caller: Caller, session_id: str,
               uploads: Iterable[str | None] = ()) -> Iterator[TurnView]:
        """The service's events as what the page shows: emotion and text, then audio, then video.

        Every file the page gets is a served copy of the conversation's (``ServedFiles``); once the
        turn is stored, its ``uploads`` (the user's recordings) leave Gradio's upload folder.
        """
        def serve(path: Path) -> str:
            return self.served.conversation_file(session_id, path)

        view, perception, said = TurnView(), None, []
        for event in events:
            if isinstance(event, SpokenPiece):
                said.append(event.text)
                view = dataclasses.replace(view, reply_text=" ".join(said))
                yield dataclasses.replace(view, live_audio=serve(event.speech.wav_path))
            elif isinstance(event, RenderedPiece):
                from e3rg_core.media.mp4 import without_audio

                silent = event.video.mp4_path.with_name(event.video.mp4_path.stem + "_face.mp4")
                yield dataclasses.replace(view, live_video=str(without_audio(event.video.mp4_path, silent)))
            elif isinstance(event, StageResult) and event.stage is Stage.HEARD:
                perception = event.value.perception
            elif (decision := _decision_of(event)) is not None:
                view = dataclasses.replace(view, **self._decided(decision, perception, said))
                yield view
            elif isinstance(event, StageResult) and isinstance(event.value, StageFailure):
                view = dataclasses.replace(view, check_note=views.failure_markdown(event.value.message))
                yield view
            elif isinstance(event, StageResult) and event.stage is Stage.CHECKED:
                view = dataclasses.replace(view, check_note=views.consistency_markdown(event.value.summary()))
            elif isinstance(event, StageResult) and event.stage in (Stage.SPOKEN, Stage.RENDERED):
                key = "reply_audio" if event.stage is Stage.SPOKEN else "reply_video"
                view = dataclasses.replace(view, **{key: serve(event.value.wav_path if key == "reply_audio"
                                                               else event.value.mp4_path)})
                yield view
            elif isinstance(event, Committed):
                self.discard(*uploads)  # the store holds its own copies now
                yield self._stored(view, caller, event, serve)

    def _decided(self, u: Decision, perception: Any, said: list[str]) -> dict[str, Any]:
        """The view's fields once the emotion is decided (and, in a whole turn, the reply written)."""
        source = "corrected" if u.corrected else "predicted"
        overruled = views.vote_overruled(u.coarse_distribution, u.coarse)
        note = views.emotion_markdown(
            u.emotion, u.coarse, float(u.coarse_distribution.get(u.coarse, 0.0)) if overruled else u.confidence,
            source=source, cues=perception.cues if perception else "",
            notes=[*(perception.notes if perception else ()), *([overruled] if overruled else [])],
            voters=[v.voter for v in u.votes] if source == "predicted" else (),
            risk=u.risk.level, resources=self.resources)
        return {"emotion": views.emotion_scores(u.coarse_distribution, predicted=u.coarse),
                "reply_text": u.reply if isinstance(u, Understanding) else " ".join(said), "emotion_note": note}

    def _stored(self, view: TurnView, caller: Caller, event: Committed, serve: Callable[[Path], str]) -> TurnView:
        turn, record = event.turn, event.turn.record
        session = self.service.session(event.session.id, owner=caller.owner)
        chat, timeline = self._painted(session)
        token = self.passes.issue(caller.browser, event.session.id)
        audio = serve(turn.media["reply_audio"])
        video = serve(turn.media["reply_video"]) if "reply_video" in turn.media else None
        details = record.details if isinstance(record.details, Mapping) else {}
        streamed = details.get("streamed") or {}
        timings = {**{str(k): float(v) for k, v in record.timings_s.items()}, **streamed}
        failures = details.get("failures") or {}
        result = TurnResult(
            sid=token, emotion=record.user_coarse, label=record.user_emotion, confidence=record.confidence,
            distribution={k: round(float(v), 4) for k, v in (details.get("coarse_distribution") or {}).items()},
            reply=record.reply_text, audio=audio, video=video, timings=timings, risk=_risk(details),
            turn=turn.index + 1,
            note="; ".join(failures.values()) or str(details.get("consistency_summary") or ""))
        return dataclasses.replace(view, reply_audio=audio, reply_video=video,
                                   timings=views.timings_markdown(record.timings_s, streamed or None),
                                   stored=Stored(token=token, chat=chat, timeline=timeline, result=result,
                                                 session_id=event.session.id, turn_id=turn.id))


def _quietly(fn: Callable[..., Any], *args: Any, nice: int = 0) -> None:
    """Run background work whose failure only costs a nicety (it is logged).

    ``nice``: this thread's CPU priority (Linux; ffmpeg started from it inherits it). The listening
    face is made as the person starts their next turn: at 19 it takes only what the listener,
    Whisper and the LLM leave (at 0 its 1-1.7 s render overlapped the next turn's emotion decision).
    """
    if nice:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)  # on Linux, this thread alone
        except (AttributeError, OSError):
            pass
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - a listening face that cannot be made is not shown
        logger.warning("background work %s%r failed", getattr(fn, "__name__", fn), args, exc_info=True)


def _risk(details: Any) -> str:
    risk = details.get("risk") if isinstance(details, Mapping) else None
    return str(risk.get("level", "none")) if isinstance(risk, Mapping) else "none"


def _decision_of(event: Any) -> Decision | None:
    """The emotion (and reply, once written) an event carries: a streamed turn's decision or stage 1's result."""
    if isinstance(event, EmotionDecided):
        return event.decision
    if isinstance(event, StageResult) and event.stage is Stage.UNDERSTOOD:
        return event.value
    return None


def _progressed(events: Iterable[Any], progress: Progress) -> Iterator[Any]:
    """Report each stage to the progress bar as it finishes."""
    for event in events:
        if isinstance(event, StageResult) and event.stage in PROGRESS:
            fraction, words = PROGRESS[event.stage]
            progress(fraction, desc=words)
        yield event
