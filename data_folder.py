"""The data folder: its lock, whether it can be written, and opening the stores kept in it.

One docqa process at a time writes a data folder; others may read it beside the writer
(see DataLock). A store that cannot be opened (a corrupt index) is moved aside, never deleted, and
an empty one is opened in its place, to be rebuilt from the documents. Without a working
embedding model the vector store is a NullVectorStore and keyword search answers alone.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from config import Settings
from embeddings import EmbeddingBackend
from errors import DocqaError, EmbeddingError, LockError, StoreError
from keyword_index import KeywordIndex
from vector_store import NullVectorStore, VectorSpace, VectorStore

log = logging.getLogger(__name__)

Vectors = VectorStore | NullVectorStore


LockMode = Literal["write", "read", "none"]


class DataLock:
    """The data folder's two locks: one writer at a time, and readers that never see the index half changed.

    A writer (serve, index, check --repair) holds docqa.lock for as long as it runs, so a
    second writer is refused with the holder's pid. Each change to the index (a sync, a
    repair) holds index.lock exclusively; a reader (stats, check, ask beside a running
    server) holds index.lock shared for as long as it runs. So a reader waits for a sync
    under way to end, and the writer's next sync waits for the reader: what the reader
    counts and compares is one state of the index. "none" takes neither (tests, tools).
    """

    def __init__(self, db_dir: Path, mode: LockMode | bool = "write") -> None:
        self.path = db_dir / "docqa.lock"
        self.index_path = db_dir / "index.lock"
        self.mode: LockMode = "write" if mode is True else "none" if mode is False else mode
        self._fh: Any = None
        self._index_fh: Any = None

    @property
    def reading(self) -> bool:
        return self.mode == "read"

    def acquire(self, wait_s: float = 0.0) -> None:
        """Take the lock of this mode: the writer's within `wait_s` or a LockError; a reader's once no sync runs."""
        if self.mode == "none":
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.reading:
            self._index_fh = open(self.index_path, "a+")
            _flock(self._index_fh, fcntl.LOCK_SH, f"docqa ({self.holder()}) is updating the index; waiting for it to finish")
            return
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
                    holder = self.holder()
                    self._fh.close()
                    self._fh = None
                    raise LockError(
                        f"The data folder {self.path.parent} is in use by docqa ({holder}), which keeps its index up to date: "
                        "`stats`, `check` and `ask` work beside it, but indexing or repairing needs it stopped first. "
                        "Stop that process, or give this one its own folder with --db DIR."
                    ) from None
                time.sleep(0.2)

    def holder(self) -> str:
        """Who holds the writer's lock, as "pid 123"."""
        try:
            pid = self.path.read_text().strip()
        except OSError:
            pid = ""
        return f"pid {pid}" if pid else "another process"

    @contextmanager
    def changing(self) -> Iterator[None]:
        """Around every change to the index: waits for readers to finish, keeps new ones out until done."""
        if self.reading:
            raise LockError(
                f"This docqa only reads the data folder {self.path.parent}: docqa ({self.holder()}) keeps the index up to date. "
                "Stop it to index or repair from here."
            )
        if self.mode == "none":
            yield
            return
        with open(self.index_path, "a+") as fh:
            _flock(fh, fcntl.LOCK_EX, "a docqa command is reading the index (stats, check or ask); waiting for it to finish")
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def release(self) -> None:
        for fh in (self._fh, self._index_fh):
            if fh is not None:
                fcntl.flock(fh, fcntl.LOCK_UN)
                fh.close()
        self._fh = self._index_fh = None


def _flock(fh: Any, kind: int, waiting: str) -> None:
    """Take a lock, saying why when it has to wait for it."""
    try:
        fcntl.flock(fh, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        log.info("%s…", waiting[0].upper() + waiting[1:])
        fcntl.flock(fh, kind)


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


def open_stores_or_rebuild(
    settings: Settings, embedder: EmbeddingBackend, vectors: Vectors | None = None, read_only: bool = False
) -> tuple[Vectors, KeywordIndex]:
    """The vector store (or `vectors`, when given) and the keyword index; a corrupt index is moved aside once.

    A reader never moves the index aside: the writer has it open, and rebuilding is its job.
    """
    try:
        return open_stores(settings, embedder, vectors, read_only)
    except StoreError as exc:
        if settings.chroma_host or read_only:
            raise
        move_index_aside(settings, exc)
        return open_stores(settings, embedder, vectors)


def open_stores(
    settings: Settings, embedder: EmbeddingBackend, vectors: Vectors | None = None, read_only: bool = False
) -> tuple[Vectors, KeywordIndex]:
    if vectors is None:
        try:
            embedder.verify()
            vectors = open_vector_store(settings, embedder)
        except EmbeddingError as exc:
            # Still useful: keyword search answers without the embedding model.
            vectors = NullVectorStore(str(exc))
            log.warning("Keyword search only: %s", exc)
    keywords = KeywordIndex(settings.keyword_dir, read_only=read_only)
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
