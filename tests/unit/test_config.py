import pytest

from e3rg_core.config import load_config
from e3rg_core.errors import ConfigError


def test_defaults(tmp_path):
    c = load_config(environ={})
    assert c.understanding.shots == 0
    assert c.understanding.responder in c.models
    assert c.profile("minilm").backend == "embedding"
    assert c.understanding.vote_method == "soft"


def test_precedence_cli_over_env_over_file_over_default(tmp_path):
    f = tmp_path / "e3rg.toml"
    f.write_text('[understanding]\nshots = 1\nseed = 5\nemotion_map = "video"\n')
    c = load_config(f, environ={})
    assert (c.understanding.shots, c.understanding.seed, c.understanding.emotion_map) == (1, 5, "video")
    c = load_config(f, environ={"E3RG_UNDERSTANDING_SHOTS": "3"})
    assert c.understanding.shots == 3 and c.understanding.seed == 5
    c = load_config(f, environ={"E3RG_UNDERSTANDING_SHOTS": "3"}, overrides={"understanding.shots": 0,
                                                                            "understanding.seed": None})
    assert c.understanding.shots == 0 and c.understanding.seed == 5


def test_config_path_from_env(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text('data_dir = "%s"\n[understanding]\nvoters = ["qwen1.5b", "minilm"]\n' % (tmp_path / "d"))
    c = load_config(environ={"E3RG_CONFIG": str(f)})
    assert c.data_dir == tmp_path / "d"
    assert c.understanding.voters == ("qwen1.5b", "minilm")
    c = load_config(environ={"E3RG_CONFIG": str(f), "E3RG_UNDERSTANDING_VOTERS": "minilm, qwen0.5b"})
    assert c.understanding.voters == ("minilm", "qwen0.5b")


def test_custom_profile(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[models.vllm]\nbackend = "openai"\nmodel = "Qwen/Qwen2.5-7B-Instruct"\n'
                 'base_url = "http://127.0.0.1:8000/v1"\n[understanding]\nresponder = "vllm"\n')
    c = load_config(f, environ={})
    p = c.profile("vllm")
    assert p.backend_options() == {"model": "Qwen/Qwen2.5-7B-Instruct", "base_url": "http://127.0.0.1:8000/v1"}


@pytest.mark.parametrize("toml,match", [
    ("[understanding]\nshots = 2\n", "shots must be one of"),
    ("[understanding]\nshots = \"many\"\n", "not a valid int"),
    ("[understanding]\nemotion_map = \"mead\"\n", "choose from hit, video"),
    ("[understanding]\nresponder = \"minilm\"\n", "cannot write replies"),
    ("[understanding]\nvoters = [\"nope\"]\n", "unknown model profile 'nope'"),
    ("[understanding]\nvoters = [\"minilm@2\"]\n", "shots must be 0, 1 or 3"),
    ("[understanding]\nvoters = [\"minilm*x\"]\n", "name\\[@SHOTS\\]"),
    ("[understanding]\nvote_method = \"ranked\"\n", "choose from soft, majority"),
    ("[understanding]\nfoo = 1\n", "unknown setting understanding.foo"),
    ("[models.x]\nbackend = \"tensorflow\"\nmodel = \"m\"\n", "choose from llamacpp"),
    ("[models.x]\nbackend = \"openai\"\n", "needs 'backend' and 'model'"),
    ("bogus = 1\n", "unknown config keys"),
    ("[ui]\npause_s = 0.1\n", "ui.pause_s must lie in 0.3..3 seconds"),
    ("not toml [", "not valid TOML"),
])
def test_errors_say_what_is_allowed(tmp_path, toml, match):
    f = tmp_path / "bad.toml"
    f.write_text(toml)
    with pytest.raises(ConfigError, match=match):
        load_config(f, environ={})


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml", environ={})


def test_shared_conversations_are_off_by_default_and_not_mixed_with_logins():
    assert load_config(environ={}).ui.shared_conversations is False
    assert load_config(environ={"E3RG_UI_SHARED_CONVERSATIONS": "true"}).ui.shared_conversations is True
    with pytest.raises(ConfigError, match="with ui.auth every user has their own"):
        load_config(environ={"E3RG_UI_SHARED_CONVERSATIONS": "true", "E3RG_UI_AUTH": "ann:pw"})
    with pytest.raises(ConfigError, match="ui.secret must be at least 16 characters"):
        load_config(environ={"E3RG_UI_SECRET": "short"})


def test_a_speech_backend_has_its_own_table(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[speech]\nseed = 3\n[speech.openvoice]\ndir = "~/ov"\ndevice = "cpu"\n')
    c = load_config(f, environ={"E3RG_SPEECH_OPENVOICE_SPEED": "0.9"})
    openvoice = c.backend_options("speech", "openvoice")
    assert c.speech.seed == 3 and (openvoice.dir, openvoice.device, openvoice.speed) == ("~/ov", "cpu", 0.9)
    assert load_config(environ={}).backend_options("speech", "openvoice").device == "auto"  # no table: defaults
    assert load_config(environ={}).backend_options("speech", "embedded") is None  # it has no options


@pytest.mark.parametrize("toml, env, message", [
    ("[speech]\nopenvoice_dir = 'x'", {}, r"speech.openvoice_dir has moved: set dir in \[speech.openvoice\]"),
    ("", {"E3RG_SPEECH_MELO_DIR": "x"}, r"speech.melo_dir has moved: set melo_dir in \[speech.openvoice\] "
                                        r"\(E3RG_SPEECH_OPENVOICE_MELO_DIR"),
    ("[speech.openvoice]\ndevice = 'gpu'", {}, "speech.openvoice.device must be auto, cpu, cuda or cuda:N"),
    ("[speech.openvoice]\nspeed = 3.0", {}, "speech.openvoice.speed must lie in 0.5..2"),
    ("[speech.embedded]\nseed = 1", {}, r"the speech backend 'embedded' has no options; remove \[speech.embedded\]"),
    ("[ui.theme]\ndark = true", {}, r"\[ui\] has no tables of its own"),
])
def test_backend_tables_are_checked_and_old_keys_say_where_they_went(tmp_path, toml, env, message):
    f = tmp_path / "c.toml"
    f.write_text(toml + "\n")
    with pytest.raises(ConfigError, match=message):
        load_config(f, environ=env)
