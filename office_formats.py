"""Slides and spreadsheets to markdown that remembers the slide, the sheet and the rows.

A PowerPoint deck (python-pptx) becomes one section per slide: its title as the heading,
then its text boxes, bullet lists and tables in the order they sit on the slide, then
the speaker notes. A workbook (openpyxl) or a CSV file becomes one markdown table per
sheet whose first non-empty row is the header; each table line remembers its row number,
so the splitter can cut between rows, repeat the header in every chunk, and cite
"sheet Sales, rows 2-40".
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from pathlib import Path
from typing import Any, Iterable

from doc_types import ConvertedDocument, Section
from errors import ConversionError
from text_formats import check_zip_size, convert_text_to_markdown, escape_heading_marker, read_text_file

# ---------------------------------------------------------------- PPTX


def convert_pptx_to_markdown(path: Path, source: str) -> ConvertedDocument:
    from pptx import Presentation

    check_zip_size(path)
    try:
        deck = Presentation(str(path))
    except Exception as exc:
        raise ConversionError(f"not a readable PowerPoint file ({exc}); re-save it as .pptx") from exc
    sections = []
    for number, slide in enumerate(deck.slides, start=1):
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None and title_shape.has_text_frame else ""
        parts = [f"# {title}"] if title else []
        others = [s for s in slide.shapes if title_shape is None or s.shape_id != title_shape.shape_id]
        for shape in _in_reading_order(others):
            parts += _shape_markdown(shape)
        notes = _notes(slide)
        if notes:
            parts.append(f"Speaker notes: {notes}")
        text = "\n\n".join(p for p in parts if p.strip())
        if text:
            sections.append(Section(text=text, slide=number))
    if not sections:
        raise ConversionError("the presentation has no text")
    title = (deck.core_properties.title or "").strip()
    first_heading = next((s.text[2:].split("\n")[0] for s in sections if s.text.startswith("# ")), "")
    return ConvertedDocument(source=source, title=title or first_heading or path.stem, kind="pptx", sections=sections)


def _in_reading_order(shapes: Iterable[Any]) -> list[Any]:
    """Top to bottom, then left to right: the order a reader takes in a slide."""
    return sorted(shapes, key=lambda s: ((s.top or 0) // 10000, s.left or 0))  # 10000 EMU (~0.3 mm) rows


def _shape_markdown(shape: Any) -> list[str]:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        return [part for inner in _in_reading_order(shape.shapes) for part in _shape_markdown(inner)]
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
        return [markdown_table(rows)] if rows else []
    if getattr(shape, "has_chart", False) and shape.has_chart and shape.chart.has_title:
        return [f"Chart: {shape.chart.chart_title.text_frame.text}"]
    if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
        return []
    placeholder = str(shape.placeholder_format.type) if shape.is_placeholder else ""
    bulleted = "BODY" in placeholder or "OBJECT" in placeholder  # a content placeholder holds a bullet list
    lines = []
    for paragraph in shape.text_frame.paragraphs:
        text = " ".join(paragraph.text.split())
        if not text:
            continue
        lines.append(f"{'  ' * paragraph.level}- {text}" if bulleted else escape_heading_marker(text))
    return ["\n".join(lines)] if bulleted else lines


def _notes(slide: Any) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    return " ".join(frame.text.split()) if frame is not None else ""


# ---------------------------------------------------------------- tables


def cell_text(value: Any) -> str:
    """A cell as table text: dates without a zero time, whole floats without .0, one line, pipes escaped."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime) and value.time() == dt.time(0):
        value = value.date()
    if isinstance(value, (dt.date, dt.time)):
        text = value.isoformat()
    elif isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        text = str(int(value))
    else:
        text = str(value)
    return " ".join(text.split()).replace("|", "\\|")


def markdown_table(rows: list[list[Any]]) -> str:
    cells = [[cell_text(v) for v in row] for row in rows]
    width = max(len(r) for r in cells)
    cells = [r + [""] * (width - len(r)) for r in cells]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + " --- |" * width]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells[1:]])


def table_section(numbered_rows: Iterable[tuple[int, list[Any]]], sheet: str | None) -> Section | None:
    """One sheet as a table section: first non-empty row the header, empty rows and trailing empty columns left out."""
    rows = [(n, [cell_text(v) for v in values]) for n, values in numbered_rows]
    rows = [(n, values) for n, values in rows if any(values)]
    if not rows:
        return None
    width = max(max((i + 1 for i, v in enumerate(values) if v), default=0) for _, values in rows)
    rows = [(n, values[:width] + [""] * (width - len(values))) for n, values in rows]
    if len(rows) == 1:  # a header alone: plain text
        return Section(text=" | ".join(v for v in rows[0][1] if v), sheet=sheet)
    lines = ["| " + " | ".join(values) + " |" for _, values in rows]
    text = "\n".join([lines[0], "|" + " --- |" * width] + lines[1:])
    return Section(text=text, sheet=sheet, row_numbers=[n for n, _ in rows[1:]])


# ---------------------------------------------------------------- XLSX


def convert_xlsx_to_markdown(path: Path, source: str) -> ConvertedDocument:
    import openpyxl

    check_zip_size(path)
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:
        raise ConversionError(f"not a readable Excel workbook ({exc}); re-save it as .xlsx") from exc
    sections = []
    try:
        for sheet in book.worksheets:
            if hasattr(sheet, "reset_dimensions"):
                sheet.reset_dimensions()  # a sheet claiming A1:XFD1048576 must not be read as a million padded rows
            rows = enumerate((list(r) for r in sheet.iter_rows(min_row=1, values_only=True)), start=1)
            section = table_section(rows, sheet.title)
            if section is not None:
                sections.append(section)
        title = (book.properties.title or "").strip() if book.properties else ""
    finally:
        book.close()
    if not sections:
        raise ConversionError("the workbook has no filled cells")
    return ConvertedDocument(source=source, title=title or path.stem, kind="xlsx", sections=sections)


# ---------------------------------------------------------------- CSV


def convert_csv_to_markdown(path: Path, source: str) -> ConvertedDocument:
    text, encoding, notes = read_text_file(path)
    try:
        rows = list(_csv_rows(text, "\t" if path.suffix.lower() == ".tsv" else None))
    except csv.Error as exc:
        doc = convert_text_to_markdown(path, source, kind="text")
        doc.notes.append(f"not well-formed CSV ({exc}); indexed as plain text")
        return doc
    section = table_section(rows, None)
    if section is None:
        raise ConversionError("the file has no values")
    return ConvertedDocument(source=source, title=path.stem, kind="csv", sections=[section], encoding=encoding, notes=notes)


def _csv_rows(text: str, delimiter: str | None) -> Iterable[tuple[int, list[str]]]:
    """(line where the record starts, its fields); a quoted field may run over several lines."""
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(text[:20000], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    line = 0
    for record in reader:
        yield line + 1, record
        line = reader.line_num
