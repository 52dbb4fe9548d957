"""Cut converted documents into chunks that keep their position (page, lines, headings).

Each section is split on its own, so a chunk never spans two PDF pages and its page
number is exact; line ranges are counted from the chunk's offset in its section.
Markdown-like documents prefer to cut just before a heading.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from langchain_text_splitters import RecursiveCharacterTextSplitter

from document_converter import ConvertedDocument

HEADING_SEPARATORS = ["\n# ", "\n## ", "\n### "]
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


@dataclass
class Chunk:
    id: str
    text: str
    source: str
    title: str
    chunk_index: int
    page: int | None = None
    start_line: int | None = None
    end_line: int | None = None
    heading_path: list[str] = field(default_factory=list)

    @property
    def lines(self) -> tuple[int, int] | None:
        if self.start_line is None or self.end_line is None:
            return None
        return (self.start_line, self.end_line)

    @property
    def location(self) -> str:
        """Where the chunk stands, as a person would cite it."""
        if self.page is not None:
            return f"page {self.page}"
        if self.lines:
            return f"lines {self.start_line}-{self.end_line}"
        return " > ".join(self.heading_path)

    def embedding_text(self) -> str:
        """The text embedded and keyword-indexed: the heading path gives a chunk its topic."""
        heading = " > ".join(self.heading_path)
        return f"{heading}\n{self.text}" if heading else self.text


def chunk_id(source: str, index: int, text: str) -> str:
    content = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return hashlib.sha256(f"{source}\x00{index}\x00{content}".encode("utf-8")).hexdigest()[:32]


def make_splitter(chunk_size: int, chunk_overlap: int, separators: list[str], markdown: bool) -> RecursiveCharacterTextSplitter:
    seps = (HEADING_SEPARATORS + list(separators)) if markdown else list(separators)
    return RecursiveCharacterTextSplitter(
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        separators=seps,
        add_start_index=True,
        strip_whitespace=True,
    )


def _heading_positions(text: str) -> list[tuple[int, int, str]]:
    """(offset, level, heading) of every markdown heading outside code fences."""
    out = []
    offset = 0
    in_fence = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
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
        if stripped.startswith("```") or stripped.startswith("~~~"):
            in_fence = not in_fence
        elif in_fence and line.startswith("#"):
            lines[i] = "\x1f" + line[1:]
    return "\n".join(lines)


def _path_at(base: list[str], levels: list[int], headings: list[tuple[int, int, str]], position: int) -> list[str]:
    """The heading path in force at `position`, starting from the path inherited by the section."""
    levels = levels if len(levels) == len(base) else list(range(1, len(base) + 1))
    stack = list(zip(levels, base))
    for offset, level, heading in headings:
        if offset > position:
            break
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
    return [h for _, h in stack]


def split_document(
    doc: ConvertedDocument,
    chunk_size: int = 1000,
    chunk_overlap: int = 200,
    separators: list[str] | None = None,
) -> list[Chunk]:
    separators = separators if separators is not None else ["\n\n", "\n", ". ", " ", ""]
    markdown = doc.kind in ("pdf", "docx", "markdown")
    splitter = make_splitter(chunk_size, chunk_overlap, separators, markdown)
    chunks: list[Chunk] = []
    for section in doc.sections:
        headings = _heading_positions(section.text) if markdown else []
        masked = _mask_fenced_comments(section.text) if markdown else section.text
        for piece in splitter.create_documents([masked]):
            text = piece.page_content
            if not text.strip():
                continue
            start = piece.metadata.get("start_index", -1)
            if start < 0:
                start = masked.find(text)
            if start >= 0:
                text = section.text[start : start + len(text)]  # the original, unmasked text
            start_line = end_line = None
            if section.start_line is not None and start >= 0:
                start_line = section.start_line + section.text.count("\n", 0, start)
                end_line = start_line + text.count("\n")
            path = _path_at(section.heading_path, section.heading_levels, headings, max(start, 0)) if markdown else []
            index = len(chunks)
            chunks.append(
                Chunk(
                    id=chunk_id(doc.source, index, text),
                    text=text,
                    source=doc.source,
                    title=doc.title,
                    chunk_index=index,
                    page=section.page,
                    start_line=start_line,
                    end_line=end_line,
                    heading_path=path,
                )
            )
    return chunks
