"""RAGSystem: docqa's Python API. The CLI and the web UI only call this and show its results.

It owns the stores, the indexer, the retriever and the LLM backend, and turns a question
into a streamed, cited answer. When no LLM can run, the user still gets the passages
with a message saying how to fix it, never a traceback.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, Literal

import embeddings
from answer_context import compact_passages, select_quotes, sentence_scores
from answer_render import CITATION
from answer_render import is_refusal as model_refused  # the one refusal rule, shared with the evaluation
from config import Settings
from data_folder import DataLock, ensure_writable, open_stores_or_rebuild
from embeddings import EmbeddingBackend
from errors import DocqaError, EmbeddingError, LLMError
from grounding import claim_sentences
from indexer import Indexer, IndexReport, Progress
from llm_handler import REFUSAL, LLMBackend
from retriever import Passage, Retriever, Where
from vector_store import NullVectorStore, VectorStore

log = logging.getLogger(__name__)


@dataclass
class Answer:
    """An answer as it streams: `text` grows; `done` is set on the last update.

    `kind` says where the text came from: passages ("answer"), the relevance gate or the
    model declining ("refusal", with the closest passages listed), the index's file list
    ("document_list") or a map-reduce pass over one whole file ("summary").
    """

    question: str
    text: str = ""
    model: str = ""
    passages: list[Passage] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    done: bool = False
    kind: str = "answer"
    standalone_question: str | None = None
    """The follow-up rewritten to stand alone, as searched; None when the question was used as asked."""
    sub_questions: list[str] = field(default_factory=list)
    """The parts of a multi-part question, each searched and their passages fused; empty for one part."""
    refused: bool = False
    unsupported: list[str] = field(default_factory=list)
    """Answer sentences, verbatim, that no cited passage supports."""
    sentences_checked: int = 0
    highlights: dict[int, list[str]] = field(default_factory=dict)
    """1-based passage number -> its sentences, verbatim, that support the answer or match the question."""
    relevance: dict[str, Any] = field(default_factory=dict)
    """How close the best passage came to the question: {"similarity", "overlap", "relevant"}."""
    quotes: list[dict[str, Any]] = field(default_factory=list)
    """Passage sentences, verbatim, that best answer the question: {"passage", "text", "location"}; shown first."""
    set_aside: str | None = None
    """The model's text when the checks set it aside and the quotes stand as the answer."""
    notice: str | None = None
    """Why the model's text was set aside, for the user."""
    model_hint: str | None = None
    """How to get better answers than the model in use gives (the embedded model answered)."""
    tidied: list[str] = field(default_factory=list)
    """What was cut from the model's raw text: "repetition cut", "code removed", "cut off"."""

    def sources_json(self) -> list[dict[str, Any]]:
        return [passage_json(p) for p in self.passages]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "question": self.question,
            "standalone_question": self.standalone_question,
            "sub_questions": self.sub_questions,
            "kind": self.kind,
            "answer": self.text,
            "refused": self.refused,
            "unsupported": self.unsupported,
            "sentences_checked": self.sentences_checked,
            "model": self.model,
            "sources": self.sources_json(),
            "highlights": {str(n): texts for n, texts in sorted(self.highlights.items())},
            "relevance": self.relevance,
            "quotes": self.quotes,
            "set_aside": self.set_aside,
            "notice": self.notice,
            "model_hint": self.model_hint,
            "tidied": self.tidied,
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
        }
        if self.error:
            out["error"] = self.error
        return out


def passage_json(p: Passage) -> dict[str, Any]:
    return {
        "source": p.source,
        "title": p.first.title,
        "page": p.page,
        "pages": p.pages,
        "lines": list(p.lines) if p.lines else None,
        "heading_path": p.heading_path,
        "location": p.location,
        "slides": sorted({c.slide for c in p.chunks if c.slide is not None}),
        "sheet": p.first.sheet,
        "rows": [min(c.rows[0] for c in p.chunks if c.rows), max(c.rows[-1] for c in p.chunks if c.rows)] if p.first.rows else None,
        "symbols": list(dict.fromkeys(c.symbol for c in p.chunks if c.symbol)),
        "chunk_index": p.first.chunk_index,
        "chunk_indexes": [c.chunk_index for c in p.chunks],
        "score": round(p.score, 6),
        "found_by": p.found_by,
        "text": p.text,
    }


@dataclass(frozen=True)
class IndexStatus:
    """What the background indexer is doing: a snapshot, replaced as a sync moves on."""

    state: Literal["idle", "indexing", "failed"] = "idle"
    done: int = 0
    total: int = 0
    started: float | None = None
    finished: float | None = None
    """When the last sync ended; kept while the next one runs."""
    summary: str | None = None
    """The last finished sync's report in one line."""
    error: str | None = None


@dataclass(frozen=True)
class DocumentStatus:
    """One file of the documents folder as the index sees it."""

    source: str
    state: Literal["indexed", "failed", "skipped"]
    chunks: int = 0
    reason: str = ""


@dataclass(frozen=True)
class IndexCheck:
    """What `RAGSystem.check` found: the files whose chunks disagree between the stores, and those re-indexed."""

    problems: list[dict[str, Any]]
    repaired: list[str]

    @property
    def consistent(self) -> bool:
        return not self.problems


class RAGSystem:
    """docqa's API. Collaborators left out are made by their factories from the settings:
    the embedder (embeddings.make_embedder), the LLM backend (llm_handler.make_llm_backend,
    on first use) and the vector store (opened in the data folder, or a NullVectorStore
    when the embedding model cannot run)."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: EmbeddingBackend | None = None,
        llm: LLMBackend | None = None,
        vectors: VectorStore | NullVectorStore | None = None,
        lock: bool = True,
    ) -> None:
        self.settings = settings
        ensure_writable(settings.db_dir)
        self._lock = DataLock(settings.db_dir) if lock else None
        if self._lock:
            self._lock.acquire(wait_s=2.0)
        try:
            self.embedder = embedder if embedder is not None else embeddings.make_embedder(settings)
            self.vectors, self.keywords = open_stores_or_rebuild(settings, self.embedder, vectors)
        except BaseException:
            if self._lock:  # a failed start must not leave the data folder locked
                self._lock.release()
            raise
        self.warning: str | None = f"Keyword search only: {self.vectors.reason}" if isinstance(self.vectors, NullVectorStore) else None
        self.indexer = Indexer(settings, self.vectors, self.keywords, self.embedder)
        self.retriever = Retriever(settings, self.vectors, self.keywords, self.embedder)
        self._given_llm = llm
        self._llm: Any = llm
        self._llm_lock = threading.Lock()
        self._index_lock = threading.Lock()
        self._watcher: Any = None
        self._index_status = IndexStatus()

    # ------------------------------------------------------------ indexing

    def index(self, reindex: bool = False, progress: Progress | None = None) -> IndexReport:
        """Bring the index in line with the folder; one sync at a time, queries keep working."""
        with self._index_lock:
            self._index_status = replace(self._index_status, state="indexing", done=0, total=0, started=time.time())

            def track(stage: str, done: int, total: int) -> None:
                self._index_status = replace(self._index_status, done=done, total=total)
                if progress:
                    progress(stage, done, total)

            try:
                report = self.indexer.sync(reindex=reindex, progress=track)
            except Exception as exc:
                self._index_status = replace(self._index_status, state="failed", error=describe_error(exc), finished=time.time())
                raise
            self._index_status = replace(self._index_status, state="idle", finished=time.time(), summary=report.summary(), error=None)
            return report

    def watch(self) -> Any:
        """Re-index in the background whenever the documents folder changes."""
        from watcher import FolderWatcher

        self.settings.docs_dir.mkdir(parents=True, exist_ok=True)
        self._watcher = FolderWatcher(str(self.settings.docs_dir), self.index).start()
        return self._watcher

    def add_upload(self, name: str, data_path: Path) -> str:
        """Copy an uploaded file into the documents folder under a safe, unused name; returns it.

        Only the base name is kept (no path traversal), odd characters are replaced, the
        type must be one docqa indexes, and an existing file is never overwritten.
        """
        import shutil

        from document_converter import is_supported

        safe = sanitize_filename(name)
        if not is_supported(Path(safe)):
            raise UploadRefused(f"{name}: file type {Path(safe).suffix or '(none)'} is not supported")
        size = Path(data_path).stat().st_size
        limit = int(self.settings.max_file_mb * 1e6)
        if size > limit:
            raise UploadRefused(f"{name}: {size / 1e6:.1f} MB is over the {self.settings.max_file_mb:g} MB limit (MAX_FILE_MB)")
        docs = self.settings.docs_dir.resolve()
        docs.mkdir(parents=True, exist_ok=True)
        target = docs / safe
        stem, suffix = Path(safe).stem, Path(safe).suffix
        n = 1
        while target.exists():
            target = docs / f"{stem} ({n}){suffix}"
            n += 1
        if target.resolve().parent != docs:
            raise UploadRefused(f"{name}: refused, it would land outside the documents folder")
        tmp = target.with_name(f".{target.name}.part")
        shutil.copyfile(data_path, tmp)
        tmp.replace(target)
        log.info("Uploaded %s as %s", name, target.name)
        return target.name

    def remove_document(self, source: str) -> None:
        """Delete a document from the folder and the index."""
        docs = self.settings.docs_dir.resolve()
        path = (docs / source).resolve()
        if docs not in path.parents:
            raise DocqaError(f"{source} is not inside the documents folder")
        if path.is_file():
            path.unlink()
        self.index()

    # ------------------------------------------------------------ retrieval and answers

    def retrieve_context(self, question: str, k: int | None = None, where: Where | None = None) -> list[Passage]:
        return self.retriever.retrieve(question, k=k, where=where)

    @property
    def llm(self) -> Any:
        from llm_handler import make_llm_backend

        if self._given_llm is not None:
            return self._given_llm
        with self._llm_lock:
            if self._llm is None:
                self._llm = make_llm_backend(self.settings)
            return self._llm

    def model_name(self) -> str:
        llm = self._given_llm or self._llm
        return llm.name if llm is not None else f"{self.settings.llm_backend} (not loaded yet)"

    def stream_answer(
        self, question: str, k: int | None = None, where: Where | None = None, history: list[dict[str, str]] | None = None
    ) -> Iterator[Answer]:
        """Yield the answer as it grows: first with its passages, then token by token.

        `history` holds the earlier turns of this chat, oldest first, as {"role": "user" |
        "assistant", "content": ...}; a follow-up is made standalone from it before
        retrieval, and a bounded part of it is sent to the model.
        """
        from question_intent import asks_for_document_list, split_question

        question = question.strip()
        answer = Answer(question=question)
        started = time.perf_counter()
        if not question:
            answer.error = answer.text = "Ask a question about your documents."
            answer.done = True
            yield answer
            return
        if asks_for_document_list(question):
            yield self._answer_document_list(answer, started)
            return
        summary = self._summary_source(question, where)
        if summary:
            yield from self._answer_summary(answer, summary, started)
            return
        search = self._standalone(answer, history or [])
        answer.sub_questions = split_question(search, self.settings.multipart_min_chars)
        answer.passages = self.retriever.retrieve(search, k=k, where=where, parts=answer.sub_questions)
        answer.timings["retrieve_s"] = time.perf_counter() - started
        yield answer
        if not answer.passages:
            answer.text = "No documents are indexed yet, or none matched — add files to the documents folder and run `python main.py index`."
            answer.kind, answer.refused = "refusal", True
            yield self._finish(answer, started)
            return
        checks = self._prepare_checks(answer, search)
        if checks and not answer.relevance.get("relevant", True):
            answer.kind, answer.refused = "refusal", True
            answer.text = refusal_text(answer.passages)
            self._ground(answer, checks)
            yield self._finish(answer, started)
            return
        if checks:
            self._quote(answer, checks)
            answer.timings["quotes_s"] = time.perf_counter() - started
            yield answer
        yield from self._generate(answer, search, history or [], started, checks)
        declined = bool(answer.text and not answer.error and model_refused(answer.text))
        if declined and answer.quotes:
            self._quotes_stand(answer, checks, "the model found no answer in the passages; check whether these sentences answer your question")
        elif declined:
            answer.kind, answer.refused = "refusal", True
        elif checks and answer.text and not answer.error:
            self._judge(answer, checks, search, self._ground(answer, checks))
        yield self._finish(answer, started)

    def ask(
        self, question: str, k: int | None = None, where: Where | None = None, history: list[dict[str, str]] | None = None
    ) -> Answer:
        answer = Answer(question=question)
        for update in self.stream_answer(question, k=k, where=where, history=history):
            answer = update
        return answer

    def _finish(self, answer: Answer, started: float) -> Answer:
        answer.timings["total_s"] = time.perf_counter() - started
        answer.done = True
        log.info(
            "Answered (%s) in %.2fs with %s (%d passages, %d of %d sentences unsupported)",
            answer.kind, answer.timings["total_s"], answer.model or "no model", len(answer.passages),
            len(answer.unsupported), answer.sentences_checked,
        )
        return answer

    def _available_llm(self) -> Any:
        """The LLM, or None when none can run (the caller then does without it)."""
        try:
            return self.llm
        except LLMError as exc:
            log.info("No LLM for this step: %s", exc)
            return None

    def _standalone(self, answer: Answer, history: list[dict[str, str]]) -> str:
        """The question to search for: the follow-up rewritten to stand alone, or the question itself."""
        from conversation import looks_like_follow_up, make_standalone

        if not looks_like_follow_up(answer.question, history):
            return answer.question
        t = time.perf_counter()
        llm = self._available_llm() if self.settings.follow_up_rewrite == "llm" else None
        embedder = self.embedder if self.vectors.available else None
        rewrite = make_standalone(answer.question, history, llm, embedder, self.settings)
        answer.timings["rewrite_s"] = time.perf_counter() - t
        if rewrite is None or rewrite.question.strip() == answer.question:
            return answer.question
        log.info("Follow-up %r searched as %r (%s)", answer.question, rewrite.question, rewrite.method)
        answer.standalone_question = rewrite.question
        return rewrite.question

    def _prepare_checks(self, answer: Answer, question: str) -> Any:
        """Embed the passages' sentences and judge relevance; None when the embedding model is unavailable."""
        import numpy as np

        from grounding import PassageSentences, assess_relevance

        if not self.vectors.available:
            return None
        t = time.perf_counter()
        try:
            sentences = PassageSentences.embed(self.embedder, [p.text for p in answer.passages])
            question_vector = np.asarray(self.embedder.embed_query(question), dtype=np.float32)
        except EmbeddingError as exc:
            log.warning("Relevance and grounding checks skipped: %s", exc)
            return None
        relevance = assess_relevance(question_vector, question, sentences, self.settings)
        answer.relevance = {"similarity": relevance.similarity, "overlap": relevance.overlap, "relevant": relevance.relevant}
        answer.timings["relevance_s"] = time.perf_counter() - t
        return sentences, question_vector, sentence_scores(sentences, question_vector, question)

    def _quote(self, answer: Answer, checks: Any) -> None:
        """The passage sentences that best answer the question, shown before the model writes."""
        sentences, _, scores = checks
        answer.quotes = [
            {"passage": q.number, "text": q.text, "location": answer.passages[q.number - 1].label}
            for q in select_quotes(sentences, scores)
        ]

    def _judge(self, answer: Answer, checks: Any, question: str, grounding: Any) -> None:
        """Keep the model's text, or let the quotes stand as the answer with the reason (answer_verdict.py).

        A right claim cited to the wrong passage is kept: when nothing backs the answer as
        cited, it is checked again against every passage and its citations are set from that.
        """
        from answer_verdict import NO_BACKING, add_missing_citations, judge

        texts = [p.text for p in answer.passages]
        verdict = judge(answer.text, grounding, texts, question, answer.tidied)
        if not verdict.shown and verdict.reason == NO_BACKING and CITATION.search(answer.text):
            uncited = " ".join(CITATION.sub(" ", answer.text).split(" ")).replace("  ", " ").strip()
            answer.text = uncited
            regrounded = self._ground(answer, checks)
            again = judge(uncited, regrounded, texts, question, answer.tidied)
            if again.shown:
                verdict, grounding = again, regrounded
        if verdict.shown:
            answer.text = add_missing_citations(answer.text, grounding)
            return
        if not answer.quotes:
            answer.notice = f"Check this answer against the sources: {verdict.reason}."
            answer.unsupported = answer.unsupported or claim_sentences(answer.text, [REFUSAL])
            return
        self._quotes_stand(answer, checks, verdict.reason)

    def _quotes_stand(self, answer: Answer, checks: Any, reason: str) -> None:
        """The model's text is set aside (one click away in the UI); the verbatim quotes are the answer."""
        from answer_context import Quote
        from answer_verdict import quotes_markdown

        answer.set_aside, answer.notice = answer.text, f"The model's answer was set aside: {reason}. The passages say:"
        quotes = [Quote(q["passage"], q["text"], 0.0) for q in answer.quotes]
        answer.text = quotes_markdown(quotes, [p.label for p in answer.passages])
        answer.unsupported = []
        self._ground(answer, checks)

    def _ground(self, answer: Answer, checks: Any) -> Any:
        from grounding import check_grounding
        from llm_handler import REFUSAL

        sentences, question_vector, _ = checks
        t = time.perf_counter()
        text = "" if answer.kind == "refusal" else answer.text
        try:
            grounding = check_grounding(text, sentences, self.embedder, self.settings, question_vector, skip=[REFUSAL])
        except EmbeddingError as exc:
            log.warning("Grounding check skipped: %s", exc)
            return None
        answer.unsupported = grounding.unsupported
        answer.sentences_checked = len(grounding.checked)
        answer.highlights = grounding.highlights
        answer.timings["grounding_s"] = time.perf_counter() - t
        return grounding

    def _answer_messages(self, question: str, passages: list[Passage], history: list[dict[str, str]], checks: Any) -> list[dict[str, str]]:
        """The prompt: each passage cut to what bears on the question (answer_context.py), numbers kept."""
        from conversation import bounded_history
        from llm_handler import build_messages

        texts = [p.text for p in passages]
        if checks and self.settings.context_token_budget > 0:
            sentences, _, scores = checks
            texts = compact_passages(texts, sentences, scores, self.settings.context_token_budget)
        messages = build_messages(question, [(p.label, t) for p, t in zip(passages, texts, strict=True)])
        turns = bounded_history(history, self.settings.history_max_turns, self.settings.history_max_tokens)
        return [messages[0], *turns, *messages[1:]]

    def _generate(self, answer: Answer, question: str, history: list[dict[str, str]], started: float, checks: Any = None) -> Iterator[Answer]:
        """Stream the model's answer into `answer`, tidied (answer_tidy.py); an LLM failure becomes a note."""
        from answer_tidy import tidy_answer

        messages = self._answer_messages(question, answer.passages, history, checks)
        answer.timings["prompt_chars"] = float(sum(len(m["content"]) for m in messages))
        hit_limit = yield from self._stream_into(answer, messages, started)
        if answer.error:
            return
        answer.text, tidied = tidy_answer(answer.text, question, [p.text for p in answer.passages], hit_limit)
        if tidied:
            log.info("Answer tidied: %s", ", ".join(tidied))
        answer.tidied = tidied
        self._note_model(answer)

    def _note_model(self, answer: Answer) -> None:
        """Say when the small embedded model answered, and how to get a better one."""
        if answer.model.startswith("llama.cpp:"):
            answer.model_hint = (
                f"Answered by the embedded {answer.model.split(':', 1)[1]}, a small model. For better answers, "
                f"install Ollama and run `ollama pull {self.settings.ollama_model}`: docqa uses it when it runs."
            )

    def _stream_into(self, answer: Answer, messages: list[dict[str, str]], started: float, max_tokens: int | None = None) -> Iterator[Answer]:
        """Stream into answer.text; stops early when the model starts repeating itself. Returns whether it hit the limit."""
        from answer_tidy import repeats_from

        limit = max_tokens or self.settings.llm_max_tokens
        pieces = 0
        try:
            llm = self.llm
            answer.model = llm.name
            first = None
            stream = llm.stream(messages, max_tokens)
            prefix = answer.text
            for piece in stream:
                if first is None:
                    first = time.perf_counter()
                    answer.timings.setdefault("first_token_s", first - started)
                answer.text += piece
                pieces += 1
                if pieces % 8 == 0 and repeats_from(answer.text[len(prefix):]) is not None:
                    close = getattr(stream, "close", None)
                    if close:
                        close()
                    break
                yield answer
            answer.text = answer.text.strip()
        except LLMError as exc:
            self._llm_failed(answer, exc)
        return pieces >= limit

    def _llm_failed(self, answer: Answer, exc: LLMError) -> None:
        answer.error = str(exc)
        note = f"⚠ {exc}"
        if not answer.text:
            note += "\n\nThe passages below are what the documents say about your question."
        answer.text = f"{answer.text}\n\n{note}".strip()
        if self.settings.llm_backend == "auto":
            self._llm = None  # choose again next time: Ollama may be back, or the embedded model takes over

    # ------------------------------------------------------------ whole-document questions

    def _answer_document_list(self, answer: Answer, started: float) -> Answer:
        """"What documents do you have?" answered from the index's file list, not from passages."""
        from whole_document import document_list_text

        answer.kind = "document_list"
        answer.text = document_list_text(self.indexer.manifest.files, self.indexer.manifest.failed)
        return self._finish(answer, started)

    def _summary_source(self, question: str, where: Where | None) -> str | None:
        from question_intent import summary_target

        files = self.indexer.manifest.files
        sources = sorted(files)
        wanted = (where or {}).get("source")
        if wanted:
            allowed = set(wanted if isinstance(wanted, list) else [wanted])
            sources = [s for s in sources if s in allowed]
        request = summary_target(question, sources, {s: files[s].title for s in sources})
        return request.source if request else None

    def _answer_summary(self, answer: Answer, source: str, started: float) -> Iterator[Answer]:
        """Map-reduce over the whole file: each part summarised in order, then the summaries combined."""
        from whole_document import PART_ANSWER_TOKENS, map_messages, part_text, reduce_messages, split_parts

        s = self.settings
        answer.kind = "summary"
        parts = split_parts(self.keywords.chunks_of_source(source), s.summary_max_parts)
        answer.passages = [Passage([part[0]], 0.0, {"summary part": n}) for n, part in enumerate(parts, start=1)]
        answer.timings["retrieve_s"] = time.perf_counter() - started
        yield answer
        if not parts:
            answer.text = f"{source} has no indexed text to summarise — check `python main.py stats` for why."
            yield self._finish(answer, started)
            return
        texts = [part_text(part, s.summary_part_chars) for part in parts]
        if len(parts) == 1:
            yield from self._stream_into(answer, map_messages(source, texts[0], 1, 1), started)
            yield self._finish(answer, started)
            return
        summaries: list[str] = []
        try:
            llm = self.llm
            answer.model = llm.name
            for n, text in enumerate(texts, start=1):
                answer.text = f"Reading {source}, part {n} of {len(parts)}…"
                yield answer
                summaries.append(llm.complete(map_messages(source, text, n, len(parts)), min(PART_ANSWER_TOKENS, s.llm_max_tokens)).strip())
        except LLMError as exc:
            answer.text = ""
            self._llm_failed(answer, exc)
            yield self._finish(answer, started)
            return
        answer.timings["map_s"] = time.perf_counter() - started
        answer.text = ""
        yield from self._stream_into(answer, reduce_messages(source, summaries), started)
        if not answer.text or answer.error:  # the parts' summaries are still a summary
            note = f"\n\n{answer.text}" if answer.text else ""
            answer.text = "\n".join(f"[{n}] {text}" for n, text in enumerate(summaries, start=1) if text) + note
        yield self._finish(answer, started)

    # ------------------------------------------------------------ status

    def stats(self) -> dict[str, Any]:
        m = self.indexer.manifest
        by_kind: dict[str, int] = {}
        for record in list(m.files.values()):
            by_kind[record.kind] = by_kind.get(record.kind, 0) + 1
        out: dict[str, Any] = {
            "documents_folder": str(self.settings.docs_dir),
            "data_folder": str(self.settings.db_dir),
            "files": len(m.files),
            "files_by_type": by_kind,
            "chunks": m.chunk_count(),
            "keyword_index_chunks": self.keywords.count(),
            "failed": {k: v.reason for k, v in sorted(list(m.failed.items()))},
            "skipped": dict(sorted(list(m.skipped.items()))),
            "skipped_by_type": skipped_by_type(m.skipped),
            "last_indexed": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(m.last_indexed)) if m.last_indexed else None,
            "embedding_model": self.embedder.name,
            "retrieval_mode": self.settings.retrieval_mode if self.vectors.available else "bm25 (embedding model unavailable)",
            "llm_backend": self.settings.llm_backend,
            "llm": self.model_name(),
        }
        if isinstance(self.vectors, VectorStore):
            vs = self.vectors.get_collection_stats()
            out["vector_store"] = vs["store"]
            out["vector_store_chunks"] = vs["chunks"]
            out["collection"] = vs["collection"]
        if self.warning:
            out["warning"] = self.warning
        return out

    # ------------------------------------------------------------ for the front ends

    def index_status(self) -> IndexStatus:
        """What the indexer is doing now; cheap, for a UI to poll while a sync runs."""
        return self._index_status

    def documents(self) -> list[DocumentStatus]:
        """Every file the last sync looked at, by name: indexed with its chunks, or failed or skipped with why."""
        m = self.indexer.manifest
        found = {source: DocumentStatus(source, "skipped", reason=why) for source, why in list(m.skipped.items())}
        found.update((source, DocumentStatus(source, "failed", reason=f.reason)) for source, f in list(m.failed.items()))
        found.update((source, DocumentStatus(source, "indexed", chunks=len(r.chunk_ids))) for source, r in list(m.files.items()))
        return [found[source] for source in sorted(found)]

    def check(self, repair: bool = False) -> IndexCheck:
        """Compare manifest, vector store and keyword index file by file; `repair` re-indexes the files that disagree."""
        problems = self.indexer.check()
        repaired: list[str] = []
        if problems and repair:
            repaired = self.indexer.repair(problems)
            self.index()
        return IndexCheck(problems, repaired)

    def page_image(self, source: str, page: int, highlights: list[str]) -> bytes:
        """A PDF page of an indexed document as PNG, the highlighted texts marked on it."""
        from page_images import render_page_png

        return render_page_png(self.settings, source, page, highlights)

    def history_after(self, history: list[dict[str, str]], answer: Answer) -> list[dict[str, str]]:
        """The history to send with the next question of this chat, once `answer` is done."""
        from conversation import history_after

        return history_after(history, answer.question, answer.text, failed=bool(answer.error))

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
        self.indexer.close()
        if self._lock:
            self._lock.release()


class UploadRefused(DocqaError):
    pass


def skipped_by_type(skipped: dict[str, str]) -> dict[str, dict[str, int]]:
    """Skipped files counted by type and reason: {"png": {"unsupported file type .png": 3}}."""
    from discovery import file_type

    out: dict[str, dict[str, int]] = {}
    for source, reason in skipped.items():
        kind = "folder" if source.endswith("/") else file_type(source)
        reason = re.sub(r"^[\d.]+ MB, ", "", reason)  # sizes differ; the limit is the reason
        out.setdefault(kind, {})[reason] = out.setdefault(kind, {}).get(reason, 0) + 1
    return dict(sorted(out.items()))


def refusal_text(passages: list[Passage], shown: int = 3) -> str:
    """What the gate says instead of guessing: the refusal, then where the closest passages are."""
    from llm_handler import REFUSAL

    closest = "\n".join(f"[{n}] {p.label}" for n, p in enumerate(passages[:shown], start=1))
    return f"{REFUSAL} No passage is close enough to the question to answer from; the closest are:\n{closest}"


def sanitize_filename(name: str) -> str:
    """A plain file name from whatever a browser sent: no folders, no control characters."""
    import unicodedata

    base = re.split(r"[\\/]", name or "")[-1]
    base = unicodedata.normalize("NFC", base)
    base = "".join(ch if (ch.isalnum() or ch in " ._-()[]") else "_" for ch in base)
    base = re.sub(r"\s+", " ", base).strip(" .")
    if not base or base.startswith("."):
        base = "upload" + (base if base.startswith(".") else "")
    stem, dot, ext = base.rpartition(".")
    if dot and len(base) > 150:
        base = stem[: 150 - len(ext) - 1] + "." + ext
    return base[:150]


def describe_error(exc: Exception) -> str:
    return str(exc) if isinstance(exc, DocqaError) else f"Unexpected error: {type(exc).__name__}: {exc}"


def profile_documents(settings: Settings) -> tuple[dict[str, Any], str]:
    """`main.py analyze`: the documents folder profiled, as JSON and as a report recommending chunk settings."""
    from folder_profile import format_profile, profile_folder

    profile = profile_folder(settings)
    return profile.to_json(), format_profile(profile, settings)
