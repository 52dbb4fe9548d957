"""Incremental indexing of the documents folder, driven by a manifest.

The manifest records each file's size, mtime, SHA-256 and chunk ids. On every start only
new or changed files are converted and embedded, deleted files are removed, and an
unchanged folder costs a stat per file. A file counts as indexed only once its chunks
are in both the vector store and the keyword index; the manifest is written atomically
afterwards, and a start-up check repairs any file a crash left half-done.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

from chunk_quality import screen_chunks
from config import Settings
from converter_workers import ConverterPool, may_pass_next_time, over_a_limit, worker_count
from discovery import discover
from doc_types import Chunk, ConvertedDocument, describe_extent
from document_converter import CONVERTER_VERSION, cached_conversion, conversion_variant, convert_document, file_sha256
from embeddings import EmbeddingBackend
from errors import StoreError, plain_reason
from index_records import FailedFile, FileRecord, IndexReport, Manifest, Pending, SyncStep
from keyword_index import KeywordIndex
from ocr import OcrReader, ocr_options
from text_splitter import split_document
from vector_store import NullVectorStore, VectorStore

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]  # (stage, done, total)
OnStep = Callable[[SyncStep], None]
EMBED_SLICE = 128
"""Chunks embedded per call: small enough that progress moves during a big file, large enough to batch."""


_CHANGED = {
    "converter": "the way this docqa version reads files",
    "chunk_size": "CHUNK_SIZE",
    "chunk_overlap": "CHUNK_OVERLAP",
    "code_chunk_size": "CODE_CHUNK_SIZE",
    "separators": "CHUNK_SEPARATORS",
    "low_info": "LOW_INFO_MAX_COMPRESSION or LOW_INFO_MAX_WORDLESS",
    "collection": "the embedding model",
}
"""What a changed part of Indexer.signature is called in the log line that says why everything is indexed again."""

MAX_TRIES = 3
"""A file whose conversion hung or crashed is tried again at later starts, as long as it is unchanged and
failed fewer times than this: the machine may have been busy or short of memory, and the file is lost to
the index until it converts. Within one run it is not tried again, so the live folder cannot loop on it."""


def discover_files(
    docs_dir: Path, max_bytes: int, known: dict[str, tuple[int, float]] | None = None
) -> tuple[dict[str, tuple[Path, os.stat_result]], dict[str, str]]:
    """Every file under docs_dir to index (source -> (path, stat)), and the files skipped with why (discovery.py)."""
    found = discover(docs_dir, max_bytes, known)
    return found.found, found.skipped


class Indexer:
    """Keeps the vector store and keyword index equal to a clean index of the documents folder.

    It embeds the chunks it stores with the embedder it is given; the vector store only keeps vectors.
    """

    def __init__(
        self, settings: Settings, vectors: VectorStore | NullVectorStore, keywords: KeywordIndex, embedder: EmbeddingBackend,
        wait_turn: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self.wait_turn = wait_turn or (lambda: None)
        """Called between files and between embedding slices; it blocks while an answer runs (index_status.AnswersFirst)."""
        self.vectors = vectors
        self.keywords = keywords
        self.embedder = embedder
        self.manifest = Manifest.load(settings.manifest_path)
        self._pool: ConverterPool | None = None
        options = ocr_options(settings, worker_count(settings.convert_workers))
        self.ocr = OcrReader(options) if options else None  # its engine loads only if a page needs it here
        self._on_step: OnStep | None = None
        self._step = SyncStep()
        self.limits = f"timeout {settings.convert_timeout_s:g} s, memory {settings.convert_memory_mb} MB"
        self._failed_here: set[str] = set()  # failed in this run: not tried again before the next start

    def _moved(self, **changes: Any) -> None:
        """Tell the caller of `sync` where it is now."""
        self._step = replace(self._step, **changes)
        if self._on_step:
            self._on_step(self._step)

    def signature(self) -> dict[str, Any]:
        """What, if changed, makes every existing chunk stale."""
        s = self.settings
        return {
            "converter": CONVERTER_VERSION,
            "chunk_size": s.chunk_size,
            "chunk_overlap": s.chunk_overlap,
            "code_chunk_size": s.code_chunk_size,
            "separators": list(s.chunk_separators),
            "low_info": [s.low_info_max_compression, s.low_info_max_wordless],
            "collection": getattr(self.vectors, "collection_name", None),
        }

    def sync(self, reindex: bool = False, progress: Progress | None = None, on_step: OnStep | None = None) -> IndexReport:
        """Bring the index in line with the folder; only new and changed files are embedded.

        `progress` hears (stage, done, total) per file; `on_step` gets a SyncStep with files,
        chunks and the file in hand, for a display that says more than a bar.
        """
        self._on_step, self._step = on_step, SyncStep()
        try:
            return self._sync(reindex, progress)
        finally:
            self._on_step = None

    def _sync(self, reindex: bool, progress: Progress | None) -> IndexReport:
        started = time.perf_counter()
        report = IndexReport()
        s = self.settings
        signature = self.signature()
        if self.manifest.signature and self.manifest.signature != signature and not reindex:
            changed = [_CHANGED.get(k, k) for k in signature if self.manifest.signature.get(k) != signature[k]]
            log.info("Rebuilding the index: %s changed since it was built", ", ".join(changed) or "its settings")
            reindex = True
        if reindex:
            self._reset()
        self.manifest.signature = signature
        self.repair_quick()

        indexed = {source: (r.size, r.mtime) for source, r in self.manifest.files.items()}
        found, skipped = discover_files(s.docs_dir, int(s.max_file_mb * 1e6), known=indexed)
        self.manifest.skipped = skipped
        report.skipped = dict(skipped)

        for source in sorted(set(self.manifest.files) - set(found)):
            self._remove(source)
            report.removed.append(source)
            log.info("Removed %s from the index (file deleted)", source)
        for source in set(self.manifest.failed) - set(found):
            del self.manifest.failed[source]

        try:
            self._index_files(self._changed(found, report), report, progress)
        except OSError as exc:
            # Whatever was stored before the error is recorded; the rest is redone next time.
            import errno

            if exc.errno == errno.ENOSPC:
                raise StoreError(f"The disk holding {s.db_dir} is full — free some space and index again; nothing already indexed is lost.") from exc
            raise StoreError(f"Cannot write the index in {s.db_dir}: {exc.strerror or exc} — check the folder, then index again.") from exc
        self.manifest.last_indexed = time.time() if (report.changed or not self.manifest.last_indexed) else self.manifest.last_indexed
        self.manifest.save()
        report.seconds = time.perf_counter() - started
        if report.changed or report.failed:
            log.info("Indexing done: %s", report.summary())
        return report

    def _changed(self, found: dict[str, tuple[Path, os.stat_result]], report: IndexReport) -> list[tuple[str, Path, os.stat_result, str]]:
        """The files to convert: new, or changed in content. A stat settles most; the rest are hashed."""
        todo: list[tuple[str, Path, os.stat_result, str]] = []
        for checked, (source, (path, st)) in enumerate(found.items()):
            record = self.manifest.files.get(source)
            failed = self.manifest.failed.get(source)
            variant = self._variant(source)  # OCR turned on or off: PDFs and images are read again
            if record and record.size == st.st_size and record.mtime == st.st_mtime and record.variant == variant:
                report.unchanged += 1
                continue
            if failed and failed.same_version(st.st_size, st.st_mtime, variant):
                if not self._try_again(source, failed):
                    report.failed[source] = plain_reason(failed.reason)
                    continue
            self._moved(files_done=checked, files_total=len(found), current=source)
            try:
                sha = file_sha256(path)
            except OSError as exc:
                self._fail(source, f"cannot be read: {exc.strerror or exc}", st, report)
                continue
            if record and record.sha256 == sha and record.variant == variant:
                record.mtime, record.size = st.st_mtime, st.st_size  # touched, not changed
                report.unchanged += 1
                continue
            todo.append((source, path, st, sha))
        return todo

    # ------------------------------------------------------------ internals

    def _variant(self, source: str) -> str:
        return conversion_variant(Path(source), self.ocr)

    def _reset(self) -> None:
        self.vectors.reset()
        self.keywords.reset()
        self.manifest.files.clear()
        self.manifest.failed.clear()
        self.manifest.save()

    def _remove(self, source: str) -> None:
        self.vectors.delete_source(source)
        self.keywords.delete_source(source)
        self.manifest.files.pop(source, None)
        self.manifest.save()

    def _try_again(self, source: str, failed: FailedFile) -> bool:
        """Whether an unchanged file that failed is converted again now: never for what it holds (a broken
        PDF); after a limit was changed, as its reason asks; after a hang or crash, at a later start."""
        if not over_a_limit(failed.reason):
            return False
        if failed.limits != self.limits:
            return True
        return may_pass_next_time(failed.reason) and failed.tries < MAX_TRIES and source not in self._failed_here

    def _fail(self, source: str, reason: str, st: os.stat_result | None, report: IndexReport) -> None:
        reason = plain_reason(reason)  # it is shown to users: their words, no server paths
        log.warning("Skipped %s: %s", source, reason)
        report.failed[source] = reason
        size, mtime = (st.st_size, st.st_mtime) if st else (0, 0.0)
        variant = self._variant(source)
        before = self.manifest.failed.get(source)
        again = before is not None and before.same_version(size, mtime, variant) and before.limits == self.limits
        tries = before.tries + 1 if before is not None and again else 1
        self.manifest.failed[source] = FailedFile(source, reason, size, mtime, variant, self.limits, tries)
        self._failed_here.add(source)
        if source in self.manifest.files:  # a file that used to work and now fails: drop its stale chunks
            self._remove(source)

    def _converted(self, todo: list[tuple[str, Path, os.stat_result, str]], report: IndexReport) -> Iterator[tuple[str, ConvertedDocument | None, str | None]]:
        """Cached conversions straight away; the rest from the worker pool, as they finish."""
        s = self.settings
        jobs = []
        for source, path, _, sha in todo:
            if cached_conversion(s.cache_dir, sha, conversion_variant(path, self.ocr)) is not None:
                yield source, convert_document(path, source, s.cache_dir, sha, self.ocr), None
            else:
                jobs.append((source, path, sha))
        if not jobs:
            return
        if self._pool is None:
            self._pool = ConverterPool(
                s.convert_workers, s.convert_timeout_s, s.convert_memory_mb, s.cache_dir, ocr=self.ocr.options if self.ocr else None,
                wait_turn=self.wait_turn,
            )
        t = time.perf_counter()
        for result in self._pool.convert(jobs):
            report.timed("convert", t)
            yield result
            t = time.perf_counter()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _index_files(self, todo: list[tuple[str, Path, os.stat_result, str]], report: IndexReport, progress: Progress | None) -> None:
        total = len(todo)
        stats = {source: (st, sha) for source, _, st, sha in todo}
        waiting = list(stats)  # in the order the workers take them: the first is the one in hand
        self._moved(stage="indexing", files_done=0, files_total=total, current=waiting[0] if waiting else "")
        batch: list[Pending] = []
        batch_chunks = 0
        for done, (source, doc, error) in enumerate(self._converted(todo, report), start=1):
            st, sha = stats[source]
            t = time.perf_counter()
            chunks = self._chunks(doc) if doc else []
            report.timed("split", t)
            waiting.remove(source)
            self._moved(files_done=done, chunks_total=self._step.chunks_total + len(chunks), current=waiting[0] if waiting else source)
            if doc is None or not chunks:
                self._fail(source, error or self._nothing_left(doc), st, report)
            else:
                batch.append(Pending(source, st.st_size, st.st_mtime, sha, doc, chunks))
                batch_chunks += len(chunks)
                if batch_chunks >= 256:
                    self._store_batch(batch, report)
                    batch, batch_chunks = [], 0
            if progress:  # failed files count as done too, or the bar stops short of the total
                progress("files", done, total)
        self._store_batch(batch, report)

    def add_converted(self, docs: list[ConvertedDocument], progress: Progress | None = None) -> IndexReport:
        """Index documents that did not come from the folder (evaluation corpora), same path as files."""
        report = IndexReport()
        batch: list[Pending] = []
        count = 0
        for done, doc in enumerate(docs, start=1):
            t = time.perf_counter()
            chunks = self._chunks(doc)
            report.timed("split", t)
            batch.append(Pending(doc.source, 0, 0.0, "", doc, chunks))
            count += len(chunks)
            if count >= 512:
                self._store_batch(batch, report, quiet=True)
                batch, count = [], 0
                if progress:
                    progress("documents", done, len(docs))
        self._store_batch(batch, report, quiet=True)
        if progress:
            progress("documents", len(docs), len(docs))
        return report

    def _chunks(self, doc: ConvertedDocument) -> list[Chunk]:
        """The document's chunks worth indexing (chunk_quality.py); what was left out goes into its notes."""
        s = self.settings
        chunks = split_document(doc, s.chunk_size, s.chunk_overlap, s.chunk_separators, s.code_chunk_size)
        screened = screen_chunks(chunks, s.low_info_max_compression, s.low_info_max_wordless)
        notes = screened.notes(s.chunk_size, s.chunk_overlap)
        if notes:
            doc.notes.extend(notes)
            log.info("%s: %s", doc.source, "; ".join(notes))
        return screened.kept

    @staticmethod
    def _nothing_left(doc: ConvertedDocument | None) -> str:
        leftout = [n for n in (doc.notes if doc else []) if n.startswith("low-information")]
        return f"no text worth indexing: {leftout[-1]}" if leftout else "no text to index"

    def _store_batch(self, batch: list[Pending], report: IndexReport, quiet: bool = False) -> None:
        if not batch:
            return
        all_chunks = [c for p in batch for c in p.chunks]
        embeddings = self._embed(all_chunks, report) if self.vectors.available else []
        t = time.perf_counter()
        # Old chunks of changed files go first; then both stores get the batch; only then
        # does the manifest say the files are indexed.
        stale: set[str] = set()
        for p in batch:
            old = self.manifest.files.get(p.source)
            if old:
                stale |= set(old.chunk_ids) - {c.id for c in p.chunks}
        if stale:
            self.vectors.delete_ids(stale)
            self.keywords.delete_ids(stale)
        self.vectors.add_chunks(all_chunks, embeddings)
        self.keywords.add_chunks(all_chunks)
        now = time.time()
        for p in batch:
            old = self.manifest.files.get(p.source)
            self.manifest.files[p.source] = FileRecord(
                source=p.source, size=p.size, mtime=p.mtime, sha256=p.sha256, kind=p.doc.kind,
                title=p.doc.title, chunk_ids=[c.id for c in p.chunks], indexed_at=now, notes=list(p.doc.notes),
                extent=describe_extent(p.doc, p.chunks), variant=self._variant(p.source),
            )
            self.manifest.failed.pop(p.source, None)
            (report.updated if old else report.added).append(p.source)
            report.chunks_embedded += len(p.chunks)
            if not quiet:
                log.info("Indexed %s: %d chunks", p.source, len(p.chunks))
        self.manifest.save()
        report.timed("store", t)
        if not self.vectors.available:
            self._moved(chunks_done=self._step.chunks_done + len(all_chunks))

    def _embed(self, chunks: list[Chunk], report: IndexReport) -> list[list[float]]:
        """The chunks' vectors, a slice at a time, so the progress shown moves within a big file."""
        vectors: list[list[float]] = []
        for start in range(0, len(chunks), EMBED_SLICE):
            self.wait_turn()
            part = chunks[start : start + EMBED_SLICE]
            t = time.perf_counter()
            vectors += self.embedder.embed_documents([c.embedding_text() for c in part])
            report.timed("embed", t)
            spent = time.perf_counter() - t
            self._moved(chunks_done=self._step.chunks_done + len(part), embed_s=self._step.embed_s + spent, current=part[-1].source)
        return vectors

    # ------------------------------------------------------------ consistency

    def repair_quick(self) -> None:
        """At start: if counts disagree (a crash mid-write), repair file by file."""
        expected = self.manifest.chunk_count()
        counts = [self.keywords.count()]
        if self.vectors.available:
            counts.append(self.vectors.count())
        if all(c == expected for c in counts):
            return
        problems = self.check()
        log.warning("Index and manifest disagree (%d problems); repairing", len(problems))
        self.repair(problems)

    def check(self) -> list[dict[str, Any]]:
        """Every file whose chunk ids differ between manifest, vector store and keyword index."""
        manifest_ids = {k: set(v.chunk_ids) for k, v in self.manifest.files.items()}
        keyword_ids = self.keywords.ids_by_source()
        stores = {"keyword index": keyword_ids}
        if self.vectors.available:
            stores["vector store"] = self.vectors.ids_by_source()
        problems = []
        for name, by_source in stores.items():
            for source in sorted(set(manifest_ids) | set(by_source)):
                want, have = manifest_ids.get(source, set()), by_source.get(source, set())
                if want != have:
                    problems.append({
                        "source": source, "store": name,
                        "missing": len(want - have), "extra": len(have - want),
                        "in_manifest": source in manifest_ids,
                    })
        return problems

    def repair(self, problems: list[dict[str, Any]]) -> list[str]:
        """Drop the affected files' chunks everywhere and forget them, so the next sync re-indexes them."""
        sources = sorted({p["source"] for p in problems})
        keyword_ids = self.keywords.ids_by_source()
        vector_ids = self.vectors.ids_by_source()
        for source in sources:
            ids = keyword_ids.get(source, set()) | vector_ids.get(source, set())
            ids |= set(self.manifest.files.get(source, FileRecord(source, 0, 0, "")).chunk_ids)
            self.vectors.delete_ids(ids)
            self.keywords.delete_ids(ids)
            self.manifest.files.pop(source, None)
        self.manifest.save()
        return sources
