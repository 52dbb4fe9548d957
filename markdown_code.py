"""Where code stands in markdown: fenced blocks and inline code spans, found as the chat's renderer finds them.

The answer renderers need it so that code stays code: a "[1]" inside code is not a
citation, a mark never enters a code block, and an unclosed fence is closed before
docqa adds its notes (they would be shown inside the code otherwise).

A span is `literal` only where the renderer is sure to show it as code, so a raw "<" in
it is shown as written and never read as HTML; an entity there would be shown as
"&lt;". Elsewhere the caller escapes "<" as in prose: when in doubt, safe beats pretty.
It imports nothing of docqa's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CONTAINER = re.compile(r"(?: {0,3}> ?)*")  # blockquote markers before a line's content
_FENCE = re.compile(r"([ \t]*)(`{3,}|~{3,})(.*)$")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


@dataclass(frozen=True)
class CodeSpan:
    start: int
    end: int
    fenced: bool
    literal: bool  # the renderer surely shows it as code: a raw "<" in it stays text


@dataclass
class _OpenFence:
    start: int
    depth: int  # blockquote depth of the opening line
    prefix: str  # its blockquote markers, repeated on the closing line
    indent: int
    marker: str
    in_list: bool
    dedented: bool = False  # a line inside sits left of the fence: the renderer may read it otherwise


def _indent(text: str) -> int:
    expanded = text.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


def _lines(text: str) -> list[tuple[int, str]]:
    """(offset, line without its newline) for every line."""
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, line))
        pos += len(line) + 1
    return out


def _after_list_item(lines: list[tuple[int, str]], index: int, indent: int) -> bool:
    """Whether the nearest line above, left of `indent`, starts a list item: the fence is inside it."""
    for _, line in reversed(lines[:index]):
        content = line[len(_CONTAINER.match(line)[0]) :]  # type: ignore[index]  # matches empty at worst
        if content.strip() and _indent(content) < indent:
            return bool(_LIST_ITEM.match(content))
    return False


def _fences(text: str) -> tuple[list[CodeSpan], _OpenFence | None]:
    """The fenced blocks, and the fence still open at the end of the text, if any."""
    lines = _lines(text)
    spans: list[CodeSpan] = []
    fence: _OpenFence | None = None
    for index, (offset, line) in enumerate(lines):
        prefix = _CONTAINER.match(line)[0]  # type: ignore[index]
        depth, content = prefix.count(">"), line[len(prefix) :]
        if fence is not None:
            left = bool(content.strip()) and _indent(content) < fence.indent
            if depth < fence.depth or (left and fence.in_list):  # its blockquote or list item ended
                spans.append(CodeSpan(fence.start, offset, True, not fence.dedented))
                fence = None
            elif content.strip() and set(content.strip()) == {fence.marker[0]} and len(content.strip()) >= len(fence.marker):
                spans.append(CodeSpan(fence.start, offset + len(line), True, not fence.dedented))
                fence = None
                continue
            else:
                fence.dedented |= left
                continue
        opening = _FENCE.match(content)
        if opening and not (opening[2][0] == "`" and "`" in opening[3]):
            indent = _indent(opening[1])
            fence = _OpenFence(offset, depth, prefix, indent, opening[2], indent > 0 and _after_list_item(lines, index, indent))
    if fence is not None:
        spans.append(CodeSpan(fence.start, len(text), True, not fence.dedented))
    return spans, fence


def _backtick_spans(text: str, start: int, end: int) -> tuple[list[tuple[int, int]], bool]:
    """Inline code spans in text[start:end], paired as CommonMark pairs them; and whether every run found its pair."""
    spans, paired, i = [], True, start
    while i < end:
        if text[i] == "\\" and i + 1 < end and text[i + 1] in _PUNCTUATION:
            i += 2
            continue
        if text[i] != "`":
            i += 1
            continue
        j = i
        while j < end and text[j] == "`":
            j += 1
        k, closer = j, None
        while k < end and closer is None:
            if text[k] != "`":
                k += 1
                continue
            m = k
            while m < end and text[m] == "`":
                m += 1
            closer, k = (m if m - k == j - i else None), m
        if closer is not None and closer - (j - i) > j:
            spans.append((i, closer))
            i = closer
        else:
            paired, i = False, j
    return spans, paired


def _inline(text: str, start: int, end: int) -> list[CodeSpan]:
    """Inline spans of one stretch between fences, paragraph by paragraph.

    They are literal only in a paragraph whose every line pairs its own backticks and
    holds no "|" (a table cell ends at one): then no reading of its lines into lists,
    headings or table cells can pair them differently.
    """
    out: list[CodeSpan] = []
    paragraph: list[tuple[int, str]] = []
    for offset, line in [*_lines(text[start:end]), (end - start + 1, "")]:
        content = line[len(_CONTAINER.match(line)[0]) :]  # type: ignore[index]
        if content.strip():
            paragraph.append((start + offset, line))
            continue
        if paragraph:
            first, last = paragraph[0][0], paragraph[-1][0] + len(paragraph[-1][1])
            spans, _ = _backtick_spans(text, first, last)
            sure = all(_backtick_spans(text, o, o + len(ln))[1] and "|" not in ln for o, ln in paragraph)
            out += [CodeSpan(s, e, False, sure) for s, e in spans]
        paragraph = []
    return out


def code_spans(text: str) -> list[CodeSpan]:
    """Every stretch of code in markdown text, in order: fenced blocks (an unclosed one runs to the end) and inline spans."""
    fenced, _ = _fences(text)
    out: list[CodeSpan] = []
    pos = 0
    for block in fenced:
        out += _inline(text, pos, block.start)
        out.append(block)
        pos = block.end
    out += _inline(text, pos, len(text))
    return out


def closing_fence(text: str) -> str:
    """What closes a fence the text leaves open ("\\n```"), so what follows is not shown as code; "" if none is open."""
    _, fence = _fences(text)
    if fence is None:
        return ""
    return ("" if text.endswith("\n") else "\n") + fence.prefix + " " * fence.indent + fence.marker


def outside_code(text: str) -> list[tuple[int, int]]:
    """The stretches of text between its code spans."""
    out, pos = [], 0
    for span in code_spans(text):
        if span.start > pos:
            out.append((pos, span.start))
        pos = span.end
    if pos < len(text):
        out.append((pos, len(text)))
    return out
