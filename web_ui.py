"""The Gradio UI: ask and chat, manage the documents folder. It formats and displays;
RAGSystem decides retrieval, prompting and what goes into the index.

Everything that comes from a document (passages, file names) or from the model is shown
as text, never as markup. HTML panels are built from `html.escape`d pieces; the chat gets
markdown in which no HTML or image from the model can appear (see `safe_markdown`). The
only markup in a message is our own, added after escaping: `[n]` citations become links to
the source cards, and unsupported sentences are wrapped in `<mark>`. The conversation
lives in server-side state, so what the browser sends back is never rendered as our output.
A PDF page is sent inline as a data: URI and an upload's temporary copy is deleted once
saved, so no private document lingers in Gradio's file cache.

Written for Gradio 6: `css` goes to `launch()`, the Chatbot takes ``{"role", "content"}``
messages, and helper events (uploads, the status timer) are hidden with
``api_visibility="private"`` so the API exposes one endpoint, ``/ask``.
"""

from __future__ import annotations

import base64
import html
import logging
import re
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Iterator

from errors import ConfigError, DocqaError

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
SNIPPET_LEAD_CHARS = 100  # context kept before the first highlight when a passage is cut
STATUS_POLL_S = 2.0
MARKDOWN_HEADING = re.compile(r"^#{1,6} ", re.MULTILINE)  # the heading path is shown on its own line
CITATION = re.compile(r"(?<!\\)\[(\d+(?:\s*,\s*\d+)*)\]")  # [3] or [1, 2]; not the "\[" of an escaped image
CODE = re.compile(r"(```.*?(?:```|$)|`[^`\n]*`)", re.DOTALL)
BLOCK_PREFIX = re.compile(r"^\s*(?:(?:[-*+•]|\d+[.)]|#{1,6}|>)\s+)*")
MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")
UNSUPPORTED_NOTE = "Not found in the sources"
NO_MODEL = "no model used"  # the footer of an answer docqa gave without the LLM (a refusal, the file list)

CSS = """
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
"""

COPY_JS = """(text) => {
    navigator.clipboard.writeText(text || "");
    const button = document.querySelector("#docqa-copy");
    if (button) { const label = button.textContent; button.textContent = "Copied"; setTimeout(() => { button.textContent = label; }, 1500); }
    return [];
}"""

Message = dict[str, str]


# ---------------------------------------------------------------- the answer in the chat


def safe_markdown(text: str) -> str:
    """Model output as markdown that cannot run or load anything: no raw HTML, no images.

    Every HTML construct (tag, comment, autolink) starts with "<", so escaping it leaves
    none; "![" is the only markdown that loads a resource. "&" stays, so an answer's
    `a && b` reads right inside a code span; an entity can only ever spell text.
    """
    text = text.replace("<", "&lt;")
    return text.replace("![", "!\\[")


def literal_markdown(text: str) -> str:
    """Text shown exactly as written: markdown punctuation escaped, no HTML."""
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", text).replace("<", "&lt;")


def link_citations(markdown: str, count: int) -> str:
    """Each [n] or [n, m] citing one of `count` sources links to its card; code is left alone.

    Runs on escaped markdown and only ever adds links built from digits.
    """

    def link(m: re.Match[str]) -> str:
        numbers = [int(n) for n in re.split(r"\s*,\s*", m[1])]
        if not all(1 <= n <= count for n in numbers):
            return m[0]
        if len(numbers) == 1:
            return f"[\\[{numbers[0]}\\]](#source-{numbers[0]})"
        return "\\[" + ", ".join(f"[{n}](#source-{n})" for n in numbers) + "\\]"

    pieces = CODE.split(markdown)
    return "".join(piece if i % 2 else CITATION.sub(link, piece) for i, piece in enumerate(pieces))


def find_spans(text: str, needles: list[str]) -> list[tuple[int, int]]:
    """Where each needle occurs in text (first occurrence), sorted and merged."""
    spans = []
    lowered = None
    for needle in needles:
        needle = needle.strip()
        if not needle:
            continue
        start = text.find(needle)
        if start < 0:
            lowered = lowered if lowered is not None else text.lower()
            start = lowered.find(needle.lower())
        if start >= 0:
            spans.append((start, start + len(needle)))
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return merged


def mark_unsupported(text: str) -> str:
    """An unsupported stretch of the answer, marked line by line so lists and headings survive."""
    lines = []
    for line in text.split("\n"):
        prefix = BLOCK_PREFIX.match(line)[0]  # type: ignore[index]  # matches empty at worst
        body = line[len(prefix) :]
        lines.append(
            prefix + (f"<mark class='docqa-unsupported' title='{UNSUPPORTED_NOTE}'>{safe_markdown(body)}</mark>" if body.strip() else "")
        )
    return "\n".join(lines)


def answer_markdown(answer: Any) -> str:
    """The answer as chat markdown: citations linked, unsupported sentences marked, search shown."""
    text = answer.text
    unsupported = find_spans(text, list(getattr(answer, "unsupported", None) or [])) if answer.done else []
    pieces, pos = [], 0
    for s, e in unsupported:
        pieces += [safe_markdown(text[pos:s]), mark_unsupported(text[s:e])]
        pos = e
    pieces.append(safe_markdown(text[pos:]))
    out = link_citations("".join(pieces), len(answer.passages)) or "…"
    if unsupported:
        out += f"\n\n<span class='docqa-note'>⚠ Underlined sentences: {UNSUPPORTED_NOTE.lower()}.</span>"
    searched = searched_for(answer)
    if searched:
        out += f"\n\n<span class='docqa-note'>Searched for: {literal_markdown(searched)}</span>"
    if answer.done:
        out += f"\n\n*— {safe_markdown(answer.model) if answer.model else NO_MODEL}*"
    return out


def searched_for(answer: Any) -> str:
    """What retrieval searched for, when it is not the question as asked."""
    parts = list(getattr(answer, "sub_questions", None) or [])
    if parts:
        return " · ".join(parts)
    standalone = (getattr(answer, "standalone_question", None) or "").strip()
    asked = (getattr(answer, "question", None) or "").strip()
    return standalone if standalone and standalone != asked else ""


def answer_message(answer: Any) -> Message:
    return {"role": "assistant", "content": answer_markdown(answer)}


# ---------------------------------------------------------------- the sources panel


def passage_text(text: str) -> str:
    """A passage or a sentence of it as shown on a card: heading marks gone, whitespace collapsed."""
    return " ".join(MARKDOWN_HEADING.sub("", text).split())


def highlighted_html(text: str, spans: list[tuple[int, int]], start: int = 0, end: int | None = None) -> str:
    """text[start:end] escaped, with the spans inside <mark>."""
    end = len(text) if end is None else end
    out, pos = [], start
    for s, e in spans:
        s, e = max(s, start), min(e, end)
        if s >= e:
            continue
        out += [html.escape(text[pos:s]), "<mark>", html.escape(text[s:e]), "</mark>"]
        pos = e
    out.append(html.escape(text[pos:end]))
    return "".join(out)


def snippet_html(text: str, highlights: list[str]) -> str:
    """The passage with its highlighted sentences; a long one is cut around the first highlight."""
    text = passage_text(text)
    spans = find_spans(text, [passage_text(h) for h in highlights])
    if len(text) <= SNIPPET_CHARS:
        return f"<div class='snippet'>{highlighted_html(text, spans)}</div>"
    start = 0
    if spans and spans[0][0] > SNIPPET_LEAD_CHARS:
        start = text.find(" ", spans[0][0] - SNIPPET_LEAD_CHARS) + 1
    end = min(len(text), max(start + SNIPPET_CHARS, spans[0][1] if spans else 0))
    if end < len(text):
        end = text.rfind(" ", start, end + 1) if text.rfind(" ", start, end + 1) > start else end
    cut = ("…" if start else "") + highlighted_html(text, spans, start, end) + ("…" if end < len(text) else "")
    return (
        f"<div class='snippet'>{cut}</div>"
        f"<details><summary>Whole passage ({len(text.split())} words)</summary>"
        f"<div class='snippet'>{highlighted_html(text, spans)}</div></details>"
    )


def sources_html(answer: Any) -> str:
    """The passages behind an answer, with where they come from, as escaped HTML."""
    if not answer.passages:
        return "<p class='docqa-empty'>No sources.</p>"
    highlights = getattr(answer, "highlights", None) or {}
    parts = [f"<p class='docqa-model'>{html.escape(answer_note(answer))}</p>"]
    for n, p in enumerate(answer.passages, start=1):
        found = ", ".join(f"{k} #{v}" for k, v in sorted(p.found_by.items()))
        heading = " > ".join(p.heading_path)
        where = f" — {html.escape(p.location)}" if p.location and p.location != heading else ""
        parts.append(
            f"<div class='docqa-source' id='source-{n}'>"
            f"<div class='where'>[{n}] {html.escape(p.source)}{where}</div>"
            + (f"<div class='meta'>{html.escape(heading)}</div>" if heading else "")
            + f"<div class='meta'>score {p.score:.4f} · found by {html.escape(found)}</div>"
            + snippet_html(p.text, list(highlights.get(n, [])))
            + "</div>"
        )
    return "\n".join(parts)


def answer_note(answer: Any) -> str:
    """One line on who answered and how long it took, or what is happening now."""
    if answer.done:
        if getattr(answer, "refused", False):
            return "The documents do not answer this; these passages came closest."
        took = answer.timings.get("total_s")
        return f"Answered by {answer.model or 'no model'}" + (f" in {took:.1f}s" if took else "")
    found = f"Found {len(answer.passages)} passage{'' if len(answer.passages) == 1 else 's'}"
    return f"{found}; {answer.model} is answering…" if answer.model else f"{found}; loading the model…"


def page_targets(answer: Any) -> list[dict[str, Any]]:
    """The PDF pages an answer's passages come from, each with the text to highlight on it."""
    highlights = getattr(answer, "highlights", None) or {}
    targets = []
    for n, p in enumerate(answer.passages, start=1):
        if not p.source.lower().endswith(".pdf"):
            continue
        for page in p.pages:
            targets.append(
                {
                    "label": f"[{n}] {p.source} — page {page}",
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


def indexing_markdown(indexing: dict[str, Any]) -> str:
    """What the background indexer is doing, when that is worth a line."""
    state = indexing.get("state")
    if state == "indexing":
        total = indexing.get("total") or 0
        if not total:
            return "⏳ Indexing: checking the documents folder…"
        return f"⏳ Indexing: {indexing.get('done', 0)} of {total} files…"
    if state == "failed":
        return f"⚠ Indexing failed: {html.escape(str(indexing.get('error') or 'see the server log'))}"
    return ""


def index_panel_html(stats: dict[str, Any], indexing: dict[str, Any]) -> str:
    """The index in detail: counts, models, the last run, failed and skipped files with reasons."""
    kinds = ", ".join(f"{k or 'other'} {n}" for k, n in sorted(stats.get("files_by_type", {}).items()))
    state = indexing.get("state", "idle")
    if state == "indexing":
        done, total = indexing.get("done", 0), indexing.get("total", 0)
        run = f"indexing {done} of {total} files <progress value='{done}' max='{max(total, 1)}'></progress>"
    elif state == "failed":
        run = f"failed: {html.escape(str(indexing.get('error') or ''))}"
    else:
        run = "idle"
        if indexing.get("finished"):
            finished = time.strftime("%H:%M:%S", time.localtime(indexing["finished"]))
            run += f" — last run {finished}: {html.escape(str(indexing.get('summary') or ''))}"
    rows = [
        ("Files", f"{stats['files']}" + (f" ({html.escape(kinds)})" if kinds else "")),
        ("Chunks", str(stats["chunks"])),
        ("Last indexed", html.escape(stats.get("last_indexed") or "never")),
        ("Indexing", run),
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


def indexed_sources(rag: Any) -> list[str]:
    return sorted(rag.indexer.manifest.files)


def upload_report_html(added: list[str], refused: list[str], rag: Any, error: str | None) -> str:
    """What became of each uploaded file: indexed with its chunks, failed or skipped with why, or refused."""
    manifest = rag.indexer.manifest
    items = []
    for name in added:
        record = manifest.files.get(name)
        if record is not None:
            chunks = len(record.chunk_ids)
            items.append(f"<li>✓ Added <code>{html.escape(name)}</code> ({chunks} chunk{'' if chunks == 1 else 's'})</li>")
        elif name in manifest.failed:
            items.append(f"<li>⚠ Saved <code>{html.escape(name)}</code> but could not index it: {html.escape(manifest.failed[name].reason)}</li>")
        elif name in manifest.skipped:
            items.append(f"<li>⚠ Saved <code>{html.escape(name)}</code> but skipped it: {html.escape(manifest.skipped[name])}</li>")
        else:
            items.append(f"<li>Saved <code>{html.escape(name)}</code>; it is being indexed</li>")
    items += [f"<li>✗ Refused {html.escape(reason)}</li>" for reason in refused]
    if error:
        items.append(f"<li>⚠ Indexing failed: {html.escape(error)}</li>")
    return f"<ul class='docqa-upload-report'>{''.join(items)}</ul>"


# ---------------------------------------------------------------- the app


def build_app(rag: Any) -> Any:
    import gradio as gr

    from rag_system import answer_as_text

    limiter = RateLimiter(rag.settings.rate_limit_per_minute)

    def respond(
        question: str | None, turns: list[Message], history: list[Message], files: list[str] | None,
        request: gr.Request = None,
    ) -> Iterator[tuple[Any, ...]]:
        """Stream one answer with the chat so far as its history.

        Outputs: chat, turns, history, sources, question box, status, copy text, page picker,
        page view, page targets.
        """
        question = (question or "").strip()
        if not question:
            yield (gr.skip(),) * 10
            return
        asked = [*turns, {"role": "user", "content": safe_markdown(question)}]
        wait = limiter.wait_s(client_id(request))
        if wait:
            note = {"role": "assistant", "content": (
                f"Too many questions: at most {limiter.per_minute} a minute (RATE_LIMIT_PER_MINUTE). "
                f"Try again in {wait:.0f} s."
            )}
            yield (*(([*asked, note],) * 2), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip())
            return
        where = {"source": list(files)} if files else None
        shown_passages = False
        for answer in rag.stream_answer(question, where=where, history=history):
            chat = [*asked, answer_message(answer)]
            if answer.done:
                # The model sees earlier turns as plain text; a failed answer is left out.
                said = [] if answer.error else [
                    {"role": "user", "content": question}, {"role": "assistant", "content": answer.text}
                ]
                targets = page_targets(answer)
                yield (
                    chat, chat, [*history, *said], sources_html(answer), gr.skip(), status_markdown(rag.stats()),
                    answer_as_text(answer),
                    gr.update(choices=[(t["label"], i) for i, t in enumerate(targets)], value=None, visible=bool(targets)),
                    "", targets,
                )
            elif not shown_passages:
                shown_passages = True
                yield chat, chat, gr.skip(), sources_html(answer), "", gr.skip(), "", gr.update(visible=False), "", []
            else:
                # Token by token only the chat changes: the sources were sent once already.
                yield chat, chat, gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()

    # Annotations are strings here (__future__), and gr is a local name: point Gradio at the real class.
    respond.__annotations__["request"] = gr.Request

    def new_chat() -> tuple[Any, ...]:
        return [], [], [], NO_SOURCES, "", "", gr.update(choices=[], value=None, visible=False), "", []

    def show_page(choice: int | None, targets: list[dict[str, Any]]) -> str:
        if choice is None or not 0 <= choice < len(targets):
            return ""
        target = targets[choice]
        try:
            from page_images import render_page_png

            png = render_page_png(rag.settings, target["source"], target["page"], target["texts"])
        except ImportError:
            return "<p class='docqa-note'>Page images are not available in this version of docqa.</p>"
        except DocqaError as exc:
            return f"<p class='docqa-note'>⚠ {html.escape(str(exc))}</p>"
        return page_image_html(png, target["label"])

    def refresh(files: list[str] | None, removing: str | None) -> tuple[Any, ...]:
        """Status, index panel and the two document lists as the index is now; choices kept if still there."""
        stats = rag.stats()
        sources = indexed_sources(rag)
        return (
            status_markdown(stats),
            indexing_markdown(rag.indexing),
            index_panel_html(stats, rag.indexing),
            gr.update(choices=sources, value=[f for f in files or [] if f in sources]),
            gr.update(choices=sources, value=removing if removing in sources else None),
        )

    def poll(seen: tuple[Any, ...] | None, files: list[str] | None, removing: str | None) -> tuple[Any, ...]:
        """On load, then every few seconds: nothing unless the background indexer moved on.

        While a sync runs only the progress line changes; stats are read once it is over.
        """
        indexing = rag.indexing
        now = (indexing.get("state"), indexing.get("done"), indexing.get("total"), indexing.get("finished"))
        if now == seen:
            return (gr.skip(),) * 6
        if now[0] == "indexing" and seen is not None:
            return gr.skip(), indexing_markdown(indexing), gr.skip(), gr.skip(), gr.skip(), now
        return (*refresh(files, removing), now)

    def upload(
        paths: list[str] | None, files: list[str] | None, removing: str | None, progress: Any = gr.Progress()
    ) -> tuple[Any, ...]:
        """Save each file into the documents folder, index once, report what became of each."""
        added, refused, error = [], [], None
        for path in paths or []:
            name = Path(path).name  # Gradio keeps the browser's file name, minus unsafe characters
            try:
                added.append(rag.add_upload(name, Path(path)))
            except DocqaError as exc:
                refused.append(str(exc))
            except OSError as exc:
                refused.append(f"{name}: it could not be saved ({exc.strerror or exc})")
            finally:
                Path(path).unlink(missing_ok=True)  # no copy of a private file left in Gradio's cache
        if added:
            try:
                rag.index(progress=lambda stage, done, total: progress((done, total), desc=f"Indexing: {stage}", unit="files"))
            except DocqaError as exc:
                error = str(exc)
            except Exception:
                log.exception("Indexing uploads failed")
                error = "unexpected error, see the server log"
        return (None, upload_report_html(added, refused, rag, error), *refresh(files, removing))

    def ask_removal(source: str | None) -> tuple[Any, ...]:
        if not source:
            return gr.update(visible=False), "<p class='docqa-note'>Choose a document to remove first.</p>"
        return gr.update(visible=True), (
            f"<p>Delete <code>{html.escape(source)}</code> from the documents folder and the index? "
            "This cannot be undone.</p>"
        )

    def remove(source: str | None, files: list[str] | None) -> tuple[Any, ...]:
        if not source:
            return (gr.update(visible=False), "", *(gr.skip(),) * 5)
        try:
            rag.remove_document(source)
        except (DocqaError, OSError) as exc:
            return (gr.update(visible=False), f"<p>⚠ {html.escape(str(exc))}</p>", *(gr.skip(),) * 5)
        note = f"<p>✓ Removed <code>{html.escape(source)}</code> from the index and the documents folder.</p>"
        return (gr.update(visible=False), note, *refresh(files, None))

    with gr.Blocks(title="docqa", analytics_enabled=False) as app:
        gr.Markdown("# docqa\nAsk questions about the files in your documents folder. Answers cite their sources.")
        status = gr.Markdown(elem_id="docqa-status")
        indexing_note = gr.Markdown(elem_id="docqa-indexing")
        turns = gr.State([])  # the chat as shown
        history = gr.State([])  # the same turns as plain text, for follow-up questions
        targets = gr.State([])  # the PDF pages of the latest answer
        seen = gr.State(None)  # the indexer state the page last showed
        with gr.Tabs():
            with gr.Tab("Ask", id="ask"):
                with gr.Row():
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
                        box = gr.Textbox(
                            placeholder="Ask a question about your documents…", show_label=False, elem_id="docqa-question"
                        )
                        with gr.Row():
                            send = gr.Button("Ask", variant="primary", elem_id="docqa-ask")
                            clear = gr.Button("New chat", elem_id="docqa-new-chat")
                            copy = gr.Button("Copy answer", elem_id="docqa-copy")
                        copy_text = gr.Textbox(visible=False, elem_id="docqa-copy-text")
                        gr.Markdown("**Example questions**")
                        with gr.Row():
                            example_buttons = [
                                gr.Button(q, size="sm", elem_classes=["docqa-example"]) for q in EXAMPLE_QUESTIONS
                            ]
                    with gr.Column(scale=2):
                        files = gr.Dropdown(
                            choices=indexed_sources(rag), multiselect=True, label="Only these documents (optional)",
                            elem_id="docqa-filter",
                        )
                        gr.Markdown("**Sources**")
                        source_box = gr.HTML(NO_SOURCES, elem_id="docqa-sources")
                        page_pick = gr.Dropdown(
                            label="Show a PDF page with the passage highlighted", visible=False, elem_id="docqa-page-pick"
                        )
                        page_view = gr.HTML("", elem_id="docqa-page")
            with gr.Tab("Documents", id="documents"):
                with gr.Row():
                    with gr.Column():
                        uploader = gr.File(
                            file_count="multiple", label="Add documents (drop several files)", elem_id="docqa-upload"
                        )
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
        timer = gr.Timer(STATUS_POLL_S)

        outputs = [chat, turns, history, source_box, box, status, copy_text, page_pick, page_view, targets]
        inputs = [box, turns, history, files]
        send.click(respond, inputs, outputs, api_name="ask")
        box.submit(respond, inputs, outputs, api_visibility="private")
        for button in example_buttons:
            # A button given as an input passes its label: the question itself.
            button.click(respond, [button, turns, history, files], outputs, api_visibility="private")
        cleared = [chat, turns, history, source_box, box, copy_text, page_pick, page_view, targets]
        clear.click(new_chat, None, cleared, api_visibility="private")
        # The chat's own trash button empties the chat; forget the conversation with it.
        chat.clear(new_chat, None, cleared, api_visibility="private")
        copy.click(None, [copy_text], None, js=COPY_JS, api_visibility="private")
        page_pick.input(show_page, [page_pick, targets], page_view, api_visibility="private")

        listings = [status, indexing_note, index_panel, files, remove_pick]
        app.load(poll, [seen, files, remove_pick], [*listings, seen], api_visibility="private")
        # Not queued: a poll is a dict read, and must not wait behind answers being generated.
        timer.tick(poll, [seen, files, remove_pick], [*listings, seen], api_visibility="private", queue=False)
        uploader.upload(
            upload, [uploader, files, remove_pick], [uploader, upload_report, *listings], api_visibility="private"
        )
        remove_ask.click(ask_removal, remove_pick, [confirm, confirm_text], api_visibility="private")
        remove_no.click(lambda: (gr.update(visible=False), ""), None, [confirm, confirm_text], api_visibility="private")
        remove_yes.click(remove, [remove_pick, files], [confirm, remove_report, *listings], api_visibility="private")
    return app


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def load_auth(settings: Any) -> list[tuple[str, str]]:
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


def client_id(request: Any) -> str:
    if request is None:
        return "local"
    user = getattr(request, "username", None)
    host = getattr(getattr(request, "client", None), "host", None) or "unknown"
    return f"{user}@{host}" if user else host


def serve(rag: Any) -> None:
    s = rag.settings
    users = load_auth(s)
    if s.gradio_server_name not in LOOPBACK and not users:
        raise ConfigError(
            f"Refusing to listen on {s.gradio_server_name} without authentication: docqa serves private "
            "documents. Set DOCQA_AUTH=user:password (or DOCQA_AUTH_FILE), or keep GRADIO_SERVER_NAME=127.0.0.1."
        )
    app = build_app(rag)
    app.queue(default_concurrency_limit=max(1, s.ui_concurrency))
    log.info("Serving docqa on http://%s:%d", s.gradio_server_name, s.gradio_server_port)
    app.launch(
        server_name=s.gradio_server_name,
        server_port=s.gradio_server_port,
        show_error=False,
        css=CSS,
        # Questions and answers quote private documents: keep them out of the browser's storage.
        run_history=False,
        footer_links=["api"],
        # RAGSystem refuses files over MAX_FILE_MB with its own reason; this only stops a
        # runaway upload from filling the temp folder before that check can run.
        max_file_size=f"{max(100, int(4 * s.max_file_mb))}mb",
        auth=users or None,
    )
