"""Privacy with logins: two users of one server (``ui.auth``), through the API and in browsers.

Without logins the same rules are checked per browser in ``test_app_client.py`` (two API clients)
and ``test_browser.py`` (two browser profiles); the pass itself in ``tests/unit/test_access.py``.
With logins a conversation is its user's whichever browser or pass asks: even another user's real
pass (one that leaked, or one left in a shared browser) opens nothing of theirs.
"""

from __future__ import annotations

import shutil

import httpx
import pytest

from tests.app.api import turn, user_texts
from tests.app.browser_support import AppServer

pytest.importorskip("gradio_client")

USERS = {"ann": "pw-of-ann", "bob": "pw-of-bob"}
SECRET_TEXT = "My PIN is 4821 and I am scared my ex will find my new address."
MS = 1000


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = AppServer(tmp_path_factory.mktemp("logins"),
                       args=("--auth", ",".join(f"{u}:{p}" for u, p in USERS.items())))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def ann_pass(server):
    """Ann's conversation with one turn, made through the API; her pass."""
    return _turn(_client(server, "ann"), None, SECRET_TEXT)["sid"]


def _client(server, user, **kwargs):
    from gradio_client import Client

    return Client(server.url, auth=(user, USERS[user]), verbose=False, **kwargs)


def _turn(client, sid, text):
    return turn(client, sid, text)


def test_another_users_pass_opens_nothing_of_theirs(server, ann_pass):
    from gradio_client.exceptions import AppError

    bob = _client(server, "bob")
    bob_pass = bob.predict(None, "amara", api_name="/new_session")
    listed = bob.predict(bob_pass, api_name="/conversations")
    assert [c["sid"] for c in listed] == [bob_pass] and "PIN" not in str(listed)

    # Bob holds Ann's real pass: resume, export, delete and redo refuse it ...
    for call in (lambda: bob.predict(ann_pass, api_name="/resume"), lambda: bob.predict(ann_pass, api_name="/export"),
                 lambda: bob.predict(ann_pass, "amara", api_name="/delete_session"),
                 lambda: bob.predict(ann_pass, "amara", "tired", api_name="/redo")):
        with pytest.raises(AppError, match="belongs to someone else"):
            call()
    # ... and a turn with it goes into a new conversation of Bob's, not into Ann's
    out = _turn(bob, ann_pass, "What did she tell you?")
    assert out["sid"].split(".")[2] != ann_pass.split(".")[2]
    assert user_texts(bob, out["sid"]) == ["What did she tell you?"]
    # a forged or altered pass is refused outright
    _, browser, sid, mac = ann_pass.split(".")
    _, bob_browser, _, bob_mac = bob_pass.split(".")
    for forged in (sid, f"p1.{bob_browser}.{sid}.{bob_mac}", f"p1.{browser}.{sid}.{mac[::-1]}"):
        with pytest.raises(AppError, match="not one this server gave out"):
            bob.predict(forged, api_name="/resume")

    # Ann's conversation is whole, from any of her clients
    resumed = _client(server, "ann").predict(ann_pass, api_name="/resume")
    assert [t["user_text"] for t in resumed[2]] == [SECRET_TEXT]


def test_nothing_is_served_without_a_login(server, ann_pass):
    raw = _client(server, "ann", download_files=False)
    video = raw.predict(ann_pass, api_name="/resume")[2][-1]["video"]
    assert httpx.get(f"{server.url}gradio_api/file={video}", timeout=30).status_code in (401, 403)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.post("login", data={"username": "ann", "password": USERS["ann"]}).status_code == 200
        assert http.get(f"gradio_api/file={video}").status_code == 200


# -- in browsers -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    if shutil.which("chromium") is None:
        pytest.skip("needs Debian's chromium on PATH (.ci/run installs it: apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (tests/requirements.txt)")
    from tests.app.browser_support import CHROMIUM_ARGS

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=list(CHROMIUM_ARGS))
        yield browser
        browser.close()


def _log_in(page, server, user):
    page.goto(server.url)
    page.get_by_label("username").fill(user)
    page.get_by_label("password").fill(USERS[user])
    page.get_by_role("button", name="Login").click()
    page.locator("#send").wait_for()


@pytest.mark.browser
def test_a_shared_browser_shows_each_user_only_their_own(server, browser, ann_pass):
    from playwright.sync_api import expect

    from tests.app.test_browser import past_conversations

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(30 * MS)
        _log_in(page, server, "ann")  # Ann on a new browser: her list holds her conversation from the API
        mine = past_conversations(page)
        assert any("My PIN is 4821" in label for label in mine), mine

        page.locator("#text_in textarea").fill("I failed my driving test again today.")
        page.locator("#send").click()
        expect(page.locator("#chat [data-testid=user]")).to_have_count(1, timeout=120 * MS)

        page.goto(server.url + "logout")  # the browser keeps Ann's pass in its storage ...
        _log_in(page, server, "bob")  # ... but Bob, logging in on it, gets his own conversation
        labels = past_conversations(page)  # filled by the page's load, which opened a new conversation
        assert "(no turns yet)" in labels[0] and not any("PIN" in x or "driving" in x for x in labels), labels
        expect(page.locator("#chat [data-testid=user]")).to_have_count(0)
        assert "driving test" not in page.content() and "PIN is 4821" not in page.content()  # bare digits can be in a hash
    finally:
        context.close()
