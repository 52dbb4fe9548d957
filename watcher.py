"""Watch the documents folder and re-index in the background while the app serves.

watchfiles (Rust notify underneath) reports changes; it already debounces bursts such as a
folder being copied in. Each burst triggers one incremental sync, which re-checks the whole
folder by size and mtime, so a missed or coalesced event can never leave the index stale.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

log = logging.getLogger(__name__)


class FolderWatcher:
    def __init__(self, folder: str, on_change: Callable[[], Any], debounce_ms: int = 800) -> None:
        self.folder = folder
        self.on_change = on_change
        self.debounce_ms = debounce_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()

    def start(self) -> "FolderWatcher":
        self._thread = threading.Thread(target=self._run, name="docqa-watcher", daemon=True)
        self._thread.start()
        self.ready.wait(timeout=10)
        log.info("Watching %s for changes", self.folder)
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        from watchfiles import watch

        try:
            # yield_on_timeout gives an empty batch once the watch is live: that first one
            # triggers a catch-up sync for anything changed before watching began.
            for changes in watch(
                self.folder, debounce=self.debounce_ms, step=100, stop_event=self._stop,
                recursive=True, raise_interrupt=False, yield_on_timeout=True, rust_timeout=1000,
            ):
                if not changes:
                    if self.ready.is_set():
                        continue
                    self.ready.set()
                else:
                    log.info("%d change(s) in %s; updating the index", len(changes), self.folder)
                try:
                    self.on_change()
                except Exception:  # the watcher must outlive a failed sync
                    log.exception("Background indexing failed; will retry on the next change")
        except Exception:
            log.exception("Watching %s stopped", self.folder)
        finally:
            self.ready.set()
