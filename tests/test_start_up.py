"""Answers come first: the page opens while the folder indexes, and indexing waits for answers.

The embedder and the model are real-component wrappers that can be held at a point, so each test
sees the sync or the answer in the middle of its work, not a race won by timing.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from config import SETTING_FIELDS, env_name
from conftest import ROOT
from embeddings import EmbeddingBackend
from llm_handler import LLMBackend
from rag_system import RAGSystem

TOPICS = ["rivers", "glaciers", "volcanoes", "deserts", "forests", "oceans", "prairies", "caves"]


def write_notes(folder, count: int, start: int = 0) -> None:
    for n in range(start, start + count):
        topic = TOPICS[n % len(TOPICS)]
        (folder / f"note-{n:03d}.md").write_text(
            f"# Field note {n} on {topic}\n\nThe survey team {n} measured {topic} near station {n * 7} "
            f"and recorded {n + 3} samples of {topic} sediment.\n",
            encoding="utf-8",
        )


class HeldEmbedder(EmbeddingBackend):
    """The real embedder, except that embedding documents waits while `hold` is clear."""

    def __init__(self, real: EmbeddingBackend) -> None:
        self.real = real
        self.name = real.name
        self.hold = threading.Event()
        self.hold.set()
        self.embedding = threading.Event()
        self.batches = 0

    @property
    def dimension(self) -> int:
        return self.real.dimension

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedding.set()
        self.hold.wait(60)
        self.batches += 1
        return self.real.embed_documents(texts)

    def _embed(self, texts: list[str]) -> list[list[float]]:
        return self.real.embed_documents(texts)

    @property
    def for_checks(self) -> EmbeddingBackend:
        return self.real.for_checks


class HeldModel(LLMBackend):
    """Answers with its first passage's words, stopping mid-answer while `hold` is clear."""

    name = "stand-in"

    def __init__(self) -> None:
        self.hold = threading.Event()
        self.hold.set()
        self.streaming = threading.Event()

    def stream(self, messages, max_tokens=None, schema=None) -> Iterator[str]:
        yield "The survey team measured "
        self.streaming.set()
        self.hold.wait(60)
        yield "the sediment [1]."


def sync_in_background(rag: RAGSystem) -> threading.Thread:
    thread = threading.Thread(target=rag.index, daemon=True)
    thread.start()
    return thread


def test_a_question_during_a_sync_says_what_is_indexed_so_far_and_the_sync_completes_after(make_settings, embedder):
    settings = make_settings(convert_workers=1)
    write_notes(settings.docs_dir, 4)
    held = HeldEmbedder(embedder)
    rag = RAGSystem(settings, embedder=held, llm=HeldModel())
    try:
        rag.index()
        write_notes(settings.docs_dir, 40, start=4)
        held.hold.clear()
        held.embedding.clear()
        sync = sync_in_background(rag)
        assert held.embedding.wait(60), "the sync reached the embedder"
        assert rag.index_status().state == "indexing"
        during = rag.ask("What did the survey team measure near the station?")
        assert during.indexing and "still running" in during.indexing
        assert "of 40 files done" in during.indexing, during.indexing
        assert during.to_json()["indexing"] == during.indexing
        held.hold.set()
        sync.join(120)
        assert rag.index_status().state == "idle"
        assert len([d for d in rag.documents() if d.state == "indexed"]) == 44
        after = rag.ask("What did the survey team measure near the station?")
        assert after.indexing is None
    finally:
        held.hold.set()
        rag.close()


def test_indexing_pauses_while_an_answer_streams_and_resumes_after(make_settings, embedder):
    settings = make_settings(convert_workers=1)
    write_notes(settings.docs_dir, 2)
    held = HeldEmbedder(embedder)
    model = HeldModel()
    rag = RAGSystem(settings, embedder=held, llm=model)
    try:
        rag.index()
        model.hold.clear()
        answer = rag.stream_answer("What did the survey team measure?")
        asking = threading.Thread(target=lambda: list(answer), daemon=True)
        asking.start()
        assert model.streaming.wait(60), "the answer is streaming"
        batches = held.batches
        write_notes(settings.docs_dir, 30, start=2)
        sync = sync_in_background(rag)
        deadline = time.monotonic() + 60
        while not rag.index_status().paused and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rag.index_status().paused, "the sync waits for the answer"
        time.sleep(0.5)
        assert held.batches == batches, "no chunk is embedded while the answer streams"
        model.hold.set()
        asking.join(60)
        sync.join(120)
        status = rag.index_status()
        assert status.state == "idle" and not status.paused
        assert held.batches > batches
        assert len([d for d in rag.documents() if d.state == "indexed"]) == 32
    finally:
        model.hold.set()
        rag.close()


@pytest.mark.slow
def test_serve_answers_its_page_and_api_while_the_start_up_sync_runs(tmp_path):
    from serving import free_port, running

    docs = tmp_path / "documents"
    docs.mkdir()
    write_notes(docs, 400)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {env_name(f.name) for f in SETTING_FIELDS}}
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "xdg"), DOCQA_ENV_FILE=str(tmp_path / "none.env"), DOCS_DIR=str(docs),
        DB_DIR=str(tmp_path / "data"), GRADIO_SERVER_PORT=str(port), CONVERT_WORKERS="1", PYTHONUNBUFFERED="1",
    )
    base = f"http://127.0.0.1:{port}"
    with running([sys.executable, "main.py", "serve"], f"{base}/", tmp_path / "serve.log", env, ROOT, 300):
        seen = []
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"{base}/api/status", timeout=30) as reply:
                status = json.load(reply)
            seen.append(status["index"]["state"])
            if seen[-1] == "idle":
                break
            time.sleep(0.5)
        assert "indexing" in seen, f"the page answered before the sync ended: {seen[:5]}"
        assert seen[-1] == "idle"
        with urllib.request.urlopen(f"{base}/api/documents", timeout=30) as reply:
            documents = json.load(reply)
        assert len([d for d in documents["documents"] if d["state"] == "indexed"]) == 400
