"""Convert files in worker processes, in parallel, each under a time and memory limit.

A hostile or pathological file (a PDF bomb, a page that never finishes rendering, a
corrupt DOCX that explodes in memory) can only take down its worker: the file is reported
as failed with the reason, the pool is rebuilt, and indexing goes on. Workers are spawned,
not forked, so they never inherit the parent's torch threads or open stores.

OCR runs here too, under the same limits: each worker keeps one OCR reader, whose engine
loads on the first page that needs it and then serves every later file of that worker.
A scanned book takes minutes, so while OCR reads it, the time limit applies to each page:
the worker touches a heartbeat file after every page, and a file whose heartbeat is fresh
is not hung.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Callable, Iterable, Iterator

from doc_types import ConvertedDocument
from document_converter import convert_document
from errors import ConversionError
from ocr import OcrOptions, OcrReader

log = logging.getLogger(__name__)

Job = tuple[str, Path, str]  # (source, path, sha256)
Result = tuple[str, ConvertedDocument | None, str | None]  # (source, document, error)

_worker_ocr: OcrReader | None = None
"""This worker's OCR reader (None: OCR is off); set by _init_worker, kept for the worker's life."""
_worker_beats: Path | None = None
"""The folder of heartbeat files, one per file being converted, named by its SHA-256."""


OUT_OF_MEMORY = "needs more memory than the conversion limit allows (CONVERT_MEMORY_MB)"
CRASHED = "the converter crashed on this file (out of memory or a library crash; CONVERT_MEMORY_MB is its memory limit); skipped"
TIMEOUT_SETTING = "CONVERT_TIMEOUT_S"


def over_a_limit(reason: str) -> bool:
    """Whether a file failed on the pool's limits (time, memory) or crashed its worker, rather than
    for what it holds: raising CONVERT_TIMEOUT_S or CONVERT_MEMORY_MB, as the reason says, may let it in."""
    return f"({TIMEOUT_SETTING})" in reason or OUT_OF_MEMORY in reason or CRASHED in reason


def may_pass_next_time(reason: str) -> bool:
    """Whether the same file may convert next time with the same limits: a hang or a crash can be the
    machine's (busy, or short of memory for all its processes), not the file's; a memory limit hit is not."""
    return f"({TIMEOUT_SETTING})" in reason or CRASHED in reason


def _init_worker(memory_mb: int, ocr: OcrOptions | None = None, beats: Path | None = None) -> None:
    """In each worker: a memory ceiling, exit when the parent dies (even by SIGKILL), and the OCR reader."""
    import threading
    import time

    global _worker_ocr, _worker_beats
    _worker_ocr = OcrReader(ocr) if ocr is not None else None
    _worker_beats = beats
    if ocr is not None:
        _fewer_malloc_arenas()
    parent = os.getppid()

    def watch_parent() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    if memory_mb > 0:
        import resource

        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _fewer_malloc_arenas() -> None:
    """Two malloc arenas, not one per thread: each reserves 64 MB of address space, and the memory limit
    counts address space. The OCR engine's threads took a Think Python page at 200 dpi from 1.26 GB of
    address space to 1.7 GB, over the 2 GB limit with PyMuPDF beside it (std::bad_alloc on every page)."""
    try:
        import ctypes

        M_ARENA_MAX = -8
        ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, 2)
    except (OSError, AttributeError):  # not glibc (macOS): no per-thread arenas to limit
        pass


def _convert(path: Path, source: str, cache_dir: Path | None, sha: str) -> tuple[str | None, str | None]:
    """In the worker: the converted document as JSON, or the reason it failed."""
    if _worker_ocr is not None and _worker_beats is not None:
        beat = _worker_beats / sha
        beat.touch()  # started: the worker's start-up (imports, a spawn) is not the file's fault
        _worker_ocr.on_page = beat.touch
    try:
        return convert_document(path, source, cache_dir, sha, _worker_ocr).to_json(), None
    except ConversionError as exc:
        return None, str(exc)
    except MemoryError:
        return None, OUT_OF_MEMORY
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror or exc}"
    except Exception as exc:  # a converter bug must cost one file, not the run
        return None, f"conversion failed: {type(exc).__name__}: {exc}"


def worker_count(workers: int = 0) -> int:
    """The processes converting at once: `workers`, or 0 for min(cores, 4)."""
    return workers or max(1, min(4, os.cpu_count() or 1))


class ConverterPool:
    def __init__(
        self, workers: int = 0, timeout_s: float = 120.0, memory_mb: int = 2048, cache_dir: Path | None = None,
        convert_fn: Callable[..., tuple[str | None, str | None]] | None = None, ocr: OcrOptions | None = None,
        wait_turn: Callable[[], None] | None = None,
    ) -> None:
        self.convert_fn = convert_fn or _convert
        self.wait_turn = wait_turn
        """Called before each file is handed to a worker; it blocks while the cores are wanted elsewhere (an answer)."""
        self.ocr = ocr
        self._beats: Path | None = None
        self.workers = worker_count(workers)
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.cache_dir = cache_dir
        self._pool: ProcessPoolExecutor | None = None

    def _start(self) -> ProcessPoolExecutor:
        if self._pool is None:
            if self.ocr is not None and self._beats is None:
                import shutil
                import tempfile
                import weakref

                self._beats = Path(tempfile.mkdtemp(prefix="docqa-ocr-beats-"))
                # close() runs this; it also runs at exit, for an owner that never calls close().
                self._remove_beats = weakref.finalize(self, shutil.rmtree, self._beats, True)
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker,
                initargs=(self.memory_mb, self.ocr, self._beats),
            )
        return self._pool

    def _kill(self) -> None:
        """Stop every worker now, hung ones included; the next job starts a fresh pool."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        for proc in list(getattr(pool, "_processes", {}).values()):
            try:
                proc.kill()
            except Exception:
                pass
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._beats is not None:
            self._remove_beats()
            self._beats = None

    def _reading_pages(self, job: Job) -> bool:
        """Whether OCR finished a page of this file within the time limit: slow, not hung."""
        if self._beats is None:
            return False
        import time

        try:
            return time.time() - (self._beats / job[2]).stat().st_mtime < self.timeout_s
        except OSError:
            return False

    def convert(self, jobs: Iterable[Job]) -> Iterator[Result]:
        """Convert every job; yields results as they finish (not in order)."""
        suspects: list[Job] = []
        yield from self._run_parallel(list(jobs), suspects)
        # A crash breaks the whole pool and every job in flight with it: run those again one
        # at a time, so only the file that really crashes its worker is reported.
        for job in suspects:
            yield from self._run_parallel([job], None)

    def _run_parallel(self, pending: list[Job], suspects: list[Job] | None) -> Iterator[Result]:
        """Keep each worker busy with one file, handing out the next only when one is done.

        Handing out one file at a time (not the whole list) lets `wait_turn` hold the files not
        yet started while an answer runs; the worker's next file is handed out before the
        results are yielded, so conversion goes on while the caller embeds.
        """
        queue = list(pending)
        while queue:
            pool = self._start()
            running: dict[Future, Job] = {}
            self._hand_out(pool, queue, running)
            while running:
                done, _ = wait(running, timeout=self.timeout_s, return_when=FIRST_COMPLETED)
                if not done:
                    # Nothing finished within the limit: the jobs in flight are hung, unless OCR is reading their pages.
                    in_flight = [j for f, j in running.items() if f.running()]
                    if in_flight and all(self._reading_pages(j) for j in in_flight):
                        continue
                    stuck = [j for j in in_flight if not self._reading_pages(j)] or list(running.values())
                    queue[:0] = [j for j in running.values() if j not in stuck]
                    self._kill()
                    for source, _, _ in stuck:
                        log.warning("Skipped %s: conversion took longer than %.0fs", source, self.timeout_s)
                        yield source, None, f"conversion took longer than {self.timeout_s:.0f}s ({TIMEOUT_SETTING}); skipped"
                    break
                finished = [(future, running.pop(future)) for future in done]
                crashed = [job for future, job in finished if isinstance(future.exception(), BrokenProcessPool)]
                if not crashed:
                    self._hand_out(pool, queue, running)
                for future, job in finished:
                    if job not in crashed:
                        yield self._result(future, job)
                if crashed:
                    self._kill()
                    if suspects is None:  # already alone in its pool: this file is the culprit
                        for source, _, _ in crashed:
                            log.warning("Skipped %s: the converter crashed", source)
                            yield source, None, CRASHED
                    else:
                        suspects.extend(crashed + list(running.values()))
                    break

    def _hand_out(self, pool: ProcessPoolExecutor, queue: list[Job], running: dict[Future, Job]) -> None:
        while queue and len(running) < self.workers:
            if self.wait_turn is not None:
                self.wait_turn()
            source, path, sha = job = queue.pop(0)
            running[pool.submit(self.convert_fn, path, source, self.cache_dir, sha)] = job

    @staticmethod
    def _result(future: Future, job: Job) -> Result:
        try:
            raw, error = future.result()
        except MemoryError:
            return job[0], None, f"{OUT_OF_MEMORY}; skipped"
        except Exception as exc:
            return job[0], None, f"conversion failed: {type(exc).__name__}: {exc}"
        return job[0], (ConvertedDocument.from_json(raw) if raw else None), error
