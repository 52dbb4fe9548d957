"""Restart benchmark: start-up with 1,000 indexed files, unchanged and after touching one.

    .venv/bin/python bench/restart.py [--files 1000]

Times `python main.py index` as a whole process (imports included) three ways: the first
index, a restart with nothing changed, and a restart after one file changed. The sync
time inside the process is reported beside it. Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS = "alpha beta gamma delta river stone cloud engine market harbor violin garden orbit lattice".split()


def run_index(docs: Path, db: Path) -> tuple[float, dict]:
    env = {**os.environ, "LOG_LEVEL": "WARNING"}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "index", "--json", "--docs", str(docs), "--db", str(db)],
                          capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return wall, json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(3)
    work = Path(tempfile.mkdtemp(prefix="docqa-bench-restart-"))
    try:
        docs, db = work / "docs", work / "db"
        for i in range(args.files):
            sub = docs / f"folder-{i // 100:02d}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"note-{i:04d}.md").write_text(f"# Note {i}\n\n" + " ".join(rng.choices(WORDS, k=60)) + "\n", encoding="utf-8")
        first, r1 = run_index(docs, db)
        unchanged, r2 = run_index(docs, db)
        target = docs / "folder-00" / "note-0000.md"
        target.write_text(target.read_text() + "\nOne more line.\n", encoding="utf-8")
        touched, r3 = run_index(docs, db)
        import_only = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import chromadb, numpy, bm25s"], check=True)
        import_only = time.perf_counter() - import_only
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = [
        {"case": "first index", "wall_s": round(first, 2), "sync_s": round(r1["seconds"], 2), "embedded": r1["chunks_embedded"]},
        {"case": "restart, nothing changed", "wall_s": round(unchanged, 2), "sync_s": round(r2["seconds"], 2), "embedded": r2["chunks_embedded"]},
        {"case": "restart, one file changed", "wall_s": round(touched, 2), "sync_s": round(r3["seconds"], 2), "embedded": r3["chunks_embedded"]},
    ]
    print(f"{'case':<28}{'wall s':>8}{'sync s':>8}{'embedded':>10}")
    for r in rows:
        print(f"{r['case']:<28}{r['wall_s']:>8}{r['sync_s']:>8}{r['embedded']:>10}")
    print(f"(importing chromadb, numpy and bm25s alone takes {import_only:.2f} s)")
    print(json.dumps({"bench": "restart", "files": args.files, "rows": rows, "import_s": round(import_only, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
