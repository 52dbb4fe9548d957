"""Every supported format, from a real file written here: its text is found, its position is
kept, and a question answered from it cites the right page, slide, sheet rows, lines or headings.

The files are generated with PyMuPDF, python-pptx, openpyxl and python-docx (an EPUB is
zipped by hand), indexed once per module by a real RAGSystem (real Chroma, real BM25, the
session's embedding model), and asked through `ask` with a local Ollama stand-in as the
model, so the sources checked are the ones `ask --json` prints.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from conftest import module_settings, rag_with
from doc_types import ConvertedDocument
from document_converter import convert_document
from ollama_standin import OllamaStandin
from text_splitter import split_document

SALES_ROWS = 60
ZANZIBAR_ROW = 45  # the sheet row holding the one unusual product
REYKJAVIK_LINE = 27  # the CSV line of the one order to Reykjavik (a quoted field spans lines before it)


# --- the files ----------------------------------------------------------------------------


def make_report_pdf(path: Path) -> None:
    """Three pages under a running header: a heading, a ruled table, and a page set in two columns."""
    import pymupdf

    pdf = pymupdf.open()
    for number in (1, 2, 3):
        page = pdf.new_page()
        page.insert_text((72, 40), "Harbor Logistics Annual Report", fontsize=9)
        page.insert_text((290, 810), str(number), fontsize=9)
        if number == 1:
            page.insert_text((72, 90), "Fleet Overview", fontsize=20)
            for i, line in enumerate(["The fleet counts forty container ships.", "Every ship is inspected twice a year."]):
                page.insert_text((72, 120 + 16 * i), line, fontsize=11)
        elif number == 2:
            page.insert_text((72, 90), "Cargo Volumes", fontsize=20)
            page.insert_text((72, 120), "Containers handled per port last year:", fontsize=11)
            rows = [("Port", "Containers", "Year"), ("Rotterdam", "1200", "2023"), ("Singapore", "3400", "2023"), ("Santos", "560", "2024")]
            x0, y0, w, h = 72, 140, 140, 22
            for r, row in enumerate(rows):
                for c, cell in enumerate(row):
                    page.insert_text((x0 + c * w + 5, y0 + r * h + 15), cell, fontsize=10)
            for r in range(len(rows) + 1):
                page.draw_line((x0, y0 + r * h), (x0 + 3 * w, y0 + r * h))
            for c in range(4):
                page.draw_line((x0 + c * w, y0), (x0 + c * w, y0 + len(rows) * h))
            page.insert_text((72, 260), "Volumes grew in every port.", fontsize=11)
        else:
            page.insert_text((72, 90), "Harbor Services", fontsize=20)
            for i in range(7):
                page.insert_text((50, 130 + 14 * i), f"Reefer containers keep fruit cold {i}.", fontsize=9)
                page.insert_text((320, 130 + 14 * i), f"Tugboats guide ships into berths {i}.", fontsize=9)
    pdf.save(path)


def make_memo_pdf(path: Path) -> None:
    """Headings set in bold at the body size: only the font tells them from the text."""
    import pymupdf

    pdf = pymupdf.open()
    page = pdf.new_page()
    y = 72.0
    for heading, body in [("Budget Planning", "The travel budget is frozen until March."), ("Hiring Plan", "Two engineers join the platform team in spring.")]:
        page.insert_text((72, y), heading, fontsize=11, fontname="hebo")
        y += 18
        for _ in range(3):
            page.insert_text((72, y), body, fontsize=11, fontname="helv")
            y += 15
        y += 20
    pdf.save(path)


def make_deck(path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[0])
    first.shapes.title.text = "Quarterly Kickoff"
    first.placeholders[1].text = "Customer service team"
    second = deck.slides.add_slide(deck.slide_layouts[1])
    second.shapes.title.text = "Refund Policy"
    body = second.placeholders[1].text_frame
    body.text = "Customers may return items within 30 days"
    body.add_paragraph().text = "Store credit for opened boxes"
    second.notes_slide.notes_text_frame.text = "Remind the team that every refund needs the original receipt."
    third = deck.slides.add_slide(deck.slide_layouts[5])
    third.shapes.title.text = "Regional Targets"
    table = third.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(1.5)).table
    for r, (region, target) in enumerate([("Region", "Target"), ("North", "120"), ("South", "80")]):
        table.cell(r, 0).text = region
        table.cell(r, 1).text = target
    deck.save(str(path))


def make_workbook(path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    summary = book.active
    summary.title = "Summary"
    summary.append(["Total units", 999])
    summary.append(["Quarter", "Q3"])
    sales = book.create_sheet("Sales")
    sales.append(["Week", "Product", "Units"])
    for row in range(2, SALES_ROWS + 2):
        product = "Zanzibar Clove Tea" if row == ZANZIBAR_ROW else f"Green Tea Blend {row}"
        sales.append([row - 1, product, 10 + row])
    book.save(str(path))


def make_csv(path: Path) -> None:
    lines = ["order_id,customer,city", '1,"Ada, Lovelace","London', 'Marylebone"']  # one record over two lines
    for n in range(2, 40):
        lines.append(f"{n},Customer {n},{'Reykjavik' if len(lines) + 1 == REYKJAVIK_LINE else f'Town {n}'}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


HTML = """<!doctype html><html><head><title>Sourdough Starter</title><script>var trackingPixel = 1;</script>
<style>body { color: red }</style></head><body>
<nav><a href="/">Home</a> | <a href="/about">About us</a></nav>
<header><p>Bakery Newsletter banner</p></header>
<main><h1>Sourdough Starter</h1><p>Feed the starter daily with equal weights of flour and water, and keep it
in a warm corner of the kitchen.</p>
<h2>Troubleshooting</h2><p>A starter that smells of acetone is hungry: feed it twice a day.</p>
<table><tr><th>Flour</th><th>Grams</th></tr><tr><td>Rye</td><td>50</td></tr></table></main>
<footer>Copyright Example Bakery</footer></body></html>"""


def make_epub(path: Path) -> None:
    chapters = [
        ("Green Tea", "<p>Steep green tea at eighty degrees.</p><h2>Matcha</h2><p>Whisk matcha powder into a bright foam.</p>"),
        ("Black Tea", "<p>Black tea takes water straight off the boil.</p>"),
    ]
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        z.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>')
        items = "".join(f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>' for i in range(len(chapters)))
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
        z.writestr("OEBPS/content.opf", f'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Tea Book</dc:title><dc:identifier id="id">tea</dc:identifier><dc:language>en</dc:language></metadata><manifest>{items}</manifest><spine>{spine}</spine></package>')
        for i, (title, body) in enumerate(chapters):
            z.writestr(f"OEBPS/c{i}.xhtml", f'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>')


def make_docx(path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_heading("Staff Handbook", 1)
    document.add_heading("Holidays", 2)
    document.add_paragraph("Every employee gets twenty-five days of paid holiday a year.")
    document.save(str(path))


JSON = """{
  "database": {
    "host": "db.internal.example",
    "port": 5432
  },
  "cache": {
    "ttl_seconds": 300
  }
}
"""

YAML = """# Deployment settings
server:
  port: 8080
# Retry policy for outgoing calls
retries:
  attempts: 5
  backoff: exponential
"""

MARKDOWN = """# Chapter 3

Intro to the chapter.

## Functions

Functions group statements.

### Parameters

A parameter receives the value of an argument when the function is called.
"""

TEXT = " ".join(f"Sentence {n} talks about lighthouse keepers and their lamps." for n in range(40)) + "\n"

CODE = '''"""Loading settings."""

import json


def parse_config(path):
    """Read the settings file at path."""
    with open(path) as fh:
        return json.load(fh)


class Loader:
    def load(self, path):
        return parse_config(path)
'''


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    docs = tmp_path_factory.mktemp("formats") / "documents"
    docs.mkdir()
    make_report_pdf(docs / "report.pdf")
    make_memo_pdf(docs / "memo.pdf")
    make_deck(docs / "deck.pptx")
    make_workbook(docs / "sales.xlsx")
    make_csv(docs / "orders.csv")
    (docs / "starter.html").write_text(HTML, encoding="utf-8")
    make_epub(docs / "tea.epub")
    make_docx(docs / "handbook.docx")
    (docs / "settings.json").write_text(JSON, encoding="utf-8")
    (docs / "deploy.yaml").write_text(YAML, encoding="utf-8")
    (docs / "guide.md").write_text(MARKDOWN, encoding="utf-8")
    (docs / "notes.txt").write_text(TEXT, encoding="utf-8")
    (docs / "loader.py").write_text(CODE, encoding="utf-8")
    (docs / "song.mp3").write_bytes(b"ID3\x04\x00" + bytes(64))
    return docs


def convert(folder: Path, name: str) -> ConvertedDocument:
    return convert_document(folder / name, name)


@pytest.fixture(scope="module")
def rag(folder, tmp_path_factory, embedder):
    """One index over every file, answered by a local Ollama stand-in."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp, OllamaStandin(pieces=["From the documents", " [1]."]) as ollama:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            mp.delenv(name, raising=False)
        settings = module_settings(home, docs_dir=folder, chunk_size=400, chunk_overlap=60,
                                   llm_backend="ollama", ollama_host=ollama.url, convert_workers=1)
        system = rag_with(settings, embedder)
        try:
            system.index()
            yield system
        finally:
            system.close()


def cited(rag, question: str) -> dict[str, Any]:
    """The best source of the answer, as `ask --json --k 1` prints it (more passages merge neighbours)."""
    answer = rag.ask(question, k=1).to_json()
    assert answer["sources"], answer
    return answer["sources"][0]


# --- PDF -----------------------------------------------------------------------------------


def test_pdf_keeps_pages_and_drops_the_running_header(folder):
    doc = convert(folder, "report.pdf")
    assert [s.page for s in doc.sections] == [1, 2, 3]
    assert "Harbor Logistics Annual Report" not in doc.markdown
    assert doc.sections[0].text.startswith("# Fleet Overview")
    assert doc.sections[1].heading_path == ["Fleet Overview"]


def test_pdf_ruled_table_becomes_a_markdown_table_in_place(folder):
    page = convert(folder, "report.pdf").sections[1].text
    assert "| Port | Containers | Year |\n| --- | --- | --- |\n| Rotterdam | 1200 | 2023 |\n| Singapore | 3400 | 2023 |" in page
    assert page.index("handled per port") < page.index("| Port |") < page.index("Volumes grew")


def test_pdf_columns_are_read_one_after_the_other(folder):
    page = convert(folder, "report.pdf").sections[2].text
    left = [page.index(f"fruit cold {i}") for i in range(7)]
    right = [page.index(f"into berths {i}") for i in range(7)]
    assert left == sorted(left) and right == sorted(right)
    assert max(left) < min(right)


def test_pdf_bold_lines_are_headings_when_sizes_do_not_tell(folder):
    doc = convert(folder, "memo.pdf")
    headings = [line for line in doc.markdown.splitlines() if line.startswith("#")]
    assert headings == ["# Budget Planning", "# Hiring Plan"]
    chunks = split_document(doc, 200, 20)
    assert next(c for c in chunks if "engineers" in c.text).heading_path == ["Hiring Plan"]


def test_pdf_question_cites_the_page_of_the_table(rag):
    source = cited(rag, "How many containers did Singapore handle?")
    assert (source["source"], source["page"], source["location"]) == ("report.pdf", 2, "page 2")


# --- PPTX ----------------------------------------------------------------------------------


def test_slides_keep_their_number_titles_bullets_tables_and_notes(folder):
    doc = convert(folder, "deck.pptx")
    assert [s.slide for s in doc.sections] == [1, 2, 3]
    second = doc.sections[1].text
    assert second.startswith("# Refund Policy")
    assert "- Customers may return items within 30 days\n- Store credit for opened boxes" in second
    assert "Speaker notes: Remind the team that every refund needs the original receipt." in second
    assert "| Region | Target |\n| --- | --- |\n| North | 120 |" in doc.sections[2].text
    chunks = split_document(doc, 400, 60)
    assert {c.slide for c in chunks if "receipt" in c.text} == {2}
    assert next(c for c in chunks if "receipt" in c.text).location == "slide 2"


def test_slide_question_cites_the_slide_of_its_speaker_notes(rag):
    source = cited(rag, "Does a refund need the original receipt?")
    assert (source["source"], source["slides"], source["location"]) == ("deck.pptx", [2], "slide 2")


# --- XLSX and CSV --------------------------------------------------------------------------


def test_sheet_rows_are_cut_between_rows_with_the_header_in_every_chunk(folder):
    doc = convert(folder, "sales.xlsx")
    assert [s.sheet for s in doc.sections] == ["Summary", "Sales"]
    chunks = [c for c in split_document(doc, 400, 60) if c.sheet == "Sales"]
    assert len(chunks) > 3
    assert all(c.text.startswith("| Week | Product | Units |\n| --- | --- | --- |\n") for c in chunks)
    ranges = [c.rows for c in chunks]
    assert ranges[0][0] == 2 and ranges[-1][1] == SALES_ROWS + 1
    assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:], strict=False))  # every row once, in order
    zanzibar = next(c for c in chunks if "Zanzibar" in c.text)
    assert zanzibar.rows[0] <= ZANZIBAR_ROW <= zanzibar.rows[1]
    assert zanzibar.location == f"sheet Sales rows {zanzibar.rows[0]}-{zanzibar.rows[1]}"
    assert f"| {ZANZIBAR_ROW - 1} | Zanzibar Clove Tea | {10 + ZANZIBAR_ROW} |" in zanzibar.text


def test_sheet_question_cites_the_sheet_and_rows(rag):
    source = cited(rag, "How many units of Zanzibar Clove Tea were sold?")
    assert (source["source"], source["sheet"]) == ("sales.xlsx", "Sales")
    assert source["rows"][0] <= ZANZIBAR_ROW <= source["rows"][1]


def test_csv_rows_are_numbered_by_the_line_each_record_starts_on(folder):
    doc = convert(folder, "orders.csv")
    assert doc.kind == "csv"
    chunks = split_document(doc, 400, 60)
    assert all(c.text.startswith("| order_id | customer | city |") for c in chunks)
    assert "| 1 | Ada, Lovelace | London Marylebone |" in chunks[0].text
    line = next(i for i, text in enumerate((folder / "orders.csv").read_text().splitlines(), start=1) if "Reykjavik" in text)
    assert line == REYKJAVIK_LINE
    hit = next(c for c in chunks if "Reykjavik" in c.text)
    assert hit.rows[0] <= REYKJAVIK_LINE <= hit.rows[1]


def test_csv_question_cites_the_rows(rag):
    source = cited(rag, "Which order ships to Reykjavik?")
    assert source["source"] == "orders.csv"
    assert source["rows"][0] <= REYKJAVIK_LINE <= source["rows"][1]


# --- HTML and EPUB -------------------------------------------------------------------------


def test_html_keeps_the_main_content_and_drops_scripts_and_navigation(folder):
    doc = convert(folder, "starter.html")
    text = doc.markdown
    assert doc.title == "Sourdough Starter"
    assert text.startswith("# Sourdough Starter")
    assert "## Troubleshooting" in text and "| Rye | 50 |" in text
    for furniture in ("trackingPixel", "color: red", "About us", "Newsletter banner", "Copyright"):
        assert furniture not in text


def test_html_question_cites_the_heading_path(rag):
    source = cited(rag, "Why does my sourdough starter smell of acetone?")
    assert (source["source"], source["heading_path"]) == ("starter.html", ["Sourdough Starter", "Troubleshooting"])


def test_epub_chapters_become_sections_with_their_headings(folder):
    doc = convert(folder, "tea.epub")
    assert doc.title == "Tea Book" and doc.kind == "epub"
    assert [s.text.splitlines()[0] for s in doc.sections] == ["# Green Tea", "# Black Tea"]
    chunks = split_document(doc, 400, 60)
    assert next(c for c in chunks if "Whisk matcha" in c.text).heading_path in (["Green Tea", "Matcha"], ["Green Tea"])


def test_epub_question_cites_the_chapter(rag):
    source = cited(rag, "How do I whisk matcha?")
    assert source["source"] == "tea.epub" and source["heading_path"][0] == "Green Tea"


def test_docx_question_cites_the_heading_path(rag):
    source = cited(rag, "How many days of paid holiday do employees get?")
    assert (source["source"], source["heading_path"]) == ("handbook.docx", ["Staff Handbook", "Holidays"])


# --- JSON, YAML, markdown, text ------------------------------------------------------------


def test_json_is_cut_at_top_level_keys_with_exact_lines(folder):
    doc = convert(folder, "settings.json")
    assert [(s.heading_path, s.start_line) for s in doc.sections] == [(["database"], 1), (["cache"], 6)]
    chunk = next(c for c in split_document(doc, 400, 60) if "db.internal" in c.text)
    assert chunk.lines == (1, 5)


def test_yaml_key_keeps_the_comment_above_it(folder):
    doc = convert(folder, "deploy.yaml")
    assert [(s.heading_path, s.start_line) for s in doc.sections] == [(["server"], 1), (["retries"], 4)]
    assert doc.sections[1].text.startswith("# Retry policy")


def test_data_question_cites_the_lines_of_its_key(rag):
    source = cited(rag, "Which host does the database use?")
    assert (source["source"], source["lines"], source["heading_path"]) == ("settings.json", [1, 5], ["database"])


def test_markdown_chunks_carry_the_full_heading_path(folder):
    chunks = split_document(convert(folder, "guide.md"), 80, 10)
    chunk = next(c for c in chunks if "receives the value" in c.text)
    assert chunk.heading_path == ["Chapter 3", "Functions", "Parameters"]
    assert chunk.start_line <= 11 <= chunk.end_line


def test_markdown_question_cites_lines_and_heading_path(rag):
    source = cited(rag, "What does a parameter receive when the function is called?")
    assert source["source"] == "guide.md"
    assert source["lines"][0] <= 11 <= source["lines"][1]


def test_plain_text_is_cut_at_sentences_with_overlap(folder):
    chunks = split_document(convert(folder, "notes.txt"), 300, 60)
    assert len(chunks) > 3
    assert all(len(c.text) <= 300 and c.text.rstrip().endswith(".") for c in chunks)
    assert all(a.text[-40:].split(". ")[-1] in b.text for a, b in zip(chunks, chunks[1:], strict=False))


def test_text_question_cites_lines(rag):
    source = cited(rag, "What do lighthouse keepers talk about in sentence 33?")
    assert source["source"] == "notes.txt" and source["lines"] == [1, 1]


def test_code_question_cites_the_function_and_its_lines(rag):
    source = cited(rag, "parse_config")
    assert (source["source"], source["symbols"][0], source["lines"][0]) == ("loader.py", "parse_config", 6)
    assert source["location"].startswith("lines 6-") and "(parse_config" in source["location"]


# --- stats ---------------------------------------------------------------------------------


def test_stats_list_indexed_and_skipped_files_by_type(rag):
    stats = rag.stats()
    assert stats["files_by_type"] == {
        "pdf": 2, "pptx": 1, "xlsx": 1, "csv": 1, "html": 1, "epub": 1, "docx": 1,
        "json": 1, "yaml": 1, "markdown": 1, "text": 1, "code": 1,
    }
    assert stats["failed"] == {}
    assert stats["skipped"] == {"song.mp3": "unsupported file type .mp3"}
    assert stats["skipped_by_type"] == {"mp3": {"unsupported file type .mp3": 1}}


# --- permalinks and comments ---------------------------------------------------------------

SPHINX_PAGE = """<html><head><title>tea - Brewing</title></head><body><div role="main">
<h1>Brewing<a class="headerlink" href="#brewing" title="Permalink to this headline">¶</a></h1>
<!-- generated by Sphinx; do not edit -->
<p>Steep green tea at 80 degrees, see <a href="#steeping">steeping times</a>.</p>
<dl><dt id="tea.brew">tea.brew(leaves)<a class="headerlink" href="#tea.brew" title="Permalink to this definition">#</a></dt>
<dd>Brews the leaves.</dd></dl>
<h2 id="steeping">Steeping<a class="hash-link" href="#steeping" title="Direct link to heading">\u200b</a></h2>
<p>Two minutes.<a href="#steeping">§</a></p>
<pre><code>brew(leaves)  # not furniture</code></pre>
</div></body></html>
"""

NODE_DOC = """# File system

<!-- introduced_in=v0.10.0 -->

## `fs.access(path)` <a class="headerlink" href="#fs-access" title="Permalink to this heading">¶</a>
<!-- YAML
added: v0.11.15
changes:
  - description: Passing a non-string as the `path` argument will throw now.
-->

Tests a user's permissions for the file [¶](#fs-access "Permalink to this heading") named by `path`.
See [access modes](#modes) and <a href="#modes">the modes</a>.
It calls [`fs.stat()`][] and [the libuv docs][libuv] first; `matrix[1][2]` is code.

```html
<!-- this comment is code, and stays -->
```

Inline `<!-- kept too -->` code. Last line.
"""


def test_html_drops_comments_and_permalink_anchors_but_keeps_links_and_code(tmp_path):
    (tmp_path / "brewing.html").write_text(SPHINX_PAGE, encoding="utf-8")
    text = convert_document(tmp_path / "brewing.html", "brewing.html").markdown
    for furniture in ("¶", "Permalink", "generated by Sphinx", "\u200b", "§", "<!--"):
        assert furniture not in text, furniture
    assert text.startswith("# Brewing\n") and "## Steeping\n" in text
    assert "see steeping times." in text and "tea.brew(leaves)\n" in text and "brew(leaves)  # not furniture" in text


API_PAGE = """<html><head><title>Allocation</title></head><body>
<dl><dt>Function: <strong>void</strong> <em>*pool_alloc (size_t <var>size</var>, void **<var>code</var>)</em></dt>
<dd><p>Allocate <em>size</em> bytes; <b>never</b> free them with <i>free</i>, and keep <code>*code</code> as it is.</p></dd></dl>
</body></html>"""


def test_html_emphasis_keeps_its_text_verbatim_without_marks(tmp_path):
    # a C signature set in <em> holds literal asterisks: marks around it would garble it
    (tmp_path / "alloc.html").write_text(API_PAGE, encoding="utf-8")
    text = convert_document(tmp_path / "alloc.html", "alloc.html").markdown
    assert "void *pool_alloc (size_t size, void **code)" in text, text
    assert "Allocate size bytes; never free them with free, and keep `*code` as it is." in text, text


def test_markdown_drops_html_comments_and_permalinks_outside_code_and_keeps_line_numbers(tmp_path):
    (tmp_path / "fs.md").write_text(NODE_DOC, encoding="utf-8")
    doc = convert_document(tmp_path / "fs.md", "fs.md")
    text = doc.markdown
    for furniture in ("¶", "Permalink", "introduced_in", "YAML", "added: v0.11.15", "non-string"):
        assert furniture not in text, furniture
    assert "<!-- this comment is code, and stays -->" in text and "`<!-- kept too -->`" in text
    assert "[access modes](#modes)" in text and '<a href="#modes">the modes</a>' in text
    assert "It calls `fs.stat()` and the libuv docs first; `matrix[1][2]` is code." in text, "a reference link keeps its text"
    lines = text.split("\n")
    assert len(lines) == len(NODE_DOC.split("\n")) and lines.index("Inline `<!-- kept too -->` code. Last line.") == NODE_DOC.split("\n").index("Inline `<!-- kept too -->` code. Last line.")
    chunk = next(c for c in split_document(doc, 120, 0) if "user's permissions" in c.text)
    assert chunk.heading_path == ["File system", "`fs.access(path)`"]
