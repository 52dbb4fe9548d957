"""The front ends stay thin: they go through RAGSystem, and the rules they share have one owner.

Read from the source with ast, so these run in a blink and need no model.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from answer_prompt import REFUSAL
from answer_render import CITATION, UNCONFIRMED, answer_as_text, is_refusal, link_citations, place, source_line
from conversation import history_after

ROOT = Path(__file__).resolve().parent.parent
WEB_UI = ["web_ui.py", "web_layout.py", "web_handlers.py", "web_html.py", "web_questions.py"]
FRONT_ENDS = [*WEB_UI, "main.py", "service.py", "service_api.py", "openai_api.py", "mcp_server.py"]
INGEST_AND_STORES = {
    "indexer", "index_records", "vector_store", "keyword_index", "document_converter", "text_splitter", "page_images",
    "folder_profile", "discovery", "watcher", "embeddings", "documents_folder", "data_folder",
}
"""What the front ends reach through RAGSystem instead of importing."""
RAG_INSIDES = {"indexer", "vectors", "keywords", "retriever", "embedder"}
WEB_UI_MAX_FUNCTION_LINES = 100
MAX_FUNCTION_LINES = 80
OUR_MODULES = [*WEB_UI, "main.py", "answer_render.py", "service.py", "service_api.py", "openai_api.py", "mcp_server.py", "api_guard.py"]


def tree(name: str) -> ast.Module:
    return ast.parse((ROOT / name).read_text(encoding="utf-8"), filename=name)


def imported_modules(module: ast.Module) -> set[str]:
    """Every module imported anywhere in the file, inside functions and TYPE_CHECKING blocks too."""
    names = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def rag_attributes(module: ast.Module) -> set[str]:
    """The attributes read off the system: `rag.x` and `self.rag.x`."""
    found = set()
    for node in ast.walk(module):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        if (isinstance(owner, ast.Name) and owner.id == "rag") or (isinstance(owner, ast.Attribute) and owner.attr == "rag"):
            found.add(node.attr)
    return found


def function_lengths(module: ast.Module) -> dict[str, int]:
    return {
        node.name: node.end_lineno - node.lineno + 1  # type: ignore[operator]
        for node in ast.walk(module)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


@pytest.mark.parametrize("name", FRONT_ENDS)
def test_front_end_imports_no_ingest_or_store_module(name: str) -> None:
    assert imported_modules(tree(name)) & INGEST_AND_STORES == set()


@pytest.mark.parametrize("name", FRONT_ENDS)
def test_front_end_touches_nothing_inside_the_system(name: str) -> None:
    used = rag_attributes(tree(name))
    assert {a for a in used if a.startswith("_")} == set()
    assert used & RAG_INSIDES == set()


@pytest.mark.parametrize("name", FRONT_ENDS)
def test_front_end_types_the_system_as_ragsystem(name: str) -> None:
    for node in ast.walk(tree(name)):
        if isinstance(node, ast.arg) and node.arg == "rag":
            assert node.annotation is not None and ast.unparse(node.annotation) == "RAGSystem", f"{name}: line {node.lineno}"


@pytest.mark.parametrize("name", WEB_UI)
def test_web_ui_functions_stay_short(name: str) -> None:
    lengths = function_lengths(tree(name))
    assert max(lengths.values()) <= WEB_UI_MAX_FUNCTION_LINES, max(lengths.items(), key=lambda kv: kv[1])


@pytest.mark.parametrize("name", OUR_MODULES)
def test_no_function_is_over_80_lines(name: str) -> None:
    too_long = {f: n for f, n in function_lengths(tree(name)).items() if n > MAX_FUNCTION_LINES}
    assert too_long == {}


def test_handlers_return_component_dicts_not_tuples() -> None:
    """A handler's result names its components: no positional tuples to line up with an outputs list."""
    handlers = next(n for n in ast.walk(tree("web_handlers.py")) if isinstance(n, ast.ClassDef) and n.name == "Handlers")
    for node in ast.walk(handlers):
        if isinstance(node, (ast.Return, ast.Yield)) and node.value is not None:
            assert not isinstance(node.value, ast.Tuple), ast.unparse(node)


# ---------------------------------------------------------------- one owner per rule


def test_refusal_is_the_prompts_sentence_at_the_start() -> None:
    assert is_refusal(REFUSAL)
    assert is_refusal(f"  {REFUSAL.upper()} The closest passages are listed below.")
    assert not is_refusal(f"Tuples are immutable [1]. {' '.join(['More text.'] * 10)} {REFUSAL}")
    assert not is_refusal("The default chunk size is 1000 characters [1].")
    assert is_refusal(f"{UNCONFIRMED} Their sentences nearest to your question, in case one answers it:")


def test_one_citation_pattern_and_a_list_is_not_one() -> None:
    assert CITATION.findall("Tuples are immutable [1], lists are not [2].") == ["1", "2"]
    assert CITATION.findall("xs = [1, 2]") == []
    assert "#source" not in link_citations("xs = [1, 2]", 3)


def passage(source: str, location: str, heading_path: list[str]) -> SimpleNamespace:
    return SimpleNamespace(
        source=source, location=location, heading_path=heading_path, text="Some text.", score=0.5, found_by={"bm25": 1}
    )


def test_a_place_is_written_the_same_way_everywhere() -> None:
    pdf = passage("book.pdf", "page 3", ["Tuples"])
    assert place(pdf) == "book.pdf, page 3"
    assert place(pdf, " — ") == "book.pdf — page 3"
    assert source_line(1, pdf).startswith("[1] book.pdf, page 3 [Tuples]  score 0.5000 (bm25 #1)")
    answer = SimpleNamespace(text="Yes [1].", passages=[pdf])
    assert answer_as_text(answer).endswith("[1] book.pdf, page 3 (Tuples)")


def test_a_failed_answer_is_left_out_of_the_history() -> None:
    before = [{"role": "user", "content": "q0"}, {"role": "assistant", "content": "a0"}]
    assert history_after(before, "q1", "a1", failed=False) == [*before, {"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}]
    assert history_after(before, "q1", "⚠ no model", failed=True) == before
