"""The documents folder: what may be written into it, and by what name.

Uploads get a safe, unused name and are copied in whole (a partial copy never shows up as a
document); removal stays inside the folder; a watcher reports changes. Discovery (which files
are indexed) is in discovery.py; this module only writes, deletes and watches.
"""

from __future__ import annotations

import logging
import re
import shutil
import unicodedata
from pathlib import Path
from typing import Any, Callable

from config import Settings
from document_converter import is_supported, size_limited
from errors import DocqaError
from watcher import FolderWatcher

log = logging.getLogger(__name__)


class UploadRefused(DocqaError):
    pass


def sanitize_filename(name: str) -> str:
    """A plain file name from whatever a browser sent: no folders, no control characters."""
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


def add_upload(settings: Settings, name: str, data_path: Path) -> str:
    """Copy an uploaded file into the documents folder under a safe, unused name; returns it.

    Only the base name is kept (no path traversal), odd characters are replaced, the
    type must be one docqa indexes, the file must not be empty nor over its size limit
    (MAX_FILE_MB, or MAX_UPLOAD_MB for a PDF or an image), and an existing file is never overwritten.
    """
    safe = sanitize_filename(name)
    if not is_supported(Path(safe)):
        raise UploadRefused(f"{name}: file type {Path(safe).suffix or '(none)'} is not supported")
    size = Path(data_path).stat().st_size
    if size == 0:  # saved, it would only sit in the folder as a failure
        raise UploadRefused(f"{name}: the file is empty (0 bytes); check that it saved completely, then upload it again")
    limit_mb, setting = (settings.max_file_mb, "MAX_FILE_MB") if size_limited(Path(safe)) else (settings.max_upload_mb, "MAX_UPLOAD_MB")
    if size > int(limit_mb * 1e6):
        raise UploadRefused(f"{name}: {size / 1e6:.1f} MB is over the {limit_mb:g} MB limit ({setting}); raise {setting} to accept it")
    docs = settings.docs_dir.resolve()
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


def delete_document(settings: Settings, source: str) -> None:
    """Delete a file of the documents folder; a name outside the folder is refused."""
    docs = settings.docs_dir.resolve()
    path = (docs / source).resolve()
    if docs not in path.parents:
        raise DocqaError(f"{source} is not inside the documents folder")
    if path.is_file():
        path.unlink()


def watch(settings: Settings, on_change: Callable[[], Any]) -> FolderWatcher:
    """Call `on_change` in the background whenever the documents folder changes."""
    settings.docs_dir.mkdir(parents=True, exist_ok=True)
    return FolderWatcher(str(settings.docs_dir), on_change).start()
