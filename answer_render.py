"""An answer and its passages as text, markdown and HTML; the rules the front ends share.

One owner for each rule that more than one module applies: how a passage's place is
written (`place`), what a citation looks like (`CITATION`, read by grounding too) and
when an answer is a refusal (`is_refusal`, used by RAGSystem and the evaluation).

Everything from a document or the model is shown as text, never as markup. HTML is built
from `html.escape`d pieces; chat markdown can carry no HTML or image from the model (see
`safe_markdown`). The only markup added is our own, after escaping and never inside code
(markdown_code.py finds it): `[n]` citations become links to the source cards, and
unsupported sentences are wrapped in `<mark>`.

It imports nothing of docqa's but the refusal sentence, so the core and the front ends can
both use it; answers and passages are read through the small protocols below.
"""

from __future__ import annotations

import bisect
import html
import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from llm_handler import REFUSAL
from markdown_code import closing_fence, code_spans, outside_code

CITATION = re.compile(r"(?<!\\)\[(\d+)\]")
"""A citation as the prompt asks for it: one passage number in brackets, "[2]". A list such
as "[1, 2]" is not one: in an answer it is more often Python than a citation, and neither is the
"[2]" that rendered markdown escapes with a backslash (an image's brackets, a quote's own text)."""
BLOCK_PREFIX = re.compile(r"^\s*(?:(?:[-*+•]|\d+[.)]|#{1,6}|>)\s+)*")
MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")
MARKDOWN_HEADING = re.compile(r"^#{1,6} ", re.MULTILINE)  # the heading path is shown on its own line
SNIPPET_CHARS = 400
SNIPPET_LEAD_CHARS = 100  # context kept before the first highlight when a passage is cut
CLI_SNIPPET_CHARS = 160
UNSUPPORTED_NOTE = "Not found in the sources"
NO_MODEL = "no model used"  # the footer of an answer docqa gave without the LLM (a refusal, the file list)


class Placed(Protocol):
    """What `place` needs of a passage (retriever.Passage has it)."""

    @property
    def source(self) -> str: ...
    @property
    def location(self) -> str: ...


class PassageView(Placed, Protocol):
    """A retrieved passage as the renderers read it."""

    @property
    def heading_path(self) -> list[str]: ...
    @property
    def text(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def found_by(self) -> Mapping[str, int]: ...


class QuoteView(Protocol):
    """A quote as the renderers read it (answer_types.ShownQuote has it)."""

    @property
    def passage(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def location(self) -> str: ...


class TimingsView(Protocol):
    @property
    def total_s(self) -> float | None: ...


class AnswerView(Protocol):
    """An answer as the renderers read it (rag_system.Answer has it); the optional fields are read with getattr."""

    @property
    def text(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def done(self) -> bool: ...
    @property
    def timings(self) -> TimingsView: ...
    @property
    def passages(self) -> Sequence[PassageView]: ...


# ---------------------------------------------------------------- the shared rules


def place(passage: Placed, separator: str = ", ") -> str:
    """Where a passage comes from, as a reader would cite it: "notes.md, page 3", "notes.md, Setup"."""
    return f"{passage.source}{separator}{passage.location}" if passage.location else passage.source


def heading_note(passage: PassageView) -> str:
    """The passage's heading path, when its place does not already say it; "" otherwise."""
    heading = " > ".join(passage.heading_path)
    return heading if heading != passage.location else ""


def pdf_pages_note(passage: Placed) -> str:
    """The PDF's own page numbers of a passage whose place names the book's printed pages ("PDF page 157"); "" otherwise."""
    pages = list(getattr(passage, "pages", None) or [])
    printed = getattr(passage, "printed_page", None)
    if not pages or printed is None or all(printed(p) == str(p) for p in pages):
        return ""
    return f"PDF page {pages[0]}" if len(pages) == 1 else f"PDF pages {min(pages)}-{max(pages)}"


def found_by_text(passage: PassageView) -> str:
    """Which searches found the passage, at which rank: "bm25 #1, vector #3"."""
    return ", ".join(f"{k} #{v}" for k, v in sorted(passage.found_by.items()))


OUTLINE_PART = "summary part"  # a summary's passage key in found_by: its part's number, not a search's rank


def part_note(passage: PassageView) -> str | None:
    """"part 3 of the document" for a summary's passage, which no search found or scored; else None."""
    number = passage.found_by.get(OUTLINE_PART)
    return None if number is None else f"part {number} of the document"


def citations(text: str) -> list[re.Match[str]]:
    """The [n] citations in a markdown text, in order; a "[1]" inside code (`xs[1]`) is code, not one."""
    return [m for s, e in outside_code(text) for m in CITATION.finditer(text, s, e)]


def uncited(text: str) -> str:
    """The text without its [n] citations; code keeps its brackets (`xs[1]`) and its spacing."""
    out, pos = "", 0
    for m in citations(text):
        out = (out + text[pos : m.start()]).rstrip(" ")
        pos = m.end()
        if text[pos : pos + 1] not in ("", " ", "\n", *".,;:!?") and out and not out.endswith("\n"):
            out += " "
    return (out + text[pos:]).strip()


def cite(text: str, numbers: Sequence[int]) -> str:
    """`text` with citations of `numbers` before its final stop, as answers write them: "… immutable [1]."."""
    marks = "".join(f"[{n}]" for n in numbers)
    text = text.rstrip()
    if text.endswith((".", "!", "?")) and marks:
        return f"{text[:-1]} {marks}{text[-1]}"
    return f"{text} {marks}".strip()


def cited_numbers(text: str, count: int) -> list[int]:
    """The passage numbers, 1 to `count`, that the text cites, in order and once each."""
    return sorted({int(m[1]) for m in citations(text) if 1 <= int(m[1]) <= count})


_FENCE_CITES = re.compile(r"(?m)^([ \t>]*(?:`{3,}|~{3,})[^`\n]*?)[ \t]*((?:\[\d{1,3}\][ \t,]*)+)$")
"""A fence line ending in citations ("``` [1]"): not a closing fence, so the block would run on."""
_CITES_ONLY = re.compile(r"[ \t>]*(?:\[\d{1,3}\][ \t,]*)+")


def cite_outside_fences(text: str) -> str:
    """Citations on a fence line ("``` [1]") or on lines of their own right after a code block
    move to the end of the prose line before the block ("Here is how [1]:"), or are dropped
    when no prose comes before it: on the fence line the block never closes, and a lone
    "[1]" under the code cites nothing a reader can see."""
    lines = text.split("\n")
    carried: dict[int, list[str]] = {}  # line -> the citations its fence carried
    for i, line in enumerate(lines):
        match = _FENCE_CITES.fullmatch(line)
        if match:
            carried[i], lines[i] = CITATION.findall(match[2]), match[1]
    text = "\n".join(lines)
    offsets = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    blocks = [(bisect.bisect_right(offsets, s.start) - 1, bisect.bisect_right(offsets, max(s.end - 1, s.start)) - 1)
              for s in code_spans(text) if s.fenced]  # (first line, last line) of each fenced block
    in_code = {i for first, last in blocks for i in range(first, last + 1)}
    drop: set[int] = set()
    for first, last in blocks:
        numbers = [n for i in range(first, last + 1) for n in carried.get(i, [])]
        after = last + 1
        while after < len(lines) and after not in in_code and (not lines[after].strip() or _CITES_ONLY.fullmatch(lines[after])):
            if lines[after].strip():
                numbers += CITATION.findall(lines[after])
                drop.add(after)
            after += 1
        before = next((i for i in range(first - 1, -1, -1) if lines[i].strip() and i not in drop), None)
        if numbers and before is not None and before not in in_code:
            lines[before] = _cited(lines[before], numbers)
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)


def _cited(line: str, numbers: list[str]) -> str:
    """The prose line with the citations it lacks, before its closing punctuation."""
    body = line.rstrip()
    end = len(body.rstrip(".!?:;,"))
    new = "".join(dict.fromkeys(f"[{n}]" for n in numbers if f"[{n}]" not in line))
    if not new:
        return line
    return body[:end] + ("" if body[:end].endswith("]") else " ") + new + body[end:]


UNCONFIRMED = "No answer could be confirmed from the documents."
"""How a doubted question's refusal opens when the passages' nearest sentences follow (see refusal_text)."""


def is_refusal(text: str) -> bool:
    """Whether an answer declines: it opens with the refusal the prompt asks for, or with UNCONFIRMED."""
    opening = " ".join(text.split())[: len(REFUSAL) + 40].lower()
    return any(words.lower().rstrip(".") in opening for words in (REFUSAL, UNCONFIRMED))


def refusal_text(passages: Sequence[Placed], shown: int = 3, reason: str = "", nearest: str = "") -> str:
    """What is said instead of guessing: the refusal, its `reason` when there is one, then where the closest passages are.

    With the passages' `nearest` sentences (markdown quotes) and no reason, it opens with UNCONFIRMED and
    the sentences instead: they often answer a question asked in other words than the documents'
    (ship-21, "Are my files uploaded to some cloud service?", beside the FAQ's "No. docqa has no
    cloud component"), and a flat "The documents do not cover this. No passage is close enough"
    above them contradicts what the reader sees next.
    """
    closest = "\n".join(f"[{n}] {place(p)}" for n, p in enumerate(passages[:shown], start=1))
    if nearest and not reason:
        return f"{UNCONFIRMED} Their sentences nearest to your question, in case one answers it:\n\n{nearest}\n\nThe closest passages are:\n{closest}"
    text = f"{REFUSAL}{' ' + reason if reason else ''} No passage is close enough to the question to answer from; the closest are:\n{closest}"
    if nearest:
        text += f"\n\nNo answer could be confirmed from them. Their sentences nearest to your question, in case one answers it:\n\n{nearest}"
    return text


# ---------------------------------------------------------------- plain text


def answer_as_text(answer: AnswerView) -> str:
    """The answer and its citations as plain text, for the copy button: "[1] file, page 3".

    Lists the passages the answer cites, or all of them when it cites none (a refusal
    lists the closest passages; the packaged model rarely cites).
    """
    text = answer.text.strip()
    quotes = list(getattr(answer, "quotes", None) or [])
    if quotes and getattr(answer, "set_aside", None) is None and not getattr(answer, "refused", False):
        text = f"From the documents:\n{quote_lines(quotes)}\n\nAnswer: {text}"
    more = len(getattr(answer, "more_passages", None) or [])
    return text + sources_text(answer.passages, text) + (f"\n({weak_matches_note(more)} left out)" if more else "")


def weak_matches_note(count: int) -> str:
    """How the source lists count the weak matches they leave out (answer_sources.py): "2 more weak matches"."""
    return f"{count} more weak match{'' if count == 1 else 'es'}"


def sources_text(passages: Sequence[PassageView], text: str) -> str:
    """The "Sources:" list that ends a plain-text answer: the passages `text` cites, or all of them."""
    if not passages:
        return ""
    numbers = cited_numbers(text, len(passages)) or list(range(1, len(passages) + 1))
    lines = []
    for n in numbers:
        p = passages[n - 1]
        heading = heading_note(p)
        lines.append(f"[{n}] {place(p)}" + (f" ({heading})" if heading else ""))
    return "\n\nSources:\n" + "\n".join(lines)


def source_line(n: int, passage: PassageView) -> str:
    """One source as the command line prints it: its place, heading, score and the start of its text."""
    heading = heading_note(passage)
    snippet = " ".join(passage.text.split())[:CLI_SNIPPET_CHARS]
    return (
        f"[{n}] {place(passage)}" + (f" [{heading}]" if heading else "")
        + f"  {part_note(passage) or f'score {passage.score:.4f} ({found_by_text(passage)})'}\n    {snippet}"
    )


# ---------------------------------------------------------------- chat markdown


def safe_markdown(text: str, marked: Sequence[tuple[int, int]] = ()) -> str:
    """Model output as markdown that cannot run or load anything, its code shown as written.

    Every HTML construct (tag, comment, autolink) starts with "<", so escaping it leaves
    none; "![" is the only markdown that loads a resource. Inside code both are left as
    they are where the renderer surely shows code (it escapes code itself; an entity there
    would be shown as "&lt;"). "&" stays, so `a && b` reads right; an entity can only
    spell text. The `marked` stretches (sorted, apart) are wrapped in <mark>, code left
    out; a fence left open is closed, so nothing docqa adds after it is shown as code.
    """
    out, pos = [], 0
    for span in code_spans(text):
        out += [_marked_prose(text, pos, span.start, marked), text[span.start : span.end] if span.literal else _escaped(text[span.start : span.end])]
        pos = span.end
    out.append(_marked_prose(text, pos, len(text), marked))
    return "".join(out) + closing_fence(text)


def _escaped(text: str) -> str:
    return text.replace("<", "&lt;").replace("![", "!\\[")


def _marked_prose(text: str, start: int, end: int, marked: Sequence[tuple[int, int]]) -> str:
    """text[start:end], prose with no code in it, escaped; the parts inside `marked` wrapped in <mark>."""
    out, pos = [], start
    for s, e in marked:
        s, e = max(s, pos), min(e, end)
        if s < e:
            out += [_escaped(text[pos:s]), mark_unsupported(text[s:e])]
            pos = e
    out.append(_escaped(text[pos:end]))
    return "".join(out)


def literal_markdown(text: str) -> str:
    """Text shown exactly as written: markdown punctuation escaped, no HTML."""
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", text).replace("<", "&lt;")


def link_citations(markdown: str, count: int) -> str:
    """Each [n] citing one of `count` sources links to its card; code is left alone.

    Runs on escaped markdown and only ever adds links built from digits.
    """

    def link(m: re.Match[str]) -> str:
        n = int(m[1])
        return f"[\\[{n}\\]](#source-{n})" if 1 <= n <= count else m[0]

    out, pos = [], 0
    for s, e in outside_code(markdown):
        out += [markdown[pos:s], CITATION.sub(link, markdown[s:e])]
        pos = e
    return "".join(out) + markdown[pos:]


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
    """An unsupported stretch of prose, escaped and marked line by line so lists and headings survive."""
    lines = []
    for line in text.split("\n"):
        prefix = BLOCK_PREFIX.match(line)[0]  # type: ignore[index]  # matches empty at worst
        body = line[len(prefix) :]
        lines.append(
            prefix + (f"<mark class='docqa-unsupported' title='{UNSUPPORTED_NOTE}'>{_escaped(body)}</mark>" if body.strip() else "")
        )
    return "\n".join(lines)


def quotes_markdown(quotes: Sequence[QuoteView]) -> str:
    """The supporting sentences, verbatim, each with its place: shown before the model writes."""
    blocks = []
    for q in quotes:
        body = safe_markdown("\n".join(f"> {line}" for line in _quoted_lines(q.text)))  # a fence closes inside it
        blocks.append(f"{body}\n>\n> — [{q.passage}] {literal_markdown(q.location)}")
    return "\n\n".join(blocks)


def quote_text_lines(text: str) -> list[tuple[str, bool]]:
    """A quote's lines, each with whether it stands inside fenced code (whose indentation and
    ">>>" prompts are part of it): what both quote renderers walk."""
    fenced = [span for span in code_spans(text) if span.fenced]
    lines, pos = [], 0
    for line in text.split("\n"):
        lines.append((line, any(span.start < pos < span.end for span in fenced)))
        pos += len(line) + 1
    return lines


def _quoted_lines(text: str) -> list[str]:
    """A quote's lines with their spacing collapsed, except inside code, whose indentation is part of it."""
    return [
        line.rstrip() if in_code else unquoted(" ".join(line.split()))
        for line, in_code in quote_text_lines(text)
        if in_code or line.strip()
    ]


def unquoted(line: str) -> str:
    """A text line that starts with ">" (Python's ">>>" prompt) escaped: inside a quote it would nest quotes."""
    return "\\" + line if line.startswith(">") else line


def quote_lines(quotes: Sequence[QuoteView]) -> str:
    """The quotes as plain text for a terminal: each verbatim, then its place."""
    blocks = []
    for q in quotes:
        text = " ".join(q.text.split())
        blocks.append(f"  “{text}”\n    — [{q.passage}] {q.location}")
    return "\n".join(blocks)


def _marked_text(answer: AnswerView) -> tuple[str, bool]:
    """The answer text as markdown with its unsupported sentences marked; and whether any were."""
    unsupported = find_spans(answer.text, list(getattr(answer, "unsupported", None) or [])) if answer.done else []
    return safe_markdown(answer.text, unsupported), bool(unsupported)


def _quoted_lead(answer: AnswerView) -> str:
    """What stands above the model's text: the quotes, or, when they are the answer, the notice."""
    quotes = list(getattr(answer, "quotes", None) or [])
    set_aside = getattr(answer, "set_aside", None)
    notice = getattr(answer, "notice", None)
    if set_aside is not None or getattr(answer, "refused", False) or not quotes:
        return f"<span class='docqa-notice'>⚠ {literal_markdown(notice)}</span>\n\n" if notice else ""
    lead = f"<span class='docqa-quotes-title'>From the documents:</span>\n\n{quotes_markdown(quotes)}\n\n"
    if notice:
        lead += f"<span class='docqa-notice'>⚠ {literal_markdown(notice)}</span>\n\n"
    return lead + "<span class='docqa-quotes-title'>Answer:</span>\n\n"


def _indexing_lead(answer: AnswerView) -> str:
    """Asked during a sync: the note that only part of the folder is indexed yet."""
    note = getattr(answer, "indexing", None)
    return f"<span class='docqa-indexing'>{literal_markdown(note)}</span>\n\n" if note else ""


def repeats_the_quotes(answer: AnswerView) -> bool:
    """The model's text is the quote shown above it, word for word: citations and whitespace aside."""
    quotes = [q.text for q in getattr(answer, "quotes", None) or []]
    if not answer.done or not quotes or getattr(answer, "set_aside", None) is not None:
        return False

    def bare(text: str) -> str:
        return "".join(CITATION.sub("", text).split())

    said = bare(answer.text)
    return bool(said) and (said in {bare(q) for q in quotes} or said == bare(" ".join(quotes)))


def _body(answer: AnswerView) -> tuple[str, bool]:
    """The model's text as markdown and whether sentences were marked; only its citations when it repeats the quote."""
    if repeats_the_quotes(answer):
        cited = " ".join(f"[{n}]" for n in cited_numbers(answer.text, len(answer.passages)))
        return f"As quoted above{' ' + cited if cited else ''}.", False
    return _marked_text(answer)


DRAFT_NOTE = "Draft: being checked against the passages…"
"""Above the model's text while it streams: only the checked answer, once done, looks final."""
DRAFT_LEAD = f"<span class='docqa-draft'>{DRAFT_NOTE}</span>\n\n"


def _draft_lead(answer: AnswerView) -> str:
    if answer.done or not answer.text or getattr(answer, "kind", "answer") != "answer":
        return ""
    return DRAFT_LEAD


def answer_markdown(answer: AnswerView) -> str:
    """The answer as chat markdown: quotes first, citations linked, unsupported sentences marked, search shown.
    While the model writes, its text is marked as a draft being checked."""
    body, marked = _body(answer)
    lead = _indexing_lead(answer) + _quoted_lead(answer) + _draft_lead(answer)
    out = link_citations(lead + (body or "…"), len(answer.passages))
    set_aside = getattr(answer, "set_aside", None)
    if set_aside:
        out += (
            "\n\n<details class='docqa-set-aside'><summary>Show the model's answer (set aside)</summary>\n\n"
            f"{safe_markdown(set_aside)}\n\n</details>"
        )
    if marked:
        out += f"\n\n<span class='docqa-note'>⚠ Underlined sentences: {UNSUPPORTED_NOTE.lower()}.</span>"
    searched = searched_for(answer)
    if searched:
        out += f"\n\n<span class='docqa-note'>Searched for: {literal_markdown(searched)}</span>"
    if answer.done:
        out += f"\n\n*— {safe_markdown(answer.model) if answer.model else NO_MODEL}*"
    return out


def searched_for(answer: AnswerView) -> str:
    """What retrieval searched for, when it is not the question as asked."""
    focus = (getattr(answer, "focus", None) or "").strip()
    if focus:
        return focus
    standalone = (getattr(answer, "standalone_question", None) or "").strip()
    asked = (getattr(answer, "question", None) or "").strip()
    return standalone if standalone and standalone != asked else ""


# ---------------------------------------------------------------- the sources as HTML


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
