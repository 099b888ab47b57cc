"""Every command of docs/gpu-box.md that can run without a GPU, run as the page writes it.

The page's ``gpu.toml`` block is the config, with its folders pointed at tiny checkpoints (the real
on-disk formats) and ``device = "cuda"`` made ``"cpu"``; the reply server is the page's llama.cpp
server command on the embedded 0.5B model. What needs CUDA is checked to stop at start-up with its
message instead. The commands run through ``python -m e3rg_core`` in a subprocess, except the voice
and the face, which run the same CLI in this process because their upstream stand-ins live in
``sys.modules`` (tests/openvoice_support.py, the DICE-Talk stand-in of test_dicetalk.py).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from e3rg_core import cli
from e3rg_core.config import load_config
from e3rg_core.media.audio import read_audio
from tests.backends import tiny_hf
from tests.llama_server import free_port, llama_server
from tests.openvoice_support import have_openvoice_cli, install_upstream, write_checkpoints, write_reference

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "gpu-box.md"
SERVER_MODEL = "qwen2.5-coder-0.5b-instruct-q4_k_m"  # the embedded model the tests serve (the page's 1.5B is slower)

REPLY = 'python -m e3rg_core --config gpu.toml understand --vote minilm --text "My sister got the job she wanted!" --json'
OMNI = ('python -m e3rg_core --config gpu.toml understand --text "I finally passed my driving test!" '
        '--audio turn.wav --json')
SPEAK = ('python -m e3rg_core --config gpu.toml speak --backend openvoice --voice en-newest --reference my-voice.wav '
         '--emotion sad --text "I am so sorry to hear that." -o reply.wav --json')
RENDER = 'python -m e3rg_core --config gpu.toml render --avatar amara --audio reply.wav --emotion sad -o reply.mp4 --json'
APP = "python app.py --config gpu.toml"
SERVER = ("python -m llama_cpp.server --model ~/.cache/e3rg/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf "
          "--model_alias gpu-llm --port 8000")
TESTED = (REPLY, OMNI, SPEAK, RENDER, APP, SERVER)


def doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def doc_config() -> str:
    """The page's gpu.toml block."""
    blocks = re.findall(r"```toml\n(.*?)```", doc_text(), flags=re.S)
    assert len(blocks) == 1, "docs/gpu-box.md should hold one TOML block, gpu.toml"
    return blocks[0]


def test_every_command_of_the_page_is_run_here():
    text = doc_text()
    for command in TESTED:
        assert command in text, f"docs/gpu-box.md no longer says: {command}"
    commands = {line.strip() for line in text.splitlines() if line.strip().startswith(("python -m e3rg_core",
                                                                                       "python app.py"))}
    assert commands <= set(TESTED), f"commands without a test: {sorted(commands - set(TESTED))}"
    assert "The real GPU weights have not run here" in text  # the page says what ran on a GPU and what did not


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The page's llama.cpp server command, on the embedded 0.5B model and a free port."""
    pytest.importorskip("uvicorn", reason="tests/requirements.txt installs the llama.cpp server deps")
    from e3rg_core.understanding.embedded import EMBEDDED_MODELS, assemble

    gguf = assemble(EMBEDDED_MODELS[SERVER_MODEL], cache_dir=load_config(environ={}).cache_dir / "models")
    port = free_port()
    argv = shlex.split(SERVER.replace("~/.cache/e3rg/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", str(gguf))
                       .replace("--port 8000", f"--port {port}"))
    argv[0] = sys.executable
    with llama_server([*argv, "--host", "127.0.0.1", "--n_ctx", "2048", "--n_threads", "2"], port=port,
                      log=tmp_path_factory.mktemp("server") / "server.log", timeout_s=120) as url:
        yield url


@pytest.fixture(scope="module")
def omni_dir(tmp_path_factory) -> Path:
    return tiny_hf.save_tiny_omni(tmp_path_factory.mktemp("omni") / "Qwen2.5-Omni-7B")


@pytest.fixture(scope="module")
def voices(tmp_path_factory):
    if not have_openvoice_cli():
        pytest.skip("OpenVoice's model code for the tests: pip install --no-deps openvoice-cli==0.0.5")
    return write_checkpoints(tmp_path_factory.mktemp("openvoice"), real=True)


def write_config(folder: Path, *, server: str, omni: Path | None = None, voices=None, dicetalk: Path | None = None,
                 on_cpu: bool = True) -> Path:
    """gpu.toml as the page writes it, with its places replaced by the test's."""
    text = doc_config().replace("http://127.0.0.1:8000/v1", server)
    for written, actual in (("~/models/Qwen2.5-Omni-7B", omni), ("~/DICE-Talk", dicetalk),
                            ("~/OpenVoice/checkpoints_v2", voices.v2 if voices else None),
                            ("~/models/MeloTTS-English-v3", voices.melo if voices else None)):
        assert f'"{written}"' in text
        text = text.replace(f'"{written}"', json.dumps(str(actual or folder / "absent")))
    if on_cpu:
        assert 'device = "cuda"' in text
        text = text.replace('device = "cuda"', 'device = "cpu"')
    path = folder / "gpu.toml"
    path.write_text(text, encoding="utf-8")
    return path


def run_doc_command(command: str, folder: Path, timeout_s: float = 600) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    argv[0] = sys.executable
    if argv[1] == "app.py":
        argv[1] = str(ROOT / "app.py")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "E3RG_DATA_DIR": str(folder / "data")}
    return subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout_s)


def test_the_reply_server_alone(server, tmp_path):
    write_config(tmp_path, server=server)
    done = run_doc_command(REPLY, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert len(result["reply"].split()) >= 3
    assert [v["voter"] for v in result["votes"]] == ["minilm"] and result["emotion"]


def test_the_omni_model_alone_hears_the_turn_or_says_what_to_install(server, omni_dir, tmp_path):
    from e3rg_core.understanding.hf import SAMPLE_RATE_HZ
    from transformers.utils import is_torchvision_available

    write_config(tmp_path, server=server, omni=omni_dir)
    tiny_hf.write_sine_wav(tmp_path / "turn.wav", duration_s=1.0, sample_rate_hz=SAMPLE_RATE_HZ)
    done = run_doc_command(OMNI, tmp_path)
    if not is_torchvision_available():  # the project's venv: the page says to install it
        assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
        assert re.search(r"^error: .*needs pillow and torchvision.*pip install pillow torchvision", done.stderr,
                         flags=re.S | re.M)
        return
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert [v["voter"] for v in result["votes"]][:1] == ["omni"] and result["reply"]


def test_the_voice_alone(server, voices, monkeypatch, tmp_path, capsys):
    install_upstream(monkeypatch)
    write_config(tmp_path, server=server, voices=voices)
    write_reference(tmp_path / "my-voice.wav")
    monkeypatch.chdir(tmp_path)
    assert cli.main(shlex.split(SPEAK)[3:]) == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert result["voice"] == "openvoice:en-newest" and result["emotion"] == "sad"
    audio = read_audio(tmp_path / "reply.wav")
    assert audio.duration_s > 1.0 and audio.sample_rate_hz == result["sample_rate_hz"]


def _checkout(tmp_path: Path) -> Path:
    from tests.backends.test_dicetalk import make_checkout

    return make_checkout(tmp_path)


def test_the_face_alone_stops_without_a_gpu_and_renders_with_one(server, monkeypatch, tmp_path, capsys):
    from imageio_ffmpeg import get_ffmpeg_exe

    from e3rg_core.video import dicetalk
    from tests.video_support import make_speech

    checkout = _checkout(tmp_path)
    write_config(tmp_path, server=server, dicetalk=checkout)
    make_speech(tmp_path / "reply.wav", duration_s=1.5)
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(RENDER)[3:]
    import torch

    if not torch.cuda.is_available():  # here: one message at creation, before any rendering
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "CUDA GPU with at least 20 GB" in err and "Traceback" not in err
        assert not (tmp_path / "reply.mp4").exists()

    monkeypatch.setattr(dicetalk, "check_gpu", lambda device, min_gb=20.0: "FakeGPU 24GB")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ffmpeg").symlink_to(get_ffmpeg_exe())
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    assert cli.main(argv) == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert result["backend"] == "dicetalk" and result["emotion"] == "sad" and result["fps"] == 25
    assert (tmp_path / "reply.mp4").stat().st_size > 1000


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="CUDA is available here")
def test_the_app_with_the_page_config_stops_at_start_up_with_one_message(server, omni_dir, tmp_path):
    """The config as the page writes it (CUDA devices) on this CPU machine: no turn is ever served."""
    write_config(tmp_path, server=server, omni=omni_dir, on_cpu=False)
    done = run_doc_command(APP, tmp_path, timeout_s=900)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("e3rg cannot start: ") and "needs an NVIDIA GPU with CUDA" in last
    assert "install a CUDA build of PyTorch" in last and "Traceback" not in done.stderr
    assert "Running on" not in done.stdout + done.stderr
