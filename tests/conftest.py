"""Shared fixtures: every test runs with its own settings, data folder and config files."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED_EVAL = ROOT.parent / "shared" / "eval"
THINKPYTHON_PDF = SHARED_EVAL / "thinkpython" / "thinkpython2.pdf"
THINKPYTHON_QA = SHARED_EVAL / "thinkpython" / "dev.jsonl"
SCIFACT = SHARED_EVAL / "scifact"


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    """No user-wide or project .env leaks into a test; a Chroma server only when asked for."""
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.setenv("DOCQA_ENV_FILE", str(home / "no-project.env"))
    monkeypatch.setenv("LLM_BACKEND", "llamacpp")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens there
    if not os.environ.get("DOCQA_TEST_CHROMA_HOST"):
        monkeypatch.delenv("CHROMA_HOST", raising=False)
    else:
        monkeypatch.setenv("CHROMA_HOST", os.environ["DOCQA_TEST_CHROMA_HOST"])
        monkeypatch.setenv("CHROMA_PORT", os.environ.get("DOCQA_TEST_CHROMA_PORT", "8000"))
    for name in ("DOCS_DIR", "DB_DIR", "RETRIEVAL_MODE", "TOP_K", "EMBEDDING_MODEL", "EMBEDDING_BACKEND", "EMBEDDING_QUANTIZE", "LLAMACPP_MODEL_PATH"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def make_settings(tmp_path):
    """Settings for a test: its own documents and data folders; keyword overrides win."""
    from config import load_settings

    def build(**overrides):
        overrides.setdefault("docs_dir", tmp_path / "documents")
        overrides.setdefault("db_dir", tmp_path / "data")
        Path(overrides["docs_dir"]).mkdir(parents=True, exist_ok=True)
        return load_settings(overrides=overrides)

    return build


@pytest.fixture(scope="session")
def embedder():
    """The default embedding backend (the packaged all-MiniLM-L6-v2 in ONNX Runtime, fp32), loaded once for the whole run."""
    from config import load_settings
    from embeddings import make_embedder

    return make_embedder(load_settings(environ={}))


@pytest.fixture(scope="session")
def torch_embedder():
    """The same model as published, in torch: the reference the ONNX exports are checked against."""
    from embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
def open_rag(make_settings, embedder):
    """RAGSystems on temp folders, sharing the session's real embedder instead of loading one each."""
    opened = []

    def build(**overrides):
        rag = rag_with(make_settings(**overrides), embedder)
        opened.append(rag)
        return rag

    yield build
    for rag in opened:
        rag.close()


def module_settings(home: Path, env: dict[str, str] | None = None, **overrides: Any) -> Any:
    """Settings for a module-scoped fixture, where the per-test isolation does not reach: only
    `overrides` and `env`, no user or project .env; documents and data under `home` by default."""
    from config import load_settings

    overrides.setdefault("docs_dir", home / "documents")
    overrides.setdefault("db_dir", home / "data")
    environ = {"XDG_CONFIG_HOME": str(home / "xdg"), "DOCQA_ENV_FILE": str(home / "none.env"), **(env or {})}
    return load_settings(overrides=overrides, environ=environ)


def rag_with(settings: Any, embedder: Any) -> Any:
    """A RAGSystem that uses the session's embedder instead of loading its own model."""
    from rag_system import RAGSystem

    return RAGSystem(settings, embedder=embedder)


def require(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"{path} is missing: the evaluation data must sit at ../shared/eval beside the checkout")
    return path
