"""RAGSystem: docqa's Python API. The CLI and the web UI only call this and show its results.

It owns the stores, the indexer, the retriever and the LLM backend, and turns a question
into a streamed, cited answer. When no LLM can run, the user still gets the passages
with a message saying how to fix it, never a traceback.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import conversation
import documents_folder
import embeddings
import whole_document
from answer_prompt import quotes_answer_messages
from answer_render import is_refusal as model_refused  # the one refusal rule, shared with the evaluation
from answer_review import AnswerReview, Evidence
from answer_sources import arrange_sources
from answer_types import Answer
from answer_verdict import model_hint
from config import Settings
from conversation import looks_like_follow_up, previous_standalone, rewrite_by_rule
from data_folder import DataLock, LockMode, ensure_writable, open_stores_or_rebuild
from embeddings import EmbeddingBackend
from errors import LLMError, describe_error
from free_answer import FreeAnswer
from index_records import IndexReport, SyncStep
from index_status import (
    AnswersFirst,
    DocumentStatus,
    IndexCheck,
    IndexStatus,
    IndexTracker,
    document_statuses,
    manifest_stats,
)
from indexer import Indexer, Progress
from llm_handler import LLMBackend, answering_model, make_llm_backend
from page_images import render_page_png
from question_intent import asks_for_document_list
from retriever import Passage, Retriever, Where
from vector_store import NullVectorStore, VectorStore
from watcher import FolderWatcher

log = logging.getLogger(__name__)


class RAGSystem:
    """docqa's API. Collaborators left out are made by their factories from the settings: the embedder
    (embeddings.make_embedder), the LLM backend (llm_handler.make_llm_backend, on first use) and the
    vector store (opened in the data folder, or a NullVectorStore when the embedding model cannot run)."""

    def __init__(
        self, settings: Settings, *, embedder: EmbeddingBackend | None = None, llm: LLMBackend | None = None,
        vectors: VectorStore | NullVectorStore | None = None, lock: bool | LockMode = True,
    ) -> None:
        self.settings = settings
        ensure_writable(settings.db_dir)
        self._lock = DataLock(settings.db_dir, lock)  # "read": beside a running writer (data_folder.py)
        self._lock.acquire(wait_s=2.0)
        try:
            self.embedder = embedder if embedder is not None else embeddings.make_embedder(settings)
            self.vectors, self.keywords = open_stores_or_rebuild(settings, self.embedder, vectors, self._lock.reading)
        except BaseException:
            self._lock.release()  # a failed start must not leave the data folder locked
            raise
        self.warning: str | None = f"Keyword search only: {self.vectors.reason}" if isinstance(self.vectors, NullVectorStore) else None
        self._tracker = IndexTracker()
        self._turns = AnswersFirst(on_pause=self._tracker.pause)
        self.indexer = Indexer(settings, self.vectors, self.keywords, self.embedder, wait_turn=self._turns.wait_turn)
        self.retriever = Retriever(settings, self.vectors, self.keywords, self.embedder)
        self.review = AnswerReview(settings, self.embedder, self.keywords)
        self.free = FreeAnswer(settings, lambda: self.llm, self._llm_failed)
        self._given_llm = llm
        self._llm: Any = llm
        self._llm_lock = threading.Lock()
        self._index_lock = threading.Lock()
        self._watcher: Any = None

    # ------------------------------------------------------------ indexing

    def index(
        self, reindex: bool = False, progress: Progress | None = None, on_status: Callable[[IndexStatus], None] | None = None
    ) -> IndexReport:
        """Bring the index in line with the folder; one sync at a time, queries keep working.

        `progress` hears (stage, done, total) per file read; `on_status` gets the IndexStatus at every
        step, chunks embedded included, for a display that is full only when the work is done.
        """

        def step(moved: SyncStep) -> None:
            self._tracker.step(moved)
            if on_status is not None:
                on_status(self._tracker.status)

        with self._index_lock:
            self._tracker.begin()
            try:
                with self._lock.changing():
                    report = self.indexer.sync(reindex=reindex, progress=progress, on_step=step)
            except Exception as exc:
                self._tracker.fail(describe_error(exc))
                raise
            self._tracker.finish(report.summary(), report.changed)
            return report

    def announce_sync(self) -> None:
        """Mark a sync as begun before its thread starts (serve's start-up), so that nothing reads the
        index as complete in the moment between the server listening and the sync taking its lock."""
        self._tracker.begin()

    def watch(self) -> FolderWatcher:
        """Re-index in the background whenever the documents folder changes."""
        self._watcher = documents_folder.watch(self.settings, self.index)
        return self._watcher

    def add_upload(self, name: str, data_path: Path) -> str:
        """Copy an uploaded file into the documents folder under a safe, unused name; returns it (documents_folder.py)."""
        return documents_folder.add_upload(self.settings, name, data_path)

    def remove_document(self, source: str) -> None:
        """Delete a document from the folder and the index."""
        documents_folder.delete_document(self.settings, source)
        self.index()

    # ------------------------------------------------------------ retrieval and answers

    def retrieve_context(self, question: str, k: int | None = None, where: Where | None = None, mode: str | None = None) -> list[Passage]:
        return self.retriever.retrieve(question, k=k, where=where, mode=mode)

    @property
    def llm(self) -> Any:
        if self._given_llm is not None:
            return self._given_llm
        with self._llm_lock:
            if self._llm is None:
                self._llm = make_llm_backend(self.settings)
            return self._llm

    @property
    def model_note(self) -> str | None:
        """How to get better answers, while the small embedded model answers (or will); a front end says it once."""
        return model_hint(self.model_name(), self.settings.ollama_model)

    def model_name(self) -> str:
        llm = self._given_llm or self._llm
        return llm.name if llm is not None else f"{answering_model(self.settings)} — loads on the first question"

    def stream_answer(
        self, question: str, k: int | None = None, where: Where | None = None, history: list[dict[str, str]] | None = None
    ) -> Iterator[Answer]:
        """Yield the answer as it grows: first with its passages, then token by token.

        `history` holds the earlier turns of this chat, oldest first, as {"role": "user" |
        "assistant", "content": ...}; a follow-up is made standalone from it before
        retrieval, and a bounded part of it is sent to the model. A question that is not a
        follow-up is answered as if asked alone: earlier turns only distract a small model
        (measured in a chat of unrelated questions, `eval --answers --in-chat`: it answered
        the previous question, or copied its answer).

        While it runs, background indexing waits (index_status.AnswersFirst); asked during a
        sync, the answer says that it uses only what is indexed so far.
        """
        with self._turns.answering():
            note = self._still_indexing()
            for answer in self._answer_stream(question, k, where, history):
                answer.indexing = note
                yield answer

    def _still_indexing(self) -> str | None:
        status = self._tracker.status
        if status.state != "indexing":
            return None
        done = f"{status.done} of {status.total} files done" if status.stage == "indexing" and status.total else "looking for changes"
        return f"Indexing is still running ({done}): this answer uses what is indexed so far."

    def warm_up(self) -> None:
        """Load the answer model now (serve calls it at start), so the first question does not wait for it."""
        llm = self._available_llm()
        if llm is not None:
            llm.warm_up()

    def _answer_stream(
        self, question: str, k: int | None, where: Where | None, history: list[dict[str, str]] | None
    ) -> Iterator[Answer]:
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
        history = history or []
        follow_up = looks_like_follow_up(question, history)
        search = self._standalone(answer, history) if follow_up else question
        search, answer.focus, answer.notice = self.retriever.focus(search)  # a long question: its most informative part
        rare = self.retriever.rare_terms(search)  # names few chunks hold: retrieval and the relevance gate trust them
        answer.passages = self.retriever.retrieve(search, k=k, where=where, rare=rare)
        answer.timings.retrieve_s = time.perf_counter() - started
        yield answer
        if not answer.passages:
            answer.text = "No documents are indexed yet, or none matched — add files to the documents folder and run `python main.py index`."
            answer.kind, answer.refused = "refusal", True
            yield self._finish(answer, started)
            return
        checks = self.review.evidence(answer, search, rare) if self.vectors.available else None
        self._doubt_unnamed(answer, search)
        undecided = bool(checks and answer.relevance.model_decides and self._available_llm() is not None)
        if checks and not answer.relevance.relevant and not undecided:
            yield self._refuse(answer, checks, started)
            return
        if checks and not undecided:  # an undecided question shows no quotes until the model has read the passages
            self.review.quote(answer, checks)
            answer.timings.quotes_s = time.perf_counter() - started
            yield answer
        # a draft with a wrong claim is set aside for the quotes, or refused when undecided: stop it there
        stop = self.review.contradiction(answer, search) if checks and (answer.quotes or undecided) else None
        yield from self.free.generate(answer, search, history if follow_up else [], started, checks, stop)
        declined = bool(answer.text and not answer.error and model_refused(answer.text))
        if undecided and checks is not None:
            yield from self._model_decides(answer, checks, search, declined, started)
            return
        notice = answer.notice
        if answer.error and answer.draft and answer.quotes and checks is not None:  # cut off: its words unchecked
            answer.text = answer.draft.strip()
            self.review.quotes_stand(answer, checks, f"the model stopped before it finished ({answer.error})")
        elif declined and answer.quotes and checks is not None:  # quotes come from the checks
            self.review.quotes_stand(answer, checks, "the model found no answer in the passages; check whether these sentences answer your question")
        elif declined:
            answer.kind, answer.refused = "refusal", True
        elif not answer.text and not answer.error and answer.quotes and checks is not None:
            self.review.quotes_stand(answer, checks, "the model wrote nothing")
        elif checks and answer.text and not answer.error:
            self.review.judge(answer, checks, search, self.review.ground(answer, checks))
        if checks is not None and not self._quotes_answer(answer, search):
            yield self._unconfirmed(answer, checks, started, notice)
            return
        yield self._finish(answer, started)

    def _quotes_answer(self, answer: Answer, question: str) -> bool:
        """Whether the quotes answer the question, asked of the model when its own answer was set aside: the
        quotes then stand as the answer, or the refusal shows them as the nearest sentences. On the dev pool's
        tune half the checks flag every unanswerable question the model answers, but as an answer of quotes
        it is not a refusal; the model, asked only whether the quotes answer the question, tells them apart
        from the flagged answerable ones (docs/answer-results.md). An answer shown with some claims marked
        is not asked about: with the one judge, asking then moved no outcome on either half of the dev pool
        and cost a model call on half the answers. True when nothing was set aside, the model failed or
        none can run, or QUOTES_JUDGE_MIN_YES is 0."""
        if answer.set_aside is None or answer.refused or answer.error or not answer.quotes or self.settings.quotes_judge_min_yes <= 0:
            return True
        llm = self._available_llm()
        if llm is None:
            return True
        t = time.perf_counter()
        try:
            chance = llm.yes_probability(quotes_answer_messages(question, [q.text for q in answer.quotes]))
        except LLMError as exc:
            log.warning("The model could not judge the quotes: %s", exc)
            return True
        answer.timings.quotes_judge_s = time.perf_counter() - t
        answer.relevance.quotes_answer = round(chance, 4)
        log.info("The model judges the quotes answer the question with p(yes) %.2f", chance)
        return chance >= self.settings.quotes_judge_min_yes

    def _doubt_unnamed(self, answer: Answer, question: str) -> None:
        """A question naming something no document names is doubted, however close its passages:
        they match it on its other words, so the model's answer must pass its checks.

        The name is an uncommon word no chunk holds ("How do I write unit tests for docqa with
        pytest?" beside a guide that names no test tool), about which a small model answers from
        what it learned elsewhere.
        A question the rules already doubt or refuse keeps its course; the names go into the
        refusal's reason either way, so the user sees what the documents lack."""
        unnamed = [f"“{word}”" for word in self.retriever.unnamed_terms(question)]
        if not unnamed:
            return
        answer.relevance.unnamed = unnamed
        if answer.relevance.similarity is not None and answer.relevance.relevant:  # assessed, and not doubted yet
            log.info("No document names %s: the question is doubted", ", ".join(unnamed))
            answer.relevance.relevant, answer.relevance.model_decides = False, True

    def _model_decides(self, answer: Answer, checks: Evidence, question: str, declined: bool, started: float) -> Iterator[Answer]:
        """A question the relevance rules doubt: the model's answer is shown only if it passes its
        checks; if the model finds no answer, or what it writes is set aside, the documents do
        not cover the question. The quotes do not stand in as an answer (they would answer a
        question the documents may not hold), but the refusal shows them as the nearest
        sentences: a question asked in other words than the documents' is often doubted
        ("Are my files uploaded to some cloud service?" beside the FAQ's "No. docqa has no
        cloud component"), and the user can then read the answer instead of opening pages.

        A shown answer's unbacked claims are marked as for any question: the share of claims that
        had to be backed (DOUBTED_MIN_SUPPORTED, 0.5) moved no outcome on the tune half or the other
        dev sets and refused a right answer on the check half (docs/answer-results.md, ninth session)."""
        notice = answer.notice  # declined, failed or empty: nothing was quoted, judged or set aside
        if not declined and not answer.error and answer.text:
            self.review.quote(answer, checks)
            self.review.judge(answer, checks, question, self.review.ground(answer, checks))
            if answer.set_aside is None:
                yield self._finish(answer, started)
                return
            log.info("Doubtful question, model's answer set aside: refused (%s)", answer.notice)
        yield self._unconfirmed(answer, checks, started, notice)

    def _unconfirmed(self, answer: Answer, checks: Evidence, started: float, notice: str | None) -> Answer:
        """No answer could be confirmed: the model's text and the checks' notice go, the notice from before
        them stays, and the refusal shows the quotes as the nearest sentences."""
        answer.set_aside, answer.notice, answer.quotes = None, notice, []
        return self._refuse(answer, checks, started, nearest=True)

    def _refuse(self, answer: Answer, checks: Evidence | None, started: float, nearest: bool = False) -> Answer:
        """The documents do not cover the question: the closest passages instead of a guess (AnswerReview.refuse)."""
        self.review.refuse(answer, checks, nearest)
        return self._finish(answer, started)

    def ask(
        self, question: str, k: int | None = None, where: Where | None = None, history: list[dict[str, str]] | None = None
    ) -> Answer:
        answer = Answer(question=question)
        for update in self.stream_answer(question, k=k, where=where, history=history):
            answer = update
        return answer

    def _finish(self, answer: Answer, started: float) -> Answer:
        if answer.kind in ("answer", "refusal"):  # retrieved passages: cited first, weak matches set apart (answer_sources.py)
            arrange_sources(answer, self.settings)
        answer.timings.total_s = time.perf_counter() - started
        answer.done = True
        log.info(
            "Answered (%s) in %.2fs with %s (%d passages, %d weak left out, %d of %d sentences unsupported)",
            answer.kind, answer.timings.total_s, answer.model or "no model", len(answer.passages), len(answer.more_passages),
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
        """The follow-up to search for, rewritten to stand alone; as asked when no rewrite holds."""
        t = time.perf_counter()
        embedder = self.embedder.for_checks if self.vectors.available else None
        rewrite = rewrite_by_rule(answer.question, previous_standalone(history, embedder), embedder)  # a follow-up: already read as one
        answer.timings.rewrite_s = time.perf_counter() - t
        if rewrite.strip() == answer.question:
            return answer.question
        log.info("Follow-up %r searched as %r", answer.question, rewrite)
        answer.standalone_question = rewrite
        return rewrite

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
        answer.kind = "document_list"
        answer.text = whole_document.document_list_text(self.indexer.manifest.files, self.indexer.manifest.failed)
        return self._finish(answer, started)

    def _summary_source(self, question: str, where: Where | None) -> str | None:
        return whole_document.summary_source(question, self.indexer.manifest.files, where)

    def _answer_summary(self, answer: Answer, source: str, started: float) -> Iterator[Answer]:
        """The file's outline at once, then one model call for a checked paragraph (whole_document.py); then finished."""
        yield from whole_document.stream_summary(
            answer, source, self.keywords.chunks_of_source(source), self.settings, started,
            llm=lambda: self.llm,
            failed=lambda exc: self._llm_failed(answer, exc),
        )
        yield self._finish(answer, started)

    # ------------------------------------------------------------ status

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "documents_folder": str(self.settings.docs_dir),
            "data_folder": str(self.settings.db_dir),
            **manifest_stats(self.indexer.manifest, self.keywords.count()),
            "embedding_model": self.embedder.name,
            "retrieval_mode": self.settings.retrieval_mode if self.vectors.available else "bm25 (embedding model unavailable)",
            "llm_backend": self.settings.llm_backend,
            "llm": self.model_name(),
        }
        if isinstance(self.vectors, VectorStore):
            vs = self.vectors.get_collection_stats()
            out.update(vector_store=vs["store"], vector_store_chunks=vs["chunks"], collection=vs["collection"])
        if self.warning:
            out["warning"] = self.warning
        return out

    # ------------------------------------------------------------ for the front ends

    def index_status(self) -> IndexStatus:
        """What the indexer is doing now; cheap, for a UI to poll while a sync runs."""
        return self._tracker.status

    def documents(self) -> list[DocumentStatus]:
        """Every file the last sync looked at, by name: indexed with its chunks, or failed or skipped with why."""
        return document_statuses(self.indexer.manifest)

    def check(self, repair: bool = False) -> IndexCheck:
        """Compare manifest, vector store and keyword index file by file; `repair` re-indexes the files that disagree."""
        problems = self.indexer.check()
        repaired: list[str] = []
        if problems and repair:
            with self._lock.changing():
                repaired = self.indexer.repair(problems)
            self.index()
        return IndexCheck(problems, repaired)

    def page_image(self, source: str, page: int, highlights: list[str]) -> bytes:
        """A PDF page of an indexed document as PNG, the highlighted texts marked on it."""
        return render_page_png(self.settings, source, page, highlights)

    def history_after(self, history: list[dict[str, str]], answer: Answer) -> list[dict[str, str]]:
        """The history to send with the next question of this chat, once `answer` is done."""
        return conversation.history_after(history, answer.question, answer.text, failed=bool(answer.error))

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
        self.indexer.close()
        self._lock.release()


def profile_documents(settings: Settings) -> tuple[dict[str, Any], str]:
    """`main.py analyze`: the documents folder profiled, as JSON and as a report recommending chunk settings."""
    from folder_profile import format_profile, profile_folder

    profile = profile_folder(settings)
    return profile.to_json(), format_profile(profile, settings)
