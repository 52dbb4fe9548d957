"""Answer benchmark: what a user waits for, question by question, end to end.

    .venv/bin/python bench/answer.py [--docs PATH] [--questions FILE] [--model NAME] [--limit N] [--k K]

The documents (a folder, or one file such as ../shared/eval/thinkpython/thinkpython2.pdf,
copied into a folder of its own) are indexed once into a throwaway data folder; then the
embedded model is loaded and the retriever warmed once, timed apart (a server does both once,
`python main.py ask` on every run). Each question is then streamed through
`RAGSystem.stream_answer`, as the CLI and the web UI stream it, and three waits are timed:

- **visible**: the first text on screen, the verbatim quotes, shown before the model writes
  (when a question gets no quotes, the model's first text, or the whole answer when it
  comes at once: a refusal, the document list);
- **first token**: the model's first token (`Answer.timings["first_token_s"]`);
- **answer**: the whole answer, the checks of the model's text included.

Prints p50/p95 of each in a table, then one JSON line with every question's times. Models by
the short names of gguf_models.py; the machine's load average is recorded, since llama.cpp
slows down several times when other work shares the cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHIPPED_QUESTIONS = ROOT / "bench" / "shipped_dev.jsonl"


def documents_folder(path: Path, scratch: Path) -> Path:
    """A folder of documents: `path` itself, or a folder holding a copy of the one file (the indexer refuses links)."""
    if path.is_dir():
        return path
    if not path.is_file():
        raise SystemExit(f"--docs {path}: no such file or folder")
    folder = scratch / "docs"
    folder.mkdir(parents=True)
    shutil.copy(path, folder / path.name)
    return folder


@contextmanager
def answering_system(settings: Any, docs: Path, llm: Any = None) -> Iterator[tuple[Any, float, float]]:
    """(rag, index_s, load_s): `docs` indexed through the evaluation's embedding cache (a book embeds
    once, not every run), then answered by a RAGSystem of its own over the same data folder with the
    plain embedder (the cache would also serve the passage sentences each answer embeds, which a
    user's docqa embeds anew). The model is loaded once, timed apart; a given `llm` is not timed."""
    from rag_system import RAGSystem
    from throwaway_index import ThrowawayIndex

    with ThrowawayIndex(settings, docs) as index:
        t = time.perf_counter()
        report = index.rag.index()
        index_s = time.perf_counter() - t
        print(f"Indexed {docs}: {report.summary()} ({index_s:.1f} s)", file=sys.stderr)
        index.rag.close()
        rag = RAGSystem(index.settings, embedder=index.cache.embedder, llm=llm)
        try:
            t = time.perf_counter()
            if llm is None:
                rag.llm.complete([{"role": "user", "content": "hi"}], max_tokens=1)  # loads the model
            yield rag, index_s, time.perf_counter() - t
        finally:
            rag.close()  # before ThrowawayIndex.close() closes the first again (a no-op) and removes the folder


def time_answer(rag: Any, question: str, k: int | None) -> dict[str, Any]:
    """One question streamed as the CLI streams it: when the first text showed, the model's first token, the end."""
    started = time.perf_counter()
    visible = None
    answer = None
    for answer in rag.stream_answer(question, k=k):
        shows = (answer.quotes and not answer.refused) or (answer.set_aside is None and answer.text)
        if visible is None and shows and not answer.done:
            visible = time.perf_counter() - started
    total = time.perf_counter() - started
    assert answer is not None
    return {
        "visible_s": round(visible if visible is not None else total, 3),
        "first_token_s": round(answer.timings.first_token_s, 3) if answer.timings.first_token_s is not None else None,
        "answer_s": round(total, 3),
        "kind": answer.kind,
        "quoted": bool(answer.quotes),
        "set_aside": answer.set_aside is not None,
        "refused": answer.refused,
        "model": answer.model,
    }


def summary(rows: list[dict[str, Any]], key: str) -> dict[str, float | None]:
    from evaluation import percentile

    values = [r[key] for r in rows if r[key] is not None]
    if not values:
        return {"p50": None, "p95": None, "n": 0}
    return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2), "n": len(values)}


def main(argv: list[str] | None = None) -> int:
    from config import load_settings
    from evaluation import load_qa
    from gguf_models import MODELS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "documents", help="documents folder, or one file (default: the shipped documents)")
    parser.add_argument("--questions", type=Path, default=SHIPPED_QUESTIONS, help="JSONL, one {\"question\": ...} a line (default: bench/shipped_dev.jsonl)")
    default_model = load_settings(environ={}).llamacpp_model
    parser.add_argument("--model", default=default_model, choices=sorted(MODELS), help=f"embedded model (LLAMACPP_MODEL; default {default_model})")
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--k", type=int, help="passages per question (TOP_K)")
    args = parser.parse_args(argv)

    items = load_qa(args.questions)[: args.limit]
    load_before = os.getloadavg()[0]
    scratch = Path(tempfile.mkdtemp(prefix="docqa-bench-answer-"))
    try:
        docs = documents_folder(args.docs.resolve(), scratch)
        settings = load_settings(overrides={"docs_dir": docs, "llm_backend": "llamacpp", "llamacpp_model": args.model})
        with answering_system(settings, docs) as (rag, index_s, load_s):
            model_name = rag.llm.name
            t = time.perf_counter()
            rag.retrieve_context("warm-up")  # loads the query embedder and BM25, once per process
            warm_s = time.perf_counter() - t
            rows = []
            for n, item in enumerate(items, start=1):
                row = {"id": item.get("id", n), **time_answer(rag, item["question"], args.k)}
                rows.append(row)
                print(f"{n}/{len(items)} {row['id']}: visible {row['visible_s']:.2f} s, first token {row['first_token_s']} s, "
                      f"answer {row['answer_s']:.2f} s ({row['kind']}{', set aside' if row['set_aside'] else ''})", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    load_after = os.getloadavg()[0]

    stats = {key: summary(rows, f"{key}_s") for key in ("visible", "first_token", "answer")}
    print(f"{'model':<20}{'questions':>10}{'visible p50/p95':>18}{'first token p50/p95':>22}{'answer p50/p95':>18}")
    cells = [f"{stats[key]['p50']} / {stats[key]['p95']} s" for key in ("visible", "first_token", "answer")]
    print(f"{args.model:<20}{len(rows):>10}{cells[0]:>18}{cells[1]:>22}{cells[2]:>18}")
    print(f"{model_name}: model load (and one token) {load_s:.1f} s, retriever warm-up {warm_s:.1f} s, index {index_s:.1f} s; "
          f"load average {load_before:.1f} -> {load_after:.1f} on {os.cpu_count()} cores")
    print(json.dumps({
        "bench": "answer", "docs": str(args.docs), "questions": str(args.questions), "model": args.model,
        **{f"{key}_s": value for key, value in stats.items()},
        "model_load_s": round(load_s, 2), "warm_up_s": round(warm_s, 2), "index_s": round(index_s, 2),
        "load_average": [round(load_before, 2), round(load_after, 2)], "cpus": os.cpu_count(), "rows": rows,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
