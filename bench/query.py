"""Query benchmark: retrieval latency as the collection grows, and time to first token.

    .venv/bin/python bench/query.py [--sizes 5000,50000,200000] [--queries 50]

Beyond the real corpora the chunks are synthetic: text drawn from SciFact's vocabulary
for BM25, random unit vectors for Chroma. Each query is a real SciFact claim, embedded
with the real model, so the latency is what a user sees: embed + both searches + fusion.
Prints a table, then one JSON line.

A trusted internal tool: it fills the stores with synthetic chunks and times the ranking
through their public methods (`vectors.add_chunks`, `retriever.rank`), which no front end may do.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EVAL = ROOT.parent / "shared" / "eval"


def scifact_words_and_queries(n_queries: int) -> tuple[list[str], list[str]]:
    words: list[str] = []
    with open(EVAL / "scifact" / "corpus.jsonl", encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            if n >= 2000:
                break
            words.extend(json.loads(line)["text"].split())
    with open(EVAL / "scifact" / "queries.jsonl", encoding="utf-8") as fh:
        queries = [json.loads(line)["text"] for line in fh][:n_queries]
    return words, queries


def fill(rag, size: int, words: list[str], rng: random.Random, dim: int) -> float:
    from doc_types import Chunk

    started = time.perf_counter()
    have = rag.keywords.count()
    batch = 5000
    nprng = np.random.default_rng(rng.randint(0, 2**31))
    for start in range(have, size, batch):
        n = min(batch, size - start)
        chunks = []
        for i in range(start, start + n):
            text = " ".join(rng.choices(words, k=150))
            chunks.append(Chunk(id=f"syn{i:08d}", text=text, source=f"synthetic/{i // 50:05d}.txt", title="synthetic", chunk_index=i % 50, start_line=1, end_line=10))
        vectors = nprng.standard_normal((n, dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rag.vectors.add_chunks(chunks, vectors.tolist())
        rag.keywords.add_chunks(chunks)
    return time.perf_counter() - started


def latencies(rag, queries: list[str], mode: str) -> list[float]:
    out = []
    for q in queries:
        rag.embedder.clear_query_cache()  # measure the embedding too
        t = time.perf_counter()
        rag.retriever.rank(q, mode=mode)
        out.append((time.perf_counter() - t) * 1000)
    return out


def time_to_first_token(rag) -> float:
    from answer_prompt import build_messages
    from llm_handler import LlamaCppBackend

    llm = LlamaCppBackend(rag.settings)
    llm.complete([{"role": "user", "content": "hi"}], max_tokens=1)  # load the model first
    passages = [(p.label, p.text) for p in rag.retrieve_context("What is a synthetic chunk?", k=5)]
    started = time.perf_counter()
    for _ in llm.stream(build_messages("What is a synthetic chunk?", passages), max_tokens=8):
        return time.perf_counter() - started
    return float("nan")


def main() -> int:
    from config import load_settings
    from rag_system import RAGSystem

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,50000,200000")
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    words, queries = scifact_words_and_queries(args.queries)
    rng = random.Random(7)
    work = Path(tempfile.mkdtemp(prefix="docqa-bench-query-"))
    rows = []
    try:
        settings = load_settings(overrides={"docs_dir": work / "docs", "db_dir": work / "db", "llm_backend": "llamacpp"})
        rag = RAGSystem(settings)
        for query in queries[:3]:  # warm up the model and the indexes
            rag.retriever.rank(query)
        for size in sizes:
            fill_s = fill(rag, size, words, rng, rag.embedder.dimension)
            rag.retriever.rank(queries[0], mode="bm25")  # rebuild BM25 outside the timing
            row = {"chunks": size, "fill_s": round(fill_s, 1)}
            for mode in ("hybrid", "vector", "bm25"):
                ms = latencies(rag, queries, mode)
                row[f"{mode}_p50_ms"] = round(float(np.percentile(ms, 50)), 1)
                row[f"{mode}_p95_ms"] = round(float(np.percentile(ms, 95)), 1)
            rows.append(row)
            print(f"{size} chunks: hybrid p50 {row['hybrid_p50_ms']} ms", file=sys.stderr)
        ttft = time_to_first_token(rag)
        rag.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'chunks':>8}{'hybrid p50':>12}{'hybrid p95':>12}{'vector p50':>12}{'vector p95':>12}{'bm25 p50':>10}{'bm25 p95':>10}")
    for r in rows:
        print(f"{r['chunks']:>8}{r['hybrid_p50_ms']:>12}{r['hybrid_p95_ms']:>12}{r['vector_p50_ms']:>12}{r['vector_p95_ms']:>12}{r['bm25_p50_ms']:>10}{r['bm25_p95_ms']:>10}")
    print(f"time to first token (embedded SmolLM2, 5 passages): {ttft:.2f} s")
    print(json.dumps({"bench": "query", "rows": rows, "ttft_s": round(ttft, 3), "queries": len(queries)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
