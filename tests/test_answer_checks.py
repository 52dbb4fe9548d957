"""The checks that decide whether a model's answer is shown: claims against passages, runaway output."""

from __future__ import annotations

import numpy as np
import pytest

from answer_check import exact_mismatches
from answer_context import compact_passages, select_quotes, sentence_scores
from answer_tidy import CUT_MARKER, repeats_from, tidy_answer
from answer_verdict import judge, quotes_markdown
from grounding import PassageSentences

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
    assert not judge(looping, None, [TUPLES], "Can I change a tuple?", done).shown


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


ABSTRACT = "STAT1 serine phosphorylation is required for maximal activation of transcription by IFN-gamma."
PLACES = ["Maximal activation of transcription by stat1.txt", "docqa-configuration.docx, Configuration variables", "docqa-user-guide.pdf, pages 3-4"]


def test_a_sentence_naming_a_page_or_file_its_passage_is_not_on_is_set_aside():
    """Seen in the browser: "This is stated in passage [2] on page 4 of the docqa-configuration.docx file" beside
    an uploaded abstract; "4" and the file name stood in other passages' labels, so the exact check let it pass."""
    passages = [ABSTRACT, CONFIG_ROW, SETUP]
    question = "What does STAT1 serine phosphorylation do?"
    claim = "STAT1 serine phosphorylation is required for maximal activation of transcription [1]."
    wrong_page = f"{claim} It is stated in passage [1] on page 4, along with the IFN-gamma figures [1]."
    verdict = judge(wrong_page, None, passages, question, labels=PLACES)
    assert not verdict.shown and verdict.reason.endswith(
        "it names page 4, but the passage it cites is from Maximal activation of transcription by stat1.txt"
    ), "named by its place: the source list renumbers the prompt's [1]"
    wrong_file = f"{claim} As the docqa-configuration.docx file shows, maximal activation needs it [1]."
    verdict = judge(wrong_file, None, passages, question, labels=PLACES)
    assert not verdict.shown and verdict.reason.endswith(
        "it names docqa-configuration.docx, but the passage it cites is from Maximal activation of transcription by stat1.txt"
    )
    assert judge(f"{claim} As page 4 of docqa-user-guide.pdf says, make run starts it [3].", None, passages, question, labels=PLACES).shown
    assert not judge(f"{claim} As page 7 of the guide says, make run starts it.", None, passages, question, labels=PLACES).shown
    assert judge(claim, None, passages, "What does page 7 say?", labels=PLACES).shown, "no page named, nothing to check"
    see_page = ["Dictionaries are described on page 104.", "", ""]
    assert judge("Dictionaries come on page 104 [1].", None, see_page, "Where?", labels=PLACES).shown, "the passage's own words"
    assert judge(wrong_file, None, passages, question, labels=PLACES[:2]).shown, "no label for each passage: no place to check against"
    from answer_check import Place

    assert len(Place.of("atlas.pdf, pages 3-99999").pages) == 1001 and Place.of("atlas.pdf, Maps").pages == frozenset()


def test_a_pointer_naming_its_passage_page_and_file_becomes_the_citation():
    from answer_tidy import fold_pointer_sentences

    seen = (
        "STAT1 serine phosphorylation is needed for maximal activation. This is stated in passage [2] on page 4 of the "
        "docqa-configuration.docx file, which lists each variable with its default value and its meaning [2]."
    )  # seen in the browser: the claim then cites [2] and the grounding check re-cites it to the passage holding it
    assert fold_pointer_sentences(seen)[0] == "STAT1 serine phosphorylation is needed for maximal activation [2]."
    ship_15 = "It gets 5 passages for each question. This is specified in the [3] passage on page 1 of the document guide."
    assert fold_pointer_sentences(ship_15)[0] == "It gets 5 passages for each question [3]."
    said_more = "It is 1000. This is stated in passage [2] of the notes.md file, next to the limits."
    assert fold_pointer_sentences(said_more) == (said_more, False)
    # Seen in the browser: a pointer by number and heading, and the shortest pointer, each underlined beside a right claim.
    heading = 'CHUNK_OVERLAP must be smaller than CHUNK_SIZE. This is specified in the [1] passage under "Invalid values".'
    assert fold_pointer_sentences(heading)[0] == "CHUNK_OVERLAP must be smaller than CHUNK_SIZE [1]."
    assert fold_pointer_sentences("Both are required. This is from [1].")[0] == "Both are required [1]."
    for claim in ("It is smaller. This is stated in [1] under certain conditions.", "The date. It is from 1998 [1]."):
        assert fold_pointer_sentences(claim) == (claim, False), "a condition or a fact after the citation is a claim"
    # Seen with real documents (bench/system_docs.py): a page with no number, a part of the passage named before its
    # page, and the passage's label copied in brackets.
    assert fold_pointer_sentences("The default weight is 50. This can be found on page [1].")[0] == "The default weight is 50 [1]."
    labels = ["dgram.md, lines 310-335", "dgram.md, lines 872-889", "docs/dgram.md, lines 1-20"]
    label = "The default is 1. This can be found in the passage from [dgram.md, lines 872-889]. [2]"
    assert fold_pointer_sentences(label, labels)[0] == "The default is 1 [2].", "the label names one passage of the file"
    assert fold_pointer_sentences("The default is 1. It is stated in [dgram.md].", labels)[0] == "The default is 1 [1][2][3]."
    numbered = "It is 50. This can be found on page [1] of the shared-mime-info-spec.pdf, under section 2.4."
    assert fold_pointer_sentences(numbered, ["shared-mime-info-spec.pdf"])[0] == "It is 50 [1].", "seen in the browser"
    for claim in ("It is 50. This is stated in the globs2 file on page 7 of [1].", "It is 50. The page [1] lists it."):
        assert fold_pointer_sentences(claim) == (claim, False), "a part of its own, or a page doing something, is a claim"


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
    shown = quotes_markdown(quotes, [labels[q.number - 1] for q in quotes])
    assert shown.startswith("> ") and "[1] tuples.md, lines 1-3" in shown


def test_compact_context_keeps_the_answering_sentence_within_budget(tuple_sentences):
    passages, sentences, scores = tuple_sentences
    long = [p * 1 for p in passages]
    compact = compact_passages(long, sentences, scores, budget_tokens=25)
    assert "tuples are immutable" in compact[0]
    assert sum(len(c) for c in compact) <= 25 * 4 + 60
    assert all(not c or c.replace("\n…\n", " ") in " ".join(passages) or "…" in c for c in compact)


def test_a_citation_on_a_line_of_its_own_is_joined_to_the_sentence_it_cites(embedder):
    # Seen in the browser: "...runs on any CPU.\n\n[1]", with passage 1 not the one that says so.
    answer = "The built-in model is SmolLM2-135M-Instruct, run by llama.cpp inside docqa.\n\n[1]"
    text, done = tidy_answer(answer, False)
    assert text == "The built-in model is SmolLM2-135M-Instruct, run by llama.cpp inside docqa [1]."
    assert "citation joined to its sentence" in done
    from config import load_settings
    from grounding import check_grounding

    passages = ["make run sets everything up and starts docqa.", "Without Ollama, docqa uses its embedded model: SmolLM2-135M-Instruct, run by llama.cpp inside the docqa process."]
    sentences = PassageSentences.embed(embedder, passages)
    grounding = check_grounding(text, sentences, embedder, load_settings(environ={}))
    assert grounding.checked and grounding.checked[0].cited == [1], "the sentence is now checked against the passage it names"
    assert not grounding.checked[0].supported, "and passage 1 does not back it, so the wrong citation is caught"


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


def test_a_setting_only_mentioned_beside_the_question_does_not_make_its_row_the_quote(embedder):
    # Seen in the browser: "I changed CHUNK_SIZE. What do I have to run now?" quoted `| CHUNK_SIZE | 1000 | ... |`.
    question = "I changed CHUNK_SIZE. What do I have to run now?"
    passages = [
        "## How do I rebuild the index?\n\nRun `python main.py index --reindex`. It throws the index away and builds it "
        "again from every file. You only need it after changing CHUNK_SIZE, CHUNK_OVERLAP or EMBEDDING_MODEL.",
        "| Variable | Default | Meaning |\n| --- | --- | --- |\n| CHUNK_SIZE | 1000 | Characters of text per chunk. |\n| TOP_K | 5 | Passages given to the model. |",
    ]
    quotes = _quotes(embedder, question, passages)
    assert quotes[0].number == 1 and "CHUNK_SIZE" in quotes[0].text
    assert all("| CHUNK_SIZE | 1000 |" not in q.text for q in quotes)


def test_an_answer_of_citations_only_is_no_answer():
    # Seen in the browser: the model's whole answer was "[1]", and it was shown.
    for text in ("[1]", " [1] [2]. ", "[1]\n"):
        verdict = judge(text, None, [CONFIG_ROW], "What do I run now?")
        assert not verdict.shown and verdict.reason == "the model wrote no answer"


def test_a_quote_stops_at_the_next_entry_of_a_definition_list():
    """Seen in the browser with Debian's users-and-groups.html (HTML's <dl> becomes "term\\n:   text"): the quote
    about www-data ran on into the entry for the backup user."""
    from answer_context import _quote_window

    texts = [
        "Some web servers run as www-data.",
        "Data written out\nby web servers will be owned by www-data.",
        "backup\n:   Presumably so backup/restore responsibilities can be locally\n    delegated to someone without full root permissions?",
    ]
    assert _quote_window(texts, 0) == "Some web servers run as www-data. Data written out\nby web servers will be owned by www-data."
    assert _quote_window(["Note: this runs on.", "So does this."], 0) == "Note: this runs on. So does this.", "a colon in a line is no entry"


def test_a_python_prompt_in_a_quote_is_not_a_nested_quote():
    # Seen in the browser: ">>>minutes=105" from the book showed as three nested quote bars.
    from answer_context import Quote
    from answer_render import quotes_markdown as shown_first

    text = "Floor division returns the integer number of hours:\n>>>minutes=105\n>>>hours=minutes// 60"
    for shown in (quotes_markdown([Quote(1, text, 1.0)], ["book.pdf, page 3"]), shown_first([{"text": text, "passage": 1, "location": "book.pdf, page 3"}])):
        assert "> \\>>>minutes=105" in shown and "\n> >>>" not in shown
    fenced = "Like this:\n```\n>>> 7 // 2\n3\n```"
    assert "> >>> 7 // 2" in quotes_markdown([Quote(1, fenced, 1.0)], ["book.pdf, page 3"])  # code keeps its prompt


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


def test_a_sentence_that_only_says_where_the_answer_is_becomes_a_citation():
    from answer_tidy import fold_pointer_sentences

    text, done = tidy_answer("Tuples are immutable. This is mentioned in [3].", False)
    assert text == "Tuples are immutable [3]." and "pointer sentence folded into a citation" in done
    assert fold_pointer_sentences("A is B [1]. It is described in the passage [2].\n\nNext point.")[0] == "A is B [1][2].\n\nNext point."
    claim = "The passage [3] explains that tuples are immutable."
    assert fold_pointer_sentences(claim) == (claim, False), "a sentence that also claims something stays"
    assert fold_pointer_sentences("This is mentioned in [3].") == ("This is mentioned in [3].", False)
    assert fold_pointer_sentences("Your documents are not touched. The passage is from [1].")[0] == "Your documents are not touched [1]."
    assert fold_pointer_sentences("Restart docqa. The passage is [2].")[0] == "Restart docqa [2]."
    assert fold_pointer_sentences("Use index and ask [1]. They are described in the passage from [1].")[0] == "Use index and ask [1]."
    # seen in the browser: the pointer also names the page, which the citation shows already
    seen = "Yes, docqa can read scanned PDFs (read with OCR). This is mentioned in [2] on page 3."
    assert fold_pointer_sentences(seen)[0] == "Yes, docqa can read scanned PDFs (read with OCR) [2]."
    assert fold_pointer_sentences("It is 1000. This is stated on pages 2-3 of [1].")[0] == "It is 1000 [1]."
    seen = "Go to http://127.0.0.1:7860. The passage that provides this information is [1]."  # the browser, too
    assert fold_pointer_sentences(seen)[0] == "Go to http://127.0.0.1:7860 [1]."
    seen = "Try RETRIEVAL_MODE=vector. The passage that explains this can be found in [1]."  # the browser, 2026-12-03
    assert fold_pointer_sentences(seen)[0] == "Try RETRIEVAL_MODE=vector [1]."
    assert fold_pointer_sentences("It is 1000. The source which describes the information is in [2].")[0] == "It is 1000 [2]."
    claim = "It is 1000. The passage that explains this also lists the limits [1]."
    assert fold_pointer_sentences(claim) == (claim, False), "a sentence saying what the passage holds stays"
    claim = "It is 1000. This is mentioned in [2] on page 3, next to the limits."
    assert fold_pointer_sentences(claim) == (claim, False), "a pointer that goes on to say more stays"


def test_a_sentence_naming_the_file_of_the_answer_becomes_that_passages_citation():
    from answer_tidy import fold_pointer_sentences

    labels = ["guide.md, Setup", "docs/settings.docx, Configuration variables", "docs/settings.docx"]
    text, done = tidy_answer("Chunks are 1000 characters. This can be found in the [settings.docx] file.", False, labels)
    assert text == "Chunks are 1000 characters [2][3]." and "pointer sentence folded into a citation" in done
    assert fold_pointer_sentences("It is 1000 [2]. This is described in settings.docx.", labels)[0] == "It is 1000 [2][3]."
    seen = 'It is 1000 characters. This can be found in the [settings.docx] file, under the "Configuration variables" section. [1]'
    assert fold_pointer_sentences(seen, labels)[0] == "It is 1000 characters [2][3][1].", "seen in the browser, with its own citation after it"
    assert fold_pointer_sentences("It listens on 127.0.0.1. This answer comes from [1].")[0] == "It listens on 127.0.0.1 [1]."
    assert fold_pointer_sentences("It is 5. The passage comes from [1].")[0] == "It is 5 [1].", "fu-10, in a chat"
    described = (
        "The default chunk size is 1000 characters per chunk. This can be found in the [settings.docx] file, which explains "
        "where docqa reads settings from and lists the settings most people change. [1][3]"
    )  # seen in the browser: what the file is about adds nothing to the answer
    assert fold_pointer_sentences(described, labels)[0] == "The default chunk size is 1000 characters per chunk [2][3][1]."
    on_page = "To open it, go to http://127.0.0.1:7860. This is mentioned on page 2 of [settings.docx]. [1]"
    assert fold_pointer_sentences(on_page, labels)[0] == "To open it, go to http://127.0.0.1:7860 [2][3][1]."
    unknown = "It is 1000 [2]. This can be found in the [other.docx] file."
    assert fold_pointer_sentences(unknown, labels) == (unknown, False), "a file no passage comes from is not a citation"


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
