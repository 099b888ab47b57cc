"""The browser's pass (``e3rg_core.ui.access``) and the page's served copies (``e3rg_core.ui.served``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest

from e3rg_core.errors import InputError
from e3rg_core.ui.access import BROWSER_PREFIX, Passes, derive_key
from e3rg_core.ui.served import ServedFiles

SECRET = "a-secret-of-this-server"


def test_a_pass_names_its_browser_and_conversation():
    passes = Passes(SECRET)
    browser, sid = passes.new_browser(), uuid.uuid4().hex
    token = passes.issue(browser, sid)
    assert passes.read(token) == (browser, sid)
    assert passes.read(passes.issue(browser)) == (browser, "")
    assert passes.issue(browser, sid) == token  # the same pass every time: a client may compare them
    caller, opened = passes.open(token)
    assert (caller.browser, caller.owner, caller.login, opened) == (browser, BROWSER_PREFIX + browser, "", sid)


def test_no_pass_is_a_new_browser_each_time():
    passes = Passes(SECRET)
    first, none = passes.open(None)
    second, _ = passes.open("")
    assert none == "" and first.browser != second.browser and first.owner != second.owner


@pytest.mark.parametrize("change", ["bare id", "other conversation", "other browser", "flipped mac", "other server",
                                    "truncated", "padded", "not text", "too long", "old bare hex"])
def test_forged_or_altered_passes_are_refused(change):
    passes = Passes(SECRET)
    browser, sid, other = passes.new_browser(), uuid.uuid4().hex, uuid.uuid4().hex
    token = passes.issue(browser, sid)
    prefix, b, s, mac = token.split(".")
    forged = {
        "bare id": sid,
        "other conversation": f"{prefix}.{b}.{other}.{mac}",
        "other browser": f"{prefix}.{passes.new_browser()}.{s}.{mac}",
        "flipped mac": f"{prefix}.{b}.{s}.{mac[:-1]}{'0' if mac[-1] != '0' else '1'}",
        "other server": Passes("another-secret-entirely").issue(browser, sid),
        "truncated": token[:-2],
        "padded": token + "00",
        "not text": {"sid": sid},
        "too long": token + "." * 300,
        "old bare hex": uuid.uuid4().hex,
    }[change]
    with pytest.raises(InputError, match="not one this server gave out"):
        passes.read(forged)
    with pytest.raises(InputError, match="not one this server gave out"):
        passes.open(forged)


def test_owners_with_logins_and_in_shared_mode():
    browser = Passes.new_browser()
    assert Passes(SECRET).caller(browser, "rater01").owner == "rater01"  # per user, whatever the browser
    assert Passes(SECRET, shared=True).caller(browser).owner == ""  # one shared pool
    assert Passes(SECRET, shared=True).caller(browser, "rater01").owner == "rater01"
    with pytest.raises(InputError):
        Passes(SECRET).issue("not-hex")
    with pytest.raises(InputError, match="invalid session id"):
        Passes(SECRET).issue(browser, "../etc")


def test_the_browser_storage_key_reveals_nothing_of_the_signing_key():
    passes = Passes(SECRET)
    assert SECRET not in passes.storage_key and len(passes.storage_key) == 64
    assert passes.storage_key != derive_key(SECRET, "pass").hex()
    assert Passes("another-secret-entirely").storage_key != passes.storage_key


def test_the_module_imports_no_gradio():
    code = ("import sys, e3rg_core.ui.access, e3rg_core.ui.served, e3rg_core.memory.ownership; "
            "print('gradio' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- served copies --------------------------------------------------------------------------------

def _stored(tmp_path, name="reply_video.mp4", data=b"video bytes"):
    path = tmp_path / "data" / "media" / uuid.uuid4().hex / name
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


def test_copies_have_unguessable_names_and_are_reused(tmp_path):
    served = ServedFiles(tmp_path / "cache" / "e3rg", SECRET)
    stored = _stored(tmp_path)
    sid = uuid.uuid4().hex
    copy = served.conversation_file(sid, stored)
    assert open(copy, "rb").read() == b"video bytes" and copy.endswith("/reply_video.mp4")
    assert sid not in copy and stored.parent.name not in copy  # nothing in the URL names the conversation
    assert served.conversation_file(sid, stored) == copy  # a reload gets the same copy, not a second one
    elsewhere = ServedFiles(tmp_path / "cache" / "e3rg", "another-secret-entirely").conversation_file(sid, stored)
    assert elsewhere != copy  # the names come from the secret


def test_deleting_a_conversation_removes_its_copies_at_once(tmp_path):
    served = ServedFiles(tmp_path / "e3rg", SECRET)
    mine, other = uuid.uuid4().hex, uuid.uuid4().hex
    copies = [served.conversation_file(mine, _stored(tmp_path)), str(served.new_folder(mine))]
    kept = served.conversation_file(other, _stored(tmp_path))
    served.forget_conversation(mine)
    assert not any(os.path.exists(c) for c in copies) and os.path.exists(kept)


def test_copies_expire_after_their_last_use(tmp_path):
    served = ServedFiles(tmp_path / "e3rg", SECRET, ttl_s=60)
    old = served.conversation_file(uuid.uuid4().hex, _stored(tmp_path))
    fresh = served.avatar_file("sam-3f9c1e", _stored(tmp_path, "portrait.png"))
    past = time.time() - 120
    os.utime(old, (past, past))
    assert served.sweep() == 1
    assert not os.path.exists(old) and os.path.exists(fresh)
    assert not os.path.exists(os.path.dirname(old))  # emptied folders go too
    os.utime(fresh, (past, past))
    again = served.avatar_file("sam-3f9c1e", _stored(tmp_path, "portrait.png"))
    assert served.sweep() == 1 and os.path.exists(again)  # handed out anew: alive again


def test_a_replaced_file_gets_a_new_copy(tmp_path):
    served = ServedFiles(tmp_path / "e3rg", SECRET)
    stored, sid = _stored(tmp_path), uuid.uuid4().hex
    first = served.conversation_file(sid, stored)
    stored.write_bytes(b"other, longer bytes")
    second = served.conversation_file(sid, stored)
    assert first != second and open(second, "rb").read() == b"other, longer bytes"
