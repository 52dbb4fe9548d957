"""Behaviour of the evaluation command on real SciFact data, through the real answering path."""

from __future__ import annotations

import argparse
import json

import pytest

from conftest import SCIFACT, require
from evaluation import beir_slice, evaluate_beir_modes, load_beir, run_eval_command

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
