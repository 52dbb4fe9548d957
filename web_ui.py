"""The Gradio UI, put together: the page (web_layout.py), its handlers (web_handlers.py) wired to
its events, and the one server that carries it beside the APIs.

Everything that comes from a document (passages, file names) or from the model is shown
as text, never as markup (see answer_render). The conversation lives in server-side state
(web_questions.ChatSession), so what the browser sends back is never rendered as our output.
A PDF page is sent inline as a data: URI and an upload's temporary copy is deleted once saved,
so no private document lingers in Gradio's file cache.

Written for Gradio 6: `css` and `js` go to `launch()` (here `mount_gradio_app`), the Chatbot
takes ``{"role", "content"}`` messages, and helper events (uploads, the status timer) are hidden
with ``api_visibility="private"`` so the API exposes one endpoint, ``/ask``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gradio as gr

from answer_render import safe_markdown
from config import LOOPBACK
from errors import ConfigError
from web_handlers import Handlers, Update
from web_layout import CHAT_SCROLL_JS, COPY_JS, CSS, Page, layout
from web_questions import ChatSession, Question

if TYPE_CHECKING:
    from config import Settings
    from rag_system import RAGSystem

log = logging.getLogger(__name__)


def wire_ask(page: Page, handlers: Handlers) -> None:
    """The Ask tab's events: questions, Stop, a new chat, copying, PDF pages.

    Ask, Enter and the example buttons all do the same: `take_question` (not queued, so it runs at once
    even while an answer streams) puts the question in the chat, then `answer_all` answers what
    waits. Both allow a new trigger while one is pending ("multiple"): Gradio's default would
    drop a second click on Ask while the first answer streams.
    """
    a = page.ask
    asked = [a.chat, a.box]
    answering = [a.chat, a.sources, a.stop, page.status, a.copy_text, a.page_pick, a.page_view, page.targets]
    triggers = [(a.send.click, a.box), (a.box.submit, a.box)] + [(button.click, button) for button in a.examples]
    for trigger, question in triggers:
        # A button given as an input passes its label: the question itself.
        trigger(
            handlers.take_question, [question, a.files, page.session], asked, api_visibility="private", queue=False,
            trigger_mode="multiple",
        ).then(
            # No Gradio limit on answers: Handlers.slots keeps UI_CONCURRENCY and tells waiting pages their place.
            handlers.answer_all, [page.session], answering, api_visibility="private", concurrency_limit=None,
            trigger_mode="multiple", show_progress="hidden",  # the chat and the sources line show the progress
        )
    a.stop.click(handlers.stop, [page.session], [a.stop, a.sources], api_visibility="private", queue=False)
    cleared = [a.chat, a.sources, a.box, a.copy_text, a.stop, a.page_pick, a.page_view, page.targets]
    a.clear.click(handlers.new_chat, [page.session], cleared, api_visibility="private", queue=False)
    # The chat's own trash button empties the chat; forget the conversation with it.
    a.chat.clear(handlers.new_chat, [page.session], cleared, api_visibility="private", queue=False)
    a.copy.click(None, [a.copy_text], None, js=COPY_JS, api_visibility="private")
    a.page_pick.input(handlers.show_page, [a.page_pick, page.targets], [a.page_view], api_visibility="private")
    gr.api(ask_endpoint(handlers), api_name="ask", concurrency_limit=None)


Messages = list[dict[str, str]]


def ask_endpoint(handlers: Handlers) -> Callable[..., Iterator[tuple[Messages, Messages]]]:
    """The /ask endpoint of Gradio's API, as before the page queued its questions: the chat so far
    (`turns`) and its plain-text `history` in; the chat, growing as it is written (at most every
    web_handlers.STREAM_UPDATE_S), and the history out. It goes through the same loop as the page
    (Handlers.answer_all), so it shares its limits."""

    def ask(
        question: str, turns: Messages, history: Messages, files: list[str] | None, request: gr.Request | None = None
    ) -> Iterator[tuple[Messages, Messages]]:
        session = ChatSession()
        session.turns, session.history = list(turns or []), list(history or [])
        session.add(Question(question, {"role": "user", "content": safe_markdown(question)}, list(files) if files else None))
        for _ in handlers.answer_all(session, request):
            yield session.chat(), session.history

    return ask


def wire_documents(app: gr.Blocks, page: Page, handlers: Handlers) -> None:
    """Status polling, uploads and removals."""
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


def serving_app(rag: RAGSystem) -> Any:
    """One app for everything: the UI at /, the REST API at /api, OpenAI's at /v1, MCP at /mcp.

    The UI's password (DOCQA_AUTH) guards the UI only; API clients use a key (api_guard.py).
    """
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
        js=CHAT_SCROLL_JS,
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
