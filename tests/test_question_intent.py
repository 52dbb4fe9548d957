"""What a question asks for: the document list, a whole-file summary, or an answer from passages."""

from __future__ import annotations

from doc_types import Chunk
from question_intent import (
    asks_for_document_list,
    summary_target,
)
from whole_document import outline, outline_lines, outline_part, split_parts

SOURCES = ["thinkpython2.pdf", "notes/meeting-2024.md", "Report Q3.docx"]


def test_questions_about_the_collection_ask_for_the_document_list() -> None:
    for question in ["What documents do you have?", "which files are indexed?", "List all the documents", "How many files are there?"]:
        assert asks_for_document_list(question), question
    for question in ["What is a document?", "Which file mode opens a file for appending?", "What does the file say about tuples?"]:
        assert not asks_for_document_list(question), question


def test_summary_requests_name_a_file_by_its_name_or_title() -> None:
    assert summary_target("Summarize thinkpython2.pdf", SOURCES).source == "thinkpython2.pdf"
    assert summary_target("Give me a summary of the report q3", SOURCES).source == "Report Q3.docx"
    assert summary_target("summarise meeting 2024", SOURCES).source == "notes/meeting-2024.md"
    assert summary_target("Summarize Think Python", SOURCES, {"thinkpython2.pdf": "Think Python"}).source == "thinkpython2.pdf"
    assert summary_target("Summarize the book", ["thinkpython2.pdf"]).source == "thinkpython2.pdf", "the only document"
    assert summary_target("Summarize the book", SOURCES) is None, "which one is ambiguous: search instead"
    assert summary_target("Summarize how tuples work", SOURCES) is None, "a topic, not a file"
    assert summary_target("What is a tuple?", SOURCES) is None


def test_a_long_document_is_cut_at_chapter_starts_and_outlined_from_its_own_sentences() -> None:
    def chunk(i: int) -> Chunk:
        chapter = i // 10
        text = (
            f"Chapter {chapter} explains recursion and stacks in chapter {chapter} of this book. "
            f"Section {i} adds one more remark about a different matter here. "
            "x = f(a[0], b[1]) + g(c); y = {k: v}"  # code: never a key sentence
        )
        return Chunk(id=str(i), text=text, source="a.md", title="", chunk_index=i, heading_path=[f"Chapter {chapter}", f"Part {i}"])

    chunks = [chunk(i) for i in range(60)]
    parts = split_parts(chunks, 4)
    assert [c for p in parts for c in p] == chunks, "every chunk, in order, once"
    assert len(parts) == 4 and all(p[0].chunk_index % 10 == 0 for p in parts), "cut where a chapter starts"
    assert [len(p) for p in split_parts(chunks[:7], 4)] == [2, 2, 1, 2], "nearly equal without a chapter near"

    outlined = outline_part(1, parts[1])
    first = parts[1][0].chunk_index // 10
    assert outlined.sentences[0].startswith(f"Chapter {first} explains recursion"), "the words the part repeats most"
    assert not any("=" in s for s in outlined.sentences)
    assert outlined.cited in parts[1] and outlined.sentences[0] in outlined.cited.text
    assert outlined.headings[0].startswith(f"Chapter {first}") and outlined.line().endswith("[1].")


def test_an_outline_names_a_part_s_headings_once_where_parts_share_them():
    def chunk(i: int, heading: str) -> Chunk:
        text = f"Section {i} explains the buffer sizes and the header bytes of stream number {i} in detail."
        return Chunk(id=str(i), text=text, source="a.html", title="", chunk_index=i, heading_path=[heading])

    chunks = [chunk(i, "Usage Example") for i in range(6)] + [chunk(i, "Technical Details") for i in range(6, 9)]
    parts = outline(chunks, 3)
    lines = outline_lines(parts).splitlines()
    assert [p.headings for p in parts] == [("Usage Example",), ("Usage Example",), ("Technical Details",)]
    assert lines[0].startswith("- Usage Example — ") and lines[2].startswith("- Technical Details — ")
    assert "Usage Example" not in lines[1] and lines[1].startswith(f"- {parts[1].sentences[0].rstrip('.')}"), "not repeated"


def test_no_key_sentence_stands_in_two_outline_lines():
    # chunks overlap: the sentence at one part's edge opens the next part too
    sentences = [f"Stage {i} of the pipeline reads the buffers, checks the headers and writes record {i}." for i in range(12)]
    chunks = [
        Chunk(id=str(i), text=" ".join(sentences[max(0, 2 * i - 1) : 2 * i + 2]), source="a.md", title="", chunk_index=i, heading_path=["Pipeline"])
        for i in range(6)
    ]
    parts = outline(chunks, 3)
    shown = [s for p in parts for s in p.sentences]
    assert len(parts) == 3 and all(p.sentences for p in parts)
    assert len(shown) == len(set(shown)), shown

