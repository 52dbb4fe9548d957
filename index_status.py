"""What the index is doing and holds, as the front ends read it: plain frozen snapshots,
the tracker that keeps the indexer's snapshot current, and the views of the manifest that
`RAGSystem.documents` and `RAGSystem.stats` show (the file table included, one owner for
both front ends)."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from discovery import file_type, skipped_by_type
from errors import plain_reason

if TYPE_CHECKING:
    from index_records import Manifest, SyncStep

log = logging.getLogger(__name__)

MAX_PAUSE_S = 600.0
"""The longest background indexing waits for answers at one time, so an answer stream a client
abandoned without closing cannot stop indexing for good."""


@dataclass(frozen=True)
class IndexStatus:
    """What the background indexer is doing: a snapshot, replaced as a sync moves on."""

    state: Literal["idle", "indexing", "failed"] = "idle"
    done: int = 0
    """Files done of `total`: checked for changes while `stage` is "checking", then converted."""
    total: int = 0
    started: float | None = None
    finished: float | None = None
    """When the last sync ended; kept while the next one runs."""
    summary: str | None = None
    """The last finished sync's report in one line."""
    last_change: str | None = None
    last_change_at: float | None = None
    """The report and end of the last sync that added, updated or removed a file: a sync that
    follows it and finds nothing new (the folder watcher after an upload) leaves them as they are."""
    error: str | None = None
    stage: Literal["looking", "checking", "indexing"] = "looking"
    """Walking the folder, hashing changed files, or converting and embedding them."""
    chunks_done: int = 0
    chunks_total: int = 0
    """Chunks embedded, of those found so far; the total grows until every file is converted."""
    current: str = ""
    """The file in hand."""
    embed_s: float = 0.0
    indexing_since: float | None = None
    """When the "indexing" stage began: the rates behind `seconds_left` are measured from it."""
    paused: bool = False
    """Waiting for an answer to finish (`AnswersFirst`)."""

    def chunks_expected(self) -> int | None:
        """The chunks this sync will have embedded at its end, as far as can be told: those found so far, and
        for the files not read yet as many per file as so far. None until a file with chunks is read. Above
        `chunks_done` while a file is unread or a chunk unembedded, so a bar over it is full only at the end."""
        if self.stage != "indexing" or not self.done or not self.chunks_total:
            return None
        files_left = max(self.total - self.done, 0)
        return self.chunks_total + math.ceil(files_left * self.chunks_total / self.done)

    def seconds_left(self, now: float | None = None) -> float | None:
        """A guess at the time this sync still needs, from the rates so far; None until there is one.

        Reading a file and embedding its chunks cost differently, so each is timed on its own:
        files left at the seconds per file so far, plus chunks still to embed (those found,
        and as many per file again for the files left) at the seconds per chunk so far.
        """
        if self.state != "indexing" or self.stage != "indexing" or not self.done or self.indexing_since is None:
            return None
        elapsed = (time.time() if now is None else now) - self.indexing_since
        files_left = max(self.total - self.done, 0)
        per_file = max(elapsed - self.embed_s, 0.0) / self.done
        chunks_left = max(self.chunks_total - self.chunks_done, 0) + files_left * self.chunks_total / self.done
        per_chunk = self.embed_s / self.chunks_done if self.chunks_done else 0.0
        return files_left * per_file + chunks_left * per_chunk


class IndexTracker:
    """Keeps one RAGSystem's IndexStatus: begun, moved on by the indexer's steps, then ended.

    Each change replaces the snapshot whole, so a reader on another thread (the UI's poll)
    never sees half of one.
    """

    def __init__(self) -> None:
        self.status = IndexStatus()

    def begin(self) -> None:
        self.status = replace(
            self.status, state="indexing", stage="looking", done=0, total=0, chunks_done=0, chunks_total=0,
            current="", embed_s=0.0, started=time.time(), indexing_since=None, paused=False,
        )

    def step(self, step: SyncStep) -> None:
        stage: Literal["checking", "indexing"] = "indexing" if step.stage == "indexing" else "checking"
        since = self.status.indexing_since if self.status.stage == "indexing" else time.time()
        self.status = replace(
            self.status, stage=stage, done=step.files_done, total=step.files_total, chunks_done=step.chunks_done,
            chunks_total=step.chunks_total, current=step.current, embed_s=step.embed_s,
            indexing_since=since if stage == "indexing" else None,
        )

    def finish(self, summary: str, changed: bool = True) -> None:
        now, last = time.time(), self.status
        self.status = replace(
            last, state="idle", finished=now, summary=summary, error=None, current="",
            last_change=summary if changed else last.last_change, last_change_at=now if changed else last.last_change_at, paused=False,
        )

    def fail(self, error: str) -> None:
        self.status = replace(self.status, state="failed", finished=time.time(), error=error, current="", paused=False)

    def pause(self, paused: bool) -> None:
        self.status = replace(self.status, paused=paused)


class AnswersFirst:
    """Background indexing gives the cores to answers.

    llama.cpp's threads run 3-10x slower when another process takes one of two cores, and
    converting and embedding files takes them. So each answer holds `answering()` while it
    runs, and the indexer calls `wait_turn()` between files and between embedding slices:
    it waits there while any answer is running, then goes on where it was.
    """

    def __init__(self, on_pause: Callable[[bool], None] | None = None, max_pause_s: float = MAX_PAUSE_S) -> None:
        self._answering = 0
        self._changed = threading.Condition()
        self._on_pause = on_pause
        self.max_pause_s = max_pause_s

    @contextmanager
    def answering(self) -> Iterator[None]:
        with self._changed:
            self._answering += 1
        try:
            yield
        finally:
            with self._changed:
                self._answering -= 1
                self._changed.notify_all()

    def wait_turn(self) -> None:
        """Return at once when no answer runs; else wait until none does (at most `max_pause_s`)."""
        with self._changed:
            if not self._answering:
                return
            log.info("Indexing paused while an answer is generated")
            if self._on_pause:
                self._on_pause(True)
            resumed = self._changed.wait_for(lambda: not self._answering, timeout=self.max_pause_s)
            if self._on_pause:
                self._on_pause(False)
            if resumed:
                log.info("Indexing resumed")
            else:
                log.warning("Indexing resumed: an answer has held it for %.0f s", self.max_pause_s)


@dataclass(frozen=True)
class DocumentStatus:
    """One file of the documents folder as the index sees it."""

    source: str
    state: Literal["indexed", "failed", "skipped"]
    chunks: int = 0
    reason: str = ""
    """Why it failed or was skipped, in the user's words and without server paths (errors.plain_reason)."""
    kind: str = ""
    """The converter's name for its type once indexed (pdf, markdown, code), else its extension."""
    extent: str = ""
    """"12 pages", "310 lines": doc_types.describe_extent; "" when unknown."""
    indexed_at: float | None = None

    @property
    def removable(self) -> bool:
        """A file, not a skipped folder: the Remove list offers it whatever became of it."""
        return not self.source.endswith("/")

    def status_text(self) -> str:
        return self.state if self.state == "indexed" else f"{self.state}: {self.reason}"


@dataclass(frozen=True)
class IndexCheck:
    """What `RAGSystem.check` found: the files whose chunks disagree between the stores, and those re-indexed."""

    problems: list[dict[str, Any]]
    repaired: list[str]

    @property
    def consistent(self) -> bool:
        return not self.problems


def document_statuses(m: Manifest) -> list[DocumentStatus]:
    """Every file the last sync looked at, by name: indexed with its chunks, or failed or skipped with why."""
    found = {
        source: DocumentStatus(source, "skipped", reason=plain_reason(why), kind=kind_of(source))
        for source, why in list(m.skipped.items())
    }
    found.update(
        (source, DocumentStatus(source, "failed", reason=plain_reason(f.reason), kind=kind_of(source)))
        for source, f in list(m.failed.items())
    )
    found.update(
        (source, DocumentStatus(
            source, "indexed", chunks=len(r.chunk_ids), kind=r.kind or kind_of(source), extent=r.extent,
            indexed_at=r.indexed_at or None, reason="; ".join(r.notes),
        ))
        for source, r in list(m.files.items())
    )
    return [found[source] for source in sorted(found)]


def kind_of(source: str) -> str:
    return "folder" if source.endswith("/") else file_type(source)


DOCUMENT_COLUMNS = ("Name", "Type", "Pages or lines", "Chunks", "Indexed at", "Status")
"""The file table's columns, the same in the web UI and `main.py stats --files`."""


def document_rows(documents: list[DocumentStatus]) -> list[tuple[str, ...]]:
    """The file table as text, a row per file in DOCUMENT_COLUMNS order; the front ends escape and lay it out."""
    return [
        (
            d.source, d.kind, d.extent or "-", str(d.chunks) if d.state == "indexed" else "-",
            time.strftime("%Y-%m-%d %H:%M", time.localtime(d.indexed_at)) if d.indexed_at else "-", d.status_text(),
        )
        for d in documents
    ]


def manifest_stats(m: Manifest, keyword_index_chunks: int) -> dict[str, Any]:
    """The index's counts as `main.py stats` shows them, in that order."""
    by_kind: dict[str, int] = {}
    for record in list(m.files.values()):
        by_kind[record.kind] = by_kind.get(record.kind, 0) + 1
    return {
        "files": len(m.files),
        "files_by_type": by_kind,
        "chunks": m.chunk_count(),
        "keyword_index_chunks": keyword_index_chunks,
        "failed": {k: plain_reason(v.reason) for k, v in sorted(list(m.failed.items()))},
        "skipped": {k: plain_reason(v) for k, v in sorted(list(m.skipped.items()))},
        "skipped_by_type": skipped_by_type(m.skipped),
        "notes": {k: "; ".join(r.notes) for k, r in sorted(list(m.files.items())) if r.notes},
        "last_indexed": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(m.last_indexed)) if m.last_indexed else None,
    }
