"""Scanned PDFs and images are read by OCR, offline, and cited by file and page.

The real OCR engine (RapidOCR, its packaged models) reads small generated scans: text
drawn with PyMuPDF and rasterized, so what each page says is known. An engine handed in
counts the pages read, which is how the tests know a text page was never OCR'd.
"""

from __future__ import annotations

import io
from pathlib import Path

import pymupdf
import pytest
from PIL import Image

from document_converter import convert_document
from errors import ConversionError
from ocr import OcrOptions, OcrReader, RapidOcrEngine
from pdf_converter import NEEDS_OCR

KETTLE = "Descale the kettle every month with citric acid."
TEA = "Green tea wants water at eighty degrees for two minutes."
BIKE = "Pump the bicycle tyres to four bar before a long ride."
ESPRESSO = "An espresso takes nine bar of pressure and twenty five seconds."


def text_page_pixmap(text: str, dpi: int = 150) -> pymupdf.Pixmap:
    """A small page of text, rasterized: what a scanner would make of it."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=160)
    page.insert_textbox(pymupdf.Rect(20, 20, 400, 140), text, fontsize=15)
    return page.get_pixmap(dpi=dpi)


def text_image(text: str) -> Image.Image:
    pixmap = text_page_pixmap(text)
    return Image.open(io.BytesIO(pixmap.tobytes("png"))).convert("RGB")


def make_pdf(path: Path, pages: list[tuple[str, str]]) -> Path:
    """A PDF of ("text", words) pages with a text layer and ("scan", words) pages that are only an image."""
    doc = pymupdf.open()
    for kind, text in pages:
        page = doc.new_page(width=420, height=160)
        if kind == "text":
            page.insert_textbox(pymupdf.Rect(20, 20, 400, 140), text, fontsize=15)
        elif kind == "text+picture":  # a line of text, and under it a picture of more text
            page.insert_textbox(pymupdf.Rect(20, 5, 400, 40), KETTLE, fontsize=12)
            page.insert_image(pymupdf.Rect(0, 40, 420, 160), pixmap=text_page_pixmap(text))
        else:
            page.insert_image(page.rect, pixmap=text_page_pixmap(text))
    doc.save(path)
    return path


def make_big_scan(path: Path, lines: list[str]) -> Path:
    """An image-only PDF, one line of large text a page, its pixels stored uncompressed at 150 dpi as some
    scanners save them: 6.3 MB a page, over MAX_FILE_MB's 10 MB in three pages."""
    doc = pymupdf.open()
    for line in lines:
        sheet = pymupdf.open()
        sheet.new_page(width=612, height=792).insert_textbox(pymupdf.Rect(40, 60, 580, 200), line, fontsize=22)
        pixmap = sheet[0].get_pixmap(dpi=150)
        page = doc.new_page(width=612, height=792)
        xref = page.insert_image(page.rect, pixmap=pixmap)
        doc.update_stream(xref, pixmap.samples, compress=False)
        doc.xref_set_key(xref, "Filter", "null")
        doc.xref_set_key(xref, "DecodeParms", "null")
    doc.save(path, deflate=False)
    return path


class CountingEngine:
    """The real engine, counting the images it is given."""

    def __init__(self) -> None:
        self.real = RapidOcrEngine(threads=1)
        self.calls = 0

    def read_text(self, image: object) -> str:
        self.calls += 1
        return self.real.read_text(image)


@pytest.fixture(scope="module")
def counting() -> CountingEngine:
    return CountingEngine()  # one model load for the module


def words(text: str) -> set[str]:
    return {w.strip(".,").lower() for w in text.split()}


def test_image_only_pdf_is_indexed_not_skipped_and_cites_its_right_page(open_rag):
    rag = open_rag(chunk_size=300, chunk_overlap=50)
    make_pdf(rag.settings.docs_dir / "scan.pdf", [("scan", KETTLE), ("scan", TEA)])
    report = rag.index()
    assert report.added == ["scan.pdf"] and report.failed == {}
    (passage, *_) = rag.retrieve_context("How often should the kettle be descaled?")
    assert passage.source == "scan.pdf" and passage.page == 1
    assert passage.location in ("page 1 · OCR", "pages 1-2 · OCR"), "neighbouring pages may be merged into one passage"
    assert "citric" in passage.text.lower()
    (passage, *_) = rag.retrieve_context("What temperature for green tea?")
    assert (passage.source, passage.page) == ("scan.pdf", 2)
    assert rag.stats()["failed"] == {}


def test_a_scan_over_max_file_mb_is_indexed_and_cited_by_page(open_rag):
    """A PDF's bytes are pixels: the converter bounds it by page time and memory, not MAX_FILE_MB."""
    rag = open_rag(chunk_size=300, chunk_overlap=50, ocr_dpi=100)  # large type reads well at 100 dpi, and fast
    scan = make_big_scan(rag.settings.docs_dir / "big-scan.pdf", [KETTLE, TEA, BIKE])
    assert scan.stat().st_size > 1.5 * rag.settings.max_file_mb * 1e6
    report = rag.index()
    assert report.added == ["big-scan.pdf"] and report.failed == {} and report.skipped == {}
    (passage, *_) = rag.retrieve_context("How hard should I pump the bicycle tyres?")
    assert (passage.source, passage.page) == ("big-scan.pdf", 3) and "OCR" in passage.location
    assert "bar" in words(passage.text)


def test_mixed_pdf_ocrs_its_scanned_pages_and_never_its_text_pages(tmp_path, counting):
    path = make_pdf(tmp_path / "mixed.pdf", [("text", KETTLE), ("scan", TEA), ("text", BIKE), ("scan", ESPRESSO)])
    before = counting.calls
    doc = convert_document(path, "mixed.pdf", ocr=OcrReader(OcrOptions(), counting))
    assert counting.calls - before == 2, "only the two scanned pages go to OCR"
    by_page = {s.page: s for s in doc.sections}
    assert sorted(by_page) == [1, 2, 3, 4]
    assert [by_page[n].ocr for n in (1, 2, 3, 4)] == [False, True, False, True]
    assert by_page[1].text == KETTLE and by_page[3].text == BIKE, "text pages keep their text layer"
    assert len(words(TEA) & words(by_page[2].text)) >= 8 and "espresso" in by_page[4].text.lower()
    assert doc.notes == ["pages 2, 4 read by OCR"]


def test_pictures_on_text_pages_are_read_only_when_asked(tmp_path, counting):
    path = make_pdf(tmp_path / "figure.pdf", [("text+picture", ESPRESSO)])
    before = counting.calls
    plain = convert_document(path, "figure.pdf", ocr=OcrReader(OcrOptions(), counting))
    assert counting.calls == before and [s.ocr for s in plain.sections] == [False]
    asked = convert_document(path, "figure.pdf", ocr=OcrReader(OcrOptions(text_page_images=True), counting))
    assert counting.calls == before + 1
    assert [(s.page, s.ocr) for s in asked.sections] == [(1, False), (1, True)]
    assert "espresso" in asked.sections[1].text.lower() and asked.sections[0].text == KETTLE


def test_unchanged_scan_is_never_ocrd_twice(tmp_path, counting):
    path = make_pdf(tmp_path / "scan.pdf", [("scan", KETTLE)])
    reader = OcrReader(OcrOptions(), counting)
    first = convert_document(path, "scan.pdf", tmp_path / "cache", ocr=reader)
    before = counting.calls
    again = convert_document(path, "scan.pdf", tmp_path / "cache", ocr=reader)
    assert counting.calls == before and again.sections == first.sections


class FailingOnce:
    """Fails on the second image it is given, reads "page N" on the others: a page OCR cannot read."""

    def __init__(self) -> None:
        self.calls = 0

    def read_text(self, image: object) -> str:
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("onnxruntime: bad allocation")
        return f"words of scanned page {self.calls}"


def test_a_page_that_fails_ocr_costs_only_that_page(tmp_path):
    path = make_pdf(tmp_path / "scan.pdf", [("scan", KETTLE), ("scan", TEA), ("scan", BIKE)])
    doc = convert_document(path, "scan.pdf", ocr=OcrReader(OcrOptions(), FailingOnce()))
    assert [s.page for s in doc.sections] == [1, 3]
    assert "page 2: OCR failed: RuntimeError: onnxruntime: bad allocation; that page is left out" in doc.notes


def test_png_and_two_page_tiff_are_indexed_and_cited_the_tiff_by_page(open_rag):
    rag = open_rag(chunk_size=300, chunk_overlap=50)
    docs = rag.settings.docs_dir
    text_image(KETTLE).save(docs / "kettle.png")
    first, second = text_image(BIKE), text_image(ESPRESSO)
    first.save(docs / "scans.tiff", save_all=True, append_images=[second])
    report = rag.index()
    assert sorted(report.added) == ["kettle.png", "scans.tiff"] and report.failed == {}
    (passage, *_) = rag.retrieve_context("How often should the kettle be descaled?")
    assert passage.source == "kettle.png" and passage.page is None and passage.location == "OCR"
    (passage, *_) = rag.retrieve_context("How much pressure does an espresso take?")
    assert (passage.source, passage.page) == ("scans.tiff", 2) and passage.location in ("page 2 · OCR", "pages 1-2 · OCR")
    # The rendered-page view shows image pages as it shows PDF pages.
    shown = Image.open(io.BytesIO(rag.page_image("scans.tiff", 2, [passage.text])))
    assert shown.size == second.size
    assert rag.page_image("kettle.png", 1, []).startswith(b"\x89PNG")


def test_a_corrupt_image_costs_only_itself(open_rag):
    rag = open_rag(chunk_size=300, chunk_overlap=50)
    docs = rag.settings.docs_dir
    (docs / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    (docs / "kettle.md").write_text(f"# Kettle\n\n{KETTLE}\n", encoding="utf-8")
    text_image(TEA).save(docs / "tea.jpg")
    report = rag.index()
    assert sorted(report.added) == ["kettle.md", "tea.jpg"]
    reason = rag.stats()["failed"]["broken.png"]
    assert reason.startswith("not a readable image") and "damaged" in reason


def test_ocr_off_gives_the_old_needs_ocr_reason_and_on_again_reads_the_scans(open_rag):
    rag = open_rag(chunk_size=300, chunk_overlap=50, ocr="off")
    docs = rag.settings.docs_dir
    make_pdf(docs / "scan.pdf", [("scan", KETTLE)])
    text_image(TEA).save(docs / "tea.png")
    rag.index()
    failed = rag.stats()["failed"]
    assert failed["scan.pdf"] == NEEDS_OCR
    assert "OCR=off" in failed["tea.png"]
    rag.close()
    # The files have not changed, but OCR has: they are read again, not left failed.
    rag = open_rag(chunk_size=300, chunk_overlap=50)
    report = rag.index()
    assert sorted(report.added) == ["scan.pdf", "tea.png"] and rag.stats()["failed"] == {}


def test_without_an_ocr_reader_a_scan_needs_ocr_as_before(tmp_path):
    path = make_pdf(tmp_path / "scan.pdf", [("scan", KETTLE)])
    with pytest.raises(ConversionError, match="needs OCR"):
        convert_document(path, "scan.pdf")


def test_the_ocr_models_ship_inside_the_package():
    """Nothing is downloaded: every model path of RapidOCR's config is a file inside its package."""
    import rapidocr_onnxruntime
    import yaml

    package = Path(rapidocr_onnxruntime.__file__).parent
    config = yaml.safe_load((package / "config.yaml").read_text(encoding="utf-8"))
    for part in ("Det", "Cls", "Rec"):
        model = package / config[part]["model_path"]
        assert model.is_file() and model.stat().st_size > 100_000, model


@pytest.mark.slow
def test_a_long_scan_is_not_taken_for_hung_while_ocr_reads_page_after_page(tmp_path, counting):
    """The time limit applies to each page OCR reads, not to the whole scan: a scanned book takes minutes.

    The limit is set from a page's measured time on this machine, and the scan made twice as long as the limit.
    """
    import time

    from converter_workers import ConverterPool

    options = OcrOptions(dpi=100)
    one = make_pdf(tmp_path / "one.pdf", [("scan", KETTLE)])
    convert_document(one, "one.pdf", ocr=OcrReader(options, counting))  # the models are loaded
    started = time.perf_counter()
    convert_document(one, "one.pdf", ocr=OcrReader(options, counting))
    page_s = time.perf_counter() - started
    limit = 3 * page_s + 2  # the worker's first page also loads the models
    path = make_pdf(tmp_path / "book.pdf", [("scan", f"Page {n}. {KETTLE}") for n in range(int(2 * limit / page_s) + 1)])
    pool = ConverterPool(workers=1, timeout_s=limit, ocr=options)
    try:
        started = time.perf_counter()
        ((_, doc, error),) = list(pool.convert([("book.pdf", path, "f" * 64)]))
        elapsed = time.perf_counter() - started
    finally:
        pool.close()
    assert error is None and doc is not None and doc.notes[0].startswith("pages 1, 2, 3")
    assert elapsed > limit, f"the scan took {elapsed:.1f}s, within the {limit:.1f}s limit: the test proves nothing"


@pytest.mark.slow
def test_real_book_pages_are_read_within_the_workers_memory_limit(tmp_path):
    """Two Think Python pages as a 200 dpi scan, in a worker under the default CONVERT_MEMORY_MB: the engine's
    threads once took the worker over its address-space limit, and every page after the first failed (bad_alloc)."""
    from config import Settings
    from conftest import SHARED_EVAL, require
    from converter_workers import ConverterPool

    book = pymupdf.open(require(SHARED_EVAL / "thinkpython" / "thinkpython2.pdf"))
    scan = pymupdf.open()
    for number in (5, 6):
        page = book[number - 1]
        scan.new_page(width=page.rect.width, height=page.rect.height).insert_image(page.rect, pixmap=page.get_pixmap(dpi=200))
    scan.save(tmp_path / "pages.pdf")
    pool = ConverterPool(workers=1, timeout_s=300, memory_mb=Settings().convert_memory_mb, ocr=OcrOptions())
    try:
        ((_, converted, error),) = list(pool.convert([("pages.pdf", tmp_path / "pages.pdf", "a" * 64)]))
    finally:
        pool.close()
    assert error is None and converted is not None
    assert converted.notes == ["pages 1, 2 read by OCR"], converted.notes
    assert "elkner" in converted.markdown.lower()
