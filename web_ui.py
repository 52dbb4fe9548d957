"""The Gradio UI: ask and chat, manage the documents folder. Layout, and handlers that
return {component: value}; RAGSystem decides retrieval, prompting, what goes into the index
and which turns a follow-up sees, and answer_render writes answers and passages.

Everything that comes from a document (passages, file names) or from the model is shown
as text, never as markup (see answer_render). The conversation lives in server-side state,
so what the browser sends back is never rendered as our output. A PDF page is sent inline
as a data: URI and an upload's temporary copy is deleted once saved, so no private
document lingers in Gradio's file cache.

Written for Gradio 6: `css` goes to `launch()`, the Chatbot takes ``{"role", "content"}``
messages, and helper events (uploads, the status timer) are hidden with
``api_visibility="private"`` so the API exposes one endpoint, ``/ask``.
"""

from __future__ import annotations

import base64
import html
import logging
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from answer_render import answer_as_text, answer_markdown, literal_markdown, safe_markdown, sources_html
from config import LOOPBACK
from doc_types import PAGE_VIEW_EXTENSIONS
from errors import ConfigError, DocqaError
from index_status import DOCUMENT_COLUMNS, document_rows

if TYPE_CHECKING:
    import gradio as gr

    from config import Settings
    from rag_system import Answer, DocumentStatus, IndexStatus, RAGSystem

log = logging.getLogger(__name__)

# The same four questions scripts/make_documents.py answers in the shipped documents.
EXAMPLE_QUESTIONS = [
    "Which two commands set up and run docqa?",
    "What is the default chunk size?",
    "Does docqa send my documents anywhere?",
    "How do I use Ollama for better answers?",
]

NO_SOURCES = "<p class='docqa-empty'>Sources appear here.</p>"
STATUS_POLL_S = 2.0
QUEUE_POLL_S = 1.0
"""How often a question waiting its turn looks again, and tells its page how many are ahead."""

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

Message = dict[str, str]
Update = dict[Any, Any]
"""What a handler returns: {component: new value}; a component left out keeps its value."""


# ---------------------------------------------------------------- the chat and the PDF pages


def answer_message(answer: Answer) -> Message:
    return {"role": "assistant", "content": answer_markdown(answer)}


def page_targets(answer: Answer) -> list[dict[str, Any]]:
    """The PDF and image pages an answer's passages come from, each with the text to highlight on it."""
    highlights = getattr(answer, "highlights", None) or {}
    targets = []
    for n, p in enumerate(answer.passages, start=1):
        if Path(p.source).suffix.lower() not in PAGE_VIEW_EXTENSIONS:
            continue
        for page in p.pages or [1]:  # a one-page image is cited by file alone
            printed = p.printed_page(page)
            targets.append(
                {
                    "label": f"[{n}] {p.source} — page {printed}" + (f" (PDF page {page})" if printed != str(page) else ""),
                    "source": p.source,
                    "page": page,
                    "texts": list(highlights.get(n, [])) or [p.text],
                }
            )
    return targets


def page_image_html(png: bytes, label: str) -> str:
    """A rendered page inline as a data: URI: nothing is written to Gradio's file cache or fetched."""
    data = base64.b64encode(png).decode("ascii")
    return (
        f"<figure class='docqa-page'><img alt='{html.escape(label, quote=True)}' src='data:image/png;base64,{data}'>"
        f"<figcaption>{html.escape(label)}, passage highlighted</figcaption></figure>"
    )


# ---------------------------------------------------------------- status and the documents folder


def status_markdown(stats: dict[str, Any]) -> str:
    line = (
        f"**{stats['files']}** files · **{stats['chunks']}** chunks · model: **{html.escape(stats['llm'])}** · "
        f"embeddings: {html.escape(stats['embedding_model'])} · retrieval: {html.escape(str(stats['retrieval_mode']))}"
    )
    if stats.get("last_indexed"):
        line += f" · last indexed {stats['last_indexed']}"
    if stats["failed"]:
        line += f" · {len(stats['failed'])} file(s) failed (see the Documents tab)"
    if stats.get("warning"):
        line = f"⚠ {html.escape(stats['warning'])}\n\n" + line
    return line


def time_left_text(seconds: float | None) -> str:
    if seconds is None:
        return "estimating the time left"
    if seconds < 90:
        return f"about {max(1, round(seconds))} s left"
    return f"about {round(seconds / 60)} min left"


def progress_text(status: IndexStatus, now: float | None = None) -> str:
    """A running sync in one line of plain text: files, chunks, the file in hand, the time left."""
    if status.stage == "looking":
        return "Indexing: looking for files in the documents folder…"
    if status.stage == "checking":
        text = f"Indexing: checking {status.done} of {status.total} files for changes"
    else:
        more = "+" if status.done < status.total else ""  # chunks of the files not read yet are still to come
        text = (
            f"Indexing: {status.done} of {status.total} files read, "
            f"{status.chunks_done} of {status.chunks_total}{more} chunks embedded"
        )
    if status.current:
        text += f"; now: {status.current}"
    if status.stage == "indexing":
        text += f"; {time_left_text(status.seconds_left(now))}"
    return text + "…"


def indexing_markdown(status: IndexStatus, now: float | None = None) -> str:
    """What the background indexer is doing, when that is worth a line. Plain symbols only:
    an emoji such as an hourglass is an empty box where no installed font has it."""
    if status.state == "indexing":
        return literal_markdown(progress_text(status, now))
    if status.state == "failed":
        return f"⚠ Indexing failed: {html.escape(str(status.error or 'see the server log'))}"
    return ""


def index_run_html(status: IndexStatus) -> str:
    if status.state == "indexing":
        bar = f"<progress value='{status.done}' max='{max(status.total, 1)}'></progress>" if status.total else ""
        return f"{html.escape(progress_text(status))} {bar}"
    if status.state == "failed":
        return f"failed: {html.escape(str(status.error or ''))}"
    run = "idle"
    if status.finished:
        finished = time.strftime("%H:%M:%S", time.localtime(status.finished))
        run += f" — last run {finished}: {html.escape(str(status.summary or ''))}"
    return run


def index_panel_html(stats: dict[str, Any], status: IndexStatus) -> str:
    """The index in detail: counts, models, the last run, failed and skipped files with reasons."""
    kinds = ", ".join(f"{k or 'other'} {n}" for k, n in sorted(stats.get("files_by_type", {}).items()))
    rows = [
        ("Files", f"{stats['files']}" + (f" ({html.escape(kinds)})" if kinds else "")),
        ("Chunks", str(stats["chunks"])),
        ("Last indexed", html.escape(stats.get("last_indexed") or "never")),
        ("Indexing", index_run_html(status)),
        ("Answer model", html.escape(stats["llm"])),
        ("Embedding model", html.escape(stats["embedding_model"])),
        ("Retrieval", html.escape(str(stats["retrieval_mode"]))),
        ("Documents folder", f"<code>{html.escape(stats['documents_folder'])}</code>"),
    ]
    parts = ["<div class='docqa-index'><table>"]
    parts += [f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows]
    parts.append("</table>")
    for title, files in (("Failed", stats["failed"]), ("Skipped", stats["skipped"])):
        if files:
            parts.append(f"<p><b>{title} ({len(files)})</b></p><ul>")
            parts += [f"<li><code>{html.escape(name)}</code>: {html.escape(str(why))}</li>" for name, why in files.items()]
            parts.append("</ul>")
    parts.append("</div>")
    return "".join(parts)


def files_table_html(documents: list[DocumentStatus]) -> str:
    """Every file the last sync looked at, with what became of it (index_status.document_rows)."""
    if not documents:
        return "<p class='docqa-note'>No files yet: add some above, or put them in the documents folder.</p>"
    head = "".join(f"<th>{html.escape(name)}</th>" for name in DOCUMENT_COLUMNS)
    rows = [
        f"<tr class='{d.state}'>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for d, row in zip(documents, document_rows(documents), strict=True)
    ]
    note = "<p class='docqa-note'>To remove a file, whatever its status, choose it under Remove a document.</p>"
    return f"<div class='docqa-files'><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}</div>"


def removal_choices(documents: list[DocumentStatus]) -> list[tuple[str, str]]:
    """Every file of the folder, failed and skipped ones too (else a broken upload stays for good)."""
    return [(d.source if d.state == "indexed" else f"{d.source} ({d.state})", d.source) for d in documents if d.removable]


def indexed_sources(documents: list[DocumentStatus]) -> list[str]:
    return [d.source for d in documents if d.state == "indexed"]


def upload_report_html(added: list[str], refused: list[str], documents: list[DocumentStatus], error: str | None) -> str:
    """What became of each uploaded file: indexed with its chunks, failed or skipped with why, or refused."""
    known = {d.source: d for d in documents}
    items = []
    for name in added:
        doc = known.get(name)
        if doc is None:
            items.append(f"<li>Saved <code>{html.escape(name)}</code>; it is being indexed</li>")
        elif doc.state == "indexed":
            items.append(f"<li>✓ Added <code>{html.escape(name)}</code> ({doc.chunks} chunk{'' if doc.chunks == 1 else 's'})</li>")
        elif doc.state == "failed":
            items.append(f"<li>⚠ Saved <code>{html.escape(name)}</code> but could not index it: {html.escape(doc.reason)}</li>")
        else:
            items.append(f"<li>⚠ Saved <code>{html.escape(name)}</code> but skipped it: {html.escape(doc.reason)}</li>")
    items += [f"<li>✗ Refused {html.escape(reason)}</li>" for reason in refused]
    if error:
        items.append(f"<li>⚠ Indexing failed: {html.escape(error)}</li>")
    return f"<ul class='docqa-upload-report'>{''.join(items)}</ul>"


def removal_question_html(source: str) -> str:
    return (
        f"<p>Delete <code>{html.escape(source)}</code> from the documents folder and the index? "
        "This cannot be undone.</p>"
    )


def waiting_message(ahead: int) -> Message:
    others = "another question" if ahead == 1 else "other questions"
    return {"role": "assistant", "content": f"Waiting for {others} to finish ({ahead} ahead)…"}


def too_many_questions(per_minute: int, wait_s: float) -> Message:
    return {"role": "assistant", "content": (
        f"Too many questions: at most {per_minute} a minute (RATE_LIMIT_PER_MINUTE). Try again in {wait_s:.0f} s."
    )}


# ---------------------------------------------------------------- the layout


@dataclass
class AskTab:
    chat: gr.Chatbot
    box: gr.Textbox
    send: gr.Button
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
    turns: gr.State  # the chat as shown
    history: gr.State  # the same turns as plain text, for follow-up questions
    targets: gr.State  # the PDF pages of the latest answer
    seen: gr.State  # the indexer state the page last showed
    timer: gr.Timer
    ask: AskTab
    docs: DocumentsTab

    def listings(self) -> list[Any]:
        """What shows the index: refreshed after a sync, an upload or a removal."""
        return [self.status, self.indexing_note, self.docs.index_panel, self.docs.files_table, self.ask.files, self.docs.remove_pick]


def ask_tab(sources: list[str]) -> AskTab:
    import gradio as gr

    with gr.Tab("Ask", id="ask"), gr.Row():
        with gr.Column(scale=3):
            chat = gr.Chatbot(
                label="Answer",
                elem_id="docqa-chat",
                height=460,
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
    return AskTab(chat, box, send, clear, copy, copy_text, examples, files, source_box, page_pick, page_view)


def documents_tab() -> DocumentsTab:
    import gradio as gr

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
    import gradio as gr

    gr.Markdown("# docqa\nAsk questions about the files in your documents folder. Answers cite their sources.")
    status = gr.Markdown(elem_id="docqa-status")
    indexing_note = gr.Markdown(elem_id="docqa-indexing")
    turns, history, targets, seen = gr.State([]), gr.State([]), gr.State([]), gr.State(None)
    with gr.Tabs():
        ask = ask_tab(indexed_sources(rag.documents()))
        docs = documents_tab()
    return Page(status, indexing_note, turns, history, targets, seen, gr.Timer(STATUS_POLL_S), ask, docs)


# ---------------------------------------------------------------- the handlers


class Handlers:
    """The page's events. Each returns {component: value} for what it changes.

    Their annotations are read by Gradio at run time (it looks for gr.Request), so they
    name only what this module defines at run time.
    """

    def __init__(self, rag: RAGSystem, page: Page) -> None:
        self.rag = rag
        self.page = page
        self.limiter = RateLimiter(rag.settings.rate_limit_per_minute)
        self.slots = AnswerSlots(rag.settings.ui_concurrency)

    def respond(
        self, question: str | None, turns: list[Message], history: list[Message], files: list[str] | None,
        request: Any = None,
    ) -> Iterator[Update]:
        """Stream one answer with the chat so far as its history: the sources once, then the chat token by token."""
        import gradio as gr

        p, a = self.page, self.page.ask
        question = (question or "").strip()
        if not question:
            yield {a.chat: gr.skip()}
            return
        asked = [*turns, {"role": "user", "content": safe_markdown(question)}]
        wait = self.limiter.wait_s(client_id(request))
        if wait:
            chat = [*asked, too_many_questions(self.limiter.per_minute, wait)]
            yield {a.chat: chat, p.turns: chat}
            return
        ticket = self.slots.join()
        try:
            shown = 0
            while ahead := self.slots.wait_turn(ticket, QUEUE_POLL_S if shown else 0.0):
                if ahead != shown:
                    shown = ahead
                    yield {a.chat: [*asked, waiting_message(ahead)]}
            yield from self.stream(question, asked, history, files)
        finally:
            self.slots.leave(ticket)

    def stream(self, question: str, asked: list[Message], history: list[Message], files: list[str] | None) -> Iterator[Update]:
        """The answer's updates, once this question's turn has come."""
        import gradio as gr

        p, a = self.page, self.page.ask
        where = {"source": list(files)} if files else None
        shown_passages = False
        for answer in self.rag.stream_answer(question, where=where, history=history):
            chat = [*asked, answer_message(answer)]
            if answer.done:
                yield {a.chat: chat, p.turns: chat, **self.answered(answer, history)}
            elif not shown_passages:
                shown_passages = True
                yield {
                    a.chat: chat, p.turns: chat, a.sources: sources_html(answer), a.box: "", a.copy_text: "",
                    a.page_pick: gr.update(visible=False), a.page_view: "", p.targets: [],
                }
            else:
                yield {a.chat: chat, p.turns: chat}

    def answered(self, answer: Answer, history: list[Message]) -> Update:
        """Everything but the chat once an answer is complete."""
        import gradio as gr

        p, a = self.page, self.page.ask
        targets = page_targets(answer)
        return {
            p.history: self.rag.history_after(history, answer),
            a.sources: sources_html(answer),
            p.status: status_markdown(self.rag.stats()),
            a.copy_text: answer_as_text(answer),
            a.page_pick: gr.update(choices=[(t["label"], i) for i, t in enumerate(targets)], value=None, visible=bool(targets)),
            a.page_view: "",
            p.targets: targets,
        }

    def new_chat(self) -> Update:
        import gradio as gr

        p, a = self.page, self.page.ask
        return {
            a.chat: [], p.turns: [], p.history: [], a.sources: NO_SOURCES, a.box: "", a.copy_text: "",
            a.page_pick: gr.update(choices=[], value=None, visible=False), a.page_view: "", p.targets: [],
        }

    def show_page(self, choice: int | None, targets: list[dict[str, Any]]) -> Update:
        view = self.page.ask.page_view
        if choice is None or not 0 <= choice < len(targets):
            return {view: ""}
        target = targets[choice]
        try:
            png = self.rag.page_image(target["source"], target["page"], target["texts"])
        except ImportError:
            return {view: "<p class='docqa-note'>Page images are not available in this version of docqa.</p>"}
        except DocqaError as exc:
            return {view: f"<p class='docqa-note'>⚠ {html.escape(str(exc))}</p>"}
        return {view: page_image_html(png, target["label"])}

    def refresh(self, files: list[str] | None, removing: str | None) -> Update:
        """Status, index panel and the two document lists as the index is now; choices kept if still there."""
        import gradio as gr

        p = self.page
        stats, status, documents = self.rag.stats(), self.rag.index_status(), self.rag.documents()
        sources, removable = indexed_sources(documents), removal_choices(documents)
        return {
            p.status: status_markdown(stats),
            p.indexing_note: indexing_markdown(status),
            p.docs.index_panel: index_panel_html(stats, status),
            p.docs.files_table: files_table_html(documents),
            p.ask.files: gr.update(choices=sources, value=[f for f in files or [] if f in sources]),
            p.docs.remove_pick: gr.update(
                choices=removable, value=removing if removing in {value for _, value in removable} else None
            ),
        }

    def poll(self, seen: tuple[Any, ...] | None, files: list[str] | None, removing: str | None) -> Update:
        """On load, then every few seconds: nothing unless the background indexer moved on.

        While a sync runs the progress line and the index panel change together, so the two
        never disagree; the document lists are read once it is over.
        """
        import gradio as gr

        p, status = self.page, self.rag.index_status()
        now = (status.state, status.stage, status.done, status.total, status.chunks_done, status.current, status.finished)
        if now == seen:
            return {p.seen: gr.skip()}
        if status.state == "indexing" and seen is not None:
            return {
                p.indexing_note: indexing_markdown(status),
                p.docs.index_panel: index_panel_html(self.rag.stats(), status),
                p.seen: now,
            }
        return {**self.refresh(files, removing), p.seen: now}

    def upload(self, paths: list[str] | None, files: list[str] | None, removing: str | None, progress: Any) -> Update:
        """Save each file into the documents folder, index once, report what became of each."""
        added, refused, error = [], [], None
        for path in paths or []:
            name = Path(path).name  # Gradio keeps the browser's file name, minus unsafe characters
            try:
                added.append(self.rag.add_upload(name, Path(path)))
            except DocqaError as exc:
                refused.append(str(exc))
            except OSError as exc:
                refused.append(f"{name}: it could not be saved ({exc.strerror or exc})")
            finally:
                Path(path).unlink(missing_ok=True)  # no copy of a private file left in Gradio's cache
        if added:
            try:
                self.rag.index(progress=lambda stage, done, total: progress(
                    (done, total), desc=progress_text(self.rag.index_status()), unit="files"
                ))
            except DocqaError as exc:
                error = str(exc)
            except Exception:
                log.exception("Indexing uploads failed")
                error = "unexpected error, see the server log"
        d = self.page.docs
        report = upload_report_html(added, refused, self.rag.documents(), error)
        return {d.uploader: None, d.upload_report: report, **self.refresh(files, removing)}

    def ask_removal(self, source: str | None) -> Update:
        import gradio as gr

        d = self.page.docs
        if not source:
            return {d.confirm: gr.update(visible=False), d.confirm_text: "<p class='docqa-note'>Choose a document to remove first.</p>"}
        return {d.confirm: gr.update(visible=True), d.confirm_text: removal_question_html(source)}

    def cancel_removal(self) -> Update:
        import gradio as gr

        return {self.page.docs.confirm: gr.update(visible=False), self.page.docs.confirm_text: ""}

    def remove(self, source: str | None, files: list[str] | None) -> Update:
        import gradio as gr

        d = self.page.docs
        if not source:
            return {d.confirm: gr.update(visible=False), d.remove_report: ""}
        try:
            self.rag.remove_document(source)
        except (DocqaError, OSError) as exc:
            return {d.confirm: gr.update(visible=False), d.remove_report: f"<p>⚠ {html.escape(str(exc))}</p>"}
        note = f"<p>✓ Removed <code>{html.escape(source)}</code> from the index and the documents folder.</p>"
        return {d.confirm: gr.update(visible=False), d.remove_report: note, **self.refresh(files, None)}


# ---------------------------------------------------------------- the app


def wire_ask(page: Page, handlers: Handlers) -> None:
    """The Ask tab's events: questions (the /ask endpoint), a new chat, copying, PDF pages."""
    a = page.ask
    outputs = [a.chat, page.turns, page.history, a.sources, a.box, page.status, a.copy_text, a.page_pick, a.page_view, page.targets]
    inputs = [a.box, page.turns, page.history, a.files]
    # No Gradio limit on questions: Handlers.slots keeps UI_CONCURRENCY and tells waiting pages their place.
    a.send.click(handlers.respond, inputs, outputs, api_name="ask", concurrency_limit=None)
    a.box.submit(handlers.respond, inputs, outputs, api_visibility="private", concurrency_limit=None)
    for button in a.examples:
        # A button given as an input passes its label: the question itself.
        button.click(
            handlers.respond, [button, page.turns, page.history, a.files], outputs, api_visibility="private",
            concurrency_limit=None,
        )
    cleared = [a.chat, page.turns, page.history, a.sources, a.box, a.copy_text, a.page_pick, a.page_view, page.targets]
    a.clear.click(handlers.new_chat, None, cleared, api_visibility="private")
    # The chat's own trash button empties the chat; forget the conversation with it.
    a.chat.clear(handlers.new_chat, None, cleared, api_visibility="private")
    a.copy.click(None, [a.copy_text], None, js=COPY_JS, api_visibility="private")
    a.page_pick.input(handlers.show_page, [a.page_pick, page.targets], [a.page_view], api_visibility="private")


def wire_documents(app: gr.Blocks, page: Page, handlers: Handlers) -> None:
    """Status polling, uploads and removals."""
    import gradio as gr

    d, listings = page.docs, page.listings()
    polled = [page.seen, page.ask.files, d.remove_pick]
    app.load(handlers.poll, polled, [*listings, page.seen], api_visibility="private")
    # Not queued: a poll is a read of the indexer's state, and must not wait behind answers being generated.
    page.timer.tick(handlers.poll, polled, [*listings, page.seen], api_visibility="private", queue=False)

    def upload(paths: list[str] | None, files: list[str] | None, removing: str | None, progress: Any = gr.Progress()) -> Update:  # noqa: B008  (Gradio finds its tracker by this default)
        return handlers.upload(paths, files, removing, progress)

    d.uploader.upload(upload, [d.uploader, page.ask.files, d.remove_pick], [d.uploader, d.upload_report, *listings], api_visibility="private")
    d.remove_ask.click(handlers.ask_removal, [d.remove_pick], [d.confirm, d.confirm_text], api_visibility="private")
    d.remove_no.click(handlers.cancel_removal, None, [d.confirm, d.confirm_text], api_visibility="private")
    d.remove_yes.click(handlers.remove, [d.remove_pick, page.ask.files], [d.confirm, d.remove_report, *listings], api_visibility="private")


def build_app(rag: RAGSystem) -> gr.Blocks:
    import gradio as gr

    # Annotations are strings here (__future__) and gradio is imported late: point Gradio at the real class.
    Handlers.respond.__annotations__["request"] = gr.Request
    with gr.Blocks(title="docqa", analytics_enabled=False) as app:
        page = layout(rag)
        handlers = Handlers(rag, page)
        wire_ask(page, handlers)
        wire_documents(app, page, handlers)
    return app


def load_auth(settings: Settings) -> list[tuple[str, str]]:
    """Users from DOCQA_AUTH ("user:password", comma-separated) and DOCQA_AUTH_FILE (a line each)."""
    entries = [e for e in settings.docqa_auth.split(",") if e.strip()]
    if settings.docqa_auth_file:
        try:
            lines = Path(settings.docqa_auth_file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigError(f"DOCQA_AUTH_FILE {settings.docqa_auth_file} cannot be read: {exc.strerror or exc}") from exc
        entries += [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    users = []
    for entry in entries:
        user, sep, password = entry.strip().partition(":")
        if not sep or not user or not password:
            raise ConfigError("Each DOCQA_AUTH entry must be user:password with both parts non-empty.")
        users.append((user, password))
    return users


class RateLimiter:
    """At most `per_minute` questions per client in any sliding minute."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def wait_s(self, client: str) -> float:
        """0 when the client may ask now, else the seconds until it may."""
        if self.per_minute <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            times = self._seen.setdefault(client, deque())
            while times and now - times[0] >= 60:
                times.popleft()
            if len(times) >= self.per_minute:
                return 60 - (now - times[0])
            times.append(now)
            return 0.0


class AnswerSlots:
    """At most `limit` answers generated at once (UI_CONCURRENCY); later questions wait in
    arrival order, each knowing how many are ahead of it, so its page can say so.

    Gradio's queue would hold them too, but the page shows only a pending "…" meanwhile;
    so the ask events leave Gradio's limit off and wait here. A waiter that stops asking
    (its page gone and its handler never closed) is dropped after STALE_S.
    """

    STALE_S = 15.0

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._cond = threading.Condition()
        self._holding: set[object] = set()
        self._waiting: dict[object, float] = {}  # ticket -> when it last asked; dicts keep arrival order

    def join(self) -> object:
        ticket = object()
        with self._cond:
            self._waiting[ticket] = time.monotonic()
        return ticket

    def wait_turn(self, ticket: object, timeout: float) -> int:
        """0 once `ticket` holds a slot (it then must `leave`), else, after up to `timeout` s, how many are ahead."""
        with self._cond:
            self._cond.wait_for(lambda: self._may_go(ticket), timeout)
            if self._may_go(ticket):
                del self._waiting[ticket]
                self._holding.add(ticket)
                return 0
            self._waiting[ticket] = time.monotonic()
            return len(self._holding) + list(self._waiting).index(ticket)

    def _may_go(self, ticket: object) -> bool:
        stale = [t for t, seen in self._waiting.items() if t is not ticket and time.monotonic() - seen > self.STALE_S]
        for t in stale:
            del self._waiting[t]
        return len(self._holding) < self.limit and next(iter(self._waiting), None) is ticket

    def leave(self, ticket: object) -> None:
        with self._cond:
            self._holding.discard(ticket)
            self._waiting.pop(ticket, None)
            self._cond.notify_all()


def client_id(request: Any) -> str:
    if request is None:
        return "local"
    user = getattr(request, "username", None)
    host = getattr(getattr(request, "client", None), "host", None) or "unknown"
    return f"{user}@{host}" if user else host


def serving_app(rag: RAGSystem) -> Any:
    """One app for everything: the UI at /, the REST API at /api, OpenAI's at /v1, MCP at /mcp.

    The UI's password (DOCQA_AUTH) guards the UI only; API clients use a key (api_guard.py).
    """
    import gradio as gr

    from service_api import build_service_app

    s = rag.settings
    users = load_auth(s)
    if s.gradio_server_name not in LOOPBACK and not users:
        raise ConfigError(
            f"Refusing to listen on {s.gradio_server_name} without authentication: docqa serves private "
            "documents. Set DOCQA_AUTH=user:password (or DOCQA_AUTH_FILE), or keep GRADIO_SERVER_NAME=127.0.0.1."
        )
    api = build_service_app(rag)
    ui = build_app(rag)
    ui.queue(default_concurrency_limit=max(1, s.ui_concurrency))
    return gr.mount_gradio_app(
        api, ui, path="/",
        server_name=s.gradio_server_name,
        server_port=s.gradio_server_port,
        show_error=False,
        css=CSS,
        # Questions and answers quote private documents: keep them out of the browser's storage.
        run_history=False,
        footer_links=["api"],
        # RAGSystem refuses files over MAX_FILE_MB (MAX_UPLOAD_MB for PDFs and images) with its own
        # reason; this only stops a runaway upload from filling the temp folder before that check can run.
        max_file_size=f"{max(100, int(4 * s.max_file_mb), int(s.max_upload_mb) + 1)}mb",
        auth=users or None,
    )


def serve(rag: RAGSystem) -> None:
    import uvicorn

    s = rag.settings
    app = serving_app(rag)
    log.info("Serving docqa on http://%s:%d (API docs at /api/docs)", s.gradio_server_name, s.gradio_server_port)
    uvicorn.run(app, host=s.gradio_server_name, port=s.gradio_server_port, log_level="warning")
