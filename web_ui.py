"""The Gradio chat UI. It formats and displays; RAGSystem decides retrieval and prompting.

Everything that comes from a document (snippets, file names) or from the model is shown
as text, never as markup: snippets are HTML-escaped, and the answer's raw HTML and
images are neutralised before the chat renders its markdown.
"""

from __future__ import annotations

import html
import logging
import re
from typing import Any, Iterator

from errors import ConfigError

log = logging.getLogger(__name__)

EXAMPLE_QUESTIONS = [
    "Which two commands set up and run docqa?",
    "What is the default chunk size?",
    "Does docqa send my documents anywhere?",
    "How do I use Ollama for better answers?",
]

CSS = """
.docqa-source { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 10px; margin: 6px 0; }
.docqa-source .where { font-weight: 600; }
.docqa-source .meta { color: #57606a; font-size: 0.85em; }
.docqa-source .snippet { white-space: pre-wrap; font-size: 0.9em; margin-top: 4px; }
"""


def safe_markdown(text: str) -> str:
    """Model output as markdown that cannot run or load anything: no raw HTML, no images."""
    text = html.escape(text, quote=False)
    return re.sub(r"!\[", r"!\\[", text)


def sources_html(answer: Any) -> str:
    if not answer.passages:
        return "<p class='docqa-empty'>No sources.</p>"
    parts = []
    if answer.model or answer.timings:
        took = answer.timings.get("total_s")
        parts.append(
            "<p class='meta docqa-model'>Answered by "
            f"{html.escape(answer.model or 'no model')}"
            + (f" in {took:.1f}s" if took else "")
            + "</p>"
        )
    for n, p in enumerate(answer.passages, start=1):
        found = ", ".join(f"{k} #{v}" for k, v in sorted(p.found_by.items()))
        heading = " > ".join(p.heading_path)
        snippet = " ".join(p.text.split())
        if len(snippet) > 400:
            snippet = snippet[:400] + "…"
        parts.append(
            f"<div class='docqa-source' id='source-{n}'>"
            f"<div class='where'>[{n}] {html.escape(p.source)}"
            + (f" — {html.escape(p.location)}" if p.location and p.location != heading else "")
            + "</div>"
            + (f"<div class='meta'>{html.escape(heading)}</div>" if heading else "")
            + f"<div class='meta'>score {p.score:.4f} · found by {html.escape(found)}</div>"
            f"<div class='snippet'>{html.escape(snippet)}</div></div>"
        )
    return "\n".join(parts)


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


def build_app(rag: Any) -> Any:
    import gradio as gr

    sources = sorted(rag.indexer.manifest.files)

    def respond(message: str, history: list[dict[str, Any]], files: list[str] | None) -> Iterator[tuple[Any, str, str, str]]:
        message = (message or "").strip()
        if not message:
            yield history, "", "", status_markdown(rag)
            return
        history = list(history or []) + [{"role": "user", "content": safe_markdown(message)}, {"role": "assistant", "content": ""}]
        where = {"source": list(files)} if files else None
        answer = None
        for answer in rag.stream_answer(message, where=where):
            history[-1] = {"role": "assistant", "content": safe_markdown(answer.text) or "…"}
            yield history, sources_html(answer), "", status_markdown(rag)
        if answer is not None and answer.model:
            history[-1] = {"role": "assistant", "content": safe_markdown(answer.text) + f"\n\n*— {html.escape(answer.model)}*"}
            yield history, sources_html(answer), "", status_markdown(rag)

    with gr.Blocks(title="docqa") as app:
        gr.Markdown("# docqa\nAsk questions about the files in your documents folder. Answers cite their sources.")
        status = gr.Markdown(status_markdown(rag), elem_id="docqa-status")
        with gr.Row():
            with gr.Column(scale=3):
                chat = gr.Chatbot(label="Answer", elem_id="docqa-chat", height=460)
                box = gr.Textbox(placeholder="Ask a question about your documents…", show_label=False, elem_id="docqa-question")
                with gr.Row():
                    send = gr.Button("Ask", variant="primary", elem_id="docqa-ask")
                    clear = gr.Button("New chat", elem_id="docqa-new-chat")
                gr.Markdown("**Example questions**")
                with gr.Row():
                    example_buttons = [gr.Button(q, size="sm", elem_classes=["docqa-example"]) for q in EXAMPLE_QUESTIONS]
            with gr.Column(scale=2):
                files = gr.Dropdown(choices=sources, multiselect=True, label="Only these documents (optional)", elem_id="docqa-filter")
                gr.Markdown("**Sources**")
                source_box = gr.HTML("<p class='docqa-empty'>Sources appear here.</p>", elem_id="docqa-sources")

        outputs = [chat, source_box, box, status]
        send.click(respond, [box, chat, files], outputs)
        box.submit(respond, [box, chat, files], outputs)
        for button in example_buttons:
            button.click(respond, [button, chat, files], outputs)
        clear.click(lambda: ([], "<p class='docqa-empty'>Sources appear here.</p>", ""), None, [chat, source_box, box])
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
    app.launch(server_name=s.gradio_server_name, server_port=s.gradio_server_port, show_error=False, css=CSS)
