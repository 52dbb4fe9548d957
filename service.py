"""What every API front end (REST, OpenAI-compatible, MCP) asks of docqa, in one place.

`Service` wraps RAGSystem for programs rather than people: results as JSON-ready dicts
with each passage's place, filters checked with a message that names the fix, and at most
UI_CONCURRENCY answers generated at once across all three APIs, so a burst of API calls
queues instead of starving the model.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from answer_render import place
from answer_types import passage_json
from errors import DocqaError, describe_error

if TYPE_CHECKING:
    from rag_system import Answer, RAGSystem

log = logging.getLogger(__name__)

WHERE_FIELDS = ("source", "ext")
MODES = ("hybrid", "vector", "bm25")


class BadRequest(DocqaError):
    """A request the API cannot serve as sent; the message says what to send instead."""


def where_filter(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    """A filter as the retriever takes it: {"source": FILE or [FILES]}, {"ext": "pdf" or [...]}."""
    if not raw:
        return None
    unknown = sorted(set(raw) - set(WHERE_FIELDS))
    if unknown:
        raise BadRequest(f"where: unknown field {', '.join(unknown)}; filter by source (a file name) or ext (e.g. \"pdf\").")
    where: dict[str, Any] = {}
    for key, value in raw.items():
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, str) and v.strip() for v in values):
            raise BadRequest(f"where.{key}: give a non-empty string or a list of them.")
        cleaned = [v.strip().lstrip(".") if key == "ext" else v.strip() for v in values]
        where[key] = cleaned if isinstance(value, list) else cleaned[0]
    return where


def located_passage(n: int, passage: Any) -> dict[str, Any]:
    """A passage as JSON with its number (as cited, [n]) and its place written for a reader."""
    return {"n": n, "place": place(passage), **passage_json(passage)}


class Service:
    """RAGSystem as the APIs use it: JSON out, and a shared limit on answers being generated."""

    def __init__(self, rag: RAGSystem) -> None:
        self.rag = rag
        self.slots = threading.BoundedSemaphore(max(1, rag.settings.ui_concurrency))

    def search(self, query: str, k: int | None = None, where: dict[str, Any] | None = None, mode: str | None = None) -> list[dict[str, Any]]:
        """Passages for `query` with their places, best first; the model is not called."""
        if not query.strip():
            raise BadRequest("query is empty: send the words to search for.")
        if mode is not None and mode not in MODES:
            raise BadRequest(f"mode {mode!r}: use one of {', '.join(MODES)}.")
        passages = self.rag.retrieve_context(query, k=k, where=where_filter(where), mode=mode)
        return [located_passage(n, p) for n, p in enumerate(passages, start=1)]

    def stream_answer(
        self, question: str, k: int | None = None, where: dict[str, Any] | None = None, history: list[dict[str, str]] | None = None
    ) -> Iterator[Answer]:
        """The answer as it grows, generated in one of the shared slots (it waits for one).

        The filter is checked at once, so a bad one is refused before a stream begins.
        """
        return self._answering(question, k, where_filter(where), history)

    def _answering(self, question: str, k: int | None, where: dict[str, Any] | None, history: list[dict[str, str]] | None) -> Iterator[Answer]:
        with self.slots:
            yield from self.rag.stream_answer(question, k=k, where=where, history=history)

    def ask(
        self, question: str, k: int | None = None, where: dict[str, Any] | None = None, history: list[dict[str, str]] | None = None
    ) -> Answer:
        answer: Answer | None = None
        for update in self.stream_answer(question, k=k, where=where, history=history):
            answer = update
        assert answer is not None, "stream_answer yields at least once"
        return answer

    def documents(self) -> list[dict[str, Any]]:
        """Every file the index knows, with its state, chunks and why it failed or was skipped."""
        return [asdict(d) for d in self.rag.documents()]

    def indexed_sources(self) -> list[str]:
        return [d.source for d in self.rag.documents() if d.state == "indexed"]

    def status(self) -> dict[str, Any]:
        """The index's state and progress, what it holds, and the models answering."""
        stats = self.rag.stats()
        return {
            "index": asdict(self.rag.index_status()),
            "files": stats["files"],
            "chunks": stats["chunks"],
            "failed": len(stats["failed"]),
            "last_indexed": stats["last_indexed"],
            "models": {
                "embedding": stats["embedding_model"],
                "llm": self.rag.model_name(),
                "llm_backend": stats["llm_backend"],
                "retrieval_mode": stats["retrieval_mode"],
            },
            "warning": stats.get("warning"),
        }


def answer_summary(answer: Answer) -> dict[str, Any]:
    """What a tool needs from an answer: text, quotes, numbered sources, what the checks found."""
    return {
        "answer": answer.text,
        "kind": answer.kind,
        "refused": answer.refused,
        "quotes": [asdict(q) for q in answer.quotes],
        "citations": [located_passage(n, p) for n, p in enumerate(answer.passages, start=1)],
        # weak matches the list leaves out (answer_sources.py), numbered on after the citations
        "weak_matches": [located_passage(n, p) for n, p in enumerate(answer.more_passages, start=len(answer.passages) + 1)],
        "unsupported": answer.unsupported,
        "notice": answer.notice,
        "indexing": answer.indexing,
        "model": answer.model,
        "error": answer.error,
    }


def guarded(updates: Iterator[Answer], failed: Callable[[str], str]) -> Iterator[Answer | str]:
    """The updates, then, if one raises after the stream has begun, `failed(message)` as the last event."""
    try:
        yield from updates
    except Exception as exc:  # the status line is sent: an error can only travel as an event now
        log.exception("An answer failed while streaming")
        yield failed(describe_error(exc))
