"""Scanned PDF pages and image files, read by OCR, each page cited like any other.

A PDF page goes to OCR only when its text layer is (almost) empty and it holds an image:
a page with real text is never OCR'd, so a text PDF costs nothing more and a mixed PDF
gets both kinds. A page that OCR cannot read costs only that page (a note in `stats`);
a corrupt image costs only its file. The engine itself is ocr.OcrReader's business.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from doc_types import ConvertedDocument, Section
from errors import ConversionError
from ocr import OcrReader, OcrUnavailable, grayscale_array
from text_formats import escape_heading_marker

log = logging.getLogger(__name__)

MAX_IMAGE_PAGES = 500
"""Frames read from one image file: a TIFF claiming more is cut there (and says so)."""


def ocr_markdown(text: str) -> str:
    """OCR text as body text: a line starting with '#' is not a heading."""
    return "\n".join(escape_heading_marker(line) for line in text.splitlines()).strip()


def page_numbers(numbers: list[int]) -> str:
    return ("page " if len(numbers) == 1 else "pages ") + ", ".join(str(n) for n in numbers)


@dataclass
class PdfScans:
    """What OCR read in a PDF: the text of its scanned pages, of pictures on text pages, and what failed."""

    pages: dict[int, str] = field(default_factory=dict)  # 1-based page -> text read (may be "")
    pictures: dict[int, str] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)  # page -> why OCR failed there

    def notes(self) -> list[str]:
        read = sorted(n for n, text in self.pages.items() if text)
        out = [f"{page_numbers(read)} read by OCR"] if read else []
        out += [f"page {n}: {why}; that page is left out" for n, why in sorted(self.failed.items())]
        return out

    def nothing_read_reason(self) -> str:
        """Why a PDF whose every page needed OCR gave no text."""
        if self.failed:
            first = next(iter(sorted(self.failed.items())))
            return f"OCR failed on every scanned page (page {first[0]}: {first[1]})"
        return "no text found, not even by OCR: the scan may be blank or too faint (try OCR_DPI=300)"


def needs_ocr(page: Any, text_chars: int, reader: OcrReader) -> bool:
    """A page that must be an image of text: too little text layer, and an image on it."""
    return text_chars < reader.options.min_page_chars and bool(page.get_images(full=False))


def read_pdf_scans(pdf: Any, text_chars: list[int], reader: OcrReader) -> PdfScans:
    """OCR the pages that need it (and, when asked, the pictures on the others), page by page."""
    scans = PdfScans()
    for number, (page, chars) in enumerate(zip(pdf, text_chars, strict=True), start=1):
        scanned = needs_ocr(page, chars, reader)
        if not scanned and not reader.options.text_page_images:
            continue
        try:
            if scanned:
                scans.pages[number] = ocr_markdown(_read_page(page, reader))
            else:
                text = ocr_markdown(_read_pictures(page, reader))
                if text:
                    scans.pictures[number] = text
        except OcrUnavailable:
            raise
        except ConversionError as exc:
            log.warning("OCR failed on page %d: %s", number, exc)
            scans.failed[number] = str(exc)
    return scans


def _read_page(page: Any, reader: OcrReader) -> str:
    import pymupdf

    return reader.read(grayscale_array(page.get_pixmap(dpi=reader.options.dpi, colorspace=pymupdf.csGRAY)))


def _read_pictures(page: Any, reader: OcrReader) -> str:
    """The text of the pictures on a text page big enough to hold some, top to bottom."""
    import pymupdf

    scale = reader.options.dpi / 72
    rects = []
    for image in page.get_images(full=True):
        for rect in page.get_image_rects(image[0]):
            rect = rect & page.rect
            if min(rect.width, rect.height) * scale >= reader.options.min_image_px:
                rects.append(rect)
    texts = []
    for rect in sorted(rects, key=lambda r: (r.y0, r.x0)):
        pixmap = page.get_pixmap(dpi=reader.options.dpi, colorspace=pymupdf.csGRAY, clip=rect)
        texts.append(reader.read(grayscale_array(pixmap)))
    return "\n\n".join(t for t in texts if t)


# ---------------------------------------------------------------- image files


def convert_image_to_markdown(path: Path, source: str, reader: OcrReader | None) -> ConvertedDocument:
    """An image file read by OCR; a multi-page TIFF one section per page, cited by page."""
    if reader is None:
        raise ConversionError("an image is read by OCR, which is off (OCR=off): set OCR=on in .env to index it")
    frames, cut = _image_frames(path)
    sections: list[Section] = []
    notes: list[str] = []
    several = len(frames) > 1
    for number, frame in enumerate(frames, start=1):
        try:
            text = ocr_markdown(reader.read(frame))
        except OcrUnavailable:
            raise
        except ConversionError as exc:
            if not several:
                raise
            notes.append(f"page {number}: {exc}; that page is left out")
            continue
        if text:
            sections.append(Section(text=text, page=number if several else None, ocr=True))
    if not sections:
        raise ConversionError(notes[0] if notes else "no text found by OCR: the image may hold no text, or be too small or faint to read")
    if cut:
        notes.append(f"only its first {MAX_IMAGE_PAGES} pages are read")
    return ConvertedDocument(source=source, title=path.stem, kind="image", sections=sections, notes=notes)


def _image_frames(path: Path) -> tuple[list[Any], bool]:
    """Each page of the image as a grayscale array, and whether pages past MAX_IMAGE_PAGES were left;
    a clear reason when the file is not a readable image."""
    import numpy as np
    from PIL import Image, ImageSequence, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            frames, cut = [], False
            for n, frame in enumerate(ImageSequence.Iterator(image)):
                if n >= MAX_IMAGE_PAGES:
                    log.warning("%s has more than %d pages; the rest are not read", path.name, MAX_IMAGE_PAGES)
                    cut = True
                    break
                frames.append(np.array(frame.convert("L")))
    except UnidentifiedImageError as exc:
        raise ConversionError(f"not a readable image: the file is damaged, or is not really a {path.suffix.lstrip('.').upper()}") from exc
    except Image.DecompressionBombError as exc:
        raise ConversionError("the image is too large to read (over Pillow's pixel limit); scale it down to index it") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise ConversionError(f"not a readable image ({exc}); is the file complete?") from exc
    return frames, cut
