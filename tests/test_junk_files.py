"""One junk file costs only itself: low-information text stays out of the index, repeats count
once, and an exact match on a rare name is never refused.

The folder is the one a user tried: four good files, one of them 60 folders deep, beside a
5 MB line of one character, a base64 blob and a log of hex digests. Before, the 6,250
identical chunks of the long line took the top three sources of every question.
"""

from __future__ import annotations

import base64
import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from chunk_quality import compression_ratio, low_information, screen_chunks, wordless_share
from conftest import ROOT, THINKPYTHON_PDF, module_settings, rag_with, require
from doc_types import Chunk
from document_converter import convert_document
from ollama_standin import OllamaStandin
from text_splitter import split_document

SCIFACT_CORPUS = THINKPYTHON_PDF.parent.parent / "scifact" / "corpus.jsonl"
GOOD = {
    "kelvarine": ("good.pdf", "The kelvarine valve opens at dawn."),
    "Mirelda": ("good.txt", "Mirelda stores the spare keys in the blue drawer."),
    "oskerine": ("good.md", "# Notes\n\nThe oskerine backup runs every Tuesday."),
    "sorvenite": ("/".join(f"d{i}" for i in range(60)) + "/deep.txt", "The sorvenite sample is kept in the cold room."),
}


def write_good_files(docs: Path, names: list[str]) -> None:
    for term in names:
        name, text = GOOD[term]
        path = docs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".pdf"):
            pdf = pymupdf.open()
            pdf.new_page().insert_text((72, 72), text)
            pdf.save(path)
        else:
            path.write_text(text + "\n")


def write_junk_files(docs: Path) -> None:
    rng = random.Random(7)
    (docs / "long-line.md").write_text("x" * 5_000_000)
    (docs / "blob.txt").write_text(base64.b64encode(rng.randbytes(60_000)).decode())
    (docs / "hashes.log").write_text("\n".join(rng.randbytes(32).hex() for _ in range(800)))


def chunk(text: str, index: int = 0, heading: list[str] | None = None) -> Chunk:
    return Chunk(id=f"c{index}", text=text, source="f.txt", title="f", chunk_index=index, heading_path=heading or [])


PROSE = (
    "The important difference is that tuples are immutable. Because tuples are immutable, you can use "
    "them as keys in a dictionary, which you cannot do with lists. A tuple is a sequence of values."
)


def test_low_information_text_is_recognised_and_prose_and_code_are_not() -> None:
    rng = random.Random(1)
    assert low_information("x" * 1000, 10, 0.8)
    assert low_information("ERROR disk full\n" * 80, 10, 0.8), "one line repeated"
    assert low_information(base64.b64encode(rng.randbytes(750)).decode(), 10, 0.8)
    assert low_information("\n".join(rng.randbytes(32).hex() for _ in range(15)), 10, 0.8)
    minified = "".join(f"function a{i}(e,t){{return(e||t).map(function(n){{return[n,t,{i}]}}).filter(Boolean)}};" for i in range(12))
    assert low_information(minified, 10, 0.8), "minified code: no word boundaries"
    assert not low_information(PROSE * 3, 10, 0.8)
    code = "def histogram(s):\n    d = dict()\n    for c in s:\n        d[c] = d.get(c, 0) + 1\n    return d\n" * 2
    assert not low_information(code + PROSE, 10, 0.8)
    soseki = (
        "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所で"
        "ニャーニャー泣いていた事だけは記憶している。吾輩はここで始めて人間というものを見た。しかもあとで聞くと"
        "それは書生という人間中で一番獰悪な種族であったそうだ。この書生というのは時々我々を捕えて煮て食うという話である。"
        "しかしその当時は何という考もなかったから別段恐しいとも思わなかった。ただ彼の掌に載せられてスーと持ち上げられた時"
        "何だかフワフワした感じがあったばかりである。"
    )
    assert not low_information(soseki, 10, 0.8), "CJK has no spaces but is text"
    assert not low_information("x" * 150, 10, 0.8), "too short to judge"
    assert low_information("---", 10, 0.8) and low_information("* * *\n\n| --- | :-: |", 10, 0.8), "no word at all, however short"
    assert compression_ratio(PROSE) < 3 and wordless_share(PROSE) == 0


def test_screening_keeps_the_rest_of_a_file_and_counts_repeats_once() -> None:
    chunks = [chunk(PROSE, 0), chunk("x" * 1000, 1), chunk(PROSE.upper(), 2), chunk(PROSE, 3, ["Other"]), chunk("Tail sentence of the file.", 4)]
    screened = screen_chunks(chunks, 10, 0.8)
    assert [c.chunk_index for c in screened.kept] == [0, 3, 4], "the repeat under the same heading goes; one under another heading stays"
    assert [c.chunk_index for c in screened.low_information] == [1] and [c.chunk_index for c in screened.repeats] == [2]
    assert screened.notes(1000, 200) == ["low-information text left out (1 kB, 1 chunk)", "1 chunk repeating earlier text counted once"]
    assert [c.chunk_index for c in screen_chunks(chunks, 0, 0.8).kept] == [0, 1, 3, 4], "0 turns the low-information screen off"


@pytest.mark.slow
def test_no_chunk_of_the_shipped_documents_think_python_or_scifact_is_screened_out() -> None:
    """The thresholds are measured on real corpora: none of their text may be lost."""
    from config import Settings

    s = Settings()
    paths = sorted(p for p in (ROOT / "documents").rglob("*") if p.is_file()) + [require(THINKPYTHON_PDF)]
    for path in paths:
        chunks = split_document(convert_document(path, path.name), s.chunk_size, s.chunk_overlap)
        screened = screen_chunks(chunks, s.low_info_max_compression, s.low_info_max_wordless)
        assert not screened.low_information, (path.name, screened.low_information[0].text[:200])
    abstracts = [json.loads(line) for line in require(SCIFACT_CORPUS).read_text().splitlines() if line.strip()]
    lost = [a["_id"] for a in abstracts if low_information(a["title"] + "\n" + a["text"], s.low_info_max_compression, s.low_info_max_wordless)]
    assert not lost, lost[:5]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Any]:
    home = tmp_path_factory.mktemp("hostile")
    docs = home / "documents"
    docs.mkdir()
    write_good_files(docs, list(GOOD))
    write_junk_files(docs)
    with OllamaStandin(pieces=["From the documents", " [1]."]) as ollama:
        rag = rag_with(module_settings(home, llm_backend="ollama", ollama_host=ollama.url), embedder)
        rag.index()
        yield rag
        rag.close()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("term", list(GOOD))
def test_each_good_file_is_the_first_source_for_its_term_and_answers(hostile: Any, term: str) -> None:
    answer = hostile.ask(f"What about {term}?")
    assert answer.passages[0].source == GOOD[term][0], [p.label for p in answer.passages]
    assert not answer.refused and answer.kind != "refusal", answer.text
    assert all(p.source not in ("long-line.md", "blob.txt", "hashes.log") for p in answer.passages)


def test_stats_name_the_junk_and_why_and_keep_it_out_of_both_stores(hostile: Any) -> None:
    stats = hostile.stats()
    assert stats["files"] == 4 and stats["chunks"] == 4 and stats["keyword_index_chunks"] == 4
    for name, size in (("long-line.md", "5.0 MB"), ("blob.txt", "kB"), ("hashes.log", "kB")):
        assert "low-information text left out" in stats["failed"][name] and size in stats["failed"][name], stats["failed"]
    assert not any(str(hostile.settings.docs_dir) in reason for reason in stats["failed"].values()), "no server paths"


def test_a_question_sharing_only_common_words_is_still_refused(hostile: Any) -> None:
    answer = hostile.ask("Which drawer holds the umbrella in the winter?")
    assert answer.refused, answer.text


def test_a_rare_name_the_embedding_model_does_not_know_is_answered_in_a_two_file_folder(tmp_path: Path, embedder: Any) -> None:
    docs = tmp_path / "documents"
    docs.mkdir()
    write_good_files(docs, ["Mirelda", "oskerine"])
    with OllamaStandin(pieces=["Mirelda stores the spare keys in the blue drawer", " [1]."]) as ollama:
        rag = rag_with(module_settings(tmp_path, llm_backend="ollama", ollama_host=ollama.url), embedder)
        try:
            rag.index()
            answer = rag.ask("What about Mirelda?")
        finally:
            rag.close()
    assert answer.relevance.similarity < rag.settings.relevance_min_similarity_with_overlap, "the case the words must carry"
    assert not answer.refused and answer.passages[0].source == "good.txt"
    assert "blue drawer" in answer.text


def test_a_shipped_document_copy_keeps_every_chunk(tmp_path: Path, embedder: Any) -> None:
    """A real folder with a junk file beside it: the junk costs only itself."""
    docs = tmp_path / "documents"
    shutil.copytree(ROOT / "documents", docs)
    rag = rag_with(module_settings(tmp_path, llm_backend="llamacpp"), embedder)
    try:
        rag.index()
        before = rag.stats()["chunks"]
        (docs / "long-line.md").write_text("x" * 2_000_000)
        rag.index()
        stats = rag.stats()
        top = rag.retrieve_context("What is the default chunk size?")
    finally:
        rag.close()
    assert stats["chunks"] == before and "long-line.md" in stats["failed"]
    assert all(p.source != "long-line.md" for p in top)


def test_bm25s_best_chunk_is_moved_into_the_top_k_only_when_it_holds_a_rare_term() -> None:
    from retriever import Ranked, keep_rare_match

    ranked = [Ranked(f"v{i}", 1.0 - i / 10, {"vector": i + 1}) for i in range(6)] + [Ranked("kw", 0.3, {"bm25": 1})]
    chunks = {"kw": chunk("Mirelda stores the spare keys in the blue drawer.", 9)} | {f"v{i}": chunk(f"Keys {i}.", i) for i in range(6)}
    moved = keep_rare_match(ranked, chunks, {"mirelda"}, 3)
    assert [cid for cid, _, _ in moved[:3]] == ["v0", "v1", "kw"] and len(moved) == len(ranked)
    assert keep_rare_match(ranked, chunks, {"tuesday"}, 3) == ranked, "the chunk does not hold the rare term"
    assert keep_rare_match(ranked, chunks, set(), 3) == ranked
