"""Behaviour of chunking: bounded sizes with overlap, and every chunk knows where it came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import THINKPYTHON_PDF, require
from doc_types import Chunk, ConvertedDocument, Section
from document_converter import convert_document
from retriever import Passage
from text_splitter import split_document


def text_doc(text: str, source: str = "notes.txt", kind: str = "text") -> ConvertedDocument:
    return ConvertedDocument(source=source, title=Path(source).stem, kind=kind, sections=[Section(text=text, start_line=1)])


def numbered_lines(count: int, marker_line: int | None = None) -> str:
    """Lines of varying length, some blank, so chunk borders fall at different places."""
    out = []
    for n in range(1, count + 1):
        if n == marker_line:
            out.append("The descaling MARKER sits on this line.")
        elif n % 7 == 0:
            out.append("")
        else:
            out.append(f"Line {n} says espresso" + " crema" * (n % 5))
    return "\n".join(out) + "\n"


def shared_length(a: str, b: str) -> int:
    """How many characters the end of `a` shares with the start of `b`."""
    for size in range(min(len(a), len(b)), 0, -1):
        if a.endswith(b[:size]):
            return size
    return 0


@pytest.fixture(scope="module")
def thinkpython_chunks() -> list[Chunk]:
    doc = convert_document(require(THINKPYTHON_PDF), "thinkpython2.pdf")
    return split_document(doc, 1000, 200)


# --- Sizes and overlap ---------------------------------------------------------------------


def test_chunks_never_exceed_chunk_size(thinkpython_chunks):
    assert len(thinkpython_chunks) > 500
    assert max(len(c.text) for c in thinkpython_chunks) <= 1000


@pytest.mark.parametrize(("size", "overlap"), [(120, 30), (300, 60), (80, 0)])
def test_small_chunk_sizes_are_respected(size, overlap):
    text = numbered_lines(150) + "x" * 500 + "\n"  # one unbreakable run longer than a chunk
    chunks = split_document(text_doc(text), size, overlap)
    assert all(len(c.text) <= size for c in chunks)
    assert "".join(c.text for c in chunks).count("x") >= 500


PROSE = " ".join(
    f"Sentence {n} explains how the {['grinder', 'boiler', 'pump', 'portafilter'][n % 4]} shapes the shot."
    for n in range(120)
)


@pytest.mark.parametrize("text", [PROSE, PROSE.replace(". ", ".\n")], ids=["one-paragraph", "one-line-each"])
def test_neighbouring_chunks_of_a_long_paragraph_overlap(text):
    # The recursive splitter overlaps pieces it had to cut; separate paragraphs that fit are not padded.
    chunks = split_document(text_doc(text), 300, 60)
    assert len(chunks) > 10
    shared = [shared_length(a.text, b.text) for a, b in zip(chunks, chunks[1:], strict=False)]
    assert all(20 <= n <= 60 for n in shared), shared


def test_zero_overlap_shares_nothing_and_loses_nothing():
    text = numbered_lines(100)
    chunks = split_document(text_doc(text), 200, 0)
    assert all(shared_length(a.text, b.text) < 5 for a, b in zip(chunks, chunks[1:], strict=False))
    assert " ".join(c.text for c in chunks).split() == text.split()


def test_separators_are_configurable():
    records = [f"order-{n:03d}:ristretto-lungo-doppio" for n in range(40)]
    text = "§".join(records)  # no spaces or newlines: the default separators cannot split at records
    by_default = split_document(text_doc(text), 150, 0)
    by_record = split_document(text_doc(text), 150, 0, separators=["§", ""])
    assert any(p not in records for c in by_default for p in c.text.split("§") if p)
    assert all(p in records for c in by_record for p in c.text.split("§") if p)
    assert all(len(c.text) <= 150 for c in by_record)


# --- Where each chunk came from ------------------------------------------------------------


def test_every_chunk_has_source_title_and_consecutive_index():
    doc = ConvertedDocument(
        source="guides/coffee.pdf", title="Coffee Guide", kind="pdf",
        sections=[Section(text=numbered_lines(40), page=1), Section(text=numbered_lines(40), page=2)],
    )
    chunks = split_document(doc, 250, 50)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert {(c.source, c.title) for c in chunks} == {("guides/coffee.pdf", "Coffee Guide")}


def test_pdf_chunks_carry_their_page_and_never_span_pages(tmp_path):
    import pymupdf

    pdf = pymupdf.open()
    for page_no in range(1, 4):
        page = pdf.new_page()
        for row in range(20):
            page.insert_text((72, 72 + row * 30), f"P{page_no}W{row} espresso notes for page {page_no} row {row}", fontsize=11)
    path = tmp_path / "notes.pdf"
    pdf.save(path)
    chunks = split_document(convert_document(path, "notes.pdf"), 200, 40)
    assert {c.page for c in chunks} == {1, 2, 3}
    for chunk in chunks:
        markers = {word[:2] for word in chunk.text.split() if word.startswith("P") and "W" in word}
        assert markers == {f"P{chunk.page}"}
        assert (chunk.start_line, chunk.end_line) == (None, None)
        assert chunk.location == f"page {chunk.page}"


def test_thinkpython_chunks_cite_the_page_their_text_is_on(thinkpython_chunks):
    xor = [c for c in thinkpython_chunks if "bitwise operator called\nXOR" in c.text]
    assert [c.page for c in xor] == [24]
    assert xor[0].heading_path == ["The way of the program", "1.4. Arithmetic operators"]


@pytest.mark.parametrize("marker_line", [1, 57, 133, 200])
def test_text_chunk_line_range_contains_the_marker_line(marker_line):
    chunks = split_document(text_doc(numbered_lines(200, marker_line)), 300, 60)
    holding = [c for c in chunks if "MARKER" in c.text]
    assert holding
    for chunk in holding:
        assert chunk.start_line <= marker_line <= chunk.end_line


def test_text_chunk_line_ranges_match_the_original_lines():
    text = numbered_lines(200)
    original = text.splitlines()
    for chunk in split_document(text_doc(text), 300, 60):
        lines = chunk.text.splitlines()
        assert lines[0] == original[chunk.start_line - 1]
        assert lines[-1] == original[chunk.end_line - 1]
        assert chunk.location == f"lines {chunk.start_line}-{chunk.end_line}"


def test_line_numbers_survive_windows_line_endings(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(numbered_lines(120, marker_line=90).replace("\n", "\r\n").encode("utf-8"))
    chunks = split_document(convert_document(path, "notes.txt"), 250, 50)
    holding = [c for c in chunks if "MARKER" in c.text]
    assert holding and all(c.start_line <= 90 <= c.end_line for c in holding)


GUIDE = """# Guide

Welcome to the espresso guide.

## Install

Pick the package for your system.

### Linux

```sh
# install with apt, this comment is not a heading
sudo apt install espresso
```

{linux}

### Windows

Run the installer and follow the wizard.

## Usage

Start the machine and wait for the light.
"""


def test_markdown_chunks_carry_their_heading_path():
    text = GUIDE.format(linux="Linux users can also build from source with make. " * 12)
    chunks = split_document(text_doc(text, "guide.md", "markdown"), 80, 20)
    expected = {
        "Welcome": "Guide",
        "Pick the package": "Guide > Install",
        "install with apt": "Guide > Install > Linux",  # a comment in a code fence is no heading
        "build from source": "Guide > Install > Linux",
        "wizard": "Guide > Install > Windows",
        "wait for the light": "Guide > Usage",
    }
    for needle, path in expected.items():
        paths = {" > ".join(c.heading_path) for c in chunks if needle in c.text}
        assert paths == {path}, needle


BOOK = """# Chapter 3

## Functions

{functions}

### Parameters

{parameters}
"""


def test_sections_are_cut_at_their_headings_before_size():
    functions = "A function is a named sequence of statements that performs a computation. " * 2
    parameters = "A parameter receives the value of an argument when the function is called. " * 2
    chunks = split_document(text_doc(BOOK.format(functions=functions, parameters=parameters), "book.md", "markdown"), 400, 40)
    assert [(c.heading_path, c.text.split("\n")[0]) for c in chunks] == [
        (["Chapter 3", "Functions"], "# Chapter 3"),  # a heading with nothing under it stays with the next
        (["Chapter 3", "Functions", "Parameters"], "### Parameters"),
    ]


def test_a_sliver_of_a_section_joins_the_next_and_keeps_its_own_path():
    text = BOOK.format(functions="Short.", parameters="A parameter receives the value of an argument. " * 3)
    (chunk,) = split_document(text_doc(text, "book.md", "markdown"), 400, 40)
    assert chunk.heading_path == ["Chapter 3", "Functions"] and "### Parameters" in chunk.text


def test_code_block_is_not_cut_at_a_comment_line():
    chunks = split_document(text_doc(GUIDE.format(linux=""), "guide.md", "markdown"), 200, 40)
    (code,) = [c for c in chunks if "sudo apt install" in c.text]
    assert "```sh\n# install with apt, this comment is not a heading\nsudo apt install espresso\n```" in code.text


def test_heading_path_is_part_of_the_embedded_text():
    chunks = split_document(text_doc(GUIDE.format(linux=""), "guide.md", "markdown"), 200, 40)
    wizard = next(c for c in chunks if c.text.startswith("### Windows"))
    assert wizard.embedding_text() == "Guide > Install > Windows\n" + wizard.text


def test_plain_text_has_no_heading_path():
    chunks = split_document(text_doc("# not markdown here\nplain words\n"), 200, 40)
    assert chunks[0].heading_path == []


# --- Identity ------------------------------------------------------------------------------


def test_chunk_ids_are_deterministic():
    text = numbered_lines(120)
    first = [c.id for c in split_document(text_doc(text), 300, 60)]
    again = [c.id for c in split_document(text_doc(text), 300, 60)]
    assert first == again
    assert len(set(first)) == len(first)


def test_changed_text_changes_only_the_affected_ids():
    text = numbered_lines(120)
    before = split_document(text_doc(text), 300, 60)
    after = split_document(text_doc(text.replace("Line 110 says", "Line 110 now says")), 300, 60)
    changed = [a.chunk_index for a, b in zip(before, after, strict=False) if a.id != b.id]
    assert changed and all(before[i].start_line <= 110 <= before[i].end_line + 1 for i in changed)
    assert before[0].id == after[0].id


def test_same_text_in_another_file_gets_another_id():
    text = numbered_lines(30)
    a = split_document(text_doc(text, "a.txt"), 300, 60)
    b = split_document(text_doc(text, "b.txt"), 300, 60)
    assert not {c.id for c in a} & {c.id for c in b}


def test_a_quote_is_placed_by_its_own_lines_and_the_heading_above_it():
    """A short section is kept with the next one, so a chunk can start under one heading and run on
    under another: a quote from the second is placed on its own lines, or (in a file without lines,
    such as converted HTML) under its own heading, not the one the chunk starts under."""
    text = (
        "# Guide\n\n## Chaining\n\nCall chain on an object to wrap it, and value to unwrap it.\n\n"
        "## Links\n\nA port to another language that also encourages chaining is listed here.\n"
        "It is maintained by volunteers.\n"
    )
    late = "A port to another language that also encourages chaining is listed here."
    lined = split_document(text_doc(text, "guide.md", "markdown"), chunk_size=1000, chunk_overlap=0)[0]
    assert "## Links" in lined.text and lined.heading_path == ["Guide", "Chaining"], "the short section runs on into the next"
    assert Passage([lined], 1.0).place_of(late) == "guide.md, line 9"
    html = ConvertedDocument(source="guide.html", title="guide", kind="markdown", sections=[Section(text=text)])
    unlined = split_document(html, chunk_size=1000, chunk_overlap=0)[0]
    passage = Passage([unlined], 1.0)
    assert passage.label == "guide.html, Guide > Chaining"
    assert passage.place_of(late) == "guide.html, Guide > Links"
    assert passage.place_of("Call chain on an object to wrap it, and value to unwrap it.") == passage.label
    assert passage.place_of("no such sentence") == passage.label
