"""Turn documents, data and source files into markdown sections that remember where they came from.

A section is a run of markdown with its position in the original: a PDF page, a slide,
a sheet and its rows, or the first line of a text or code file. The splitter keeps those
positions on every chunk, which is what lets an answer cite "guide.pdf, page 3",
"deck.pptx, slide 4" or "notes.md, lines 12-30". This module holds the shared types,
the dispatch by file type, the cache and the DOCX and plain-text converters; the other
formats have their own modules (pdf_converter, office_formats, web_formats, data_formats).
Converted documents are cached as JSON keyed by the file's SHA-256, so an unchanged
file is never converted twice.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import logging
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from code_chunker import CODE_EXTENSIONS, CODE_FILE_NAMES
from errors import ConversionError

log = logging.getLogger(__name__)

# Bump when conversion output changes, so cached conversions are redone.
CONVERTER_VERSION = 3

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
}
KIND_BY_NAME = {name: "code" for name in CODE_FILE_NAMES}
SUPPORTED_EXTENSIONS = set(KIND_BY_EXTENSION)
# Binary containers: their content is never sniffed as text.
CONTAINER_EXTENSIONS = {ext for ext, kind in KIND_BY_EXTENSION.items() if kind in ("pdf", "epub", "docx", "pptx", "xlsx")}

NEEDS_OCR = "no extractable text (needs OCR)"


@dataclass
class Section:
    """Markdown text and where it starts in the original file."""

    text: str
    page: int | None = None  # 1-based physical page (PDF)
    start_line: int | None = None  # 1-based line of the original file (text, markdown)
    heading_path: list[str] = field(default_factory=list)  # headings in force where it starts
    heading_levels: list[int] = field(default_factory=list)  # their markdown levels
    slide: int | None = None  # 1-based slide number (PPTX)
    sheet: str | None = None  # worksheet name (XLSX)
    row_numbers: list[int] | None = None  # a table section: the sheet or file row of each table line after the header


@dataclass
class ConvertedDocument:
    source: str  # path relative to the documents folder, with forward slashes
    title: str
    kind: str  # a value of KIND_BY_EXTENSION: pdf, epub, docx, pptx, xlsx, csv, html, json, yaml, markdown, text, code
    sections: list[Section]
    encoding: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def markdown(self) -> str:
        return "\n\n".join(s.text for s in self.sections)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str) -> "ConvertedDocument":
        data = json.loads(raw)
        data["sections"] = [Section(**s) for s in data["sections"]]
        return cls(**data)


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


def cached_conversion(cache_dir: Path | None, sha256: str) -> Path | None:
    """The cache file of an earlier conversion of this content, if there is one."""
    if cache_dir is None:
        return None
    path = cache_dir / f"{sha256}.v{CONVERTER_VERSION}.json"
    return path if path.is_file() else None


def convert_document(path: Path, source: str, cache_dir: Path | None = None, sha256: str | None = None) -> ConvertedDocument:
    """Convert one file, using the cache when the file's content was converted before."""
    cache_file = None
    if cache_dir is not None:
        sha256 = sha256 or file_sha256(path)
        cache_file = cache_dir / f"{sha256}.v{CONVERTER_VERSION}.json"
        if cache_file.is_file():
            try:
                doc = ConvertedDocument.from_json(cache_file.read_text(encoding="utf-8"))
                doc.source = source
                return doc
            except (ValueError, TypeError, KeyError):
                log.warning("Ignoring unreadable conversion cache %s", cache_file)
    doc = _convert_uncached(path, source)
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


def _convert_uncached(path: Path, source: str) -> ConvertedDocument:
    suffix = path.suffix.lower()
    kind = kind_of(path)
    if kind is None:
        raise ConversionError(f"unsupported file type {suffix or '(none)'}")
    try:
        return _converter(kind)(path, source)
    except ConversionError:
        raise
    except MemoryError as exc:
        raise ConversionError("too large to convert in memory") from exc
    except RecursionError as exc:
        raise ConversionError("nested too deeply to convert") from exc
    except Exception as exc:  # a broken file must never stop indexing of the others
        raise ConversionError(f"could not be read as {kind.upper()}: {exc}") from exc


def _converter(kind: str) -> Callable[[Path, str], ConvertedDocument]:
    """The converter of a kind; format modules are imported only when a file needs them."""
    if kind == "pdf":
        from pdf_converter import convert_pdf_to_markdown

        return convert_pdf_to_markdown
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


def escape_heading_marker(line: str) -> str:
    """Body text starting with '#' (a Python comment in a code sample) must not read as a markdown heading."""
    return "\\" + line if line.startswith("#") else line


# ---------------------------------------------------------------- DOCX


MAX_UNZIPPED_BYTES = 500 * 1024 * 1024
MAX_ZIP_RATIO = 200


def check_zip_size(path: Path, limit: int = MAX_UNZIPPED_BYTES) -> None:
    """Refuse a zip-based document (DOCX, PPTX, XLSX, EPUB) that would unpack to a bomb."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise ConversionError(f"not a readable zip-based document ({exc}); re-save it") from exc
    unpacked = sum(i.file_size for i in infos)
    packed = sum(i.compress_size for i in infos) or 1
    if unpacked > limit or (unpacked > 10 * 1024 * 1024 and unpacked / packed > MAX_ZIP_RATIO):
        raise ConversionError(
            f"unpacks to {unpacked / 1e6:.0f} MB from {packed / 1e6:.1f} MB — refused as a possible zip bomb"
        )


def convert_docx_to_markdown(path: Path, source: str) -> ConvertedDocument:
    import zipfile

    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    if not zipfile.is_zipfile(path):
        raise ConversionError("not a valid DOCX (it is not a zip archive); re-save it from Word")
    check_zip_size(path)
    document = docx.Document(str(path))
    out: list[str] = []
    title = (document.core_properties.title or "").strip()
    # With a Title paragraph as "#", Heading 1 becomes "##" so the outline stays a tree.
    heading_shift = int(any(p.style is not None and p.style.name == "Title" for p in document.paragraphs))
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            line = _docx_paragraph(item, heading_shift)
            if line:
                if not title and line.startswith("# "):
                    title = line[2:].strip()
                out.append(line)
        elif isinstance(item, Table):
            table = _docx_table(item)
            if table:
                out.append(table)
    text = "\n\n".join(out).strip()
    if not text:
        raise ConversionError("the document has no text")
    # Keep list items together as one markdown list.
    text = re.sub(r"(?m)^((?:- |\d+\. ).*)\n\n(?=- |\d+\. )", r"\1\n", text)
    return ConvertedDocument(
        source=source, title=title or path.stem, kind="docx", sections=[Section(text=text)]
    )


def _docx_paragraph(paragraph, heading_shift: int) -> str:
    text = paragraph.text.strip()
    if not text:
        return ""
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style == "Title":
        return f"# {text}"
    match = re.match(r"Heading (\d)", style)
    if match:
        return f"{'#' * min(int(match.group(1)) + heading_shift, 6)} {text}"
    if "List Number" in style:
        return f"1. {text}"
    numbered = paragraph._p.pPr is not None and paragraph._p.pPr.numPr is not None
    if "List" in style or numbered:
        return f"- {text}"
    return escape_heading_marker(text)


def _docx_table(table) -> str:
    rows = []
    for row in table.rows:
        cells = [" ".join(cell.text.split()).replace("|", "\\|") for cell in row.cells]
        rows.append(cells)
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


# ---------------------------------------------------------------- text and markdown

_BOMS = [
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
]


def decode_text(raw: bytes) -> tuple[str, str, list[str]]:
    """Decode bytes as text: BOM, then UTF-8, then a detected legacy 8-bit encoding.

    Returns (text, encoding, notes). Binary data raises ConversionError.
    """
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            return raw.decode(encoding, errors="replace"), encoding, []
    if b"\x00" in raw[:8192]:
        raise ConversionError("binary data, not text (it contains NUL bytes)")
    try:
        return raw.decode("utf-8"), "utf-8", []
    except UnicodeDecodeError:
        pass
    encoding = "cp1252"
    if not _looks_western(raw):
        try:
            from charset_normalizer import from_bytes

            best = from_bytes(raw[:200_000]).best()
            if best is not None and best.encoding:
                encoding = best.encoding
        except ImportError:
            pass
    try:
        text = raw.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        encoding, text = "latin-1", raw.decode("latin-1")
    note = f"not valid UTF-8; decoded as {encoding} (legacy 8-bit text)"
    log.info("%s", note)
    return text, encoding, [note]


def _looks_western(raw: bytes) -> bool:
    """Mostly-ASCII letters with a few accented ones decode as cp1252, the usual legacy encoding.

    charset_normalizer guesses poorly on short Western text ("café" came out as cp1006);
    text in Cyrillic or Greek code pages has far more high-byte letters than that.
    """
    try:
        text = raw.decode("cp1252")
    except UnicodeDecodeError:
        return False
    letters = [c for c in text if c.isalpha()]
    accented = sum(1 for c in letters if not c.isascii())
    return bool(letters) and accented <= 0.3 * len(letters)


def read_text_file(path: Path) -> tuple[str, str, list[str]]:
    """A text file's content with its line endings made "\\n", its encoding, and notes on how it was decoded."""
    text, encoding, notes = decode_text(path.read_bytes())
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise ConversionError("the file is empty")
    return text, encoding, notes


def convert_text_to_markdown(path: Path, source: str, kind: str) -> ConvertedDocument:
    text, encoding, notes = read_text_file(path)
    title = path.name if kind == "code" else path.stem
    if kind == "markdown":
        match = re.search(r"(?m)^#\s+(.+)$", text)
        if match:
            title = match.group(1).strip()
    return ConvertedDocument(
        source=source,
        title=title,
        kind=kind,
        sections=[Section(text=text, start_line=1)],
        encoding=encoding,
        notes=notes,
    )
