"""A folder full of broken and hostile files: each is skipped with a reason, the good ones indexed."""

from __future__ import annotations

import io
import os
import zipfile

import pytest

import indexer as indexer_module
from rag_system import RAGSystem


def make_pdf(path, pages=1, text="A page of text.", size=None, **save):
    import pymupdf

    pdf = pymupdf.open()
    for n in range(pages):
        page = pdf.new_page(width=size or 595, height=size or 842)
        if text and (n == 0 or pages < 50):
            page.insert_text((72, 72), f"{text} {n + 1}")
    pdf.save(str(path), **save)


def make_zip_bomb(path, mb=20):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", b"\0" * (mb * 1024 * 1024))
    path.write_bytes(buffer.getvalue())


@pytest.fixture
def hostile_folder(make_settings):
    import pymupdf

    settings = make_settings(max_file_mb=10)
    d = settings.docs_dir
    (d / "good.md").write_text("# Good\n\nThe lighthouse keeper logs every passing ship.\n", encoding="utf-8")
    make_pdf(d / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
    make_pdf(d / "owner-only.pdf", text="Permissions-only encryption still opens", encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner")
    make_pdf(d / "whole.pdf")
    (d / "truncated.pdf").write_bytes((d / "whole.pdf").read_bytes()[:300])
    (d / "whole.pdf").unlink()
    (d / "garbage.pdf").write_bytes(os.urandom(2048))
    make_pdf(d / "thousands.pdf", pages=2000, text="Only the first of two thousand pages has text")
    make_pdf(d / "huge-page.pdf", size=14000, text="A single enormous page")
    (d / "not-a-zip.docx").write_bytes(b"This is plain text pretending to be Word.")
    make_zip_bomb(d / "bomb.docx")
    (d / "empty.txt").write_bytes(b"")
    (d / "binary.txt").write_bytes(bytes(range(256)) * 8)
    (d / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(512))
    (d / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me br\xfbl\xe9e, na\xefve r\xe9sum\xe9.".encode("latin-1"))
    (d / "long-line.txt").write_text("word " * 40000, encoding="utf-8")
    with open(d / "huge.txt", "wb") as fh:  # 1 GB, sparse: over the limit without using the disk
        fh.truncate(1024 * 1024 * 1024)
    deep = d
    for level in range(40):
        deep = deep / f"level-{level}"
    deep.mkdir(parents=True)
    (deep / "deep.md").write_text("# Deep\n\nFound at the bottom of forty folders.\n", encoding="utf-8")
    (d / "loop").mkdir()
    os.symlink(d, d / "loop" / "back-to-top")
    os.symlink("/etc", d / "outside")
    (d / "odd ☃ naïve\nname.md").write_text("# Snow\n\nA snowman with a newline in its file name.\n", encoding="utf-8")
    return settings


def test_every_bad_file_is_skipped_with_a_reason_and_every_good_one_is_indexed(hostile_folder):
    rag = RAGSystem(hostile_folder)
    try:
        report = rag.index()
        stats = rag.stats()
        problems = {**stats["failed"], **stats["skipped"]}
        indexed = set(rag.indexer.manifest.files)
        for good in ("good.md", "owner-only.pdf", "thousands.pdf", "huge-page.pdf", "latin1.txt", "odd ☃ naïve\nname.md"):
            assert good in indexed, f"{good!r} was not indexed: {problems.get(good)}"
        assert any(s.endswith("deep.md") for s in indexed)
        expectations = {
            "locked.pdf": "password",
            "truncated.pdf": "",
            "garbage.pdf": "",
            "not-a-zip.docx": "zip",
            "bomb.docx": "zip bomb",
            "empty.txt": "empty",
            "binary.txt": "binary",
            "binary.md": "binary",
            "huge.txt": "MB",
            "long-line.txt": "low-information text",  # one word 40,000 times: nothing a question could match
        }
        for name, words in expectations.items():
            assert name in problems, f"{name} should be reported, got {sorted(problems)}"
            assert problems[name] and words.lower() in problems[name].lower(), (name, problems[name])
        assert not any("outside" in s and s != "outside" for s in indexed), "followed a link outside the folder"
        assert not any("back-to-top" in s for s in indexed), "followed a symlink loop"
        assert rag.indexer.check() == []
        # Decoded right: its accented words are searchable, and no junk file crowds them out.
        assert "latin1.txt" in {p.source for p in rag.retrieve_context("crème brûlée résumé")[:3]}
        assert report.failed  # the report carries the reasons too
    finally:
        rag.close()


def test_a_file_that_disappears_while_indexing_is_reported_not_fatal(make_settings, monkeypatch):
    settings = make_settings()
    (settings.docs_dir / "stays.md").write_text("# Stays\n\nThis file stays.\n", encoding="utf-8")
    (settings.docs_dir / "vanishes.md").write_text("# Gone\n\nThis file vanishes.\n", encoding="utf-8")
    real_sha = indexer_module.file_sha256

    def vanish_then_hash(path):
        if path.name == "vanishes.md":
            path.unlink()
        return real_sha(path)

    monkeypatch.setattr(indexer_module, "file_sha256", vanish_then_hash)
    rag = RAGSystem(settings)
    try:
        report = rag.index()
        assert "stays.md" in rag.indexer.manifest.files
        assert "cannot be read" in report.failed["vanishes.md"]
        assert rag.indexer.check() == []
    finally:
        rag.close()


def test_failure_reasons_are_in_plain_words_and_name_no_server_path(open_rag):
    rag = open_rag()
    docs = rag.settings.docs_dir
    (docs / "blank.pdf").write_bytes(b"")
    (docs / "broken.pdf").write_bytes(b"not a pdf at all")
    report = rag.index()
    reasons = {d.source: d.reason for d in rag.documents()}
    assert reasons["blank.pdf"] == "the file is empty (0 bytes): replace it with a complete copy, or remove it"
    assert reasons["broken.pdf"] == "not a readable PDF: the file is damaged, or is not really a PDF (check its extension)"
    shown = [*reasons.values(), *rag.stats()["failed"].values(), *report.failed.values()]
    assert [r for r in shown if str(docs) in r or "filename=" in r or "/" in r] == []
