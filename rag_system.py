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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from config import Settings
from errors import DocqaError, EmbeddingError, LLMError, StoreError
from indexer import DataLock, Indexer, IndexReport, Progress
from keyword_index import KeywordIndex
from retriever import Passage, Retriever, Where

log = logging.getLogger(__name__)


@dataclass
class Answer:
    """An answer as it streams: `text` grows; `done` is set on the last update."""

    question: str
    text: str = ""
    model: str = ""
    passages: list[Passage] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    done: bool = False

    def sources_json(self) -> list[dict[str, Any]]:
        return [passage_json(p) for p in self.passages]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "question": self.question,
            "answer": self.text,
            "model": self.model,
            "sources": self.sources_json(),
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
        "chunk_index": p.first.chunk_index,
        "chunk_indexes": [c.chunk_index for c in p.chunks],
        "score": round(p.score, 6),
        "found_by": p.found_by,
        "text": p.text,
    }


class RAGSystem:
    def __init__(self, settings: Settings, lock: bool = True) -> None:
        from vector_store import Embedder

        self.settings = settings
        settings.db_dir.mkdir(parents=True, exist_ok=True)
        self._lock = DataLock(settings.db_dir) if lock else None
        if self._lock:
            self._lock.acquire(wait_s=2.0)
        self.warning: str | None = None
        self.embedder = Embedder(settings.embedding_model, settings.embedding_batch_size, settings.embedding_threads)
        try:
            self.vectors, self.keywords = self._open_stores()
        except StoreError as exc:
            if settings.chroma_host:
                raise
            self._move_index_aside(exc)
            self.vectors, self.keywords = self._open_stores()
        self.indexer = Indexer(settings, self.vectors, self.keywords)
        self.retriever = Retriever(settings, self.vectors, self.keywords)
        self._llm: Any = None
        self._llm_lock = threading.Lock()
        self._index_lock = threading.Lock()
        self._watcher: Any = None
        self.indexing: dict[str, Any] = {"state": "idle", "done": 0, "total": 0}

    def _open_stores(self) -> tuple[Any, KeywordIndex]:
        from vector_store import VectorStore

        vectors: Any = None
        try:
            vectors = VectorStore(self.settings, self.embedder)
        except EmbeddingError as exc:
            # Still useful: keyword search answers without the embedding model.
            self.warning = f"Keyword search only: {exc}"
            log.warning("%s", self.warning)
        keywords = KeywordIndex(self.settings.keyword_dir)
        keywords.count()  # fails now, not mid-answer, if the table is unreadable
        return vectors, keywords

    def _move_index_aside(self, exc: Exception) -> None:
        """A corrupt index is kept for inspection, never deleted, and rebuilt from the documents."""
        try:  # Chroma caches a client per path, broken one included
            from chromadb.api.client import SharedSystemClient

            SharedSystemClient.clear_system_cache()
        except Exception:
            pass
        stamp = time.strftime("%Y%m%d-%H%M%S")
        moved = []
        for path in (self.settings.chroma_dir, self.settings.keyword_dir, self.settings.manifest_path):
            if path.exists():
                aside = path.with_name(f"{path.name}.corrupt-{stamp}")
                path.replace(aside)
                moved.append(aside.name)
        log.error(
            "The index in %s could not be opened (%s). Moved it aside (%s) and rebuilding from the documents.",
            self.settings.db_dir, exc, ", ".join(moved) or "nothing to move",
        )

    # ------------------------------------------------------------ indexing

    def index(self, reindex: bool = False, progress: Progress | None = None) -> IndexReport:
        """Bring the index in line with the folder; one sync at a time, queries keep working."""
        with self._index_lock:
            self.indexing.update(state="indexing", done=0, total=0, started=time.time())

            def track(stage: str, done: int, total: int) -> None:
                self.indexing.update(done=done, total=total)
                if progress:
                    progress(stage, done, total)

            try:
                report = self.indexer.sync(reindex=reindex, progress=track)
            except Exception as exc:
                self.indexing.update(state="failed", error=describe_error(exc), finished=time.time())
                raise
            self.indexing.update(state="idle", finished=time.time(), summary=report.summary(), error=None)
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

        with self._llm_lock:
            if self._llm is None:
                self._llm = make_llm_backend(self.settings)
            return self._llm

    def model_name(self) -> str:
        return self._llm.name if self._llm is not None else f"{self.settings.llm_backend} (not loaded yet)"

    def stream_answer(self, question: str, k: int | None = None, where: Where | None = None) -> Iterator[Answer]:
        """Yield the answer as it grows: first with its passages, then token by token."""
        from llm_handler import build_messages

        question = question.strip()
        answer = Answer(question=question)
        started = time.perf_counter()
        if not question:
            answer.error = answer.text = "Ask a question about your documents."
            answer.done = True
            yield answer
            return
        answer.passages = self.retrieve_context(question, k=k, where=where)
        answer.timings["retrieve_s"] = time.perf_counter() - started
        yield answer
        if not answer.passages:
            answer.text = "No documents are indexed yet, or none matched — add files to the documents folder and run `python main.py index`."
            answer.done = True
            answer.timings["total_s"] = time.perf_counter() - started
            yield answer
            return
        messages = build_messages(question, [(f"{p.label}", p.text) for p in answer.passages])
        try:
            llm = self.llm
            answer.model = llm.name
            first = None
            for piece in llm.stream(messages):
                if first is None:
                    first = time.perf_counter()
                    answer.timings["first_token_s"] = first - started
                answer.text += piece
                yield answer
            answer.text = answer.text.strip()
        except LLMError as exc:
            answer.error = str(exc)
            note = f"⚠ {exc}"
            if not answer.text:
                note += "\n\nThe passages below are what the documents say about your question."
            answer.text = f"{answer.text}\n\n{note}".strip()
            if self.settings.llm_backend == "auto":
                self._llm = None  # choose again next time: Ollama may be back, or the embedded model takes over
        answer.timings["total_s"] = time.perf_counter() - started
        answer.done = True
        log.info("Answered in %.2fs with %s (%d passages)", answer.timings["total_s"], answer.model or "no model", len(answer.passages))
        yield answer

    def ask(self, question: str, k: int | None = None, where: Where | None = None) -> Answer:
        final = Answer(question=question)
        for final in self.stream_answer(question, k=k, where=where):
            pass
        return final

    # ------------------------------------------------------------ status

    def stats(self) -> dict[str, Any]:
        m = self.indexer.manifest
        by_kind: dict[str, int] = {}
        for record in m.files.values():
            by_kind[record.kind] = by_kind.get(record.kind, 0) + 1
        out: dict[str, Any] = {
            "documents_folder": str(self.settings.docs_dir),
            "data_folder": str(self.settings.db_dir),
            "files": len(m.files),
            "files_by_type": by_kind,
            "chunks": m.chunk_count(),
            "keyword_index_chunks": self.keywords.count(),
            "failed": {k: v.reason for k, v in sorted(m.failed.items())},
            "skipped": dict(sorted(m.skipped.items())),
            "last_indexed": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(m.last_indexed)) if m.last_indexed else None,
            "embedding_model": self.embedder.name,
            "retrieval_mode": self.settings.retrieval_mode if self.vectors is not None else "bm25 (embedding model unavailable)",
            "llm_backend": self.settings.llm_backend,
            "llm": self.model_name(),
        }
        if self.vectors is not None:
            vs = self.vectors.get_collection_stats()
            out["vector_store"] = vs["store"]
            out["vector_store_chunks"] = vs["chunks"]
            out["collection"] = vs["collection"]
        if self.warning:
            out["warning"] = self.warning
        return out

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
        if self._lock:
            self._lock.release()


class UploadRefused(DocqaError):
    pass


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
