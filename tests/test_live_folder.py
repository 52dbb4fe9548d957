"""The live documents folder: background re-indexing on change, uploads, removal, check --repair."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from documents_folder import UploadRefused, sanitize_filename
from rag_system import RAGSystem

ROOT = Path(__file__).resolve().parent.parent


def wait_until(predicate, timeout: float = 45.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


def sources_for(rag: RAGSystem, question: str) -> set[str]:
    return {p.source for p in rag.retrieve_context(question, k=5)}


@pytest.fixture
def rag(make_settings):
    system = RAGSystem(make_settings())
    system.index()
    yield system
    system.close()


@pytest.mark.slow
def test_watched_folder_follows_add_modify_rename_delete_and_folders(rag):
    docs = rag.settings.docs_dir
    rag.watch()
    (docs / "birds.md").write_text("# Birds\n\nThe albatross glides for hours over the ocean.\n", encoding="utf-8")
    wait_until(lambda: "birds.md" in sources_for(rag, "albatross"), what="a new file to be indexed")

    (docs / "birds.md").write_text("# Birds\n\nThe kingfisher dives into rivers for fish.\n", encoding="utf-8")
    wait_until(lambda: rag.keywords.search("kingfisher", 5) and not rag.keywords.search("albatross", 5), what="a modified file to be re-indexed")

    (docs / "birds.md").rename(docs / "kingfishers.md")
    wait_until(lambda: sources_for(rag, "kingfisher dives") == {"kingfishers.md"}, what="a renamed file to be re-indexed")

    nested = docs / "trips" / "2026"
    nested.mkdir(parents=True)
    (nested / "alps.txt").write_text("We crossed the Grossglockner pass on foot.\n", encoding="utf-8")
    wait_until(lambda: "trips/2026/alps.txt" in sources_for(rag, "Grossglockner"), what="a file in a new folder")

    (docs / "kingfishers.md").unlink()
    shutil.rmtree(docs / "trips")
    wait_until(lambda: rag.keywords.count() == 0 and rag.index_status().state == "idle", what="deleted files to leave the index")
    time.sleep(1.5)  # let a trailing debounced sync finish
    wait_until(lambda: rag.index_status().state == "idle", what="indexing to finish")
    assert rag.indexer.check() == []
    assert rag.index_status().finished


@pytest.mark.parametrize(
    "name, expected",
    [
        ("../../x.pdf", "x.pdf"),
        ("/etc/passwd.txt", "passwd.txt"),
        ("C:\\Users\\me\\notes.md", "notes.md"),
        ("line\nbreak.txt", "line_break.txt"),
        (".hidden.md", "hidden.md"),
        ("Résumé – 2026.docx", "Résumé _ 2026.docx"),
    ],
)
def test_upload_names_are_sanitized(name, expected):
    assert sanitize_filename(name) == expected


def test_upload_lands_in_the_folder_without_overwriting_and_is_answerable(rag, tmp_path):
    src = tmp_path / "incoming.md"
    src.write_text("# Tea\n\nOolong is partially oxidised tea.\n", encoding="utf-8")
    first = rag.add_upload("../../tea.md", src)
    second = rag.add_upload("tea.md", src)
    assert first == "tea.md" and second == "tea (1).md"
    assert (rag.settings.docs_dir / "tea.md").read_text(encoding="utf-8").startswith("# Tea")
    assert not (rag.settings.docs_dir.parent / "tea.md").exists()
    rag.index()
    assert "tea.md" in sources_for(rag, "oolong oxidised")


def test_upload_refuses_unsupported_types_and_oversized_files(make_settings, tmp_path):
    rag = RAGSystem(make_settings(max_file_mb=0.001))
    try:
        exe = tmp_path / "tool.exe"
        exe.write_bytes(b"MZ\x00\x00")
        with pytest.raises(UploadRefused, match="not supported"):
            rag.add_upload("tool.exe", exe)
        big = tmp_path / "big.txt"
        big.write_text("x" * 5000)
        with pytest.raises(UploadRefused, match="MAX_FILE_MB"):
            rag.add_upload("big.txt", big)
        assert list(rag.settings.docs_dir.iterdir()) == []
    finally:
        rag.close()


def test_a_pdf_or_image_upload_over_max_file_mb_is_accepted_up_to_max_upload_mb(make_settings, tmp_path):
    """A scan's bytes are pixels: PDFs and images have their own, larger cap, and text keeps MAX_FILE_MB."""
    rag = RAGSystem(make_settings(max_file_mb=0.001, max_upload_mb=0.01))
    try:
        scan, photo, huge = tmp_path / "scan.pdf", tmp_path / "photo.png", tmp_path / "huge.pdf"
        scan.write_bytes(b"%PDF-1.7\n" + b"x" * 5000)
        photo.write_bytes(b"\x89PNG" + b"x" * 5000)
        huge.write_bytes(b"%PDF-1.7\n" + b"x" * 20_000)
        assert [rag.add_upload(p.name, p) for p in (scan, photo)] == ["scan.pdf", "photo.png"]
        with pytest.raises(UploadRefused, match=r"over the 0\.01 MB limit \(MAX_UPLOAD_MB\)"):
            rag.add_upload("huge.pdf", huge)
        assert sorted(p.name for p in rag.settings.docs_dir.iterdir()) == ["photo.png", "scan.pdf"]
    finally:
        rag.close()


def test_upload_refuses_an_empty_file(open_rag, tmp_path):
    rag = open_rag()
    blank = tmp_path / "blank.pdf"
    blank.write_bytes(b"")
    with pytest.raises(UploadRefused, match=r"^blank\.pdf: the file is empty \(0 bytes\); check that it saved completely"):
        rag.add_upload("blank.pdf", blank)
    assert list(rag.settings.docs_dir.iterdir()) == []


def test_remove_document_deletes_file_and_chunks(rag):
    (rag.settings.docs_dir / "a.md").write_text("# A\n\nApples are red.\n", encoding="utf-8")
    (rag.settings.docs_dir / "b.md").write_text("# B\n\nBananas are yellow.\n", encoding="utf-8")
    rag.index()
    rag.remove_document("a.md")
    assert not (rag.settings.docs_dir / "a.md").exists()
    assert set(rag.keywords.ids_by_source()) == {"b.md"}
    assert set(rag.vectors.ids_by_source()) == {"b.md"}


def run_cli(settings, *args):
    env = {"DOCS_DIR": str(settings.docs_dir), "DB_DIR": str(settings.db_dir), "PATH": "/usr/bin:/bin", "HOME": str(settings.db_dir.parent)}
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_check_finds_and_repairs_damage_in_each_store_and_the_manifest(make_settings):
    settings = make_settings()
    for name in ("one", "two", "three"):
        (settings.docs_dir / f"{name}.md").write_text(f"# {name}\n\n" + f"{name} words here. " * 80, encoding="utf-8")
    rag = RAGSystem(settings)
    rag.index()
    one = rag.indexer.manifest.files["one.md"].chunk_ids
    rag.vectors.collection.delete(ids=one[:1])  # a row lost from Chroma
    rag.keywords.delete_ids(rag.indexer.manifest.files["two.md"].chunk_ids[:1])  # and from BM25
    rag.close()
    manifest = json.loads(settings.manifest_path.read_text())
    manifest["files"]["three.md"]["chunk_ids"].append("0" * 32)  # an edited manifest
    settings.manifest_path.write_text(json.dumps(manifest))

    found = run_cli(settings, "check", "--json")
    assert found.returncode == 1, found.stderr
    report = json.loads(found.stdout)
    assert {p["source"] for p in report["problems"]} == {"one.md", "two.md", "three.md"}

    repaired = run_cli(settings, "check", "--repair", "--json")
    assert sorted(json.loads(repaired.stdout)["repaired"]) == ["one.md", "three.md", "two.md"]
    clean = run_cli(settings, "check", "--json")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert json.loads(clean.stdout)["consistent"] is True
