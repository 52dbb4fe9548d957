"""The checks that decide whether a model's answer is shown: claims against passages, runaway output."""

from __future__ import annotations

import numpy as np
import pytest

from answer_check import back_claim, exact_mismatches
from answer_context import compact_passages, select_quotes, sentence_scores, shown_quotes
from answer_render import quotes_markdown
from answer_review import quotes_text, rare_names
from answer_tidy import CUT_MARKER, repeats_from, tidy_answer
from answer_types import ShownQuote
from answer_verdict import judge
from common_words import uncommon_words
from grounding import PassageSentences, content_terms

TUPLES = (
    "Tuples are also comparable and hashable so we can sort lists of them. "
    "The important difference is that tuples are immutable. "
    "Lists are mutable, so you can change their elements after you create them."
)
CONFIG_ROW = "| CHUNK_SIZE | 1000 | Characters of text per chunk. |"
OLLAMA = "Install Ollama, run `ollama serve`, then `ollama pull llama3.2`. docqa uses it when it answers."


def test_a_changed_number_is_flagged():
    assert exact_mismatches("The default chunk size is 1024 bytes [1].", CONFIG_ROW) == ["the number 1024 is not in the passage"]


def test_the_passages_number_with_another_unit_is_flagged():
    problems = exact_mismatches("The default chunk size is 1000 bytes.", CONFIG_ROW)
    assert problems and "units" in problems[0]


def test_the_passages_own_number_and_unit_pass():
    assert exact_mismatches("The default chunk size is 1000 characters [1].", CONFIG_ROW) == []


def test_numbers_from_the_question_may_be_repeated():
    assert exact_mismatches("6 ^ 2 is 4 because ^ is XOR.", "^ is the bitwise XOR operator", question="I typed 6 ^ 2 and got 4") == []


def test_the_number_of_a_list_item_is_no_claim():
    """Seen in the browser: "How do I use Ollama for better answers?" answered in steps "1. Install
    Ollama …" was set aside for "the number 1 is not in the passage"."""
    assert exact_mismatches("1. Install Ollama, then run `ollama serve`.", OLLAMA) == []
    assert exact_mismatches("Steps:\n2) Install Ollama in 5 minutes.", OLLAMA) == ["the number 5 is not in the passage"]
    assert exact_mismatches("1.5 GB are needed.", OLLAMA) == ["the number 1.5 is not in the passage"], "a decimal is a number"
    steps = (
        "To use Ollama for better answers, follow these steps:\n\n1. Install Ollama.\n2. Start it with `ollama serve`.\n"
        "3. Download the model with `ollama pull llama3.2`.\n4. Restart docqa [1]."
    )  # the whole answer, as the model wrote it: the sentence splitter makes each "1." a sentence of its own
    verdict = judge(steps, None, [OLLAMA], "How do I use Ollama for better answers?")
    assert verdict.shown, verdict.reason


def test_an_invented_command_or_identifier_is_flagged():
    problems = exact_mismatches("Run `ollama pull llama9` and call ollama_client.start() first.", OLLAMA)
    assert any("llama9" in p for p in problems) and any("ollama_client.start" in p for p in problems)
    assert exact_mismatches("Run `ollama serve`, then `ollama pull llama3.2` [1].", OLLAMA) == []


def test_a_dotted_name_passes_when_the_passage_names_each_part():
    passage = "Python provides a class called Counter, defined in a module called collections."
    assert exact_mismatches("It is `collections.Counter`, a kind of dictionary.", passage) == []
    assert exact_mismatches("Use `collections.OrderedCounter`.", passage) == ["`collections.OrderedCounter` is not in the passage"]
    assert exact_mismatches("Use `os.walk`.", "The os module provides listdir.") == ["`os.walk` is not in the passage"]


def test_a_quoted_string_must_be_in_the_passage():
    assert exact_mismatches('The guide says "never use the cloud".', OLLAMA)
    assert exact_mismatches("Obama said “the bubble sort would be the wrong way to go.”", "“I think the bubble sort would be the wrong way to\ngo.”") == []


def test_a_looping_answer_is_cut_and_marked():
    looping = "Tuples are immutable [1]. You cannot change a tuple. " + "You cannot change a tuple. " * 6
    assert repeats_from(looping) is not None
    text, done = tidy_answer(looping, hit_limit=True)
    assert text.count("You cannot change a tuple.") == 1 and "repetition cut" in done
    assert judge(text, None, [TUPLES], "Can I change a tuple?", done).shown, "what comes before the loop is judged as any answer"
    wrong, done = tidy_answer("A tuple holds at most 12 elements [1]. " * 5, hit_limit=True)
    assert not judge(wrong, None, [TUPLES], "Can I change a tuple?", done).shown


def test_an_answer_cut_at_the_token_limit_gets_a_marker():
    text, done = tidy_answer("The default chunk size is 1000 characters, which you can change with", hit_limit=True)
    assert text.endswith(CUT_MARKER) and "cut off" in done


def test_a_code_block_left_open_in_a_list_item_is_closed_inside_it():
    from markdown_code import code_spans

    text, _ = tidy_answer("1. Make a list:\n   ```python\n   xs = [1, 2]", hit_limit=False)
    assert text.endswith("\n   xs = [1, 2]\n   ```"), "closed at the item's indentation, where the renderer closes it"
    assert [text[s.start : s.end] for s in code_spans(text + "\n\nAfter.")] == ["   ```python\n   xs = [1, 2]\n   ```"]


@pytest.mark.parametrize("model_text", [
    "Loop over the list:\n```python\nfor x in xs:\n    print(x[1])\n``` [1]\n\n[1]",  # on the fence, and alone under it
    "Loop over the list:\n```python\nfor x in xs:\n    print(x[1])\n```\n\n[1]",
    "Loop over the list:\n```python [1]\nfor x in xs:\n    print(x[1])\n```",
])
def test_a_citation_at_a_code_block_moves_to_the_sentence_before_it(model_text):
    from markdown_code import code_spans

    text, done = tidy_answer(model_text, hit_limit=False)
    blocks = [text[s.start : s.end] for s in code_spans(text) if s.fenced]
    assert blocks == ["```python\nfor x in xs:\n    print(x[1])\n```"], "the block closes, its code as written"
    assert text.startswith("Loop over the list [1]:") and text.endswith("```") and "citations moved out of code" in done


def test_a_citation_after_a_code_block_with_no_prose_before_it_is_dropped():
    text, _ = tidy_answer("```python\nt = (1,)\n``` [2]\n[2]", hit_limit=False)
    assert text == "```python\nt = (1,)\n```"


def test_removing_citations_leaves_code_alone():
    from answer_render import uncited

    assert uncited("Index with `xs[1]`, as shown [1] [2].") == "Index with `xs[1]`, as shown."
    assert uncited("```python\nxs[1]  =  2\n```\n[1]") == "```python\nxs[1]  =  2\n```"


def test_an_empty_or_contradicting_answer_is_set_aside():
    assert judge("", None, [CONFIG_ROW], "chunk size?").shown is False
    verdict = judge("The default chunk size is 1024 bytes [1].", None, [CONFIG_ROW], "What is the default chunk size?")
    assert not verdict.shown and "1024" in verdict.reason
    assert judge("The default chunk size is 1000 characters [1].", None, [CONFIG_ROW], "What is the default chunk size?").shown


def test_an_answer_that_only_restates_the_question_is_set_aside_whatever_it_cites():
    asked = "What is the default chunk size?"
    for empty in ("The default chunk size is [1].", "Default chunk size: [1]"):
        verdict = judge(empty, None, [CONFIG_ROW], asked)
        assert not verdict.shown and "restates the question" in verdict.reason, empty
    for answer in ("It is 1000 characters [1].", "The default is set by CHUNK_SIZE [1]."):
        assert judge(answer, None, [CONFIG_ROW], asked).shown, answer
    for said in ("Yes [1].", "No, it cannot be changed [1]."):  # a yes or no adds what was asked
        assert judge(said, None, [CONFIG_ROW], "Can the default chunk size be changed?").shown, said


ABSTRACT = "STAT1 serine phosphorylation is required for maximal activation of transcription by IFN-gamma."
PLACES = ["Maximal activation of transcription by stat1.txt", "docqa-configuration.docx, Configuration variables", "docqa-user-guide.pdf, pages 3-4"]


SETUP = (
    "Setting up and running docqa takes two commands, both typed in a terminal in the project folder. "
    "The first sets everything up and starts docqa: make run. The second command runs docqa's test suite, "
    "which confirms that the installation works: make test."
)
FAQ = "- If the right passage is not found, change TOP_K or RETRIEVAL_MODE as\n  described in docqa-configuration.docx."


@pytest.fixture(scope="module")
def tuple_sentences(embedder):
    passages = [TUPLES, CONFIG_ROW, OLLAMA]
    question = "What is the difference between a list and a tuple?"
    sentences = PassageSentences.embed(embedder, passages)
    vector = np.asarray(embedder.embed_query(question), dtype=np.float32)
    return passages, sentences, sentence_scores(sentences, vector, question)


def test_quotes_are_the_passage_sentences_that_answer_verbatim(tuple_sentences):
    passages, sentences, scores = tuple_sentences
    quotes = select_quotes(sentences, scores)
    assert quotes and quotes[0].number == 1
    assert all(q.text in passages[q.number - 1] for q in quotes)
    labels = ["tuples.md, lines 1-3", "config.docx", "guide.pdf, page 5"]
    shown = quotes_text(shown_quotes(quotes, [labels[q.number - 1] for q in quotes]))
    assert shown.startswith("> ") and "[1] tuples.md, lines 1-3" in shown


def test_compact_context_keeps_the_answering_sentence_within_budget(tuple_sentences):
    passages, sentences, scores = tuple_sentences
    long = [p * 1 for p in passages]
    compact = compact_passages(long, sentences, scores, budget_tokens=25)
    assert "tuples are immutable" in compact[0]
    assert sum(len(c) for c in compact) <= 25 * 4 + 60
    assert all(not c or c.replace("\n…\n", " ") in " ".join(passages) or "…" in c for c in compact)


def test_a_citation_on_a_line_of_its_own_is_joined_to_the_sentence_it_cites():
    # Seen in the browser: "...runs on any CPU.\n\n[1]", with passage 1 not the one that says so.
    answer = "The built-in model is SmolLM2-135M-Instruct, run by llama.cpp inside docqa.\n\n[1]"
    text, done = tidy_answer(answer, False)
    assert text == "The built-in model is SmolLM2-135M-Instruct, run by llama.cpp inside docqa [1]."
    assert "citation joined to its sentence" in done
    passages = ["make run sets everything up and starts docqa.", "Without Ollama, docqa uses its embedded model: SmolLM2-135M-Instruct, run by llama.cpp inside the docqa process."]
    backing = back_claim(text, passages)
    assert backing.cited == (1,), "the sentence is now checked against the passage it names"
    assert backing.reason and backing.passages == (2,), "passage 1 does not back it, so the citation moves to the one that does"


def _quotes(embedder, question: str, passages: list[str]):
    """The quotes `ask` would show for these passages."""
    sentences = PassageSentences.embed(embedder, passages)
    scores = sentence_scores(sentences, np.asarray(embedder.embed_query(question), dtype=np.float32), question)
    return select_quotes(sentences, scores)


def test_the_table_row_defining_a_named_setting_is_the_quote(embedder):
    # Seen in the browser: "what is TOP_K set to" quoted "... TOP_K must be at least 1." over the row giving its default.
    question = "what is TOP_K set to if I don't change it"
    passages = [
        "CHUNK_OVERLAP must be at least 0 and smaller than CHUNK_SIZE, and TOP_K must be at least 1.",
        "| Variable | Default | Meaning |\n| --- | --- | --- |\n| CHUNK_SIZE | 1000 | Characters of text per chunk. |\n| TOP_K | 5 | Passages given to the model. |",
    ]
    quotes = _quotes(embedder, question, passages)
    assert quotes[0].number == 2 and "| TOP_K | 5 | Passages given to the model. |" in quotes[0].text
    assert "must be at least 1" not in " ".join(q.text for q in quotes[:1])


def test_a_row_defining_one_of_two_named_settings_does_not_outrank_the_sentence_naming_both(embedder):
    # Seen in the browser: the row "| CHUNK_OVERLAP | 200 | ..." was the quote; the rule naming both answers it.
    question = "What must CHUNK_OVERLAP be, compared with CHUNK_SIZE?"
    passages = [
        "Invalid values. If a value is invalid, docqa stops at start-up with a message that names the variable. "
        "CHUNK_OVERLAP must be at least 0 and smaller than CHUNK_SIZE, and TOP_K must be at least 1.",
        "| Variable | Default | Meaning |\n| --- | --- | --- |\n| CHUNK_SIZE | 1000 | Characters of text per chunk. |\n"
        "| CHUNK_OVERLAP | 200 | Characters shared by neighbouring chunks. |",
    ]
    quotes = _quotes(embedder, question, passages)
    assert quotes[0].number == 1 and "smaller than CHUNK_SIZE" in quotes[0].text, quotes
    assert _quotes(embedder, "What is CHUNK_OVERLAP?", passages)[0].number == 2, "one name asked: its row still comes first"


def test_a_setting_only_mentioned_beside_the_question_does_not_make_its_row_the_first_quote(embedder):
    # Seen in the browser: "I changed CHUNK_SIZE. What do I have to run now?" quoted `| CHUNK_SIZE | 1000 | ... |`.
    question = "I changed CHUNK_SIZE. What do I have to run now?"
    passages = [
        "## How do I rebuild the index?\n\nRun `python main.py index --reindex`. It throws the index away and builds it "
        "again from every file. You only need it after changing CHUNK_SIZE, CHUNK_OVERLAP or EMBEDDING_MODEL.",
        "| Variable | Default | Meaning |\n| --- | --- | --- |\n| CHUNK_SIZE | 1000 | Characters of text per chunk. |\n| TOP_K | 5 | Passages given to the model. |",
    ]
    quotes = _quotes(embedder, question, passages)
    assert quotes[0].number == 1 and "CHUNK_SIZE" in quotes[0].text
    assert "| CHUNK_SIZE | 1000 |" not in quotes[0].text, "the answer first; the row may follow as the second quote"


def test_an_answer_of_citations_only_is_no_answer():
    # Seen in the browser: the model's whole answer was "[1]", and it was shown.
    for text in ("[1]", " [1] [2]. ", "[1]\n"):
        verdict = judge(text, None, [CONFIG_ROW], "What do I run now?")
        assert not verdict.shown and verdict.reason == "the model wrote no answer"


def test_a_quote_stops_at_the_next_entry_of_a_definition_list():
    """Seen in the browser with Debian's users-and-groups.html (HTML's <dl> becomes "term\\n:   text"): the quote
    about www-data ran on into the entry for the backup user."""
    from answer_context import _quote

    texts = [
        "Some web servers run as www-data.",
        "Data written out\nby web servers will be owned by www-data.",
        "backup\n:   Presumably so backup/restore responsibilities can be locally\n    delegated to someone without full root permissions?",
    ]
    assert _quote(texts, 1, 0, 1.0).text == "Some web servers run as www-data. Data written out\nby web servers will be owned by www-data."
    assert _quote(["Note: this runs on.", "So does this."], 1, 0, 1.0).text == "Note: this runs on. So does this.", "a colon in a line is no entry"


def test_two_quotes_never_repeat_a_sentence(embedder):
    """The second quote is the best one that shares no sentence with the first: a window of sentences
    after the best one would otherwise repeat most of it as the second quote."""
    question = "How do I start the server?"
    passages = [
        "The server is started with the start command, which reads the configuration file before it opens any port. "
        "Starting the server needs no root rights, because the start command drops them right after it binds the port. "
        "The configuration file lists the port, the log folder and the number of worker processes to run. "
        "Each worker process handles one connection at a time and is restarted when it fails. "
        "The log folder keeps one file per day and old files are removed after a week.",
        "The client connects over the network and retries when the connection fails.",
    ]
    first, second = _quotes(embedder, question, passages)
    assert first.number == 1 and first.sentences.start == 0, first
    assert second.number != 1 or second.sentences.start >= first.sentences.stop, (first, second)
    assert first.text not in second.text and second.text not in first.text


def test_a_python_prompt_in_a_quote_is_not_a_nested_quote():
    # Seen in the browser: ">>>minutes=105" from the book showed as three nested quote bars.
    text = "Floor division returns the integer number of hours:\n>>>minutes=105\n>>>hours=minutes// 60"
    for shown in (quotes_text([ShownQuote(1, text, "book.pdf, page 3")]), quotes_markdown([ShownQuote(1, text, "book.pdf, page 3")])):
        assert "> \\>>>minutes=105" in shown and "\n> >>>" not in shown
    fenced = "Like this:\n```\n>>> 7 // 2\n3\n```"
    for shown in (quotes_text([ShownQuote(1, fenced, "book.pdf, page 3")]), quotes_markdown([ShownQuote(1, fenced, "book.pdf, page 3")])):
        assert "> >>> 7 // 2" in shown and shown.count("```") == 2  # code keeps its prompt, its fence closes in the quote


def test_the_section_under_a_heading_that_matches_the_question_is_the_quote(embedder):
    # Seen in the browser: "Can I open docqa from my phone on the same wifi?" quoted the guide's
    # "works without an internet connection" over the FAQ section that answers it.
    question = "Can I open docqa from my phone on the same wifi?"
    passages = [
        "## Can I open docqa from another computer?\n\nNot by default: the web interface listens on 127.0.0.1, which "
        "only the same computer can reach. Setting GRADIO_SERVER_NAME=0.0.0.0 makes it reachable from your network.",
        "Everything runs on your computer. Once docqa is installed it works without an internet connection.",
    ]
    quotes = _quotes(embedder, question, passages)
    assert quotes[0].number == 1 and quotes[0].text.startswith("Not by default")
    without_heading = _quotes(embedder, question, [passages[0].split("\n\n", 1)[1], passages[1]])
    assert without_heading[0].number == 2, "the heading is what points at the answer"


RELEASES = "| release | codename | first shipped | end of life |\n| --- | --- | --- | --- |\n" + "".join(
    f"| {v}.0 | {name} | {2000 + v}-04-0{v % 9 + 1} | {2005 + v}-06-30 |\n"
    for v, name in enumerate(["Amber Fox", "Brisk Heron", "Calm Ibis", "Dusty Lynx", "Eager Newt", "Fancy Otter", "Gentle Pika"], start=1)
)


def test_a_table_row_is_read_with_its_header_and_kept_with_it_in_the_context(embedder):
    """A row alone is a line of values; its header says what they are, for the checks and for the model."""
    question = "When does the release codenamed Eager Newt reach its end of life?"
    sentences = PassageSentences.embed(embedder, [RELEASES])
    scores = sentence_scores(sentences, np.asarray(embedder.embed_query(question), dtype=np.float32), question)
    row = int(np.argmax(scores[0]))
    assert sentences.texts[0][row].startswith("| 5.0 | Eager Newt |")
    asked = np.asarray(embedder.embed_query("What is the end of life of release 5.0?"), dtype=np.float32)
    alone = np.asarray(embedder.embed_documents([sentences.texts[0][row]])[0], dtype=np.float32)
    assert sentences.vectors[0][row] @ asked > alone @ asked + 0.05, "read with its column names, the row is nearer a question naming one"
    compact = compact_passages([RELEASES], sentences, scores, budget_tokens=30)[0]
    assert compact.startswith("| release | codename | first shipped | end of life |\n")
    assert "| 5.0 | Eager Newt | 2005-04-06 | 2010-06-30 |" in compact and "Amber Fox" not in compact


def test_the_row_a_question_names_by_its_first_cell_is_the_quote(embedder):
    """A row is found by its key: "Debian 11" names the row `| 11 | Bullseye | … |`, whose other cells
    look like no question; its neighbours, all alike, must not be quoted instead."""
    table = "| release | codename | first shipped | end of life |\n| --- | --- | --- | --- |\n" + "".join(
        f"| {v} | {name} | {1990 + 2 * v}-0{v % 9 + 1}-14 | {1995 + 2 * v}-06-30 |\n"
        for v, name in enumerate(["Moss", "Fern", "Reed", "Sage", "Rush", "Vine", "Kelp", "Ivy", "Oak", "Elm", "Ash", "Yew"], start=1)
    )
    for key, name in ((11, "Ash"), (4, "Sage"), (9, "Oak")):
        quotes = _quotes(embedder, f"What is the codename of release {key}?", [table])
        assert quotes and quotes[0].text.startswith(f"| {key} | {name} |"), (key, quotes[:1])


TOOL_GUIDE = (
    "# Installing the tool\n\n"
    "Download the archive from the project page and unpack it in your home folder. "
    "The archive holds the program, its manual and a sample configuration. "
    "Read the manual before the first run.\n\n"
    "# Output formats\n\n"
    "The tool can write its report in these formats:\n\n"
    "- Plain text, one finding per line\n"
    "- JSON, for other programs to read\n"
    "- HTML, with a table of the findings\n"
    "- CSV, for spreadsheets\n\n"
    "# Running it every night\n\n"
    "Add a cron entry that runs the tool at midnight. The report goes to the folder named in the configuration. "
    "Old reports are kept for a week and then deleted."
)


@pytest.mark.parametrize("lists", [True, False])
def test_a_list_kept_in_the_context_brings_all_its_items(embedder, lists):
    """A list answer needs every item, but a question matches one line best: cut to its best sentences
    and their neighbours, the context kept the first items only. With the list's items (the default),
    every format is in the context; without, a small budget leaves some out."""
    question = "Which output formats can the tool write its report in?"
    sentences = PassageSentences.embed(embedder, [TOOL_GUIDE])
    scores = sentence_scores(sentences, np.asarray(embedder.embed_query(question), dtype=np.float32), question)
    compact = compact_passages([TOOL_GUIDE], sentences, scores, budget_tokens=50, lists=lists)[0]
    formats = ["Plain text", "JSON", "HTML", "CSV"]
    if lists:
        assert all(f in compact for f in formats), compact
        assert "cron" not in compact and "Download" not in compact, "the budget still holds"
    else:
        assert not all(f in compact for f in formats), compact


def test_a_number_the_passage_gives_only_in_other_units_is_flagged_though_the_unit_stands_elsewhere():
    passage = "The digest is 32 octets long. Its internal state is 256 octets; blocks are 64 bits."
    problems = exact_mismatches("The digest is 32 bits long [1].", passage)
    assert problems and "units" in problems[0]
    assert exact_mismatches("The digest is 32 octets long [1].", passage) == []
    assert exact_mismatches("Blocks are 64 bits [1].", passage) == []


# Yes/no pairs: (question, the evidence passage, a claim that agrees with it, one that reverses it).
YES_NO_PAIRS = [
    ("Does the library handle the REAL type?", "The library doesn't handle the REAL type, and decoding one fails.",
     "No, the library does not handle the REAL type [1].", "Yes, the library handles the REAL type [1]."),
    ("Is plain LZMA supported in the container format?", "Thus, the plain LZMA will not be supported in this container format.",
     "No, plain LZMA is not supported in the container format [1].", "Yes, plain LZMA is supported in the container format [1]."),
    ("Does font matching always return a font?", "Font matching ensures that a font will always be returned, but doesn't ensure that it is anything like the pattern.",
     "Yes, font matching always returns a font [1].", "No, font matching does not always return a font [1]."),
    # the subject's name recurs in clauses that say other things: the clause with the asked predicate decides
    ("Can the Cache-Policy setting change the output of the build?",
     "When set, the Cache-Policy setting must hold a valid value. Tools read the Cache-Policy setting at start, "
     "and a builder may ignore the Cache-Policy setting. The value of this setting must not change the output of the build in any way.",
     "No, the Cache-Policy setting must not change the output of the build [1].", "Yes, the Cache-Policy setting can change the output of the build [1]."),
    # "has" answering "have" adds no word: a form of "have" is an auxiliary, as "does" and "is" are
    ("Does the tool have built-in rules for compiling C code?", "Built-in rules. Out of the box, the tool has no rules for e.g. compiling C code.",
     "No, the tool has no built-in rules for compiling C code [1].", "Yes, the tool has built-in rules for compiling C code [1]."),
    ("Has the format had a second edition?", "The format has had two editions; the second was published in 2020.",
     "Yes, the format has had a second edition [1].", "No, the format has not had a second edition [1]."),
]


@pytest.mark.parametrize("question,passage,agrees,reverses", YES_NO_PAIRS)
def test_a_yes_or_no_that_reverses_its_evidence_is_not_backed(question, passage, agrees, reverses):
    # A claim adding no word to the question holds all its words in its evidence either way;
    # only the negation tells the reversed one apart, and one in another clause does not count.
    assert not back_claim(agrees, [passage], question).reason
    reversed_claim = back_claim(reverses, [passage], question)
    assert reversed_claim.reason and not reversed_claim.passages


# A rare name the question asks about, a sentence about it, and sentences about other things that
# share its predicate's words: (passage, question, right claim, claim joining the name to another sentence).
NAME_PAIRS = [
    ("The frobnicate command fails when the cache is locked. Logs go to the system journal. "
     "The vacuum command runs only when the disk is idle.",
     "When does frobnicate fail?",
     "The frobnicate command fails when the cache is locked [1].",
     "The frobnicate command fails because it runs only when the disk is idle [1]."),
    ("Setting QZ_SPILL to 1 writes the queue to disk at shutdown.\n\nThe default is 0.\n\n"
     "The journal is flushed every 30 seconds, so at most 30 seconds of entries are lost in a crash.",
     "What does QZ_SPILL do?",
     "QZ_SPILL writes the queue to disk at shutdown [1].",
     "QZ_SPILL flushes the journal every 30 seconds, so at most 30 seconds of entries are lost in a crash [1]."),
]


@pytest.mark.parametrize("passage,question,right,joined", NAME_PAIRS)
def test_a_claim_naming_the_asked_name_is_doubted_when_its_evidence_is_about_something_else(passage, question, right, joined):
    # Word by word both claims are backed; only the one whose evidence names what was asked stands
    # undoubted. (The sentence right before the evidence counts as naming it, for "It is ...":
    # a predicate taken from the very next sentence is not caught.)
    names = frozenset(content_terms(" ".join(uncommon_words(question))))
    assert names
    good, bad = back_claim(right, [passage], question, names), back_claim(joined, [passage], question, names)
    assert good.passages == (1,) and not good.doubt
    assert bad.passages == (1,) and not bad.reason and bad.doubt
    assert not back_claim(joined, [passage], question).doubt  # no rare name given, nothing to doubt


def test_the_sentence_before_or_the_table_header_names_what_a_sentence_is_about():
    question = "What language is frobnicate written in, and which wheezyx state has release r20?"
    names = frozenset(content_terms("frobnicate wheezyx"))
    pronoun = "The frobnicate command is old. It is written in Perl and reads its options from a file."
    assert not back_claim("frobnicate is written in Perl and reads its options from a file [1].", [pronoun], question, names).doubt
    rows = "\n".join(f"| r{n} | {'frozen' if n < 15 else 'maintained by volunteers'} |" for n in range(30))
    table = f"Releases:\n\n| release | wheezyx state |\n| --- | --- |\n{rows}"  # a long table: a sentence per row
    assert not back_claim("For release r20, wheezyx is maintained by volunteers [1].", [table], question, names).doubt
    # a name the passages do not hold is not asked of them
    elsewhere = "The vacuum command runs only when the disk is idle."
    assert not back_claim("frobnicate runs only when the disk is idle [1].", [elsewhere], question, names).doubt


def test_a_version_the_question_names_must_be_named_by_the_evidence_of_a_claim_repeating_it():
    question = "What was fixed in quux 2.4.1?"
    names = rare_names(question, {"2.4.1", "fix"})
    assert names == {"2.4.1"}  # a version is a name ("quux" is one too, but this index holds it often)
    assert rare_names("Why does dynamic_cast fail?", {"dynamic_cast"}) == {"dynamic_cast"}  # not its common part "cast"
    news = (
        "Changes in quux from 2.3 to 2.4:\n    Added tail calls.\n    Added stack commands for the shell.\n    Removed old tests.\n\n"
        "Release notes follow the same form for every version.\n\n"
        "Changes in quux from 2.4 to 2.4.1:\n    Fixed the quit command.\n    Fixed a crash in the parser.\n    Sped up the tokenizer twice over."
    )
    assert not back_claim("Version 2.4.1 fixed the quit command [1].", [news], question, names).doubt
    # an item further down the list is read with the line that introduces it
    assert not back_claim("Version 2.4.1 sped up the tokenizer twice over [1].", [news], question, names).doubt
    joined = back_claim("Version 2.4.1 fixed tail calls and stack commands for the shell [1].", [news], question, names)
    assert joined.passages == (1,) and joined.doubt


def test_a_quote_running_on_into_list_items_keeps_each_item_on_its_line():
    # Joined with spaces, the items ran together into one line of " - " (seen in a user trial).
    from answer_context import _quote

    texts = ["However, there are some caveats.", "- The size may vary\n  by ABI.", "* Types cannot be shared.", "1. Copy each type."]
    assert _quote(texts, 1, 0, 1.0).text == "However, there are some caveats.\n- The size may vary\n  by ABI.\n* Types cannot be shared.\n1. Copy each type."
