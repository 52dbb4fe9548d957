"""Cut converted documents into chunks that keep their position (page, slide, rows, lines, headings).

Each section is split on its own, so a chunk never spans two PDF pages or two slides and
its position is exact; line ranges are counted from the chunk's offset in its section.
Markdown-like documents prefer to cut just before a heading. Tables (sheets, CSV files)
are cut between rows, and every piece repeats the header row. Source code is cut along
its definitions (code_chunker): a chunk per function, method or class, named.
Everything else is cut by size with overlap, at paragraph, sentence or word boundaries.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable

from code_chunker import code_units
from doc_types import Chunk, ConvertedDocument, Section, chunk_id, language_of

if TYPE_CHECKING:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

HEADING_SEPARATORS = ["\n# ", "\n## ", "\n### "]
MARKDOWN_KINDS = {"pdf", "epub", "docx", "pptx", "html", "markdown"}
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def make_splitter(chunk_size: int, chunk_overlap: int, separators: list[str], markdown: bool) -> RecursiveCharacterTextSplitter:
    # Imported here: about 0.4 s (langchain_core, pydantic), which only splitting a file needs.
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    seps = (HEADING_SEPARATORS + list(separators)) if markdown else list(separators)
    return RecursiveCharacterTextSplitter(
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        separators=[separator_pattern(sep) for sep in seps],
        is_separator_regex=True,
        add_start_index=True,
        strip_whitespace=True,
    )


def separator_pattern(separator: str) -> str:
    """A split point as a regular expression; after sentence punctuation (". ") only the space splits,
    so the full stop stays with its sentence instead of opening the next chunk."""
    stripped = separator.rstrip()
    if stripped and stripped[0] in ".!?;:," and stripped != separator:
        return f"(?<={re.escape(stripped)}){re.escape(separator[len(stripped):])}"
    return re.escape(separator)


def heading_positions(text: str) -> list[tuple[int, int, str]]:
    """(offset, level, heading) of every markdown heading outside code fences."""
    out = []
    offset = 0
    in_fence = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence:
            match = _HEADING.match(stripped)
            if match:
                out.append((offset, len(match.group(1)), match.group(2)))
        offset += len(line)
    return out


def _mask_fenced_comments(text: str) -> str:
    """Hide a '#' opening a line inside a code fence, keeping every offset.

    The heading separators ("\n# ") would otherwise cut a code block at a shell or Python
    comment, leaving its opening fence in one chunk and its code in the next.
    """
    lines = text.split("\n")
    in_fence = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif in_fence and line.startswith("#"):
            lines[i] = "\x1f" + line[1:]
    return "\n".join(lines)


def _path_at(base: list[str], levels: list[int], headings: list[tuple[int, int, str]], position: int) -> list[str]:
    """The heading path in force at `position`, starting from the path inherited by the section."""
    levels = levels if len(levels) == len(base) else list(range(1, len(base) + 1))
    stack = list(zip(levels, base, strict=True))
    for offset, level, heading in headings:
        if offset > position:
            break
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
    return [h for _, h in stack]


def heading_path_at(text: str, path: list[str], position: int) -> list[str]:
    """The heading path at `position` of a chunk's `text`, whose own text begins under `path`: a chunk
    that runs on past a heading (a short section kept with the next) stands under another one there.
    The levels of `path`'s headings are not kept with a chunk, so they are taken as 1, 2, …"""
    begins = _content_offset(text)
    return _path_at(path, [], [h for h in heading_positions(text) if h[0] > begins], position)


def split_document(
    doc: ConvertedDocument,
    chunk_size: int = 1000,
    chunk_overlap: int = 200,
    separators: list[str] | None = None,
    code_chunk_size: int | None = None,
) -> list[Chunk]:
    separators = separators if separators is not None else ["\n\n", "\n", ". ", " ", ""]
    markdown = doc.kind in MARKDOWN_KINDS
    splitter = make_splitter(chunk_size, chunk_overlap, separators, markdown)
    chunks: list[Chunk] = []

    def add(text: str, section: Section, **position: object) -> None:
        index = len(chunks)
        position.setdefault("page", section.page)
        position.setdefault("page_label", section.page_label)
        position.setdefault("slide", section.slide)
        position.setdefault("sheet", section.sheet)
        position.setdefault("ocr", section.ocr)
        chunks.append(Chunk(id=chunk_id(doc.source, index, text), text=text, source=doc.source, title=doc.title, chunk_index=index, **position))  # type: ignore[arg-type]

    for section in doc.sections:
        if doc.kind == "code" and _add_code(section, doc.source, code_chunk_size or max(chunk_size, 2000), splitter, add):
            continue
        if section.row_numbers is not None:
            _add_table(section, chunk_size, splitter, add)
            continue
        headings = heading_positions(section.text) if markdown else []
        masked = _mask_fenced_comments(section.text) if markdown else section.text
        for offset, end in _heading_parts(section.text, headings, chunk_size):
            for piece in splitter.create_documents([masked[offset:end]]):
                text = piece.page_content
                if not text.strip():
                    continue
                start = piece.metadata.get("start_index", -1)
                if start < 0:
                    start = masked.find(text, offset) - offset
                start += offset
                text = section.text[start : start + len(text)]  # the original, unmasked text
                start_line = end_line = None
                if section.start_line is not None:
                    start_line = section.start_line + section.text.count("\n", 0, start)
                    end_line = start_line + text.count("\n")
                path = _path_at(section.heading_path, section.heading_levels, headings, start + _content_offset(text)) if markdown else list(section.heading_path)
                add(text, section, start_line=start_line, end_line=end_line, heading_path=path)
    return chunks


def _heading_parts(text: str, headings: list[tuple[int, int, str]], chunk_size: int) -> list[tuple[int, int]]:
    """(start, end) offsets of the runs of text between headings, each run starting at its heading.

    A heading with nothing under it but another heading stays with the one below it, so
    "# Chapter 3" is not a chunk of its own; so does a section shorter than a quarter chunk
    when the two fit one chunk, so a one-line section does not become a sliver. Every run
    is then cut by size on its own.
    """
    bounds = [0] + [offset for offset, _, _ in headings if offset > 0] + [len(text)]
    parts: list[tuple[int, int]] = []
    start = 0
    for end, after in zip(bounds[1:], bounds[2:] + [len(text)], strict=True):
        body = _content_offset(text[start:end]) < end - start
        small = end - start < chunk_size // 4 and after - start <= chunk_size
        if body and not small:
            parts.append((start, end))
            start = end
    if start < len(text):
        parts.append((start, len(text)))
    return parts


def _content_offset(text: str) -> int:
    """Offset of the first line that is neither blank nor a heading: where a chunk's own text begins."""
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.strip() and not _HEADING.match(line.strip()):
            return offset
        offset += len(line)
    return len(text)


def _add_code(section: Section, source: str, max_chars: int, splitter: RecursiveCharacterTextSplitter, add: Callable[..., None]) -> bool:
    """A code section cut along its definitions; False when its language cannot be parsed here."""
    language = language_of(source)
    units = code_units(section.text, language, max_chars) if language else None
    if units is None:
        return False
    lines = section.text.split("\n")
    first = section.start_line or 1
    for unit in units:
        text = "\n".join(lines[unit.start_line - 1 : unit.end_line])
        path = unit.symbol.split(".") if unit.symbol else []
        where = {"start_line": first + unit.start_line - 1, "end_line": first + unit.end_line - 1, "heading_path": path, "symbol": unit.symbol}
        pieces = [text] if len(text) <= max_chars else [p.page_content for p in splitter.create_documents([text])]
        for piece in pieces:  # more than one only for a single line longer than the limit
            if piece.strip():
                add(piece, section, **where)
    return True


def _add_table(section: Section, chunk_size: int, splitter: RecursiveCharacterTextSplitter, add: Callable[..., None]) -> None:
    """A markdown table cut between rows, the header row (and its rule) repeated at the top of every piece."""
    lines = section.text.split("\n")
    header, body = "\n".join(lines[:2]), lines[2:]
    numbers = section.row_numbers or []
    piece: list[str] = []
    piece_rows: list[int] = []
    size = len(header)

    def flush() -> None:
        nonlocal size
        if piece:
            add(header + "\n" + "\n".join(piece), section, rows=[piece_rows[0], piece_rows[-1]], heading_path=list(section.heading_path))
        piece.clear()
        piece_rows.clear()
        size = len(header)

    for n, row in enumerate(body):
        number = numbers[n] if n < len(numbers) else (numbers[-1] if numbers else n + 2)
        if len(header) + len(row) + 1 > chunk_size:
            flush()
            for part in splitter.split_text(row):  # a row too wide for one chunk: its cells in pieces
                add(f"{header}\n{part}", section, rows=[number, number], heading_path=list(section.heading_path))
            continue
        if size + len(row) + 1 > chunk_size:
            flush()
        piece.append(row)
        piece_rows.append(number)
        size += len(row) + 1
    flush()
