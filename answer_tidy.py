"""Runaway output from a small model, cut before the user reads it.

Small models loop (the same sentence or line again and again until the token limit), stop
mid-sentence at the limit, and write code nobody asked for. These rules are applied to the
text as it streams (`repeats_from`, so generation stops as soon as it loops) and once at the
end (`tidy_answer`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from answer_check import YES_NO, Place, denying_yes
from answer_render import cite_outside_fences
from grounding import CITATION, MIN_SENTENCE_WORDS, sentence_spans, split_sentences
from llm_handler import REFUSAL
from markdown_code import closing_fence

CUT_MARKER = " …"
_CODE_FENCE = re.compile(r"```[^\n]*\n.*?(?:```|\Z)", re.S)
_ASKS_FOR_CODE = re.compile(
    r"\b(code|snippet|example|implement\w*|write|show|syntax|function|program|script|one-liner|one line|how (?:do|can|would|should) i)\b",
    re.I,
)
_HAS_CODE = re.compile(r"```|>>>|^\s{2,}\S|\bdef \w+\(|\w\(.*\)|=", re.M)
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


def wants_code(question: str, passages: list[str]) -> bool:
    """Code belongs in the answer when the question asks for it or a passage holds some."""
    return bool(_ASKS_FOR_CODE.search(question)) or any(_HAS_CODE.search(p) for p in passages)


_ECHOED_LABEL = re.compile(r"(\[\d{1,2}\])[ \t]*\((?=[^()\n]*\.\w{1,5}\b)[^()\n]{1,200}\)")
"""A citation followed by the passage's label in brackets, "[1] (thinkpython2.pdf, page 207)":
the model copying the context's format, often with a page it made up; docqa names the place itself."""


def drop_echoed_labels(text: str) -> tuple[str, bool]:
    """Citations without the labels the model copied after them."""
    cleaned = _ECHOED_LABEL.sub(r"\1", text)
    return cleaned, cleaned != text


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


def _drop_from(text: str, start: int, before: str) -> str:
    """`text` up to `start`, the citations of what is dropped moving to the sentence `before` unless it cites its own."""
    return _cite_at_end(text[:start].rstrip(), [] if CITATION.search(before) else CITATION.findall(text[start:]))


_LEAD_IN_END = re.compile(r":\s*(?:\[\d{1,2}\][ ,]*)*\s*$")


def ends_in_lead_in(text: str) -> bool:
    """Whether the answer stops on a lead-in ("For example:", "… uses a dictionary: [2]") with nothing after it."""
    return bool(_LEAD_IN_END.search(text)) and "```" not in text


LEAD_IN_DROPPED, LEAD_IN_CLOSED = "unfinished lead-in dropped", "unfinished lead-in closed with a full stop"


def drop_trailing_lead_in(text: str) -> tuple[str, str | None]:
    """An answer that ends in a lead-in the model never followed stops promising it: a short one
    ("For example:") is dropped, its citations moving to the sentence before unless that cites
    its own; a longer one, which may state the answer ("… the later place wins:"), ends with a
    full stop instead. A lead-in that is the whole answer stays, for the grounding check to judge."""
    if not ends_in_lead_in(text):
        return text, None
    spans = [span for span in sentence_spans(text) if span]
    if len(spans) < 2:
        return text, None
    start, before = spans[-1][0], text[spans[-2][0] : spans[-2][1]]
    lead_in = text[start:]
    if len(CITATION.sub(" ", lead_in).split()) >= MIN_SENTENCE_WORDS:
        colon = lead_in.rindex(":")
        return text[:start] + _cite_at_end(lead_in[:colon].rstrip() + ".", CITATION.findall(lead_in[colon:])), LEAD_IN_CLOSED
    return _drop_from(text, start, before), LEAD_IN_DROPPED


REFUSAL_AFTER_ANSWER = "refusal after the answer dropped"
# "Python 3.11 is required: the documents do not cover this." (seen on ship-02 asked in a chat): the refusal
# joined to the answer as a clause.
_REFUSAL_CLAUSE = re.compile(
    r"\s*[:;,—–]\s*" + re.escape(REFUSAL.rstrip(".")) + r"\.?[ ,]*((?:\[\d{1,2}\][ ,]*)*)\s*$", re.IGNORECASE
)


def drop_trailing_refusal(text: str) -> tuple[str, str | None]:
    """An answer that ends with the bare refusal ("… often called linear. The documents do not cover
    this.") contradicts itself: the model answered, then declined by rote, and a reader cannot tell
    which to believe (seen on Think Python dev-20 and "what happens if it never stops?" after a
    question on recursion, both right answers in the book's words), also when joined to the last
    sentence by a colon. The refusal goes, its citations to the sentence before unless that cites
    its own; answer_verdict.judge then shows the answer only if it makes claims and all of them
    are backed. A refusal that opens the answer, or says what is not covered, stays."""
    clause = _REFUSAL_CLAUSE.search(text)
    if clause and len(CITATION.sub(" ", text[: clause.start()]).split()) >= 3:
        return _cite_at_end(text[: clause.start()].rstrip() + ".", CITATION.findall(clause.group(0))), REFUSAL_AFTER_ANSWER
    spans = [span for span in sentence_spans(text) if span and CITATION.sub("", text[span[0] : span[1]]).strip()]
    if len(spans) < 2:
        return text, None
    start, before = spans[-1][0], text[spans[-2][0] : spans[-2][1]]
    last = text[start:]  # with any citations standing alone after it
    if " ".join(CITATION.sub(" ", last).split()).lower() != REFUSAL.lower():
        return text, None
    return _drop_from(text, start, before), REFUSAL_AFTER_ANSWER


ECHO_MIN_CHARS = 250
"""Copied passage text, this long over two or more lines, is the model echoing its context, not answering."""
PASSAGE_COPIED = "passage copied"
"""What `tidied` says when the whole answer is a passage's text again (answer_verdict.judge sets it aside)."""
_CONTEXT_LABEL = re.compile(r"^\s*(?:\[\d{1,2}\][ ,]*)+(?:\([^()\n]{0,200}\))?\s*$")


def _line_kinds(text: str, passages: list[str]) -> list[tuple[int, str, int]]:
    """Each line's offset, kind ("copy", "label": a context label or short copied line, "own") and copied
    length; lines in a code fence count as the model's own."""
    hay = " ".join(" ".join(p.split()) for p in passages)
    kinds, at, fenced = [], 0, False
    for line in text.splitlines(keepends=True):
        flat = " ".join(line.split())
        if flat.startswith("```"):
            fenced = not fenced
        if fenced or flat.startswith("```"):
            kind = "own"
        elif not flat or _CONTEXT_LABEL.match(flat):
            kind = "label"
        else:
            words = flat.lstrip("#").strip()  # a heading the model marked up, as the context showed it
            if words not in hay:
                kind = "own"
            else:  # a short copied line (">>>hours", "1") neither counts nor ends the copy around it
                kind = "copy" if len(words) >= 12 else "label"
        kinds.append((at, kind, len(flat) if kind == "copy" else 0))
        at += len(line)
    return kinds


def echo_start(text: str, passages: list[str]) -> int | None:
    """Where the model starts copying its context line by line (a passage's lines, its "[n] (label)"), else None.

    Seen in the browser: a right one-line answer followed by 900 characters of the next passage,
    headings and all; the copy passes every check, being the passage's own words, and buries the answer.
    """
    run_start, copied, lines = None, 0, 0
    for at, kind, length in _line_kinds(text, passages):
        if kind == "own":
            run_start, copied, lines = None, 0, 0
            continue
        run_start = at if run_start is None else run_start  # a "[2] (label)" line before the copy goes with it
        if kind == "copy":
            copied, lines = copied + length, lines + 1
        if run_start is not None and copied >= ECHO_MIN_CHARS and lines >= 2:
            return run_start
    return None


def cut_echo(text: str, passages: list[str]) -> tuple[str, str | None]:
    """The answer without the context it copied, and what was done: the copy cut, or (all of it a copy) flagged."""
    start = echo_start(text, passages)
    if start is None:
        return text, None
    head = text[:start].rstrip()
    if re.match(r"[ \t]*\n?[ \t]*[a-z]", text[len(head) : start + 40]):  # the copy goes on with the head's last sentence
        head = _whole_sentences(head)
    if not re.search(r"\w{2,}", CITATION.sub("", head)):
        return text, PASSAGE_COPIED
    return head, "copied passage text cut"


def _whole_sentences(head: str) -> str:
    """The text before a copy that runs on from its last line in lower case, without that unfinished
    last sentence. Seen with a real document: the model copied a passage across a line break, the
    copy was cut at the break, and "… the use of a utility such as sudo to gain [1]" was shown as
    the answer's end."""
    if not head or _ENDS_CLEANLY.search(CITATION.sub("", head).rstrip()):
        return head
    last = split_sentences(head)[-1]
    cut = head.rfind(last)
    return _drop_from(head, cut, head[:cut]) if cut > 0 else ""


def drop_denied_yes(text: str, question: str) -> tuple[str, bool]:
    """The answer without a "Yes" that its own sentence then denies (answer_check.denying_yes):
    "Should web content be owned by www-data?" got "Yes, web content should not be owned by
    www-data." The sentence after it is the passage's claim, which the checks then read; the "Yes"
    is the model echoing the question's form. Set aside instead, the quote left standing was the
    next sentence of the passage, "Data written out by web servers will be owned by www-data",
    which reads as yes."""
    opening = YES_NO.match(text)
    if opening is None or not denying_yes(split_sentences(text)[0], question):
        return text, False
    rest = text[opening.end() :]
    return rest[:1].upper() + rest[1:], True


def tidy_answer(
    text: str, question: str, passages: list[str], hit_limit: bool, labels: Sequence[str] = ()
) -> tuple[str, list[str]]:
    """The answer with loops cut, copied passage labels and unasked-for code removed and a cut-off end marked; and what was done."""
    done: list[str] = []
    text, looped = drop_repeats(text.strip())
    if looped:
        done.append("repetition cut")
    text, echoed = drop_echoed_labels(text)
    if echoed:
        done.append("copied passage labels removed")
    text, echo = cut_echo(text, passages)
    if echo:
        done.append(echo)
        hit_limit = hit_limit and echo == PASSAGE_COPIED  # what is left ends where the model stopped answering
    text, denied = drop_denied_yes(text, question)
    if denied:
        done.append("a “Yes” its sentence denies dropped")
    text, pointed = fold_pointer_sentences(text, labels)
    if pointed:
        done.append("pointer sentence folded into a citation")
    text, lone = join_lone_citation(text)
    if lone:
        done.append("citation joined to its sentence")
    text, lead_in = drop_trailing_lead_in(text)
    if lead_in:
        done.append(lead_in)
    text, declined = drop_trailing_refusal(text)
    if declined:
        done.append(declined)
    placed = cite_outside_fences(text).strip()
    if placed != text:
        text = placed
        done.append("citations moved out of code")
    if _CODE_FENCE.search(text) and not wants_code(question, passages):
        text = _CODE_FENCE.sub("", text).strip()
        done.append("code removed")
    text += closing_fence(text)  # an unclosed fence would swallow everything after it
    if (hit_limit or looped) and text and not _ENDS_CLEANLY.search(text):
        text += CUT_MARKER
        done.append("cut off")
    return text, done
