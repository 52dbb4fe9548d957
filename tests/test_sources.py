"""The source list under an answer: passages far from the question are left out and counted, the
cited ones come first, and every [n] names the n-th source everywhere the answer is shown.
"""

from __future__ import annotations

import re
import shutil
from typing import Any, Iterator

from answer_render import answer_as_text, answer_markdown, citations
from answer_sources import arrange_sources, streamed_order, streamed_sources_text
from answer_types import Answer, ShownQuote
from conftest import ROOT, rag_with
from doc_types import Chunk
from llm_handler import LLMBackend
from rag_system import RAGSystem
from retriever import Passage
from service import answer_summary
from vector_store import NullVectorStore
from web_html import sources_html

UNRELATED = ROOT / "licenses" / "Qwen2.5-Coder-LICENSE.txt"  # a licence: nothing a user of docqa asks about


def passage(source: str, text: str, score: float, index: int = 0) -> Passage:
    return Passage([Chunk(f"{source}-{index}", text, source, source, index)], score, {"bm25": index + 1})


def first_citations(text: str) -> list[int]:
    return list(dict.fromkeys(int(m[1]) for m in citations(text)))


def test_a_question_about_one_document_lists_no_passage_of_an_unrelated_one(make_settings, embedder):
    """Real documents, real embedder: the licence passages retrieval fills the k slots with are
    weak matches, counted and one click away; the passage holding the answer is listed."""
    settings = make_settings()
    shutil.copy(ROOT / "documents" / "docqa-user-guide.pdf", settings.docs_dir / "docqa-user-guide.pdf")
    shutil.copy(UNRELATED, settings.docs_dir / UNRELATED.name)
    rag = rag_with(settings, embedder)
    try:
        rag.index()
        question = "which python version does it need"
        retrieved = rag.retrieve_context(question)
        assert any(p.source == UNRELATED.name for p in retrieved), "the licence fills the slots past MAX_CHUNKS_PER_FILE"
        answer = Answer(question=question, passages=retrieved, done=True)
        arrange_sources(answer, rag.settings)
    finally:
        rag.close()
    assert answer.passages and all(p.source != UNRELATED.name for p in answer.passages)
    assert any(p.source == "docqa-user-guide.pdf" and 2 in p.pages for p in answer.passages), "the answer's page is listed"
    weak = [p for p in answer.more_passages if p.source == UNRELATED.name]
    assert weak and len(answer.passages) + len(answer.more_passages) == len(retrieved)
    html = sources_html(answer)
    assert f"{len(answer.more_passages)} more weak match" in html and "<details class='docqa-weak'>" in html
    assert html.index("<details class='docqa-weak'>") < html.index(UNRELATED.name), "the licence only inside the collapsed block"
    json = answer.to_json()["sources"]
    assert [s["weak"] for s in json] == [False] * len(answer.passages) + [True] * len(answer.more_passages)


def test_cited_passages_are_listed_first_and_every_citation_is_renumbered_to_the_list():
    passages = [
        passage("a.md", "Alpha is the first letter.", 1.0, 0),
        passage("b.md", "Beta follows alpha.", 0.9, 1),
        passage("c.md", "Gamma is third.", 0.8, 2),
        passage("far.md", "Unrelated licence terms.", 0.1, 3),
    ]
    answer = Answer(
        question="q", passages=list(passages), done=True,
        text="Gamma is third [3]. Beta follows alpha [2]. Code `xs[1]` stays.",
        quotes=[ShownQuote(3, "Gamma is third.", "c.md")],
        highlights={3: ["Gamma is third."], 2: ["Beta follows alpha."]},
        unsupported=["Beta follows alpha [2]."],
        set_aside="Alpha [1] and gamma [3].",
    )
    from config import load_settings

    arrange_sources(answer, load_settings(environ={}))
    assert [p.source for p in answer.passages] == ["c.md", "b.md", "a.md"]
    assert [p.source for p in answer.more_passages] == ["far.md"]
    assert answer.text == "Gamma is third [1]. Beta follows alpha [2]. Code `xs[1]` stays."
    assert first_citations(answer.text) == [1, 2], "the text cites the list from its top"
    assert answer.quotes[0].passage == 1 and answer.highlights == {1: ["Gamma is third."], 2: ["Beta follows alpha."]}
    assert answer.unsupported == ["Beta follows alpha [2]."] and answer.set_aside == "Alpha [3] and gamma [1]."
    # every rendering names the same passage by the same number
    assert "[\\[1\\]](#source-1)" in answer_markdown(answer)
    assert "id='source-1'><div class='where'>[1] c.md" in sources_html(answer)
    assert "[1] c.md" in answer_as_text(answer) and "1 more weak match left out" in answer_as_text(answer)
    summary = answer_summary(answer)
    assert [c["source"] for c in summary["citations"]] == ["c.md", "b.md", "a.md"]
    assert [(c["n"], c["source"]) for c in summary["weak_matches"]] == [(4, "far.md")]
    # a front end that printed the text as it streamed lists the sources by the numbers it printed
    assert [p.source for p in streamed_order(answer)] == ["a.md", "b.md", "c.md", "far.md"]
    assert "[3] c.md" in streamed_sources_text(answer, "Gamma is third [3].")


class CitesFileByNumber(LLMBackend):
    """Cites the passage of `cited` (a file name) by the number the prompt gave it, then the first passage."""

    name = "stand-in"

    def __init__(self, cited: str) -> None:
        self.cited = cited

    def stream(self, messages: Any, max_tokens: int | None = None, schema: Any = None) -> Iterator[str]:
        numbers = dict(re.findall(r"^\[(\d+)\] \(([\w.-]+)", messages[-1]["content"], re.MULTILINE))
        number = next(n for n, name in numbers.items() if name.startswith(self.cited))
        yield f"See the notes on gardening [{number}] and also [1]."


def test_an_answer_citing_a_lower_passage_lists_it_first_with_the_text_renumbered(make_settings, embedder):
    """Keyword-only mode, so the stand-in's text is shown as written: the passage it cites first is source 1."""
    settings = make_settings()
    (settings.docs_dir / "roses.md").write_text("# Roses\n\nRoses need pruning in spring and gardening gloves.\n", encoding="utf-8")
    (settings.docs_dir / "tulips.md").write_text("# Tulips\n\nTulips are planted in autumn, a gardening classic.\n", encoding="utf-8")
    rag = RAGSystem(settings, embedder=embedder, vectors=NullVectorStore(), llm=CitesFileByNumber("tulips"))
    try:
        rag.index()
        order = [p.source for p in rag.retrieve_context("When do I prune roses in gardening?")]
        answer = rag.ask("When do I prune roses in gardening?")
    finally:
        rag.close()
    assert order[0] == "roses.md" and "tulips.md" in order, order
    assert answer.passages[0].source == "tulips.md", "the first cited passage heads the list"
    assert answer.text.startswith("See the notes on gardening [1] and also [2]")
    assert answer.passages[1].source == "roses.md"
    assert answer.to_json()["sources"][0]["source"] == "tulips.md"
