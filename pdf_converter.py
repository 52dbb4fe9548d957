"""PDF to markdown with PyMuPDF: headings, tables and reading order recovered.

A PDF is positioned text. Headings come back from font sizes (larger than the body text
and used sparingly), or, in a document whose sizes do not tell, from short lines set
wholly in bold. Ruled tables (page.find_tables) become markdown tables in place of their
scattered cell text. A page set in columns is read column by column, not line by line
across the gutter. Running headers, footers and page numbers (edge lines that repeat
page after page) are dropped. Each PDF page is one section, so every chunk cites its
physical page, and the label the book prints on it where the PDF has page labels
(page 157 of Think Python is printed as 137).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

from doc_types import ConvertedDocument, Section
from errors import ConversionError
from ocr import OcrReader
from scan_formats import PdfScans, read_pdf_scans
from text_formats import escape_heading_marker

NEEDS_OCR = "no extractable text (needs OCR)"


class PdfLine(NamedTuple):
    block: int  # lines of one block (or one table) belong together
    text: str
    size: float  # dominant font size
    bold: bool = False  # every character in a bold font
    table: bool = False  # text is a whole markdown table


def convert_pdf_to_markdown(path: Path, source: str, ocr: OcrReader | None = None) -> ConvertedDocument:
    """The PDF's pages as sections; with `ocr`, scanned pages are read by it (scan_formats.py)."""
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
        pages = [read_page(page, tables=True) for page in pdf]
        labels = [page.get_label() or None for page in pdf] if pdf.get_page_labels() else [None] * len(pages)
        meta_title = ((pdf.metadata or {}).get("title") or "").strip()
        scans = read_pdf_scans(pdf, [sum(len(line.text) for line in lines) for lines in pages], ocr) if ocr else PdfScans()
    for number in scans.pages:
        pages[number - 1] = []  # the scan's stray text layer (a page number) gives way to what OCR read
    pages = _drop_running_lines(pages)
    sections = []
    for number, (text, path_, levels) in enumerate(outline_pages(pages), start=1):
        place = {"page": number, "page_label": _label(labels[number - 1], number), "heading_path": path_, "heading_levels": levels}
        text, read_by_ocr = (scans.pages[number], True) if number in scans.pages else (text, False)
        if text:
            sections.append(Section(text=text, ocr=read_by_ocr, **place))  # type: ignore[arg-type]
        if number in scans.pictures:
            sections.append(Section(text=scans.pictures[number], ocr=True, **place))  # type: ignore[arg-type]
    if not sections:
        raise ConversionError(scans.nothing_read_reason() if scans.pages or scans.failed else NEEDS_OCR)
    return ConvertedDocument(source=source, title=meta_title or path.stem, kind="pdf", sections=sections, notes=scans.notes())


def _label(label: str | None, number: int) -> str | None:
    """The printed page label worth keeping: one that is not just the page's number."""
    label = _decoded(label) if label else label
    return label if label and label != str(number) else None


_HEX_STRING = re.compile(r"<([0-9A-Fa-f\s]+)>")


def _decoded(label: str) -> str:
    """The label as printed. PyMuPDF hands a label prefix stored as a PDF hex string back undecoded
    when the label has no numbering style: citations read "page <FEFF00310036>" for page "16"
    (seen in a PDF made from DocBook). UTF-16 with its byte-order mark, else PDFDocEncoding,
    which is Latin-1 for every printable ASCII character."""

    def text(match: re.Match[str]) -> str:
        digits = "".join(match.group(1).split())
        data = bytes.fromhex(digits + "0" * (len(digits) % 2))  # an odd last digit is followed by 0 (PDF 7.3.4.3)
        if data.startswith(b"\xfe\xff"):
            return data[2:].decode("utf-16-be", "replace")
        return data.decode("latin-1")

    return _HEX_STRING.sub(text, label)


# ---------------------------------------------------------------- reading a page


def read_page(page: Any, tables: bool) -> list[PdfLine]:
    """The page's text lines in reading order, with its ruled tables as markdown in their place."""
    import pymupdf

    blocks = page.get_text("dict", flags=_text_flags())["blocks"]
    found = _tables(page) if tables and _has_ruled_grid(page) else []
    placed: list[tuple[Any, int, dict]] = []  # (table rect or None, block number, line)
    for block_no, block in enumerate(blocks):
        for line in block.get("lines", []):
            box = pymupdf.Rect(line["bbox"])
            centre = (box.tl + box.br) / 2
            if not any(rect.contains(centre) for rect, _ in found):
                placed.append((box, block_no, line))
    lines: list[PdfLine] = []
    boxes: list[Any] = []
    for block_no, line in _reading_order(placed, page.rect.width):
        parsed = _line(block_no, line)
        if parsed:
            lines.append(parsed)
            boxes.append(pymupdf.Rect(line["bbox"]))
    for n, (rect, markdown) in enumerate(found):
        # Right after the last line above the table, preferring lines in the table's own column.
        above = [i for i, box in enumerate(boxes) if box.y1 <= rect.y0 + 1]
        same_column = [i for i in above if boxes[i].x0 < rect.x1 and rect.x0 < boxes[i].x1]
        at = max(same_column or above, default=-1) + 1
        lines.insert(at, PdfLine(-1 - n, markdown, 0.0, table=True))
        boxes.insert(at, rect)
    return lines


def _text_flags() -> int:
    """Text as read, with ligatures ("ﬁ", "ﬂ") as their letters: kept, a LaTeX PDF's "conﬁguration"
    matched no search for "configuration" (bzip2's manual holds 240 of them)."""
    import pymupdf

    return int(pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_PRESERVE_LIGATURES)


def _line(block_no: int, line: dict) -> PdfLine | None:
    """One text line: spans joined with the gaps they really have, its dominant size, and whether it is all bold."""
    text = ""
    prev_x1 = None
    weights: Counter = Counter()
    bold = True
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
        if piece.strip() and not (span["flags"] & 16 or re.search(r"bold|black|heavy", span["font"], re.I)):
            bold = False
    text = " ".join(text.split())
    if not text or not weights:
        return None
    return PdfLine(block_no, text, weights.most_common(1)[0][0], bold)


def _reading_order(placed: list[tuple[Any, int, dict]], width: float) -> list[tuple[int, dict]]:
    """Lines in reading order. One column keeps PyMuPDF's order; columns are read one after the other.

    Lines that cross the gutter (a title, a wide figure caption) cut the page into bands;
    within a band the left column comes first. Block numbers are kept per column, so two
    columns PyMuPDF put in one block do not run together into one paragraph.
    """
    gutter = _gutter(placed, width)
    if gutter is None:
        return [(block_no, line) for _, block_no, line in placed]
    out: list[tuple[int, dict]] = []
    band: list[tuple[Any, int, dict]] = []

    def flush() -> None:
        for side in (0, 1):
            column = [p for p in band if (p[0].x0 >= gutter) == bool(side)]
            out.extend((block_no * 2 + side, line) for _, block_no, line in sorted(column, key=lambda p: (p[0].y0, p[0].x0)))
        band.clear()

    for box, block_no, line in sorted(placed, key=lambda p: (p[0].y0, p[0].x0)):
        if box.x0 < gutter < box.x1:
            flush()
            out.append((block_no * 2, line))
        else:
            band.append((box, block_no, line))
    flush()
    return out


def _gutter(placed: list[tuple[Any, int, dict]], width: float) -> float | None:
    """The x of a gap between two columns of prose side by side, or None for a one-column page."""
    narrow = [box for box, _, line in placed if box.width < 0.48 * width and _chars(line) >= 12]
    if len(narrow) < 6:
        return None
    for x in sorted({round(box.x1) + 2 for box in narrow}, key=lambda g: abs(g - width / 2)):
        if not 0.3 * width <= x <= 0.7 * width:
            continue
        if any(box.x0 < x < box.x1 for box in narrow):
            continue
        left = [box for box in narrow if box.x1 <= x]
        right = [box for box in narrow if box.x0 >= x]
        side_by_side = sum(1 for r in right if any(b.y0 < r.y1 and r.y0 < b.y1 for b in left))
        if len(left) >= 3 and len(right) >= 3 and side_by_side >= 3:
            return float(x)
    return None


def _chars(line: dict) -> int:
    return sum(len(span["text"].strip()) for span in line["spans"])


def _has_ruled_grid(page: Any) -> bool:
    """Whether the page draws enough horizontal and vertical rules to hold a table.

    find_tables costs about half a second a page; most pages have no ruled grid, and a
    shaded code box or a header rule alone is not one.
    """
    horizontal = vertical = 0
    for path in page.get_cdrawings():
        for item in path["items"]:
            if item[0] == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
                horizontal += abs(y0 - y1) < 1 and abs(x0 - x1) > 20
                vertical += abs(x0 - x1) < 1 and abs(y0 - y1) > 8
            elif item[0] == "re":
                x0, y0, x1, y1 = item[1]
                horizontal += abs(y1 - y0) < 2 and abs(x1 - x0) > 20
                vertical += abs(x1 - x0) < 2 and abs(y1 - y0) > 8
    return horizontal >= 3 and vertical >= 2


def _tables(page: Any) -> list[tuple[Any, str]]:
    """(area, markdown) of each real table: at least 2 x 2 cells, most of them filled."""
    import pymupdf

    out = []
    try:
        found = page.find_tables(strategy="lines")
    except Exception:  # a table finder failure costs the tables, not the page
        return out
    textpage = page.get_textpage(flags=_text_flags()) if found.tables else None
    for table in found.tables:
        raw = [[page.get_textbox(pymupdf.Rect(cell), textpage=textpage) if cell else "" for cell in row.cells] for row in table.rows]
        rows = [_cells(row) for row in raw[:1]]
        for row in raw[1:]:
            rows += _body_rows(row)
        cells = [cell for row in rows for cell in row]
        if len(rows) < 2 or len(rows[0]) < 2 or sum(1 for c in cells if c) < 0.5 * len(cells):
            continue
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * len(rows[0])]
        lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
        out.append((pymupdf.Rect(table.bbox), "\n".join(lines)))
    return out


def _cells(row: list[str]) -> list[str]:
    return [" ".join(cell.split()).replace("|", "\\|") for cell in row]


def _body_rows(row: list[str]) -> list[list[str]]:
    """A ruled row whose cells all hold the same number of lines is that many rows without rules between them."""
    split = [[line for line in cell.split("\n") if line.strip()] for cell in row]
    counts = {len(lines) for lines in split if lines}
    if len(counts) == 1 and (n := counts.pop()) > 1 and all(split):
        return [_cells([lines[i] for lines in split]) for i in range(n)]
    return [_cells(row)]


def _ends_with_eof_marker(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        fh.seek(max(0, fh.tell() - 1024))
        return b"%%EOF" in fh.read()


# ---------------------------------------------------------------- outline


def outline_pages(pages: list[list[PdfLine]]) -> list[tuple[str, list[str], list[int]]]:
    """Each page as (markdown, heading path in force where it starts, their levels)."""
    body_size = _body_font_size(pages)
    heading_sizes = _heading_sizes(pages, body_size)
    bold_level = min(len(heading_sizes) + 1, 6) if len(heading_sizes) < 2 and _bold_is_sparse(pages) else 0
    out = []
    path_stack: list[tuple[int, str]] = []
    for lines in pages:
        start_path = [h for _, h in path_stack]
        start_levels = [lvl for lvl, _ in path_stack]
        parts: list[str] = []
        para: list[str] = []
        last_block = -1
        last_level = 0
        bold_in_block = Counter(line.block for line in lines if line.bold)
        for line in lines:
            level = _heading_level(line, heading_sizes, body_size, bold_level if bold_in_block[line.block] <= 2 else 0)
            if line.block != last_block or level or line.table:
                if para:
                    parts.append(_join_pdf_lines(para))
                    para = []
            if line.table:
                parts.append(line.text)
            elif level:
                if level == last_level and line.block == last_block and parts:
                    # A heading wrapped over two lines: one heading.
                    merged = parts[-1] + " " + line.text
                    parts[-1] = merged
                    path_stack[-1] = (level, merged.lstrip("#").strip())
                else:
                    while path_stack and path_stack[-1][0] >= level:
                        path_stack.pop()
                    path_stack.append((level, line.text))
                    parts.append(f"{'#' * level} {line.text}")
            else:
                para.append(escape_heading_marker(line.text))
            last_block, last_level = line.block, level
        if para:
            parts.append(_join_pdf_lines(para))
        out.append(("\n\n".join(parts).strip(), start_path, start_levels))
    return out


def _heading_level(line: PdfLine, heading_sizes: list[float], body: float, bold_level: int) -> int:
    if line.table or len(line.text) > 150 or not any(c.isalpha() for c in line.text):
        return 0
    if line.size in heading_sizes:
        return heading_sizes.index(line.size) + 1
    if (
        bold_level
        and line.bold
        and line.size >= body * 0.95
        and len(line.text) <= 100
        and not line.text.endswith((".", ",", ";"))
    ):
        return bold_level
    return 0


def _bold_is_sparse(pages: list[list[PdfLine]]) -> bool:
    """Bold lines can be headings only where they are rare; a document set all in bold has none."""
    total = sum(len(line.text) for lines in pages for line in lines if not line.table) or 1
    bold = sum(len(line.text) for lines in pages for line in lines if line.bold and not line.table)
    return 0 < bold < 0.15 * total


def _normalise_running(text: str) -> str:
    return re.sub(r"\d+", "#", text.lower()).strip()


def _drop_running_lines(pages: list[list[PdfLine]]) -> list[list[PdfLine]]:
    """Drop page numbers and running headers/footers: edge lines repeated on three or more pages."""
    edge_counts: Counter = Counter()
    for lines in pages:
        for line in {*lines[:2], *lines[-2:]}:
            if not line.table:
                edge_counts[_normalise_running(line.text)] += 1
    out = []
    for lines in pages:
        edges = set(range(min(2, len(lines)))) | set(range(max(0, len(lines) - 2), len(lines)))
        kept = []
        for i, line in enumerate(lines):
            norm = _normalise_running(line.text)
            if i in edges and not line.table and (re.fullmatch(r"[#ivxlc\s.\-–]*", norm) or (edge_counts[norm] >= 3 and len(pages) >= 3)):
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
        for line in lines:
            if not line.table:
                sizes[line.size] += len(line.text)
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
