"""The embedded default chat backend: a GGUF model run on CPU by llama.cpp (llama-cpp-python)."""

from __future__ import annotations

import logging
import os
import re
import threading
from pathlib import Path
from typing import Any, Iterator, Sequence

from e3rg_core import cores
from e3rg_core.errors import BackendFailed, BackendUnavailable, ConfigError
from e3rg_core.threads import Handover, stop_requested
from e3rg_core.understanding.base import ChatMessage, TurnMedia
from e3rg_core.understanding.embedded import resolve_gguf

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"

class _LlamaThread:
    """The one thread that every call into a llama.cpp model runs on.

    llama.cpp runs its graph on an OpenMP team owned by the calling thread. Once one thread (the
    one that loaded the model, say) owns a team, compute from any other live thread runs about
    25 % slower on 2 cores (measured: 8.0 against 10.4 tokens/s); the app calls from many threads
    (Gradio's workers, the streaming writer). So the model is loaded and run on a thread of its own.
    """

    def __init__(self, name: str) -> None:
        import concurrent.futures

        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._ident = self._pool.submit(threading.get_ident).result()

    def run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == self._ident:
            return fn(*args, **kwargs)  # already on it (a call made from inside another)
        return self._pool.submit(fn, *args, **kwargs).result()

    def stream(self, pieces: Iterator[Any]) -> Iterator[Any]:
        """Iterate the generator ``pieces`` on this thread, handing each item over as it comes.

        Closing the returned generator stops ``pieces`` at its next item, and returns once it has
        stopped (so the model is free again).
        """
        yield from Handover(pieces, submit=self._pool.submit)


def _choice_grammar_source(choices: Sequence[str]) -> str:
    alternatives = " | ".join('"' + c.replace("\\", "\\\\").replace('"', '\\"') + '"' for c in choices)
    return f"root ::= {alternatives}"


class LlamaCppChat:
    """A GGUF chat model on CPU.

    ``choices`` are enforced in two steps: the model first answers freely (a few tokens); if the
    answer, lower-cased and stripped of punctuation, is one of the choices it is returned, else the
    answer is generated again under a GBNF grammar that admits only the choices. The grammar
    checks every vocabulary entry at each step (about 2 s for a 150k vocabulary on 2 cores), so
    the free first try makes the common case ten times faster without giving up the guarantee.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        cache_dir: str | Path = "~/.cache/e3rg/models",
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_batch: int = 512,
        chat_format: str | None = None,
    ) -> None:
        try:
            import llama_cpp
        except ImportError as exc:
            raise BackendUnavailable(
                "the llamacpp backend needs llama-cpp-python; install it with: pip install -r requirements.txt"
            ) from exc
        self._llama_cpp = llama_cpp
        self.model = model
        self.path = resolve_gguf(model, cache_dir=Path(cache_dir))
        threads = n_threads or max(1, min(os.cpu_count() or 1, 8))
        self._thread = _LlamaThread(f"e3rg-llama-{model[:24]}")
        try:
            self._llm = self._thread.run(
                llama_cpp.Llama,
                model_path=str(self.path),
                n_ctx=n_ctx,
                n_threads=threads,
                n_batch=n_batch,
                chat_format=chat_format,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ConfigError(f"llama.cpp could not load {self.path}: {exc}") from exc
        self.n_ctx = n_ctx
        self.n_threads = self._threads_now = threads
        self._grammars: dict[tuple[str, ...], Any] = {}
        self._lock = threading.Lock()  # one llama.cpp context serves one request at a time
        self.last_usage: dict[str, int] = {}
        self._formatter = self._make_formatter()
        logger.info("loaded %s (%s) with %d threads", model, self.path, threads)

    def _make_formatter(self) -> Any:
        """The GGUF's own chat template, rendered the way llama-cpp-python's chat handler renders it."""
        template = self._llm.metadata.get("tokenizer.chat_template")
        if not template:
            return None
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        model = self._llm._model
        return Jinja2ChatFormatter(
            template=template,
            eos_token=model.token_get_text(self._llm.token_eos()),
            bos_token=model.token_get_text(self._llm.token_bos()),
        )

    def _grammar(self, choices: Sequence[str]) -> Any:
        key = tuple(choices)
        if key not in self._grammars:
            self._grammars[key] = self._llama_cpp.LlamaGrammar.from_string(
                _choice_grammar_source(key), verbose=False
            )
        return self._grammars[key]

    def _logprobs_after(self, tokens: list[int]) -> Any:
        """Evaluate ``tokens`` (reusing the cached common prefix) and return next-token log-probs."""
        import numpy as np

        llm = self._llm
        common = 0
        for cached, new in zip(llm._input_ids, tokens):
            if cached != new:
                break
            common += 1
        llm.n_tokens = min(common, len(tokens) - 1)  # always evaluate at least one token
        llm.eval(tokens[llm.n_tokens:])
        # llama-cpp-python 0.3.36 keeps logits only with logits_all; read the last row directly.
        logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).astype(np.float64)
        return logits - np.logaddexp.reduce(logits)

    def choice_logprobs(self, messages: Sequence[ChatMessage], choices: Sequence[str]) -> dict[str, float]:
        """Exact log-probability of each choice being the whole answer, normalised over the choices.

        The choices' tokens form a trie; the prompt is evaluated once and each branching point of
        the trie once more (two extra one-token steps for the 36 emotion labels), so scoring all
        labels costs about as much as generating one.
        """
        import numpy as np

        if self._formatter is None:
            raise BackendFailed(f"{self.model} has no chat template in its GGUF; choice scoring needs one")
        prompt = self._formatter(messages=[{"role": m.role, "content": m.content} for m in messages]).prompt
        base = self._llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        tokens = {c: self._llm.tokenize(c.encode("utf-8"), add_bos=False, special=False) for c in choices}
        eos = self._llm.token_eos()
        scores: dict[str, float] = {}

        def walk(prefix: list[int], depth: int, labels: list[str], logp: float) -> None:
            if len(labels) == 1:
                scores[labels[0]] = logp  # the only choice left: its remaining tokens are forced
                return
            step = self._logprobs_after(base + prefix)
            branches: dict[int, list[str]] = {}
            for label in labels:
                toks = tokens[label]
                branches.setdefault(toks[depth] if depth < len(toks) else eos, []).append(label)
            for token, group in branches.items():
                if token == eos and len(group) > 1:
                    raise BackendFailed(f"choices {group} tokenize identically")
                walk(prefix + [token], depth + 1, group, logp + float(step[token]))

        with self._lock:
            if len(base) + max(len(t) for t in tokens.values()) >= self.n_ctx:
                raise BackendFailed(f"the prompt ({len(base)} tokens) does not fit the context of {self.n_ctx}")
            self._thread.run(self._fitted, walk, [], 0, list(choices), 0.0)
        values = np.array([scores[c] for c in choices])
        values -= np.logaddexp.reduce(values)
        return {c: float(v) for c, v in zip(choices, values)}

    def count_tokens(self, text: str) -> int:
        """Number of tokens ``text`` takes for this model."""
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        temperature: float = 0.2,
        seed: int | None = None,
        choices: Sequence[str] | None = None,
        media: TurnMedia | None = None,
    ) -> str:
        """Answer the messages; with ``choices`` the answer is exactly one of them."""
        payload = _payload(messages)
        kwargs = _sampling(max_tokens=max_tokens, temperature=temperature, seed=seed)
        if not choices:
            return self._complete(payload, kwargs)
        by_lower = {c.lower(): c for c in choices}
        free = self._complete(payload, {**kwargs, "max_tokens": max(4, min(max_tokens, 8))})
        key = re.sub(r"[^\w\s-]", "", free).strip().lower()
        if key in by_lower:
            return by_lower[key]
        logger.debug("free answer %r is not a choice; constraining with a grammar", free)
        return self._complete(payload, {**kwargs, "grammar": self._grammar(choices),
                                        "max_tokens": max(max_tokens, 16)})

    def chat_stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        temperature: float = 0.2,
        seed: int | None = None,
        media: TurnMedia | None = None,
    ) -> Iterator[str]:
        """Yield the free answer piece by piece, as ``chat`` would return it (joined and stripped).

        The model serves only this stream until it is exhausted or closed. A stream closed early
        leaves the context holding the tokens evaluated so far; the next call reuses their common
        prefix, as after any call. llama.cpp reports no usage when streaming, so ``last_usage``
        counts the tokens of the prompt rendered by the GGUF's template and the streamed pieces
        (one per token, except that the tokens of one multi-byte character arrive as one piece).
        """
        payload = _payload(messages)
        kwargs = _sampling(max_tokens=max_tokens, temperature=temperature, seed=seed)
        with self._lock:
            chunks = self._thread.stream(self._chunks(payload, kwargs))
            n_pieces = 0
            try:
                for chunk in chunks:
                    if stop_requested():
                        break
                    piece = chunk["choices"][0]["delta"].get("content")
                    if piece:
                        n_pieces += 1
                        yield piece
            finally:
                chunks.close()  # when the consumer stops early, generation stops here, inside the lock
                self.last_usage = self._stream_usage(payload, n_pieces)

    def continue_stream(
        self,
        messages: Sequence[ChatMessage],
        prefix: str,
        *,
        max_tokens: int,
        temperature: float = 0.2,
        seed: int | None = None,
        media: TurnMedia | None = None,
    ) -> Iterator[str]:
        """Yield what the model writes after ``prefix``, the start of its answer (rendered with the
        GGUF's chat template, the prefix put after the assistant's header), piece by piece."""
        if self._formatter is None:
            raise BackendFailed(f"{self.model} has no chat template in its GGUF; continuing an answer needs one")
        payload = _payload(messages)
        rendered = self._formatter(messages=payload)
        prompt = rendered.prompt + prefix
        kwargs = _sampling(max_tokens=max_tokens, temperature=temperature, seed=seed)
        stop = rendered.stop if isinstance(rendered.stop, list) else [rendered.stop] if rendered.stop else []
        with self._lock:
            chunks = self._thread.stream(self._chunks(payload, {**kwargs, "stop": stop}, prompt=prompt))
            n_pieces = 0
            try:
                for chunk in chunks:
                    if stop_requested():
                        break
                    piece = chunk["choices"][0].get("text")
                    if piece:
                        n_pieces += 1
                        yield piece
            finally:
                chunks.close()
                self.last_usage = {"completion_tokens": n_pieces,
                                   "prompt_tokens": len(self._llm.tokenize(prompt.encode("utf-8"), add_bos=False,
                                                                           special=True))}

    def _chunks(self, payload: list[dict[str, str]], kwargs: dict[str, Any], *,
                prompt: str | None = None) -> Iterator[dict[str, Any]]:
        """The streamed completion (of ``prompt`` when given, else of the chat), each token computed on
        as many threads as ``cores`` allows then."""
        if prompt is None:
            chunks = self._llm.create_chat_completion(payload, stream=True, **kwargs)
        else:
            chunks = self._llm.create_completion(prompt, stream=True, **kwargs)
        try:
            with cores.writing():
                while True:
                    self._fit_threads()
                    try:
                        chunk = next(chunks)  # evaluates the previous token and samples the next
                    except StopIteration:
                        return
                    yield chunk
        except ValueError as exc:  # llama-cpp-python raises ValueError for context overflow
            raise BackendFailed(f"llama.cpp could not answer: {exc}") from exc
        finally:
            chunks.close()

    def _fitted(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        self._fit_threads()
        return fn(*args, **kwargs)

    def _fit_threads(self) -> None:
        """Use one thread fewer while speech or video work runs beside the model (see ``e3rg_core.cores``)."""
        threads = cores.llm_threads(self.n_threads)
        if threads != self._threads_now:
            self._llama_cpp.llama_set_n_threads(self._llm._ctx.ctx, threads, threads)
            self._threads_now = threads

    def _stream_usage(self, payload: list[dict[str, str]], n_pieces: int) -> dict[str, int]:
        usage = {"completion_tokens": n_pieces}
        if self._formatter is not None:
            prompt = self._formatter(messages=payload).prompt
            usage["prompt_tokens"] = len(self._llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))
        return usage

    def _complete(self, payload: list[dict[str, str]], kwargs: dict[str, Any]) -> str:
        with self._lock:
            try:
                result = self._thread.run(self._fitted, self._llm.create_chat_completion, payload, **kwargs)
            except ValueError as exc:  # llama-cpp-python raises ValueError for context overflow
                raise BackendFailed(f"llama.cpp could not answer: {exc}") from exc
        self.last_usage = dict(result.get("usage", {}))
        return str(result["choices"][0]["message"]["content"] or "").strip()


def _payload(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def _sampling(*, max_tokens: int, temperature: float, seed: int | None) -> dict[str, Any]:
    """The sampling arguments of ``create_chat_completion`` shared by every call."""
    kwargs: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature, "repeat_penalty": 1.1}
    if seed is not None:
        kwargs["seed"] = seed
    return kwargs
