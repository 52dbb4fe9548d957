"""Turn PDF, DOCX and text files into markdown sections that remember where they came from.

A section is a run of markdown with its position in the original: a PDF page, or the
first line of a text file. The splitter keeps those positions on every chunk, which is
what lets an answer cite "guide.pdf, page 3" or "notes.md, lines 12-30".
Converted documents are cached as JSON keyed by the file's SHA-256, so an unchanged
file is never converted twice.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import logging
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from errors import ConversionError

log = logging.getLogger(__name__)

# Bump when conversion output changes, so cached conversions are redone.
CONVERTER_VERSION = 2

MARKDOWN_EXTENSIONS = {".md", ".markdown", ".mdx", ".rst"}
TEXT_EXTENSIONS = {
    ".txt", ".text", ".log", ".csv", ".tsv", ".json", ".jsonl", ".yaml", ".yml", ".toml",
    ".ini", ".cfg", ".conf", ".xml", ".html", ".htm", ".tex", ".org", ".adoc",
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".java", ".kt", ".scala",
    ".go", ".rs", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".cs", ".rb", ".php", ".swift",
    ".m", ".r", ".jl", ".lua", ".pl", ".sh", ".bash", ".zsh", ".ps1", ".sql", ".css",
    ".scss", ".vue", ".svelte", ".dart", ".hs", ".ex", ".exs", ".erl", ".clj", ".el",
    ".vim", ".dockerfile", ".makefile", ".gradle", ".proto", ".graphql",
}
SUPPORTED_EXTENSIONS = {".pdf", ".docx"} | MARKDOWN_EXTENSIONS | TEXT_EXTENSIONS

NEEDS_OCR = "no extractable text (needs OCR)"


@dataclass
class Section:
    """Markdown text and where it starts in the original file."""

    text: str
    page: int | None = None  # 1-based physical page (PDF)
    start_line: int | None = None  # 1-based line of the original file (text, markdown)
    heading_path: list[str] = field(default_factory=list)  # headings in force where it starts
    heading_levels: list[int] = field(default_factory=list)  # their markdown levels


@dataclass
class ConvertedDocument:
    source: str  # path relative to the documents folder, with forward slashes
    title: str
    kind: str  # pdf, docx, markdown, text
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


def is_supported(path: Path) -> bool:
    return path.suffix.lower() in SUPPORTED_EXTENSIONS


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
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_suffix(".tmp")
        tmp.write_text(doc.to_json(), encoding="utf-8")
        tmp.replace(cache_file)
    return doc


def _convert_uncached(path: Path, source: str) -> ConvertedDocument:
    suffix = path.suffix.lower()
    try:
        if suffix == ".pdf":
            return convert_pdf_to_markdown(path, source)
        if suffix == ".docx":
            return convert_docx_to_markdown(path, source)
        if suffix in MARKDOWN_EXTENSIONS:
            return convert_text_to_markdown(path, source, kind="markdown")
        if suffix in TEXT_EXTENSIONS:
            return convert_text_to_markdown(path, source, kind="text")
    except ConversionError:
        raise
    except MemoryError as exc:
        raise ConversionError("too large to convert in memory") from exc
    except Exception as exc:  # a broken file must never stop indexing of the others
        raise ConversionError(f"could not be read as {suffix[1:].upper()}: {exc}") from exc
    raise ConversionError(f"unsupported file type {suffix or '(none)'}")


# ---------------------------------------------------------------- PDF


def convert_pdf_to_markdown(path: Path, source: str) -> ConvertedDocument:
    import pymupdf

    try:
        pdf = pymupdf.open(path)
    except Exception as exc:
        raise ConversionError(f"not a readable PDF ({exc}); is the file complete?") from exc
    with pdf:
        if pdf.needs_pass:
            raise ConversionError("encrypted PDF: it needs a password; save an unencrypted copy to index it")
        if pdf.is_repaired and not _ends_with_eof_marker(path):
            # PyMuPDF recovers what it can from a cut-off file; indexing half a document silently is worse.
            raise ConversionError("incomplete PDF: the file ends early (truncated download or copy?); replace it with a complete copy")
        pages = [_page_lines(page.get_text("dict", flags=pymupdf.TEXTFLAGS_TEXT)["blocks"]) for page in pdf]
        meta_title = ((pdf.metadata or {}).get("title") or "").strip()
    pages = _drop_running_lines(pages)
    body_size = _body_font_size(pages)
    heading_sizes = _heading_sizes(pages, body_size)
    sections: list[Section] = []
    path_stack: list[tuple[int, str]] = []
    for number, lines in enumerate(pages, start=1):
        start_path = [h for _, h in path_stack]
        start_levels = [lvl for lvl, _ in path_stack]
        out: list[str] = []
        para: list[str] = []
        last_block = -1
        last_level = 0
        for block_no, text, size in lines:
            level = _heading_level(size, heading_sizes, text)
            if block_no != last_block or level:
                if para:
                    out.append(_join_pdf_lines(para))
                    para = []
            if level:
                if level == last_level and block_no == last_block and out:
                    # A heading wrapped over two lines: one heading.
                    merged = out[-1] + " " + text
                    out[-1] = merged
                    path_stack[-1] = (level, merged.lstrip("#").strip())
                else:
                    while path_stack and path_stack[-1][0] >= level:
                        path_stack.pop()
                    path_stack.append((level, text))
                    out.append(f"{'#' * level} {text}")
            else:
                para.append(_escape_heading_marker(text))
            last_block, last_level = block_no, level
        if para:
            out.append(_join_pdf_lines(para))
        text = "\n\n".join(out).strip()
        if text:
            sections.append(Section(text=text, page=number, heading_path=start_path, heading_levels=start_levels))
    if not sections:
        raise ConversionError(NEEDS_OCR)
    return ConvertedDocument(source=source, title=meta_title or path.stem, kind="pdf", sections=sections)


PdfLine = tuple[int, str, float]  # (block number, text, dominant font size)


def _ends_with_eof_marker(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        fh.seek(max(0, fh.tell() - 1024))
        return b"%%EOF" in fh.read()


def _escape_heading_marker(line: str) -> str:
    """Body text starting with '#' (a Python comment in a code sample) must not read as a markdown heading."""
    return "\\" + line if line.startswith("#") else line


def _page_lines(blocks: list[dict]) -> list[PdfLine]:
    """Text lines of a page with their block and dominant font size; spans joined with real gaps."""
    lines: list[PdfLine] = []
    for block_no, block in enumerate(blocks):
        for line in block.get("lines", []):
            text = ""
            prev_x1 = None
            weights: Counter = Counter()
            for span in line["spans"]:
                piece = span["text"]
                if not piece:
                    continue
                x0 = span["bbox"][0]
                if prev_x1 is not None and text and not text.endswith(" ") and not piece.startswith(" ") and x0 - prev_x1 > 0.15 * span["size"]:
                    text += " "
                text += piece
                prev_x1 = span["bbox"][2]
                weights[round(span["size"], 1)] += len(piece.strip())
            text = " ".join(text.split())
            if text and weights:
                lines.append((block_no, text, weights.most_common(1)[0][0]))
    return lines


def _normalise_running(text: str) -> str:
    return re.sub(r"\d+", "#", text.lower()).strip()


def _drop_running_lines(pages: list[list[PdfLine]]) -> list[list[PdfLine]]:
    """Drop page numbers and running headers/footers: edge lines repeated on three or more pages."""
    edge_counts: Counter = Counter()
    for lines in pages:
        for _, text, _ in {*lines[:2], *lines[-2:]}:
            edge_counts[_normalise_running(text)] += 1
    out = []
    for lines in pages:
        edges = set(range(min(2, len(lines)))) | set(range(max(0, len(lines) - 2), len(lines)))
        kept = []
        for i, line in enumerate(lines):
            norm = _normalise_running(line[1])
            if i in edges and (re.fullmatch(r"[#ivxlc\s.\-–]*", norm) or (edge_counts[norm] >= 3 and len(pages) >= 3)):
                continue
            kept.append(line)
        out.append(kept)
    return out


def _join_pdf_lines(lines: list[str]) -> str:
    """Join a block's lines, undoing end-of-line hyphenation; other line breaks are kept."""
    out = lines[0]
    for nxt in lines[1:]:
        if out.endswith("-") and not out.endswith(" -") and nxt[:1].islower():
            out = out[:-1] + nxt
        else:
            out = out + "\n" + nxt
    return out


def _size_weights(pages: list[list[PdfLine]]) -> Counter:
    sizes: Counter = Counter()
    for lines in pages:
        for _, text, size in lines:
            sizes[size] += len(text)
    return sizes


def _body_font_size(pages: list[list[PdfLine]]) -> float:
    sizes = _size_weights(pages)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _heading_sizes(pages: list[list[PdfLine]], body: float) -> list[float]:
    """Font sizes clearly larger than body text and used sparingly, largest first (up to six)."""
    sizes = _size_weights(pages)
    total = sum(sizes.values()) or 1
    big = [s for s, n in sizes.items() if s >= body * 1.15 and n / total < 0.1]
    return sorted(big, reverse=True)[:6]


def _heading_level(size: float, heading_sizes: list[float], text: str) -> int:
    if size not in heading_sizes or len(text) > 150 or not any(c.isalpha() for c in text):
        return 0
    return heading_sizes.index(size) + 1


def _first_heading(sections: list[Section]) -> str:
    for section in sections:
        for line in section.text.splitlines():
            if line.startswith("#"):
                return line.lstrip("#").strip()
    return ""


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
    return _escape_heading_marker(text)


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


def convert_text_to_markdown(path: Path, source: str, kind: str) -> ConvertedDocument:
    text, encoding, notes = decode_text(path.read_bytes())
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise ConversionError("the file is empty")
    title = path.stem
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
