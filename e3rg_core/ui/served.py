"""The copies of stored files that the page may fetch: unguessable, short-lived, removed with their owner.

The data directory (every conversation's recordings and replies, the custom avatars' portraits and
voice samples) is never served. A file the page must fetch (a reply's audio or video, a portrait for
the gallery, an export) is copied here first::

    <root>/<conversation or avatar key>/<file key>/<name>     root = <Gradio's upload folder>/e3rg

Both keys are HMACs under a key derived from ``ui.secret``, so a URL cannot be guessed from a
conversation, turn or avatar id, nor one file's URL from another's. Gradio serves any file under its
upload folder to whoever asks for the URL (there is no per-visitor check in its file route); these
URLs are handed only to the owner's page or client. Because the copies already lie in Gradio's
folder, Gradio serves them as they are instead of copying them a second time.

Life: a copy is touched whenever it is handed out again and removed ``ttl_s`` after that (a sweep
runs at most every ``sweep_every_s`` when copies are made, and when the app starts); deleting a
conversation or an avatar removes its copies at once. Gradio's own ``delete_cache`` (set to the same
age in ``e3rg_core.ui.app``) and its clean shutdown remove them too.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import shutil
import threading
import time
import uuid
from pathlib import Path

from e3rg_core.ui.access import derive_key

logger = logging.getLogger(__name__)

TTL_S = 3600.0  # a copy lives this long after it was last handed out
SWEEP_EVERY_S = 600.0
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


class ServedFiles:
    """Copies of stored files under ``root``, grouped by the conversation or avatar they belong to."""

    def __init__(self, root: Path, secret: str, *, ttl_s: float = TTL_S, sweep_every_s: float = SWEEP_EVERY_S) -> None:
        self.root = Path(root)
        self._key = derive_key(secret, "served")
        self.ttl_s = float(ttl_s)
        self.sweep_every_s = float(sweep_every_s)
        self._lock = threading.Lock()
        self._last_sweep = 0.0
        self.sweep()

    # -- names -----------------------------------------------------------------------------------
    def _name(self, *parts: str) -> str:
        return hmac.new(self._key, "\x1f".join(parts).encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    def conversation_folder(self, session_id: str) -> Path:
        """Where the copies of conversation ``session_id`` lie."""
        return self.root / self._name("conversation", session_id)

    def avatar_folder(self, avatar_id: str) -> Path:
        """Where the copies of avatar ``avatar_id`` lie."""
        return self.root / self._name("avatar", avatar_id)

    # -- copies ----------------------------------------------------------------------------------
    def conversation_file(self, session_id: str, path: Path) -> str:
        """A servable copy of ``path`` (a file of conversation ``session_id``)."""
        return self._copy(self.conversation_folder(session_id), Path(path))

    def avatar_file(self, avatar_id: str, path: Path) -> str:
        """A servable copy of ``path`` (a custom avatar's portrait; never its voice sample)."""
        return self._copy(self.avatar_folder(avatar_id), Path(path))

    def new_folder(self, session_id: str) -> Path:
        """A fresh empty folder among the copies of ``session_id`` (an export is written there)."""
        folder = self.conversation_folder(session_id) / self._name("folder", uuid.uuid4().hex)
        folder.mkdir(parents=True)
        self._maybe_sweep()
        return folder

    def _copy(self, owner_folder: Path, path: Path) -> str:
        source = path.resolve()
        stat = source.stat()
        # the source's size and time are in the key: a file replaced in place gets a new copy
        folder = owner_folder / self._name("file", str(source), str(stat.st_size), str(stat.st_mtime_ns))
        target = folder / (_SAFE_NAME.sub("_", source.name) or "file")
        with self._lock:  # a sweep must not remove it between the touch and the return
            try:
                os.utime(target)  # handed out again: it lives another ttl_s
            except FileNotFoundError:
                folder.mkdir(parents=True, exist_ok=True)
                partial = folder / f".{uuid.uuid4().hex}.part"
                try:
                    shutil.copyfile(source, partial)
                    os.replace(partial, target)
                except BaseException:
                    partial.unlink(missing_ok=True)
                    raise
        self._maybe_sweep()
        return str(target)

    # -- removal ---------------------------------------------------------------------------------
    def forget_conversation(self, session_id: str) -> None:
        """Remove every copy of conversation ``session_id`` now (it was deleted)."""
        _remove(self.conversation_folder(session_id))

    def forget_avatar(self, avatar_id: str) -> None:
        """Remove every copy of avatar ``avatar_id`` now (it was deleted)."""
        _remove(self.avatar_folder(avatar_id))

    def _maybe_sweep(self) -> None:
        if time.monotonic() - self._last_sweep >= self.sweep_every_s:
            self.sweep()

    def sweep(self, *, now: float | None = None) -> int:
        """Remove the copies last handed out more than ``ttl_s`` ago, and emptied folders; return how many."""
        with self._lock:
            self._last_sweep = time.monotonic()
            cutoff = (time.time() if now is None else now) - self.ttl_s
            removed = 0
            if not self.root.is_dir():
                return 0
            for owner_folder in self.root.iterdir():
                for folder in _children(owner_folder):
                    files = _children(folder)
                    for file in files:
                        try:
                            if file.lstat().st_mtime < cutoff:
                                file.unlink()
                                removed += 1
                        except FileNotFoundError:
                            continue
                        except OSError as exc:
                            logger.warning("cannot remove the served copy %s: %s", file, exc)
                    _rmdir(folder)
                _rmdir(owner_folder)
            return removed


def _children(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir()) if folder.is_dir() and not folder.is_symlink() else []
    except OSError:
        return []


def _rmdir(folder: Path) -> None:
    try:
        folder.rmdir()  # only when empty
    except OSError:
        pass


def _remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    if folder.exists():
        logger.warning("could not remove the served copies in %s", folder)
