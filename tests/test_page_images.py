"""A PDF page rendered with the passage highlighted, for the source card; the file stays untouched."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from conftest import THINKPYTHON_PDF, require
from page_images import PageImageError, find_on_page, render_page_png

PASSAGE = (
    "## 12.1. Tuples are immutable\n\nA tuple is a sequence of values. The values can be any type, and they are "
    "indexed by integers, so in that respect tuples are a lot like lists."
)


@pytest.fixture
def book(make_settings, tmp_path: Path):
    settings = make_settings()
    shutil.copy(require(THINKPYTHON_PDF), settings.docs_dir / "thinkpython2.pdf")
    (settings.docs_dir / "notes.md").write_text("# Notes\n")
    return settings


def pixels(png: bytes):
    import pymupdf

    return pymupdf.Pixmap(png)


def test_page_is_rendered_with_the_passage_highlighted_and_the_file_is_unchanged(book) -> None:
    import pymupdf

    path = book.docs_dir / "thinkpython2.pdf"
    before = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)

    plain = render_page_png(book, "thinkpython2.pdf", 157, [])
    marked = render_page_png(book, "thinkpython2.pdf", 157, [PASSAGE])

    assert plain.startswith(b"\x89PNG") and marked.startswith(b"\x89PNG")
    with pymupdf.open(path) as doc:
        rects = find_on_page(doc[156], PASSAGE)
        assert len(rects) >= 2, "the passage wraps over several lines; the markdown heading is found too"
        assert doc[156].first_annot is None
    a, b = pixels(plain), pixels(marked)
    assert (a.width, a.height) == (b.width, b.height)
    assert a.samples != b.samples, "the highlight changed the image"
    assert (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns) == before


def test_page_images_refuse_what_they_cannot_show(book) -> None:
    with pytest.raises(PageImageError, match="not page 999"):
        render_page_png(book, "thinkpython2.pdf", 999, [])
    with pytest.raises(PageImageError, match="not a PDF"):
        render_page_png(book, "notes.md", 1, [])
    with pytest.raises(PageImageError, match="not inside the documents folder"):
        render_page_png(book, "../outside.pdf", 1, [])
    with pytest.raises(PageImageError, match="no longer in the documents folder"):
        render_page_png(book, "gone.pdf", 1, [])
