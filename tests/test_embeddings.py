"""Embedding backends: ONNX (fp32 and int8) against the torch model, Ollama's /api/embed, and
one collection per model so vectors of different models never mix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from config import load_settings
from errors import ConfigError, EmbeddingError
from ollama_standin import OllamaStandin

TEXTS = [
    "def read_config(path): return json.load(open(path))",
    "Lists are mutable; tuples are not.",
    "word " * 600,  # past the model's 256 tokens: truncated the same way by both backends
    "x",
]

DOCS = {
    "bees.md": "# Bees\n\nHoney bees dance to tell the hive where flowers are.\n",
    "volcano.txt": "A volcano erupts when magma rises through the crust.\n",
    "python.md": "# Python\n\nA list comprehension builds a list from an iterable in one line.\n",
}


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory):
    """One export for the whole run (about 10 s), in a cache folder of the test's own."""
    return tmp_path_factory.mktemp("model-cache")


def _write_docs(settings) -> None:
    for name, text in DOCS.items():
        (settings.docs_dir / name).write_text(text)


def test_onnx_matches_torch_and_is_exported_once(torch_embedder, onnx_cache, caplog):
    embedder = torch_embedder
    from embeddings import OnnxEmbedder

    onnx = OnnxEmbedder(cache_dir=onnx_cache)
    got = np.array(onnx.embed_documents(TEXTS))
    want = np.array(embedder.embed_documents(TEXTS))
    assert got.shape == want.shape == (len(TEXTS), 384)
    assert np.min((got * want).sum(axis=1)) > 0.9999
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # Same model, same vectors: it shares the default backend's collection.
    assert onnx.name == embedder.name and onnx.fingerprint() == embedder.fingerprint()

    exported = onnx.onnx_path
    stamp = exported.stat().st_mtime_ns
    with caplog.at_level("INFO"):
        again = OnnxEmbedder(cache_dir=onnx_cache)
        assert np.allclose(again.embed_query(TEXTS[1]), got[1], atol=1e-5)
    assert exported.stat().st_mtime_ns == stamp
    assert any("Loaded ONNX embedding model" in r.getMessage() for r in caplog.records)
    assert not any("Exporting" in r.getMessage() for r in caplog.records)


def test_onnx_int8_is_close_and_gets_its_own_collection(torch_embedder, onnx_cache):
    embedder = torch_embedder
    from embeddings import OnnxEmbedder

    int8 = OnnxEmbedder(cache_dir=onnx_cache, quantize="int8")
    got = np.array(int8.embed_documents(TEXTS))
    want = np.array(embedder.embed_documents(TEXTS))
    cosine = (got * want).sum(axis=1)
    assert cosine.min() > 0.97, cosine
    assert cosine.max() < 0.99999  # really the quantized weights, not the fp32 copy
    assert int8.name == "all-MiniLM-L6-v2-int8-v3"
    assert int8.fingerprint() != embedder.fingerprint()
    # int8 MatMul weights (the word-embedding table stays fp32, as per-tensor int8 there hurt quality)
    assert int8.onnx_path.stat().st_size < 0.75 * OnnxEmbedder(cache_dir=onnx_cache).onnx_path.stat().st_size


def test_the_export_is_fused_and_int8_vectors_do_not_depend_on_their_batch(torch_embedder, onnx_cache):
    """The fused graph (1.5x faster to embed) still gives torch's vectors; int8 embeds each text alone."""
    import onnx
    import onnxruntime as ort

    from embeddings import OnnxEmbedder
    from onnx_export import open_session

    def ops(path: Path) -> set[str]:
        return {node.op_type for node in onnx.load(str(path), load_external_data=False).graph.node}

    fp32 = OnnxEmbedder(cache_dir=onnx_cache)
    fp32.embed_query("warm")
    assert {"Attention", "BiasGelu", "LayerNormalization"} <= ops(fp32.onnx_path), ops(fp32.onnx_path)
    assert sorted(f.name for f in fp32.onnx_path.parent.iterdir()) == ["model-int8.onnx", "model.onnx"]  # no plain copy left
    # The slow fused residual + LayerNorm kernel is neither in the file nor made again by the session's optimizer
    # (the embedder and the export's check both open their sessions through open_session)
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(onnx_cache / "session-graph.onnx")
    open_session(fp32.onnx_path, options)
    assert "SkipLayerNormalization" not in ops(fp32.onnx_path) | ops(onnx_cache / "session-graph.onnx")
    int8 = OnnxEmbedder(cache_dir=onnx_cache, quantize="int8")
    assert {"QAttention", "MatMulInteger"} <= ops(int8.onnx_path) and "Attention" not in ops(int8.onnx_path)  # projections int8
    alone = np.array(int8.embed_documents([TEXTS[1]]))[0]
    among = np.array(int8.embed_documents(TEXTS + ["padding " * 40, "short"]))[1]
    assert np.allclose(alone, among, atol=1e-6)  # dynamic quantisation scales per call: one text per call
    # fp32 batches short texts together (fewer calls) and gives the same vectors either way
    assert np.allclose(np.array(fp32.embed_documents([TEXTS[1]]))[0], np.array(fp32.embed_documents(TEXTS))[1], atol=1e-5)


def test_a_model_the_optimizer_does_not_know_keeps_its_plain_export(tmp_path, caplog):
    """The fusion is only a speed-up: when it cannot be made, the plain export is what is kept (and then checked)."""
    import logging

    from onnx_export import _fuse

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text('{"model_type": "unknown-encoder"}')  # no head count to fuse with
    plain = tmp_path / "plain.onnx"
    plain.write_bytes(b"plain export")
    with caplog.at_level(logging.INFO, logger="onnx_export"):
        fused = _fuse(plain, tmp_path / "model.onnx", tmp_path / "model", reference=({}, None, None))
    assert fused is False, "export_onnx then checks the kept fp32 model against torch itself"
    assert (tmp_path / "model.onnx").read_bytes() == b"plain export" and not plain.exists()
    assert "Keeping the plain ONNX export of model" in caplog.text


def test_texts_are_batched_by_padded_tokens():
    from embeddings import OnnxEmbedder

    fp32, int8 = OnnxEmbedder(), OnnxEmbedder(quantize="int8")
    lengths = [230, 12, 256, 10, 11, 120, 9]
    assert fp32._batches(lengths) == [[2], [0], [5, 1], [4, 3, 6]]  # longest first, within 256 padded tokens
    assert sorted(i for batch in fp32._batches(lengths) for i in batch) == list(range(len(lengths)))
    assert int8._batches(lengths) == [[2], [0], [5], [1], [4], [3], [6]]
    assert fp32._batches([5] * 40) == [list(range(16)), list(range(16, 32)), list(range(32, 40))]  # MAX_BATCH


def test_answer_checks_get_torch_vectors_when_the_index_is_int8(torch_embedder, onnx_cache):
    """The checks' thresholds were calibrated on torch's similarities; under int8 they let wrong answers through."""
    from embeddings import OnnxEmbedder

    int8 = OnnxEmbedder(cache_dir=onnx_cache, quantize="int8")
    checker = int8.for_checks
    assert checker is int8.for_checks and checker.quantize == "none"  # made once per embedder
    got, want = np.array(checker.embed_documents(TEXTS)), np.array(torch_embedder.embed_documents(TEXTS))
    assert np.min((got * want).sum(axis=1)) > 0.9999
    fp32 = OnnxEmbedder(cache_dir=onnx_cache)
    assert fp32.for_checks is fp32 and torch_embedder.for_checks is torch_embedder


def test_the_default_is_onnx_fp32_and_int8_needs_the_onnx_backend():
    defaults = load_settings(environ={})
    assert (defaults.embedding_backend, defaults.embedding_quantize) == ("onnx", "none")
    with pytest.raises(ConfigError, match="EMBEDDING_BACKEND=onnx"):
        load_settings(overrides={"embedding_backend": "sentence-transformers", "embedding_quantize": "int8"}, environ={})
    settings = load_settings(overrides={"embedding_quantize": "int8"}, environ={})
    assert (settings.embedding_backend, settings.embedding_quantize) == ("onnx", "int8")


def test_switching_models_reindexes_into_a_new_collection(make_settings, torch_embedder, onnx_cache):
    """torch -> ONNX int8: each model keeps its own collection; nothing is mixed."""
    from rag_system import RAGSystem

    base = dict(model_cache_dir=str(onnx_cache))
    settings = make_settings(**base, embedding_backend="sentence-transformers")
    _write_docs(settings)

    rag = RAGSystem(settings, embedder=torch_embedder)
    try:
        assert rag.index().chunks_embedded == 3
        default_collection = rag.vectors.collection_name
    finally:
        rag.close()

    rag = RAGSystem(make_settings(**base, embedding_quantize="int8"))
    try:
        report = rag.index()
        assert report.chunks_embedded == 3  # re-embedded with the new model, not reused
        stats = rag.vectors.get_collection_stats()
        assert stats["collection"] != default_collection
        assert stats["embedding_model"] == "all-MiniLM-L6-v2-int8-v3" and stats["dimension"] == 384
        meta = rag.vectors.collection.metadata
        assert meta["embedding_model"] == "all-MiniLM-L6-v2-int8-v3" and meta["dimension"] == 384
        assert rag.retrieve_context("How do bees tell the hive where flowers are?")[0].source == "bees.md"
        names = {c.name for c in rag.vectors.client.list_collections()}
        assert default_collection in names  # the old model's vectors stay apart, untouched
        assert rag.vectors.client.get_collection(default_collection).count() == 3
    finally:
        rag.close()


def test_ollama_embeddings_index_and_search(make_settings, monkeypatch):
    from rag_system import RAGSystem

    with OllamaStandin() as server:
        settings = make_settings(embedding_backend="ollama", ollama_host=server.url)
        _write_docs(settings)
        rag = RAGSystem(settings)
        try:
            assert rag.warning is None
            assert rag.index().chunks_embedded == 3
            meta = rag.vectors.collection.metadata
            assert meta["embedding_model"] == "ollama-nomic-embed-text" and meta["dimension"] == 768
            top = rag.retrieve_context("volcano magma crust", where=None)
            assert top[0].source == "volcano.txt"
            vector_only = rag.vectors.search(rag.embedder.embed_query("magma rises through the crust"), 1)
            assert vector_only and vector_only[0].id in rag.indexer.manifest.files["volcano.txt"].chunk_ids
        finally:
            rag.close()
        sent = server.embed_requests
        assert sent and all(body["model"] == "nomic-embed-text" for body in sent)
        assert any(isinstance(body["input"], list) and len(body["input"]) == 3 for body in sent)  # one batch


def test_ollama_embedding_errors_say_what_to_do(make_settings):
    from embeddings import OllamaEmbedder
    from rag_system import RAGSystem

    with OllamaStandin(models=["llama3.2:latest"]) as server:
        with pytest.raises(EmbeddingError, match="ollama pull nomic-embed-text"):
            OllamaEmbedder(server.url, "nomic-embed-text").verify()
    with pytest.raises(EmbeddingError, match="not answering"):
        OllamaEmbedder("http://127.0.0.1:9", "nomic-embed-text").verify()
    # Ollama down at start: docqa still opens, with keyword search and a banner saying why.
    settings = make_settings(embedding_backend="ollama", ollama_host="http://127.0.0.1:9")
    _write_docs(settings)
    rag = RAGSystem(settings)
    try:
        assert not rag.vectors.available and "not answering" in (rag.warning or "")
        rag.index()
        assert rag.retrieve_context("volcano magma")[0].source == "volcano.txt"
    finally:
        rag.close()


def test_a_corrupt_cached_onnx_model_is_exported_again(torch_embedder, onnx_cache, tmp_path, caplog):
    embedder = torch_embedder
    import shutil

    from embeddings import OnnxEmbedder

    OnnxEmbedder(cache_dir=onnx_cache).embed_query("warm")  # the session's export exists
    cache = tmp_path / "cache"
    shutil.copytree(onnx_cache, cache)
    broken = OnnxEmbedder(cache_dir=cache, quantize="int8")
    broken.onnx_path.write_bytes(broken.onnx_path.read_bytes()[:1000])  # a truncated file, as a full disk leaves
    with caplog.at_level("WARNING"):
        vector = np.array(broken.embed_query(TEXTS[1]))
    assert any("exporting it again" in r.getMessage() for r in caplog.records)
    assert broken.onnx_path.stat().st_size > 10_000_000
    assert float(vector @ np.array(embedder.embed_query(TEXTS[1]))) > 0.97
