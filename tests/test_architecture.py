"""How docqa's modules may import each other: no loops, and stores that know no model.

The import graph is read from the source with `ast`, imports inside functions included,
so a lazy import counts as much as one at the top. The rules are data: add a row to
FORBIDDEN to keep a module away from others.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT
from test_front_ends_thin import INGEST_AND_STORES

OUR_MODULES = {p.stem: p for p in sorted(ROOT.glob("*.py"))}
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"

# module -> modules it must not import, directly or inside a function
FORBIDDEN: dict[str, set[str]] = {
    "doc_types": set(OUR_MODULES) - {"doc_types"},
    "vector_store": {"text_splitter", "embeddings", "onnx_export", "document_converter", "text_formats",
                     "pdf_converter", "office_formats", "web_formats", "data_formats", "converter_workers"},
    "keyword_index": {"text_splitter", "embeddings", "onnx_export", "document_converter", "text_formats",
                      "pdf_converter", "office_formats", "web_formats", "data_formats", "converter_workers"},
    # The front ends go through RAGSystem; test_front_ends_thin.py owns the list and checks the rest of "thin".
    "main": INGEST_AND_STORES,
    "web_ui": INGEST_AND_STORES,
    "web_layout": INGEST_AND_STORES,
    "web_handlers": INGEST_AND_STORES,
    "web_html": INGEST_AND_STORES,
    "web_questions": INGEST_AND_STORES,
    "service": INGEST_AND_STORES,
    "service_api": INGEST_AND_STORES,
    "openai_api": INGEST_AND_STORES,
    "mcp_server": INGEST_AND_STORES,
    # The guard knows settings and keys, nothing of documents or answers.
    "api_guard": set(OUR_MODULES) - {"api_guard", "config", "errors"},
    # The index's records are read without the Indexer, so they know nothing above the chunk types.
    "index_records": set(OUR_MODULES) - {"index_records", "doc_types"},
    # The prompt is text and message shapes: any backend or stage may use it without pulling in the others.
    "answer_prompt": set(OUR_MODULES) - {"answer_prompt"},
}


def imports_of(path: Path) -> set[str]:
    """The modules of ours that a file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return (found & set(OUR_MODULES)) - {path.stem}


def import_graph() -> dict[str, set[str]]:
    return {name: imports_of(path) for name, path in OUR_MODULES.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_loop_finder_finds_a_loop():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_two_modules_import_each_other_directly_or_through_a_loop():
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("module", sorted(FORBIDDEN))
def test_a_module_imports_none_of_what_it_must_not(module):
    assert imports_of(OUR_MODULES[module]) & FORBIDDEN[module] == set()


def test_architecture_page_names_every_module():
    page = ARCHITECTURE.read_text(encoding="utf-8")
    assert {name for name in OUR_MODULES if f"`{name}.py`" not in page} == set()


def test_no_benchmark_script_shadows_a_module():
    """tests/test_load.py puts bench/ on sys.path, and spawned converter workers inherit it:
    a bench/ocr.py once made every worker import it instead of ocr.py, and every file failed."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    modules = {p.stem for p in root.glob("*.py")}
    assert not modules & {p.stem for p in (root / "bench").glob("*.py")}
