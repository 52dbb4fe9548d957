"""Answer generation: one small LLM interface, its backends, and the factory choosing one.

`LLMBackend.stream(messages)` is the whole interface; `complete` is built on it. Two
backends sit behind it: `OllamaBackend` (a local Ollama server, usually the better model)
and `LlamaCppBackend` (an embedded GGUF model, by default the packaged Qwen2.5-Coder 1.5B,
so docqa answers with no server at all). `make_llm_backend` is the one place that picks.
The messages they are sent are built in answer_prompt.py.
Every failure is raised as `BackendUnavailable` or `GenerationError` with the fix in it.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import importlib.util
import logging
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from answer_prompt import Message
from config import Settings
from errors import BackendUnavailable, ConfigError, GenerationError

if TYPE_CHECKING:
    from typing import Self

    import ollama
    from llama_cpp import Llama

    from prompt_lookup import DraftingLlama

logger = logging.getLogger(__name__)

Schema = dict[str, Any]
"""A JSON schema the answer must follow."""

YES_NO: Schema = {"type": "string", "enum": ["yes", "no"]}

BACKENDS = ("auto", "ollama", "llamacpp")

OLLAMA_PROBE_TIMEOUT = 2.0
"""Seconds `auto` waits for Ollama: long enough for a local server, short enough to start fast without one."""

LLAMACPP_STOP = ["<|im_end|>", "<|im_start|>", "<|endoftext|>", "\nQuestion:", "\nUser:", "<context>"]
"""Where the embedded model must stop: a 135M model otherwise invents the next turn or a new context."""

_TEMPLATE_TOKENS_PER_MESSAGE = 8
"""Allowance for the chat template's role markers around each message when measuring a prompt."""


# --- The interface ----------------------------------------------------------------------


class LLMBackend(ABC):
    """A chat model that streams its answer as text pieces."""

    name: str
    """Human-readable backend and model, e.g. "ollama:llama3.2"."""

    @abstractmethod
    def stream(self, messages: list[Message], max_tokens: int | None = None, schema: Schema | None = None) -> Iterator[str]:
        """Yield the answer as it is generated; raise LLMError subclasses on failure.

        `max_tokens` overrides LLM_MAX_TOKENS for this call. `schema`, a JSON schema, makes the
        answer one JSON value of that shape (llama.cpp's grammar, Ollama's `format`).
        """

    def warm_up(self) -> None:  # noqa: B027 - a no-op by default: a server backend loads its model itself
        """Load the model now, so the first question does not wait for it."""

    def complete(self, messages: list[Message], max_tokens: int | None = None) -> str:
        """The whole answer at once."""
        return "".join(self.stream(messages, max_tokens))

    def yes_probability(self, messages: list[Message]) -> float:
        """How sure the model is that the answer to a yes-or-no prompt is yes, 0 to 1. Here its
        reply decides: 0 for a plain "no", else 1 (a reply that is neither changes nothing); a
        backend that reads the model's next-token probabilities gives them."""
        reply = "".join(self.stream(messages, 4, schema=YES_NO)).strip(' "\n').lower()
        return 0.0 if reply.startswith("no") else 1.0

    def close(self) -> None:  # noqa: B027 - a no-op by default: not every backend holds resources
        """Release connections or the loaded model; the backend is not used afterwards."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


def _log_answer(name: str, tokens: int, started: float, passes: int | None = None) -> None:
    """One log line an answer; `passes`, the model passes it took, shows what prompt lookup saved."""
    took = f" ({passes} model passes)" if passes is not None else ""
    logger.info("Answered with %s: %s tokens%s in %.1f s", name, tokens, took, time.perf_counter() - started)


# --- Ollama -----------------------------------------------------------------------------


def _import_ollama() -> Any:
    try:
        import ollama
    except ImportError as exc:
        raise BackendUnavailable(
            "The ollama client is not installed — run `pip install ollama`, or set LLM_BACKEND=llamacpp in .env"
        ) from exc
    return ollama


class OllamaBackend(LLMBackend):
    """A model served by a local Ollama (`ollama serve`), through the official client."""

    def __init__(self, settings: Settings, client: ollama.Client | None = None) -> None:
        self._ollama = _import_ollama()
        self._settings = settings
        self.host = settings.ollama_host
        self.model = settings.ollama_model
        self.name = f"ollama:{self.model}"
        self._owns_client = client is None
        self._client = client or self._ollama.Client(host=self.host, timeout=settings.llm_timeout)

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def check(self) -> None:
        """Fail now, with the fix, if the server is down or lacks the model (GET /api/tags)."""
        import httpx

        try:
            listing = self._client.list()
        except (ConnectionError, httpx.TransportError) as exc:
            raise self._unreachable() from exc
        except (self._ollama.ResponseError, ValueError) as exc:  # ValueError: a reply that is not Ollama's JSON
            raise BackendUnavailable(
                f"{self.host} did not list its models as Ollama does ({exc}) — "
                "check that OLLAMA_HOST points at an Ollama server"
            ) from exc
        names = [m.model for m in listing.models if m.model]
        if not _has_model(names, self.model):
            raise self._model_missing()

    def stream(self, messages: list[Message], max_tokens: int | None = None, schema: Schema | None = None) -> Iterator[str]:
        import httpx

        s = self._settings
        options = {
            "temperature": s.llm_temperature,
            "num_predict": max_tokens or s.llm_max_tokens,
            "repeat_penalty": s.llm_repeat_penalty,
        }
        started = time.perf_counter()
        pieces = 0
        done = False
        tokens: int | None = None
        try:
            for chunk in self._client.chat(model=self.model, messages=messages, stream=True, options=options, format=schema):
                text = chunk.message.content or ""
                if text:
                    pieces += 1
                    yield text
                if chunk.done:
                    done, tokens = True, chunk.eval_count
        # ValueError: a garbled line (JSON or pydantic), which only a broken connection produces.
        except (ConnectionError, httpx.HTTPError, self._ollama.ResponseError, ValueError) as exc:
            raise self._stream_error(exc, pieces) from exc
        if not done:
            raise GenerationError(
                "Ollama stopped answering mid-answer: the stream ended without its final message — "
                "check the Ollama server log"
            )
        _log_answer(self.name, tokens or pieces, started)

    def _stream_error(self, exc: Exception, pieces: int) -> Exception:
        import httpx

        if pieces:
            return GenerationError(f"Ollama stopped answering mid-answer: {exc} — check the Ollama server log")
        if isinstance(exc, (ConnectionError, httpx.ConnectError)):
            return self._unreachable()
        if isinstance(exc, httpx.TimeoutException):
            return GenerationError(
                f"Ollama at {self.host} did not answer within {self._settings.llm_timeout:g} s — "
                "raise LLM_TIMEOUT in .env, or use a smaller OLLAMA_MODEL"
            )
        if isinstance(exc, self._ollama.ResponseError) and exc.status_code == 404:
            return self._model_missing()
        return GenerationError(f"Ollama failed to answer: {exc} — check the Ollama server log")

    def _unreachable(self) -> BackendUnavailable:
        return BackendUnavailable(
            f"Cannot reach Ollama at {self.host} — run `ollama serve`, or set OLLAMA_HOST in .env"
        )

    def _model_missing(self) -> BackendUnavailable:
        return BackendUnavailable(
            f"Ollama has no model '{self.model}' — run `ollama pull {self.model}`, or set OLLAMA_MODEL in .env"
        )


def _has_model(available: list[str], wanted: str) -> bool:
    """Whether `wanted` is served; a name without a tag means ":latest", as in Ollama itself."""
    if ":" not in wanted:
        wanted += ":latest"
    return any(name == wanted or (":" not in name and f"{name}:latest" == wanted) for name in available)


# --- llama.cpp --------------------------------------------------------------------------


def embedded_model_path(settings: Settings) -> Path:
    """The GGUF the embedded backend runs: LLAMACPP_MODEL_PATH, else the LLAMACPP_MODEL by short name."""
    from gguf_models import model_file, model_named

    if settings.llamacpp_model_path:
        path = Path(settings.llamacpp_model_path).expanduser()
        if not path.is_file():
            raise BackendUnavailable(
                f"LLAMACPP_MODEL_PATH={settings.llamacpp_model_path!r} is not a file — point it at a .gguf "
                "model, or leave it empty to use LLAMACPP_MODEL"
            )
        return path
    return model_file(model_named(settings.llamacpp_model), Path(settings.model_cache_dir))


class LlamaCppBackend(LLMBackend):
    """A GGUF model run in-process by llama.cpp: needs no server, answers on CPU.

    The model is loaded on first use, once. A `Llama` object is not thread-safe, so one
    lock is held for a whole generation; concurrent questions wait their turn.
    """

    def __init__(self, settings: Settings) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise BackendUnavailable(
                "llama-cpp-python is not installed — run `pip install llama-cpp-python`, "
                "or run Ollama and set LLM_BACKEND=ollama in .env"
            )
        self._settings = settings
        self.model_path = embedded_model_path(settings)
        self.name = f"llama.cpp:{self.model_path.name}"
        self._llm: DraftingLlama | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            if self._llm is not None:
                self._llm.close()
                self._llm = None

    def warm_up(self) -> None:
        with self._lock:
            self._model()

    def _model(self) -> DraftingLlama:
        """The loaded model; call with the lock held."""
        if self._llm is None:
            try:
                from prompt_lookup import DraftingLlama, PromptLookup
            except (ImportError, OSError) as exc:  # OSError: its compiled library failed to load
                raise BackendUnavailable(
                    f"llama-cpp-python cannot be loaded ({exc}) — reinstall it with "
                    "`pip install --force-reinstall llama-cpp-python`, or use Ollama (LLM_BACKEND=ollama)"
                ) from exc
            threads = self._settings.llamacpp_threads or os.cpu_count() or 1
            started = time.perf_counter()
            try:
                drafts = self._settings.llamacpp_prompt_lookup
                self._llm = DraftingLlama(
                    model_path=str(self.model_path),
                    n_ctx=self._settings.llamacpp_context,
                    n_threads=threads,
                    flash_attn=self._settings.llamacpp_flash_attn,
                    draft_model=PromptLookup(drafts) if drafts > 0 else None,
                    verbose=False,
                )
            except (ValueError, RuntimeError) as exc:
                raise BackendUnavailable(
                    f"llama.cpp could not load {self.model_path}: {exc} — check that LLAMACPP_MODEL_PATH "
                    "is a valid .gguf file"
                ) from exc
            logger.info(
                "Loaded %s (%s tokens of context, %s threads) in %.1f s",
                self.name, self._llm.n_ctx(), threads, time.perf_counter() - started,
            )
        return self._llm

    def yes_probability(self, messages: list[Message]) -> float:
        """p(yes) / (p(yes) + p(no)) over the model's first token, read from its logits as it is sampled
        (one forward pass over what the cached prefix does not already hold)."""
        seen: list[np.ndarray] = []

        def keep_logits(_ids: Any, logits: np.ndarray) -> np.ndarray:
            seen.append(np.array(logits, dtype=np.float64))
            return logits

        with self._lock:
            llm = self._model()
            try:
                with _cache_kept(llm):
                    llm.create_chat_completion(
                        messages=messages, max_tokens=1, temperature=0.0, logits_processor=[keep_logits]  # type: ignore[arg-type,list-item]
                    )
            except (ValueError, RuntimeError) as exc:
                raise GenerationError(f"llama.cpp failed to judge: {exc} — raise LLAMACPP_CONTEXT") from exc
            if not seen:
                return 0.5
            chance = np.exp(seen[0] - seen[0].max())
            yes, no = (sum(chance[t] for t in tokens) for tokens in self._yes_no_tokens(llm))
            return float(yes / (yes + no)) if yes + no > 0 else 0.5

    @functools.cache  # noqa: B019 - one backend, one model, a handful of tokens
    def _yes_no_tokens(self, llm: Llama) -> tuple[set[int], set[int]]:
        """The first tokens of "yes" and of "no" as the model may write them."""
        def first(words: tuple[str, ...]) -> set[int]:
            return {llm.tokenize(w.encode(), add_bos=False, special=False)[0] for w in words}

        return first(("yes", "Yes", " yes", " Yes", "YES")), first(("no", "No", " no", " No", "NO"))

    def stream(self, messages: list[Message], max_tokens: int | None = None, schema: Schema | None = None) -> Iterator[str]:
        max_tokens = max_tokens or self._settings.llm_max_tokens
        with self._lock:
            llm = self._model()
            messages = _fit_to_context(llm, messages, max_tokens)
            started, passes = time.perf_counter(), llm.passes
            answer: list[str] = []
            try:
                chunks = llm.create_chat_completion(
                    messages=messages,  # type: ignore[arg-type]
                    stream=True,
                    temperature=self._settings.llm_temperature,
                    max_tokens=max_tokens,
                    repeat_penalty=self._settings.llm_repeat_penalty,
                    stop=LLAMACPP_STOP,
                    response_format={"type": "json_object", "schema": schema} if schema is not None else None,  # type: ignore[typeddict-item]
                )
                for chunk in cast("Iterator[dict[str, Any]]", chunks):
                    text: str | None = chunk["choices"][0]["delta"].get("content")
                    if text:
                        answer.append(text)
                        yield text
            except (ValueError, RuntimeError) as exc:
                raise GenerationError(
                    f"llama.cpp failed to answer: {exc} — lower LLM_MAX_TOKENS or TOP_K, or raise LLAMACPP_CONTEXT"
                ) from exc
            tokens = len(llm.tokenize("".join(answer).encode(), add_bos=False)) if answer else 0
            _log_answer(self.name, tokens, started, llm.passes - passes)


@contextlib.contextmanager
def _cache_kept(llm: Llama) -> Iterator[None]:
    """The cached tokens of the last prompt put back after a side call (the quotes' judge), so the next
    answer still finds docqa's instructions cached: the judge's prompt shares no prefix with them, and
    reading them again cost the next question 1-2.5 s. Its KV cells are copied (about 28 KB a token
    for the 1.5B model) through llama.cpp's sequence state calls; the cache is emptied if that fails."""
    import llama_cpp  # loaded already: `llm` exists (an optional package, so not imported at the top)

    kept = llm.n_tokens
    ids = llm.input_ids[:kept].copy()
    size = llama_cpp.llama_state_seq_get_size(llm.ctx, 0)
    cells = (ctypes.c_uint8 * size)()
    copied = llama_cpp.llama_state_seq_get_data(llm.ctx, cells, size, 0) if kept else 0
    try:
        yield
    finally:
        if copied and llama_cpp.llama_state_seq_set_data(llm.ctx, cells, copied, 0):
            llm.input_ids[:kept] = ids
            llm.n_tokens = kept - 1  # one token short: the next prompt is read on from it, its logits fresh
        else:
            llm.reset()


def _fit_to_context(llm: Llama, messages: list[Message], max_tokens: int) -> list[Message]:
    """Shorten the longest message so prompt and answer fit the context window.

    In a docqa prompt that message holds the <context> block, and its end is cut: the
    lowest-ranked passages go first and the question, after the block, survives. Other
    text loses its middle, keeping the instructions at its start and the ask at its end.
    """
    def count(text: str) -> int:
        return len(llm.tokenize(text.encode(), add_bos=False, special=False))

    budget = llm.n_ctx() - max_tokens - _TEMPLATE_TOKENS_PER_MESSAGE * (len(messages) + 1)
    sizes = [count(m["content"]) for m in messages]
    excess = sum(sizes) - budget
    if excess <= 0:
        return messages
    longest = max(range(len(messages)), key=sizes.__getitem__)
    content = messages[longest]["content"]
    start, end = content.find("<context>\n"), content.rfind("\n</context>")
    if 0 <= start < end:
        head, body, tail = content[: start + 10], content[start + 10 : end], content[end:]
    else:
        head, body, tail = "", content, ""
    tokens = llm.tokenize(body.encode(), add_bos=False, special=False)
    keep = len(tokens) - excess - 5  # room for the " … " marker and tokens that re-merge at the cut
    if keep <= 0:
        raise GenerationError(
            f"The prompt does not fit the embedded model's {llm.n_ctx()}-token context even when shortened — "
            "ask a shorter question, lower LLM_MAX_TOKENS, or raise LLAMACPP_CONTEXT"
        )
    if tail:
        body = _detokenize(llm, tokens[:keep]) + " …"
    else:
        half = keep // 2
        body = _detokenize(llm, tokens[:half]) + " … " + _detokenize(llm, tokens[len(tokens) - (keep - half) :])
    logger.warning(
        "Prompt too long for %s tokens of context and %s of answer: cut %s tokens of %s",
        llm.n_ctx(), max_tokens, excess, "passages" if tail else "message text",
    )
    trimmed = list(messages)
    trimmed[longest] = {**messages[longest], "content": head + body + tail}
    return trimmed


def _detokenize(llm: Llama, tokens: list[int]) -> str:
    return llm.detokenize(tokens).decode("utf-8", errors="ignore")


# --- The factory ------------------------------------------------------------------------


def answering_model(settings: Settings) -> str:
    """Which model will answer, in a user's words, before any is loaded: "Qwen2.5-Coder 1.5B (embedded)".

    `auto` asks Ollama for its models (GET /api/tags, OLLAMA_PROBE_TIMEOUT at most), as
    make_llm_backend will; nothing is loaded.
    """
    ollama = f"{settings.ollama_model} (Ollama)"
    if settings.llm_backend == "ollama":
        return ollama
    if settings.llm_backend == "auto":
        try:
            with OllamaBackend(dataclasses.replace(settings, llm_timeout=OLLAMA_PROBE_TIMEOUT)) as probe:
                probe.check()
            return ollama
        except BackendUnavailable:
            pass
    from gguf_models import MODELS

    known = MODELS.get(settings.llamacpp_model)
    embedded = Path(settings.llamacpp_model_path).name if settings.llamacpp_model_path else known.short if known else settings.llamacpp_model
    return f"{embedded} (embedded)"


def make_llm_backend(settings: Settings) -> LLMBackend:
    """The backend LLM_BACKEND asks for; `auto` prefers a running Ollama, else llama.cpp."""
    choice = settings.llm_backend
    if choice == "ollama":
        ollama_backend = OllamaBackend(settings)
        try:
            ollama_backend.check()
        except BackendUnavailable:
            ollama_backend.close()
            raise
        return ollama_backend
    if choice == "llamacpp":
        return LlamaCppBackend(settings)
    if choice != "auto":
        raise ConfigError(
            f"LLM_BACKEND={choice!r} is not one of {', '.join(BACKENDS)} — fix it in .env or on the command line"
        )
    try:
        with OllamaBackend(dataclasses.replace(settings, llm_timeout=OLLAMA_PROBE_TIMEOUT)) as probe:
            probe.check()
    except BackendUnavailable as ollama_exc:
        try:
            backend: LLMBackend = LlamaCppBackend(settings)
        except BackendUnavailable as llamacpp_exc:
            raise BackendUnavailable(f"No LLM available. {ollama_exc}. Or: {llamacpp_exc}") from llamacpp_exc
        logger.info("LLM: %s (auto: Ollama unavailable: %s)", backend.name, ollama_exc)
        return backend
    backend = OllamaBackend(settings)
    logger.info("LLM: %s (auto: Ollama answers at %s)", backend.name, settings.ollama_host)
    return backend
