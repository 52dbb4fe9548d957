"""Find the files of the documents folder that docqa should index, and say why it skips the rest.

The walk follows symbolic links, but never out of the documents folder and never twice
into the same directory, so a link loop ends. Folders that hold tools rather than
documents (.git, node_modules, build output, virtual environments) are left out, as is
whatever the folder's .gitignore files and an optional .docqaignore (same syntax) name;
a `!pattern` there brings a default exclusion back. Files are checked by content too:
binary data named .txt is skipped, not indexed as gibberish; text-like files over the size
limit are listed as skipped with their size. PDFs and images have no size limit here: the
converter workers bound them by time per page and memory (converter_workers.py).
"""

from __future__ import annotations

import logging
import os
import re
import stat as stat_module
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from document_converter import CONTAINER_EXTENSIONS, is_supported, size_limited

log = logging.getLogger(__name__)

IGNORE_FILES = (".gitignore", ".docqaignore")

# Gitignore syntax; the folder's own ignore files come after these, so they can undo them.
DEFAULT_EXCLUDES = [
    ".*",  # hidden files and folders: .git, .venv, editor state
    "~$*",  # Office lock files
    "node_modules/", "bower_components/", "__pycache__/", "venv/", "env/", "site-packages/",
    "*.egg-info/", "build/", "dist/", "target/", "_build/", "htmlcov/",
]

SNIFF_BYTES = 8192
_TEXT_CONTROLS = {7, 8, 9, 10, 11, 12, 13, 27}  # bell, backspace, tab, newlines, form feed, escape
_UNICODE_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf")


@dataclass
class Discovery:
    """What the walk found: files to index (source -> path, stat), files skipped with why, and how many were ignored."""

    found: dict[str, tuple[Path, os.stat_result]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    ignored: int = 0


def file_type(source: str) -> str:
    """A file's type as stats and the folder profile group it: its extension, lower-case, without the dot."""
    suffix = Path(source).suffix.lower()
    return suffix[1:] if suffix else "(none)"


def skipped_by_type(skipped: dict[str, str]) -> dict[str, dict[str, int]]:
    """Skipped files counted by type and reason: {"mp3": {"unsupported file type .mp3": 3}}."""
    out: dict[str, dict[str, int]] = {}
    for source, reason in skipped.items():
        kind = "folder" if source.endswith("/") else file_type(source)
        reason = re.sub(r"^[\d.]+ MB, ", "", reason)  # sizes differ; the limit is the reason
        out.setdefault(kind, {})[reason] = out.setdefault(kind, {}).get(reason, 0) + 1
    return dict(sorted(out.items()))


def looks_binary(sample: bytes) -> bool:
    """Whether the first bytes of a file are binary data rather than text in some encoding."""
    if not sample or sample.startswith(_UNICODE_BOMS) or sample[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        return False
    if b"\x00" in sample:
        return True
    controls = sum(1 for b in sample if b < 32 and b not in _TEXT_CONTROLS)
    return controls > 0.05 * len(sample)


@dataclass
class _Rules:
    """The ignore rules in force in one folder: (folder relative to the root, spec) from the root down."""

    specs: list[tuple[str, pathspec.PathSpec]]

    def ignores(self, rel: str, is_dir: bool) -> bool:
        verdict = False
        for base, spec in self.specs:
            if base and not rel.startswith(base + "/"):
                continue
            below = rel[len(base) + 1 :] if base else rel
            result = spec.check_file(below + "/" if is_dir else below)
            if result.include is not None:
                verdict = result.include  # the last matching rule wins, as in git
        return verdict

    def entering(self, folder: Path, rel: str) -> "_Rules":
        lines: list[str] = []
        for name in IGNORE_FILES:
            try:
                lines += (folder / name).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
        if not lines:
            return self
        return _Rules(self.specs + [(rel, pathspec.GitIgnoreSpec.from_lines(lines))])


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def discover(docs_dir: Path, max_bytes: int, known: dict[str, tuple[int, float]] | None = None) -> Discovery:
    """Walk docs_dir: every supported, readable text or document file, text-like ones within `max_bytes`.

    known: (size, mtime) of files indexed before; an unchanged one is not read again to
    check its content, so a walk over an unchanged folder costs a stat per file.
    """
    known = known or {}
    out = Discovery()
    root = Path(docs_dir).resolve()
    if not root.is_dir():
        return out
    seen_dirs: set[tuple[int, int]] = set()
    seen_files: dict[tuple[int, int], str] = {}
    base_rules = _Rules([("", pathspec.GitIgnoreSpec.from_lines(DEFAULT_EXCLUDES))])
    stack: list[tuple[Path, str, _Rules]] = [(root, "", base_rules.entering(root, ""))]
    linked: list[tuple[Path, str, _Rules]] = []  # folders reached through a link: walked last, so real paths win
    while stack or linked:
        folder, rel_folder, rules = stack.pop() if stack else linked.pop(0)
        try:
            st = folder.stat()
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            if rel_folder:
                out.skipped[rel_folder + "/"] = f"folder cannot be read: {exc.strerror or exc}"
            continue
        if (st.st_dev, st.st_ino) in seen_dirs:
            continue  # a link back to a folder already walked: a loop, or a second way in
        seen_dirs.add((st.st_dev, st.st_ino))
        subfolders = []
        for entry in entries:
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir()  # follows links
            except OSError:
                is_dir = False
            if rules.ignores(rel, is_dir):
                out.ignored += 1
                continue
            if entry.is_symlink() and not _inside(Path(os.path.realpath(path)), root):
                out.skipped[rel + ("/" if is_dir else "")] = "link points outside the documents folder; not followed"
                continue
            if is_dir:
                if entry.is_symlink():
                    linked.append((path, rel, rules.entering(path, rel)))
                else:
                    subfolders.append((path, rel))
                continue
            reason = _check_file(path, max_bytes, known.get(rel))
            if reason:
                out.skipped[rel] = reason
                continue
            st = path.stat()
            first = seen_files.setdefault((st.st_dev, st.st_ino), rel)
            if first != rel:  # one file reached twice: index it once, under its real path if there is one
                if os.path.islink(out.found[first][0]) and not entry.is_symlink():
                    del out.found[first]
                    seen_files[(st.st_dev, st.st_ino)] = rel
                    first, rel = rel, first
                    out.found[first] = (path, st)
                out.skipped[rel] = f"the same file as {first} (a link); indexed once"
                continue
            out.found[rel] = (path, st)
        for path, rel in reversed(subfolders):  # popped in name order
            stack.append((path, rel, rules.entering(path, rel)))
    return out


def _check_file(path: Path, max_bytes: int, known: tuple[int, float] | None = None) -> str | None:
    """Why this file is not indexed, or None when it should be."""
    if not is_supported(path):
        return f"unsupported file type {path.suffix.lower() or '(none)'}"
    try:
        st = path.stat()
    except FileNotFoundError:
        return "broken link: its target does not exist" if path.is_symlink() else "vanished while the folder was read"
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if not stat_module.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_size > max_bytes and size_limited(path):
        return f"{st.st_size / 1e6:.1f} MB, larger than the {max_bytes / 1e6:g} MB limit (raise MAX_FILE_MB to index it)"
    if path.suffix.lower() not in CONTAINER_EXTENSIONS and known != (st.st_size, st.st_mtime):
        try:
            with open(path, "rb") as fh:
                sample = fh.read(SNIFF_BYTES)
        except OSError as exc:
            return f"cannot be read: {exc.strerror or exc}"
        if looks_binary(sample):
            return f"binary data, not text, despite its {path.suffix.lower()} name"
    return None
