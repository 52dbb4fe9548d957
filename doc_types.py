"""The shared types at the bottom of docqa: converted documents, their sections, and chunks.

Converters produce a ConvertedDocument of Sections; the splitter cuts it into Chunks; the
stores, the retriever and the answer keep those Chunks. All of them import this module
and it imports nothing of docqa's, so none of them needs to import another back. It also
holds what these types say about themselves: a chunk's id, where a chunk stands as a
person would cite it, and the programming language of a source file.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

CODE_LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "cpp", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala", ".groovy": "groovy", ".gradle": "groovy",
    ".cs": "csharp", ".fs": "fsharp", ".vb": "visualbasic", ".rb": "ruby", ".php": "php",
    ".swift": "swift", ".m": "objective-c", ".mm": "objective-c", ".dart": "dart",
    ".r": "r", ".jl": "julia", ".lua": "lua", ".pl": "perl", ".pm": "perl",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".fish": "shell", ".ps1": "powershell", ".bat": "batch",
    ".sql": "sql", ".css": "css", ".scss": "scss", ".sass": "sass", ".less": "less",
    ".vue": "vue", ".svelte": "svelte", ".hs": "haskell", ".ml": "ocaml", ".ex": "elixir", ".exs": "elixir",
    ".erl": "erlang", ".clj": "clojure", ".el": "emacs-lisp", ".lisp": "lisp", ".scm": "scheme",
    ".vim": "vim", ".zig": "zig", ".nim": "nim", ".f90": "fortran",
    ".proto": "protobuf", ".graphql": "graphql", ".tf": "terraform", ".cmake": "cmake",
    ".dockerfile": "dockerfile", ".makefile": "make", ".mk": "make",
}
CODE_FILE_NAMES: dict[str, str] = {
    "makefile": "make", "gnumakefile": "make", "dockerfile": "dockerfile", "containerfile": "dockerfile",
    "cmakelists.txt": "cmake", "jenkinsfile": "groovy", "rakefile": "ruby", "gemfile": "ruby",
}
CODE_EXTENSIONS = set(CODE_LANGUAGES)
IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".bmp"}
"""Image files, read by OCR (a TIFF may hold several pages)."""
PAGE_VIEW_EXTENSIONS = {".pdf", *IMAGE_EXTENSIONS}
"""Files whose pages can be shown rendered on a source card (page_images.py)."""
OCR_MARK = "OCR"
"""How a place read by OCR says so: "page 3 · OCR"."""


def language_of(source: str) -> str | None:
    """The programming language of a file, by extension or well-known name (Makefile, Dockerfile)."""
    name = source.rsplit("/", 1)[-1].lower()
    if name in CODE_FILE_NAMES:
        return CODE_FILE_NAMES[name]
    return CODE_LANGUAGES.get("." + name.rsplit(".", 1)[-1]) if "." in name else None


@dataclass
class Section:
    """Markdown text and where it starts in the original file."""

    text: str
    page: int | None = None  # 1-based physical page (PDF)
    page_label: str | None = None  # the page's printed label ("137", "xii"), where the PDF gives one that is not its number
    start_line: int | None = None  # 1-based line of the original file (text, markdown)
    heading_path: list[str] = field(default_factory=list)  # headings in force where it starts
    heading_levels: list[int] = field(default_factory=list)  # their markdown levels
    slide: int | None = None  # 1-based slide number (PPTX)
    sheet: str | None = None  # worksheet name (XLSX)
    row_numbers: list[int] | None = None  # a table section: the sheet or file row of each table line after the header
    ocr: bool = False  # the text was read from an image of the page by OCR, not from a text layer


@dataclass
class ConvertedDocument:
    source: str  # path relative to the documents folder, with forward slashes
    title: str
    kind: str  # a value of document_converter.KIND_BY_EXTENSION: pdf, epub, docx, pptx, xlsx, csv, html, json, yaml, markdown, text, code, image
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


@dataclass
class Chunk:
    id: str
    text: str
    source: str
    title: str
    chunk_index: int
    page: int | None = None
    page_label: str | None = None  # the label the book prints on that page; None: its number, or an index made before labels
    start_line: int | None = None
    end_line: int | None = None
    heading_path: list[str] = field(default_factory=list)
    slide: int | None = None
    sheet: str | None = None
    rows: list[int] | None = None  # [first, last] row of a sheet or CSV file, header row excluded
    symbol: str | None = None  # the function, method or class of a code chunk: "Parser.parse_config"
    ocr: bool = False  # read by OCR from a scanned page or an image file

    @property
    def lines(self) -> tuple[int, int] | None:
        if self.start_line is None or self.end_line is None:
            return None
        return (self.start_line, self.end_line)

    @property
    def location(self) -> str:
        """Where the chunk stands, as a person would cite it."""
        return describe_location([self])

    def embedding_text(self) -> str:
        """The text embedded: the heading path gives a chunk its topic; code also gets its file and name."""
        heading = " > ".join(self.heading_path)
        if self.symbol or (self.start_line is not None and language_of(self.source)):
            heading = f"{self.source} > {heading}" if heading else self.source
        elif self.sheet:
            heading = f"{self.sheet} > {heading}" if heading else self.sheet
        return f"{heading}\n{self.text}" if heading else self.text


def chunk_id(source: str, index: int, text: str) -> str:
    content = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return hashlib.sha256(f"{source}\x00{index}\x00{content}".encode("utf-8")).hexdigest()[:32]


def _span(numbers: list[int], one: str, many: str) -> str:
    low, high = min(numbers), max(numbers)
    return f"{one} {low}" if low == high else f"{many} {low}-{high}"


def printed_page(chunks: list[Chunk], page: int) -> str:
    """A PDF page as the book prints it ("137" for the 157th page, "xii"), else its number."""
    return next((c.page_label for c in chunks if c.page == page and c.page_label), str(page))


def describe_location(chunks: list[Chunk]) -> str:
    """Where a run of neighbouring chunks of one file stands: "page 3", "slides 2-3", "sheet Sales rows 2-40",
    "lines 10-42 (Parser.parse_config)", or the heading path. A PDF page is named by its printed label.
    Text read by OCR says so ("page 3 · OCR"; an image file's text: "OCR"), so a reader knows to check the scan."""
    place = _place(chunks)
    if any(c.ocr for c in chunks):
        return f"{place} · {OCR_MARK}" if place else OCR_MARK
    return place


def _place(chunks: list[Chunk]) -> str:
    pages = [c.page for c in chunks if c.page is not None]
    if pages:
        low, high = printed_page(chunks, min(pages)), printed_page(chunks, max(pages))
        return f"page {low}" if min(pages) == max(pages) else f"pages {low}-{high}"
    slides = [c.slide for c in chunks if c.slide is not None]
    if slides:
        return _span(slides, "slide", "slides")
    rows = [n for c in chunks if c.rows for n in c.rows]
    if rows:
        sheets = list(dict.fromkeys(c.sheet for c in chunks if c.sheet))
        where = f"sheet {', '.join(sheets)} " if sheets else ""
        return f"{where}{_span(rows, 'row', 'rows')}"
    lines = [n for c in chunks if c.lines for n in c.lines]
    if lines:
        symbols = list(dict.fromkeys(c.symbol for c in chunks if c.symbol))
        return _span(lines, "line", "lines") + (f" ({', '.join(symbols)})" if symbols else "")
    return " > ".join(chunks[0].heading_path) if chunks else ""


def _count(n: int, one: str) -> str:
    return f"{n} {one}" if n == 1 else f"{n} {one}s"


def describe_extent(doc: ConvertedDocument, chunks: list[Chunk]) -> str:
    """How long a document is, counted the way its places are cited: "12 pages", "3 slides",
    "240 rows", "310 lines"; "" for a document cited by headings alone (DOCX)."""
    pages = [s.page for s in doc.sections if s.page is not None]
    if pages:
        return _count(max(pages), "page")
    slides = [s.slide for s in doc.sections if s.slide is not None]
    if slides:
        return _count(max(slides), "slide")
    rows = [n for c in chunks if c.rows for n in c.rows]
    if rows:
        return _count(max(rows), "row")
    lines = [c.end_line for c in chunks if c.end_line is not None]
    return _count(max(lines), "line") if lines else ""
