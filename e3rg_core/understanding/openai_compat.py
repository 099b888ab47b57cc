"""Any OpenAI-compatible chat server (vLLM, llama.cpp server, Ollama, OpenAI): how a deployment
scales past one machine.

``choices`` is enforced the way the server understands it (``choice_mode``):

* ``"json_schema"`` (default): the standard ``response_format`` with a JSON schema whose one field
  is an enum of the choices; vLLM, the llama.cpp server, Ollama and OpenAI honour it.
* ``"grammar"``: a GBNF grammar in the request body, for llama-cpp-python's own server.
* ``"none"``: plain text; the caller validates the answer.

``chat_stream`` asks for server-sent events (``stream=True``) and yields each chunk's text. It asks
for the usage too, with the standard ``stream_options.include_usage``; llama-cpp-python's server
ignores the option and reports none.

A profile sets ``api_key_env = "NAME"`` in its ``[models.x]`` table; ``config.py`` reads the key
from that environment variable, so it is never written in a config file.
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any, Iterator, Sequence

from e3rg_core.errors import BackendFailed, BackendUnavailable, ConfigError
from e3rg_core.understanding.base import ChatMessage, TurnMedia

logger = logging.getLogger(__name__)

CHOICE_MODES = ("json_schema", "grammar", "none")


class OpenAIChat:
    """A chat model served behind an OpenAI-compatible ``/v1/chat/completions`` endpoint."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str = "not-needed",
        choice_mode: str = "json_schema",
        timeout_s: float = 60.0,
        max_retries: int = 1,
        check_server: bool = True,
    ) -> None:
        if choice_mode not in CHOICE_MODES:
            raise ConfigError(f"choice_mode {choice_mode!r} is unknown; choose from {', '.join(CHOICE_MODES)}")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url {base_url!r} must start with http:// or https://")
        try:
            import openai
        except ImportError as exc:
            raise BackendUnavailable("the openai backend needs the openai package: pip install openai") from exc
        self._openai = openai
        self.model = model
        self.choice_mode = choice_mode
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                     timeout=timeout_s, max_retries=max_retries)
        self.base_url = base_url
        self.last_usage: dict[str, int] = {}
        if check_server:
            self._check_server()

    def _check_server(self) -> None:
        """Ask the server which models it serves, so that a server that is down stops the app at start-up
        (the warm-up builds this backend) instead of failing the first turn."""
        openai = self._openai
        try:
            served = [m.id for m in self._client.with_options(timeout=10.0, max_retries=0).models.list()]
        except openai.APIConnectionError as exc:
            raise BackendUnavailable(
                f"no OpenAI-compatible server answers at {self.base_url} ({exc}); start it first (for example "
                f"vllm serve MODEL --served-model-name {self.model}, or python -m llama_cpp.server --model FILE "
                f"--model_alias {self.model}) or fix base_url in the model profile") from exc
        except openai.AuthenticationError as exc:
            raise BackendUnavailable(f"the server at {self.base_url} refused the API key ({exc}); set the profile's "
                                     "api_key_env to the name of the variable that holds the key") from exc
        except openai.APIError as exc:  # a server without /models can still answer chats
            logger.warning("the server at %s does not list its models (%s); not checked", self.base_url, exc)
            return
        if self.model not in served:  # some servers answer under any name; vLLM answers 404
            logger.warning("the server at %s serves %s, not %r: requests name %r", self.base_url,
                           ", ".join(served) or "no model", self.model, self.model)

    def _constraint(self, choices: Sequence[str]) -> dict[str, Any]:
        if self.choice_mode == "json_schema":
            schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": list(choices)}},
                      "required": ["answer"], "additionalProperties": False}
            return {"response_format": {"type": "json_schema",
                                        "json_schema": {"name": "answer", "schema": schema, "strict": True}}}
        if self.choice_mode == "grammar":
            alternatives = " | ".join(json.dumps(c) for c in choices)
            return {"extra_body": {"grammar": f"root ::= {alternatives}"}}
        return {}

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
        """Send the messages to the server and return its answer (one of ``choices`` when given)."""
        kwargs = _sampling(max_tokens=max_tokens, temperature=temperature, seed=seed)
        if choices:
            kwargs.update(self._constraint(choices))
            kwargs["max_tokens"] = max(max_tokens, 24)
        with self._answering():
            response = self._client.chat.completions.create(
                model=self.model, messages=_payload(messages), **kwargs
            )
        if response.usage is not None:
            self.last_usage = {"prompt_tokens": response.usage.prompt_tokens,
                               "completion_tokens": response.usage.completion_tokens}
        text = (response.choices[0].message.content or "").strip()
        if choices and self.choice_mode == "json_schema":
            try:
                return str(json.loads(text)["answer"]).strip()
            except (json.JSONDecodeError, KeyError, TypeError):
                logger.warning("server ignored the JSON schema; answer was %r", text[:80])
        return text

    def chat_stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        temperature: float = 0.2,
        seed: int | None = None,
        media: TurnMedia | None = None,
    ) -> Iterator[str]:
        """Yield the answer's text as the server sends it (server-sent events), piece by piece.

        ``last_usage`` is the usage the server reports at the end of the stream, or empty when it
        reports none (llama-cpp-python's server, for one). Closing the stream closes the connection.
        """
        kwargs = _sampling(max_tokens=max_tokens, temperature=temperature, seed=seed)
        self.last_usage = {}
        with self._answering():
            stream = self._client.chat.completions.create(
                model=self.model, messages=_payload(messages), stream=True,
                stream_options={"include_usage": True}, **kwargs,
            )
        try:
            chunks = iter(stream)
            while True:
                with self._answering():
                    chunk = next(chunks, None)
                if chunk is None:
                    break
                piece = _delta_text(chunk)
                if piece:
                    yield piece
                usage = getattr(chunk, "usage", None)
                if usage is not None:
                    self.last_usage = {"prompt_tokens": usage.prompt_tokens,
                                       "completion_tokens": usage.completion_tokens}
        finally:
            stream.close()

    @contextlib.contextmanager
    def _answering(self) -> Iterator[None]:
        """Map what the client raises, while sending or while streaming, to ``BackendFailed``."""
        try:
            yield
        except self._openai.APIConnectionError as exc:
            raise BackendFailed(f"cannot reach the OpenAI-compatible server: {exc}") from exc
        except self._openai.APIError as exc:
            raise BackendFailed(f"the OpenAI-compatible server refused the request: {exc}") from exc
        except ValueError as exc:  # an event of a stream whose data is not JSON
            raise BackendFailed(f"the OpenAI-compatible server sent malformed data: {exc}") from exc


def _payload(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def _sampling(*, max_tokens: int, temperature: float, seed: int | None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature}
    if seed is not None:
        kwargs["seed"] = seed
    return kwargs


def _delta_text(chunk: Any) -> str:
    """The text a stream chunk adds; a chunk without a list of choices is malformed."""
    choices = getattr(chunk, "choices", None)
    if not isinstance(choices, list):
        raise BackendFailed(f"the OpenAI-compatible server sent a malformed stream chunk: {str(chunk)[:200]}")
    if not choices:  # the closing chunk that carries only the usage
        return ""
    content = getattr(getattr(choices[0], "delta", None), "content", None)
    if content is not None and not isinstance(content, str):
        raise BackendFailed(f"the OpenAI-compatible server sent a malformed stream chunk: {str(chunk)[:200]}")
    return content or ""
