"""The Gradio chat UI. It formats and displays; RAGSystem decides retrieval and prompting.

Everything that comes from a document (snippets, file names) or from the model is shown
as text, never as markup: the sources panel HTML-escapes it, and the chat gets markdown
in which no raw HTML or image can appear (see `safe_markdown`). The conversation lives
in server-side state, so what the browser sends back is never rendered as our output.

Written for Gradio 6: `css` and `theme` go to `launch()`, the Chatbot takes
``{"role", "content"}`` messages, and helper events are hidden with
``api_visibility="private"`` so the API exposes one endpoint, ``/ask``.
"""

from __future__ import annotations

import html
import logging
import re
from typing import Any, Iterator

from errors import ConfigError

log = logging.getLogger(__name__)

# The same four questions scripts/make_documents.py answers in the shipped documents.
EXAMPLE_QUESTIONS = [
    "Which two commands set up and run docqa?",
    "What is the default chunk size?",
    "Does docqa send my documents anywhere?",
    "How do I use Ollama for better answers?",
]

NO_SOURCES = "<p class='docqa-empty'>Sources appear here.</p>"
SNIPPET_CHARS = 400
MARKDOWN_HEADING = re.compile(r"^#{1,6} ", re.MULTILINE)  # the heading path is shown on its own line

CSS = """
.docqa-source { border: 1px solid var(--border-color-primary); border-radius: 6px; padding: 8px 10px; margin: 6px 0; }
.docqa-source .where { font-weight: 600; }
.docqa-source .meta { color: var(--body-text-color-subdued); font-size: 0.85em; }
.docqa-source .snippet { white-space: pre-wrap; font-size: 0.9em; margin-top: 4px; }
.docqa-model { color: var(--body-text-color-subdued); font-size: 0.9em; }
"""

Message = dict[str, str]


def safe_markdown(text: str) -> str:
    """Model output as markdown that cannot run or load anything: no raw HTML, no images.

    Every HTML construct (tag, comment, autolink) starts with "<", so escaping it leaves
    none; "![" is the only markdown that loads a resource. "&" stays, so an answer's
    `a && b` reads right inside a code span; an entity can only ever spell text.
    """
    text = text.replace("<", "&lt;")
    return text.replace("![", "!\\[")


def sources_html(answer: Any) -> str:
    """The passages behind an answer, with where they come from, as escaped HTML."""
    if not answer.passages:
        return "<p class='docqa-empty'>No sources.</p>"
    parts = [f"<p class='docqa-model'>{html.escape(answer_note(answer))}</p>"]
    for n, p in enumerate(answer.passages, start=1):
        found = ", ".join(f"{k} #{v}" for k, v in sorted(p.found_by.items()))
        heading = " > ".join(p.heading_path)
        snippet = " ".join(MARKDOWN_HEADING.sub("", p.text).split())
        if len(snippet) > SNIPPET_CHARS:
            snippet = snippet[:SNIPPET_CHARS] + "…"
        where = f" — {html.escape(p.location)}" if p.location and p.location != heading else ""
        parts.append(
            f"<div class='docqa-source' id='source-{n}'>"
            f"<div class='where'>[{n}] {html.escape(p.source)}{where}</div>"
            + (f"<div class='meta'>{html.escape(heading)}</div>" if heading else "")
            + f"<div class='meta'>score {p.score:.4f} · found by {html.escape(found)}</div>"
            f"<div class='snippet'>{html.escape(snippet)}</div></div>"
        )
    return "\n".join(parts)


def answer_note(answer: Any) -> str:
    """One line on who answered and how long it took, or what is happening now."""
    if answer.done:
        took = answer.timings.get("total_s")
        return f"Answered by {answer.model or 'no model'}" + (f" in {took:.1f}s" if took else "")
    found = f"Found {len(answer.passages)} passage{'' if len(answer.passages) == 1 else 's'}"
    return f"{found}; {answer.model} is answering…" if answer.model else f"{found}; loading the model…"


def status_markdown(rag: Any) -> str:
    s = rag.stats()
    line = (
        f"**{s['files']}** files · **{s['chunks']}** chunks · model: **{html.escape(s['llm'])}** · "
        f"embeddings: {html.escape(s['embedding_model'])} · retrieval: {html.escape(str(s['retrieval_mode']))}"
    )
    if s.get("last_indexed"):
        line += f" · last indexed {s['last_indexed']}"
    if s["failed"]:
        line += f" · {len(s['failed'])} file(s) failed (see `python main.py stats`)"
    if s.get("warning"):
        line = f"⚠ {html.escape(s['warning'])}\n\n" + line
    return line


def answer_message(answer: Any) -> Message:
    text = safe_markdown(answer.text) or "…"
    if answer.done and answer.model:
        text += f"\n\n*— {safe_markdown(answer.model)}*"
    return {"role": "assistant", "content": text}


def build_app(rag: Any) -> Any:
    import gradio as gr

    sources = sorted(rag.indexer.manifest.files)

    def respond(question: str | None, turns: list[Message], files: list[str] | None) -> Iterator[tuple[Any, ...]]:
        """Stream one answer: outputs are (chat, turns, sources, question box, status)."""
        question = (question or "").strip()
        if not question:
            yield gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
            return
        asked = [*turns, {"role": "user", "content": safe_markdown(question)}]
        where = {"source": list(files)} if files else None
        shown_passages = False
        for answer in rag.stream_answer(question, where=where):
            history = [*asked, answer_message(answer)]
            if answer.done:
                yield history, history, sources_html(answer), gr.skip(), status_markdown(rag)
            elif not shown_passages:
                shown_passages = True
                yield history, history, sources_html(answer), "", gr.skip()
            else:
                # Token by token only the chat changes: the sources were sent once already.
                yield history, history, gr.skip(), gr.skip(), gr.skip()

    def new_chat() -> tuple[list[Message], list[Message], str, str]:
        return [], [], NO_SOURCES, ""

    with gr.Blocks(title="docqa", analytics_enabled=False) as app:
        gr.Markdown("# docqa\nAsk questions about the files in your documents folder. Answers cite their sources.")
        status = gr.Markdown(status_markdown(rag), elem_id="docqa-status")
        turns = gr.State([])
        with gr.Row():
            with gr.Column(scale=3):
                chat = gr.Chatbot(
                    label="Answer",
                    elem_id="docqa-chat",
                    height=460,
                    # Defence in depth: safe_markdown already leaves no HTML to sanitise.
                    sanitize_html=True,
                    allow_tags=False,
                    latex_delimiters=[],
                    buttons=["copy", "copy_all"],
                    feedback_options=None,
                )
                box = gr.Textbox(
                    placeholder="Ask a question about your documents…", show_label=False, elem_id="docqa-question"
                )
                with gr.Row():
                    send = gr.Button("Ask", variant="primary", elem_id="docqa-ask")
                    clear = gr.Button("New chat", elem_id="docqa-new-chat")
                gr.Markdown("**Example questions**")
                with gr.Row():
                    example_buttons = [
                        gr.Button(q, size="sm", elem_classes=["docqa-example"]) for q in EXAMPLE_QUESTIONS
                    ]
            with gr.Column(scale=2):
                files = gr.Dropdown(
                    choices=sources, multiselect=True, label="Only these documents (optional)", elem_id="docqa-filter"
                )
                gr.Markdown("**Sources**")
                source_box = gr.HTML(NO_SOURCES, elem_id="docqa-sources")

        outputs = [chat, turns, source_box, box, status]
        send.click(respond, [box, turns, files], outputs, api_name="ask")
        box.submit(respond, [box, turns, files], outputs, api_visibility="private")
        for button in example_buttons:
            # A button given as an input passes its label: the question itself.
            button.click(respond, [button, turns, files], outputs, api_visibility="private")
        clear.click(new_chat, None, [chat, turns, source_box, box], api_visibility="private")
        # The chat's own trash button empties the chat; forget the conversation with it.
        chat.clear(new_chat, None, [chat, turns, source_box, box], api_visibility="private")
    return app


def serve(rag: Any) -> None:
    s = rag.settings
    if s.gradio_server_name not in ("127.0.0.1", "localhost", "::1"):
        raise ConfigError(
            f"Refusing to listen on {s.gradio_server_name} without authentication: docqa serves private "
            "documents. Keep GRADIO_SERVER_NAME=127.0.0.1, or put it behind an authenticating proxy."
        )
    app = build_app(rag)
    app.queue(default_concurrency_limit=4)
    log.info("Serving docqa on http://%s:%d", s.gradio_server_name, s.gradio_server_port)
    app.launch(
        server_name=s.gradio_server_name,
        server_port=s.gradio_server_port,
        show_error=False,
        css=CSS,
        # Questions and answers quote private documents: keep them out of the browser's storage.
        run_history=False,
        footer_links=["api"],
    )
