"""Quote benchmark: do the quotes, and the compact context the model reads, hold the answer?

    .venv/bin/python bench/quotes.py [--docs PATH] [--questions FILE] [--db DIR] [--budget TOKENS] [--json]

No model writes anything here. For every answerable question (one with `must_contain`) the
documents are searched as `ask` searches them, the passages' sentences scored against the
question (answer_context.py), and two things checked:

- **quote holds answer**: every `must_contain` string is in the quotes shown before the model
  writes, which stand as the answer when the model's text is set aside;
- **context holds answer**: every string is in the compact passages the model is sent
  (`--budget`, CONTEXT_TOKEN_BUDGET by default): the model cannot answer from what it never reads.

Questions the relevance gate refuses count as misses in both. This is the fast loop for the
sentence scoring; `python main.py eval --qa FILE --answers` measures the whole answer path.
`--db` keeps the index between runs (default: a throwaway folder).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from answer import documents_folder  # noqa: E402  (bench/answer.py)

SHIPPED_QUESTIONS = ROOT / "bench" / "shipped_dev.jsonl"


def holds(text: str, wanted: list[str]) -> bool:
    from evaluation import read_as_shown  # a quote's lines read as one paragraph, as `eval` reads them

    lower = read_as_shown(text).lower()
    return all(w.lower() in lower for w in wanted)


def score_item(rag: Any, item: dict[str, Any], budget: int) -> dict[str, Any]:
    """One question: the gate's verdict, and whether the quotes and the compact context hold its answer."""
    import numpy as np

    from answer_context import compact_passages, select_quotes, sentence_scores
    from grounding import PassageSentences, assess_relevance

    question = item["question"]
    passages = rag.retrieve_context(question)
    texts = [p.text for p in passages]
    row: dict[str, Any] = {"id": item.get("id"), "quote": False, "context": False, "gated": True}
    if not texts:
        return row
    sentences = PassageSentences.embed(rag.embedder.for_checks, texts)
    vector = np.asarray(rag.embedder.for_checks.embed_query(question), dtype=np.float32)
    relevance = assess_relevance(vector, question, sentences, rag.settings, rag.retriever.rare_terms(question))
    row["gated"] = not (relevance.relevant or relevance.model_decides)
    if row["gated"]:
        return row
    scores = sentence_scores(sentences, vector, question, rag.keywords.idf)
    quotes = select_quotes(sentences, scores)
    row["quote"] = holds(" ".join(q.text for q in quotes), item["must_contain"])
    row["context"] = holds(" ".join(compact_passages(texts, sentences, scores, budget)), item["must_contain"])
    row["quote_chars"] = sum(len(q.text) for q in quotes)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "documents", help="documents folder, or one file (default: the shipped documents)")
    parser.add_argument("--questions", type=Path, default=SHIPPED_QUESTIONS, help="JSONL with must_contain (default: bench/shipped_dev.jsonl)")
    parser.add_argument("--db", type=Path, help="data folder to index into and keep (default: throwaway)")
    parser.add_argument("--budget", type=int, help="compact context tokens (default: CONTEXT_TOKEN_BUDGET)")
    parser.add_argument("--json", action="store_true", help="print one JSON line only")
    args = parser.parse_args(argv)

    from config import load_settings
    from rag_system import RAGSystem

    items = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    items = [it for it in items if it.get("must_contain")]
    with tempfile.TemporaryDirectory(prefix="docqa-quotes-") as scratch:
        docs = documents_folder(args.docs, Path(scratch))
        settings = load_settings(overrides={"docs_dir": docs, "db_dir": args.db or Path(scratch) / "data"})
        rag = RAGSystem(settings)
        try:
            rag.index()
            budget = args.budget or settings.context_token_budget
            rows = [score_item(rag, it, budget) for it in items]
        finally:
            rag.close()
    n = max(1, len(rows))
    summary = {
        "questions": len(rows),
        "quote_holds_answer": round(sum(r["quote"] for r in rows) / n, 3),
        "context_holds_answer": round(sum(r["context"] for r in rows) / n, 3),
        "refused_by_gate": sum(r["gated"] for r in rows),
        "quote_chars_mean": round(sum(r.get("quote_chars", 0) for r in rows) / n),
        "budget_tokens": budget,
    }
    if not args.json:
        print("| questions | quote holds answer | context holds answer | refused by the gate | quote chars (mean) |")
        print("| --- | --- | --- | --- | --- |")
        print(f"| {summary['questions']} | {summary['quote_holds_answer']} | {summary['context_holds_answer']} | "
              f"{summary['refused_by_gate']} | {summary['quote_chars_mean']} |")
        print("misses:", " ".join(str(r["id"]) for r in rows if not r["quote"]))
    print(json.dumps({**summary, "items": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
