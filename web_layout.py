"""The web page's layout: its components, built inside an open gr.Blocks, and the dataclasses
that name them for the handlers (web_handlers.py) and the wiring (web_ui.py). No behaviour here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gradio as gr

from web_html import NO_SOURCES, indexed_sources
from web_questions import ChatSession

if TYPE_CHECKING:
    from rag_system import RAGSystem

# The same four questions scripts/make_documents.py answers in the shipped documents.
EXAMPLE_QUESTIONS = [
    "Which two commands set up and run docqa?",
    "What is the default chunk size?",
    "Does docqa send my documents anywhere?",
    "How do I use Ollama for better answers?",
]

STATUS_POLL_S = 2.0

CSS = """
#docqa-chat label[data-testid="block-label"] { position: static; margin-bottom: 4px; }  /* above the messages, not floating over them */
.docqa-source { border: 1px solid var(--border-color-primary); border-radius: 6px; padding: 8px 10px; margin: 6px 0; }
.docqa-source:target { outline: 2px solid var(--color-accent); }
.docqa-source .where { font-weight: 600; }
.docqa-source .meta { color: var(--body-text-color-subdued); font-size: 0.85em; }
.docqa-source .snippet { white-space: pre-wrap; font-size: 0.9em; margin-top: 4px; }
.docqa-source details summary { cursor: pointer; font-size: 0.85em; color: var(--body-text-color-subdued); }
.docqa-source mark { background: #fde68a; color: inherit; border-radius: 2px; padding: 0 1px; }
.docqa-model { color: var(--body-text-color-subdued); font-size: 0.9em; }
mark.docqa-unsupported { background: transparent; color: inherit; text-decoration: underline wavy #d97706; text-underline-offset: 3px; }
.docqa-note { color: var(--body-text-color-subdued); font-size: 0.9em; }
.docqa-draft { color: var(--body-text-color-subdued); font-style: italic; font-size: 0.9em; }
.docqa-indexing { color: var(--body-text-color-subdued); font-size: 0.9em; }
.docqa-page img { max-width: 100%; border: 1px solid var(--border-color-primary); }
.docqa-page figcaption { color: var(--body-text-color-subdued); font-size: 0.85em; }
.docqa-index table { border-collapse: collapse; }
.docqa-index th { text-align: left; padding-right: 1em; font-weight: 600; vertical-align: top; }
.docqa-index progress { width: 12em; }
.docqa-files table { border-collapse: collapse; width: 100%; }
.docqa-files th, .docqa-files td { text-align: left; padding: 2px 8px; vertical-align: top; border-bottom: 1px solid var(--border-color-primary); }
.docqa-files tr.failed td, .docqa-files tr.skipped td { color: var(--body-text-color-subdued); }
"""

COPY_JS = """(text) => {
    navigator.clipboard.writeText(text || "");
    const button = document.querySelector("#docqa-copy");
    if (button) { const label = button.textContent; button.textContent = "Copied"; setTimeout(() => { button.textContent = label; }, 1500); }
    return [];
}"""

CHAT_SCROLL_JS = """() => {
    // Keep the question being answered in view: when a new one starts (or the latest finishes), put
    // it at the top of the chat, so it and the start of its answer show without scrolling up.
    // A question queued on this page (.docqa-queued) is not started yet; the one before it is.
    let shown = -1;
    const scrollParent = (el) => {
        for (let p = el.parentElement; p; p = p.parentElement) {
            const style = getComputedStyle(p);
            if (/(auto|scroll)/.test(style.overflowY) && p.scrollHeight > p.clientHeight) return p;
        }
        return null;
    };
    const look = () => {
        const chat = document.querySelector("#docqa-chat");
        if (!chat) return;
        const users = chat.querySelectorAll("[data-testid='user']");
        const bots = chat.querySelectorAll("[data-testid='bot']");
        let target = -1;
        bots.forEach((bot, i) => { if (!bot.querySelector(".docqa-queued")) target = i; });
        if (target >= users.length) target = users.length - 1;
        if (target === shown) return;
        shown = target;
        if (target < 0) return;
        const question = users[target];
        const box = scrollParent(question);
        if (box) box.scrollTop += question.getBoundingClientRect().top - box.getBoundingClientRect().top - 8;
        const top = question.getBoundingClientRect().top;
        if (top < 0 || top > window.innerHeight - 80) window.scrollBy(0, top - 80);
    };
    const watch = () => {
        const chat = document.querySelector("#docqa-chat");
        if (!chat) { setTimeout(watch, 200); return; }
        new MutationObserver(look).observe(chat, {subtree: true, childList: true, characterData: true});
    };
    watch();
}"""


@dataclass
class AskTab:
    chat: gr.Chatbot
    box: gr.Textbox
    send: gr.Button
    stop: gr.Button
    clear: gr.Button
    copy: gr.Button
    copy_text: gr.Textbox
    examples: list[gr.Button]
    files: gr.Dropdown
    sources: gr.HTML
    page_pick: gr.Dropdown
    page_view: gr.HTML


@dataclass
class DocumentsTab:
    uploader: gr.File
    upload_report: gr.HTML
    remove_pick: gr.Dropdown
    remove_ask: gr.Button
    confirm: gr.Group
    confirm_text: gr.HTML
    remove_yes: gr.Button
    remove_no: gr.Button
    remove_report: gr.HTML
    index_panel: gr.HTML
    files_table: gr.HTML


@dataclass
class Page:
    """Every component the handlers read or change."""

    status: gr.Markdown
    indexing_note: gr.Markdown
    session: gr.State  # the page's ChatSession: its turns, the answer being written, the questions waiting
    targets: gr.State  # the PDF pages of the latest answer
    seen: gr.State  # the indexer state the page last showed
    timer: gr.Timer
    ask: AskTab
    docs: DocumentsTab

    def listings(self) -> list[Any]:
        """What shows the index: refreshed after a sync, an upload or a removal."""
        return [self.status, self.indexing_note, self.docs.index_panel, self.docs.files_table, self.ask.files, self.docs.remove_pick]


def ask_tab(sources: list[str]) -> AskTab:
    with gr.Tab("Ask", id="ask"), gr.Row():
        with gr.Column(scale=3):
            chat = gr.Chatbot(
                label="Answer",
                elem_id="docqa-chat",
                height=460,
                # Streaming would pull the view to the bottom, past the question; CHAT_SCROLL_JS puts
                # the question being answered at the top of the chat instead.
                autoscroll=False,
                # Defence in depth: model text reaches the chat escaped already.
                sanitize_html=True,
                allow_tags=False,
                latex_delimiters=[],
                # Gradio's copy buttons would copy our link and <mark> markup; "Copy answer"
                # copies the answer and its sources as plain text instead.
                buttons=[],
                feedback_options=None,
            )
            box = gr.Textbox(placeholder="Ask a question about your documents…", show_label=False, elem_id="docqa-question")
            with gr.Row():
                send = gr.Button("Ask", variant="primary", elem_id="docqa-ask")
                stop = gr.Button("Stop", variant="stop", visible=False, elem_id="docqa-stop")
                clear = gr.Button("New chat", elem_id="docqa-new-chat")
                copy = gr.Button("Copy answer", elem_id="docqa-copy")
            copy_text = gr.Textbox(visible=False, elem_id="docqa-copy-text")
            gr.Markdown("**Example questions**")
            with gr.Row():
                examples = [gr.Button(q, size="sm", elem_classes=["docqa-example"]) for q in EXAMPLE_QUESTIONS]
        with gr.Column(scale=2):
            files = gr.Dropdown(
                choices=sources, multiselect=True, label="Only these documents (optional)", elem_id="docqa-filter"
            )
            gr.Markdown("**Sources**")
            source_box = gr.HTML(NO_SOURCES, elem_id="docqa-sources")
            page_pick = gr.Dropdown(
                label="Show a PDF page with the passage highlighted", visible=False, elem_id="docqa-page-pick"
            )
            page_view = gr.HTML("", elem_id="docqa-page")
    return AskTab(chat, box, send, stop, clear, copy, copy_text, examples, files, source_box, page_pick, page_view)


def documents_tab() -> DocumentsTab:
    with gr.Tab("Documents", id="documents"):
        with gr.Row():
            with gr.Column():
                uploader = gr.File(file_count="multiple", label="Add documents (drop several files)", elem_id="docqa-upload")
                upload_report = gr.HTML("", elem_id="docqa-upload-report")
                remove_pick = gr.Dropdown(label="Remove a document", elem_id="docqa-remove-pick")
                remove_ask = gr.Button("Remove…", elem_id="docqa-remove")
                with gr.Group(visible=False) as confirm:
                    confirm_text = gr.HTML("")
                    with gr.Row():
                        remove_yes = gr.Button("Delete it", variant="stop", elem_id="docqa-remove-confirm")
                        remove_no = gr.Button("Cancel", elem_id="docqa-remove-cancel")
                remove_report = gr.HTML("", elem_id="docqa-remove-report")
            with gr.Column():
                gr.Markdown("**Index**")
                index_panel = gr.HTML("", elem_id="docqa-index")
        gr.Markdown("**Files**")
        files_table = gr.HTML("", elem_id="docqa-files")
    return DocumentsTab(
        uploader, upload_report, remove_pick, remove_ask, confirm, confirm_text, remove_yes, remove_no, remove_report,
        index_panel, files_table,
    )


def layout(rag: RAGSystem) -> Page:
    """The page's components, inside an open gr.Blocks."""
    gr.Markdown("# docqa\nAsk questions about the files in your documents folder. Answers cite their sources.")
    status = gr.Markdown(elem_id="docqa-status")
    indexing_note = gr.Markdown(elem_id="docqa-indexing")
    session, targets, seen = gr.State(ChatSession()), gr.State([]), gr.State(None)
    with gr.Tabs():
        ask = ask_tab(indexed_sources(rag.documents()))
        docs = documents_tab()
    return Page(status, indexing_note, session, targets, seen, gr.Timer(STATUS_POLL_S), ask, docs)
