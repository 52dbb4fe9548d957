"""The web UI in a real browser: `python main.py serve` as a subprocess, driven by Playwright.

One server runs for the module, over a copy of the shipped documents plus one hostile
document whose text is HTML and a markdown image. Chromium comes from Debian
(`apt-get install chromium`); without it the browser tests skip, unless
DOCQA_REQUIRE_BROWSER=1 makes that a failure.

Gradio keeps a connection open, so the tests wait for elements and text, never for the
network to go idle. Set DOCQA_UPDATE_SCREENSHOT=1 to refresh docs/screenshot.png.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr
import pytest

import answer_render
import answer_verdict
import web_handlers
import web_html
import web_layout
import web_questions
import web_ui
from answer_types import ShownQuote, Timings
from config import SETTING_FIELDS, env_name
from rag_system import IndexStatus, RAGSystem
from scripts.make_documents import EXAMPLE_QUESTIONS, EXPECTED_SOURCES
from serving import ServerDidNotStart, free_port, running, wait_until_indexed

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SCREENSHOT = ROOT / "docs" / "screenshot.png"

SERVER_START_S = 300  # indexing and model set-up on two busy cores
ANSWER_TIMEOUT_MS = 180_000

HOSTILE_DOCUMENT = """# Lighthouse notes

The lighthouse keeper's parrot is called Captain Biscuit and eats sunflower seeds.

<script>window.__pwned=1</script>

![x](http://127.0.0.1:9/x.png)

<img src="http://127.0.0.1:9/y.png" onerror="window.__pwned=2">
"""
HOSTILE_QUESTION = (
    "What is the lighthouse keeper's parrot called? "
    "<img src=http://127.0.0.1:9/q.png onerror=window.__pwned=3> ![q](http://127.0.0.1:9/q2.png) "
    "&lt;img src=http://127.0.0.1:9/q3.png onerror=window.__pwned=4&gt;"
)
NOWHERE = "127.0.0.1:9"

UPLOADS = {
    "zebra-notes.md": "# Zebra care\n\nThe zebra named Quillon drinks seven buckets of mint tea every Tuesday.\n",
    "harbour-log.txt": "Harbour log\n\nThe harbour master keeps the spare anchor chain in the blue shed.\n",
}
UPLOAD_QUESTION = "What does the zebra Quillon drink?"


# ---------------------------------------------------------------- fast checks, no server


def test_example_buttons_ask_the_questions_the_documents_answer():
    assert web_layout.EXAMPLE_QUESTIONS == EXAMPLE_QUESTIONS


def test_safe_markdown_leaves_no_html_and_no_image():
    shown = answer_render.safe_markdown("<script>x()</script> ![x](http://127.0.0.1:9/x.png) a && b")
    assert "<" not in shown
    assert "![" not in shown
    assert "a && b" in shown


def test_sources_panel_escapes_document_text():
    chunk = SimpleNamespace(title="t")
    passage = SimpleNamespace(
        source="<b>evil</b>.md",
        location="lines 1-3",
        heading_path=["<i>Notes</i>"],
        found_by={"bm25": 1},
        score=0.5,
        text="# Notes\n<script>window.__pwned=1</script>",
        first=chunk,
    )
    answer = SimpleNamespace(passages=[passage], model="m", timings=Timings(total_s=1.0), done=True)
    shown = web_html.sources_html(answer)
    assert "<script>" not in shown and "<b>" not in shown and "<i>" not in shown
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in shown
    assert "lines 1-3" in shown and "score 0.5000" in shown


def synthetic_answer(text: str = "", passages: list[Any] | None = None, **fields: Any) -> SimpleNamespace:
    defaults = dict(question="q", model="m", timings=Timings(total_s=1.0), done=True, error=None)
    return SimpleNamespace(text=text, passages=passages or [], **{**defaults, **fields})


def synthetic_passage(text: str, source: str = "notes.md") -> SimpleNamespace:
    return SimpleNamespace(
        source=source, location="lines 1-9", heading_path=[], found_by={"vector": 1}, score=0.5, text=text, pages=[]
    )


def test_citations_link_to_their_source_cards():
    shown = answer_render.link_citations("Run it [1]; see [2, 3]. Not [9]. `xs[1]`", 3)
    assert "[\\[1\\]](#source-1)" in shown
    assert "see [2, 3]" in shown and "#source-2" not in shown, "a list such as [2, 3] is not a citation"
    assert "Not [9]" in shown, "a number no source has stays text"
    assert "`xs[1]`" in shown, "code is left alone"


def test_citation_links_leave_model_markup_escaped():
    answer = synthetic_answer(
        "<img src=http://127.0.0.1:9/a.png onerror=1>[1] ![1](http://127.0.0.1:9/b.png)", [synthetic_passage("x")]
    )
    shown = answer_render.answer_markdown(answer)
    assert "<img" not in shown and "![" not in shown
    assert "(#source-1)" in shown


def test_unsupported_sentences_are_marked_and_stay_escaped():
    text = "Docqa runs locally [1].\n- The moon is made of <b>cheese</b>.\n- Indexing is incremental."
    answer = synthetic_answer(text, [synthetic_passage("x")], unsupported=["The moon is made of <b>cheese</b>."])
    shown = answer_render.answer_markdown(answer)
    assert "- <mark class='docqa-unsupported'" in shown, "the list item keeps its marker outside the mark"
    assert "The moon is made of &lt;b>cheese&lt;/b>.</mark>" in shown
    assert "<b>" not in shown
    assert "not confirmed by the sources" in shown
    assert "Indexing is incremental." in shown and shown.count("<mark") == 1


CODE_ANSWER = "Use a list, written with brackets:\n\n```python\nxs = [1, 2]\nif len(xs) < 3:\n    print(xs[1])\n```"


def rendered_html(markdown: str) -> str:
    """The chat markdown as a CommonMark renderer turns it into HTML (Gradio's renderer reads it the same way)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").render(markdown)


def code_blocks(html_text: str) -> list[str]:
    return re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", html_text, re.S)


def test_a_citation_added_after_a_code_block_leaves_the_fence_closed():
    from answer_verdict import add_missing_citations
    from grounding import Grounding, SentenceSupport

    grounding = Grounding([SentenceSupport("Use a list, written with brackets:", [], [2])])
    text = add_missing_citations(CODE_ANSWER, grounding)
    assert text.endswith("\n```") and text.startswith("Use a list, written with brackets [2]:"), (
        "the citation goes to the prose before the code, neither onto the closing fence nor alone under it"
    )
    shown = answer_render.answer_markdown(synthetic_answer(text, [synthetic_passage("a"), synthetic_passage("b")]))
    html_text = rendered_html(shown)
    assert code_blocks(html_text) == ["xs = [1, 2]\nif len(xs) &lt; 3:\n    print(xs[1])\n"], "the code, as written, and only it"
    assert 'href="#source-2"' in html_text and "#source-1" not in html_text, "the [2] outside code links; xs[1] and [1, 2] do not"


def test_code_stays_code_with_marks_and_notes_outside_it():
    # A fence the model left open (it stopped mid-answer), an unsupported sentence that runs into the code.
    text = "Lists are mutable [1]. You can append to one:\n\n```python\nxs = [1, 2]\nxs.append(xs[0] < 3)"
    answer = synthetic_answer(
        text, [synthetic_passage("a"), synthetic_passage("b")], unsupported=["You can append to one:\n\n```python\nxs = [1, 2]"],
        standalone_question="How do lists change?",
    )
    shown = answer_render.answer_markdown(answer)
    html_text = rendered_html(shown)
    assert code_blocks(html_text) == ["xs = [1, 2]\nxs.append(xs[0] &lt; 3)\n"], "marks, links and notes stay out of the code"
    assert "xs.append(xs[0] < 3)" in shown, "code is left for the renderer to escape: an entity in code shows as written"
    assert "<mark class='docqa-unsupported' title='Not confirmed by the sources'>You can append to one:</mark>" in shown
    assert shown.count("<mark") == 1 and 'href="#source-1"' in html_text and "#source-2" not in html_text
    assert "<span class=\"docqa-note\">Searched for: How do lists change?</span>" in html_text.replace("'", '"')
    assert "<em>— m</em>" in html_text, "the footer is prose after the code, not inside it"


def test_inline_code_keeps_its_brackets_and_its_less_than():
    shown = answer_render.answer_markdown(synthetic_answer("Read `xs[1]` when `i < len(xs)` [1]. Not <b>this</b>.", [synthetic_passage("a")]))
    html_text = rendered_html(shown)
    assert "<code>xs[1]</code>" in html_text and "<code>i &lt; len(xs)</code>" in html_text
    assert "&lt;b&gt;this&lt;/b&gt;" in html_text and "<b>" not in html_text, "prose markup is still escaped"
    assert html_text.count("#source-1") == 1


def test_a_fence_inside_a_quote_closes_inside_the_quote():
    quotes = [ShownQuote(1, "Write it as:\n```python\nxs = [1]", "lists.md, lines 1-3")]
    answer = synthetic_answer("Like that [1].", [synthetic_passage("a")], quotes=quotes)
    html_text = rendered_html(answer_render.answer_markdown(answer))
    assert code_blocks(html_text) == ["xs = [1]\n"]
    assert html_text.count('href="#source-1"') == 2, "the quote's place and the answer's citation both link"


def test_rewritten_follow_up_is_shown_as_searched_for():
    answer = synthetic_answer("Yes.", question="and tuples?", standalone_question="How do I make a *tuple* <b>?")
    shown = answer_render.answer_markdown(answer)
    assert "Searched for: How do I make a \\*tuple\\* &lt;b\\>?" in shown
    assert "Searched for" not in answer_render.answer_markdown(synthetic_answer("Yes.", standalone_question="q"))


def test_source_card_marks_highlighted_sentences_escaped():
    passage = synthetic_passage("# Notes\nPlain start. The <b>bold</b> claim holds.\nMore text.")
    answer = synthetic_answer("x", [passage], highlights={1: ["The <b>bold</b> claim holds."]})
    shown = web_html.sources_html(answer)
    assert "<mark>The &lt;b&gt;bold&lt;/b&gt; claim holds.</mark>" in shown
    assert "<b>" not in shown
    assert "id='source-1'" in shown


def test_long_passage_is_cut_around_its_first_highlight():
    filler = " ".join(f"word{i}" for i in range(200))
    passage = synthetic_passage(f"{filler} The key sentence is here. {filler}")
    answer = synthetic_answer("x", [passage], highlights={1: ["The key sentence is here."]})
    shown = web_html.sources_html(answer)
    first_snippet = shown.split("<details>")[0]
    assert "<mark>The key sentence is here.</mark>" in first_snippet
    assert first_snippet.count("…") == 2
    assert "Whole passage" in shown


def test_the_first_screen_says_which_model_will_answer_without_loading_it(open_rag):
    rag = open_rag(llm_backend="auto", ollama_host="http://127.0.0.1:9")
    shown = web_html.status_markdown(rag.stats(), rag.model_note)
    assert "model: **Qwen2.5-Coder 1.5B (embedded) — loads on the first question**" in shown
    assert "ollama pull" in shown, "the way to better answers is said once, on the first screen"
    assert rag.index_status().state == "idle" and rag.model_name().endswith("loads on the first question"), "no model loaded"


def test_index_panel_escapes_file_names_and_reasons():
    stats = {
        "files": 1, "chunks": 2, "files_by_type": {"markdown": 1}, "last_indexed": None, "llm": "m",
        "embedding_model": "e", "retrieval_mode": "hybrid", "documents_folder": "/d",
        "failed": {"<i>x</i>.pdf": "cannot <b>read</b>"}, "skipped": {"big.pdf": "over the limit"},
    }
    running = IndexStatus(state="indexing", stage="indexing", done=1, total=3, current="<b>x</b>.md")
    shown = web_html.index_panel_html(stats, running)
    assert "<i>x" not in shown and "<b>read" not in shown and "<b>x" not in shown
    assert "&lt;i&gt;x&lt;/i&gt;.pdf" in shown and "over the limit" in shown
    assert "Indexing: 1 of 3 files read" in shown
    assert web_html.indexing_markdown(running).startswith("Indexing: 1 of 3 files read")
    assert web_html.indexing_markdown(IndexStatus(state="idle")) == ""


def test_indexing_line_counts_files_and_chunks_names_the_file_and_guesses_the_time_left():
    status = IndexStatus(
        state="indexing", stage="indexing", done=2, total=4, chunks_done=100, chunks_total=200,
        current="notes/report.pdf", embed_s=10.0, indexing_since=1000.0,
    )
    # 20 s reading 2 files and 10 s embedding 100 chunks: 2 files (20 s) and 300 chunks (30 s) to go.
    assert status.seconds_left(now=1030.0) == pytest.approx(50.0)
    line = web_html.progress_text(status, now=1030.0)
    assert line == "Indexing: 2 of 4 files read, 100 of 200+ chunks embedded; now: notes/report.pdf; about 50 s left…"
    assert "now: notes/report\\.pdf" in web_html.indexing_markdown(status, now=1030.0), "a file name is not markdown"
    checking = IndexStatus(state="indexing", stage="checking", done=3, total=50, current="a.md")
    assert web_html.progress_text(checking) == "Indexing: checking 3 of 50 files for changes; now: a.md…"
    assert "estimating" in web_html.progress_text(IndexStatus(state="indexing", stage="indexing", total=4))


# What DejaVu Sans and Liberation Sans (Debian's default fonts) draw, beyond ASCII.
BASIC_SYMBOLS = set("·—–…“”‘’•→✓✗⚠×")
UI_MODULES = [ROOT / f"{name}.py" for name in ("web_ui", "web_layout", "web_handlers", "web_html", "web_questions", "answer_render")]
"""What writes the page's text (web_formats.py, a converter, only names the signs it removes)."""


def test_the_page_uses_only_glyphs_the_default_fonts_have():
    """An emoji such as the hourglass is an empty box in Chromium without an emoji font."""
    import ast

    texts = [
        n.value for path in UI_MODULES for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]
    used = {ch for text in texts for ch in text if ord(ch) > 127}
    assert used - BASIC_SYMBOLS == set()
    if shutil.which("fc-list"):
        import subprocess

        missing = [ch for ch in sorted(used) if not subprocess.run(["fc-list", f":charset={ord(ch):x}"], capture_output=True, text=True).stdout.strip()]
        assert missing == [], "no installed font draws these"


# ---------------------------------------------------------------- the handlers, with real components


@pytest.fixture
def ui(open_rag) -> SimpleNamespace:
    """The page's handlers on a RAGSystem over a temp folder, with the real Gradio components (no server)."""
    import gradio as gr

    rag = open_rag()
    with gr.Blocks():
        page = web_layout.layout(rag)
    return SimpleNamespace(rag=rag, page=page, handlers=web_handlers.Handlers(rag, page), docs=rag.settings.docs_dir)


def test_while_indexing_the_status_line_and_the_index_panel_both_say_so(ui):
    import threading

    for n in range(3):
        (ui.docs / f"note-{n}.md").write_text(f"# Note {n}\n\nThe kettle number {n} whistles.\n", encoding="utf-8")
    seen = ui.handlers.poll(None, [], None)[ui.page.seen]
    inside, go_on = threading.Event(), threading.Event()

    def held(stage: str, done: int, total: int) -> None:
        inside.set()
        go_on.wait(60)

    sync = threading.Thread(target=ui.rag.index, kwargs={"progress": held})
    sync.start()
    try:
        assert inside.wait(120), "indexing never started"
        update = ui.handlers.poll(seen, [], None)
    finally:
        go_on.set()
        sync.join(120)
    note, panel = update[ui.page.indexing_note], update.get(ui.page.docs.index_panel, "")
    assert note.startswith("Indexing: 1 of 3 files read") and "now: note" in note
    assert "Indexing: 1 of 3 files read" in panel and "idle" not in panel


def test_stop_relabels_the_sources_at_once_not_when_the_model_next_writes(ui):
    """The answer's loop sees a Stop only at the model's next piece, seconds away while llama.cpp reads
    the prompt; the click's own update says the answer stopped."""
    session = web_questions.ChatSession()
    assert ui.page.ask.sources not in ui.handlers.stop(session), "nothing is being answered: the sources stay"
    session.answering, session.current = True, [{"role": "user", "content": "How often should I descale the kettle?"}]
    session.last_answer = synthetic_answer("", [synthetic_passage("Descale the kettle every month.", "kettle.md")], done=False)
    update = ui.handlers.stop(session)
    assert web_html.STOPPED_SOURCES in update[ui.page.ask.sources]
    assert "kettle.md" in update[ui.page.ask.sources], "the passages found stay listed"
    assert session.stop_requested


def test_file_table_lists_every_file_with_its_status_and_every_file_can_be_removed(ui):
    (ui.docs / "kettle.md").write_text("# Kettle\n\nDescale it.\nEvery month.\n", encoding="utf-8")
    (ui.docs / "blank.pdf").write_bytes(b"")
    (ui.docs / "song.mp3").write_bytes(b"ID3\x04")
    ui.rag.index()
    shown = ui.handlers.refresh([], None)
    table = shown[ui.page.docs.files_table]
    for column in ("Name", "Type", "Pages or lines", "Chunks", "Indexed at", "Status"):
        assert f"<th>{column}</th>" in table
    assert re.search(r"<td>kettle\.md</td><td>markdown</td><td>\d+ lines</td><td>1</td><td>\d{4}-\d\d-\d\d \d\d:\d\d</td><td>indexed</td>", table), table
    assert "<td>blank.pdf</td><td>pdf</td>" in table and "failed: the file is empty (0 bytes)" in table
    assert "<td>song.mp3</td>" in table and "skipped: " in table
    assert str(ui.docs) not in table, "no server path"
    choices = [value for _, value in shown[ui.page.docs.remove_pick]["choices"]]
    assert choices == ["blank.pdf", "kettle.md", "song.mp3"], "failed and skipped files can be removed too"

    removed = ui.handlers.remove("blank.pdf", [])
    assert "Removed" in removed[ui.page.docs.remove_report]
    assert not (ui.docs / "blank.pdf").exists()
    assert "blank.pdf" not in removed[ui.page.docs.files_table]


def test_an_empty_upload_is_refused_and_not_saved(ui, tmp_path):
    blank = tmp_path / "blank.pdf"
    blank.write_bytes(b"")
    shown = ui.handlers.upload([str(blank)], [], None, progress=lambda *args, **kwargs: None)
    report = shown[ui.page.docs.upload_report]
    assert "Refused blank.pdf: the file is empty (0 bytes)" in report
    assert list(ui.docs.iterdir()) == []


def test_waiting_questions_know_how_many_are_ahead_of_them():
    slots = web_questions.AnswerSlots(1)
    first, second, third = slots.join(), slots.join(), slots.join()
    assert slots.wait_turn(first, 0) == 0
    assert slots.wait_turn(second, 0) == 1, "one answer running"
    assert slots.wait_turn(third, 0.05) == 2, "one running, one waiting before it"
    slots.leave(first)
    assert slots.wait_turn(third, 0) == 1, "the second goes first: it came first"
    assert slots.wait_turn(second, 0) == 0
    slots.leave(second)
    assert slots.wait_turn(third, 0) == 0
    slots.leave(third)
    assert "Waiting for another question to finish (1 ahead)…" in web_html.waiting_message(1)["content"]


def test_a_waiter_whose_page_is_gone_stops_holding_up_the_queue(monkeypatch):
    import time

    slots = web_questions.AnswerSlots(1)
    monkeypatch.setattr(slots, "STALE_S", 0.05)
    slots.join()  # its page closed before its turn, and its handler was never closed
    waiting = slots.join()
    time.sleep(0.1)
    assert slots.wait_turn(waiting, 0) == 0


def test_an_answer_that_only_repeats_its_quote_is_shown_once_with_its_citations():
    quote = "The default chunk size is 1000 characters,\nwith an overlap of 200."
    quotes = [ShownQuote(2, quote, "guide.md, lines 3-4")]
    passages = [synthetic_passage("a"), synthetic_passage(quote)]
    repeated = synthetic_answer("The default chunk size is 1000 characters, with an  overlap of 200. [2]", passages, quotes=quotes)
    shown = answer_render.answer_markdown(repeated)
    assert shown.count("1000 characters") == 1, "the quote stands, the copy of it goes"
    assert shown.count("#source-2") == 2, "the quote's place and the answer's citation still link"
    different = synthetic_answer("It is 1000 characters [2].", passages, quotes=quotes)
    assert answer_render.answer_markdown(different).count("1000 characters") == 2, "an answer in its own words stays"


def test_the_model_note_is_not_under_each_answer():
    answer = synthetic_answer("Yes [1].", [synthetic_passage("x")], model="llama.cpp:small.gguf", model_hint="install Ollama")
    assert "Ollama" not in answer_render.answer_markdown(answer)
    assert "ollama pull" in web_html.status_markdown(
        {"files": 1, "chunks": 1, "llm": "llama.cpp:small.gguf", "embedding_model": "e", "retrieval_mode": "hybrid", "failed": {}},
        answer_verdict.model_hint("llama.cpp:small.gguf", "llama3.2"),
    )
    assert answer_verdict.model_hint("llama3.2 (Ollama)", "llama3.2") is None


def test_after_an_upload_a_later_sync_that_finds_nothing_new_leaves_the_upload_counted(ui, tmp_path):
    (ui.docs / "kettle.md").write_text("# Kettle\n\nDescale it every month.\n", encoding="utf-8")
    ui.rag.index()
    new = tmp_path / "teapot.md"
    new.write_text("# Teapot\n\nWarm the pot first.\n", encoding="utf-8")
    after_upload = ui.handlers.upload([str(new)], [], None, progress=lambda *args, **kwargs: None)
    assert "1 added" in after_upload[ui.page.docs.index_panel]
    ui.rag.index()  # the folder watcher looks again after the upload and finds nothing new
    panel = ui.handlers.refresh([], None)[ui.page.docs.index_panel]
    assert "last change" in panel and "1 added" in panel and "nothing new" in panel
    assert "0 added" not in panel, "a stale run that added nothing does not hide the upload"


def question(text: str) -> web_questions.Question:
    return web_questions.Question(text, {"role": "user", "content": text}, None)


def test_a_page_answers_its_questions_in_order_and_drops_none():
    session = web_questions.ChatSession()
    session.add(question("first"))
    assert session.claim() and not session.claim(), "one loop writes a page's answers"
    assert session.next_question().text == "first"
    session.add(question("second"))  # asked while the first is answered
    assert [m["content"] for m in session.chat()][-1].count("Waiting") == 1, "shown as waiting"
    session.show({"role": "assistant", "content": "partial"})
    assert session.stop()
    session.finish(session.chat_number, None, stopped=True)
    assert web_html.STOPPED_NOTE in session.turns[-1]["content"] and "partial" in session.turns[-1]["content"]
    assert session.next_question().text == "second", "Stop ends one answer, not the ones waiting"
    session.finish(session.chat_number, [{"role": "user", "content": "second"}])
    assert session.next_question() is None and session.claim(), "once none waits, the next ask starts a new loop"


def test_a_question_asked_while_an_answer_is_written_is_answered_after_it(ui):
    session = web_questions.ChatSession()
    chat = ui.page.ask.chat
    ui.handlers.take_question("What is in the folder?", None, session)
    answering = ui.handlers.answer_all(session)
    next(answering)  # the first question is being answered
    shown = ui.handlers.take_question("And what else?", None, session)[chat]
    assert shown[-2]["content"] == "And what else?", "the question shows at once, under the one being answered"
    import gradio as gr

    assert list(ui.handlers.answer_all(session)) == [{chat: gr.skip()}], "a second loop leaves it to the first"
    updates = list(answering)
    final = updates[-1][chat]
    assert [m["content"] for m in final if m["role"] == "user"] == ["What is in the folder?", "And what else?"]
    assert len(final) == 4 and not any("Waiting" in m["content"] for m in final)


# ---------------------------------------------------------------- the real app


def server_env(tmp: Path, docs: Path, port: int) -> dict[str, str]:
    """The caller's environment minus any docqa setting, plus the ones this server needs."""
    env = {k: v for k, v in os.environ.items() if k not in {env_name(f.name) for f in SETTING_FIELDS}}
    env.update(
        XDG_CONFIG_HOME=str(tmp / "xdg"),
        DOCQA_ENV_FILE=str(tmp / "no-project.env"),
        DOCS_DIR=str(docs),
        DB_DIR=str(tmp / "data"),
        GRADIO_SERVER_PORT=str(port),
        LLM_BACKEND="llamacpp",
        LLM_MAX_TOKENS="48",
        OLLAMA_HOST=f"http://{NOWHERE}",
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.fixture(scope="module")
def docqa_server(tmp_path_factory) -> Iterator[SimpleNamespace]:
    """`python main.py serve` over the shipped documents plus the hostile one; killed at the end."""
    tmp = tmp_path_factory.mktemp("web_ui")
    docs = tmp / "documents"
    shutil.copytree(ROOT / "documents", docs)
    (docs / "lighthouse-notes.md").write_text(HOSTILE_DOCUMENT, encoding="utf-8")
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    cmd = [sys.executable, "main.py", "serve"]
    try:
        with running(cmd, url, tmp / "server.log", server_env(tmp, docs, port), ROOT, SERVER_START_S):
            wait_until_indexed(url)
            yield SimpleNamespace(url=url, docs=docs)
    except ServerDidNotStart as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def docqa_url(docqa_server: SimpleNamespace) -> str:
    return docqa_server.url


@pytest.fixture(scope="module")
def chromium_path() -> Path:
    if CHROMIUM.exists():
        return CHROMIUM
    message = (
        f"{CHROMIUM} is missing, so the browser tests cannot run: install Debian's Chromium with "
        "`apt-get install chromium`"
    )
    if os.environ.get("DOCQA_REQUIRE_BROWSER") == "1":
        pytest.fail(message + " (DOCQA_REQUIRE_BROWSER=1 makes this a failure)")
    pytest.skip(message + ", or set DOCQA_REQUIRE_BROWSER=1 to fail instead of skipping")


@pytest.fixture(scope="module")
def browser(chromium_path: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium_path), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def requested() -> list[str]:
    """Every URL the page asked for."""
    return []


@pytest.fixture
def page(browser: Any, docqa_url: str, requested: list[str]) -> Iterator[Any]:
    """A fresh page on the app, its requests recorded in `requested`."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=docqa_url.rstrip("/"))
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.on("request", lambda request: requested.append(request.url))
    page.goto(docqa_url)
    page.locator("#docqa-chat").wait_for()  # Gradio builds the page in the browser
    yield page
    context.close()


def watch_answer(page: Any) -> None:
    """Record the length of the newest assistant message each time the chat changes."""
    page.evaluate(
        """() => {
            window.__answerLengths = [];
            window.__answerTexts = [];
            const chat = document.querySelector('#docqa-chat');
            new MutationObserver(() => {
                const bots = chat.querySelectorAll('[data-testid="bot"]');
                if (!bots.length) return;
                const text = bots[bots.length - 1].innerText.trim();
                window.__answerLengths.push(text.length);
                window.__answerTexts.push(text.slice(0, 80));
            }).observe(chat, {subtree: true, childList: true, characterData: true});
        }"""
    )


def finished_answer(page: Any, count: int = 1) -> Any:
    """Assistant message number `count` once it carries its footer: the model, or none when
    docqa answered without it (a question no passage is close to)."""
    from playwright.sync_api import expect

    bots = page.locator("#docqa-chat [data-testid='bot']")
    expect(bots).to_have_count(count, timeout=ANSWER_TIMEOUT_MS)
    bot = bots.nth(count - 1)
    bot.filter(has_text=re.compile(f"— (llama\\.cpp:|{answer_render.NO_MODEL})")).wait_for(timeout=ANSWER_TIMEOUT_MS)
    return bot


def ask(page: Any, question: str) -> None:
    box = page.locator("#docqa-question textarea")
    box.fill(question)
    box.press("Enter")


def choose(page: Any, dropdown: str, option: str | re.Pattern[str]) -> None:
    page.locator(f"{dropdown} input").click()
    page.get_by_role("option", name=option).click()


def indexed_counts(page: Any) -> tuple[int, int]:
    """(files, chunks) from the status line, once the page has loaded it."""
    status = page.locator("#docqa-status")
    status.filter(has_text=" chunks").wait_for()
    files, chunks = re.search(r"(\d+) files · (\d+) chunks", status.inner_text()).groups()
    return int(files), int(chunks)


def upload(page: Any, paths: list[Path]) -> Any:
    """Drop files on the Documents tab; returns the upload report once it is shown."""
    page.get_by_role("tab", name="Documents").click()
    page.locator("#docqa-upload input[type=file]").set_input_files([str(p) for p in paths])
    report = page.locator("#docqa-upload-report")
    report.locator("li").first.wait_for()
    return report


@pytest.mark.browser
@pytest.mark.slow
def test_example_question_streams_a_cited_answer_with_its_pdf_page(page, tmp_path):
    from playwright.sync_api import expect

    question = EXAMPLE_QUESTIONS[0]
    expected = EXPECTED_SOURCES[question]
    watch_answer(page)
    page.get_by_role("button", name=question).click()

    bot = finished_answer(page)
    lengths = page.evaluate("window.__answerLengths")
    final = bot.inner_text().strip()
    growing = sorted({n for n in lengths if 0 < n < len(final)})
    assert len(growing) >= 3, f"the answer arrived in one piece, not streamed: lengths seen {lengths}"
    expect(page.locator("#docqa-chat [data-testid='user']")).to_have_text(question)
    # The quote comes first, verbatim with its place, before the model has written a word.
    shown = [t for t in page.evaluate("window.__answerTexts") if t.strip("… \n")]
    assert shown and shown[0].startswith("From the documents:"), shown[:3]
    assert "make run" in final.split("Answer:")[0] and final.index("From the documents:") < final.index("Answer:")

    sources = page.locator("#docqa-sources")
    # The card names the page, or the page range when neighbouring chunks across a page break merged.
    n = expected["page"]
    where = re.compile(rf"{re.escape(expected['file'])} — (page {n}(?!\d)|pages ({n}-\d+|\d+-{n})(?!\d))")
    expect(sources).to_contain_text(where)
    expect(sources).to_contain_text("score ")
    model = re.search(r"(?:Answered by|the answer of) (llama\.cpp:\S+) ", sources.inner_text())
    assert model, sources.inner_text()
    assert f"— {model[1]}" in final
    expect(page.locator("#docqa-status")).to_contain_text(f"model: {model[1]}")
    expect(page.locator("#docqa-status")).to_contain_text("ollama pull"), "the embedded model's note is said once, up top"
    assert "ollama pull" not in final, "and not under the answer"

    # Citations: every [n] the model wrote links to card n (the unit tests cover the rendering).
    cards = sources.locator(".docqa-source")
    expect(cards.first).to_have_attribute("id", "source-1")
    links = bot.locator("a[href^='#source-']")
    for href in [links.nth(i).get_attribute("href") for i in range(links.count())]:
        expect(sources.locator(href)).to_have_count(1)
    if links.count():
        links.first.click()
        assert page.evaluate("location.hash") == links.first.get_attribute("href")
    expect(cards.locator("mark").first).to_be_visible()

    shot = tmp_path / "screenshot.png"
    page.screenshot(path=str(shot))
    if os.environ.get("DOCQA_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)

    page.get_by_role("button", name="Copy answer").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith(final.split("\n")[0][:20]) and f"[1] {expected['file']}" in copied, copied

    choose(page, "#docqa-page-pick", where)
    image = page.locator("#docqa-page img")
    expect(image).to_have_attribute("src", re.compile(r"^data:image/png;base64,[A-Za-z0-9+/]{1000}"))

    page.get_by_role("button", name="New chat").click()
    expect(page.locator("#docqa-chat [data-testid='bot']")).to_have_count(0)
    expect(sources).to_have_text("Sources appear here.")
    expect(image).to_have_count(0)


@pytest.mark.browser
@pytest.mark.slow
def test_uploaded_files_are_indexed_answered_and_followed_up(page, tmp_path, docqa_server):
    from playwright.sync_api import expect

    files, chunks = indexed_counts(page)
    paths = []
    for name, text in {**UPLOADS, "setup.exe": "MZ not a document"}.items():
        paths.append(tmp_path / name)
        paths[-1].write_text(text, encoding="utf-8")
    report = upload(page, paths)

    for name in UPLOADS:
        expect(report).to_contain_text(f"Added {name} (1 chunk)")
        assert (docqa_server.docs / name).is_file()
    expect(report).to_contain_text("Refused setup.exe: file type .exe is not supported")
    expect(page.locator("#docqa-status")).to_contain_text(f"{files + 2} files · {chunks + 2} chunks")
    panel = page.locator("#docqa-index")
    expect(panel.get_by_role("row", name=re.compile(r"^Files "))).to_contain_text(f"{files + 2} (")
    expect(panel.get_by_role("row", name=re.compile(r"^Chunks "))).to_contain_text(str(chunks + 2))
    page.locator("#docqa-remove-pick input").click()
    for name in UPLOADS:
        expect(page.get_by_role("option", name=name)).to_be_visible()
    page.keyboard.press("Escape")

    page.get_by_role("tab", name="Ask").click()
    ask(page, UPLOAD_QUESTION)
    finished_answer(page)
    expect(page.locator("#docqa-sources")).to_contain_text("zebra-notes.md")

    ask(page, "And on which day?")
    expect(finished_answer(page, count=2)).to_contain_text("Searched for: ")


@pytest.mark.browser
@pytest.mark.slow
def test_removed_document_leaves_the_folder_and_the_index(page, tmp_path, docqa_server):
    from playwright.sync_api import expect

    doomed = tmp_path / "ferry-timetable.md"
    doomed.write_text("# Ferry\n\nThe first ferry leaves the quay at 06:40.\n", encoding="utf-8")
    expect(upload(page, [doomed])).to_contain_text("Added ferry-timetable.md")
    files, _ = indexed_counts(page)

    choose(page, "#docqa-remove-pick", "ferry-timetable.md")
    page.get_by_role("button", name="Remove…").click()
    expect(page.get_by_text("Delete ferry-timetable.md from the documents folder and the index?")).to_be_visible()
    page.get_by_role("button", name="Delete it").click()

    expect(page.locator("#docqa-remove-report")).to_contain_text("Removed ferry-timetable.md")
    expect(page.locator("#docqa-status")).to_contain_text(f"{files - 1} files")
    assert not (docqa_server.docs / "ferry-timetable.md").exists()
    page.locator("#docqa-remove-pick input").click()
    expect(page.get_by_role("option", name="ferry-timetable.md")).to_have_count(0)


@pytest.mark.browser
@pytest.mark.slow
def test_document_and_question_markup_is_shown_as_text(page, requested):
    from playwright.sync_api import expect

    question_box = page.locator("#docqa-question textarea")
    question_box.fill(HOSTILE_QUESTION)
    question_box.press("Enter")
    finished_answer(page)

    sources = page.locator("#docqa-sources")
    expect(sources).to_contain_text("lighthouse-notes.md")
    expect(sources).to_contain_text("<script>window.__pwned=1</script>")
    expect(sources).to_contain_text("![x](http://127.0.0.1:9/x.png)")
    expect(page.locator("#docqa-chat [data-testid='user']")).to_contain_text("<img src=")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img[src*='127.0.0.1:9']").count() == 0
    assert [url for url in requested if NOWHERE in url] == []
    app = page.url.split("?")[0]
    elsewhere = [url for url in requested if not url.startswith((app, "data:", "blob:"))]
    assert elsewhere == [], "the page asked for something beyond docqa itself"


@pytest.mark.slow
def test_api_offers_only_the_ask_endpoint(docqa_url):
    with urllib.request.urlopen(docqa_url + "gradio_api/info", timeout=30) as response:
        info = json.load(response)
    assert list(info["named_endpoints"]) == ["/ask"]
    assert info["unnamed_endpoints"] == {}


def test_rate_limiter_allows_n_per_minute_per_client():
    from web_questions import RateLimiter

    limiter = RateLimiter(3)
    assert [limiter.wait_s("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.wait_s("a") > 50
    assert limiter.wait_s("b") == 0.0
    assert RateLimiter(0).wait_s("a") == 0.0


def test_serving_off_loopback_needs_authentication(make_settings, tmp_path):
    from errors import ConfigError
    from web_ui import load_auth, serve

    class FakeRag:
        settings = make_settings(gradio_server_name="0.0.0.0")

    with pytest.raises(ConfigError, match="DOCQA_AUTH"):
        serve(FakeRag())
    users = tmp_path / "users"
    users.write_text("# team\nann:s3cret\nbob:hunter2\n", encoding="utf-8")
    assert load_auth(make_settings(docqa_auth="me:pw", docqa_auth_file=str(users))) == [("me", "pw"), ("ann", "s3cret"), ("bob", "hunter2")]
    with pytest.raises(ConfigError, match="user:password"):
        load_auth(make_settings(docqa_auth="nopassword"))


def test_config_command_hides_the_password(make_settings):
    from config import describe_settings

    rows = {name: value for name, value, _ in describe_settings(make_settings(docqa_auth="me:pw"))}
    assert rows["DOCQA_AUTH"] == "********"


@contextlib.contextmanager
def standin_server(tmp: Path, docs: Path, pieces: list[str], piece_delay_s: float = 0.0, **env: str) -> Iterator[str]:
    """`python main.py serve` over `docs`, answering through the Ollama stand-in with `pieces`; yields its URL."""
    from ollama_standin import OllamaStandin

    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with OllamaStandin(pieces=pieces, piece_delay_s=piece_delay_s) as ollama:
        full_env = {**server_env(tmp, docs, port), "LLM_BACKEND": "ollama", "OLLAMA_HOST": ollama.url, **env}
        with running([sys.executable, "main.py", "serve"], url, tmp / "server.log", full_env, ROOT, SERVER_START_S):
            wait_until_indexed(url)
            yield url


@pytest.mark.browser
@pytest.mark.slow
def test_a_wrong_model_answer_is_set_aside_for_the_quotes_with_a_notice(browser, tmp_path_factory):
    """Ollama (the stand-in) answers with a changed number: the quote stands, the notice says why."""
    from playwright.sync_api import expect

    tmp = tmp_path_factory.mktemp("set_aside")
    docs = tmp / "documents"
    shutil.copytree(ROOT / "documents", docs)
    with standin_server(tmp, docs, ["The default chunk size is ", "1024 bytes [1]."]) as url:
        page = open_page(browser, url)
        context = page.context
        ask(page, "What is the default chunk size?")
        bot = page.locator("#docqa-chat [data-testid='bot']").first
        bot.filter(has_text="— ollama:").wait_for(timeout=ANSWER_TIMEOUT_MS)
        expect(bot).to_contain_text("The model's answer was set aside")
        expect(bot).to_contain_text("1000")
        assert "1024 bytes" not in bot.inner_text(), "the wrong answer is not shown as the answer"
        expect(bot).not_to_contain_text("Underlined sentences"), "verbatim quotes are never marked unsupported"
        bot.get_by_text("Show the model's answer").click()
        expect(bot).to_contain_text("1024 bytes")
        context.close()


# ---------------------------------------------------------------- a slow model, one answer at a time

SLOW_PIECES = [f"{word} " for word in "The default chunk size is 1000 characters [1].".split()]
SLOW_PIECE_S = 1.5


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory) -> Iterator[SimpleNamespace]:
    """`python main.py serve` answering one question at a time (UI_CONCURRENCY=1) with a slow Ollama stand-in."""
    tmp = tmp_path_factory.mktemp("slow")
    docs = tmp / "documents"
    shutil.copytree(ROOT / "documents", docs)
    try:
        with standin_server(tmp, docs, SLOW_PIECES, SLOW_PIECE_S, UI_CONCURRENCY="1") as url:
            yield SimpleNamespace(url=url, docs=docs)
    except ServerDidNotStart as exc:
        pytest.fail(str(exc))


def open_page(browser: Any, url: str) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(url)
    page.locator("#docqa-chat").wait_for()
    return page


@pytest.mark.browser
@pytest.mark.slow
def test_a_second_tab_is_told_its_place_in_the_queue(browser, slow_server):
    from playwright.sync_api import expect

    first, second = open_page(browser, slow_server.url), open_page(browser, slow_server.url)
    try:
        ask(first, "What is the default chunk size?")
        # Its passages are shown once it holds the one answer slot; the model then takes a while.
        first.locator("#docqa-chat [data-testid='bot']").first.wait_for(timeout=ANSWER_TIMEOUT_MS)
        ask(second, "Does docqa send my documents anywhere?")
        waiting = second.locator("#docqa-chat [data-testid='bot']").first
        expect(waiting).to_contain_text("Waiting for another question to finish (1 ahead)", timeout=len(SLOW_PIECES) * SLOW_PIECE_S * 1000)
        answered = first.locator("#docqa-chat [data-testid='bot']").first
        expect(answered).to_contain_text("— ollama:", timeout=ANSWER_TIMEOUT_MS)
        expect(waiting).to_contain_text("— ollama:", timeout=ANSWER_TIMEOUT_MS)
        expect(waiting).not_to_contain_text("Waiting for")
    finally:
        first.context.close()
        second.context.close()


IN_VIEW_JS = """(el) => {
    // The element's top shows: inside every scrolled box around it, and inside the window.
    const top = el.getBoundingClientRect().top;
    for (let p = el.parentElement; p; p = p.parentElement) {
        if (!/(auto|scroll)/.test(getComputedStyle(p).overflowY)) continue;
        const box = p.getBoundingClientRect();
        if (top < box.top - 1 || top > box.bottom - 10) return false;
    }
    return top >= 0 && top < window.innerHeight - 10;
}"""


@pytest.mark.browser
@pytest.mark.slow
def test_ask_while_an_answer_streams_queues_the_question_stop_ends_an_answer_and_the_question_stays_in_view(browser, slow_server):
    from playwright.sync_api import expect

    page = open_page(browser, slow_server.url)
    chat = page.locator("#docqa-chat")
    bots, users = chat.locator("[data-testid='bot']"), chat.locator("[data-testid='user']")
    box, stop = page.locator("#docqa-question textarea"), page.get_by_role("button", name="Stop")
    try:
        ask(page, "What is the default chunk size?")
        expect(stop).to_be_visible()  # the answer is being written
        box.fill("Does docqa send my documents anywhere?")
        page.get_by_role("button", name="Ask").click()  # a click, as Enter did
        expect(users).to_have_count(2)
        expect(bots.nth(1)).to_contain_text("Waiting: answered once the question above is")
        expect(box).to_have_value("")
        expect(bots.first).to_contain_text("— ollama:", timeout=ANSWER_TIMEOUT_MS)
        expect(bots.nth(1)).to_contain_text("— ollama:", timeout=ANSWER_TIMEOUT_MS)
        expect(chat).not_to_contain_text("Waiting")

        # The chat holds more than its height: the latest question and the start of its answer still show.
        assert chat.locator(".bubble-wrap").evaluate("el => el.scrollHeight > el.clientHeight + 50"), "too short to test scrolling"
        assert users.nth(1).evaluate(IN_VIEW_JS), "the latest question is scrolled out of view"
        assert bots.nth(1).evaluate(IN_VIEW_JS), "the start of its answer is scrolled out of view"

        ask(page, "How do I use Ollama for better answers?")
        expect(bots).to_have_count(3)
        expect(stop).to_be_visible()  # its sources are shown and the model is writing
        stop.click()
        expect(bots.nth(2)).to_contain_text(web_html.STOPPED_NOTE, timeout=10_000)
        expect(bots.nth(2)).not_to_contain_text("— ollama:")
        expect(stop).to_be_hidden()
        expect(page.locator("p.docqa-model")).to_have_text(web_html.STOPPED_SOURCES)  # not "reading them" forever

        ask(page, "What is the default chunk size?")  # the slot Stop freed answers the next question
        expect(bots.nth(3)).to_contain_text("— ollama:", timeout=ANSWER_TIMEOUT_MS)
        assert users.nth(3).evaluate(IN_VIEW_JS), "the latest question is scrolled out of view"
    finally:
        page.context.close()


@pytest.mark.slow
def test_the_gradio_ask_endpoint_answers_with_the_chat_and_its_history(slow_server):
    from gradio_client import Client

    chat, history = Client(slow_server.url, verbose=False).predict("What is the default chunk size?", [], [], [], api_name="/ask")
    assert [m["role"] for m in chat] == ["user", "assistant"] and "— ollama:" in chat[-1]["content"]
    assert "1000" in history[-1]["content"], "the plain-text history a follow-up sends back"


@pytest.mark.browser
@pytest.mark.slow
def test_documents_tab_lists_every_file_refuses_an_empty_upload_and_removes_a_failed_file(browser, slow_server, tmp_path):
    from playwright.sync_api import expect

    page = open_page(browser, slow_server.url)
    try:
        indexed_counts(page)
        blank = tmp_path / "blank.pdf"
        blank.write_bytes(b"")
        report = upload(page, [blank])
        expect(report).to_contain_text("Refused blank.pdf: the file is empty (0 bytes)")
        assert not (slow_server.docs / "blank.pdf").exists()

        table = page.locator("#docqa-files")
        guide = table.get_by_role("row", name=re.compile(r"^docqa-user-guide\.pdf "))
        when = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d$")
        expect(guide.get_by_role("cell")).to_have_text(["docqa-user-guide.pdf", "pdf", "6 pages", re.compile(r"^\d+$"), when, "indexed"])
        (slow_server.docs / "broken.pdf").write_bytes(b"not a pdf at all")  # the folder watcher indexes it
        broken = table.get_by_role("row", name=re.compile(r"^broken\.pdf "))
        expect(broken).to_contain_text("failed: not a readable PDF: the file is damaged")
        assert str(slow_server.docs) not in broken.inner_text()

        choose(page, "#docqa-remove-pick", "broken.pdf (failed)")
        page.get_by_role("button", name="Remove…").click()
        page.get_by_role("button", name="Delete it").click()
        expect(page.locator("#docqa-remove-report")).to_contain_text("Removed broken.pdf")
        expect(broken).to_have_count(0)
        assert not (slow_server.docs / "broken.pdf").exists()
    finally:
        page.context.close()


@pytest.mark.browser
@pytest.mark.slow
def test_a_code_answer_shows_its_code_as_written_and_docqa_markup_outside_it(browser, tmp_path_factory):
    """The model (the stand-in) answers with a code block and cites nothing: the citation docqa adds, its
    links and its footer stay outside the code, and the code reads as written, in the answer and in the quote.
    The chat's "Answer" label sits above the messages, so it covers none of them when they scroll."""
    from playwright.sync_api import expect

    tmp = tmp_path_factory.mktemp("code_answer")
    docs = tmp / "documents"
    docs.mkdir()
    (docs / "lists.md").write_text(
        "# Lists\n\nA Python list is written in square brackets, and indexing starts at 0:\n\n"
        "```python\nxs = [1, 2]\nif len(xs) < 3:\n    print(xs[1])\n```\n",
        encoding="utf-8",
    )
    code = "xs = [1, 2]\nif len(xs) < 3:\n    print(xs[1])"
    with standin_server(tmp, docs, ["A Python list is written in square brackets:\n\n", f"```python\n{code}\n```"]) as url:
        page = open_page(browser, url)
        context = page.context
        ask(page, "How is a Python list written?")
        bot = page.locator("#docqa-chat [data-testid='bot']").first
        bot.filter(has_text="— ollama:").wait_for(timeout=ANSWER_TIMEOUT_MS)
        blocks = bot.locator("pre code")
        expect(blocks).to_have_count(2)  # in the quote, then in the answer
        assert [blocks.nth(i).inner_text().strip() for i in range(2)] == [code, code]
        assert blocks.locator("a, mark, [class^=docqa]").count() == 0, "no docqa markup inside the code"
        assert bot.locator("a[href='#source-1']").count() >= 1, "the citation outside the code links to its card"
        label = page.locator("#docqa-chat label[data-testid='block-label']").bounding_box()
        messages = page.locator("#docqa-chat .bubble-wrap").bounding_box()
        assert label["y"] + label["height"] <= messages["y"] + 1, "the Answer label sits above the messages, not over them"
        context.close()


@pytest.mark.browser
@pytest.mark.slow
def test_the_draft_shows_as_being_checked_then_the_final_answer_with_citations_that_open_their_source(browser, slow_server):
    from playwright.sync_api import expect

    from answer_render import DRAFT_NOTE

    page = open_page(browser, slow_server.url)
    try:
        ask(page, "What is the default chunk size?")
        bot = page.locator("#docqa-chat [data-testid='bot']").first
        expect(bot).to_contain_text(DRAFT_NOTE, timeout=ANSWER_TIMEOUT_MS)  # the model's words, not yet checked
        expect(bot).to_contain_text("— ollama:", timeout=ANSWER_TIMEOUT_MS)
        expect(bot).not_to_contain_text(DRAFT_NOTE)
        citation = bot.locator("a[href^='#source-']").first
        expect(citation).to_be_visible()
        target = citation.get_attribute("href")
        assert target and page.locator(target).count() == 1, "the citation names a source card on the page"
    finally:
        page.context.close()


class ManyPieces:
    """A model that writes its answer a word at a time, `pause` seconds apart; `taken` counts the words read."""

    name = "stand-in"

    def __init__(self, text: str, pause: float) -> None:
        self.text, self.pause, self.taken = text, pause, 0

    def stream(self, messages, max_tokens=None, schema=None) -> Iterator[str]:
        for word in self.text.split(" "):
            time.sleep(self.pause)
            self.taken += 1
            yield word + " "

    def yes_probability(self, messages) -> float:
        return 1.0

    def close(self) -> None:
        pass


def test_while_the_model_writes_the_chat_is_redrawn_a_few_times_a_second_and_whole_once_it_is_done(make_settings, embedder):
    """The page shares the cores with the model: redrawn at every piece, it took the model's time. Redraws
    come every STREAM_UPDATE_S while it writes, and the whole draft shows while it is checked."""
    sentences = [
        "The kettle is descaled every month.", "Its lid opens with the button on the handle.",
        "The cord winds around the base for storage.", "The water window shows the level from half a cup to two litres.",
        "The light turns off once the water boils.", "Rinse it twice with clean water before the next brew.",
    ]
    settings = make_settings()
    (settings.docs_dir / "kettle.md").write_text("# Kettle\n\n" + " ".join(sentences) + "\n", encoding="utf-8")
    text = " ".join(f"{s[:-1]} [1]." for s in sentences)
    rag = RAGSystem(settings, embedder=embedder, llm=ManyPieces(text, pause=0.03))
    try:
        rag.index()
        with gr.Blocks():
            page = web_layout.layout(rag)
        handlers, session = web_handlers.Handlers(rag, page), web_questions.ChatSession()
        handlers.take_question("How often is the kettle descaled?", None, session)
        chats = [json.dumps(u[page.ask.chat]) for u in handlers.answer_all(session) if page.ask.chat in u]
    finally:
        rag.close()
    pieces = len(text.split(" "))
    assert len(chats) < pieces / 2, f"{len(chats)} redraws for {pieces} pieces"
    partial = [c for c in chats if "every month [" in c and "next brew [" not in c]  # the draft's words, cited: not the quote's
    assert len(partial) >= 2, "redrawn while the model writes, not only at the end"
    drafts = [c for c in chats if "Draft: being checked" in c]
    assert drafts and "next brew [" in drafts[-1], "the whole draft shows while it is checked"
    assert "Draft: being checked" not in chats[-1], "then the answer"


def test_a_stopped_answer_keeps_every_word_the_model_wrote_before_stop(make_settings, embedder):
    """Between two redraws the chat lags the model by up to STREAM_UPDATE_S; a stopped answer shows all of it."""
    settings = make_settings()
    (settings.docs_dir / "kettle.md").write_text("# Kettle\n\nThe kettle is descaled every month.\n", encoding="utf-8")
    model = ManyPieces(" ".join(f"word{n}" for n in range(1, 200)), pause=0.02)
    rag = RAGSystem(settings, embedder=embedder, llm=model)
    try:
        rag.index()
        with gr.Blocks():
            page = web_layout.layout(rag)
        handlers, session = web_handlers.Handlers(rag, page), web_questions.ChatSession()
        handlers.take_question("How often is the kettle descaled?", None, session)
        chats = []
        for update in handlers.answer_all(session):
            if page.ask.chat in update:
                chats.append(json.dumps(update[page.ask.chat]))
                if "word5 " in chats[-1] and not session.stop_requested:
                    handlers.stop(session)
    finally:
        rag.close()
    assert 5 < model.taken < 199, "stopped part-way"
    assert f"word{model.taken}" in chats[-1], f"the last word read, word{model.taken}, is shown"


def test_answers_stream_without_gradios_progress_animation(open_rag):
    """With the animation on the answer's eight outputs, the model wrote 5-25% slower in Chromium on two
    cores (docs/benchmarks.md); the chat and the sources line show that an answer is coming."""
    app = web_ui.build_app(open_rag())
    answering = [d for d in app.config["dependencies"] if getattr(app.fns[d["id"]].fn, "__name__", "") == "answer_all"]
    assert answering and all(d["show_progress"] == "hidden" for d in answering)
