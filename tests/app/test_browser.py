"""The page in Debian's chromium, driven by Playwright: webcam, microphone and text turns, a correction,
a reload and a server restart that keep the conversation, and two browsers that see only their own
conversations and custom avatars.

Chromium's fake camera shows the amara portrait and its fake microphone says "I failed my driving test
again today." (``tests/app/browser_support.py``). The app runs as ``tests/app/serve.py``: real speech
recognition, speech and video, and a scripted understander ("driving" -> disappointed, coarse sad;
"sister" -> joyful, coarse happy).

``E3RG_SCREENSHOT=1`` also writes the README's screenshot, ``assets/readme_app.png``.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest

from tests.app.browser_support import ROOT, make_fake_media

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None,
                       reason="needs Debian's chromium on PATH (.ci/run installs it: apt-get install chromium)"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (tests/requirements.txt)")
expect = sync_api.expect

from e3rg_core.ui.app import STORAGE_KEY  # noqa: E402  (after the skips: imports gradio)

TURN_TIMEOUT_S = 120  # one turn: speech recognition, the reply, its voice and face, on two slow cores
MS = 1000


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    return make_fake_media(tmp_path_factory.mktemp("fake_media"))


@pytest.fixture(scope="module")
def server(shared_server):
    """The app as tests/app/serve.py serves it, shared with other modules (tests/app/conftest.py)."""
    return shared_server


@pytest.fixture(scope="module")
def browser(media):
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=media.chromium_args())
        yield browser
        browser.close()


@pytest.fixture
def page(browser, server, tmp_path):
    """A fresh browser profile (so a new session) on the app; a screenshot of the end state in tmp_path."""
    context = browser.new_context(permissions=["camera", "microphone"], viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30 * MS)
    page.goto(server.url)
    page.locator("#send").wait_for()
    # the page's load event has opened a session and the browser keeps its id
    page.wait_for_function("key => localStorage.getItem(key) !== null", arg=STORAGE_KEY)
    yield page
    try:
        page.screenshot(path=str(tmp_path / "end.png"), full_page=True)
    finally:
        context.close()


# -- helpers ----------------------------------------------------------------------------------------

def _user_messages(page):
    return page.locator("#chat [data-testid=user]")


def _wait_for_turns(page, server, n_turns: int) -> None:
    """Wait until the chat holds n_turns user messages, failing fast on an error toast."""
    deadline = time.monotonic() + TURN_TIMEOUT_S
    errors = page.locator("[data-testid=toast-body].error")
    while time.monotonic() < deadline:
        if _user_messages(page).count() == n_turns:
            return
        if errors.count():
            pytest.fail(f"the turn failed on the page: {errors.first.inner_text()!r}\nserver log:\n{server.log_tail()}")
        page.wait_for_timeout(250)
    pytest.fail(f"no turn {n_turns} in the chat after {TURN_TIMEOUT_S} s\nserver log:\n{server.log_tail()}")


def _record_webcam(page, seconds: float) -> None:
    page.get_by_role("tab", name="Webcam").click()
    webcam = page.locator("#video_in")
    webcam.get_by_text("Click to Access Webcam").click()
    # the live preview plays once the fake camera streams
    page.wait_for_function("el => el.readyState >= 2 && el.videoWidth > 0",
                           arg=webcam.locator("video[data-testid=webcam-video]").element_handle())
    webcam.get_by_role("button", name="start recording").click()
    page.wait_for_timeout(seconds * MS)
    webcam.locator("button", has_text="Stop").first.click()
    # the recording is uploaded, then shown from the server
    webcam.locator("video[src*='/gradio_api/file=']").wait_for(timeout=60 * MS)


def _record_microphone(page, seconds: float) -> None:
    page.get_by_role("tab", name="Microphone").click()
    mic = page.locator("#audio_in")
    mic.locator("button", has_text="Record").first.click()
    page.wait_for_timeout(seconds * MS)
    mic.locator("button", has_text="Stop").first.click()
    mic.locator("a[data-testid=download-link][href*='/gradio_api/file=']").wait_for(timeout=60 * MS)


def _type(page, text: str) -> None:
    page.get_by_role("tab", name="Type").click()
    page.locator("#text_in textarea").fill(text)


def _top_emotion(page):
    return page.locator("#emotion [data-testid=label-output-value]")


def _expect_four_outputs(page, coarse: str) -> None:
    """The emotion, the reply text, the streamed voice and face that played in the browser, and the
    whole reply (MP4) in the conversation."""
    expect(_top_emotion(page)).to_have_text(coarse)
    reply = page.locator("#reply_text textarea").input_value()
    assert len(reply.split()) >= 3, reply

    voice = page.locator("#live_audio audio")
    page.wait_for_function("el => el.duration > 1 && (el.currentTime > 0 || el.ended)", arg=voice.element_handle(),
                           timeout=30 * MS)
    face = page.locator("#live_video video")
    page.wait_for_function("el => el.readyState >= 1 && el.videoWidth > 0 && el.muted", arg=face.element_handle(),
                           timeout=30 * MS)

    video = page.locator("#chat video[src]").last
    mp4 = page.request.get(video.get_attribute("src"))
    assert mp4.ok and mp4.body()[4:8] == b"ftyp" and len(mp4.body()) > 10_000
    # chromium decodes it: a reply of a sentence or more, with frames
    page.wait_for_function("el => el.readyState >= 1 && el.duration > 1 && el.videoWidth > 0",
                           arg=video.element_handle(), timeout=30 * MS)


def past_conversations(page, until=lambda labels: True, timeout_s: float = 15.0) -> list[str]:
    """The labels of the page's past conversations (under Conversations, which lists them anew when
    opened), once ``until(labels)`` holds or ``timeout_s`` has passed."""
    if page.locator("#past input").is_hidden():
        page.get_by_role("button", name="Conversations").click()
    deadline = time.monotonic() + timeout_s
    while True:
        page.locator("#past input").click()
        options = page.get_by_role("option")
        options.first.wait_for()
        labels = [option.inner_text() for option in options.all()]
        page.keyboard.press("Escape")
        if until(labels) or time.monotonic() > deadline:
            return labels
        page.wait_for_timeout(250)


def _expect_history(page, texts: list[str]) -> None:
    expect(_user_messages(page)).to_have_count(len(texts), timeout=30 * MS)
    for message, text in zip(_user_messages(page).all(), texts):
        expect(message).to_have_text(text)


# -- tests ------------------------------------------------------------------------------------------

def test_a_webcam_turn_shows_four_outputs_and_survives_a_reload_and_a_restart(page, server, media):
    _record_webcam(page, media.record_s)
    page.locator("#send").click()
    _wait_for_turns(page, server, 1)
    _expect_four_outputs(page, "sad")  # "driving" was heard: disappointed, coarse sad
    expect(page.locator("#emotion_note")).to_contain_text("you seem to feel disappointed")
    said = _user_messages(page).first.inner_text().strip()
    assert said.startswith("📹") and "driving" in said.lower(), said
    expect(page.locator("#timings")).to_contain_text("voice began after")

    page.reload()
    _expect_history(page, [said])

    server.restart()  # same port, data and secret: the browser's session id still opens the session
    page.reload()
    _expect_history(page, [said])
    expect(page.locator("#chat video[src]")).to_have_count(1)  # the reply's face came back too


def test_a_microphone_turn_is_transcribed(page, server, media):
    _record_microphone(page, media.record_s)
    page.locator("#send").click()
    _wait_for_turns(page, server, 1)
    said = _user_messages(page).first.inner_text().strip()
    assert said.startswith("🎙") and "driving" in said.lower(), said
    expect(_top_emotion(page)).to_have_text("sad")
    page.locator("#chat video[src]").wait_for()


def test_a_correction_redoes_the_last_turn_in_place(page, server, tmp_path):
    _type(page, "I failed my driving test again today.")
    page.locator("#send").click()
    _wait_for_turns(page, server, 1)
    expect(page.locator("#emotion_note")).to_contain_text("you seem to feel disappointed")

    page.locator("#correction input").click()
    page.get_by_role("option", name="lonely", exact=True).click()
    page.locator("#redo").click()
    expect(page.locator("#emotion_note")).to_contain_text("you said you feel lonely", timeout=TURN_TIMEOUT_S * MS)
    bot_titles = page.locator("#chat [data-testid=bot]")
    expect(bot_titles.first).to_contain_text("lonely", timeout=TURN_TIMEOUT_S * MS)
    expect(bot_titles.first).to_contain_text("corrected by you")
    _expect_history(page, ["I failed my driving test again today."])  # replaced, not appended

    _type(page, "My sister called and we laughed for an hour.")
    page.locator("#send").click()
    _wait_for_turns(page, server, 2)
    _expect_four_outputs(page, "happy")
    _expect_history(page, ["I failed my driving test again today.", "My sister called and we laughed for an hour."])

    # the chat from its first turn, which shows the correction; the panels above show the second
    page.locator("#chat [role=log]").evaluate("el => { el.scrollTop = 0; }")
    page.screenshot(path=str(tmp_path / "two_turns.png"), full_page=True)
    if os.environ.get("E3RG_SCREENSHOT"):
        page.screenshot(path=str(ROOT / "assets" / "readme_app.png"), full_page=True)


def test_the_voice_plays_before_the_whole_video_exists(page, server):
    """Streaming: the reply's first sentence is heard while the rest is still being written and
    rendered; the whole MP4 reaches the conversation only when every piece is done."""
    _type(page, "I failed my driving test again today.")
    page.locator("#send").click()
    deadline, seen = time.monotonic() + TURN_TIMEOUT_S, []
    while time.monotonic() < deadline:
        state = page.evaluate("""() => {
            const voice = document.querySelector('#live_audio audio');
            return {playing: !!voice && !voice.paused && voice.currentTime > 0,
                    whole: document.querySelectorAll('#chat video[src]').length > 0};
        }""")
        seen.append(state)
        if state["whole"]:
            break
        page.wait_for_timeout(100)
    assert seen and seen[-1]["whole"], f"the turn did not finish\nserver log:\n{server.log_tail()}"
    before = [s for s in seen if not s["whole"]]
    assert any(s["playing"] for s in before), f"no voice before the whole video: {seen}"
    _expect_four_outputs(page, "sad")


def test_two_browsers_see_only_their_own_conversations_and_avatars(page, browser, server):
    """Two visitors of one server without logins: B's page shows nothing of what A said or made."""
    secret = "My PIN is 4821 and I am scared my ex will find my new address."
    _type(page, secret)
    page.locator("#send").click()
    _wait_for_turns(page, server, 1)
    page.get_by_role("button", name="Make your own avatar").click()
    page.locator("#new_name").get_by_role("textbox").fill("Sam")
    page.locator("#new_gender input").click()
    page.get_by_role("option", name="male", exact=True).click()
    page.locator("#new_portrait input[type=file]").set_input_files(str(ROOT / "avatars" / "kofi" / "portrait.png"))
    page.locator("#new_portrait img").wait_for()
    page.locator("#new_rights input").check()  # "I have the right to use this face and voice"
    page.locator("#create_avatar").click()
    expect(page.locator("#create_note")).to_contain_text("Created Sam", timeout=60 * MS)
    expect(page.locator("#avatar_gallery")).to_contain_text("Sam · young male")
    mine = past_conversations(page, until=lambda labels: any("My PIN is 4821" in label for label in labels))
    assert any("My PIN is 4821" in label for label in mine), mine

    context = browser.new_context(viewport={"width": 1280, "height": 900})  # another visitor
    try:
        other = context.new_page()
        other.set_default_timeout(30 * MS)
        for _ in range(2):  # a first visit, then a reload
            other.goto(server.url)
            other.locator("#send").wait_for()
            expect(other.locator("#avatar_gallery")).to_contain_text("Kofi")  # the shipped avatars are there
            expect(other.locator("#avatar_gallery")).not_to_contain_text("Sam")
            labels = past_conversations(other)
            assert len(labels) == 1 and "(no turns yet)" in labels[0], labels  # only its own, empty one
            expect(_user_messages(other)).to_have_count(0)
            assert "PIN is 4821" not in other.content()  # the bare digits can occur in a page hash
    finally:
        context.close()
    page.reload()  # A still has everything
    _expect_history(page, [secret])
    expect(page.locator("#avatar_gallery")).to_contain_text("Sam · young male")
