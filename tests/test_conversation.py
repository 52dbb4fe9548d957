"""Follow-ups become standalone questions before retrieval; the history the model sees is bounded.

The word rule is tested alone; then whole answers
with the real packaged models (all-MiniLM-L6-v2 and SmolLM2-135M through llama.cpp) and
with Ollama played by tests/ollama_standin.py, whose requests show what the model was sent.
Whole-document and multi-part questions share the same small indexed folder.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from answer_render import cited_numbers
from config import Settings
from conftest import module_settings, rag_with
from conversation import (
    HISTORY_ANSWER_CHARS,
    bounded_history,
    looks_like_follow_up,
    make_standalone,
    rewrite_by_rule,
)
from ollama_standin import OllamaStandin
from web_html import source_card_html
from whole_document import DRAFT_LABEL, split_parts

LISTS = """# Lists

A list is a sequence of values, and the values can be any type. You create a list by putting
its elements in square brackets, for example cheeses = ['Cheddar', 'Edam', 'Gouda'].

Lists are mutable: you can change an element by assigning to an index, as in numbers[1] = 5.
The sort method sorts a list in place and returns None.
"""

TUPLES = """# Tuples

A tuple is a sequence of values much like a list, but tuples are immutable.
You create a tuple with a comma-separated list of values, usually enclosed in parentheses.
To create a tuple with a single element, you have to include a final comma: t1 = 'a',
A single value in parentheses is not a tuple.

## Tuple assignment

Tuple assignment swaps two variables in one statement: a, b = b, a.
The built-in function divmod returns a tuple of two values, the quotient and the remainder.

## Tuples as keys

Because tuples are immutable they are hashable, so a tuple can be used as a dictionary key.
"""

DICTIONARIES = """# Dictionaries

A dictionary is a mapping from keys to values. The keys must be hashable.
The in operator on a dictionary takes about the same time however many items it holds,
because dictionaries are implemented with a hashtable; on a list it searches in order.
"""

HISTORY = [
    {"role": "user", "content": "How do I create a list in Python?"},
    {"role": "assistant", "content": "Put the elements in square brackets [1]."},
]


def rag_settings(home: Path, **overrides: Any) -> Settings:
    base = {
        "llm_backend": "llamacpp",
        "llm_max_tokens": 16,
        "llamacpp_context": 2048,
        "chunk_size": 400,
        "chunk_overlap": 40,
        "top_k": 3,
    }
    return module_settings(home, **{**base, **overrides})


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx honours proxy variables; the stand-in is on 127.0.0.1 and must be reached directly."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def docs_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("conversation")
    docs = home / "documents"
    docs.mkdir()
    (docs / "lists.md").write_text(LISTS)
    (docs / "tuples.md").write_text(TUPLES)
    (docs / "dictionaries.md").write_text(DICTIONARIES)
    return home


def open_rag(settings: Settings, embedder: Any) -> Any:
    rag = rag_with(settings, embedder)
    report = rag.index()
    assert not report.failed
    return rag


@pytest.fixture(scope="module")
def embedded_rag(docs_home: Path, embedder: Any) -> Iterator[Any]:
    """The small folder answered by the real packaged SmolLM2-135M."""
    rag = open_rag(rag_settings(docs_home), embedder)
    yield rag
    rag.close()


@pytest.fixture(scope="module")
def ollama() -> Iterator[OllamaStandin]:
    with OllamaStandin() as server:
        yield server


@pytest.fixture(scope="module")
def ollama_rag(docs_home: Path, embedder: Any, ollama: OllamaStandin) -> Iterator[Any]:
    """The same folder, its own index, answered by the Ollama stand-in."""
    settings = rag_settings(docs_home, db_dir=docs_home / "data-ollama", llm_backend="ollama", ollama_host=ollama.url)
    rag = open_rag(settings, embedder)
    yield rag
    rag.close()


def standin_answers(server: OllamaStandin, pieces: list[str]) -> None:
    server.pieces = pieces
    server.requests.clear()


# --- The rules, alone -------------------------------------------------------------------------


def test_short_leaning_questions_are_follow_ups_and_self_contained_ones_are_not() -> None:
    for question in ["and what about tuples?", "What about dictionaries?", "why are they immutable?", "And deepcopy?", "why?"]:
        assert looks_like_follow_up(question, HISTORY), question
    for question in ["What is a tuple?", "How do I create a tuple that holds just one element?"]:
        assert not looks_like_follow_up(question, HISTORY), question
    assert not looks_like_follow_up("and what about tuples?", []), "no history, nothing to follow"


def test_a_pronoun_after_a_name_the_question_gives_points_inside_the_question() -> None:
    # Seen in the browser: after another question, this was searched as
    # "what is TOP_K set to if I don't change it (small model comes built called two)?"
    assert not looks_like_follow_up("what is TOP_K set to if I don't change it", HISTORY)
    assert not looks_like_follow_up("what does // do when I give it floats?", HISTORY)
    assert looks_like_follow_up("how do I raise it above CHUNK_SIZE?", HISTORY), "the pronoun comes first: it points back"
    for dotted in ["What does str.split return when its separator is missing?", "Which key does json.dumps sort by if I ask it to?",
                   "How does os.path.join() treat its absolute arguments?"]:
        assert not looks_like_follow_up(dotted, HISTORY), "a dotted name is a name too: " + dotted
    assert looks_like_follow_up("Is it faster?", HISTORY) and looks_like_follow_up("What does it return?", HISTORY)


def test_its_and_their_belong_to_the_subject_the_question_names() -> None:
    # The dev pool's standalone questions asked after another: 5 of 256 were searched as follow-ups by "its" or "their".
    for question in ["Where does time write its statistics by default?", "Do namespaces get their own indentation?",
                     "Must contributors use their legal names?", "How does the cache store its entries on disk?"]:
        assert not looks_like_follow_up(question, HISTORY), question
    for question in ["what's its default?", "how do I change its port?", "can I rename their files?", "Is its size fixed?"]:
        assert looks_like_follow_up(question, HISTORY), "the asker is the subject: it points back: " + question


def test_there_as_in_is_there_points_at_nothing_earlier() -> None:
    # Seen in the browser: "Which commands are there?" after a question about the chunk size was
    # searched as "Which commands are there (default chunk size)?".
    for question in ["Which commands are there?", "Is there a size limit for files?", "there are two settings, which wins?"]:
        assert not looks_like_follow_up(question, HISTORY), question
    assert looks_like_follow_up("How do I get there?", HISTORY), "a place pointed at is still a follow-up"


def test_that_starting_a_clause_points_at_nothing_earlier() -> None:
    # Seen in the browser: searched as "What is the small model that comes built in called (two commands set up run docqa)?"
    assert not looks_like_follow_up("What is the small model that comes built in called?", HISTORY)
    assert looks_like_follow_up("is that true for lists too?", HISTORY)
    assert looks_like_follow_up("how does that work?", HISTORY)


def test_word_rule_swaps_in_the_new_topic_or_adds_the_earlier_one(embedder: Any) -> None:
    assert rewrite_by_rule("and what about tuples?", "How do I create a list in Python?", embedder) == (
        "How do I create a tuples in Python?"
    )
    assert rewrite_by_rule("And deepcopy?", "What does copy.copy do?", embedder) == "What does deepcopy do?"
    assert rewrite_by_rule("why are they immutable?", "What is a tuple?", embedder) == "why are they immutable (tuple)?"
    # A topic sharing its noun with the earlier question replaces that noun and the word before it.
    # Seen with bench/follow_ups.py --answers: "What is a fruitful a void function?" was answered about fruitful ones.
    assert rewrite_by_rule("and a void function?", "What is a fruitful function?", embedder) == "What is a void function?"
    assert rewrite_by_rule("what about a deep copy?", "How do I make a shallow copy of a list?", None) == (
        "How do I make a deep copy of a list?"
    )


def test_one_standing_for_an_earlier_noun_makes_a_follow_up() -> None:
    """Seen with bench/follow_ups.py --answers: "when do I need the deep one?" was searched as typed and refused."""
    assert looks_like_follow_up("when do I need the deep one?", HISTORY)
    assert looks_like_follow_up("which one is faster?", HISTORY)
    assert not looks_like_follow_up("How do I make a tuple with one element?", HISTORY), "one names its own noun"
    assert not looks_like_follow_up("How can I get the ones digit of a number?", HISTORY)


def test_earlier_answers_reach_the_model_shortened() -> None:
    history = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "A long answer. " * 100}]
    kept = bounded_history(history, max_turns=3, max_tokens=10_000)
    assert kept[0]["content"] == "q", "questions are kept whole"
    assert len(kept[1]["content"]) <= HISTORY_ANSWER_CHARS and kept[1]["content"].endswith("…")


def test_history_keeps_the_latest_whole_turns_within_both_bounds() -> None:
    history = []
    for n in range(1, 6):
        history += [{"role": "user", "content": f"question {n}"}, {"role": "assistant", "content": f"answer {n} [1]"}]

    assert bounded_history(history, max_turns=2, max_tokens=1000) == [
        {"role": "user", "content": "question 4"},
        {"role": "assistant", "content": "answer 4"},
        {"role": "user", "content": "question 5"},
        {"role": "assistant", "content": "answer 5"},
    ]
    assert [m["content"] for m in bounded_history(history, max_turns=5, max_tokens=5)] == ["question 5", "answer 5"]
    long_answer = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x" * 10_000}]
    kept = bounded_history(long_answer, max_turns=3, max_tokens=100)
    assert sum(len(m["content"]) for m in kept) <= 400 and kept[-1]["content"].endswith("…")
    assert bounded_history(history, max_turns=0, max_tokens=1000) == []


# --- Whole answers ----------------------------------------------------------------------------


def test_follow_up_is_made_standalone_before_retrieval_with_the_embedded_model(embedded_rag: Any) -> None:
    answer = embedded_rag.ask("and what about tuples?", history=HISTORY)

    assert answer.done and not answer.error, answer.error
    assert answer.standalone_question and "tuple" in answer.standalone_question.lower()
    assert "creat" in answer.standalone_question.lower(), "the earlier question's subject stays"
    assert answer.passages[0].source == "tuples.md"
    assert answer.timings.rewrite_s is not None
    assert answer.to_json()["standalone_question"] == answer.standalone_question


def test_follow_up_asked_of_ollama_is_searched_standalone_and_the_model_sees_bounded_history(
    docs_home: Path, ollama: OllamaStandin, embedder: Any
) -> None:
    history = [{"role": "user", "content": "What is a dictionary?"}, {"role": "assistant", "content": "A mapping [1]."}, *HISTORY]
    settings = rag_settings(
        docs_home, db_dir=docs_home / "data-bounded", llm_backend="ollama", ollama_host=ollama.url, history_max_turns=1
    )
    bounded = open_rag(settings, embedder)
    try:
        standin_answers(ollama, ["A tuple is written with commas [1]."])
        answer = bounded.ask("and what about tuples?", history=history)
    finally:
        bounded.close()

    assert answer.standalone_question == "How do I create a tuples in Python?", "the word rule: no model call to rewrite"
    answer_request = ollama.chat_requests[0]  # a judge's question may follow
    roles = [m["role"] for m in answer_request["messages"]]
    assert roles == ["system", "user", "assistant", "user"], "one earlier turn, then the question"
    assert answer_request["messages"][1]["content"] == "How do I create a list in Python?"
    assert answer_request["messages"][2]["content"] == "Put the elements in square brackets.", "old citations dropped"
    assert "Question: How do I create a tuples in Python?\n" in answer_request["messages"][3]["content"]
    assert answer.passages[0].source == "tuples.md"


def test_a_follow_up_pointing_back_keeps_the_earlier_subject(ollama_rag: Any, ollama: OllamaStandin) -> None:
    standin_answers(ollama, ["The sort method sorts a list in place [1]."])

    answer = ollama_rag.ask("and how do I sort it?", history=HISTORY)

    assert answer.standalone_question and "list" in answer.standalone_question.lower()
    assert "sort" in answer.standalone_question.lower()
    assert answer.passages[0].source == "lists.md"


def test_previous_answer_repeated_word_for_word_is_not_shown_as_the_new_answer(ollama_rag: Any, ollama: OllamaStandin) -> None:
    """Issue 15: "and what happens if I delete it?" got the previous answer again."""
    before = "You create a list by putting its elements in square brackets [1]."
    history = [{"role": "user", "content": "How do I create a list in Python?"}, {"role": "assistant", "content": before}]
    standin_answers(ollama, [before])

    answer = ollama_rag.ask("and what happens if I sort it?", history=history)

    assert answer.done and not answer.error, answer.error
    assert answer.set_aside == before and "repeated its earlier answer" in (answer.notice or "")
    assert before not in answer.text and answer.quotes, "the quotes for this question stand instead"


def test_repeated_previous_answer_is_flagged_in_keyword_only_mode(docs_home: Path, embedder: Any, ollama: OllamaStandin) -> None:
    """Without the embedding model there are no quotes to stand in: the user is told instead."""
    from rag_system import RAGSystem
    from vector_store import NullVectorStore

    before = "You create a list by putting its elements in square brackets [1]."
    history = [{"role": "user", "content": "How do I create a list in Python?"}, {"role": "assistant", "content": before}]
    standin_answers(ollama, [before])
    settings = rag_settings(docs_home, db_dir=docs_home / "data-keywords", llm_backend="ollama", ollama_host=ollama.url)
    rag = RAGSystem(settings, embedder=embedder, vectors=NullVectorStore())
    try:
        rag.index()
        answer = rag.ask("and what happens if I sort it?", history=history)
    finally:
        rag.close()

    assert answer.passages and "repeated its earlier answer" in (answer.notice or "")


def test_standalone_question_is_not_rewritten(ollama_rag: Any, ollama: OllamaStandin) -> None:
    standin_answers(ollama, ["A tuple is an immutable sequence of values [1]."])

    answer = ollama_rag.ask("How do I create a tuple with a single element?", history=HISTORY)

    assert answer.standalone_question is None and answer.timings.rewrite_s is None
    assert len(ollama.chat_requests) == 1
    roles = [m["role"] for m in ollama.chat_requests[0]["messages"]]
    assert roles == ["system", "user"], "asked as if alone: the earlier turns only distract the model"


def test_the_rule_needs_no_model(embedder: Any) -> None:
    rewrite = make_standalone("what about tuples?", HISTORY, embedder=embedder)
    assert rewrite is not None and "tuples" in rewrite
    assert make_standalone("How do I create a tuple with a single element?", HISTORY, embedder=embedder) is None


# --- Whole-document and multi-part questions --------------------------------------------------


def test_document_list_question_is_answered_from_the_index(ollama_rag: Any, ollama: OllamaStandin) -> None:
    standin_answers(ollama, ["never asked"])

    answer = ollama_rag.ask("What documents do you have?")

    assert answer.kind == "document_list" and not answer.passages
    assert all(name in answer.text for name in ("lists.md", "tuples.md", "dictionaries.md"))
    assert answer.text.startswith("3 documents are indexed")
    assert ollama.chat_requests == []


def stream_summary_of(rag: Any, ollama: OllamaStandin, question: str) -> tuple[list[tuple[str, int]], Any]:
    """Each update's text with the number of model calls made by then; and the finished answer."""
    updates = []
    for answer in rag.stream_answer(question):
        updates.append((answer.text, len(ollama.chat_requests)))
    return updates, answer


def summary_reply(*sentences: tuple[int, str]) -> list[str]:
    """The JSON the summary's schema asks for, in pieces of 20 characters, as a model streams it."""
    raw = json.dumps({"sentences": [{"part": part, "sentence": text} for part, text in sentences]})
    return [raw[i : i + 20] for i in range(0, len(raw), 20)]


def test_summary_shows_the_outline_before_the_model_is_called_then_calls_it_once(ollama_rag: Any, ollama: OllamaStandin) -> None:
    parts = split_parts(ollama_rag.keywords.chunks_of_source("tuples.md"), ollama_rag.settings.summary_max_parts)
    assert len(parts) >= 2, "the file must need more than one part"
    keys = next(n for n, part in enumerate(parts, start=1) if any("dictionary key" in c.text for c in part))
    standin_answers(ollama, summary_reply((1, "Tuples are immutable sequences of values."), (keys, "A tuple can be a dictionary key.")))

    updates, answer = stream_summary_of(ollama_rag, ollama, "Summarize tuples.md")

    outline, calls = updates[0]
    assert calls == 0, "the outline needs no model"
    lines = [line for line in outline.splitlines() if line.startswith("- ")]
    assert [cited_numbers(line, 99) for line in lines] == [[n] for n in range(1, len(parts) + 1)], "one line per part"
    assert len(ollama.chat_requests) == 1, "one model call, not one per part"
    request = ollama.chat_requests[0]
    assert request["format"]["properties"]["sentences"]["items"]["properties"]["part"]["enum"] == list(range(1, len(parts) + 1))
    prompt = request["messages"][-1]["content"]
    assert all(f"[{n}]" in prompt for n in range(1, len(parts) + 1)) and len(prompt) < 4000
    drafts = [text for text, _ in updates[1:-1] if DRAFT_LABEL in text]
    assert drafts and drafts[0].startswith(outline) and "Tuples are immutable sequences" in drafts[-1], "the draft streams below the outline"
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(drafts)), "it only grows: a terminal prints it as it comes"
    assert answer.done and answer.kind == "summary" and not answer.error and not answer.notice
    summary, _, below = answer.text.partition("\n\n")
    assert summary == f"Tuples are immutable sequences of values [1]. A tuple can be a dictionary key [{keys}]."
    assert below.startswith("Outline of tuples.md") and all(line in below for line in lines), "the outline stays below"
    assert [p.source for p in answer.passages] == ["tuples.md"] * len(parts)
    card = source_card_html(2, answer.passages[1], [])
    assert "part 2 of the document" in card and "score" not in card, "no search scored a part: its card says which part it is"
    for n, part in enumerate(parts, start=1):  # each citation opens the chunk of its part that holds the key sentence
        assert answer.passages[n - 1].first in part
        key = answer.highlights[n][0]
        assert key in " ".join(answer.passages[n - 1].text.split()) and key.rstrip(".") in lines[n - 1]


def test_summary_sentences_not_backed_by_the_parts_they_cite_are_dropped(ollama_rag: Any, ollama: OllamaStandin) -> None:
    standin_answers(ollama, summary_reply(
        (1, "A tuple is a sequence of values much like a list."),
        (1, "Tuples were added to Python in 1991."),  # a number no part gives
        (2, "Tuples are kept in `tuple_cache`."),  # a name no part gives
        (9, "Tuples are the best sequences."),  # a part there is not
        (1, "Tuples are faster than lists and use less memory."),  # words no part holds
        (1, "Because tuples are hashable, a tuple can be used as a dictionary key."),  # another part holds it
    ))
    parts = split_parts(ollama_rag.keywords.chunks_of_source("tuples.md"), ollama_rag.settings.summary_max_parts)
    keys = next(n for n, part in enumerate(parts, start=1) if any("dictionary key" in c.text for c in part))

    answer = ollama_rag.ask("Summarize tuples.md")

    summary, _, below = answer.text.partition("\n\n")
    assert summary == (
        f"A tuple is a sequence of values much like a list [1]. "
        f"Because tuples are hashable, a tuple can be used as a dictionary key [{keys}]."
    ), "a sentence citing a neighbouring part is re-cited to the part that holds it"
    assert below.startswith("Outline of tuples.md") and keys != 1
    assert answer.notice and answer.notice.startswith("4 of 6 sentences") and "1991" in answer.notice and "cites no part" in answer.notice
    assert "tuple_cache" not in answer.text and "best" not in answer.text and "memory" not in answer.text


@pytest.mark.parametrize(
    "pieces, drop_after, why",
    [
        (summary_reply((9, "Tuples are the best sequences.")), None, "cites no part"),
        (summary_reply((1, "Tuples were added in 1991.")), None, "1991"),
        (["Tuples are immutable [1]."], None, "could not be read"),
        ([], None, "wrote no summary"),
        (summary_reply((1, "Tuples are immutable.")), 1, "stopped"),
    ],
    ids=["uncited", "unbacked", "not-json", "empty", "model-fails"],
)
def test_outline_stands_with_a_note_when_no_summary_sentence_survives(
    ollama_rag: Any, ollama: OllamaStandin, pieces: list[str], drop_after: int | None, why: str
) -> None:
    standin_answers(ollama, pieces)
    ollama.drop_after = drop_after
    try:
        answer = ollama_rag.ask("Summarize tuples.md")
    finally:
        ollama.drop_after = None

    assert answer.done and answer.kind == "summary"
    assert answer.text.startswith("Outline of tuples.md, from its headings and key sentences:"), answer.text
    assert cited_numbers(answer.text, 99) == list(range(1, len(answer.passages) + 1))
    assert answer.notice and why in answer.notice and "outline" in answer.notice


@pytest.mark.slow
def test_real_model_summarises_a_small_file_from_its_outline(docs_home: Path, embedder: Any) -> None:
    """The packaged model reads the outline once; what it writes is judged, or the outline stands."""
    rag = open_rag(rag_settings(docs_home, db_dir=docs_home / "data-summary", llm_max_tokens=120), embedder)
    try:
        answer = rag.ask("Summarize tuples.md")
    finally:
        rag.close()

    assert answer.done and answer.kind == "summary" and not answer.error, answer.error
    summary, _, below = answer.text.partition("Outline of tuples.md")
    assert below, "the outline is part of the answer"
    cited = cited_numbers(summary, len(answer.passages))
    assert cited or answer.notice, "a paragraph that stands cites its parts; else the note says why it was set aside"
    assert "tupl" in summary.lower() or answer.notice


def test_a_two_part_question_finds_passages_for_both_parts(ollama_rag: Any, ollama: OllamaStandin) -> None:
    standin_answers(ollama, ["Lists use brackets [1] and tuples need a final comma [2]."])

    answer = ollama_rag.ask("How do I create a list with square brackets, and how do I create a tuple with one element?")

    assert {"lists.md", "tuples.md"} <= {p.source for p in answer.passages}


def test_eval_in_chat_asks_each_question_after_the_ones_before_it(ollama_rag: Any, ollama: OllamaStandin) -> None:
    """`eval --answers --in-chat`: the measure of a chat of several questions; alone, a follow-up has nothing to lean on."""
    from evaluation import score_answers

    items = [
        {"id": "q1", "question": "How do I create a list in Python?", "must_contain": ["brackets"]},
        {"id": "q2", "question": "and what about tuples?", "must_contain": []},
    ]
    standin_answers(ollama, ["Put the elements in square brackets [1]."])
    alone = score_answers(ollama_rag, items, [], k=3)["answer_items"]
    standin_answers(ollama, ["Put the elements in square brackets [1]."])
    in_chat = score_answers(ollama_rag, items, [], k=3, in_chat=True)["answer_items"]

    assert [row["searched_as"] for row in alone] == [None, None]
    assert in_chat[0]["searched_as"] is None and "tuple" in (in_chat[1]["searched_as"] or "").lower()
    answer_request = [r for r in ollama.chat_requests if not r.get("format")][-1]["messages"]  # not the yes-or-no judge
    assert [m["role"] for m in answer_request] == ["system", "user", "assistant", "user"], "the follow-up is asked after the first turn"
