"""A long question is searched by the part that carries the documents' rare words, within the limit."""

from __future__ import annotations

import pytest

from doc_types import Chunk
from keyword_index import KeywordIndex
from question_focus import focus_question, sentences_of

FILLER = "Thank you so much for reading all of this, I really appreciate it and hope you have a nice day. "


@pytest.fixture
def index(tmp_path):
    """A keyword index over a few real-looking chunks: its IDF says which words are rare here."""
    texts = [
        "Floor division, written //, divides two numbers and rounds down to an integer.",
        "The modulus operator, %, divides two numbers and returns the remainder.",
        "A function is a named sequence of statements; you can call it by name.",
        "Thank you for reading the preface of this book.",
    ]
    keywords = KeywordIndex(tmp_path)
    keywords.add_chunks([Chunk(id=f"c{i}", text=t, source="book.md", title="book", chunk_index=i) for i, t in enumerate(texts)])
    return keywords


def test_a_short_question_is_searched_as_asked(index):
    focus = focus_question("What does floor division do?", 1000, index.idf)
    assert focus.search == "What does floor division do?" and focus.part is None and focus.notice is None


def test_a_long_question_is_searched_by_its_sentences_with_the_rarest_words(index):
    question = FILLER * 60 + "My script divides with // and rounds down, why?" + FILLER * 60
    focus = focus_question(question, 300, index.idf)
    assert len(question) > 10_000 and len(focus.search) <= 300
    assert "divides with // and rounds down" in focus.search
    assert focus.part == focus.search
    assert f"{len(question):,} characters" in focus.notice and "QUESTION_MAX_CHARS=300" in focus.notice


def test_repeated_sentences_add_nothing_new(index):
    question = "How does floor division round? " * 400
    focus = focus_question(question, 500, index.idf)
    assert focus.search == "How does floor division round?"


def test_a_long_question_of_unknown_words_is_searched_by_its_beginning(index):
    question = "zebra quokka " * 1000
    focus = focus_question(question, 200, index.idf)
    assert question.startswith(focus.search) and 0 < len(focus.search) <= 200


def test_no_limit_searches_every_question_whole(index):
    question = FILLER * 200
    assert focus_question(question, 0, index.idf).search == question


def test_a_sentence_longer_than_the_limit_is_cut_between_words():
    pieces = sentences_of("word " * 100, 42)
    assert all(len(p) <= 42 for p in pieces) and " ".join(pieces) == ("word " * 100).strip()
