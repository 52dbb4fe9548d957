"""Runaway output from a small model, cut before the user reads it.

Small models loop (the same sentence or line again and again until the token limit), stop
mid-sentence at the limit, and write sentences that only say where the answer is ("This is
stated in [2]."). These rules are applied to the text as it streams (`repeats_from`, so
generation stops as soon as it loops) and once at the end (`tidy_answer`).

Deleted on 2026-12-06, each switched off alone on recorded drafts of both halves of the dev pool
(bench/ablate.py) with no outcome moved: copied passage labels, copied context cut, a "Yes" its
sentence denies, an unfinished lead-in, a refusal after the answer, code nobody asked for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from answer_check import Place
from answer_render import cite_outside_fences
from grounding import CITATION, sentence_spans, split_sentences
from markdown_code import closing_fence

CUT_MARKER = " …"
_ENDS_CLEANLY = re.compile(r"""[.!?:)\]`'"*]\s*$|```\s*$""")


def _key(text: str) -> str:
    return " ".join(CITATION.sub(" ", text).lower().split()).strip(" .")


def repeats_from(text: str) -> int | None:
    """Where `text` starts repeating itself: the offset of a sentence or line seen before, else None."""
    seen: set[str] = set()
    at = 0
    for sentence in split_sentences(text):
        start = text.find(sentence, at)
        at = start + len(sentence)
        key = _key(sentence)
        if len(key) < 12:
            continue
        if key in seen:
            return start
        seen.add(key)
    return None


REPEATED_EARLIER = "earlier answer repeated"
"""What `tidied` says when the answer is a previous answer again (answer_verdict.judge sets it aside)."""
REPEAT_SHARE = 0.8
"""This share of an answer's text in sentences of an earlier answer makes it that answer again."""


def repeats_earlier(text: str, earlier: list[str]) -> bool:
    """Whether `text` is an earlier answer of the chat again, sentence for sentence.

    Small models given the history copy their last answer for a follow-up ("and what
    happens if I delete it?"); shown as new, it looks like an answer to the new question.
    """
    seen = {_key(s) for answer in earlier for s in split_sentences(answer)}
    keys = [k for k in (_key(s) for s in split_sentences(text)) if len(k) >= 12]
    total = sum(len(k) for k in keys)
    return total > 0 and sum(len(k) for k in keys if k in seen) >= REPEAT_SHARE * total


def drop_repeats(text: str) -> tuple[str, bool]:
    cut = repeats_from(text)
    return (text, False) if cut is None else (text[:cut].rstrip(), True)


_LONE_CITATION = re.compile(r"(?<=\S)[ \t]*\n\s*((?:\[\d{1,2}\][ ,]*)+)\s*$")


def join_lone_citation(text: str) -> tuple[str, bool]:
    """A citation on a line of its own at the end ("...any CPU.\n\n[1]") cites the sentence before it:
    joined to it, the grounding check tests that sentence against the passage it names (and
    re-cites it when another passage backs it), instead of leaving a citation nothing checked."""
    if "```" in text:
        return text, False
    match = _LONE_CITATION.search(text)
    if not match:
        return text, False
    head, cite = text[: match.start()], match.group(1).strip(" ,")
    end = len(head.rstrip(".!?"))  # "CPU. [1]" would split into a sentence and a bare "[1]": "CPU [1]."
    return f"{head[:end]} {cite}{head[end:]}", True


_CITES = r"((?:\[\d{1,2}\][ ,]*)+)"
# "The passage that explains this …", "The source which provides the information …": the passage named by what it does.
_DOING = (
    r"(?:\s+(?:that|which)\s+(?:provides?|gives?|contains?|supports?|explains?|describes?|mentions?|states?|says?)\s+"
    r"(?:this|that|it|the\s+(?:information|answer))(?:\s+information)?)?"
)
_POINTER_LEAD = (
    r"^(?:(?:this|it|that|they|these|this information|the answer|(?:the\s+)?(?:passage|source)s?" + _DOING + r")"
    r"\s+(?:is|are|can be|was|were)\s+(?:\w+\s+)?"
    r"(?:mentioned|described|explained|stated|found|seen|shown|discussed|covered|given|noted|listed|based|specified|documented|detailed|outlined|provided)\s+"
    r"(?:in|from|by|at|on)|(?:this|the)\s+(?:answer|information|passage|source)\s+(?:comes|is taken)\s+from"
    r"|(?:this|it|that)(?:\s+information)?\s+(?:is|comes)\s+from"
    r"|see|refer to|(?:as|this is)\s+(?:mentioned|stated|described|explained)\s+in|source:?"
    r"|(?:the\s+)?(?:passage|source)s?" + _DOING + r"\s+(?:is|are)(?:\s+(?:from|in))?)\s+(?:the\s+)?"
)
# "… on page 2 of [1]", "… in [2] on page 3": the place, which the citation shows already (seen in the browser).
_PLACE = r"(?:page|pages|lines?|p\.)\s*\d+(?:\s*(?:[-–,]|and|to)\s*\d+)*"
# "… on page [1]", "… in lines [2]": the place named by the citation alone (seen with a real document).
_PLACE_OF = rf"(?:{_PLACE}\s+(?:of|in)\s+(?:the\s+)?|(?:page|pages|lines?)\s+(?=\[\d))?"
_AT_PLACE = rf"(?:,?\s+(?:on|at|in)\s+{_PLACE})?"
# "This can be found in the [notes.docx] file, under the "Settings" section.", "… in the [1] passage under
# "Invalid values"." (seen in the browser): the model names the passage by its file or number, and the part
# of it, by a heading in quotes or followed by "section" (unquoted and bare, "under certain conditions" is a claim).
_SECTION = r"\s+(?:section|chapter|table|heading|part)"
_PART = (
    r"(?:,?\s+(?:under|in)\s+(?:the\s+)?(?:[\"“'`][^\"”'`.\[\]\n]{1,60}[\"”'`](?:" + _SECTION + r")?"
    r"|[^\"”'`.\[\]\n]{1,60}" + _SECTION + r"|(?:section|chapter|part|table)\s+\d+(?:\.\d+)*))?"  # "under section 2.4" (seen)
)
# "…, which explains where docqa reads settings from": what the file is about, not a claim of the answer.
_ABOUT_FILE = r"(?:,\s+(?:which|that|where)\s+[^.\[\]\n]{1,200})?"
# "[notes.docx]", "`notes.docx` file", and the passage's label copied in brackets, "[dgram.md, lines 872-889]" (seen).
_FILE_NAME = rf"[\[`'\"]?(?P<name>[\w .()-]{{1,80}}\.\w{{1,5}})(?P<place>,\s*{_PLACE})?[\]`'\"]?(?:\s+(?:file|document))?"
# "This is stated in passage [2] on page 4 of the notes.docx file, which lists …", "… in the [3] passage on
# page 1 of the user guide": the number, the page and the file at once (seen in the browser, where the page
# and the file were another passage's). The citation is what it points at: the checks judge the claim it goes to.
_OF_FILE = (
    r"(?:\s+(?:of|in|from)\s+(?:the\s+)?(?:" + _FILE_NAME.replace("?P<name>", "")
    + r"|(?:[\w-]+\s+){0,3}(?:guide|document|file|manual|reference|faq|book)))?"
)
_POINTER = re.compile(
    _POINTER_LEAD + _PLACE_OF + r"(?:(?:passage|passages|document|documents|context|source|sources|text)\s*(?:(?:from|in|at)\s+)?)?"
    + _CITES + r"(?:\s*(?:passage|passages|source|sources)\b)?" + _AT_PLACE + _OF_FILE + _PART + _ABOUT_FILE + r"\s*(?:\[\d{1,2}\][ ,]*)*\s*[.!]?$",
    re.IGNORECASE,
)
_FILE_POINTER = re.compile(
    _POINTER_LEAD + _PLACE_OF + r"(?:(?:passage|document|source)\s+(?:from|in|at)\s+)?" + _FILE_NAME + _AT_PLACE + _PART
    + _ABOUT_FILE + r"\s*" + _CITES + r"?\s*[.!]?$",
    re.IGNORECASE,
)


def fold_pointer_sentences(text: str, labels: Sequence[str] = ()) -> tuple[str, bool]:
    """A sentence that only says where the answer is ("This is mentioned in [3].", "This can be
    found in the [notes.docx] file.") becomes the citation of the sentence before it: it claims
    nothing a passage could back, so the grounding check marked it unsupported beside a right
    answer (Qwen 1.5B adds one often). `labels` are the passages' labels as the prompt showed
    them, in passage order ("dgram.md, lines 872-889", or the file alone): a file name turns into
    the numbers of its passages, and a label copied whole into its one passage; a name no passage
    has stays a sentence."""
    if "```" in text:
        return text, False
    out, copied, folded = "", 0, False
    for start, stop in (span for span in sentence_spans(text) if span):  # split_sentences' pieces: always found
        piece = text[start:stop].strip()
        numbers = _pointed_at(piece, labels)
        if folded and not CITATION.sub("", piece).strip(" ,.;"):
            numbers = CITATION.findall(piece)  # "… section. [1][3]": the pointer's own citations, split off
        folded = bool(numbers and out.strip())
        if folded:
            out = _cite_at_end(out, numbers)
        else:
            out += text[copied:stop]
        copied = stop
    out += text[copied:]
    return (out.strip(), True) if out != text else (text, False)


def _pointed_at(sentence: str, labels: Sequence[str]) -> list[str]:
    """The passage numbers a pointer sentence names; [] when it is not one."""
    match = _POINTER.match(sentence)
    if match:
        return list(dict.fromkeys(CITATION.findall(match.group(0))))
    match = _FILE_POINTER.match(sentence)
    if not match:
        return []
    name = match.group("name").strip().lower()
    if match.group("place"):
        label = " ".join(f"{name}{match.group('place')}".lower().split())
        exact = [str(i) for i, text in enumerate(labels, start=1) if " ".join(text.lower().split()) == label]
        if exact:
            return exact
    return [str(i) for i, text in enumerate(labels, start=1) if Place.of(text).file == name]


def _cite_at_end(text: str, numbers: list[str]) -> str:
    """`text` with the citations [n] it lacks added before its closing punctuation."""
    body = text.rstrip(".!?")
    cites = "".join(f"[{n}]" for n in numbers if f"[{n}]" not in text)
    return body + ("" if body.endswith("]") or not cites else " ") + cites + text[len(body):]


LEAD_IN_DROPPED, LEAD_IN_CLOSED = "unfinished lead-in dropped", "unfinished lead-in closed with a full stop"


def tidy_answer(text: str, hit_limit: bool, labels: Sequence[str] = ()) -> tuple[str, list[str]]:
    """The answer with loops cut, pointer sentences and lone citations folded into citations, code
    fences closed and a cut-off end marked; and what was done. `labels` are the passages' labels,
    in the prompt's order (fold_pointer_sentences)."""
    done: list[str] = []
    text, looped = drop_repeats(text.strip())
    if looped:
        done.append("repetition cut")
    text, pointed = fold_pointer_sentences(text, labels)
    if pointed:
        done.append("pointer sentence folded into a citation")
    text, lone = join_lone_citation(text)
    if lone:
        done.append("citation joined to its sentence")
    placed = cite_outside_fences(text).strip()
    if placed != text:
        text = placed
        done.append("citations moved out of code")
    text += closing_fence(text)  # an unclosed fence would swallow everything after it
    if (hit_limit or looped) and text and not _ENDS_CLEANLY.search(text):
        text += CUT_MARKER
        done.append("cut off")
    return text, done
