"""What the index is doing and holds, as the front ends read it: plain frozen snapshots,
and the views of the manifest that `RAGSystem.documents` and `RAGSystem.stats` show."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from discovery import skipped_by_type

if TYPE_CHECKING:
    from indexer import Manifest


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


def document_statuses(m: Manifest) -> list[DocumentStatus]:
    """Every file the last sync looked at, by name: indexed with its chunks, or failed or skipped with why."""
    found = {source: DocumentStatus(source, "skipped", reason=why) for source, why in list(m.skipped.items())}
    found.update((source, DocumentStatus(source, "failed", reason=f.reason)) for source, f in list(m.failed.items()))
    found.update(
        (source, DocumentStatus(source, "indexed", chunks=len(r.chunk_ids), reason="; ".join(r.notes))) for source, r in list(m.files.items())
    )
    return [found[source] for source in sorted(found)]


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
        "failed": {k: v.reason for k, v in sorted(list(m.failed.items()))},
        "skipped": dict(sorted(list(m.skipped.items()))),
        "skipped_by_type": skipped_by_type(m.skipped),
        "notes": {k: "; ".join(r.notes) for k, r in sorted(list(m.files.items())) if r.notes},
        "last_indexed": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(m.last_indexed)) if m.last_indexed else None,
    }
