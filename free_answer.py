"""The model's draft: it writes its answer from the compacted passages.

The prompt holds each passage cut to what bears on the question (answer_context.py), numbers kept;
the text streams in, stops when the model repeats itself, and is tidied (answer_tidy.py) before
AnswerReview judges it.

Two other designs were measured against this one on the dev pool's tune half and deleted
(docs/answer-results.md): the model picking numbered excerpts in a JSON shape (ANSWER_DESIGN=evidence)
and this draft held by one judge instead of AnswerReview's checks (ANSWER_DESIGN=judged).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Generator, Iterator
from enum import Enum

from answer_context import compact_passages
from answer_prompt import build_messages
from answer_review import Contradiction, Evidence
from answer_tidy import REPEATED_EARLIER, STOPPED, repeats_earlier, repeats_from, tidy_answer
from answer_types import Answer
from answer_verdict import add_notice, model_hint
from config import Settings
from conversation import bounded_history
from errors import LLMError
from llm_handler import LLMBackend
from retriever import Passage

log = logging.getLogger(__name__)


class Ended(Enum):
    """How the model's stream ended: by itself, at the token limit, or stopped at a contradicted sentence."""

    DONE = "done"
    LIMIT = "limit"
    CONTRADICTED = "contradicted"


class FreeAnswer:
    """`model` gives the LLM backend when first needed; `failed` records a backend error on the answer."""

    def __init__(self, settings: Settings, model: Callable[[], LLMBackend], failed: Callable[[Answer, LLMError], None]) -> None:
        self.settings, self.model, self.failed = settings, model, failed

    def passage_texts(self, passages: list[Passage], checks: Evidence | None) -> list[str]:
        """What the model reads of each passage: the sentences that bear on the question (answer_context.py), numbers kept."""
        texts = [p.text for p in passages]
        if checks and self.settings.context_token_budget > 0:
            texts = compact_passages(
                texts, checks.sentences, checks.scores, self.settings.context_token_budget, lists=self.settings.context_lists
            )
        return texts

    def messages(self, question: str, passages: list[Passage], texts: list[str], history: list[dict[str, str]]) -> list[dict[str, str]]:
        """The prompt: the passages' `texts` (as `passage_texts` cuts them), and the bounded history."""
        messages = build_messages(question, [(p.label, t) for p, t in zip(passages, texts, strict=True)])
        turns = bounded_history(history, self.settings.history_max_turns, self.settings.history_max_tokens)
        return [messages[0], *turns, *messages[1:]]

    def generate(
        self, answer: Answer, question: str, history: list[dict[str, str]], started: float, checks: Evidence | None = None,
        contradicted: Contradiction | None = None,
    ) -> Iterator[Answer]:
        """Stream the model's answer into `answer`, tidied (answer_tidy.py), an earlier answer copied marked; an LLM failure becomes a note.

        With `contradicted`, the model is stopped at the first whole sentence it finds wrong: the
        answer will be set aside for the quotes whatever follows, so the rest is time the user waits."""
        messages = self.messages(question, answer.passages, self.passage_texts(answer.passages, checks), history)
        answer.timings.prompt_chars = sum(len(m["content"]) for m in messages)
        ended = yield from self.stream_into(answer, messages, started, contradicted=contradicted)
        answer.timings.draft_s = time.perf_counter() - started
        if answer.error:
            return
        answer.text, tidied = tidy_answer(answer.text, ended is Ended.LIMIT)
        if ended is Ended.CONTRADICTED:
            tidied.append(STOPPED)
        if repeats_earlier(answer.text, [m.get("content", "") for m in history if m.get("role") == "assistant"]):
            tidied.append(REPEATED_EARLIER)  # the last answer copied for a follow-up: set aside by AnswerReview.judge,
            if checks is None:  # which needs the embedding model; without it, the user is told
                add_notice(answer, "The model repeated its earlier answer: it may not answer this question.")
        if tidied:
            log.info("Answer tidied: %s", ", ".join(tidied))
        answer.tidied = tidied
        answer.model_hint = model_hint(answer.model, self.settings.ollama_model)
        yield answer  # the whole draft, tidied, while it is checked (a front end may have shown fewer pieces)

    def _pieces(self, answer: Answer, messages: list[dict[str, str]], max_tokens: int | None, started: float) -> Iterator[str]:
        """The model's reply piece by piece: its name, first token's time and words (`draft`) go on the
        answer; a backend error goes to `failed` and ends the pieces. A reader that stops early closes
        the backend's stream too, so the model stops generating."""
        try:
            llm = self.model()
            answer.model = llm.name
            stream = llm.stream(messages, max_tokens)
            answer.draft = ""
            try:
                for piece in stream:
                    if answer.timings.first_token_s is None:
                        answer.timings.first_token_s = time.perf_counter() - started
                    answer.draft += piece
                    yield piece
            finally:
                close = getattr(stream, "close", None)
                if close:
                    close()
        except LLMError as exc:
            self.failed(answer, exc)

    def stream_into(
        self, answer: Answer, messages: list[dict[str, str]], started: float, max_tokens: int | None = None,
        contradicted: Contradiction | None = None,
    ) -> Generator[Answer, None, Ended]:
        """Stream into answer.text; stops early when the model starts repeating itself, or after the
        first sentence `contradicted` finds wrong (the text then ends with it). Returns how it ended."""
        limit = max_tokens or self.settings.llm_max_tokens
        pieces = 0
        prefix = answer.text
        with contextlib.closing(self._pieces(answer, messages, max_tokens, started)) as stream:  # closing it closes the model's
            for piece in stream:
                answer.text += piece
                pieces += 1
                if pieces % 8 == 0 and repeats_from(answer.text[len(prefix) :]) is not None:
                    break
                if contradicted is not None and (end := contradicted(answer.text[len(prefix) :])) is not None:
                    answer.text = answer.text[: len(prefix) + end].strip()
                    return Ended.CONTRADICTED
                yield answer
        answer.text = answer.text.strip()
        return Ended.LIMIT if pieces >= limit else Ended.DONE
