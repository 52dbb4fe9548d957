"""Behaviour of the evaluation command on real SciFact data, through the real answering path."""

from __future__ import annotations

import argparse
import json

import pytest

from conftest import SCIFACT, require
from evaluation import beir_slice, evaluate_beir_modes, evaluate_qa, load_beir, run_eval_command

JSON_KEYS = {"ndcg@10", "recall@10", "recall@100", "mrr@10", "queries", "docs", "index_s", "query_ms_p50", "query_ms_p95"}


def test_beir_folder_loads_with_its_header_line():
    corpus, queries, qrels = load_beir(require(SCIFACT), "train")
    assert len(corpus) == 5183
    assert all(q in queries for q in qrels)
    assert all(score > 0 for judged in qrels.values() for score in judged.values())


def test_slice_keeps_the_judged_documents_and_fills_to_ten_per_query():
    corpus, queries, qrels = load_beir(require(SCIFACT), "train")
    judged = [q for q in queries if q in qrels]
    sliced, kept = beir_slice(corpus, judged, qrels, 30)
    assert len(kept) == 30 and len(sliced) == 300
    assert {d for q in kept for d in qrels[q] if d in corpus} <= set(sliced)


@pytest.mark.slow
def test_scifact_slice_scores_sanely_in_every_mode(make_settings, embedder):
    settings = make_settings(chunk_size=2000, chunk_overlap=200)  # about half the chunks to embed: a faster test
    results = {r["mode"]: r for r in evaluate_beir_modes(settings, require(SCIFACT), ["hybrid", "vector", "bm25"], limit=30, embedder=embedder)}
    for result in results.values():
        assert result["docs"] == 300 and result["queries"] == 30
        assert result["ndcg@10"] > 0.4
        assert result["recall@100"] >= result["recall@10"] > 0.5
    assert results["hybrid"]["ndcg@10"] >= min(results["vector"]["ndcg@10"], results["bm25"]["ndcg@10"])


def test_eval_json_has_the_documented_keys(make_settings, embedder, capsys):
    args = argparse.Namespace(beir=str(require(SCIFACT)), qa=None, docs=None, split="train", mode="bm25", limit=3, k=5, answers=False, json=True)
    assert run_eval_command(make_settings(), args, embedder) == 0
    result = json.loads(capsys.readouterr().out)
    assert JSON_KEYS <= set(result)
    assert result["queries"] == 3


# ------------------------------------------------------------------ QA sets on a folder of several files


def write_qa(path, items) -> str:
    path.write_text("".join(json.dumps(it) + "\n" for it in items), encoding="utf-8")
    return str(path)


@pytest.fixture
def several_files(make_settings):
    """Three small documents of unrelated topics, each question naming the file and lines it is about."""
    settings = make_settings(chunk_size=200, chunk_overlap=20)
    docs = settings.docs_dir
    (docs / "espresso.md").write_text(
        "# Espresso\n\nGrind the beans finely and tamp them firmly.\n\n## Milk\n\nSteam the milk to 65 degrees for a flat white.\n",
        encoding="utf-8",
    )
    (docs / "bikes.txt").write_text("Inflate road bike tyres to about 6 bar.\nOil the chain every 300 kilometres.\n", encoding="utf-8")
    (docs / "garden").mkdir()
    (docs / "garden" / "tomatoes.txt").write_text("Water tomato plants at the base, never on the leaves.\n", encoding="utf-8")
    return settings


def test_qa_hits_are_scored_per_source_file_and_overall(several_files, embedder, tmp_path, capsys):
    qa = write_qa(tmp_path / "qa.jsonl", [
        {"id": "milk", "question": "How hot should the milk be for a flat white?", "source": "espresso.md", "lines": [7, 7]},
        {"id": "wrong-lines", "question": "How hot should the milk be for a flat white?", "source": "espresso.md", "lines": [40, 60]},
        {"id": "chain", "question": "How often do I oil the bike chain?", "file": "bikes.txt"},
        {"id": "water", "question": "How do I water tomatoes?", "places": [{"source": "bikes.txt"}, {"source": "garden/tomatoes.txt"}]},
        {"id": "none", "question": "What is the capital of Peru?", "pages": [], "must_contain": [], "kind": "unanswerable"},
    ])
    args = argparse.Namespace(beir=None, qa=qa, docs=str(several_files.docs_dir), source_file=None, split="train", mode=None,
                              limit=None, k=5, answers=False, json=True)
    assert run_eval_command(several_files, args, embedder) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["answerable"] == 4 and result["items"] == 5
    assert result["misses"] == ["wrong-lines"]  # the right file at the wrong lines is no hit
    assert result["by_source"]["espresso.md"] == {"questions": 2, "hit@1": 0.5, "hit@5": 0.5, "mrr": 0.5}
    assert result["by_source"]["bikes.txt"]["hit@1"] == 1.0
    assert result["by_source"]["bikes.txt"]["questions"] == 2  # a question counts towards its first place's file
    assert result["hit@5"] == 0.75 and result["page_hit@5"] == result["hit@5"]


def test_questions_naming_no_source_need_the_file_they_are_about(several_files, embedder, tmp_path):
    from errors import ConfigError

    qa = tmp_path / "qa.jsonl"
    write_qa(qa, [{"id": "tyres", "question": "What pressure for road bike tyres?", "pages": [], "lines": [1, 1]}])
    with pytest.raises(ConfigError, match="--source-file"):
        evaluate_qa(several_files, qa, several_files.docs_dir, embedder=embedder)
    result = evaluate_qa(several_files, qa, several_files.docs_dir, embedder=embedder, source_file="bikes.txt")
    assert result["by_source"] == {"bikes.txt": {"questions": 1, "hit@1": 1.0, "hit@5": 1.0, "mrr": 1.0}}


def test_must_contain_is_read_in_a_quote_as_rendered_not_across_its_line_marks():
    from evaluation import read_as_shown

    shown = "> Deleting this folder makes docqa forget it. Your documents are not\n> touched.\n> \\>>> x = 1\n>\n> — [1] faq.md"
    assert "not touched" in read_as_shown(shown)
    assert ">>> x = 1" in read_as_shown(shown)
    assert "not touched" not in shown
