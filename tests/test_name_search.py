"""Which names a question mentions, and which passages define them (name_search.py)."""

from __future__ import annotations

from doc_types import Chunk
from name_search import asks_what_it_is, defines_in_table, definitions_first, named_identifiers
from retriever import Passage


def test_a_sentence_full_stop_makes_no_name_but_a_dotted_name_stays_one():
    assert named_identifiers("Which retrieval mode suits my files.") == set()
    assert named_identifiers("What does Loader.load() do?") == {"load", "loaderload"}
    assert named_identifiers("I changed CHUNK_SIZE. What now?") == {"chunksize"}


def test_a_table_row_defines_the_name_in_its_first_cell_only():
    table = "| Variable | Default |\n| --- | --- |\n| `TOP_K` | 5 |"
    assert defines_in_table(table, {"topk"})
    assert not defines_in_table("| CHUNK_SIZE | TOP_K |", {"topk"})
    assert not defines_in_table("TOP_K=8 in an example .env file", {"topk"})


def _passage(text: str, score: float, symbol: str | None = None) -> Passage:
    return Passage([Chunk(id=text[:8], text=text, source="a.md", title="a", chunk_index=0, symbol=symbol)], score)


def test_the_defining_table_comes_right_after_the_best_passage_and_a_code_definition_first():
    best, mention, table = _passage("Raise TOP_K for more context.", 3.0), _passage("TOP_K=8", 2.0), _passage("| TOP_K | 5 |", 1.0)
    assert definitions_first("When should I raise TOP_K?", [best, mention, table]) == [best, table, mention]
    assert table.score == best.score  # stays second when re-sorted by score (a stable sort)
    code = _passage("def top_k(): ...", 0.5, symbol="top_k")
    assert definitions_first("What is TOP_K?", [best, table, code])[0] is code


def test_a_question_asking_what_the_name_is_gets_the_defining_row_first():
    best, mention, table = _passage("Raise TOP_K for more context.", 3.0), _passage("TOP_K=8", 2.0), _passage("| TOP_K | 5 |", 1.0)
    assert definitions_first("what is TOP_K set to if I don't change it", [best, mention, table]) == [table, best, mention]
    assert table.score > best.score  # stays first when re-sorted by score
    best.score, table.score = 3.0, 1.0
    assert definitions_first("How do I raise TOP_K?", [best, mention, table]) == [best, table, mention]


def test_what_a_name_is_is_told_from_a_question_that_only_mentions_it():
    asking = ["What is TOP_K?", "Default value of TOP_K?", "What does CHUNK_OVERLAP default to?", "TOP_K?", "What's the default TOP_K?"]
    mentioning = ["I changed CHUNK_SIZE. What do I have to run now?", "What happens if I set TOP_K to 0?", "How do I raise TOP_K?"]
    assert all(asks_what_it_is(q, named_identifiers(q)) for q in asking)
    assert not any(asks_what_it_is(q, named_identifiers(q)) for q in mentioning)
