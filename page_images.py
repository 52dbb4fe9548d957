"""A PDF page or an image file's page as a PNG with a passage highlighted on it, for a source card.

The page is rendered from an in-memory copy of the file: the highlights are annotations
on that copy, which is never saved, so the user's PDF is never modified. A scanned page
and an image have no text layer to find a passage in, so they are shown unmarked; an
image (a TIFF page) is shown as it is, scaled down to IMAGE_MAX_SIDE.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from config import Settings
from doc_types import IMAGE_EXTENSIONS, PAGE_VIEW_EXTENSIONS
from errors import DocqaError

WINDOW_WORDS = 6
"""Text the converter reflowed (joined lines, dropped hyphens) is found piece by piece in windows this long."""
DEFAULT_ZOOM = 1.5
IMAGE_MAX_SIDE = 1600
"""Pixels of the longer side of an image page shown: a 300 dpi scan is far larger than a card."""


class PageImageError(DocqaError):
    pass


def render_page_png(settings: Settings, source: str, page: int, highlight_texts: list[str], zoom: float = DEFAULT_ZOOM) -> bytes:
    """PNG of page `page` (1-based) of the PDF or image `source` in the documents folder, `highlight_texts` marked."""
    path = _document_path(settings, source)
    if path.suffix.lower() in IMAGE_EXTENSIONS:
        return render_image_page_png(path, source, page)
    try:
        import pymupdf
    except ImportError as exc:
        raise PageImageError("PyMuPDF is not installed — run `make setup` to render PDF pages") from exc
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


def render_image_page_png(path: Path, source: str, page: int) -> bytes:
    """Page `page` (1-based; a TIFF may have several) of an image file as PNG."""
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            frames = getattr(image, "n_frames", 1)
            if not 1 <= page <= frames:
                raise PageImageError(f"{source} has pages 1-{frames}, not page {page}")
            image.seek(page - 1)
            shown = image.convert("RGB")
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise PageImageError(f"{source} cannot be opened as an image ({exc}) — re-index it with `python main.py index`") from exc
    shown.thumbnail((IMAGE_MAX_SIDE, IMAGE_MAX_SIDE))
    out = io.BytesIO()
    shown.save(out, format="PNG")
    return out.getvalue()


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
    if path.suffix.lower() not in PAGE_VIEW_EXTENSIONS:
        raise PageImageError(f"{source} is not a PDF or an image: only their pages can be shown as images")
    if not path.is_file():
        raise PageImageError(f"{source} is no longer in the documents folder — re-index with `python main.py index`")
    return path
