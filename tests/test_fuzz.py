"""Fuzzing: converters and the splitter on generated input raise only documented errors."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doc_types import ConvertedDocument, Section
from document_converter import convert_document
from errors import ConversionError
from text_splitter import split_document

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("suffix", [".pdf", ".docx", ".txt", ".md", ".html", ".json", ".csv", ".py"])
@FUZZ
@given(data=st.binary(max_size=4096))
def test_converters_on_random_bytes_return_a_document_or_a_conversion_error(tmp_path_factory, suffix, data):
    path = tmp_path_factory.mktemp("fuzz") / f"f{suffix}"
    path.write_bytes(data)
    try:
        doc = convert_document(path, path.name)
    except ConversionError:
        return
    assert isinstance(doc, ConvertedDocument)


@FUZZ
@given(data=st.binary(min_size=8, max_size=4096), keep=st.integers(min_value=8, max_value=4096))
def test_damaged_real_pdfs_fail_cleanly(tmp_path_factory, data, keep):
    import pymupdf

    pdf = pymupdf.open()
    pdf.new_page().insert_text((72, 72), "A real page of text.")
    good = pdf.tobytes()
    damaged = good[: min(keep, len(good))] + data
    path = tmp_path_factory.mktemp("pdf") / "d.pdf"
    path.write_bytes(damaged)
    try:
        convert_document(path, "d.pdf")
    except ConversionError:
        pass


@FUZZ
@given(
    text=st.text(min_size=1, max_size=3000),
    size=st.integers(min_value=20, max_value=400),
    overlap_share=st.floats(min_value=0, max_value=0.9),
)
def test_splitter_keeps_every_chunk_within_size_and_inside_the_text(text, size, overlap_share):
    overlap = int(size * overlap_share)
    doc = ConvertedDocument(source="t.md", title="t", kind="markdown", sections=[Section(text=text, start_line=1)])
    chunks = split_document(doc, chunk_size=size, chunk_overlap=overlap)
    lines = text.count("\n") + 1
    for chunk in chunks:
        assert len(chunk.text) <= size
        assert chunk.text.strip()
        assert 1 <= chunk.start_line <= chunk.end_line <= lines + 1
