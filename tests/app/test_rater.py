"""The rater app driven with gradio_client: consent, per-rater order, plays before ratings, resuming after a
restart, blinding of everything served, the organiser's report."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pytest

from tests.unit.test_rating import _toml

pytest.importorskip("gradio")

ROOT = Path(__file__).resolve().parents[2]
# Distinctive names, so "no system name anywhere" is a real check.
SYSTEMS = ("zebrasys", "otterbase")
N_ITEMS = 4
RATERS = {"r1": "p1", "r2": "p2", "r3": "p3", "org": "po", "r4": "p4", "r5": "p5"}
N_CRITERIA = 5  # the default criteria
N_PANELS = len(SYSTEMS)

# the order of rater_start / rater_submit outputs as gradio_client returns them (``page`` in build_rater_app,
# less the layout blocks: the consent and rating columns, the panels' columns, the organiser tab)
MESSAGE, DONE, PROGRESS, CONTEXT, INSTRUCTION, POSITION = range(6)
TEXTS = 6
AUDIOS = TEXTS + N_PANELS
VIDEOS = AUDIOS + N_PANELS
RADIOS = VIDEOS + N_PANELS
PREFS = RADIOS + N_PANELS * N_CRITERIA
N_OUTPUTS = PREFS + 1


def _render_clip(path: Path) -> None:
    import imageio_ffmpeg

    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-loglevel", "error", "-loop", "1",
                    "-i", str(ROOT / "avatars" / "amara" / "portrait.png"), "-t", "1", "-r", "8",
                    "-vf", "scale=128:128", "-pix_fmt", "yuv420p", "-c:v", "libx264", str(path)], check=True)


def make_study(root: Path) -> Path:
    """2 systems x 4 items and one attention check, with real (tiny) media; returns the study file."""
    root.mkdir(parents=True, exist_ok=True)
    clip = root / "clip.mp4"
    _render_clip(clip)
    wavs = sorted((ROOT / "e3rg_core" / "eval" / "sample" / "media").glob("*.wav"))
    items = []
    for k in range(1, N_ITEMS + 1):
        item_id = f"dia{k:05d}turn1"
        outputs = {}
        for n, system in enumerate(SYSTEMS):
            folder = root / system
            folder.mkdir(exist_ok=True)
            shutil.copyfile(clip, folder / f"{item_id}_{system}.mp4")
            shutil.copyfile(wavs[(k + n) % len(wavs)], folder / f"{item_id}_{system}.wav")
            outputs[system] = {"text": f"Reply {n} to item {k}.", "video": f"{system}/{item_id}_{system}.mp4",
                               "audio": f"{system}/{item_id}_{system}.wav"}
        items.append({"id": item_id, "context": [{"role": "speaker", "text": f"Something happened, number {k}."}],
                      "outputs": outputs})
    (root / "gold").mkdir(exist_ok=True)
    shutil.copyfile(clip, root / "gold" / "check.mp4")
    data = {
        "study": {"id": "rater-study", "title": "Which reply is better?", "secret": "t" * 32,
                  "systems": list(SYSTEMS), "consent": "I agree to take part.", "instructions": "Watch, then rate."},
        "preference": {"pairs": [list(SYSTEMS)]},
        "items": items,
        "gold": [{"id": "goldcheck", "instruction": "Attention check: choose 2 for every question.",
                  "context": [{"role": "speaker", "text": "This is the check."}],
                  "text": "Please choose 2.", "video": "gold/check.mp4", "expect_all": [2, 2]}],
    }
    path = root / "study.toml"
    path.write_text(_toml(data), encoding="utf-8")
    return path


def test_config(data_dir: Path):
    """The app's config with logins for three raters and an organiser, and ``ui.organisers``."""
    from e3rg_core.config import UIConfig, load_config

    @dataclass(frozen=True)
    class UI(UIConfig):  # until the lead adds ``organisers`` to UIConfig
        organisers: tuple[str, ...] = ()

    config = load_config(environ={"E3RG_DATA_DIR": str(data_dir), "E3RG_CACHE_DIR": str(data_dir / "cache")})
    fields = {**asdict(config.ui), "auth": tuple(f"{u}:{p}" for u, p in RATERS.items()), "organisers": ("org",)}
    return replace(config, ui=UI(**fields))


test_config.__test__ = False  # a helper, not a test


class RaterServer:
    """The rater app launched in this process; ``restart`` keeps the data dir and the study."""

    def __init__(self, config, study_path: Path, data_dir: Path) -> None:
        self.config, self.study_path, self.data_dir = config, study_path, data_dir
        self.demo = None
        self.url = ""

    def start(self) -> None:
        from e3rg_core.ui.rater import build_rater_app

        self.demo, launch = build_rater_app(self.config, self.study_path, data_dir=self.data_dir)
        launch.update(server_name="127.0.0.1", quiet=True, prevent_thread_lock=True)
        _, self.url, _ = self.demo.launch(**launch)

    def stop(self) -> None:
        if self.demo is not None:
            self.demo.close()
            self.demo = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def client(self, user: str):
        from gradio_client import Client

        return Client(self.url, auth=(user, RATERS[user]), verbose=False)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("rater")
    study_path = make_study(root / "study")
    data_dir = root / "data"
    server = RaterServer(test_config(data_dir), study_path, data_dir)
    server.start()
    yield server
    server.stop()


def _study(server):
    from e3rg_core.rating import load_study

    return load_study(server.study_path)


def _store(server):
    from e3rg_core.rating import RatingStore

    study = _study(server)
    return RatingStore(server.data_dir / "ratings" / f"{study.id}.sqlite3", study)


def _value(out):
    """A component's value as gradio_client returns it (a plain value, or an update dict)."""
    return out.get("value") if isinstance(out, dict) and out.get("__type__") == "update" else out


def _visible(out) -> bool | None:
    return out.get("visible") if isinstance(out, dict) else None


def _on_trial(page) -> bool:
    return bool(_value(page[POSITION]))


def _on_consent(page) -> bool:
    return "consent form" in (_value(page[MESSAGE]) or "")


def _context_to_item(study) -> dict[str, str]:
    return {" ".join(u.text for u in item.context): item.id for item in (*study.items, *study.gold)}


def _shown_item(study, page) -> str:
    """Which item a page shows, recovered from its dialogue context (the page never names the item)."""
    text = re.sub(r"\\(.)", r"\1", _value(page[CONTEXT]))
    found = [item_id for ctx, item_id in _context_to_item(study).items() if ctx in text]
    assert len(found) == 1, text
    return found[0]


def _answer(client, page, *, score=4, play=True):
    position = int(_value(page[POSITION]))
    if play:
        for label in [label for k, label in enumerate("AB") if _value(page[VIDEOS + k])]:
            assert client.predict(position, label, "video", api_name="/rater_play") >= 1
    scores = [score] * (N_PANELS * N_CRITERIA)
    gold = "Attention check" in (_value(page[INSTRUCTION]) or "")
    prefs = [None] if gold else ["left"]
    if gold:
        scores = [2] * N_CRITERIA + [None] * N_CRITERIA
    return client.predict(position, *scores, *prefs, api_name="/rater_submit")


def _start(client):
    page = client.predict(api_name="/rater_start")
    assert len(page) == N_OUTPUTS
    if _on_consent(page):
        page = client.predict(api_name="/rater_consent")
    return page


def test_raters_get_their_own_order_must_play_first_and_resume_after_a_restart(served):
    from gradio_client.exceptions import AppError

    from e3rg_core.rating.plan import trial_order

    study = _study(served)
    client = served.client("r1")
    first = client.predict(api_name="/rater_start")
    assert _on_consent(first) and not _on_trial(first)  # consent before anything
    with pytest.raises(AppError, match="consent"):
        client.predict(1, "A", "video", api_name="/rater_play")
    page = client.predict(api_name="/rater_consent")
    assert _on_trial(page) and "Item 1 of 5" in _value(page[PROGRESS])

    with pytest.raises(AppError, match="play the video before rating"):
        _answer(client, page, play=False)
    with pytest.raises(AppError, match="not the one due"):
        client.predict(3, "A", "video", api_name="/rater_play")

    seen = {}
    for rater in ("r1", "r2", "r3"):
        c = client if rater == "r1" else served.client(rater)
        page = _start(c)
        order = []
        for k in range(1, 3):
            assert f"Item {k} of 5" in _value(page[PROGRESS])
            order.append(_shown_item(study, page))
            page = _answer(c, page)
        assert _shown_item(study, page) == trial_order(study, rater)[2]  # the next item is shown
        again = _start(served.client(rater))  # a reload: the same next item
        assert _shown_item(study, again) == trial_order(study, rater)[2] and "Item 3 of 5" in _value(again[PROGRESS])
        seen[rater] = tuple(order) + (_shown_item(study, again),)
    assert len(set(seen.values())) > 1  # orders differ between raters
    assert all(seen[r] == trial_order(study, r)[:3] for r in seen)

    served.restart()
    store = _store(served)
    n_before = len(store.rows())
    assert n_before == 3 * 2 * N_PANELS * N_CRITERIA - sum(
        N_CRITERIA for r in seen for item in seen[r][:2] if item == "goldcheck")
    for rater in ("r1", "r2", "r3"):
        c = served.client(rater)
        page = _start(c)  # consent is remembered
        assert _shown_item(study, page) == seen[rater][2] and "Item 3 of 5" in _value(page[PROGRESS])
        while _on_trial(page):
            page = _answer(c, page)
        assert _visible(page[DONE]) is True and "Thank you" in _value(page[DONE])
        assert store.completed_items(rater) == {*(i.id for i in study.items), "goldcheck"}
    store.close()


def test_nothing_served_names_a_system(served):
    import httpx

    client = served.client("org")  # a rater who has not started yet
    page = _start(client)
    paths = []
    while _on_trial(page):
        for k in range(N_PANELS):
            for out in (page[AUDIOS + k], page[VIDEOS + k]):
                if _value(out):
                    paths.append(Path(_value(out)))
        text = "".join(str(x) for x in page)
        assert not any(s in text.lower() for s in SYSTEMS) and "goldcheck" not in text and "dia000" not in text
        page = _answer(client, page)
    assert paths and all(re.fullmatch(r"[0-9a-f]{32}\.(mp4|wav)", p.name) for p in paths)

    with httpx.Client(base_url=served.url, timeout=10) as http:
        login = http.post("login", data={"username": "r1", "password": "p1"})
        assert login.status_code == 200
        cookies = {k: v for k, v in login.cookies.items()}
        for route in ("", "config", "gradio_api/info"):
            body = http.get(route, cookies=cookies).text
            assert "rater_submit" in body or "Which reply is better" in body, route  # the app, not a login page
            for word in (*SYSTEMS, "goldcheck", "dia00001"):
                assert word not in body.lower(), (route, word)


def test_the_organiser_report_matches_the_store(served):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="only the study's organisers"):
        served.client("r1").predict(api_name="/organiser_report")

    files, plot, summary = served.client("org").predict(api_name="/organiser_report")
    by_name = {Path(f if isinstance(f, str) else f["path"]).name: Path(f if isinstance(f, str) else f["path"])
               for f in files}
    assert set(by_name) == {"ratings.csv", "preferences.csv", "summary.json"}
    assert plot and Path(plot).stat().st_size > 1000
    assert "zebrasys" in summary and "otterbase" in summary and "alpha" in summary

    with _store(served) as store:
        rows = store.rows()
    with by_name["ratings.csv"].open(encoding="utf-8") as f:
        exported = list(csv.DictReader(f))
    assert len(exported) == len(rows) > 0
    expected = [{"rater": r.rater, "item": r.item, "system": r.system, "criterion": r.criterion,
                 "score": str(r.score), "swap": str(r.swap), "shown_at": r.shown_at, "answered_at": r.answered_at,
                 "audio_plays": str(r.audio_plays), "video_plays": str(r.video_plays)} for r in rows]
    assert exported == expected


def test_raters_cannot_see_each_others_answers(served):
    from gradio_client.exceptions import AppError

    a, b = served.client("r4"), served.client("r5")
    after_a = _answer(a, _start(a), score=5)
    assert "Item 2 of 5" in _value(after_a[PROGRESS])
    page_b = _start(b)  # B starts after A answered: B's own first item, nothing of A's
    assert "Item 1 of 5" in _value(page_b[PROGRESS])
    assert all(_value(page_b[RADIOS + k]) is None for k in range(N_PANELS * N_CRITERIA))
    assert "r4" not in str(page_b)
    position = int(_value(page_b[POSITION]))
    assert b.predict(position, "A", "video", api_name="/rater_play") == 1  # B's own plays, not A's
    with pytest.raises(AppError, match="only the study's organisers"):  # the answers reach organisers only
        b.predict(api_name="/organiser_report")
    again = _start(a)  # and A's page still shows A's place, with no answer filled in
    assert "Item 2 of 5" in _value(again[PROGRESS])
    assert all(_value(again[RADIOS + k]) is None for k in range(N_PANELS * N_CRITERIA))


def test_the_rater_id_comes_from_the_login_or_the_link():
    from types import SimpleNamespace

    from e3rg_core.errors import InputError
    from e3rg_core.ui.rater import RaterService, md_text

    def request(username=None, **query):
        return SimpleNamespace(username=username, query_params=query)

    assert RaterService.rater_of(request("alice")) == "alice"
    assert RaterService.rater_of(request("alice", rater="bob")) == "alice"  # the login wins
    assert RaterService.rater_of(request(rater="P-01.x_y")) == "P-01.x_y"
    for bad in ("", "a b", "x" * 65, "<script>", "é"):
        with pytest.raises(InputError):
            RaterService.rater_of(request(rater=bad))
    with pytest.raises(InputError, match=r"\?rater="):
        RaterService.rater_of(request())
    assert md_text("<b>*hi*</b> [x](y)") == r"&lt;b&gt;\*hi\*&lt;/b&gt; \[x\]\(y\)"


def test_the_raters_handlers_without_a_browser(tmp_path):
    """Consent, trials in order, play before rating, done: ``RaterService`` called directly."""
    from e3rg_core.errors import InputError
    from e3rg_core.rating import RatingStore, load_study
    from e3rg_core.ui.rater import ConsentLog, RaterService

    study = load_study(make_study(tmp_path / "study"))
    service = RaterService(study, RatingStore(tmp_path / "r.sqlite3", study),
                           ConsentLog(tmp_path / "consent.jsonl", study.consent), tmp_path / "media", ())
    assert service.page("p01").state == "consent"
    with pytest.raises(InputError, match="consent form first"):
        service.play("p01", 1, "A", "video")
    page = service.agree("p01")
    assert page.state == "trial" and page.trial.position == 1 and service.page("p01").trial == page.trial
    with pytest.raises(InputError, match="play the video before rating"):
        service.submit("p01", 1, [[4] * len(study.criteria)] * len(page.trial.panels), ["none"] * len(page.trial.pairs))
    for position in range(1, page.trial.n_trials + 1):
        trial = service.page("p01").trial
        for panel in trial.panels:
            service.play("p01", position, panel.label, "video")
        expect = [2] * len(study.criteria) if trial.instruction else [4] * len(study.criteria)
        service.submit("p01", position, [expect] * len(trial.panels), ["none"] * len(trial.pairs))
    assert service.page("p01").state == "done" and service.page("p02").state == "consent"
