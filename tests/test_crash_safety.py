"""Killing indexing at any moment, then starting again, ends exactly like a clean index.

A seeded random generator picks the changes to the folder and the moments of SIGKILL,
so a failure can be replayed with the same DOCQA_KILL_SEED.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEED = int(os.environ.get("DOCQA_KILL_SEED", "20261130"))
KILLS = int(os.environ.get("DOCQA_KILLS", "20"))
KILL_WINDOW_S = 1.0
"""The kill lands this long at most after the model loads: the default ONNX model embeds a run's few
changed files in about a second (torch took 2-3 s), and a kill after the run ended tests nothing."""

WORDS = (
    "river mountain engine theory protein cell galaxy market language museum harbor violin "
    "glacier circuit poem orbit enzyme ledger canyon lattice meadow tariff quartz sonnet"
).split()


def write_doc(folder: Path, name: str, rng: random.Random) -> None:
    paragraphs = []
    for _ in range(rng.randint(2, 9)):
        paragraphs.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120))) + ".")
    text = f"# {name}\n\n" + "\n\n".join(paragraphs) + "\n"
    (folder / name).write_text(text, encoding="utf-8")


def mutate(folder: Path, rng: random.Random, counter: list[int]) -> None:
    files = sorted(p.name for p in folder.iterdir())
    for name in rng.sample(files, min(2, len(files))):
        write_doc(folder, name, rng)  # change
    if files and rng.random() < 0.5:
        (folder / rng.choice(files)).unlink(missing_ok=True)  # delete
    counter[0] += 1
    write_doc(folder, f"added-{counter[0]}.md", rng)  # add


def run_index_and_kill(docs: Path, db: Path, rng: random.Random) -> str:
    """Start `main.py index`, wait until it is indexing, then SIGKILL it at a random moment."""
    env = {**os.environ, "DOCS_DIR": str(docs), "DB_DIR": str(db), "LOG_LEVEL": "INFO", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), "index"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    ready = threading.Event()
    log: list[str] = []

    def read() -> None:
        for line in proc.stderr:
            log.append(line)
            if "embedding model" in line and "Loaded" in line or "Indexed " in line:  # torch's or ONNX's log line
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    ready.wait(timeout=120)
    time.sleep(rng.uniform(0.0, KILL_WINDOW_S))
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        outcome = "killed"
    else:
        outcome = f"finished ({proc.returncode})"
    proc.wait(timeout=30)
    if outcome.startswith("finished") and proc.returncode not in (0,):
        pytest.fail("index run failed on its own:\n" + "".join(log[-30:]))
    return outcome


def index_state(docs: Path, db: Path, make_settings) -> tuple[set[str], set[str], set[str], list]:
    from rag_system import RAGSystem

    rag = RAGSystem(make_settings(docs_dir=docs, db_dir=db))
    try:
        rag.index()
        manifest = {cid for r in rag.indexer.manifest.files.values() for cid in r.chunk_ids}
        vector = {cid for ids in rag.vectors.ids_by_source().values() for cid in ids}
        keyword = {cid for ids in rag.keywords.ids_by_source().values() for cid in ids}
        return manifest, vector, keyword, rag.indexer.check()
    finally:
        rag.close()


@pytest.mark.slow
def test_sigkill_at_random_moments_then_restart_equals_clean_index(tmp_path, make_settings):
    rng = random.Random(SEED)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):
        write_doc(docs, f"doc-{i:02d}.md", rng)
    db = tmp_path / "killed"
    counter = [0]
    outcomes = []
    for _ in range(KILLS):
        mutate(docs, rng, counter)
        outcomes.append(run_index_and_kill(docs, db, rng))
    assert outcomes.count("killed") >= KILLS // 2, f"too few kills landed: {outcomes}"

    manifest, vector, keyword, problems = index_state(docs, db, make_settings)
    clean_manifest, clean_vector, clean_keyword, clean_problems = index_state(docs, tmp_path / "clean", make_settings)

    assert problems == [] and clean_problems == []
    assert clean_vector == clean_keyword == clean_manifest
    assert vector == clean_vector, f"seed {SEED}: vector store differs from a clean index"
    assert keyword == clean_keyword, f"seed {SEED}: keyword index differs from a clean index"
    assert manifest == clean_manifest
    # No duplicates: as many rows as distinct ids.
    from keyword_index import KeywordIndex

    assert KeywordIndex(db / "keyword").count() == len(clean_keyword)
