"""Runaway output from a small model, cut before the user reads it.

Small models loop (the same sentence or line again and again until the token limit) and stop
mid-sentence at the limit. These rules are applied to the text as it streams (`repeats_from`, so
generation stops as soon as it loops) and once at the end (`tidy_answer`).

Deleted on 2026-12-06, each switched off alone on recorded drafts of both halves of the dev pool
(bench/ablate.py) with no outcome moved: copied passage labels, copied context cut, a "Yes" its
sentence denies, an unfinished lead-in, a refusal after the answer, code nobody asked for.
Deleted in the eighth session: sentences that only say where the answer is ("This is stated in
[2].") folded into a citation, by 14 regular-expression parts. With the one judge, such a
sentence stays and is judged like any other; it names nothing its evidence holds, so a pointer
that points wrongly is marked. Switched off on both halves, wrong answers shown unwarned fell
(tune 2 -> 0, check 6 -> 3) and right answers marked rose (17 -> 25, 19 -> 26).
"""

from __future__ import annotations

import bisect
import itertools
import re

from grounding import CITATION, split_sentences
from markdown_code import closing_fence, code_spans

CUT_MARKER = " …"
_ENDS_CLEANLY = re.compile(r"""[.!?:)\]`'"*]\s*$|```\s*$""")


def ends_cleanly(text: str) -> bool:
    """Whether `text` ends as a sentence, quote, list or code block does: a text stopped at a limit
    that does not is shown with CUT_MARKER."""
    return bool(_ENDS_CLEANLY.search(text))


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


STOPPED = "stopped at a sentence the passages contradict"
"""What `tidied` says when the model was stopped after a sentence the checks find wrong (free_answer.py)."""
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


def tidy_answer(text: str, hit_limit: bool) -> tuple[str, list[str]]:
    """The answer with loops cut, lone citations joined to their sentence, code fences closed and a
    cut-off end marked; and what was done."""
    done: list[str] = []
    text, looped = drop_repeats(text.strip())
    if looped:
        done.append("repetition cut")
    text, lone = join_lone_citation(text)
    if lone:
        done.append("citation joined to its sentence")
    placed = cite_outside_fences(text).strip()
    if placed != text:
        text = placed
        done.append("citations moved out of code")
    text += closing_fence(text)  # an unclosed fence would swallow everything after it
    if (hit_limit or looped) and text and not ends_cleanly(text):
        text += CUT_MARKER
        done.append("cut off")
    return text, done
