"""What the model writes, held to the passages: output that cannot stand falls back to the quotes.

Stand-in models write a fixed reply on a real index with the real embedder, so the tests check
the program's side: an empty reply, a reply of citations only, a claim the passages lack and a
reply cut off mid-answer all leave the verbatim quotes standing as the answer, with a notice and
no crash; a backed reply stands, cited. The one judge of a cited text (`judge_text`, which holds
a summary's sentences) re-cites a sentence to the passage that backs it. The last test asks the
packaged model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from answer_check import judge_text
from answer_render import cited_numbers
from answer_tidy import CUT_MARKER
from doc_types import Chunk
from embeddings import EmbeddingBackend
from errors import EmbeddingError
from llm_handler import LLMBackend
from ollama_standin import OllamaStandin
from rag_system import RAGSystem
from whole_document import SENTENCE_CHARS, OutlinePart, judge_summary, read_sentences

HANDBOOK = """# Harbour handbook

## Opening hours

The harbour office opens at 07:30 and closes at 18:00 on weekdays. On Sundays it stays closed.

## Berths

Visiting boats moor at pier 4. Boats longer than 12 metres must book a berth two days ahead.

## Fuel

The fuel dock sells diesel and petrol. It accepts three payment methods: cash, card and harbour tokens.

## Waste

Used oil and old batteries go to the blue container behind the office.
"""


class Writes(LLMBackend):
    """Writes `raw` in pieces of 7 characters; judges every question's quotes as answering it."""

    name = "stand-in"

    def __init__(self, raw: str) -> None:
        self.raw = raw

    def stream(self, messages, max_tokens=None, schema=None) -> Iterator[str]:
        yield from (self.raw[i : i + 7] for i in range(0, len(self.raw), 7))

    def yes_probability(self, messages) -> float:
        return 1.0


@pytest.fixture
def harbour(make_settings, embedder):
    built: list[RAGSystem] = []

    def build(llm: LLMBackend | None, **overrides) -> RAGSystem:
        settings = make_settings(**overrides)
        (settings.docs_dir / "harbour.md").write_text(HANDBOOK, encoding="utf-8")
        rag = RAGSystem(settings, embedder=embedder, llm=llm)
        rag.index()
        built.append(rag)
        return rag

    yield build
    for rag in built:
        rag.close()


def test_a_backed_answer_stands_with_citations_of_the_passage_that_holds_it(harbour):
    answer = harbour(Writes("Visiting boats moor at pier 4 [1].")).ask("Where do visiting boats moor?")
    assert answer.done and answer.set_aside is None and not answer.refused, answer.notice
    cited = cited_numbers(answer.text, len(answer.passages))
    assert cited and all("pier 4" in answer.passages[n - 1].text for n in cited)


@pytest.mark.parametrize(
    "raw", ["", "[1] [2]", "As quoted above [1].", "See the handbook [2].", "The harbour office opens at 06:45 [1].", "The office opens at 07:30 and closes at 21:00 [1]."]
)
def test_empty_citations_only_or_unbacked_output_falls_back_to_the_quotes(harbour, raw):
    answer = harbour(Writes(raw)).ask("When does the harbour office open?")
    assert answer.done and answer.error is None
    assert answer.set_aside is not None or answer.refused, answer.text
    assert "07:30" in answer.text, "the quotes stand as the answer"
    assert "06:45" not in answer.text and "21:00" not in answer.text
    assert answer.notice


class Counts(Writes):
    """Writes `raw` in pieces and counts the pieces the program took before it closed the stream."""

    def __init__(self, raw: str) -> None:
        super().__init__(raw)
        self.taken, self.closed = 0, False

    def stream(self, messages, max_tokens=None, schema=None) -> Iterator[str]:
        try:
            for piece in super().stream(messages, max_tokens, schema):
                self.taken += 1
                yield piece
        finally:
            self.closed = True


@pytest.mark.parametrize("wrong", ["The harbour office opens at 06:45 [1].", "Call `harbour --book` to book a berth [1]."])
def test_the_model_is_stopped_after_the_first_sentence_the_passages_contradict(harbour, wrong):
    """Whatever follows a wrong number or name, the draft is set aside for the quotes: generating it is
    only waiting. The model's stream is closed after the wrong sentence, which stays in what was set aside."""
    rest = (" It closes at 18:00 on weekdays and stays closed on Sundays [1]. Visiting boats moor at pier 4 [1]."
            " Boats longer than 12 metres must book a berth two days ahead [1]. The fuel dock sells diesel and petrol [1].")
    model = Counts(wrong + rest)
    answer = harbour(model).ask("When does the harbour office open?")
    assert answer.done and answer.set_aside is not None, answer.text
    assert answer.set_aside.startswith(wrong) and "Sundays" not in answer.set_aside
    assert model.closed and model.taken <= (len(wrong) + 30) // 7, "the stream was read on after the wrong sentence"
    assert "07:30" in answer.text and answer.notice


def test_a_doubted_question_whose_draft_names_what_no_passage_holds_is_refused_when_the_model_is_stopped(harbour):
    """A question naming what no document names ("pytest") shows no quotes until the model has written:
    a draft with a wrong name is then refused, so the model is stopped after that sentence there too."""
    wrong = "Run `pytest --berth` to book a berth two days ahead [1]."
    rest = " Boats longer than 12 metres must book a berth two days ahead [1]. Visiting boats moor at pier 4 [1]." * 3
    model = Counts(wrong + rest)
    answer = harbour(model).ask("How do visiting boats at pier 4 book a berth with pytest?")
    assert answer.relevance.model_decides, answer.relevance
    assert answer.done and answer.refused and "--berth" not in answer.text, answer.text
    assert model.closed and model.taken <= (len(wrong) + 30) // 7, "the stream was read on after the wrong sentence"


class NoModel(EmbeddingBackend):
    """An embedding model that cannot load: docqa answers from keyword search alone."""

    name = "missing"

    def verify(self) -> None:
        raise EmbeddingError("no embedding model here")


def test_without_the_embedding_model_nothing_can_replace_a_draft_so_it_is_read_to_its_end(make_settings):
    """Keyword search alone has no quotes to set a draft aside for: stopping it would leave half an answer."""
    raw = "The harbour office opens at 06:45 [1]. It closes at 18:00 on weekdays [1]. On Sundays it stays closed [1]."
    model = Counts(raw)
    settings = make_settings()
    (settings.docs_dir / "harbour.md").write_text(HANDBOOK, encoding="utf-8")
    rag = RAGSystem(settings, embedder=NoModel(), llm=model)
    try:
        assert not rag.vectors.available
        rag.index()
        answer = rag.ask("When does the harbour office open?")
    finally:
        rag.close()
    assert answer.done and model.taken == -(-len(raw) // 7) and answer.text.endswith("closed [1]."), answer.text


def test_a_right_draft_is_read_to_its_end(harbour):
    raw = "The harbour office opens at 07:30 [1]. It closes at 18:00 on weekdays [1]. On Sundays it stays closed [1]."
    model = Counts(raw)
    answer = harbour(model).ask("When does the harbour office open?")
    assert answer.set_aside is None and answer.text.endswith("closed [1].") and model.taken == -(-len(raw) // 7)


def test_ollama_cut_off_mid_answer_falls_back_to_the_quotes(harbour):
    pieces = ["The harbour office ", "opens at ", "07:30 and closes at 18:00 [1]."]
    with OllamaStandin(pieces=pieces, drop_after=2) as ollama:
        answer = harbour(None, llm_backend="ollama", ollama_host=ollama.url).ask("When does the harbour office open?")
    assert answer.done and answer.error
    assert answer.set_aside == "The harbour office opens at", "the model's unchecked words are set aside, kept"
    assert "07:30" in answer.text and answer.notice and "stopped" in answer.notice


def test_the_judge_of_a_cited_text_holds_every_sentence_to_what_it_cites():
    passages = ["The office opens at 07:30. It closes at 18:00.", "Boats moor at pier 4."]
    assert judge_text("It opens at 07:30 [1].", passages).shown
    moved = judge_text("It opens at 07:30 [2].", passages)
    assert moved.shown and moved.text == "It opens at 07:30 [1].", "cited to the passage that holds it"
    assert not judge_text("It opens at 07:30 [1]. Boats pay 40 euros [2].", passages).shown
    assert not judge_text("[1]", passages).shown
    assert not judge_text("Berths cost forty euros per night in winter [2].", passages).shown


@pytest.mark.slow
def test_a_summary_sentence_keeps_the_part_it_names_when_that_part_backs_it_as_well_as_any():
    """Long parts of a large document each cover a sentence's words; the part the model named stays
    its citation, and only a part that backs it worse is moved to the one that backs it best."""
    texts = [HANDBOOK, HANDBOOK.replace("Harbour", "Marina"), "## Fees\n\nThe harbour office sells fuel tokens."]
    parts = [OutlinePart(n, (), (), Chunk(f"c{n}", text, "h.md", "h", n), text) for n, text in enumerate(texts, start=1)]
    sentence = "Visiting boats moor at pier 4."

    assert judge_summary([(2, sentence)], parts).kept == (f"{sentence[:-1]} [2].",)
    assert judge_summary([(1, sentence)], parts).kept == (f"{sentence[:-1]} [1].",)
    assert judge_summary([(3, sentence)], parts).kept == (f"{sentence[:-1]} [1].",)


def test_the_packaged_model_lists_every_item_and_refuses_what_the_passages_lack(harbour):
    rag = harbour(None, llm_backend="llamacpp")
    listed = rag.ask("Which payment methods does the fuel dock accept?")
    shown = listed.text.lower()
    assert all(method in shown for method in ("cash", "card", "token")), listed.text
    missing = rag.ask("How much does a berth cost per night?")
    assert missing.refused or missing.set_aside is not None, missing.text


def test_a_summary_sentence_stopped_at_its_length_limit_ends_at_a_whole_word():
    # The grammar's maxLength stops a long copied sentence mid-word; it is shown cut at a word, marked as cut.
    long = ("abi is the ABI to use; this is needed because in some cases the layout depends on the ABI, " * 4)[:SENTENCE_CHARS]
    raw = json.dumps({"sentences": [{"part": 1, "sentence": "A short sentence."}, {"part": 2, "sentence": long}]})
    (_, short), (part, cut) = read_sentences(raw)
    assert short == "A short sentence." and part == 2
    assert cut == long.rsplit(" ", 1)[0].rstrip(" ,;:") + CUT_MARKER
    whole = ("A complete sentence that is exactly as long as the limit allows, " * 5)[: SENTENCE_CHARS - 1].rstrip() + "."
    whole = whole.ljust(SENTENCE_CHARS - 1, "x")[: SENTENCE_CHARS - 1] + "."
    assert read_sentences(json.dumps({"sentences": [{"part": 1, "sentence": whole}]})) == [(1, whole)]  # ended: not cut
