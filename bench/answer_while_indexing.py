"""The first token of a question asked while the folder indexes, against the same question asked quietly.

    .venv/bin/python bench/answer_while_indexing.py [--files 600] [--limit 5] [--model NAME]

Issue 44's target: a question asked while 600 new files are being indexed gets its first
token within 1.5x of the same question asked on a quiet machine. Answers go first
(index_status.AnswersFirst): indexing waits between files and embedding slices while an
answer runs, so what is left is the file in hand.

The shipped documents are indexed into a throwaway data folder and the model loaded; the
questions (bench/shipped_dev.jsonl) are asked once quietly; then `--files` new Markdown files
(each a few kilobytes of real prose: slices of docqa's own docs) land in the folder, a sync
starts in a thread, and the same questions are asked while it runs (in the same order, so no
question follows itself and reuses llama.cpp's cached prompt). A question only counts when the
sync was still running when it ended. Prints both medians, their ratio, the chunks embedded
while those answers ran, and one JSON line. Run it on a quiet machine: the point is the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.answer import SHIPPED_QUESTIONS, time_answer  # noqa: E402
from config import load_settings  # noqa: E402
from evaluation import load_qa  # noqa: E402
from rag_system import RAGSystem  # noqa: E402

SENTENCES_PER_FILE = 24


def prose() -> list[str]:
    """Real sentences to fill the new files with: docqa's own documentation."""
    text = " ".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", text)) if len(s.split()) >= 6]
    if len(sentences) < SENTENCES_PER_FILE:
        raise SystemExit("docs/ holds too little prose to make the new files from")
    return sentences


def write_files(folder: Path, count: int, sentences: list[str]) -> None:
    """`count` Markdown files, each a different run of sentences under its own heading."""
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        start = (n * 37) % (len(sentences) - SENTENCES_PER_FILE)
        body = " ".join(sentences[start:start + SENTENCES_PER_FILE])
        (folder / f"note-{n:04d}.md").write_text(f"# Note {n}\n\n{body}\n", encoding="utf-8")


def ask_all(rag: RAGSystem, questions: list[str], busy: threading.Event | None = None) -> list[dict[str, Any]]:
    rows = []
    for question in questions:
        before = rag.index_status().chunks_done
        row = time_answer(rag, question, None)
        row["question"] = question
        row["while_indexing"] = busy.is_set() if busy is not None else False
        row["chunks_embedded_meanwhile"] = rag.index_status().chunks_done - before if busy is not None else 0
        rows.append(row)
        print(f"  {'indexing' if row['while_indexing'] else 'quiet   '} first token {row['first_token_s']} s, "
              f"answer {row['answer_s']:.1f} s: {question[:60]}", file=sys.stderr)
    return rows


def median_first_token(rows: list[dict[str, Any]]) -> float | None:
    values = [r["first_token_s"] for r in rows if r["first_token_s"] is not None]
    return round(statistics.median(values), 2) if values else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=600, help="new files that land in the folder (default 600)")
    parser.add_argument("--limit", type=int, default=5, help="questions asked each way (default 5)")
    parser.add_argument("--model", help="embedded model by its short name (default: LLAMACPP_MODEL's)")
    args = parser.parse_args(argv)
    if args.limit < 2:  # one question asked twice in a row would reuse llama.cpp's cached prompt
        parser.error("--limit must be at least 2")

    questions = [item["question"] for item in load_qa(SHIPPED_QUESTIONS)[: args.limit]]
    scratch = Path(tempfile.mkdtemp(prefix="docqa-bench-busy-"))
    overrides: dict[str, Any] = {"docs_dir": scratch / "docs", "db_dir": scratch / "data", "llm_backend": "llamacpp"}
    if args.model:
        overrides["llamacpp_model"] = args.model
    shutil.copytree(ROOT / "documents", scratch / "docs")
    rag = RAGSystem(load_settings(overrides=overrides))
    try:
        rag.index()
        rag.warm_up()
        rag.retrieve_context("warm-up")
        print("Quiet:", file=sys.stderr)
        quiet = ask_all(rag, questions)
        write_files(scratch / "docs" / "notes", args.files, prose())
        busy = threading.Event()

        def sync() -> None:
            busy.set()
            try:
                rag.index()
            finally:
                busy.clear()

        worker = threading.Thread(target=sync, daemon=True)
        t = time.perf_counter()
        worker.start()
        while rag.index_status().stage != "indexing" and worker.is_alive():
            time.sleep(0.2)
        print(f"While {args.files} files index (converting began after {time.perf_counter() - t:.1f} s):", file=sys.stderr)
        loaded = ask_all(rag, questions, busy)
        worker.join()
        sync_s = time.perf_counter() - t
    finally:
        rag.close()
        shutil.rmtree(scratch, ignore_errors=True)

    counted = [r for r in loaded if r["while_indexing"]]
    meanwhile = sum(r["chunks_embedded_meanwhile"] for r in counted)
    quiet_p50, busy_p50 = median_first_token(quiet), median_first_token(counted)
    ratio = round(busy_p50 / quiet_p50, 2) if quiet_p50 and busy_p50 else None
    print(f"first token p50: quiet {quiet_p50} s, while indexing {busy_p50} s ({len(counted)} of {len(loaded)} asked "
          f"while the sync ran): {ratio}x (target <= 1.5x); the sync took {sync_s:.0f} s, "
          f"{meanwhile} chunks embedded while those answers ran; {os.cpu_count()} cores")
    print(json.dumps({
        "bench": "answer_while_indexing", "files": args.files, "quiet_first_token_p50_s": quiet_p50,
        "indexing_first_token_p50_s": busy_p50, "ratio": ratio, "counted": len(counted), "sync_s": round(sync_s, 1),
        "chunks_embedded_during_answers": meanwhile, "quiet": quiet, "indexing": loaded,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
