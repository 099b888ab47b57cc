"""The app's logic without the widgets: sessions, turns, regeneration, custom avatars.

``ChatService`` joins the pipeline (``e3rg_core.pipeline``) and the session store
(``e3rg_core.sessions``). A turn runs in a private work folder and is committed to the store only
when every stage has succeeded, so a failure at any stage leaves the session exactly as it was.
No gradio here: ``e3rg_core.ui.app`` wires these methods to the page.

Every method acts for an ``owner`` (``e3rg_core.ui.access``: a login name, ``browser:<id>``, or
``""`` for the shared pool) and touches only that owner's conversations and the avatars they may
see (``e3rg_core.memory.ownership``); ``""`` is an owner like any other, not "everybody".
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from e3rg_core.config import Config
from e3rg_core.errors import InputError
from e3rg_core.events import EmotionDecided, RenderedPiece, SpokenPiece, StageFailure, StageResult, TurnRequest
from e3rg_core.live.control import Interruption, Reply
from e3rg_core.memory import AvatarLibrary, Profile
from e3rg_core.memory.ownership import delete_own, may_use, visible_profiles
from e3rg_core.memory.profiles import check_avatar_id
from e3rg_core.pipeline import Pipeline
from e3rg_core.sessions import Session, SessionInfo, SessionStore, StoredTurn, TurnRecord
from e3rg_core.types import Decision, Stage, Understanding
from e3rg_core.ui.access import NOT_YOURS

if TYPE_CHECKING:
    from e3rg_core.perception.asr import Transcript

logger = logging.getLogger(__name__)

#: no turn runs this long: older turn folders were left by a killed server
STALE_WORK_S = 3600.0


@dataclass(frozen=True)
class Committed:
    """The last event of a successful turn: the turn as stored."""

    session: SessionInfo
    turn: StoredTurn


class ChatService:
    """Sessions and turns for the app; one per server process."""

    def __init__(self, config: Config, *, pipeline: Pipeline | None = None, store: SessionStore | None = None,
                 library: AvatarLibrary | None = None) -> None:
        self.config = config
        self.library = library or AvatarLibrary(user_root=config.data_dir / "avatars")
        self.pipeline = pipeline or Pipeline(config, library=self.library)
        self.store = store or SessionStore(config.data_dir)
        base = Path(tempfile.gettempdir()) / "e3rg-work"
        _sweep_stale_work(base)
        self.work_root = base / uuid.uuid4().hex[:12]

    # -- sessions -------------------------------------------------------------------------------
    def open_session(self, session_id: str | None, *, owner: str = "", avatar_id: str | None = None) -> Session:
        """The session ``session_id`` if it exists and is ``owner``'s, else a new one of theirs."""
        if session_id:
            try:
                session = self.store.get(session_id)
                if session.info.owner == owner:
                    return self._with_live_avatar(session)[0]
                logger.info("session %s is not the caller's; starting a new one", session_id)
            except InputError:
                logger.info("session %r not found; starting a new one", str(session_id)[:40])
        return self.new_session(avatar_id, owner=owner)

    def new_session(self, avatar_id: str | None = None, *, owner: str = "") -> Session:
        avatar = self.avatar(avatar_id, owner=owner)
        info = self.store.create(avatar.id, owner=owner)
        return Session(info=info, turns=())

    def sessions(self, *, owner: str = "") -> tuple[SessionInfo, ...]:
        """``owner``'s conversations, most recent first."""
        return self.store.list(owner=owner)

    def session(self, session_id: str, *, owner: str = "") -> Session:
        """The conversation ``session_id``; ``InputError`` unless it is ``owner``'s."""
        return self.resume(session_id, owner=owner)[0]

    def resume(self, session_id: str, *, owner: str = "") -> tuple[Session, str]:
        """The conversation ``session_id`` and a note for its reader: "" unless the avatar it names is gone
        (retired or deleted) and the default now stands in; ``InputError`` unless it is ``owner``'s."""
        session = self.store.get(session_id)
        if session.info.owner != owner:
            raise InputError(NOT_YOURS)
        return self._with_live_avatar(session)

    def _with_live_avatar(self, session: Session) -> tuple[Session, str]:
        """The session, switched to the default avatar (and stored so) when the one it names is gone."""
        profile, note = self.library.stand_in(session.info.avatar_id)
        if not note:
            return session, ""
        logger.info("conversation %s: %s", session.info.id, note)
        return Session(info=self.store.set_avatar(session.info.id, profile.id), turns=session.turns), note

    def set_avatar(self, session_id: str, avatar_id: str, *, owner: str = "") -> SessionInfo:
        self.session(session_id, owner=owner)
        return self.store.set_avatar(session_id, self.avatar(avatar_id, owner=owner).id)

    def export(self, session_id: str, *, owner: str = "", folder: Path | None = None) -> Path:
        """A zip of the session (JSON + media) in ``folder`` (default: a fresh temp folder), ready to download."""
        self.session(session_id, owner=owner)
        folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="e3rg-export-"))
        return self.store.export(session_id, folder / f"e3rg-session-{session_id[:8]}.zip")

    def delete(self, session_id: str, *, owner: str = "") -> None:
        self.session(session_id, owner=owner)
        self.store.delete(session_id)

    # -- avatars --------------------------------------------------------------------------------
    def avatar(self, avatar_id: str | None, *, owner: str = "") -> Profile:
        """The avatar ``avatar_id`` if ``owner`` may use it (shipped, published or their own); the default for none."""
        if not avatar_id:
            return self.library.default()
        check_avatar_id(avatar_id)
        if avatar_id in self.library.retired_ids():  # named by a page or client from before its removal
            profile, note = self.library.stand_in(avatar_id)
            logger.info(note)
            return profile
        if not may_use(self.library, avatar_id, owner):  # another's avatar reads as unknown
            known = ", ".join(p.id for p in self.avatars(owner=owner))
            raise InputError(f"unknown avatar {avatar_id!r}; choose from {known}")
        return self.library.get(avatar_id)

    def avatars(self, *, owner: str = "") -> tuple[Profile, ...]:
        """The avatars ``owner`` may see, sorted by id."""
        return visible_profiles(self.library, owner)

    def create_avatar(self, *, owner: str = "", **kwargs: Any) -> Profile:
        """A custom avatar of ``owner``'s from an uploaded portrait and voice sample (``memory.custom``)."""
        from e3rg_core.memory.custom import create_avatar

        return create_avatar(self.library, owner=owner, **kwargs)

    def delete_avatar(self, avatar_id: str, *, owner: str = "") -> None:
        """Delete a custom avatar ``owner`` made: its portrait, voice sample and profile."""
        delete_own(self.library, avatar_id, owner)

    # -- turns ----------------------------------------------------------------------------------
    def turn(self, session_id: str, *, avatar_id: str | None = None, text: str = "",
             audio_path: str | Path | None = None, video_path: str | Path | None = None,
             owner: str = "", stream: bool = False, transcript: Transcript | None = None,
             reply: Reply | None = None) -> Iterator[Any]:
        """Run a turn; yield each stage's result, then ``Committed`` once it is stored.

        With ``stream`` the turn is streamed (``Pipeline.stream``): the emotion, then each spoken and
        rendered piece of the reply come first (``e3rg_core.streaming``), then the same stage results.
        ``transcript``: the recording's words, recognised already (hands-free). ``reply``: the
        conversation's cancel token (``e3rg_core.live.TurnControl``); once it is cancelled the turn
        stops and is stored with what had been said (``details["interrupted"]``).
        """
        session = self.session(session_id, owner=owner)
        avatar = self.avatar(avatar_id or session.info.avatar_id, owner=owner)
        request = TurnRequest(text=text or "", audio_path=Path(audio_path) if audio_path else None,
                              video_path=Path(video_path) if video_path else None, avatar_id=avatar.id,
                              history=self.store.history(session_id), transcript=transcript)
        yield from self._run(session, request, replace=False, stream=stream, reply=reply)

    def regenerate(self, session_id: str, emotion: str, *, avatar_id: str | None = None,
                   owner: str = "", stream: bool = False) -> Iterator[Any]:
        """Redo the last turn with the user's own emotion label ("not angry: tired")."""
        session = self.session(session_id, owner=owner)
        if not session.turns:
            raise InputError("there is no turn to redo yet; say something first")
        if not str(emotion or "").strip():
            raise InputError("say how you feel instead (e.g. tired, lonely, proud) before redoing the turn")
        last = session.turns[-1]
        earlier = self.store.history(session_id)[:-2] if len(session.turns) else ()
        avatar = self.avatar(avatar_id or last.record.avatar_id, owner=owner)
        request = TurnRequest(text=last.record.user_text, avatar_id=avatar.id, history=earlier,
                              emotion=str(emotion).strip())
        yield from self._run(session, request, replace=True, kind=last.record.input_kind,
                             user_media={k: v for k, v in last.media.items() if k.startswith("user_")}, stream=stream)

    def interrupted(self, session_id: str, turn_id: str, cut: Interruption, *, owner: str = "") -> StoredTurn | None:
        """The stored turn ``turn_id`` was cut short while it played: keep only what had been said.

        Its reply text becomes the words heard by then, its voice is cut there and its video is
        dropped (it showed words never said); ``details["interrupted"]`` says where. Nothing happens
        (None) when ``turn_id`` is no longer the conversation's last turn.
        """
        session = self.session(session_id, owner=owner)
        if not session.turns or session.turns[-1].id != turn_id or "interrupted" in session.turns[-1].record.details:
            return None
        last = session.turns[-1]
        workdir = self.work_root / uuid.uuid4().hex
        try:
            media = {k: v for k, v in last.media.items() if k != "reply_video"}
            if "reply_audio" in media:
                media["reply_audio"] = _cut_wav(Path(media["reply_audio"]), cut.at_s, workdir / "reply_cut.wav")
            details = {**last.record.details, "interrupted": _cut_details(cut)}
            record = dataclasses.replace(last.record, reply_text=cut.part.spoken, details=details)
            return self.store.replace_last_turn(session_id, record, media)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _run(self, session: Session, request: TurnRequest, *, replace: bool, kind: str | None = None,
             user_media: dict[str, Path] | None = None, stream: bool = False,
             reply: Reply | None = None) -> Iterator[Any]:
        workdir = self.work_root / uuid.uuid4().hex
        try:
            values: dict[str, Any] = {}
            timings: dict[str, float] = {}
            if stream:
                steps = self.pipeline.stream(request, workdir,
                                             cancelled=(lambda: reply.cancelled) if reply is not None else None)
            else:
                steps = self.pipeline.run(request, workdir)
            firsts: dict[str, float] = {}
            pieces: list[SpokenPiece] = []
            decision = None
            for step in steps:
                if isinstance(step, StageResult):
                    values[step.stage], timings[step.stage] = step.value, round(step.seconds, 3)
                elif isinstance(step, (SpokenPiece, RenderedPiece)) and step.index == 0:
                    firsts["first_audio_s" if isinstance(step, SpokenPiece) else "first_video_s"] = round(step.at_s, 3)
                if isinstance(step, EmotionDecided):
                    decision = step.decision
                elif isinstance(step, SpokenPiece):
                    pieces.append(step)
                    if reply is not None:
                        reply.add_piece(step.text, step.speech.duration_s)
                yield step
                if reply is not None and reply.cancelled and Stage.UNDERSTOOD not in values:
                    steps.close()  # stops the LLM, the speech and the video after the piece they are on
                    yield self._commit_cut(session, request, values[Stage.HEARD], decision, pieces,
                                           reply.interruption, timings, workdir, replace=replace, kind=kind,
                                           user_media=user_media)
                    return
            if reply is not None and reply.cancelled and Stage.UNDERSTOOD not in values:
                # the stream noticed the barge-in while it waited for a piece and ended there
                yield self._commit_cut(session, request, values[Stage.HEARD], decision, pieces,
                                       reply.interruption, timings, workdir, replace=replace, kind=kind,
                                       user_media=user_media)
                return
            yield self._commit(session, request, values, timings, firsts if stream else None, replace=replace,
                               kind=kind, user_media=user_media)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _commit(self, session: Session, request: TurnRequest, values: dict[Any, Any], timings: dict[str, float],
                streamed: dict[str, float] | None, *, replace: bool, kind: str | None,
                user_media: dict[str, Path] | None) -> Committed:
        heard, understanding = values[Stage.HEARD], values[Stage.UNDERSTOOD]
        speech, video = values[Stage.SPOKEN], values[Stage.RENDERED]
        media = _user_media(request, user_media)
        media["reply_audio"] = speech.wav_path
        if not isinstance(video, StageFailure):
            media["reply_video"] = video.mp4_path
        details = _details(heard, understanding, speech.voice)
        checked = values.get(Stage.CHECKED)
        if checked is not None and not isinstance(checked, StageFailure):
            details["consistency"] = checked.as_dict()
            details["consistency_summary"] = checked.summary()
        failures = {k: v.message for k, v in values.items() if isinstance(v, StageFailure)}
        if failures:
            details["failures"] = failures
        if streamed is not None:
            details["streamed"] = streamed
        return self._store(session, request, heard, understanding, timings, details, media, replace=replace,
                           kind=kind)

    def _commit_cut(self, session: Session, request: TurnRequest, heard: Any, decision: Decision | None,
                    pieces: list[SpokenPiece], cut: Interruption | None, timings: dict[str, float], workdir: Path,
                    *, replace: bool, kind: str | None, user_media: dict[str, Path] | None) -> Committed:
        """A turn cut short while its reply was being made: stored with what had been said by then."""
        if decision is None:
            raise InputError("the reply was interrupted before it began; nothing was stored")
        said = cut.part.spoken if cut is not None else " ".join(p.text for p in pieces)
        understanding = Understanding.of(decision, said, timings_s=decision.timings_s)
        media = _user_media(request, user_media)
        if pieces:
            from e3rg_core.speech.pieces import join_speech

            voice = join_speech([p.speech for p in pieces], Path(workdir) / "reply_said.wav").wav_path
            media["reply_audio"] = voice if cut is None else _cut_wav(voice, cut.at_s, Path(workdir) / "reply_cut.wav")
        details = _details(heard, understanding, pieces[0].speech.voice if pieces else "")
        details["interrupted"] = _cut_details(cut) if cut is not None else {"at_s": None, "unspoken": ""}
        return self._store(session, request, heard, understanding, timings, details, media, replace=replace,
                           kind=kind)

    def _store(self, session: Session, request: TurnRequest, heard: Any, understanding: Understanding,
               timings: dict[str, float], details: dict[str, Any], media: dict[str, Path], *, replace: bool,
               kind: str | None) -> Committed:
        record = TurnRecord(
            user_text=heard.text, input_kind=kind or heard.input_kind, user_emotion=understanding.emotion,
            user_coarse=understanding.coarse, confidence=min(1.0, float(understanding.confidence)),
            emotion_source="corrected" if request.emotion else "predicted", reply_text=understanding.reply,
            reply_emotion=understanding.reply_emotion, reply_intensity=understanding.reply_intensity,
            avatar_id=request.avatar_id or session.info.avatar_id, timings_s=timings, details=details)
        store = self.store.replace_last_turn if replace else self.store.add_turn
        stored = store(session.info.id, record, media)
        return Committed(session=self.store.get(session.info.id).info, turn=stored)

    def close(self) -> None:
        self.store.close()


def _sweep_stale_work(base: Path) -> None:
    """Remove turn folders a killed server left behind (once ``STALE_WORK_S`` old) and empty server folders."""
    cutoff = time.time() - STALE_WORK_S
    for folder in base.glob("*/*"):
        try:
            if folder.stat().st_mtime < cutoff:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            pass
    for root in base.glob("*"):
        try:
            root.rmdir()  # only if empty; a live server recreates its folder when a turn starts
        except OSError:
            pass


def _user_media(request: TurnRequest, user_media: dict[str, Path] | None) -> dict[str, Path]:
    media = dict(user_media or {})
    if request.audio_path:
        media["user_audio"] = request.audio_path
    if request.video_path:
        media["user_video"] = request.video_path
    return media


def _details(heard: Any, understanding: Understanding, voice: str) -> dict[str, Any]:
    """What a stored turn keeps beside its text: the votes, the risk, how the user came across."""
    details: dict[str, Any] = {
        "votes": [v.as_dict() for v in understanding.votes],
        "distribution": dict(sorted(understanding.distribution.items(), key=lambda kv: -kv[1])[:5]),
        "coarse_distribution": dict(understanding.coarse_distribution),
        "crisis": understanding.crisis,
        "risk": understanding.risk.as_dict(),
        **({"guarded": list(understanding.guarded)} if understanding.guarded else {}),
        "voice": voice,
        "heard_note": heard.note,
    }
    perception = heard.perception
    if perception is not None:
        t = perception.transcript
        details["transcript"] = {"text": t.text, "words": len(t.words), "duration_s": t.duration_s, "note": t.note}
        details["cues"] = perception.cues
        details["perception_notes"] = list(perception.notes)
        if perception.face_used():
            details["face"] = {"top": perception.face.top,
                               "distribution": {k: round(v, 4) for k, v in perception.face.distribution.items()}}
        if perception.voice_used():
            v = perception.voice
            details["voice"] = {"arousal": round(v.arousal, 3), "cues": v.cues,
                                "f0_median_hz": round(v.f0_median_hz, 1), "speaking_rate": round(v.speaking_rate, 2)}
    return details


def _cut_details(cut: Interruption) -> dict[str, Any]:
    return {"at_s": round(cut.at_s, 3), "unspoken": cut.part.unspoken}


def _cut_wav(path: Path, until_s: float, out_path: Path) -> Path:
    """The WAV's first ``until_s`` seconds (at least one sample) in ``out_path``."""
    from e3rg_core.media.audio import read_audio, write_wav

    audio = read_audio(Path(path))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    write_wav(out_path, audio.samples[: max(1, int(round(until_s * audio.sample_rate_hz)))], audio.sample_rate_hz)
    return out_path
