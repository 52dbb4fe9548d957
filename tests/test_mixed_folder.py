"""Retrieval in a real, mixed folder: the shipped documents beside the 288-page Think Python PDF.

Names and operators must find the place that defines them although the book's many pages
match their words, and a very long question is searched, not refused. The folder is built
and indexed once for the module (Think Python is the slow part); a stand-in model writes the
answers, so the tests measure retrieval and the answer path, not a language model.
"""

from __future__ import annotations

import re
import shutil

import pytest

from conftest import ROOT, THINKPYTHON_PDF, module_settings, require
from llm_handler import LLMBackend
from rag_system import RAGSystem

pytestmark = pytest.mark.slow


class CitingStandIn(LLMBackend):
    """Answers every question with the first sentence of its first passage, cited."""

    name = "stand-in"

    def stream(self, messages, max_tokens=None, schema=None):
        yield "The documents explain this in the first passage [1]."


@pytest.fixture(scope="module")
def mixed_rag(tmp_path_factory, embedder):
    home = tmp_path_factory.mktemp("mixed")
    docs = home / "documents"
    docs.mkdir()
    for path in (ROOT / "documents").iterdir():
        shutil.copy(path, docs / path.name)
    shutil.copy(require(THINKPYTHON_PDF), docs / "thinkpython2.pdf")  # copies: the indexer refuses links
    rag = RAGSystem(module_settings(home), embedder=embedder, llm=CitingStandIn())
    report = rag.index()
    assert sorted(report.added) == ["docqa-configuration.docx", "docqa-user-guide.pdf", "faq.md", "thinkpython2.pdf"]
    yield rag
    rag.close()


@pytest.mark.parametrize("question", ["What is TOP_K?", "Default value of TOP_K?", "what is TOP_K set to if I don't change it"])
def test_a_setting_named_exactly_finds_the_configuration_docx_first(mixed_rag, question):
    passages = mixed_rag.retrieve_context(question, k=5)
    assert passages[0].source == "docqa-configuration.docx"
    assert "TOP_K" in passages[0].text


def test_a_question_that_only_mentions_a_setting_keeps_the_prose_that_answers_it_first(mixed_rag):
    passages = mixed_rag.retrieve_context("I changed CHUNK_SIZE. What do I have to run now?", k=5)
    assert "--reindex" in passages[0].text and not passages[0].text.lstrip().startswith("|")


def test_the_floor_division_operator_finds_page_67(mixed_rag):
    passages = mixed_rag.retrieve_context("What does the // operator do?", k=5)
    assert 67 in {page for p in passages for page in p.pages}


def test_a_command_line_flag_finds_where_it_is_described(mixed_rag):
    passages = mixed_rag.retrieve_context("What does --reindex do?", k=5)
    assert "--reindex" in passages[0].text and passages[0].source != "thinkpython2.pdf"


def test_a_10000_character_question_is_searched_by_its_informative_part(mixed_rag):
    story = (
        "I have been learning to program for a few weeks now, mostly in the evenings after work, "
        "and I keep notes of everything that confuses me so I can ask about it later. "
    )
    question = story * 40 + (
        "Today I wrote hours = minutes // 60 in my script and got 1 instead of 1.75. "
        "What does the // operator do in Python, and how is it different from ordinary division? "
    ) + story * 40
    assert len(question) >= 10_000

    answer = mixed_rag.ask(question)

    assert not answer.refused and answer.kind == "answer"
    assert answer.focus and len(answer.focus) <= mixed_rag.settings.question_max_chars
    assert "minutes // 60" in answer.focus
    assert "most informative part" in (answer.notice or "")
    assert 67 in {page for p in answer.passages for page in p.pages}


@pytest.mark.parametrize(("question", "name"), [
    ("If I leave TOP_K alone, what value does it have?", "TOP_K"),
    ("What does CHUNK_OVERLAP default to?", "CHUNK_OVERLAP"),
])
def test_a_setting_named_in_a_question_finds_its_row_in_the_settings_table_next_to_the_best(mixed_rag, question, name):
    """The settings table defines every setting in a row of its own; it is long, so BM25 alone ranks it below prose that mentions the name."""
    passages = mixed_rag.retrieve_context(question, k=5)
    rows = [p for p in passages[:2] if re.search(rf"^\| {name} \|", p.text, re.M)]
    assert rows, [p.text[:80] for p in passages]
