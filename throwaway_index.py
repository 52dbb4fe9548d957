"""A RAGSystem over a temporary data folder, so measuring never touches the user's index.

Every evaluation (`evaluation.py`, and the benchmarks in bench/) indexes into a `ThrowawayIndex`;
its `EmbeddingCache` keeps corpus embeddings between runs, so a second run embeds nothing new.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import embeddings
from config import Settings
from rag_system import RAGSystem


def throwaway_settings(settings: Settings, data_dir: Path, docs_dir: Path | None = None) -> Settings:
    return dataclasses.replace(
        settings,
        db_dir=data_dir,
        docs_dir=docs_dir or settings.docs_dir,
        collection_name=f"docqa-eval-{int(time.time() * 1000) % 10**9}",
        sources=dict(settings.sources),
    )


class EmbeddingCache:
    """Corpus embeddings kept between evaluation runs, so comparing modes or settings embeds once.

    Wraps the embedder the throwaway index uses: documents are looked up by a hash of the
    model and the text, so a changed chunking or model simply misses. Queries are not cached,
    so query latency stays honest; `reused` says how many chunk embeddings came from the cache.
    """

    def __init__(self, embedder: Any, path: Path) -> None:
        self.embedder = embedder
        self.path = path
        self._db: Any = None
        self.reused = 0

    @property
    def db(self) -> Any:
        """Opened on the first documents to embed: a keyword-only index never creates the file."""
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path)
            self._db.execute("CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        return self._db

    def __getattr__(self, name: str) -> Any:
        return getattr(self.embedder, name)

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.embedder.name}\x00{text}".encode("utf-8")).hexdigest()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        keys = [self._key(t) for t in texts]
        found: dict[str, list[float]] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            rows = self.db.execute(f"SELECT key, vector FROM embeddings WHERE key IN ({','.join('?' * len(part))})", part)
            found.update((k, np.frombuffer(v, dtype=np.float32).tolist()) for k, v in rows)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            fresh = self.embedder.embed_documents([texts[i] for i in missing])
            rows = [(keys[i], np.asarray(v, dtype=np.float32).tobytes()) for i, v in zip(missing, fresh, strict=False)]
            self.db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?)", rows)
            self.db.commit()
            found.update((keys[i], v) for i, v in zip(missing, fresh, strict=False))
        self.reused += len(texts) - len(missing)
        return [found[k] for k in keys]

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class ThrowawayIndex:
    """A RAGSystem over a temporary data folder (and a temporary collection on a Chroma server),
    embedding through an EmbeddingCache: `rag.embedder` is the cache, and so is what it indexes and searches with."""

    def __init__(self, settings: Settings, docs_dir: Path | None = None, embedder: Any = None) -> None:

        self.tmp = Path(tempfile.mkdtemp(prefix="docqa-eval-"))
        self.settings = throwaway_settings(settings, self.tmp / "data", docs_dir)
        model = embedder if embedder is not None else embeddings.make_embedder(self.settings)
        self.cache = EmbeddingCache(model, settings.db_dir / "eval-cache" / "embeddings.sqlite")
        self.rag = RAGSystem(self.settings, embedder=self.cache)

    def close(self) -> None:
        self.rag.close()
        self.cache.close()
        if self.settings.chroma_host:
            self.rag.vectors.drop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> "ThrowawayIndex":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
