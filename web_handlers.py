"""The web page's handlers: each takes what its event sends and returns {component: value} for
what it changes. RAGSystem decides retrieval, prompting, what goes into the index and which turns
a follow-up sees; web_html writes what is shown.

Questions go through the page's ChatSession (web_questions.py): `take_question` adds one at once, whatever
is running, and `answer_all` answers the waiting ones in turn, streaming each into the chat. Stop
ends the answer being written between two of its pieces.
"""

from __future__ import annotations

import html
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gradio as gr

from answer_render import answer_as_text, safe_markdown
from errors import DocqaError
from web_html import (
    NO_SOURCES,
    STOPPED_SOURCES,
    answer_message,
    files_table_html,
    index_panel_html,
    indexed_sources,
    indexing_markdown,
    page_image_html,
    page_targets,
    progress_text,
    removal_choices,
    removal_question_html,
    sources_html,
    status_markdown,
    too_many_questions,
    upload_report_html,
    waiting_message,
)
from web_layout import Page
from web_questions import AnswerSlots, ChatSession, Question, RateLimiter, client_id

if TYPE_CHECKING:
    from rag_system import Answer, RAGSystem

log = logging.getLogger(__name__)

STREAM_UPDATE_S = 0.25
"""While the model writes, the chat is redrawn at most this often, not at every piece: the page runs on
the same cores as llama.cpp. Asked in Chromium on this 2-core machine, two answers took the model
12.6-13.7 s against 9.2-9.8 s over the API; with Gradio's progress animation hidden (web_ui.py) 11.9-12.1 s,
and with this as well 10.7-10.8 s (docs/benchmarks.md); this alone, with the animation on, gained nothing
measurable. Before the model's first piece and after its last every change shows at once: the quotes
stand alone for the seconds the model reads its prompt, and the whole draft while it is checked."""

QUEUE_POLL_S = 1.0
"""How often a question waiting for an answer slot looks again, and tells its page how many are ahead."""

Update = dict[Any, Any]
"""What a handler returns: {component: new value}; a component left out keeps its value."""


class Handlers:
    """The page's events. Each returns {component: value} for what it changes.

    Gradio reads their annotations at run time (it looks for gr.Request), so they name only
    what this module imports at run time.
    """

    def __init__(self, rag: RAGSystem, page: Page) -> None:
        self.rag = rag
        self.page = page
        self.limiter = RateLimiter(rag.settings.rate_limit_per_minute)
        self.slots = AnswerSlots(rag.settings.ui_concurrency)

    # ------------------------------------------------------------ questions

    def take_question(self, question: str | None, files: list[str] | None, session: ChatSession) -> Update:
        """Take the question now, even while an answer streams: it shows in the chat, waiting its turn."""
        a = self.page.ask
        question = (question or "").strip()
        if not question:
            return {a.box: gr.skip()}
        session.add(Question(question, {"role": "user", "content": safe_markdown(question)}, list(files) if files else None))
        return {a.chat: session.chat(), a.box: ""}

    def answer_all(self, session: ChatSession, request: gr.Request | None = None) -> Iterator[Update]:
        """Answer this page's waiting questions one after another; does nothing when its answers are already being written."""
        a = self.page.ask
        if not session.claim():
            yield {a.chat: gr.skip()}
            return
        done = False
        try:
            while (question := session.next_question()) is not None:
                yield from self.answer_one(session, question, client_id(request))
            done = True
        finally:
            if not done:
                session.abandon()
        yield {a.chat: session.chat(), a.stop: gr.update(visible=session.answering)}

    def answer_one(self, session: ChatSession, question: Question, client: str) -> Iterator[Update]:
        """One question: within the rate limit, once an answer slot is free (saying how many are ahead meanwhile)."""
        a, number = self.page.ask, session.chat_number
        wait = self.limiter.wait_s(client)
        if wait:
            session.show(too_many_questions(self.limiter.per_minute, wait))
            session.finish(number, None)
            yield {a.chat: session.chat()}
            return
        ticket = self.slots.join()
        try:
            shown = 0
            while ahead := self.slots.wait_turn(ticket, QUEUE_POLL_S if shown else 0.0):
                if session.stop_requested or number != session.chat_number:
                    session.finish(number, None, stopped=True)
                    yield {a.chat: session.chat()}
                    return
                if ahead != shown:
                    shown = ahead
                    session.show(waiting_message(ahead))
                    yield {a.chat: session.chat(), a.stop: gr.update(visible=True)}
            yield from self.stream(session, question, number)
        finally:
            self.slots.leave(ticket)

    def stream(self, session: ChatSession, question: Question, number: int) -> Iterator[Update]:
        """The answer as it grows (while the model writes, at most every STREAM_UPDATE_S): the sources once,
        then the chat; cut short when Stop is pressed."""
        p, a = self.page, self.page.ask
        history = session.history
        where = {"source": question.files} if question.files else None
        answers = self.rag.stream_answer(question.text, where=where, history=history)
        first, last, shown_at = True, None, float("-inf")
        try:
            for answer in answers:
                if session.stop_requested or number != session.chat_number:
                    break
                last = session.last_answer = answer
                writing = answer.timings.first_token_s is not None and answer.timings.draft_s is None and not answer.done
                if writing:
                    now = time.perf_counter()
                    if now - shown_at < STREAM_UPDATE_S:
                        continue  # the next piece is a fraction of a second away
                    shown_at = now
                session.show(answer_message(answer))
                if answer.done:
                    session.finish(number, self.rag.history_after(history, answer))
                    yield {a.chat: session.chat(), **self.answered(answer)}
                    return
                update: Update = {a.chat: session.chat()}
                if first:
                    first = False
                    update |= {
                        a.stop: gr.update(visible=True), a.sources: sources_html(answer), a.copy_text: "",
                        a.page_pick: gr.update(visible=False), a.page_view: "", p.targets: [],
                    }
                yield update
        finally:
            answers.close()  # ends the model's generation too
        shown = last is not None and number == session.chat_number
        if shown:
            session.show(answer_message(last))  # the pieces written since the last redraw
        session.finish(number, None, stopped=True)
        stopped: Update = {a.chat: session.chat()}
        if shown:  # the sources line no longer says the model is reading
            stopped[a.sources] = sources_html(last, note=STOPPED_SOURCES)
        yield stopped

    def answered(self, answer: Answer) -> Update:
        """Everything but the chat once an answer is complete."""
        p, a = self.page, self.page.ask
        targets = page_targets(answer)
        return {
            a.sources: sources_html(answer),
            p.status: status_markdown(self.rag.stats(), self.rag.model_note),
            a.copy_text: answer_as_text(answer),
            a.page_pick: gr.update(choices=[(t["label"], i) for i, t in enumerate(targets)], value=None, visible=bool(targets)),
            a.page_view: "",
            p.targets: targets,
        }

    def stop(self, session: ChatSession) -> Update:
        """End the answer being written; the questions waiting after it are answered next.

        The sources line says so at once: the answer's own loop sees the request only when the model
        gives its next piece, which can be seconds away while llama.cpp reads the prompt."""
        a = self.page.ask
        update: Update = {a.stop: gr.update(visible=False)}
        if session.stop() and session.last_answer is not None:
            update[a.sources] = sources_html(session.last_answer, note=STOPPED_SOURCES)
        return update

    def new_chat(self, session: ChatSession) -> Update:
        p, a = self.page, self.page.ask
        session.clear()
        return {
            a.chat: [], a.sources: NO_SOURCES, a.box: "", a.copy_text: "", a.stop: gr.update(visible=False),
            a.page_pick: gr.update(choices=[], value=None, visible=False), a.page_view: "", p.targets: [],
        }

    # ------------------------------------------------------------ pages, status and the documents folder

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
        p = self.page
        stats, status, documents = self.rag.stats(), self.rag.index_status(), self.rag.documents()
        sources, removable = indexed_sources(documents), removal_choices(documents)
        return {
            p.status: status_markdown(stats, self.rag.model_note),
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
        d = self.page.docs
        if not source:
            return {d.confirm: gr.update(visible=False), d.confirm_text: "<p class='docqa-note'>Choose a document to remove first.</p>"}
        return {d.confirm: gr.update(visible=True), d.confirm_text: removal_question_html(source)}

    def cancel_removal(self) -> Update:
        return {self.page.docs.confirm: gr.update(visible=False), self.page.docs.confirm_text: ""}

    def remove(self, source: str | None, files: list[str] | None) -> Update:
        d = self.page.docs
        if not source:
            return {d.confirm: gr.update(visible=False), d.remove_report: ""}
        try:
            self.rag.remove_document(source)
        except (DocqaError, OSError) as exc:
            return {d.confirm: gr.update(visible=False), d.remove_report: f"<p>⚠ {html.escape(str(exc))}</p>"}
        note = f"<p>✓ Removed <code>{html.escape(source)}</code> from the index and the documents folder.</p>"
        return {d.confirm: gr.update(visible=False), d.remove_report: note, **self.refresh(files, None)}
