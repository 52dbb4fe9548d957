"""Which files of the documents folder are indexed, and why the others are not.

Real folders in tmp_path: tool folders and ignore files, binary data behind a text
name, a file over the size limit, and symbolic links that loop or lead outside.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from discovery import discover, looks_binary
from document_converter import SUPPORTED_EXTENSIONS


def write(path: Path, text: str = "Some words.\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def docs(tmp_path) -> Path:
    folder = tmp_path / "documents"
    folder.mkdir()
    return folder


def test_tool_folders_are_left_out(docs):
    write(docs / "notes.md")
    for tool in (".git/config.txt", "node_modules/lib/index.js", "__pycache__/notes.txt", ".venv/lib/site.py",
                 "venv/lib/site.py", "build/out.md", "dist/bundle.js", "target/debug/main.rs", "project/.hidden.md"):
        write(docs / tool)
    found = discover(docs, 10**7)
    assert set(found.found) == {"notes.md"}
    assert found.skipped == {}
    assert found.ignored > 0


def test_gitignore_and_docqaignore_rules_apply_where_they_stand(docs):
    write(docs / ".gitignore", "*.log\nsecret/\n/top-only.txt\n")
    write(docs / ".docqaignore", "drafts/\n!build/\n")
    write(docs / "sub" / ".gitignore", "local.txt\n")
    for name in ("keep.md", "app.log", "secret/plan.md", "top-only.txt", "sub/top-only.txt", "drafts/idea.md",
                 "sub/local.txt", "local.txt", "build/guide.md"):
        write(docs / name)
    found = discover(docs, 10**7)
    # build/ is a default exclusion that the .docqaignore brings back with !build/.
    assert set(found.found) == {"keep.md", "sub/top-only.txt", "local.txt", "build/guide.md"}


def test_binary_data_named_txt_is_skipped_with_the_reason(docs):
    (docs / "photo.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (docs / "control.md").write_bytes(bytes(range(1, 32)) * 20)
    (docs / "utf16.txt").write_text("Text in UTF-16 has NUL bytes and is still text.", encoding="utf-16")
    write(docs / "plain.txt")
    found = discover(docs, 10**7)
    assert set(found.found) == {"utf16.txt", "plain.txt"}
    assert found.skipped["photo.txt"] == "binary data, not text, despite its .txt name"
    assert "binary" in found.skipped["control.md"]


def test_a_real_pdf_is_never_sniffed_as_text(docs):
    import pymupdf

    pdf = pymupdf.open()
    pdf.new_page().insert_text((72, 72), "A page.")
    pdf.save(docs / "page.pdf")
    assert set(discover(docs, 10**7).found) == {"page.pdf"}


def test_a_file_over_the_size_limit_is_listed_with_its_size(docs):
    write(docs / "small.txt")
    with open(docs / "huge.txt", "wb") as fh:  # sparse: 20 MB without using the disk
        fh.truncate(20 * 1000 * 1000)
    found = discover(docs, 10 * 1000 * 1000)
    assert set(found.found) == {"small.txt"}
    assert found.skipped["huge.txt"] == "20.0 MB, larger than the 10 MB limit (raise MAX_FILE_MB to index it)"


def test_pdfs_and_images_are_found_whatever_their_size_while_big_text_is_skipped(docs):
    """MAX_FILE_MB holds text-like files; a scan's bytes are pixels, bounded by the converter per page."""
    for name in ("scan.pdf", "photo.png", "notes.txt", "page.html"):
        with open(docs / name, "wb") as fh:  # sparse: 20 MB without using the disk
            fh.truncate(20 * 1000 * 1000)
    found = discover(docs, 10 * 1000 * 1000)
    assert set(found.found) == {"scan.pdf", "photo.png"}
    assert set(found.skipped) == {"notes.txt", "page.html"}
    assert all("MAX_FILE_MB" in reason for reason in found.skipped.values())


def test_unsupported_types_are_listed_with_their_extension(docs):
    (docs / "song.mp3").write_bytes(b"ID3")
    (docs / "archive.zip").write_bytes(b"PK")
    write(docs / "Makefile", "all:\n\techo hi\n")
    found = discover(docs, 10**7)
    assert found.skipped == {"song.mp3": "unsupported file type .mp3", "archive.zip": "unsupported file type .zip"}
    assert set(found.found) == {"Makefile"}


def test_a_symlink_loop_ends_and_links_never_lead_outside(docs, tmp_path):
    write(docs / "inside" / "a.md")
    os.symlink(docs, docs / "inside" / "back-to-top")  # a loop
    os.symlink(docs / "inside", docs / "again")  # a second way into a folder already walked
    outside = tmp_path / "elsewhere"
    write(outside / "secret.md")
    os.symlink(outside, docs / "outside-folder")
    os.symlink(outside / "secret.md", docs / "outside-file.md")
    os.symlink(docs / "inside" / "a.md", docs / "alias.md")  # a link to a file already indexed
    os.symlink(docs / "missing.md", docs / "dangling.md")
    found = discover(docs, 10**7)
    assert set(found.found) == {"inside/a.md"}  # the real path, not the ways in through links
    assert found.skipped["outside-folder/"] == "link points outside the documents folder; not followed"
    assert found.skipped["outside-file.md"] == "link points outside the documents folder; not followed"
    assert found.skipped["alias.md"].startswith("the same file as ")
    assert found.skipped["dangling.md"] == "broken link: its target does not exist"
    assert not any("secret" in source for source in found.found)


def test_a_deep_folder_is_walked_to_the_bottom(docs):
    deep = docs.joinpath(*[f"level-{n}" for n in range(60)])
    write(deep / "bottom.md")
    assert [s.count("/") for s in discover(docs, 10**7).found] == [60]


def test_at_least_fifty_extensions_are_indexed():
    assert len(SUPPORTED_EXTENSIONS) >= 50
    for ext in (".pdf", ".docx", ".pptx", ".xlsx", ".csv", ".html", ".epub", ".json", ".yaml", ".md", ".txt",
                ".py", ".js", ".ts", ".go", ".rs", ".java", ".c", ".cpp"):
        assert ext in SUPPORTED_EXTENSIONS


@pytest.mark.parametrize(
    ("sample", "binary"),
    [(b"", False), ("plain words\n".encode(), False), ("caf\xe9".encode("cp1252"), False),
     ("\ufeffBOM text".encode("utf-8"), False), (b"\x00\x01\x02", True), (bytes(range(32)) * 4, True)],
)
def test_binary_is_told_from_text_by_content(sample, binary):
    assert looks_binary(sample) is binary
