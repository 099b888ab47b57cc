"""Who may open what in the app: each browser's signed pass, and the owner it stands for.

Without logins a conversation belongs to the browser that started it, and so does a custom avatar.
The browser keeps a *pass* (in ``gr.BrowserState``) and sends it with every request; through the API
the pass is the ``sid`` that every endpoint takes and returns::

    p1.<browser id: 32 hex>.<conversation id: 32 hex, or nothing>.<HMAC-SHA256: 32 hex>

The HMAC, under a key derived from ``ui.secret``, covers the browser id and the conversation id, so a
pass cannot be made up or altered: a bare conversation id, a pass with another conversation spliced
in, or one signed by another server is refused with ``InputError``. What a browser creates is stored
with the owner ``browser:<browser id>``; the conversations and custom avatars it lists are those with
that owner, and a conversation is opened only when its owner is the caller's.

With logins (``ui.auth``) the owner is the login name, as before: the pass still names the browser
and the open conversation, but a conversation opens only for its user, whichever browser asks. With
``ui.shared_conversations`` every visitor without a login is the owner ``""``: one shared list.

The secret itself never leaves the server. ``gr.BrowserState`` sends its own ``secret`` to every
page (it encrypts in the browser), so it gets a key derived one-way from ours (``storage_key``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Any

from e3rg_core.errors import InputError
from e3rg_core.sessions.records import SESSION_ID

PASS_PREFIX = "p1"
BROWSER_PREFIX = "browser:"  # login names come from "user:password" pairs, so they never contain ':'
_HEX32 = r"[0-9a-f]{32}"
_PASS = re.compile(rf"{PASS_PREFIX}\.({_HEX32})\.({_HEX32})?\.({_HEX32})")
MAX_PASS_CHARS = 200
NOT_A_PASS = ("this conversation pass is not one this server gave out (a bare conversation id, an altered "
              "or made-up pass, or one from another server); use the sid an earlier call returned, or "
              "reload the page to start a new conversation")
NOT_YOURS = ("that conversation belongs to someone else; pick one of yours under Conversations, or start "
             "a new one")


@dataclass(frozen=True)
class Caller:
    """Who sent a request: their browser, their login (if any), and the owner they act as."""

    browser: str  # 32 hex digits, from the pass (or new)
    login: str  # "" without logins
    owner: str  # what their conversations and avatars are stored under: login, "browser:<id>" or ""


def derive_key(secret: str, purpose: str) -> bytes:
    """A key for one ``purpose`` from the app's secret; knowing one key tells nothing of the others."""
    if not isinstance(secret, str) or not secret:
        raise InputError("the app's secret must be a non-empty string")
    return hmac.new(secret.encode("utf-8"), f"e3rg:{purpose}".encode("utf-8"), hashlib.sha256).digest()


class Passes:
    """Issues and checks the passes of one server (one ``secret``)."""

    def __init__(self, secret: str, *, shared: bool = False) -> None:
        self._key = derive_key(secret, "pass")
        self.shared = bool(shared)
        # gr.BrowserState sends its secret to every page; this one unlocks nothing on the server
        self.storage_key = derive_key(secret, "browser-storage").hex()

    def _mac(self, browser: str, session_id: str) -> str:
        message = f"pass\x1f{browser}\x1f{session_id}".encode("ascii")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()[:32]

    @staticmethod
    def new_browser() -> str:
        """A fresh browser id: 128 random bits as hex."""
        return secrets.token_hex(16)

    def issue(self, browser: str, session_id: str = "") -> str:
        """The pass of ``browser`` with conversation ``session_id`` open ("" for none)."""
        if not re.fullmatch(_HEX32, browser or ""):
            raise InputError("a browser id is 32 lowercase hex digits")
        if session_id and not SESSION_ID.fullmatch(session_id):
            raise InputError(f"invalid session id {session_id!r}; a session id is 32 lowercase hex digits")
        return f"{PASS_PREFIX}.{browser}.{session_id}.{self._mac(browser, session_id)}"

    def read(self, token: Any) -> tuple[str, str]:
        """``(browser id, conversation id or "")`` of a pass this server issued; else ``InputError``."""
        if not isinstance(token, str) or len(token) > MAX_PASS_CHARS:
            raise InputError(NOT_A_PASS)
        match = _PASS.fullmatch(token.strip())
        if match is None:
            raise InputError(NOT_A_PASS)
        browser, session_id, mac = match.group(1), match.group(2) or "", match.group(3)
        if not hmac.compare_digest(mac, self._mac(browser, session_id)):
            raise InputError(NOT_A_PASS)
        return browser, session_id

    def caller(self, browser: str, login: str = "") -> Caller:
        """The caller with ``browser`` and ``login``, and the owner they act as."""
        if login:
            return Caller(browser, login, login)
        return Caller(browser, "", "" if self.shared else BROWSER_PREFIX + browser)

    def open(self, token: Any, *, login: str = "") -> tuple[Caller, str]:
        """The caller a request's pass stands for, and the conversation it names ("" for none).

        No pass at all (``None`` or ``""``: a new browser, a first API call) is a new browser; anything
        else must be a valid pass.
        """
        if token is None or token == "":
            return self.caller(self.new_browser(), login), ""
        browser, session_id = self.read(token)
        return self.caller(browser, login), session_id


def is_browser_owner(owner: str) -> bool:
    """Whether ``owner`` is a browser (no login) rather than a login name or the shared pool."""
    return owner.startswith(BROWSER_PREFIX)
