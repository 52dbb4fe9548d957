"""Turn documents, data and source files into markdown sections that remember where they came from.

A section is a run of markdown with its position in the original: a PDF page, a slide,
a sheet and its rows, or the first line of a text or code file. The splitter keeps those
positions on every chunk, which is what lets an answer cite "guide.pdf, page 3",
"deck.pptx, slide 4" or "notes.md, lines 12-30". This module is the dispatch by file
type and the cache; the types are in doc_types, and each format has its own module
(text_formats, pdf_converter, office_formats, web_formats, data_formats).
Converted documents are cached as JSON keyed by the file's SHA-256, so an unchanged
file is never converted twice.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Callable

from doc_types import CODE_EXTENSIONS, CODE_FILE_NAMES, IMAGE_EXTENSIONS, ConvertedDocument
from errors import ConversionError
from ocr import OcrReader
from text_formats import convert_docx_to_markdown, convert_text_to_markdown

log = logging.getLogger(__name__)

# Bump when conversion output changes, so cached conversions are redone.
CONVERTER_VERSION = 8  # 5: HTML comments and permalink anchors dropped from HTML and markdown; 6: with inline code in them; 7: PDF ligatures as letters; 8: HTML emphasis as plain text

MARKDOWN_EXTENSIONS = {".md", ".markdown", ".mdx", ".rst"}
TEXT_EXTENSIONS = {
    ".txt", ".text", ".log", ".jsonl", ".ndjson", ".toml", ".ini", ".cfg", ".conf", ".properties",
    ".xml", ".tex", ".bib", ".org", ".adoc", ".asciidoc", ".srt", ".vtt",
}
KIND_BY_EXTENSION: dict[str, str] = {
    ".pdf": "pdf", ".epub": "epub", ".docx": "docx", ".pptx": "pptx", ".xlsx": "xlsx", ".xlsm": "xlsx",
    ".csv": "csv", ".tsv": "csv", ".html": "html", ".htm": "html", ".xhtml": "html",
    ".json": "json", ".yaml": "yaml", ".yml": "yaml",
    **{ext: "markdown" for ext in MARKDOWN_EXTENSIONS},
    **{ext: "text" for ext in TEXT_EXTENSIONS},
    **{ext: "code" for ext in CODE_EXTENSIONS},
    **{ext: "image" for ext in IMAGE_EXTENSIONS},
}
KIND_BY_NAME = {name: "code" for name in CODE_FILE_NAMES}
SUPPORTED_EXTENSIONS = set(KIND_BY_EXTENSION)
# Binary containers: their content is never sniffed as text.
CONTAINER_EXTENSIONS = {ext for ext, kind in KIND_BY_EXTENSION.items() if kind in ("pdf", "epub", "docx", "pptx", "xlsx", "image")}
OCR_KINDS = {"pdf", "image"}
"""What OCR settings change the conversion of: their cache files and manifest records name the OCR variant."""
PAGED_KINDS = OCR_KINDS
"""Kinds read page by page under the converter's time and memory limits, whatever their size in bytes: a
scan's bytes are pixels (a 3-page scan at 150 dpi is 20 MB), not text to hold, so MAX_FILE_MB does not apply."""


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def kind_of(path: Path) -> str | None:
    """The converter a file goes to (see KIND_BY_EXTENSION), or None when docqa cannot read its type."""
    return KIND_BY_EXTENSION.get(path.suffix.lower()) or KIND_BY_NAME.get(path.name.lower())


def is_supported(path: Path) -> bool:
    return kind_of(path) is not None


def size_limited(path: Path) -> bool:
    """Whether MAX_FILE_MB applies to this file: to text-like files, not to PDFs and images (PAGED_KINDS)."""
    return kind_of(path) not in PAGED_KINDS


def conversion_variant(path: Path, ocr: OcrReader | None) -> str:
    """What besides its content decides a file's conversion: the OCR options, for PDFs and images; "" otherwise.
    A PDF converted with OCR off keeps the old cache name, so turning OCR off costs no reconversion."""
    return ocr.options.variant() if ocr is not None and kind_of(path) in OCR_KINDS else ""


def _cache_file(cache_dir: Path, sha256: str, variant: str) -> Path:
    return cache_dir / (f"{sha256}.v{CONVERTER_VERSION}.{variant}.json" if variant else f"{sha256}.v{CONVERTER_VERSION}.json")


def cached_conversion(cache_dir: Path | None, sha256: str, variant: str = "") -> Path | None:
    """The cache file of an earlier conversion of this content (with this OCR variant), if there is one."""
    if cache_dir is None:
        return None
    path = _cache_file(cache_dir, sha256, variant)
    return path if path.is_file() else None


def convert_document(
    path: Path, source: str, cache_dir: Path | None = None, sha256: str | None = None, ocr: OcrReader | None = None
) -> ConvertedDocument:
    """Convert one file, using the cache when the file's content was converted before.

    `ocr` reads scanned PDF pages and image files; without it they fail as before ("needs OCR").
    """
    cache_file = None
    if cache_dir is not None:
        sha256 = sha256 or file_sha256(path)
        cache_file = _cache_file(cache_dir, sha256, conversion_variant(path, ocr))
        if cache_file.is_file():
            try:
                doc = ConvertedDocument.from_json(cache_file.read_text(encoding="utf-8"))
                doc.source = source
                return doc
            except (ValueError, TypeError, KeyError):
                log.warning("Ignoring unreadable conversion cache %s", cache_file)
    doc = _convert_uncached(path, source, ocr)
    if cache_file is not None:
        _write_cache(cache_file, doc.to_json())
    return doc


def _write_cache(cache_file: Path, text: str) -> None:
    """Atomically, under a name of this process's own: two workers converting files with the
    same content write the same cache file at once. The cache is an optimisation, so a failed
    write (a full disk) costs the next run a conversion, not this file its place in the index."""
    import tempfile

    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{cache_file.name}.", suffix=".tmp", dir=cache_file.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, cache_file)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        log.warning("Could not write the conversion cache %s: %s", cache_file, exc.strerror or exc)


def _convert_uncached(path: Path, source: str, ocr: OcrReader | None) -> ConvertedDocument:
    suffix = path.suffix.lower()
    kind = kind_of(path)
    if kind is None:
        raise ConversionError(f"unsupported file type {suffix or '(none)'}")
    try:
        if kind in OCR_KINDS:
            return _ocr_converter(kind)(path, source, ocr)
        return _converter(kind)(path, source)
    except ConversionError:
        raise
    except MemoryError as exc:
        raise ConversionError("too large to convert in memory") from exc
    except RecursionError as exc:
        raise ConversionError("nested too deeply to convert") from exc
    except Exception as exc:  # a broken file must never stop indexing of the others
        raise ConversionError(f"could not be read as {kind.upper()}: {exc}") from exc


def _ocr_converter(kind: str) -> Callable[[Path, str, OcrReader | None], ConvertedDocument]:
    """The converter of a kind that OCR may read: PDF, image."""
    if kind == "pdf":
        from pdf_converter import convert_pdf_to_markdown

        return convert_pdf_to_markdown
    from scan_formats import convert_image_to_markdown

    return convert_image_to_markdown


def _converter(kind: str) -> Callable[[Path, str], ConvertedDocument]:
    """The converter of a kind; format modules are imported only when a file needs them."""
    if kind == "epub":
        from web_formats import convert_epub_to_markdown

        return convert_epub_to_markdown
    if kind == "docx":
        return convert_docx_to_markdown
    if kind in ("pptx", "xlsx", "csv"):
        import office_formats

        return {"pptx": office_formats.convert_pptx_to_markdown, "xlsx": office_formats.convert_xlsx_to_markdown, "csv": office_formats.convert_csv_to_markdown}[kind]
    if kind == "html":
        from web_formats import convert_html_to_markdown

        return convert_html_to_markdown
    if kind in ("json", "yaml"):
        import data_formats

        return data_formats.convert_json_to_markdown if kind == "json" else data_formats.convert_yaml_to_markdown
    return lambda path, source: convert_text_to_markdown(path, source, kind=kind)
