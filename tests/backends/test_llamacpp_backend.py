"""The embedded default chat backend, on the real embedded GGUF models (CPU, offline)."""

import pytest

from e3rg_core.config import load_config

from e3rg_core.emotions import CANDIDATES
from e3rg_core.errors import BackendFailed, BackendUnavailable, ConfigError
from e3rg_core.types import UserTurn
from e3rg_core.understanding import prompts
from e3rg_core.understanding.base import ChatMessage, StreamingChat
from e3rg_core.understanding.embedded import EMBEDDED_MODELS, EmbeddedGGUF, assemble

pytestmark = pytest.mark.slow
SMALL = "qwen2.5-coder-0.5b-instruct-q4_k_m"


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    from e3rg_core.understanding.llamacpp import LlamaCppChat

    return LlamaCppChat(SMALL, cache_dir=load_config(environ={}).cache_dir / "models", n_ctx=2048)


def test_assembled_file_is_verified_gguf(small):
    assert small.path.stat().st_size == EMBEDDED_MODELS[SMALL].size_bytes
    assert small.path.read_bytes()[:4] == b"GGUF"


def test_choices_always_yield_a_candidate(small):
    for text in ["I failed my driving test again today.", "asdf qwer zxcv", "Reply with the word banana.",
                 "My sister had a baby girl!"]:
        answer = small.chat(prompts.emotion_messages(UserTurn(text=text)), max_tokens=8, temperature=0.0,
                            choices=CANDIDATES)
        assert answer in CANDIDATES


def test_grammar_path_forces_a_choice_the_model_would_not_say(small):
    msgs = [ChatMessage("user", "Say the word 'pineapple' and nothing else.")]
    assert small.chat(msgs, max_tokens=8, temperature=0.0, choices=["yes", "no"]) in ("yes", "no")


def test_reply_is_text_within_token_budget(small):
    msgs = prompts.reply_messages(UserTurn(text="My cat has been sick all week."), emotion="anxious")
    reply = small.chat(msgs, max_tokens=40, temperature=0.7, seed=1)
    assert len(reply.split()) >= 3
    assert 0 < small.last_usage["completion_tokens"] <= 40
    assert small.count_tokens(reply) <= 41


def test_unknown_model_is_config_error(tmp_path):
    from e3rg_core.understanding.llamacpp import LlamaCppChat

    with pytest.raises(ConfigError, match="neither an embedded model"):
        LlamaCppChat("no-such-model", cache_dir=tmp_path)


def test_missing_parts_and_bad_checksum(tmp_path):
    missing = EmbeddedGGUF("x", "x", "not-installed-part", "not_installed_part", "1", 2, 10, "0" * 64, "-")
    with pytest.raises(BackendUnavailable, match="not-installed-part1"):
        assemble(missing, cache_dir=tmp_path)
    real = EMBEDDED_MODELS[SMALL]
    wrong = EmbeddedGGUF(**{**real.__dict__, "name": "wrong", "sha256": "0" * 64})
    with pytest.raises(BackendUnavailable, match="checksum mismatch"):
        assemble(wrong, cache_dir=tmp_path)
    assert not (tmp_path / "wrong.gguf").exists() and not (tmp_path / "wrong.partial").exists()


def test_choice_logprobs_is_a_distribution_over_the_choices(small):
    import math

    msgs = prompts.emotion_messages(UserTurn(text="My dog died this morning."))
    lp = small.choice_logprobs(msgs, CANDIDATES)
    assert set(lp) == set(CANDIDATES)
    assert sum(math.exp(v) for v in lp.values()) == pytest.approx(1.0)
    again = small.choice_logprobs(msgs, CANDIDATES)  # now from the cached prefix: tiny float drift only
    assert max(again, key=again.get) == max(lp, key=lp.get)
    assert all(abs(again[c] - lp[c]) < 0.2 for c in CANDIDATES)
    # the trie walk agrees with a direct two-way comparison of its top answers
    top2 = sorted(lp, key=lp.get, reverse=True)[:2]
    pair = small.choice_logprobs(msgs, top2)
    assert max(pair, key=pair.get) == top2[0]
    assert pair[top2[0]] - pair[top2[1]] == pytest.approx(lp[top2[0]] - lp[top2[1]], abs=0.2)
    # and generation under the grammar still works afterwards (the context state is consistent)
    assert small.chat(msgs, max_tokens=8, temperature=0.0, choices=CANDIDATES) in CANDIDATES


STREAMED = prompts.reply_messages(UserTurn(text="My cat has been sick all week."), emotion="anxious")
GREEDY = {"max_tokens": 24, "temperature": 0.0, "seed": 5}


@pytest.fixture(scope="module")
def greedy_answer(small):
    answer = small.chat(STREAMED, **GREEDY)
    return answer, dict(small.last_usage)


def test_stream_pieces_join_to_the_chat_answer(small, greedy_answer):
    answer, usage = greedy_answer
    assert isinstance(small, StreamingChat)
    pieces = list(small.chat_stream(STREAMED, **GREEDY))
    assert len(pieces) > 1 and all(pieces)
    assert "".join(pieces).strip() == answer
    assert small.last_usage == {k: usage[k] for k in ("prompt_tokens", "completion_tokens")}


def test_closing_a_stream_early_leaves_the_model_usable(small, greedy_answer):
    answer, _ = greedy_answer
    stream = small.chat_stream(STREAMED, **GREEDY)
    first = next(stream)
    stream.close()
    assert first.strip() and answer.startswith(first.strip())
    assert small._lock.acquire(blocking=False)  # the abandoned stream released the model
    small._lock.release()
    assert small.chat(STREAMED, **GREEDY) == answer


def test_context_overflow_in_a_stream_is_backend_failed(small):
    with pytest.raises(BackendFailed, match="could not answer"):
        list(small.chat_stream([ChatMessage("user", "word " * 3000)], max_tokens=8))
    assert small.chat([ChatMessage("user", "Say hi.")], max_tokens=4, temperature=0.0)


def test_every_call_into_llama_cpp_runs_on_the_models_own_thread(small, greedy_answer, monkeypatch):
    """Whatever thread calls (the app's workers, the streaming writer), llama.cpp runs on one thread:
    its OpenMP team belongs to the calling thread, and a second live team slowed decoding by a quarter."""
    import threading

    answer, _ = greedy_answer
    seen = []
    real = small._llm.create_chat_completion
    real_eval = small._llm.eval

    def spy(*args, **kwargs):
        seen.append(threading.current_thread().name)
        return real(*args, **kwargs)

    def spy_eval(tokens):
        seen.append(threading.current_thread().name)
        return real_eval(tokens)

    monkeypatch.setattr(small._llm, "create_chat_completion", spy)
    monkeypatch.setattr(small._llm, "eval", spy_eval)
    results = {}

    def from_another_thread():
        results["stream"] = "".join(small.chat_stream(STREAMED, **GREEDY)).strip()
        results["scores"] = small.choice_logprobs(STREAMED[:1] + [ChatMessage("user", "Happy or sad?")], ["happy", "sad"])

    worker = threading.Thread(target=from_another_thread, name="caller")
    worker.start()
    worker.join()
    results["chat"] = small.chat(STREAMED, **GREEDY)
    assert results["stream"] == results["chat"] == answer and set(results["scores"]) == {"happy", "sad"}
    assert seen and {name.split("_")[0] for name in seen} == {f"e3rg-llama-{SMALL[:24]}"}


def test_a_stream_leaves_a_core_to_media_work_while_it_runs(small, greedy_answer, monkeypatch):
    """llama.cpp's threads wait for each other after every layer, so a busy core stalls them all: while
    speech or video runs beside it (``cores.busy``), the model computes on one thread fewer."""
    from e3rg_core import cores

    answer, _ = greedy_answer
    monkeypatch.setattr(small, "n_threads", 2)  # as on a 2-core machine, whatever this one has
    set_to = []
    real = small._llama_cpp.llama_set_n_threads
    monkeypatch.setattr(small._llama_cpp, "llama_set_n_threads",
                        lambda ctx, n, n_batch: (set_to.append((n, n_batch)), real(ctx, n, n_batch))[1])
    with cores.busy():
        assert "".join(small.chat_stream(STREAMED, **GREEDY)).strip() == answer
        assert small._threads_now == 1
    assert "".join(small.chat_stream(STREAMED, **GREEDY)).strip() == answer
    assert small._threads_now == 2 and set_to == [(1, 1), (2, 2)]
    assert not cores.others_busy()


def test_an_answer_begun_for_the_model_is_continued_not_repeated(small):
    from e3rg_core.understanding.base import ContinuingChat

    assert isinstance(small, ContinuingChat)
    msgs = prompts.reply_messages(UserTurn(text="We had to put our old dog down today."), emotion="sad",
                                  opening="I'm so sorry.")
    assert "I'm so sorry." in msgs[-1].content  # the task says how the reply begins
    pieces = list(small.continue_stream(msgs, "I'm so sorry.", max_tokens=24, temperature=0.0, seed=1))
    written = "".join(pieces).strip()
    assert written and not written.startswith("I'm so sorry")
    assert 0 < small.last_usage["completion_tokens"] <= 24
    stream = small.continue_stream(msgs, "I'm so sorry.", max_tokens=24, temperature=0.0, seed=1)
    next(stream)
    stream.close()  # abandoned early: the model is free again
    assert small._lock.acquire(blocking=False)
    small._lock.release()
