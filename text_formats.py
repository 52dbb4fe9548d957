"""Plain text, markdown and DOCX as converted documents, and the reading they share with other formats.

Text is decoded by its byte-order mark, then as UTF-8, then as the legacy 8-bit encoding
it most likely is, and the decoding is noted on the document. A text or markdown file is
one section starting at line 1, so its chunks cite line ranges. DOCX keeps its headings,
lists and tables as markdown. Markdown loses its HTML comments and permalink anchors ("¶"),
as HTML does (web_formats), by the one rule `is_permalink`. The zip-bomb check and the heading
escape are used by the other zip-based and paginated formats too (office_formats, web_formats,
pdf_converter).
"""

from __future__ import annotations

import codecs
import logging
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from doc_types import ConvertedDocument, Section
from errors import ConversionError
from markdown_code import outside_code

log = logging.getLogger(__name__)


def escape_heading_marker(line: str) -> str:
    """Body text starting with '#' (a Python comment in a code sample) must not read as a markdown heading."""
    return "\\" + line if line.startswith("#") else line


# ---------------------------------------------------------------- permalinks and comments

PERMALINK_CLASSES = frozenset({"headerlink", "header-anchor", "heading-anchor", "hash-link", "anchorjs-link", "permalink"})
PERMALINK_TITLES = ("permalink to this", "direct link to", "link to this")
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\ufeff"))


def is_permalink(href: str, text: str, classes: Iterable[str] = (), title: str = "") -> bool:
    """Whether a link only points a heading or term at itself: Sphinx's "¶", "#" or "§" beside a heading, an
    anchor marked "headerlink" or titled "Permalink to this headline". Page furniture: if kept, every
    heading of a Python docs page would end in "¶", and every chunk under it would carry one."""
    if not href.startswith("#"):
        return False
    sign = text.translate(_ZERO_WIDTH).strip()
    if len(sign) <= 2 and not any(ch.isalnum() for ch in sign):
        return True
    return bool(PERMALINK_CLASSES & {c.lower() for c in classes}) or title.strip().lower().startswith(PERMALINK_TITLES)


_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_HTML_ANCHOR = re.compile(r"<a\b([^<>]*)>(.{0,300}?)</a\s*>", re.I | re.S)
_HTML_ATTRIBUTE = re.compile(r"""([\w:-]+)\s*=\s*("[^"]*"|'[^']*'|[^\s"'>]+)""")
_MARKDOWN_LINK = re.compile(r"""\[([^\]\n]{0,20})\]\((#[^()\s]*)(?:\s+["']([^"'\n]*)["'])?\)""")
# A reference-style link, "[text][ref]" or "[text][]": its target is defined elsewhere, so a passage keeps the
# text. Left in, "[`dns.lookup()`][]" filled quotes with brackets, and the model copied the form as a citation.
_REFERENCE_LINK = re.compile(r"(?<![\w\]])\[([^\[\]\n]+)\]\[[^\[\]\n]*\]")


def _html_permalink(match: re.Match[str]) -> bool:
    attrs = {k.lower(): v.strip("\"'") for k, v in _HTML_ATTRIBUTE.findall(match[1])}
    text = re.sub(r"<[^>]*>", "", match[2])  # an icon's markup around the sign
    return is_permalink(attrs.get("href", ""), text, attrs.get("class", "").split(), attrs.get("title", ""))


def _blanked(match: re.Match[str]) -> str:
    """What is dropped, as the line breaks it held: the lines after it keep their numbers."""
    return "\n" * match[0].count("\n")


def _in_prose(pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str], text: str) -> str:
    """Each match of `pattern` that starts in prose replaced whole, inline code inside it too."""
    prose = outside_code(text)
    return pattern.sub(lambda m: replace(m) if any(s <= m.start() < e for s, e in prose) else m[0], text)


def drop_markdown_furniture(text: str) -> str:
    """Markdown without HTML comments (Node's "<!-- YAML added: v0.1.101 -->") and permalink anchors, in
    HTML or as markdown links, and reference links reduced to their text; code is left as written, and every line keeps its number. A comment that
    starts in prose goes whole, inline code inside it too (Node's "description: … the `path` argument")."""
    text = _in_prose(_HTML_COMMENT, _blanked, text)
    text = _in_prose(_REFERENCE_LINK, lambda m: m[1], text)
    out, pos = [], 0
    for start, end in outside_code(text):
        prose = _HTML_ANCHOR.sub(lambda m: _blanked(m) if _html_permalink(m) else m[0], text[start:end])
        prose = _MARKDOWN_LINK.sub(lambda m: _blanked(m) if is_permalink(m[2], m[1], (), m[3] or "") else m[0], prose)
        out += [text[pos:start], prose]
        pos = end
    return "".join(out) + text[pos:]


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
        text = drop_markdown_furniture(text)
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
