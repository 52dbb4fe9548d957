"""Failing parts do not take docqa down: a broken embedding model, a vanishing Ollama."""

from __future__ import annotations

import shutil

import pytest

from embeddings import packaged_model_path
from rag_system import RAGSystem


@pytest.fixture
def broken_model(tmp_path):
    folder = tmp_path / "broken-model"
    shutil.copytree(packaged_model_path(), folder)
    (folder / "model.safetensors").write_bytes(b"\x00garbage, not a safetensors file")
    return folder


def test_corrupt_embedding_model_falls_back_to_keyword_search_with_a_warning(make_settings, broken_model):
    settings = make_settings(embedding_model=str(broken_model))
    (settings.docs_dir / "notes.md").write_text("# Bees\n\nHoneybees dance to show where flowers are.\n", encoding="utf-8")
    rag = RAGSystem(settings)
    try:
        assert not rag.vectors.available
        stats = rag.stats()
        assert "Keyword search only" in stats["warning"] and "corrupt" in stats["warning"]
        assert stats["retrieval_mode"].startswith("bm25")
        rag.index()
        passages = rag.retrieve_context("Why do honeybees dance?")
        assert passages and passages[0].source == "notes.md"
    finally:
        rag.close()


def test_missing_embedding_model_folder_is_named_in_the_warning(make_settings, tmp_path):
    rag = RAGSystem(make_settings(embedding_model=str(tmp_path / "nowhere")))
    try:
        assert "does not exist" in rag.stats()["warning"]
    finally:
        rag.close()


@pytest.mark.slow
def test_ollama_dying_mid_answer_keeps_the_streamed_text_aside_and_auto_falls_back(make_settings):
    from ollama_standin import OllamaStandin

    with OllamaStandin(pieces=["Bees ", "dance ", "to ", "share ", "directions."], drop_after=2) as server:
        settings = make_settings(llm_backend="auto", ollama_host=server.url, llm_max_tokens=8)
        (settings.docs_dir / "bees.md").write_text("# Bees\n\nHoneybees dance to show where flowers are.\n", encoding="utf-8")
        rag = RAGSystem(settings)
        try:
            rag.index()
            first = rag.ask("Why do honeybees dance?")
            assert first.set_aside == "Bees dance", "the unchecked words are kept, set aside"
            assert "Honeybees dance to show where flowers are." in first.text, "the quotes stand"
            assert first.error and "mid-answer" in first.error
            assert first.passages  # the sources are still shown
        finally:
            server_url = server.url
    # Ollama is gone now: the next question is answered by the embedded model.
    try:
        second = rag.ask("Why do honeybees dance?")
        assert "llama.cpp" in second.model and second.text
        assert server_url
    finally:
        rag.close()


def test_unwritable_data_folder_is_refused_at_start_with_the_fix(make_settings, tmp_path):
    from errors import DocqaError

    blocker = tmp_path / "a-file-not-a-folder"
    blocker.write_text("x")
    with pytest.raises(DocqaError, match="not writable.*DB_DIR"):
        RAGSystem(make_settings(db_dir=blocker / "data"))


def test_disk_full_while_indexing_is_a_clear_error_and_nothing_half_written(make_settings, monkeypatch):
    import errno

    import keyword_index
    from errors import StoreError

    settings = make_settings()
    (settings.docs_dir / "a.md").write_text("# A\n\nAlpha.\n", encoding="utf-8")
    rag = RAGSystem(settings)
    try:
        def full(self, chunks):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(keyword_index.KeywordIndex, "add_chunks", full)
        with pytest.raises(StoreError, match="full"):
            rag.index()
        monkeypatch.undo()
        assert "a.md" not in rag.indexer.manifest.files  # not recorded as indexed
        rag.index()
        assert rag.indexer.check() == []
    finally:
        rag.close()


def test_the_llm_backend_handed_in_answers_and_is_kept_after_a_failure(make_settings, embedder):
    from errors import GenerationError
    from llm_handler import LLMBackend

    class Scripted(LLMBackend):
        name = "scripted"

        def __init__(self) -> None:
            self.replies: list = [GenerationError("the model stopped"), "Honeybees dance to show where flowers are [1]."]

        def stream(self, messages, max_tokens=None, schema=None):
            reply = self.replies.pop(0)
            if isinstance(reply, Exception):
                raise reply
            yield reply

    llm = Scripted()
    settings = make_settings(llm_backend="auto")  # auto chooses again after a failure, unless one was handed in
    (settings.docs_dir / "bees.md").write_text("# Bees\n\nHoneybees dance to show where flowers are.\n", encoding="utf-8")
    rag = RAGSystem(settings, embedder=embedder, llm=llm)
    try:
        rag.index()
        assert "the model stopped" in (rag.ask("Why do honeybees dance?").error or "")
        assert rag.llm is llm and rag.model_name() == "scripted"
        assert rag.ask("Why do honeybees dance?").text.startswith("Honeybees dance to show")
    finally:
        rag.close()
