"""A PDF page as a PNG with a passage highlighted on it, for a source card.

The page is rendered from an in-memory copy of the file: the highlights are annotations
on that copy, which is never saved, so the user's PDF is never modified.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from config import Settings
from errors import DocqaError

WINDOW_WORDS = 6
"""Text the converter reflowed (joined lines, dropped hyphens) is found piece by piece in windows this long."""
DEFAULT_ZOOM = 1.5


class PageImageError(DocqaError):
    pass


def render_page_png(settings: Settings, source: str, page: int, highlight_texts: list[str], zoom: float = DEFAULT_ZOOM) -> bytes:
    """PNG of page `page` (1-based) of the PDF `source` in the documents folder, `highlight_texts` marked."""
    try:
        import pymupdf
    except ImportError as exc:
        raise PageImageError("PyMuPDF is not installed — run `make setup` to render PDF pages") from exc
    path = _document_path(settings, source)
    try:
        doc = pymupdf.open(stream=path.read_bytes(), filetype="pdf")
    except (OSError, RuntimeError, ValueError) as exc:
        raise PageImageError(f"{source} cannot be opened as a PDF ({exc}) — re-index it with `python main.py index`") from exc
    with doc:
        if not 1 <= page <= doc.page_count:
            raise PageImageError(f"{source} has pages 1-{doc.page_count}, not page {page}")
        pdf_page = doc[page - 1]
        for text in highlight_texts:
            rects = find_on_page(pdf_page, text)
            if rects:
                pdf_page.add_highlight_annot(rects)
        pixmap = pdf_page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), annots=True)
        return bytes(pixmap.tobytes("png"))


def find_on_page(pdf_page: Any, text: str) -> list[Any]:
    """Rectangles of `text` on the page: the whole text if PyMuPDF finds it, else its word windows."""
    words = _plain(text).split()
    if not words:
        return []
    whole = pdf_page.search_for(" ".join(words))
    if whole or len(words) <= WINDOW_WORDS:
        return list(whole)
    rects: list[Any] = []
    step = max(1, WINDOW_WORDS // 2)
    for start in range(0, max(1, len(words) - WINDOW_WORDS + 1), step):
        for rect in pdf_page.search_for(" ".join(words[start : start + WINDOW_WORDS])):
            if rect not in rects:
                rects.append(rect)
    return rects


def _plain(text: str) -> str:
    """Passage text without the markdown the converter added (headings, emphasis, code fences)."""
    text = re.sub(r"(?m)^\s*(?:#{1,6}|[-*]|```\w*)\s*", " ", text)
    return text.replace("**", " ").replace("`", " ")


def _document_path(settings: Settings, source: str) -> Path:
    docs = settings.docs_dir.resolve()
    path = (docs / source).resolve()
    if docs not in path.parents:
        raise PageImageError(f"{source} is not inside the documents folder")
    if path.suffix.lower() != ".pdf":
        raise PageImageError(f"{source} is not a PDF: only PDF pages can be shown as images")
    if not path.is_file():
        raise PageImageError(f"{source} is no longer in the documents folder — re-index with `python main.py index`")
    return path
