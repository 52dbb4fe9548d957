"""What the web page shows, written as HTML or markdown: the status line, the indexing line and
panel, the file table, upload and removal reports, the chat's own messages, PDF pages, and an
answer's source cards.

Pure functions of RAGSystem's results, so they are tested without a server; no Gradio here.
Everything that comes from a document or from the model is escaped (see answer_render).
"""

from __future__ import annotations

import base64
import html
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from answer_render import (
    DRAFT_LEAD,
    UNCONFIRMED,
    AnswerView,
    PassageView,
    answer_markdown,
    find_spans,
    found_by_text,
    heading_note,
    literal_markdown,
    part_note,
    pdf_pages_note,
    place,
    safe_markdown,
    weak_matches_note,
)
from doc_types import PAGE_VIEW_EXTENSIONS
from index_status import DOCUMENT_COLUMNS, document_rows

if TYPE_CHECKING:
    from rag_system import Answer, DocumentStatus, IndexStatus

NO_SOURCES = "<p class='docqa-empty'>Sources appear here.</p>"
STOPPED_NOTE = "Stopped: the answer ends here."
STOPPED_SOURCES = "Stopped before the answer was finished; these passages were found."

Message = dict[str, str]


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


def status_markdown(stats: dict[str, Any], model_note: str | None = None) -> str:
    """The line at the top of the page; `model_note` (RAGSystem.model_note) is said here once, not under each answer."""
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
    if model_note:
        line += f"\n\n<span class='docqa-note docqa-model-note'>{safe_markdown(model_note)}</span>"
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
    if status.last_change_at and status.finished and status.last_change_at < status.finished:
        # A later sync found nothing new (the folder watcher looking again after an upload, say):
        # the run that brought the change is the one worth reading, not a stale "0 added".
        run += f" — last change {clock(status.last_change_at)}: {html.escape(str(status.last_change or ''))}"
        run += f"; checked again {clock(status.finished)}: nothing new"
    elif status.finished:
        run += f" — last run {clock(status.finished)}: {html.escape(str(status.summary or ''))}"
    return run


def clock(when: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(when))


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


def queued_message() -> Message:
    """Shown under a question asked on this page while an earlier one is still being answered."""
    return {"role": "assistant", "content": "<span class='docqa-queued'>Waiting: answered once the question above is.</span>"}


def stopped_message(partial: Message | None) -> Message:
    """The answer as far as it got when the user pressed Stop (None: before it began), marked as cut."""
    so_far = f"{partial['content'].replace(DRAFT_LEAD, '')}\n\n" if partial else ""  # a stopped draft was never checked
    return {"role": "assistant", "content": f"{so_far}<span class='docqa-note docqa-stopped'>{STOPPED_NOTE}</span>"}


def waiting_message(ahead: int) -> Message:
    others = "another question" if ahead == 1 else "other questions"
    return {"role": "assistant", "content": f"<span class='docqa-waiting'>Waiting for {others} to finish ({ahead} ahead)…</span>"}


def too_many_questions(per_minute: int, wait_s: float) -> Message:
    return {"role": "assistant", "content": (
        f"Too many questions: at most {per_minute} a minute (RATE_LIMIT_PER_MINUTE). Try again in {wait_s:.0f} s."
    )}


# ---------------------------------------------------------------- the sources as HTML

MARKDOWN_HEADING = re.compile(r"^#{1,6} ", re.MULTILINE)  # the heading path is shown on its own line
SNIPPET_CHARS = 400
SNIPPET_LEAD_CHARS = 100  # context kept before the first highlight when a passage is cut


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


def source_card_html(n: int, passage: PassageView, highlights: list[str]) -> str:
    """Source card n: its place, heading, score and text, escaped; `#source-n` links to it."""
    heading = heading_note(passage)
    note = pdf_pages_note(passage)  # the page a PDF viewer shows, when the place names the printed one
    return (
        f"<div class='docqa-source' id='source-{n}'>"
        + (f"<div class='where' title='{html.escape(note, quote=True)}'>" if note else "<div class='where'>")
        + f"[{n}] {html.escape(place(passage, ' — '))}</div>"
        + (f"<div class='meta'>{html.escape(heading)}</div>" if heading else "")
        + f"<div class='meta'>{html.escape(part_note(passage) or f'score {passage.score:.4f} · found by {found_by_text(passage)}')}</div>"
        + snippet_html(passage.text, highlights)
        + "</div>"
    )


def sources_html(answer: AnswerView, note: str | None = None) -> str:
    """The passages behind an answer, with where they come from, as escaped HTML; its weak matches collapsed under them.
    `note` replaces the line on who answered (an answer stopped by the user has none)."""
    if not answer.passages:
        return "<p class='docqa-empty'>No sources.</p>"
    highlights = getattr(answer, "highlights", None) or {}
    parts = [f"<p class='docqa-model'>{html.escape(note or answer_note(answer))}</p>"]
    for n, p in enumerate(answer.passages, start=1):
        parts.append(source_card_html(n, p, list(highlights.get(n, []))))
    more = list(getattr(answer, "more_passages", None) or [])
    if more:  # far from the question and uncited: counted, one click away, numbered on after the list
        cards = [source_card_html(n, p, list(highlights.get(n, []))) for n, p in enumerate(more, start=len(answer.passages) + 1)]
        parts.append(
            f"<details class='docqa-weak'><summary>{weak_matches_note(len(more))}</summary>\n" + "\n".join(cards) + "\n</details>"
        )
    return "\n".join(parts)


def answer_note(answer: AnswerView) -> str:
    """One line on who answered and how long it took, or what is happening now."""
    if answer.done:
        if getattr(answer, "refused", False):
            if answer.text.startswith(UNCONFIRMED):  # their nearest sentences are shown, and may answer it
                return "No answer could be confirmed; these passages came closest."
            return "The documents do not answer this; these passages came closest."
        took = answer.timings.total_s
        after = f" in {took:.1f}s" if took else ""
        if getattr(answer, "set_aside", None) is not None:  # the quotes answer; the model's text did not stand
            return f"Quoted from the passages{after}; the answer of {answer.model or 'the model'} was set aside"
        return f"Answered by {answer.model or 'no model'}{after}"
    found = f"Found {len(answer.passages)} passage{'' if len(answer.passages) == 1 else 's'}"
    return f"{found}; {answer.model} is answering…" if answer.model else f"{found}; the model is reading them…"
