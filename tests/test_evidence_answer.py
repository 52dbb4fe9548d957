"""The evidence design (ANSWER_DESIGN=evidence): the model names excerpts and phrases them; one judge decides.

Stand-in models reply in the JSON shape, choosing the excerpt that holds a word, so the tests
check the program's side on a real index and the real embedder: citations come from the
evidence, an answer its evidence does not back is set aside for the quotes, and output that is
malformed, empty or cut off falls back to the quotes. The last tests ask the packaged model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from answer_render import cited_numbers
from evidence_answer import (
    Draft,
    Excerpt,
    answer_schema,
    cited_answer,
    judge_draft,
    judge_text,
    partial_answer,
    read_draft,
)
from llm_handler import LLMBackend
from ollama_standin import OllamaStandin
from rag_system import RAGSystem

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

EXCERPT = re.compile(r"^\[(\d+)\] \(([^)]*)\)\n(.*?)(?=\n\n\[\d+\] \(|\n\nQuestion:)", re.M | re.S)


def excerpts_in(messages: list[dict[str, str]]) -> dict[int, str]:
    return {int(m.group(1)): m.group(3) for m in EXCERPT.finditer(messages[-1]["content"])}


class PicksExcerpt(LLMBackend):
    """Answers `reply` citing the excerpt that holds `word`; records the schema it was asked for."""

    name = "stand-in"

    def __init__(self, word: str, reply: str, answered: bool = True) -> None:
        self.word, self.reply, self.answered = word, reply, answered
        self.schemas: list[object] = []
        self.excerpts: dict[int, str] = {}

    def stream(self, messages, max_tokens=None, schema=None) -> Iterator[str]:
        self.schemas.append(schema)
        self.excerpts = excerpts_in(messages)
        ids = [n for n, text in self.excerpts.items() if self.word.lower() in text.lower()][:1]
        reply = json.dumps({"answered": self.answered, "evidence": ids, "answer": self.reply if self.answered else ""})
        yield from (reply[i : i + 7] for i in range(0, len(reply), 7))


class Writes(LLMBackend):
    name = "stand-in"

    def __init__(self, raw: str) -> None:
        self.raw = raw

    def stream(self, messages, max_tokens=None, schema=None) -> Iterator[str]:
        if self.raw:
            yield self.raw


@pytest.fixture
def harbour(make_settings, embedder):
    def build(llm: LLMBackend, files: dict[str, str] | None = None, **overrides) -> RAGSystem:
        settings = make_settings(**{"answer_design": "evidence", **overrides})
        for name, text in {"harbour.md": HANDBOOK, **(files or {})}.items():
            (settings.docs_dir / name).write_text(text, encoding="utf-8")
        rag = RAGSystem(settings, embedder=embedder, llm=llm)
        rag.index()
        return rag

    return build


def test_the_citations_are_the_passages_of_the_evidence_the_model_named(harbour):
    model = PicksExcerpt("pier 4", "Visiting boats moor at pier 4.")
    answer = harbour(model).ask("Where do visiting boats moor?")
    assert answer.set_aside is None and not answer.refused, answer.notice
    assert "pier 4" in answer.text
    quoted = {q["passage"] for q in answer.quotes}
    assert set(cited_numbers(answer.text, len(answer.passages))) == quoted and quoted
    assert all("pier 4" in q["text"] for q in answer.quotes), "the evidence named is what is quoted"
    schema = model.schemas[0]
    assert isinstance(schema, dict)
    assert schema["properties"]["evidence"]["items"]["enum"] == sorted(model.excerpts)


def test_an_answer_with_a_number_its_evidence_lacks_is_set_aside_for_the_quotes(harbour):
    answer = harbour(PicksExcerpt("07:30", "The harbour office opens at 08:15 on weekdays.")).ask("When does the office open?")
    assert answer.set_aside is not None and "08:15" in answer.set_aside
    assert "08:15" not in answer.text and "07:30" in answer.text, "the evidence stands as the answer"
    assert answer.notice and "set aside" in answer.notice


def test_an_answer_with_a_name_its_evidence_lacks_is_set_aside(harbour):
    answer = harbour(PicksExcerpt("payment", "It accepts `PayHarbour` cards only.")).ask("How can I pay for fuel?")
    assert answer.set_aside is not None
    assert "PayHarbour" not in answer.text


def test_a_reply_that_says_the_excerpts_do_not_answer_is_a_refusal(harbour):
    answer = harbour(PicksExcerpt("", "", answered=False)).ask("How much does a berth cost per night?")
    assert answer.refused and answer.kind == "refusal"


@pytest.mark.parametrize("raw", ['{"answered": true, "evidence": [1], "answer": "The office op', "", "Sure! The office opens early.", "[1, 2]"])
def test_malformed_empty_or_cut_off_output_falls_back_to_the_quotes(harbour, raw):
    answer = harbour(Writes(raw)).ask("When does the harbour office open?")
    assert answer.done and answer.error is None
    assert answer.set_aside is not None, "the model's output is set aside"
    assert "07:30" in answer.text, "the quotes stand as the answer"
    assert answer.notice


def test_ollama_is_asked_for_the_same_shape_and_its_broken_output_falls_back(harbour):
    with OllamaStandin(pieces=['{"answered": tr']) as ollama:
        answer = harbour(None, llm_backend="ollama", ollama_host=ollama.url).ask("When does the harbour office open?")
        sent = ollama.chat_requests[-1]
    assert sent["format"]["properties"]["evidence"]["items"]["enum"], "the schema goes to Ollama as `format`"
    assert answer.set_aside is not None and "07:30" in answer.text


def test_ollama_cut_off_mid_answer_falls_back_to_the_quotes(harbour):
    pieces = ['{"answered": true, ', '"evidence": [1], ', '"answer": "The office ', 'opens at 07:30."}']
    with OllamaStandin(pieces=pieces, drop_after=2) as ollama:
        answer = harbour(None, llm_backend="ollama", ollama_host=ollama.url).ask("When does the harbour office open?")
    assert answer.done and "07:30" in answer.text


def test_the_draft_streams_the_answer_field_only():
    raw = '{"answered": true, "evidence": [2], "answer": "Boats moor at \\"pier 4\\" and'
    assert partial_answer(raw) == 'Boats moor at "pier 4" and'
    assert partial_answer('{"answered": true, "evid') == ""
    assert partial_answer(raw + ' wait."}') == 'Boats moor at "pier 4" and wait.'


def test_the_judge_holds_the_answer_to_the_evidence_it_names():
    excerpts = [Excerpt(1, 1, "The office opens at 07:30."), Excerpt(2, 3, "Boats moor at pier 4.")]
    named_wrong = Draft(True, True, (2,), "The office opens at 07:30.")
    recited = judge_draft(named_wrong, excerpts, "When does the office open?")
    assert recited.shown and recited.evidence == (1,), "cited to the excerpt that holds it, not the one named"
    right = Draft(True, True, (1,), "It opens at 07:30.")
    assert judge_draft(right, excerpts, "When does the office open?").evidence == (1,)
    assert cited_answer(right.text, (1,), excerpts) == "It opens at 07:30 [1]."
    invented = Draft(True, True, (1,), "It opens at 06:45.")
    assert not judge_draft(invented, excerpts, "When does the office open?").shown, "no excerpt holds 06:45"
    copied = Draft(True, True, (2,), "Boats moor at pier 4.")
    off = judge_draft(copied, excerpts, "How much does a berth cost per night in winter?")
    assert not off.shown and off.off_question, "a copied excerpt that does not address the question is refused"
    unknown = read_draft('{"answered": true, "evidence": [9, 2], "answer": "x"}', excerpts)
    assert unknown.evidence == (2,)
    assert answer_schema(excerpts)["properties"]["evidence"]["items"]["enum"] == [1, 2]  # type: ignore[index]


class WritesFree(LLMBackend):
    """A free-text model: writes `reply`, with `[n]` standing for the number of the passage that holds `word`."""

    name = "stand-in"

    def __init__(self, word: str, reply: str) -> None:
        self.word, self.reply = word, reply

    def stream(self, messages, max_tokens=None, schema=None) -> Iterator[str]:
        assert schema is None, "the judged design asks for free text"
        blocks = re.split(r"\n(?=\[\d+\] )", messages[-1]["content"])
        holding = [m.group(1) for b in blocks if (m := re.match(r"\[(\d+)\] ", b)) and self.word.lower() in b.lower()]
        yield self.reply.replace("[n]", f"[{holding[0] if holding else 1}]")


BARGE = """# The bunker barge

The bunker barge brings diesel to boats at anchor outside the harbour. Call it on channel 9.
"""


def judged(harbour, word: str, reply: str, question: str):
    rag = harbour(WritesFree(word, reply), files={"barge.md": BARGE}, answer_design="judged")  # a second file: a second passage
    try:
        return rag.ask(question)
    finally:
        rag.close()


def test_judged_design_shows_a_backed_free_answer_and_recites_a_wrong_citation(harbour):
    answer = judged(harbour, "pier 4", "Visiting boats moor at pier 4 [n].", "Where do visiting boats moor?")
    assert answer.set_aside is None and not answer.refused, answer.notice
    cited = cited_numbers(answer.text, len(answer.passages))
    assert cited and all("pier 4" in answer.passages[n - 1].text for n in cited)
    both = "Where do visiting boats moor, and where do boats at anchor get diesel?"  # both files retrieved
    wrong = judged(harbour, "bunker", "Visiting boats moor at pier 4 [n].", both)
    fuel = [n for n, p in enumerate(wrong.passages, start=1) if "bunker" in p.text and "pier 4" not in p.text]
    assert fuel, "the model's wrong citation must name a passage that lacks the claim"
    assert wrong.set_aside is None, wrong.notice
    assert not set(cited_numbers(wrong.text, len(wrong.passages))) & set(fuel), "the wrong citation is gone"
    assert all("pier 4" in wrong.passages[n - 1].text for n in cited_numbers(wrong.text, len(wrong.passages))), "re-cited"


def test_judged_design_sets_aside_an_unbacked_sentence_and_an_answer_of_citations_only(harbour):
    answer = judged(harbour, "07:30", "The office opens at 07:30 [n]. It closes at 21:00 [n].", "When does the harbour office open and close?")
    assert answer.set_aside is not None and "21:00" in answer.set_aside and "21:00" not in answer.text
    empty = judged(harbour, "07:30", "[n]", "When does the harbour office open?")
    assert empty.set_aside is not None and "07:30" in empty.text, "the quotes stand"


def test_the_judge_of_free_text_holds_every_sentence_to_what_it_cites():
    passages = ["The office opens at 07:30. It closes at 18:00.", "Boats moor at pier 4."]
    question = "When does the office open?"
    assert judge_text("It opens at 07:30 [1].", passages, question).shown
    moved = judge_text("It opens at 07:30 [2].", passages, question)
    assert moved.shown and moved.text == "It opens at 07:30 [1].", "cited to the passage that holds it"
    assert not judge_text("It opens at 07:30 [1]. Boats pay 40 euros [2].", passages, question).shown
    assert not judge_text("[1]", passages, question).shown
    off = judge_text("Boats moor at pier 4 [2].", passages, "How much does a berth cost per night in winter?")
    assert off.off_question


@pytest.mark.slow
def test_the_packaged_model_answers_from_its_evidence_and_refuses_what_the_excerpts_lack(harbour):
    rag = harbour(None, llm_backend="llamacpp")
    listed = rag.ask("Which payment methods does the fuel dock accept?")
    shown = listed.text.lower()
    assert all(method in shown for method in ("cash", "card", "token")), listed.text
    assert set(cited_numbers(listed.text, len(listed.passages))) <= {q["passage"] for q in listed.quotes} or listed.set_aside is not None
    missing = rag.ask("How much does a berth cost per night?")
    assert missing.refused or missing.set_aside is not None, missing.text
