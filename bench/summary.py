"""Summary benchmark: how long "Summarize FILE" makes a user wait, for a document of about 20 pages.

    .venv/bin/python bench/summary.py [--pdf PATH] [--pages 21-40] [--model NAME]

A slice of a PDF (by default pages 21-40 of ../shared/eval/thinkpython/thinkpython2.pdf, chapters
2 and 3 of Think Python) is written into a folder of its own and indexed into a throwaway data folder;
the embedded model is then loaded, timed apart (a server loads it at start). The summary is
streamed through `RAGSystem.stream_answer`, as the CLI and the web UI stream it, and three waits
are timed:

- **outline**: the first text on screen, the outline drawn from the headings and key sentences
  with no model;
- **first token**: the model's first token of the summary paragraph (`first_token_s`);
- **whole**: the summary done, its sentences judged.

Prints the times, the answer, and one JSON line. llama.cpp slows down several times when other
work shares the cores: the load average is recorded, and LLAMACPP_THREADS is read as usual.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.answer import answering_system  # noqa: E402

BOOK = ROOT.parent / "shared" / "eval" / "thinkpython" / "thinkpython2.pdf"


def pdf_slice(pdf: Path, first: int, last: int, folder: Path) -> Path:
    """Pages first..last (1-based, as a viewer counts them) of `pdf` as a PDF of their own in `folder`."""
    import pymupdf

    folder.mkdir(parents=True)
    target = folder / f"{pdf.stem}-pages-{first}-{last}.pdf"
    with pymupdf.open(pdf) as book, pymupdf.open() as part:
        part.insert_pdf(book, from_page=first - 1, to_page=last - 1)
        part.save(target)
    return target


def main(argv: list[str] | None = None) -> int:
    from config import load_settings
    from gguf_models import MODELS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdf", type=Path, default=BOOK, help="the PDF to slice (default: Think Python)")
    parser.add_argument("--pages", default="21-40", help="first-last page, 1-based (default 21-40)")
    default_model = load_settings(environ={}).llamacpp_model
    parser.add_argument("--model", default=default_model, choices=sorted(MODELS), help=f"embedded model (default {default_model})")
    args = parser.parse_args(argv)
    first, last = (int(p) for p in args.pages.split("-"))

    load_before = os.getloadavg()[0]
    scratch = Path(tempfile.mkdtemp(prefix="docqa-bench-summary-"))
    try:
        document = pdf_slice(args.pdf, first, last, scratch / "docs")
        settings = load_settings(overrides={"docs_dir": document.parent, "llm_backend": "llamacpp", "llamacpp_model": args.model})
        with answering_system(settings, document.parent) as (rag, index_s, load_s):
            model_name = rag.llm.name
            chunks = len(rag.keywords.chunks_of_source(document.name))
            started, outline_s = time.perf_counter(), None
            for answer in rag.stream_answer(f"Summarize {document.name}"):
                if outline_s is None and answer.text:
                    outline_s = time.perf_counter() - started
            whole_s = time.perf_counter() - started
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    load_after = os.getloadavg()[0]

    first_token = answer.timings.first_token_s
    print(answer.text)
    if answer.notice:
        print(f"\nNote: {answer.notice}")
    print(f"\n{model_name}, {last - first + 1} pages, {chunks} chunks, {len(answer.passages)} parts: outline {outline_s:.2f} s, "
          f"first token {first_token if first_token is None else round(first_token, 2)} s, whole {whole_s:.2f} s "
          f"(model load {load_s:.1f} s, index {index_s:.1f} s apart); threads {settings.llamacpp_threads or 'auto'}, "
          f"load average {load_before:.1f} -> {load_after:.1f} on {os.cpu_count()} cores")
    print(json.dumps({
        "bench": "summary", "pdf": str(args.pdf), "pages": args.pages, "model": args.model, "chunks": chunks,
        "parts": len(answer.passages), "outline_s": round(outline_s or whole_s, 3),
        "first_token_s": round(first_token, 3) if first_token is not None else None, "whole_s": round(whole_s, 3),
        "model_load_s": round(load_s, 2), "index_s": round(index_s, 2), "error": answer.error, "notice": answer.notice,
        "load_average": [round(load_before, 2), round(load_after, 2)], "cpus": os.cpu_count(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
