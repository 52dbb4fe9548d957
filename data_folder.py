"""The data folder: its lock, whether it can be written, and opening the stores kept in it.

One docqa process at a time writes a data folder, so it is locked while a RAGSystem is
open. A store that cannot be opened (a corrupt index) is moved aside, never deleted, and
an empty one is opened in its place, to be rebuilt from the documents. Without a working
embedding model the vector store is a NullVectorStore and keyword search answers alone.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import time
from pathlib import Path
from typing import Any

from config import Settings
from embeddings import EmbeddingBackend
from errors import DocqaError, EmbeddingError, LockError, StoreError
from keyword_index import KeywordIndex
from vector_store import NullVectorStore, VectorSpace, VectorStore

log = logging.getLogger(__name__)

Vectors = VectorStore | NullVectorStore


class DataLock:
    """An exclusive lock on the data folder, so two docqa processes never write it at once."""

    def __init__(self, db_dir: Path) -> None:
        self.path = db_dir / "docqa.lock"
        self._fh: Any = None

    def acquire(self, wait_s: float = 0.0) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "a+")
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(self._fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._fh.seek(0)
                self._fh.truncate()
                self._fh.write(str(os.getpid()))
                self._fh.flush()
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    self._fh.seek(0)
                    holder = self._fh.read().strip() or "another process"
                    self._fh.close()
                    self._fh = None
                    raise LockError(
                        f"The data folder {self.path.parent} is in use by docqa (pid {holder}). "
                        "Stop that process, or give this one its own folder with --db DIR."
                    ) from None
                time.sleep(0.2)

    def release(self) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None


def ensure_writable(folder: Path) -> None:
    """Fail at start, with the fix, if the data folder cannot be written (read-only, no space)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-test-{os.getpid()}"
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise DocqaError(f"The disk holding the data folder {folder} is full — free some space, or set DB_DIR to another disk.") from exc
        raise DocqaError(
            f"The data folder {folder} is not writable ({exc.strerror or exc}) — fix its permissions, or set DB_DIR (or --db) to a writable folder."
        ) from exc


def vector_space(embedder: EmbeddingBackend) -> VectorSpace:
    """What the embedder's vectors are, for naming and labelling their collection."""
    return VectorSpace(embedder.name, embedder.dimension, embedder.fingerprint())


def open_vector_store(settings: Settings, embedder: EmbeddingBackend, collection_name: str | None = None) -> VectorStore:
    return VectorStore(settings, vector_space(embedder), collection_name)


def open_stores_or_rebuild(settings: Settings, embedder: EmbeddingBackend, vectors: Vectors | None = None) -> tuple[Vectors, KeywordIndex]:
    """The vector store (or `vectors`, when given) and the keyword index; a corrupt index is moved aside once."""
    try:
        return open_stores(settings, embedder, vectors)
    except StoreError as exc:
        if settings.chroma_host:
            raise
        move_index_aside(settings, exc)
        return open_stores(settings, embedder, vectors)


def open_stores(settings: Settings, embedder: EmbeddingBackend, vectors: Vectors | None = None) -> tuple[Vectors, KeywordIndex]:
    if vectors is None:
        try:
            embedder.verify()
            vectors = open_vector_store(settings, embedder)
        except EmbeddingError as exc:
            # Still useful: keyword search answers without the embedding model.
            vectors = NullVectorStore(str(exc))
            log.warning("Keyword search only: %s", exc)
    keywords = KeywordIndex(settings.keyword_dir)
    keywords.count()  # fails now, not mid-answer, if the table is unreadable
    return vectors, keywords


def move_index_aside(settings: Settings, exc: Exception) -> None:
    """A corrupt index is kept for inspection, never deleted, and rebuilt from the documents."""
    try:  # Chroma caches a client per path, broken one included
        from chromadb.api.client import SharedSystemClient

        SharedSystemClient.clear_system_cache()
    except Exception:
        pass
    stamp = time.strftime("%Y%m%d-%H%M%S")
    moved = []
    for path in (settings.chroma_dir, settings.keyword_dir, settings.manifest_path):
        if path.exists():
            aside = path.with_name(f"{path.name}.corrupt-{stamp}")
            path.replace(aside)
            moved.append(aside.name)
    log.error(
        "The index in %s could not be opened (%s). Moved it aside (%s) and rebuilding from the documents.",
        settings.db_dir, exc, ", ".join(moved) or "nothing to move",
    )
