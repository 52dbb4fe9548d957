"""The vector store: ChromaDB, embedded (default) or a `chroma run` server (CHROMA_HOST).

The store takes and returns vectors and ids and never sees a model: the indexer embeds
the chunks and the retriever the question. We always pass embeddings to Chroma ourselves:
its default embedding function would download a model on first use, which fails offline.
The collection name carries a fingerprint of the embedding model, so switching models
indexes into a new collection instead of mixing vectors of different models. Without an
embedding model there is no vector store at all: NullVectorStore stands in, with the reason.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from config import Settings
from doc_types import Chunk
from errors import StoreError

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

log = logging.getLogger(__name__)

Where = dict[str, Any]


@dataclass
class VectorHit:
    id: str
    score: float  # cosine similarity, higher is better


def chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    """Chroma metadata for a chunk; Chroma takes no None values, so absent fields are left out."""
    meta: dict[str, Any] = {
        "source": chunk.source,
        "ext": Path(chunk.source).suffix.lower().lstrip("."),
        "title": chunk.title,
        "chunk_index": chunk.chunk_index,
        "heading": " > ".join(chunk.heading_path),
    }
    for key in ("page", "page_label", "start_line", "end_line", "slide", "sheet", "symbol"):
        value = getattr(chunk, key)
        if value is not None:
            meta[key] = value
    if chunk.ocr:
        meta["ocr"] = True
    if chunk.rows:
        meta["first_row"], meta["last_row"] = chunk.rows[0], chunk.rows[-1]
    return meta


def chroma_where(where: Where | None) -> Where | None:
    """Turn a simple {field: value or [values]} filter into Chroma's where syntax."""
    if not where:
        return None
    clauses = [{k: {"$in": list(v)}} if isinstance(v, (list, tuple, set)) else {k: v} for k, v in where.items()]
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class RetryingCollection:
    """A Chroma server collection whose calls survive a server restart: retries with backoff.

    Only connection failures are retried; after the last attempt the user gets a StoreError
    that says what to check. Nothing is lost: a file counts as indexed only after its
    chunks are stored, so an interrupted write is redone on the next sync.
    """

    RETRIED = ("upsert", "query", "delete", "get", "count")

    def __init__(self, collection: Any, where: str, delays: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)) -> None:
        self._collection = collection
        self._where = where
        self._delays = delays

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._collection, name)
        if name not in self.RETRIED:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            for attempt, delay in enumerate((*self._delays, None)):
                try:
                    return attr(*args, **kwargs)
                except Exception as exc:
                    if not _is_connection_error(exc):
                        raise
                    if delay is None:
                        raise StoreError(
                            f"The Chroma server at {self._where} is not answering (tried {attempt + 1} times) — "
                            "check that `chroma run` is up, or unset CHROMA_HOST to use the embedded store."
                        ) from exc
                    log.warning("Chroma server at %s: %s; retrying in %.1fs", self._where, exc, delay)
                    time.sleep(delay)

        return call


def _is_connection_error(exc: BaseException) -> bool:
    import httpx

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (httpx.TransportError, ConnectionError)):
            return True
        seen = seen.__cause__ or seen.__context__
    text = str(exc).lower()
    return "connect" in text and ("refused" in text or "error" in text)


@dataclass(frozen=True)
class VectorSpace:
    """Which vectors a collection holds: the model that made them, their dimension, and a
    short id of both (EmbeddingBackend.fingerprint) that ends the collection's name."""

    model: str
    dimension: int
    fingerprint: str


class VectorStore:
    """Chunks and their embeddings in a Chroma collection (embedded by default, or a server)."""

    available = True

    def __init__(self, settings: Settings, space: VectorSpace, collection_name: str | None = None) -> None:
        self.settings = settings
        self.space = space
        self.client = self._connect(settings)
        base = collection_name or settings.collection_name
        self.collection_name = f"{base}-{space.fingerprint}"
        try:
            self.collection = self._wrap(self.client.get_or_create_collection(
                name=self.collection_name,
                metadata={
                    "hnsw:space": "cosine",
                    "hnsw:search_ef": settings.vector_search_breadth,
                    "embedding_model": space.model,
                    "dimension": space.dimension,
                },
                embedding_function=None,
            ))
            self._set_search_breadth()
        except Exception as exc:
            raise StoreError(f"Cannot open the Chroma collection {self.collection_name}: {exc}") from exc

    def _set_search_breadth(self) -> None:
        """Search as wide as VECTOR_SEARCH_BREADTH, also in a collection made before the setting.

        Chroma's default breadth (ef_search 100) equals our candidate depth, so the last
        candidates were approximate and varied between processes; wider, they repeat.
        """
        want = self.settings.vector_search_breadth
        hnsw = dict((self.collection.configuration or {}).get("hnsw") or {})
        if hnsw.get("ef_search") != want:
            self.collection.modify(configuration={"hnsw": {"ef_search": want}})

    def _wrap(self, collection: Any) -> Any:
        if self.settings.chroma_host:
            return RetryingCollection(collection, f"{self.settings.chroma_host}:{self.settings.chroma_port}")
        return collection

    @staticmethod
    def _connect(settings: Settings) -> Any:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        if settings.chroma_host:
            for delay in (0.5, 1.0, 2.0, None):
                try:
                    return chromadb.HttpClient(
                        host=settings.chroma_host, port=settings.chroma_port, settings=chroma_settings
                    )
                except Exception as exc:
                    if delay is not None and _is_connection_error(exc):
                        log.warning("Chroma server at %s:%s not answering; retrying in %.1fs", settings.chroma_host, settings.chroma_port, delay)
                        time.sleep(delay)
                        continue
                    raise StoreError(
                        f"Cannot reach the Chroma server at {settings.chroma_host}:{settings.chroma_port} — "
                        "start it with `chroma run --path DIR`, or unset CHROMA_HOST to use the embedded store."
                    ) from exc
        settings.chroma_dir.mkdir(parents=True, exist_ok=True)
        try:
            return chromadb.PersistentClient(path=str(settings.chroma_dir), settings=chroma_settings)
        except Exception as exc:
            raise StoreError(
                f"Cannot open the vector store in {settings.chroma_dir}: {exc} — "
                "run `python main.py index --reindex` to rebuild it."
            ) from exc

    def add_chunks(self, chunks: list[Chunk], embeddings: list[list[float]]) -> int:
        """Upsert chunks with their embeddings (one per chunk) in batches; returns how many were written.

        The chunks' text is not sent: the keyword index holds it and serves every read, and Chroma
        would build a full-text index of it that nothing queries, half of its write time (SciFact's
        15,305 chunks: a store stage of ~25 s, ~10 s of it that index)."""
        if not chunks:
            return 0
        batch = max(1, min(5000, self._max_batch()))
        for start in range(0, len(chunks), batch):
            part = chunks[start : start + batch]
            self.collection.upsert(
                ids=[c.id for c in part],
                embeddings=embeddings[start : start + batch],
                metadatas=[chunk_metadata(c) for c in part],
            )
        return len(chunks)

    def _max_batch(self) -> int:
        try:
            return int(self.client.get_max_batch_size())
        except Exception:
            return 1000

    def search(self, query_embedding: list[float], k: int, where: Where | None = None) -> list[VectorHit]:
        count = self.collection.count()
        if count == 0:
            return []
        result = self.collection.query(
            query_embeddings=[query_embedding],
            n_results=min(k, count),
            where=chroma_where(where),
            include=["distances"],
        )
        ids = result["ids"][0]
        distances = result["distances"][0] if result.get("distances") else [0.0] * len(ids)
        return [VectorHit(id=i, score=1.0 - float(d)) for i, d in zip(ids, distances, strict=False)]

    def delete_source(self, source: str) -> int:
        ids = self.ids_for_source(source)
        self.delete_ids(ids)
        return len(ids)

    def delete_ids(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        for start in range(0, len(ids), 5000):
            self.collection.delete(ids=ids[start : start + 5000])

    def count(self) -> int:
        return int(self.collection.count())

    def ids_for_source(self, source: str) -> list[str]:
        return list(self.collection.get(where={"source": source}, include=[])["ids"])

    def ids_by_source(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        total = self.collection.count()
        page = 10000
        for offset in range(0, total, page):
            got = self.collection.get(include=["metadatas"], limit=page, offset=offset)
            for cid, meta in zip(got["ids"], got["metadatas"], strict=False):
                out.setdefault((meta or {}).get("source", ""), set()).add(cid)
        return out

    def get_collection_stats(self) -> dict[str, Any]:
        return {
            "collection": self.collection_name,
            "chunks": self.collection.count(),
            "embedding_model": self.space.model,
            "dimension": self.space.dimension,
            "store": f"chroma server {self.settings.chroma_host}:{self.settings.chroma_port}"
            if self.settings.chroma_host
            else f"chroma embedded {self.settings.chroma_dir}",
        }

    def reset(self) -> None:
        """Drop the collection and start an empty one (for `--reindex`)."""
        meta = dict(self.collection.metadata or {})
        self.client.delete_collection(self.collection_name)
        self.collection = self._wrap(self.client.get_or_create_collection(
            name=self.collection_name, metadata=meta, embedding_function=None
        ))
        self._set_search_breadth()

    def drop(self) -> None:
        try:
            self.client.delete_collection(self.collection_name)
        except Exception:
            pass


class NullVectorStore:
    """The vector store when the embedding model cannot run: keyword search answers alone.

    It holds nothing and finds nothing, so indexing and retrieval go on with the keyword
    index; `available` is False and `reason` says why, for the warning the user sees.
    """

    available = False
    collection_name = None

    def __init__(self, reason: str = "no embedding model") -> None:
        self.reason = reason

    def add_chunks(self, chunks: list[Chunk], embeddings: list[list[float]]) -> int:
        return 0

    def search(self, query_embedding: list[float], k: int, where: Where | None = None) -> list[VectorHit]:
        return []

    def delete_source(self, source: str) -> int:
        return 0

    def delete_ids(self, ids: Iterable[str]) -> None:
        pass

    def count(self) -> int:
        return 0

    def ids_for_source(self, source: str) -> list[str]:
        return []

    def ids_by_source(self) -> dict[str, set[str]]:
        return {}

    def reset(self) -> None:
        pass

    def drop(self) -> None:
        pass
