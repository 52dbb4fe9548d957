"""What a question asks for, before any search: the document list, a whole-document summary,
or an answer from passages.

"What documents do you have?" is answered from the index's file list and "summarize
report.pdf" from the whole file; five retrieved chunks would answer neither. A question with
several parts is searched whole: splitting it into parts searched apart found no passage the
whole question missed, on any dev set (docs/answer-results.md, tenth session).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

DOCUMENT_LIST = re.compile(
    r"^\s*(?:please\s+)?(?:"
    r"(?:what|which)\s+(?:documents|docs|files|pdfs|sources)\b(?:\s+(?:do|can|did)\s+you\s+(?:have|know|see|read|access|use)|\s+(?:are|were|have\s+been)\s+(?:there|indexed|loaded|available|uploaded)|\s+(?:are|is)\s+in\b|\s+(?:do|can)\s+i\s+ask\b)"
    r"|(?:list|show)(?:\s+me)?\s+(?:the\s+|all\s+(?:the\s+)?|your\s+|my\s+)?(?:documents|docs|files|sources)"
    r"|what(?:'s|\s+is)\s+in\s+(?:the|my|your)\s+(?:documents?\s+)?(?:folder|library|index|collection)"
    r"|what\s+(?:do\s+you\s+know\s+about|can\s+you\s+answer\s+about)\s*\??\s*$"
    r"|how\s+many\s+(?:documents|files)\b"
    r")",
    re.IGNORECASE,
)
SUMMARY = re.compile(
    r"^\s*(?:please\s+|can\s+you\s+|could\s+you\s+)?"
    r"(?:summari[sz]e|give\s+(?:me\s+)?(?:a\s+)?(?:summary|overview)\s+of|sum\s+up|"
    r"what\s+is\s+the\s+(?:summary|gist)\s+of|(?:write|make)\s+(?:a\s+)?summary\s+of|tl;?dr(?:\s+of)?)"
    r"\s+(?P<target>.+?)\s*[?.!]*\s*$",
    re.IGNORECASE,
)
WHOLE_DOCUMENT_WORDS = {"document", "file", "pdf", "book", "paper", "report", "it", "this", "that", "everything", "all"}
"""Words that point at a whole document when a summary request names no file."""
@dataclass
class SummaryRequest:
    source: str
    target: str


def asks_for_document_list(question: str) -> bool:
    return bool(DOCUMENT_LIST.search(question))


def summary_target(question: str, sources: list[str], titles: dict[str, str] | None = None) -> SummaryRequest | None:
    """The document a "summarize X" question names, or None (then X is a topic, answered by search)."""
    found = SUMMARY.match(question)
    if not found or not sources:
        return None
    target = re.sub(r"^(?:the|this|that|my|your)\s+", "", found["target"].strip(), flags=re.IGNORECASE)
    target = re.sub(r"^(?:document|file|pdf|book|paper|report)\s+(?:called|named)\s+", "", target, flags=re.IGNORECASE)
    wanted = _normal(target)
    if not wanted or wanted in WHOLE_DOCUMENT_WORDS:
        return SummaryRequest(sources[0], target) if len(sources) == 1 else None
    titles = titles or {}
    best, best_score = None, 0.0
    for source in sources:
        names = {_normal(PurePosixPath(source).name), _normal(PurePosixPath(source).stem), _normal(titles.get(source, ""))}
        for name in filter(None, names):
            if wanted == name or (len(wanted) >= 4 and (wanted in name or name in wanted)):
                score = 1.0
            else:
                score = difflib.SequenceMatcher(None, wanted, name).ratio()
            if score > best_score:
                best, best_score = source, score
    return SummaryRequest(best, target) if best and best_score >= 0.75 else None


def _normal(name: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", name.lower()).replace("_", " ").split())
