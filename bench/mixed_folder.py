"""Retrieval in one mixed folder: the shipped documents, the Think Python PDF and SciFact abstracts.

    .venv/bin/python bench/mixed_folder.py [--out /tmp/mixed-folder] [--abstracts 300] [--alone] [--json]

Every other retrieval number is measured on a folder holding one corpus; a person's folder
holds unrelated documents side by side. This builds one such folder (copies, never links:
the indexer refuses symlinks), indexes it once through `throwaway_index.ThrowawayIndex` (corpus
embeddings come from `DB_DIR/eval-cache`), and scores three question sets on it, each
overall and per gold file (hit@1, hit@5, MRR):

- `shipped`: bench/shipped_dev.jsonl, users' questions about the shipped documents;
- `thinkpython`: ../shared/eval/thinkpython/dev.jsonl (its questions name pages of thinkpython2.pdf);
- `scifact`: the train claims whose judged abstracts are in the folder; a hit is a judged abstract.

The abstracts are a fixed selection: the judged ones of the first `--scifact-queries`
train claims, then the corpus in file order up to `--abstracts`. `--alone` also scores
the shipped and Think Python sets on a folder of their own documents only, for the
side-by-side table in docs/retrieval-results.md. `--junk` also scores the mixed folder with
junk files beside the documents (a 5 MB line of one character, a base64 blob, a log of hex
digests, a log repeating one line): the figures must not move when they are added.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EVAL = ROOT.parent / "shared" / "eval"
THINKPYTHON_PDF = EVAL / "thinkpython" / "thinkpython2.pdf"
THINKPYTHON_QA = EVAL / "thinkpython" / "dev.jsonl"
SHIPPED_QA = ROOT / "bench" / "shipped_dev.jsonl"
SHIPPED_DOCS = ROOT / "documents"


def scifact_selection(n_abstracts: int, n_queries: int) -> tuple[dict[str, dict[str, str]], list[dict[str, Any]]]:
    """The abstracts to place in the folder, and the claims whose judged abstracts are all among them, as QA items."""
    from evaluation import load_beir

    corpus, queries, qrels = load_beir(EVAL / "scifact", "train")
    judged = [q for q in queries if q in qrels][:n_queries]
    keep = list(dict.fromkeys(d for q in judged for d in qrels[q] if d in corpus))
    keep += [d for d in corpus if d not in set(keep)][: max(0, n_abstracts - len(keep))]
    chosen = {d: corpus[d] for d in keep}
    items = [
        {"id": q, "question": queries[q], "places": [{"source": f"scifact/{d}.txt"} for d in qrels[q]]}
        for q in judged
        if all(d in chosen for d in qrels[q])
    ]
    return chosen, items


def build_folder(out: Path, parts: set[str], n_abstracts: int, n_queries: int) -> list[dict[str, Any]]:
    """Fill `out` afresh with the named parts ("shipped", "thinkpython", "scifact"); returns the SciFact QA items."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    if "shipped" in parts:
        for path in sorted(SHIPPED_DOCS.iterdir()):
            if path.is_file():
                shutil.copy(path, out / path.name)
    if "thinkpython" in parts:
        shutil.copy(THINKPYTHON_PDF, out / THINKPYTHON_PDF.name)
    if "junk" in parts:
        write_junk(out / "junk")
    items: list[dict[str, Any]] = []
    if "scifact" in parts:
        abstracts, items = scifact_selection(n_abstracts, n_queries)
        folder = out / "scifact"
        folder.mkdir()
        for doc_id, d in abstracts.items():
            text = f"{d['title']}\n\n{d['text']}".strip() if d["title"] else d["text"]
            (folder / f"{doc_id}.txt").write_text(text + "\n", encoding="utf-8")
    return items


def write_junk(folder: Path) -> None:
    """The files a real folder holds beside its documents that no question is about."""
    import base64
    import random

    rng = random.Random(20)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "long-line.md").write_text("x" * 5_000_000)
    (folder / "blob.txt").write_text(base64.b64encode(rng.randbytes(300_000)).decode())
    (folder / "digests.log").write_text("\n".join(rng.randbytes(32).hex() for _ in range(5000)))
    (folder / "service.log").write_text("WARN retrying the connection to the backup server\n" * 20000)


def score_folder(settings: Any, folder: Path, sets: dict[str, tuple[list[dict[str, Any]], str | None]], k: int) -> dict[str, Any]:
    """Index `folder` once into a throwaway index and score each question set on it."""
    from evaluation import score_retrieval
    from throwaway_index import ThrowawayIndex

    with ThrowawayIndex(settings, folder) as index:
        started = time.perf_counter()
        report = index.rag.index()
        out: dict[str, Any] = {
            "files": len(index.rag.indexer.manifest.files),
            "chunks": index.rag.keywords.count(),
            "failed": sorted(report.failed),
            "index_s": round(time.perf_counter() - started, 1),
            "embeddings_reused": index.cache.reused,
        }
        for name, (items, source_file) in sets.items():
            out[name] = score_retrieval(index.rag, items, k, source_file=source_file, qa_name=name)
    return out


def print_set(title: str, result: dict[str, Any], k: int) -> None:
    print(f"  {title}: hit@1 {result['hit@1']:.3f}  hit@{k} {result[f'hit@{k}']:.3f}  MRR {result['mrr']:.3f}"
          f"  ({result['answerable']} questions; misses: {', '.join(map(str, result['misses'])) or 'none'})")
    if len(result["by_source"]) <= 6:
        for source, scores in result["by_source"].items():
            print(f"      {source}: hit@1 {scores['hit@1']:.3f}  hit@{k} {scores[f'hit@{k}']:.3f}  MRR {scores['mrr']:.3f}  ({scores['questions']})")


def main(argv: list[str] | None = None) -> int:
    from config import load_settings
    from evaluation import load_qa

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/mixed-folder"), help="folder to build (emptied first)")
    parser.add_argument("--abstracts", type=int, default=300, help="SciFact abstracts in the folder")
    parser.add_argument("--scifact-queries", type=int, default=40, help="train claims whose judged abstracts are placed")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--alone", action="store_true", help="also score the shipped and Think Python sets on their own folders")
    parser.add_argument("--json", action="store_true", help="end with one JSON line of every result")
    parser.add_argument("--junk", action="store_true", help="also score the mixed folder with junk files added")
    args = parser.parse_args(argv)

    settings = load_settings()
    shipped, thinkpython = load_qa(SHIPPED_QA), load_qa(THINKPYTHON_QA)
    results: dict[str, Any] = {}
    scifact_items = build_folder(args.out, {"shipped", "thinkpython", "scifact"}, args.abstracts, args.scifact_queries)
    sets = {"shipped": (shipped, None), "thinkpython": (thinkpython, THINKPYTHON_PDF.name), "scifact": (scifact_items, None)}
    results["mixed"] = score_folder(settings, args.out, sets, args.k)
    if args.junk:
        build_folder(args.out, {"shipped", "thinkpython", "scifact", "junk"}, args.abstracts, args.scifact_queries)
        results["mixed_with_junk"] = score_folder(settings, args.out, sets, args.k)
    if args.alone:
        for name, items, source_file in (("shipped", shipped, None), ("thinkpython", thinkpython, THINKPYTHON_PDF.name)):
            build_folder(args.out, {name}, 0, 0)
            results[f"{name}_alone"] = score_folder(settings, args.out, {name: (items, source_file)}, args.k)
    for folder, result in results.items():
        print(f"{folder}: {result['files']} files, {result['chunks']} chunks, indexed in {result['index_s']} s"
              f" ({result['embeddings_reused']} embeddings reused){'; failed: ' + ', '.join(result['failed']) if result['failed'] else ''}")
        for name in ("shipped", "thinkpython", "scifact"):
            if name in result:
                print_set(name, result[name], args.k)
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
