"""An answer and its passages as text and markdown; the rules the front ends share.

One owner for each rule that more than one module applies: how a passage's place is
written (`place`), what a citation looks like (`CITATION`, read by grounding too) and
when an answer is a refusal (`is_refusal`, used by RAGSystem and the evaluation).

Everything from a document or the model is shown as text, never as markup: chat markdown can
carry no HTML or image from the model (see `safe_markdown`); the page's source cards are HTML
built from `html.escape`d pieces (web_html.py). The only markup added is our own, after escaping and never inside code
(markdown_code.py finds it): `[n]` citations become links to the source cards, and
unsupported sentences are wrapped in `<mark>`.

It imports nothing of docqa's but the refusal sentence, so the core and the front ends can
both use it; answers and passages are read through the small protocols below.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from answer_prompt import REFUSAL
from markdown_code import closing_fence, code_spans, outside_code

CITATION = re.compile(r"(?<!\\)\[(\d+)\]")
"""A citation as the prompt asks for it: one passage number in brackets, "[2]". A list such
as "[1, 2]" is not one: in an answer it is more often Python than a citation, and neither is the
"[2]" that rendered markdown escapes with a backslash (an image's brackets, a quote's own text)."""
BLOCK_PREFIX = re.compile(r"^\s*(?:(?:[-*+•]|\d+[.)]|#{1,6}|>)\s+)*")
MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")
CLI_SNIPPET_CHARS = 160
UNSUPPORTED_NOTE = "Not confirmed by the sources"
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


def quote_markdown(text: str, passage: int, where: str) -> str:
    """One quote as markdown: its lines verbatim under ">" (prose spacing collapsed; code, whose
    indentation and ">>>" prompts are part of it, as written), a fence in it closed, then its passage
    number and `where` it stands. What stands as an answer's text when the model's is set aside, and,
    made safe, what is shown before the model writes (`quotes_markdown`)."""
    fenced = [span for span in code_spans(text) if span.fenced]
    lines, pos = [], 0
    for line in text.split("\n"):
        in_code = any(span.start < pos < span.end for span in fenced)
        pos += len(line) + 1
        if in_code or line.strip():
            lines.append(f"> {line.rstrip()}" if in_code else f"> {unquoted(' '.join(line.split()))}")
    body = "\n".join(lines)
    return f"{body}{closing_fence(body)}\n>\n> — [{passage}] {where}"


def quotes_text(quotes: Sequence[QuoteView]) -> str:
    """The quotes as an answer's markdown text, each with its place as written."""
    return "\n\n".join(quote_markdown(q.text, q.passage, q.location) for q in quotes)


def quotes_markdown(quotes: Sequence[QuoteView]) -> str:
    """The supporting sentences, verbatim, each with its place: shown before the model writes."""
    return "\n\n".join(safe_markdown(quote_markdown(q.text, q.passage, literal_markdown(q.location))) for q in quotes)


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
