"""Behaviour of retrieval: tokens, fusion, filters, context shaping, and the keyword index in step.

Unit tests use small fakes where only arithmetic is at stake; the rest run the real
keyword index, embedded Chroma and the packaged all-MiniLM-L6-v2 over a few real
SciFact abstracts and small files.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from common_words import typo_edits
from conftest import SCIFACT, module_settings, rag_with, require
from doc_types import Chunk
from keyword_index import (
    TOKENIZER_VERSION,
    KeywordIndex,
    exact_terms,
    index_text,
    query_tokens,
    split_identifier,
    symbol_tokens,
    tokenize,
    versions,
)
from rag_system import RAGSystem
from retriever import (
    Passage,
    Ranked,
    add_neighbour_context,
    cap_per_file,
    exact_matches_first,
    merge_neighbours,
    reciprocal_rank_fusion,
    score_blend,
)

# ------------------------------------------------------------------ tokens


def test_identifiers_split_into_their_words():
    assert split_identifier("parse_config") == ["parse", "config"]
    assert split_identifier("ParseConfig") == ["parse", "config"]
    assert split_identifier("HTTPServer") == ["http", "server"]


def test_tokens_keep_the_whole_identifier_and_its_parts():
    tokens = tokenize("def load_settings(overrides): return ChromaClient()")
    assert "load_set" in tokens  # the whole identifier, stemmed
    assert {"load", "set", "chroma", "client", "overrid"} <= set(tokens)


def test_operators_and_flags_are_tokens_as_written():
    assert symbol_tokens("hours = minutes // 60; x**2 if a == b else y % 3") == ["//", "**", "==", "%"]
    assert symbol_tokens("run python main.py index --reindex") == ["--reindex"]
    assert {"reindex", "--reindex", "//"} <= set(tokenize("floor division: 7 // 2, and index --reindex"))


def test_urls_bold_text_and_percent_signs_are_not_operators():
    assert symbol_tokens("see http://thinkpython2.com, **bold** text, 50% of cases, ==== rules ====") == []


def test_a_format_specifier_is_named_by_its_letter_not_the_percent_operator():
    # "%M", "%s": a manual lists them by letter; the operator's exact match would rank every passage with a "%" first
    assert symbol_tokens("What do %M and '%s' report in the format string?") == []
    assert symbol_tokens("what does % do? x % y, a%b") == ["%", "%", "%"]
    assert "m" in tokenize("What does the %M specifier report?")


def test_a_question_about_an_operator_finds_the_text_that_uses_it(tmp_path):
    index = KeywordIndex(tmp_path)
    index.add_chunks([chunk("ops.md", 0, "Floor division, //, rounds down: 7 // 2 is 3."), chunk("div.md", 0, "Division rounds nothing down.")])
    assert [cid for cid, _ in index.search("//", 5)] == ["ops.md:0"]


def test_asking_words_are_left_out_of_queries_so_the_named_thing_counts(tmp_path):
    assert query_tokens("What does setdefault do?") == ["setdefault"]
    assert query_tokens("what do you do") == tokenize("what do you do")  # nothing else to search by
    index = KeywordIndex(tmp_path)
    index.add_chunks([
        chunk("faq.md", 0, "What does it do? What does it cost? Why does it do that? How do we do it?"),
        chunk("dict.md", 0, "The dictionary method setdefault inserts a key with a default value."),
    ])
    assert [cid for cid, _ in index.search("What does setdefault do?", 5)] == ["dict.md:0"]


def test_exact_terms_are_names_operators_and_flags_not_words():
    assert exact_terms("What is TOP_K, and does parse_config use //?") == ["top_k", "parse_config", "//"]
    assert exact_terms("How do I use --reindex?") == ["--reindex"]
    assert exact_terms("Does mRNA decay faster in 50% of cells?") == []  # camelCase and percent signs are prose here


def test_a_version_is_one_token_so_its_row_is_found(tmp_path):
    assert versions("What is Ubuntu 22.04 called, and what did v1.1.0 add?") == ["22.04", "1.1.0"]
    assert "22.04" in tokenize("| 22.04 LTS | Jammy Jellyfish |") and "04" in tokenize("22.04")  # its parts still count
    assert versions("Released on 2024-04-25, 3 days later.") == []  # dates and plain numbers are no versions
    index = KeywordIndex(tmp_path)
    rows = ["| 04.22 | Alpha | built 22 April 2004, patch 04-22 |", "| 22.04 | Beta | built in spring |"]
    rows += [f"| {n}.0 | Gamma {n} | built in winter |" for n in range(5, 15)]
    index.add_chunks([chunk("releases.xlsx", i, row) for i, row in enumerate(rows)])
    assert index.search("What is release 22.04 called?", 1)[0][0] == "releases.xlsx:1"  # not the row with its parts


def test_chunks_holding_the_exact_name_asked_about_rank_first(tmp_path):
    index = KeywordIndex(tmp_path)
    index.add_chunks([chunk("book.md", 0, "The top k results"), chunk("config.docx", 0, "| TOP_K | 5 | Passages per question |")])
    fused = [Ranked("book.md:0", 0.9, {"vector": 1}), Ranked("config.docx:0", 0.3, {"bm25": 1}), Ranked("other.md:0", 0.2, {"vector": 2})]
    held = index.terms_held([cid for cid, _, _ in fused], exact_terms("What is TOP_K?"))
    ranked = exact_matches_first(fused, held)
    assert [cid for cid, _, _ in ranked] == ["config.docx:0", "book.md:0", "other.md:0"]
    assert ranked[0].found_by == {"bm25": 1, "exact": 1} and ranked[0].score > ranked[1].score  # re-sorting by score keeps the order
    assert exact_matches_first(fused, {}) == fused


def test_a_misspelling_finds_the_word_the_documents_hold_and_a_name_they_lack_does_not(tmp_path):
    """Retriever.unnamed_terms doubts a question naming what no document holds, but not a typo."""
    index = KeywordIndex(tmp_path)
    index.add_chunks([chunk("pda.md", 0, "Screening for patent ductus arteriosus. Run the tests with make test.")])
    for typo in ("ateriosus", "arteriossus"):
        assert index.near_term(tokenize(typo)[0], typo_edits(typo)) == tokenize("arteriosus")[0]
    assert index.near_term("pytest", typo_edits("pytest")) is None, "two edits from 'test' in a short word is another word"


def test_stop_words_are_dropped_and_words_stemmed():
    assert tokenize("The beans are grinding in the grinder") == ["bean", "grind", "grinder"]


def test_query_for_an_identifier_finds_its_parts_and_back(tmp_path):
    index = KeywordIndex(tmp_path)
    index.add_chunks([chunk("code.py", 0, "def parse_config(path): ..."), chunk("prose.md", 0, "We parse the config file at start.")])
    found = [cid for cid, _ in index.search("ParseConfig", 5)]
    assert found[0] == "code.py:0"
    assert "prose.md:0" in found


def test_headings_count_twice_for_bm25():
    c = chunk("guide.md", 0, "Pull the shot.", heading_path=["Espresso", "Brewing"])
    assert tokenize(index_text(c)).count("brew") == 2


# ------------------------------------------------------------------ fusion


def test_blend_normalises_each_list_and_rewards_agreement():
    fused = score_blend(
        {"vector": [("a", 0.82), ("b", 0.80), ("c", 0.40)], "bm25": [("b", 12.0), ("d", 3.0)]},
        {"vector": 0.6, "bm25": 0.4},
    )
    ids = [cid for cid, _, _ in fused]
    assert ids[0] == "b"  # near the top of both lists
    assert dict((cid, ranks) for cid, _, ranks in fused)["b"] == {"vector": 2, "bm25": 1}
    assert fused[0][1] == pytest.approx(0.6 * (0.80 - 0.40) / 0.42 + 0.4)
    assert dict((cid, s) for cid, s, _ in fused)["c"] == 0.0  # last of its only list


def test_blend_keeps_a_clear_winner_that_rrf_flattens():
    hits = {"vector": [("a", 0.61), ("b", 0.60), ("c", 0.20)], "bm25": [("b", 30.0), ("a", 2.0), ("c", 1.9)]}
    weights = {"vector": 0.5, "bm25": 0.5}
    assert score_blend(hits, weights)[0][0] == "b"
    rrf = reciprocal_rank_fusion({k: [cid for cid, _ in v] for k, v in hits.items()}, weights)
    assert rrf[0][1] == rrf[1][1]  # a and b tie by ranks alone


def test_blend_with_one_candidate_gives_it_full_score():
    assert score_blend({"bm25": [("a", 4.2)], "vector": []}, {"vector": 0.6, "bm25": 0.4}) == [("a", 1.0, {"bm25": 1})]


def test_rrf_weights_shift_the_order():
    rankings = {"vector": ["a", "b"], "bm25": ["b", "a"]}
    assert reciprocal_rank_fusion(rankings, {"vector": 2.0, "bm25": 1.0})[0][0] == "a"
    assert reciprocal_rank_fusion(rankings, {"vector": 1.0, "bm25": 2.0})[0][0] == "b"


def test_a_chunk_inside_a_matching_section_beats_an_isolated_match():
    fused = [("lone", 0.80, {}), ("mid", 0.78, {}), ("before", 0.50, {}), ("after", 0.40, {})]
    positions = {"lone": ("a.md", 9), "before": ("b.md", 1), "mid": ("b.md", 2), "after": ("b.md", 3)}
    ranked = add_neighbour_context(fused, positions, 0.2)
    assert ranked[0][0] == "mid"
    assert ranked[0][1] == pytest.approx(0.78 + 0.2 * (0.50 + 0.40) / 2)
    assert dict((cid, s) for cid, s, _ in ranked)["lone"] == 0.80


# ------------------------------------------------------------------ context shaping


def test_per_file_cap_makes_room_for_other_files():
    candidates = [passage("long.pdf", i, 1.0 - i / 10) for i in range(5)] + [passage("short.md", 0, 0.1)]
    chosen = cap_per_file(candidates, k=4, cap=3)
    assert [p.source for p in chosen] == ["long.pdf"] * 3 + ["short.md"]


def test_per_file_cap_uses_further_chunks_when_one_file_matches():
    candidates = [passage("only.pdf", i, 1.0 - i / 10) for i in range(5)]
    assert len(cap_per_file(candidates, k=5, cap=3)) == 5


def test_adjacent_chunks_merge_into_one_passage_without_repeating_the_overlap():
    first = passage("a.md", 3, 0.9, "The shot runs for twenty-five seconds at nine bar.")
    second = passage("a.md", 4, 0.5, "at nine bar. Then stop the pump.")
    other = passage("b.md", 4, 0.7, "Descale monthly.")
    merged = merge_neighbours([first, other, second])
    assert [p.source for p in merged] == ["a.md", "b.md"]
    assert merged[0].text == "The shot runs for twenty-five seconds at nine bar. Then stop the pump."
    assert merged[0].score == 0.9


def test_merged_passage_cites_the_page_of_its_best_chunk():
    best = Passage([Chunk(id="b", text="Run make run.", source="guide.pdf", title="guide", chunk_index=4, page=2)], 0.9)
    before = Passage([Chunk(id="a", text="Install first.", source="guide.pdf", title="guide", chunk_index=3, page=1)], 0.5)
    merged = merge_neighbours([best, before])
    assert len(merged) == 1
    assert merged[0].pages == [1, 2] and merged[0].page == 2 and merged[0].location == "pages 1-2"


def test_far_apart_chunks_of_a_file_stay_separate():
    merged = merge_neighbours([passage("a.md", 1, 0.9), passage("a.md", 7, 0.8)])
    assert len(merged) == 2


# ------------------------------------------------------------------ the real stores




@pytest.fixture(scope="module")
def scifact_rag(tmp_path_factory, embedder):
    """Twelve real SciFact abstracts, as .txt and .md files, indexed once for the module."""
    root = tmp_path_factory.mktemp("scifact")
    docs_dir = root / "documents"
    docs_dir.mkdir()
    with open(require(SCIFACT) / "corpus.jsonl", encoding="utf-8") as fh:
        docs = [json.loads(line) for _, line in zip(range(12), fh, strict=False)]
    for i, d in enumerate(docs):
        ext = "md" if i % 2 else "txt"
        (docs_dir / f"{d['_id']}.{ext}").write_text(f"{d['title']}\n\n{d['text']}", encoding="utf-8")
    rag = rag_with(module_settings(root), embedder)
    rag.index()
    rag.docs = docs  # type: ignore[attr-defined]
    yield rag
    rag.close()


@pytest.mark.parametrize("mode", ["hybrid", "vector", "bm25"])
def test_an_abstract_is_found_by_its_own_title(scifact_rag, mode):
    doc = scifact_rag.docs[3]
    passages = scifact_rag.retriever.retrieve(doc["title"], k=3, mode=mode)
    assert passages[0].source.startswith(doc["_id"] + ".")
    assert mode == "hybrid" or set(passages[0].found_by) == {mode}


def test_sources_carry_the_fused_score_and_who_found_them(scifact_rag):
    passages = scifact_rag.retriever.retrieve(scifact_rag.docs[5]["title"], k=5)
    assert passages[0].found_by == {"vector": 1, "bm25": 1}
    assert passages[0].score >= 1.0  # best in both lists, plus any neighbour context
    assert all(p.score <= passages[0].score for p in passages)


@pytest.mark.parametrize("mode", ["hybrid", "vector", "bm25"])
def test_where_filters_by_file_in_every_mode(scifact_rag, mode):
    docs = scifact_rag.docs
    wanted = f"{docs[0]['_id']}.txt"
    question = f"{docs[1]['title']} {docs[0]['title']}"
    assert {p.source for p in scifact_rag.retriever.retrieve(question, k=5, mode=mode)} != {wanted}
    passages = scifact_rag.retriever.retrieve(question, k=5, where={"source": wanted}, mode=mode)
    assert passages and {p.source for p in passages} == {wanted}


@pytest.mark.parametrize("mode", ["hybrid", "vector", "bm25"])
def test_where_filters_by_file_type_in_every_mode(scifact_rag, mode):
    passages = scifact_rag.retriever.retrieve(scifact_rag.docs[2]["title"], k=5, where={"ext": "md"}, mode=mode)
    assert passages and all(p.source.endswith(".md") for p in passages)


def test_where_with_several_files_keeps_only_those(scifact_rag):
    files = [f"{scifact_rag.docs[0]['_id']}.txt", f"{scifact_rag.docs[1]['_id']}.md"]
    passages = scifact_rag.retriever.retrieve("cells", k=5, where={"source": files})
    assert passages and {p.source for p in passages} <= set(files)


def test_keyword_index_follows_chroma_through_add_change_and_delete(open_rag):
    rag = open_rag(chunk_size=300, chunk_overlap=50)
    folder = rag.settings.docs_dir
    (folder / "grinder.md").write_text("# Grinder\n\nThe burr grinder needs cleaning weekly.\n", encoding="utf-8")
    (folder / "kettle.txt").write_text("Boil the kettle with filtered water.\n", encoding="utf-8")
    rag.index()
    assert_in_step(rag)
    assert sources(rag, "burr", "bm25") == ["grinder.md"]

    (folder / "grinder.md").write_text("# Grinder\n\nThe conical grinder needs oiling yearly.\n", encoding="utf-8")
    rag.index()
    assert_in_step(rag)
    assert sources(rag, "burr", "bm25") == []
    assert sources(rag, "conical oiling", "bm25") == ["grinder.md"]

    (folder / "kettle.txt").unlink()
    rag.index()
    assert_in_step(rag)
    assert "kettle.txt" not in sources(rag, "kettle filtered water", "vector")
    assert sources(rag, "kettle filtered water", "bm25") == []


def test_tokens_from_an_older_tokenizer_are_rebuilt_on_open(tmp_path):
    index = KeywordIndex(tmp_path)
    index.add_chunks([chunk("a.md", 0, "Grind the beans finely.", heading_path=["Espresso"])])
    index.db.close()
    db = sqlite3.connect(tmp_path / "chunks.sqlite")
    db.execute("UPDATE chunks SET tokens = 'stale'")
    db.execute("UPDATE state SET value = '1' WHERE key = 'tokenizer'")
    db.commit()
    db.close()

    reopened = KeywordIndex(tmp_path)
    assert [cid for cid, _ in reopened.search("espresso beans", 5)] == ["a.md:0"]
    row = reopened.db.execute("SELECT value FROM state WHERE key = 'tokenizer'").fetchone()
    assert int(row[0]) == TOKENIZER_VERSION


# ------------------------------------------------------------------ helpers


def chunk(source: str, index: int, text: str, heading_path: list[str] | None = None) -> Chunk:
    return Chunk(id=f"{source}:{index}", text=text, source=source, title=Path(source).stem, chunk_index=index, heading_path=heading_path or [])


def passage(source: str, index: int, score: float, text: str = "text") -> Passage:
    return Passage([chunk(source, index, text)], score, {"vector": index + 1})


def sources(rag: RAGSystem, question: str, mode: str) -> list[str]:
    return sorted({p.source for p in rag.retriever.retrieve(question, k=5, mode=mode)})


def assert_in_step(rag: RAGSystem) -> None:
    assert rag.keywords.count() == rag.vectors.collection.count() == rag.indexer.manifest.chunk_count()
    assert rag.keywords.ids_by_source() == rag.vectors.ids_by_source()
