"""Behaviour of incremental indexing: only what changed is embedded, and the stores always agree.

Real Chroma (embedded, in a temp folder), the real keyword index and the real
all-MiniLM-L6-v2 embedder (loaded once per session and shared) over a few small files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from errors import LockError
from rag_system import RAGSystem

FILES = {
    "espresso.md": "# Espresso\n\n## Grinding\n\nGrind the beans finely for espresso.\n\n## Brewing\n\n"
    + " ".join(f"Shot {n}: pull it for twenty-five seconds at nine bar." for n in range(1, 7)),
    "notes/descaling.txt": "".join(f"Month {n}: descale the boiler with citric acid.\n" for n in range(1, 9)),
    "milk.md": "# Milk\n\nSteam the milk to sixty degrees for a silky microfoam.\n",
}




@pytest.fixture
def docs(make_settings) -> Path:
    folder = make_settings().docs_dir
    for name, text in FILES.items():
        write(folder / name, text)
    return folder


@pytest.fixture
def rag(open_rag, docs) -> RAGSystem:
    system = open_rag(chunk_size=300, chunk_overlap=50)
    system.index()
    return system


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def ids_everywhere(rag: RAGSystem) -> tuple[set[str], set[str], set[str]]:
    """(manifest, vector store, keyword index) chunk ids."""
    manifest = {cid for record in rag.indexer.manifest.files.values() for cid in record.chunk_ids}
    vectors = set(rag.vectors.collection.get(include=[])["ids"])
    keywords = {cid for ids in rag.keywords.ids_by_source().values() for cid in ids}
    return manifest, vectors, keywords


def assert_consistent(rag: RAGSystem) -> set[str]:
    manifest, vectors, keywords = ids_everywhere(rag)
    assert manifest == vectors == keywords
    assert rag.indexer.check() == []
    return manifest


def file_ids(rag: RAGSystem) -> dict[str, list[str]]:
    return {source: list(record.chunk_ids) for source, record in rag.indexer.manifest.files.items()}


# --- Incremental sync ----------------------------------------------------------------------


def test_first_sync_indexes_every_file(rag):
    ids = assert_consistent(rag)
    stats = rag.stats()
    assert sorted(rag.indexer.manifest.files) == sorted(FILES)
    assert stats["files"] == 3 and stats["chunks"] == len(ids) == stats["vector_store_chunks"]
    assert stats["failed"] == {}
    assert stats["last_indexed"] is not None


def test_second_sync_embeds_nothing(rag):
    before = file_ids(rag)
    report = rag.index()
    assert report.chunks_embedded == 0
    assert (report.added, report.updated, report.removed, report.unchanged) == ([], [], [], 3)
    assert file_ids(rag) == before


def test_changed_file_is_reembedded_alone(rag, docs):
    before = file_ids(rag)
    write(docs / "milk.md", "# Milk\n\nSteam oat milk to fifty-five degrees; it scorches sooner.\n")
    report = rag.index()
    after = file_ids(rag)
    assert report.updated == ["milk.md"] and report.added == report.removed == []
    assert report.chunks_embedded == len(after["milk.md"])
    assert not set(after["milk.md"]) & set(before["milk.md"])
    assert {k: v for k, v in after.items() if k != "milk.md"} == {k: v for k, v in before.items() if k != "milk.md"}
    assert_consistent(rag)
    found = rag.retrieve_context("oat milk scorches", k=1)
    assert found[0].source == "milk.md" and "oat milk" in found[0].text


def test_new_file_is_embedded_alone(rag, docs):
    write(docs / "cups.txt", "Warm the cups before serving.\n")
    report = rag.index()
    assert report.added == ["cups.txt"] and report.updated == []
    assert report.chunks_embedded == 1
    assert_consistent(rag)


def test_deleted_file_leaves_both_stores(rag, docs):
    gone = set(file_ids(rag)["notes/descaling.txt"])
    (docs / "notes" / "descaling.txt").unlink()
    report = rag.index()
    assert report.removed == ["notes/descaling.txt"] and report.chunks_embedded == 0
    ids = assert_consistent(rag)
    assert not gone & ids
    assert rag.vectors.collection.get(ids=list(gone))["ids"] == []
    assert rag.keywords.get_chunks(list(gone)) == {}
    assert all(p.source != "notes/descaling.txt" for p in rag.retrieve_context("descale the boiler citric acid"))


def test_touched_file_is_not_reembedded(rag, docs):
    path = docs / "espresso.md"
    before = file_ids(rag)
    later = path.stat().st_mtime + 3600
    os.utime(path, (later, later))
    report = rag.index()
    assert report.chunks_embedded == 0 and report.updated == []
    assert file_ids(rag) == before
    assert rag.indexer.manifest.files["espresso.md"].mtime == later  # next time a stat is enough


def test_bad_file_is_skipped_with_its_reason_and_the_rest_indexed(open_rag, docs):
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7\nthis file was cut off in the middle of a dow")
    (docs / "song.mp3").write_bytes(b"ID3\x04")
    rag = open_rag(chunk_size=300, chunk_overlap=50)
    report = rag.index()
    assert sorted(report.added) == sorted(FILES)
    stats = rag.stats()
    assert list(stats["failed"]) == ["broken.pdf"]
    assert "PDF" in stats["failed"]["broken.pdf"]
    assert stats["skipped"] == {"song.mp3": "unsupported file type .mp3"}
    assert_consistent(rag)
    # Unchanged, it is not retried; replaced by a good file, it is indexed and forgiven.
    assert rag.index().failed == {"broken.pdf": stats["failed"]["broken.pdf"]}
    (docs / "broken.pdf").unlink()
    write(docs / "broken.txt", "Now readable.\n")
    rag.index()
    assert rag.stats()["failed"] == {}


def test_a_file_over_the_time_limit_is_indexed_once_the_limit_is_raised(open_rag, docs):
    """Its reason names CONVERT_TIMEOUT_S: raising it, as the reason says, must bring the file in."""
    rag = open_rag(chunk_size=300, chunk_overlap=50, convert_workers=1, convert_timeout_s=0.01)
    report = rag.index()
    assert set(report.failed) == set(FILES)
    assert all("CONVERT_TIMEOUT_S" in reason for reason in report.failed.values())
    rag.close()

    rag = open_rag(chunk_size=300, chunk_overlap=50, convert_workers=1)
    report = rag.index()
    assert report.failed == {} and sorted(report.added) == sorted(FILES)
    assert rag.stats()["failed"] == {}
    assert_consistent(rag)


def test_a_file_that_hung_is_tried_again_at_later_starts_three_times_in_all(open_rag, docs):
    """A hang (or a crash) may be the machine's, busy or short of memory: the file is not lost for good,
    but tried again at the next start, not within one run (the live folder would loop), at most 3 times."""
    tries = []
    for _ in range(4):
        rag = open_rag(chunk_size=300, chunk_overlap=50, convert_workers=1, convert_timeout_s=0.01)
        rag.index()
        tries.append(rag.indexer.manifest.failed["milk.md"].tries)
        assert "milk.md" in rag.index().failed  # a second sync in the same run does not try it again
        assert rag.indexer.manifest.failed["milk.md"].tries == tries[-1]
        rag.close()
    assert tries == [1, 2, 3, 3]
    write(docs / "milk.md", "# Milk\n\nWarm the milk gently.\n")  # changed: a new file to try
    rag = open_rag(chunk_size=300, chunk_overlap=50, convert_workers=1, convert_timeout_s=0.01)
    rag.index()
    assert rag.indexer.manifest.failed["milk.md"].tries == 1


def test_copies_of_one_file_are_all_indexed(open_rag, docs):
    """Identical files are converted at once by different workers, which write one cache file."""
    text = "# Copy\n\nEvery copy of this note must be indexed, however the workers race.\n" * 40
    for n in range(16):
        write(docs / f"copies/copy-{n:02d}.md", text)
    rag = open_rag(chunk_size=300, chunk_overlap=50, convert_workers=2)
    report = rag.index()
    assert report.failed == {}
    assert {f"copies/copy-{n:02d}.md" for n in range(16)} <= set(report.added)
    assert_consistent(rag)
    assert not list(rag.settings.cache_dir.glob("*.tmp"))  # no half-written cache files left


def test_concurrent_writes_of_one_cache_file_all_succeed(tmp_path, caplog):
    """What two workers converting identical files do: write the same cache file at once."""
    from concurrent.futures import ThreadPoolExecutor

    from document_converter import _write_cache

    target = tmp_path / "cache" / "same.v3.json"
    text = '{"ok": true}' * 20000
    with caplog.at_level("WARNING"), ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: _write_cache(target, text), range(200)))
    assert not caplog.records  # a failed write only logs a warning
    assert target.read_text() == text
    assert [p.name for p in target.parent.iterdir()] == ["same.v3.json"]


def test_an_unwritable_conversion_cache_costs_no_file(tmp_path, caplog):
    from document_converter import convert_document

    cache = tmp_path / "cache"
    cache.write_text("a file where the cache folder should be")
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nStill converted.\n", encoding="utf-8")
    with caplog.at_level("WARNING"):
        doc = convert_document(note, "note.md", cache)
    assert "Still converted." in doc.to_json()
    assert any("conversion cache" in r.getMessage() for r in caplog.records)


def test_progress_reaches_the_total_even_when_the_last_file_fails(open_rag, docs):
    (docs / "notes" / "zz-broken.pdf").write_bytes(b"not a pdf")
    calls = []
    report = open_rag().index(progress=lambda stage, done, total: calls.append((stage, done, total)))
    assert list(report.failed) == ["notes/zz-broken.pdf"]
    assert calls[-1] == ("files", 4, 4)


def test_indexing_status_counts_files_and_chunks_and_names_the_file_in_hand(open_rag, docs):
    rag = open_rag(chunk_size=300, chunk_overlap=50)
    seen = []
    report = rag.index(progress=lambda stage, done, total: seen.append(rag.index_status()))
    assert [(s.state, s.stage, s.done, s.total) for s in seen] == [("indexing", "indexing", n, 3) for n in (1, 2, 3)]
    assert all(s.current in FILES for s in seen) and seen[0].chunks_total > 0
    assert seen[1].seconds_left() is not None
    last = rag.index_status()
    assert last.state == "idle" and last.chunks_done == last.chunks_total == report.chunks_embedded


def test_embedding_progress_moves_within_a_big_file(open_rag, docs):
    write(docs / "big.md", "".join(f"## Part {n}\n\nThe grinder setting {n} suits a {n}-second shot.\n\n" for n in range(300)))
    rag = open_rag(chunk_size=100, chunk_overlap=0)
    steps = []
    report = rag.indexer.sync(on_step=steps.append)
    embedded = sorted({s.chunks_done for s in steps if s.stage == "indexing"})
    assert report.chunks_embedded > 2 * 128
    assert [n for n in embedded if 0 < n < report.chunks_embedded], "progress stood still while the big file was embedded"
    assert embedded[-1] == report.chunks_embedded
    assert {s.current for s in steps if s.chunks_done} <= set(FILES) | {"big.md"}


def test_file_that_turns_bad_loses_its_old_chunks(rag, docs):
    old = set(file_ids(rag)["notes/descaling.txt"])
    (docs / "notes" / "descaling.txt").write_bytes(b"\x00\x01binary now" * 50)
    report = rag.index()
    assert "binary data" in report.skipped["notes/descaling.txt"]  # the folder walk checks content
    assert "notes/descaling.txt" in report.removed
    assert not old & assert_consistent(rag)


def test_reindex_rebuilds_everything(rag):
    before = file_ids(rag)
    report = rag.index(reindex=True)
    assert sorted(report.added) == sorted(FILES)
    assert report.chunks_embedded == sum(len(v) for v in before.values())
    assert file_ids(rag) == before
    assert_consistent(rag)


def test_changed_chunk_size_rebuilds_the_index(open_rag, docs, caplog):
    first = open_rag(chunk_size=300, chunk_overlap=50)
    first.index()
    old = assert_consistent(first)
    first.close()
    second = open_rag(chunk_size=120, chunk_overlap=20)
    with caplog.at_level("INFO", logger="indexer"):
        report = second.index()
    assert "Rebuilding the index: CHUNK_SIZE, CHUNK_OVERLAP changed since it was built" in caplog.text, "the log says why"
    new = assert_consistent(second)
    assert sorted(report.added) == sorted(FILES)
    assert report.chunks_embedded == len(new) > len(old)  # every chunk embedded again, none left over
    assert max(len(c.text) for c in second.keywords.get_chunks(sorted(new)).values()) <= 120


# --- Consistency checks and repair ---------------------------------------------------------


def test_ids_agree_after_add_change_and_delete(rag, docs):
    write(docs / "cups.txt", "Warm the cups before serving.\n")
    write(docs / "milk.md", "# Milk\n\nUse whole milk for the sweetest foam.\n")
    (docs / "espresso.md").unlink()
    rag.index()
    ids = assert_consistent(rag)
    assert {c.source for c in rag.keywords.get_chunks(sorted(ids)).values()} == {"cups.txt", "milk.md", "notes/descaling.txt"}


def test_check_finds_chunks_missing_from_the_vector_store_and_repair_restores_them(rag):
    lost = file_ids(rag)["espresso.md"][:2]
    rag.vectors.collection.delete(ids=lost)
    problems = rag.indexer.check()
    assert problems == [{"source": "espresso.md", "store": "vector store", "missing": 2, "extra": 0, "in_manifest": True}]
    assert rag.indexer.repair(problems) == ["espresso.md"]
    report = rag.index()
    assert report.added == ["espresso.md"]
    assert report.chunks_embedded == len(file_ids(rag)["espresso.md"])
    assert set(lost) <= assert_consistent(rag)


def test_check_finds_chunks_missing_from_the_keyword_index_and_repair_restores_them(rag):
    lost = file_ids(rag)["milk.md"]
    rag.keywords.delete_ids(lost)
    problems = rag.indexer.check()
    assert [(p["source"], p["store"], p["missing"]) for p in problems] == [("milk.md", "keyword index", len(lost))]
    rag.indexer.repair(problems)
    rag.index()
    assert set(lost) <= assert_consistent(rag)


def test_check_finds_stray_chunks_unknown_to_the_manifest(rag):
    from doc_types import Chunk

    stray = Chunk(id="stray", text="left behind by a crash", source="ghost.txt", title="ghost", chunk_index=0)
    rag.keywords.add_chunks([stray])
    problems = rag.indexer.check()
    assert problems == [{"source": "ghost.txt", "store": "keyword index", "missing": 0, "extra": 1, "in_manifest": False}]
    rag.indexer.repair(problems)
    assert_consistent(rag)


def test_sync_repairs_a_store_that_lost_rows_on_its_own(rag):
    lost = file_ids(rag)["notes/descaling.txt"]
    rag.vectors.collection.delete(ids=lost)
    report = rag.index()
    assert report.added == ["notes/descaling.txt"]
    assert set(lost) <= assert_consistent(rag)


# --- The data-folder lock ------------------------------------------------------------------


def test_second_system_on_the_same_data_folder_is_refused_until_the_first_closes(open_rag):
    first = open_rag()
    with pytest.raises(LockError) as info:
        open_rag()
    message = str(info.value)
    assert str(first.settings.db_dir) in message
    assert f"pid {os.getpid()}" in message and "--db" in message
    first.close()
    second = open_rag()
    assert second.stats()["files"] == 0


def test_a_reader_opens_beside_the_writer_and_sees_the_index_whole(rag, embedder):
    import threading

    reader = RAGSystem(rag.settings, embedder=embedder, lock="read")
    assert reader.stats()["files"] == len(FILES) and reader.check().consistent
    assert reader.retrieve_context("How long is the espresso shot pulled?", k=1)[0].source == "espresso.md"
    with pytest.raises(LockError, match="only reads"):
        reader.index()
    synced = threading.Event()
    waiting = threading.Thread(target=lambda: (rag.index(), synced.set()))
    waiting.start()
    assert not synced.wait(1.0), "the writer's sync waits while a reader reads"
    reader.close()
    assert synced.wait(30)
    waiting.join()

    opened: list[RAGSystem] = []
    with rag._lock.changing():  # a sync under way
        late = threading.Thread(target=lambda: opened.append(RAGSystem(rag.settings, embedder=embedder, lock="read")))
        late.start()
        late.join(1.0)
        assert opened == [], "a reader waits for the sync under way to end"
    late.join(30)
    assert opened and opened[0].stats()["chunks"] == rag.stats()["chunks"]
    opened[0].close()


def test_a_pdf_passage_names_the_printed_page_and_keeps_the_pdf_page_in_json(open_rag):
    from answer_render import source_line
    from answer_types import passage_json
    from test_document_converter import make_labelled_pdf
    from web_html import source_card_html

    rag = open_rag()
    make_labelled_pdf(rag.settings.docs_dir / "book.pdf")
    rag.index()
    (passage,) = rag.retrieve_context("Which sequences are immutable?", k=1)
    assert (passage.page, passage.location) == (3, "page 1"), "the 3rd page of the PDF is printed as 1"
    shown = passage_json(passage)
    assert (shown["page"], shown["pages"], shown["page_label"], shown["location"]) == (3, [3], "1", "page 1")
    assert "<div class='where' title='PDF page 3'>[1] book.pdf — page 1</div>" in source_card_html(1, passage, [])
    assert source_line(1, passage).startswith("[1] book.pdf, page 1 ")
    (front,) = rag.retrieve_context("Preface", k=1)
    assert front.location == "page i"


def test_an_index_made_before_page_labels_names_the_pdf_page(open_rag):
    """Chunks stored without a label (an older index) read back as before: the page's number, no tooltip."""
    from answer_types import passage_json
    from test_document_converter import make_labelled_pdf
    from web_html import source_card_html

    rag = open_rag()
    make_labelled_pdf(rag.settings.docs_dir / "book.pdf")
    rag.index()
    rag.keywords.db.execute("UPDATE chunks SET meta = json_remove(meta, '$.page_label')")
    rag.keywords.db.commit()
    (passage,) = rag.retrieve_context("Which sequences are immutable?", k=1)
    assert passage.location == "page 3" and passage_json(passage)["page_label"] is None
    assert "<div class='where'>[1] book.pdf — page 3</div>" in source_card_html(1, passage, [])


def test_the_manifest_written_after_every_batch_reads_back_record_for_record(tmp_path):
    """Manifest.save writes the records' own fields with json.dumps (fast enough to run after every batch of a
    5,000-file folder); what it writes must load back unchanged, non-ASCII names and notes included."""
    from index_records import FailedFile, FileRecord, Manifest

    path = tmp_path / "manifest.json"
    manifest = Manifest(path, signature={"model": "m", "chunk_size": 1000}, last_indexed=12.5)
    manifest.files["notes/Überblick – 2024.md"] = FileRecord(
        source="notes/Überblick – 2024.md", size=10, mtime=1.5, sha256="ab", kind="markdown", title="Überblick",
        chunk_ids=["c1", "c2"], indexed_at=2.0, notes=["low-information: 1 chunk left out"], extent="310 lines")
    manifest.failed["broken.pdf"] = FailedFile(source="broken.pdf", reason="not a PDF", size=3, mtime=4.0)
    manifest.skipped["movie.mp4"] = "not a document"
    manifest.save()
    loaded = Manifest.load(path)
    assert loaded.files == manifest.files and loaded.failed == manifest.failed
    assert (loaded.skipped, loaded.signature, loaded.last_indexed) == (manifest.skipped, manifest.signature, 12.5)
    assert "Überblick" in path.read_text(encoding="utf-8")  # written as UTF-8, not \u escapes
    assert not path.with_name("manifest.json.tmp").exists()
