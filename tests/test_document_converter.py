"""Behaviour of document conversion: PDF, DOCX and text become markdown that remembers its place.

Real files throughout: the Think Python PDF from the evaluation set, and small PDFs and
DOCX files generated here with PyMuPDF and python-docx.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import document_converter
from conftest import THINKPYTHON_PDF, require
from doc_types import ConvertedDocument
from document_converter import convert_document
from errors import ConversionError
from pdf_converter import NEEDS_OCR
from text_formats import decode_text


def make_pdf(path: Path, pages: list[list[tuple[str, float]]]) -> Path:
    """A PDF with one list of (text, font size) lines per page."""
    import pymupdf

    pdf = pymupdf.open()
    for lines in pages:
        page = pdf.new_page()
        y = 72.0
        for text, size in lines:
            page.insert_text((72, y), text, fontsize=size)
            y += size * 1.6
    pdf.save(path)
    pdf.close()
    return path


def fails_with(path: Path, fragment: str) -> str:
    with pytest.raises(ConversionError) as info:
        convert_document(path, path.name)
    message = str(info.value)
    assert fragment.lower() in message.lower()
    return message


# --- Think Python: pages and headings ----------------------------------------------------


@pytest.fixture(scope="module")
def thinkpython() -> ConvertedDocument:
    return convert_document(require(THINKPYTHON_PDF), "thinkpython2.pdf")


def pages_containing(doc: ConvertedDocument, needle: str) -> list[int]:
    return [s.page for s in doc.sections if needle in s.text]


@pytest.mark.parametrize(
    ("needle", "pages"),
    [
        ("Jeff Elkner", [5, 6]),  # the preface's history of the book
        ("bitwise operator called\nXOR", [24]),  # 1.4 Arithmetic operators (dev.jsonl dev-02)
        ("Maximum recursion depth exceeded", [74, 89, 254, 255]),
    ],
)
def test_pdf_text_is_found_on_its_physical_page(thinkpython, needle, pages):
    assert pages_containing(thinkpython, needle) == pages


def test_pdf_sections_are_one_per_page_in_order(thinkpython):
    numbers = [s.page for s in thinkpython.sections]
    assert numbers == sorted(set(numbers))
    assert 270 <= len(numbers) <= 288  # a few blank pages have no section


def test_pdf_section_headings_become_markdown_headings(thinkpython):
    page = next(s for s in thinkpython.sections if s.page == 41)
    headings = [line for line in page.text.splitlines() if line.startswith("#")]
    assert "# Functions" in headings
    assert any(h.endswith(" 3.1. Function calls") for h in headings)


def test_pdf_heading_path_carries_over_from_earlier_pages(thinkpython):
    page_24 = next(s for s in thinkpython.sections if s.page == 24)
    assert page_24.heading_path == ["The way of the program", "1.4. Arithmetic operators"]


def test_pdf_code_comments_are_not_mistaken_for_headings(thinkpython):
    # Page 36 shows `# compute the percentage of the hour that has elapsed` in a code sample.
    page = next(s for s in thinkpython.sections if s.page == 36)
    assert "compute the percentage of the hour" in page.text
    assert not any(
        line.startswith("# ") and "percentage" in line for line in page.text.splitlines()
    )


def test_pdf_running_headers_and_page_numbers_are_dropped(tmp_path):
    bodies = [
        "Burr grinders crush beans evenly.",
        "Blade grinders chop beans unevenly.",
        "Tamping presses the grounds flat.",
        "Descaling removes limescale from the boiler.",
    ]
    pages = [[("Espresso Guide", 9), (body, 11), (str(n), 9)] for n, body in enumerate(bodies, start=1)]
    doc = convert_document(make_pdf(tmp_path / "book.pdf", pages), "book.pdf")
    assert [(s.page, s.text) for s in doc.sections] == list(enumerate(bodies, start=1))


def make_labelled_pdf(path: Path) -> Path:
    """Five pages printed as i, ii, then 1, 2, 3: front matter in roman numerals, as books do."""
    import pymupdf

    words = ["Preface", "Contents", "Tuples are immutable sequences.", "Dictionaries map keys to values.", "Sets hold unique items."]
    make_pdf(path, [[(text, 11)] for text in words])
    pdf = pymupdf.open(path)
    pdf.set_page_labels([{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1}, {"startpage": 2, "style": "D", "firstpagenum": 1}])
    pdf.saveIncr()
    pdf.close()
    return path


def test_pdf_pages_keep_the_label_the_book_prints(tmp_path):
    doc = convert_document(make_labelled_pdf(tmp_path / "book.pdf"), "book.pdf")
    assert [(s.page, s.page_label) for s in doc.sections] == [(1, "i"), (2, "ii"), (3, "1"), (4, "2"), (5, "3")]
    plain = convert_document(make_pdf(tmp_path / "plain.pdf", [[("No labels here.", 11)], [("Nor here.", 11)]]), "plain.pdf")
    assert [(s.page, s.page_label) for s in plain.sections] == [(1, None), (2, None)], "a page's own number is no label"


def test_pdf_labels_stored_as_hex_strings_are_decoded(tmp_path):
    """A label prefix written as a PDF hex string (UTF-16 with its byte-order mark, or plain bytes)
    reads as printed: it was cited as "page <FEFF00310036>" (a PDF made from DocBook)."""
    import pymupdf

    words = ["Globs map names to types.", "Magic rules read the first bytes.", "Aliases name a type twice.", "Icons show the type."]
    path = make_pdf(tmp_path / "spec.pdf", [[(text, 11)] for text in words])
    pdf = pymupdf.open(path)
    pdf.xref_set_key(pdf.pdf_catalog(), "PageLabels", "<</Nums[0<</P<FEFF0031>>>1<</P<FEFF0041002D0032>>>2<</P<412D33>>>3<</P<FEFF0034>>>]>>")
    pdf.saveIncr()
    pdf.close()
    doc = convert_document(path, "spec.pdf")
    assert [(s.page, s.page_label) for s in doc.sections] == [(1, None), (2, "A-2"), (3, "A-3"), (4, None)]


def test_generated_pdf_large_lines_become_headings(tmp_path):
    body = "The machine heats water to ninety three degrees before pulling a shot of espresso."
    pages = [
        [("Espresso Basics", 22)] + [(body, 11)] * 12,
        [("Cleaning", 22)] + [(body, 11)] * 12,
    ]
    doc = convert_document(make_pdf(tmp_path / "coffee.pdf", pages), "coffee.pdf")
    assert doc.sections[0].text.startswith("# Espresso Basics\n\n")
    assert doc.sections[1].text.startswith("# Cleaning\n\n")
    assert doc.sections[1].heading_path == ["Espresso Basics"]


def test_pdf_ligatures_are_read_as_their_letters(tmp_path):
    """A typeset PDF's "ﬁ" and "ﬂ" glyphs would otherwise stay single characters that no search for "file" finds."""
    import pymupdf

    pdf = pymupdf.open()
    page = pdf.new_page()
    font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # fonts-dejavu-core: a font that has the ligature glyphs
    page.insert_text((72, 72), "The conﬁguration ﬁle is ﬂexible and ﬀective.", fontfile=font, fontname="dejavu")
    pdf.save(tmp_path / "typeset.pdf")
    text = convert_document(tmp_path / "typeset.pdf", "typeset.pdf").sections[0].text
    assert "The configuration file is flexible and ffective." in text
    assert not any("\ufb00" <= ch <= "\ufb06" for ch in text)


# --- DOCX ----------------------------------------------------------------------------------


def make_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Espresso Handbook", 0)
    document.add_heading("Brewing", 1)
    document.add_paragraph("Grind the beans finely.")
    document.add_paragraph("Fresh beans", style="List Bullet")
    document.add_paragraph("Filtered water", style="List Bullet")
    document.add_heading("Steps", 2)
    document.add_paragraph("Heat the machine", style="List Number")
    document.add_paragraph("Pull the shot", style="List Number")
    table = document.add_table(rows=3, cols=2)
    for r, (drink, grams) in enumerate([("Drink", "Grams"), ("Ristretto", "15"), ("Lungo | long", "9")]):
        table.cell(r, 0).text = drink
        table.cell(r, 1).text = grams
    document.add_paragraph("Enjoy after the table.")
    document.save(str(path))
    return path


def test_docx_becomes_markdown_in_document_order(tmp_path):
    doc = convert_document(make_docx(tmp_path / "handbook.docx"), "handbook.docx")
    assert doc.kind == "docx"
    assert doc.title == "Espresso Handbook"
    assert doc.markdown == (
        "# Espresso Handbook\n\n"
        "## Brewing\n\n"
        "Grind the beans finely.\n\n"
        "- Fresh beans\n"
        "- Filtered water\n\n"
        "### Steps\n\n"
        "1. Heat the machine\n"
        "1. Pull the shot\n\n"
        "| Drink | Grams |\n"
        "| --- | --- |\n"
        "| Ristretto | 15 |\n"
        "| Lungo \\| long | 9 |\n\n"
        "Enjoy after the table."
    )


def test_docx_without_text_is_refused(tmp_path):
    import docx

    path = tmp_path / "blank.docx"
    docx.Document().save(str(path))
    fails_with(path, "no text")


def test_docx_that_is_not_a_zip_is_refused(tmp_path):
    path = tmp_path / "fake.docx"
    path.write_text("I am plain text pretending to be Word.")
    fails_with(path, "not a valid DOCX")


# --- Text encodings ------------------------------------------------------------------------

TEXT = "café naïve – 10 €\nsecond line\n"


@pytest.mark.parametrize(
    ("raw", "encoding"),
    [
        (TEXT.encode("utf-8"), "utf-8"),
        (TEXT.encode("utf-8-sig"), "utf-8-sig"),
        (b"\xff\xfe" + TEXT.encode("utf-16-le"), "utf-16"),
        (b"\xfe\xff" + TEXT.encode("utf-16-be"), "utf-16"),
    ],
    ids=["utf-8", "utf-8-bom", "utf-16-le-bom", "utf-16-be-bom"],
)
def test_unicode_text_is_decoded_without_a_note(raw, encoding):
    assert decode_text(raw) == (TEXT, encoding, [])


@pytest.mark.parametrize(
    "text",
    ["café naïve", "Le café est très naïve, déjà vu à la crème brûlée.\n", "naïve résumé – “quotes” €5"],
)
def test_legacy_western_text_is_decoded_as_cp1252_with_a_note(text):
    decoded, encoding, notes = decode_text(text.encode("cp1252"))
    assert (decoded, encoding) == (text, "cp1252")
    assert len(notes) == 1 and "not valid UTF-8" in notes[0] and "cp1252" in notes[0]


def test_legacy_cyrillic_text_is_not_forced_into_cp1252():
    text = "Привет, как дела? Это тест кодировки."
    decoded, encoding, notes = decode_text(text.encode("cp1251"))
    assert decoded == text
    assert notes


def test_legacy_text_file_keeps_its_note_on_the_document(tmp_path):
    path = tmp_path / "menu.txt"
    path.write_bytes("Menu du café\ncrème brûlée\n".encode("cp1252"))
    doc = convert_document(path, "menu.txt")
    assert doc.markdown == "Menu du café\ncrème brûlée\n"
    assert doc.encoding == "cp1252"
    assert doc.notes and "cp1252" in doc.notes[0]


def test_windows_line_endings_are_normalised(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    doc = convert_document(path, "notes.txt")
    assert doc.sections[0].text == "one\ntwo\nthree\n"
    assert doc.sections[0].start_line == 1


def test_markdown_title_is_its_first_heading(tmp_path):
    path = tmp_path / "guide.md"
    path.write_text("Intro line\n\n# Install Guide\n\nText.\n", encoding="utf-8")
    doc = convert_document(path, "guide.md")
    assert (doc.kind, doc.title) == ("markdown", "Install Guide")


# --- Files that cannot be converted --------------------------------------------------------


def test_binary_data_named_txt_is_refused(tmp_path):
    path = tmp_path / "photo.txt"
    path.write_bytes(bytes(range(256)) * 8)
    fails_with(path, "binary data")


def test_scanned_pdf_with_only_an_image_needs_ocr(tmp_path):
    import pymupdf

    pdf = pymupdf.open()
    page = pdf.new_page()
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 64, 64), False)
    pixmap.clear_with(180)
    page.insert_image(pymupdf.Rect(72, 72, 400, 400), pixmap=pixmap)
    path = tmp_path / "scan.pdf"
    pdf.save(path)
    assert fails_with(path, "needs OCR") == NEEDS_OCR


def test_encrypted_pdf_is_refused_with_what_to_do(tmp_path):
    import pymupdf

    pdf = pymupdf.open()
    pdf.new_page().insert_text((72, 72), "The vault code is 4711.")
    path = tmp_path / "locked.pdf"
    pdf.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
    message = fails_with(path, "encrypted PDF")
    assert "password" in message and "unencrypted copy" in message


def test_truncated_pdf_is_refused_not_half_indexed(tmp_path):
    full = make_pdf(tmp_path / "full.pdf", [[(f"Page {n} about espresso grinders.", 11)] for n in range(3)])
    raw = full.read_bytes()
    for cut in (0.3, 0.6, 0.9):
        path = tmp_path / f"cut-{cut}.pdf"
        path.write_bytes(raw[: int(len(raw) * cut)])
        fails_with(path, "complete")  # "incomplete PDF ..." or "not a readable PDF ...; is the file complete?"


def test_garbage_named_pdf_is_refused(tmp_path):
    path = tmp_path / "notes.pdf"
    path.write_text("this was never a PDF")
    fails_with(path, "not a readable PDF")


@pytest.mark.parametrize("name", ["empty.txt", "empty.md", "empty.pdf", "empty.docx"])
def test_empty_file_is_refused(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"")
    with pytest.raises(ConversionError):
        convert_document(path, name)


def test_unsupported_type_is_refused(tmp_path):
    path = tmp_path / "archive.zip"
    path.write_bytes(b"PK\x03\x04")
    fails_with(path, "unsupported file type .zip")


# --- Conversion cache ----------------------------------------------------------------------


def test_unchanged_file_is_converted_once(tmp_path, monkeypatch):
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nThe grinder needs cleaning weekly.\n", encoding="utf-8")
    cache = tmp_path / "cache"
    first = convert_document(path, "notes.md", cache)

    def must_not_run(*args):
        raise AssertionError("converted again although the file is unchanged")

    monkeypatch.setattr(document_converter, "_convert_uncached", must_not_run)
    second = convert_document(path, "renamed/notes.md", cache)
    assert second.sections == first.sections
    assert second.source == "renamed/notes.md"  # same content under a new name cites the new name


def test_changed_file_is_converted_again(tmp_path):
    path = tmp_path / "notes.md"
    cache = tmp_path / "cache"
    path.write_text("The grinder needs cleaning weekly.\n", encoding="utf-8")
    convert_document(path, "notes.md", cache)
    path.write_text("The grinder needs cleaning daily.\n", encoding="utf-8")
    assert "daily" in convert_document(path, "notes.md", cache).markdown
    assert len(list(cache.iterdir())) == 2


def test_cache_files_are_plain_json(tmp_path):
    path = make_pdf(tmp_path / "guide.pdf", [[("Espresso needs fine grounds.", 11)]])
    cache = tmp_path / "cache"
    convert_document(path, "guide.pdf", cache)
    files = list(cache.iterdir())
    assert len(files) == 1 and files[0].suffix == ".json"
    data = json.loads(files[0].read_text(encoding="utf-8"))
    assert data["kind"] == "pdf"
    assert data["sections"][0]["page"] == 1


def test_unreadable_cache_file_is_ignored_and_rewritten(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("Descale every month.\n", encoding="utf-8")
    cache = tmp_path / "cache"
    convert_document(path, "notes.txt", cache)
    cache_file = next(cache.iterdir())
    cache_file.write_text("{ not json", encoding="utf-8")
    assert convert_document(path, "notes.txt", cache).markdown == "Descale every month.\n"
    assert json.loads(cache_file.read_text(encoding="utf-8"))["source"] == "notes.txt"
