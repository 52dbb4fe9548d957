"""What RAGSystem hands back for a question: the `Answer` as it streams, and its passages as JSON.

Plain data with no behaviour beyond turning itself into JSON, so the front ends and the
renderers can read it without importing the core.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retriever import Passage


@dataclass
class Relevance:
    """How close the passages came to the question, as the checks judged them (AnswerReview.evidence);
    `similarity` is None when they did not run (no embedding model)."""

    similarity: float | None = None
    overlap: float | None = None
    relevant: bool = True
    model_decides: bool = False
    """Doubted: the model's answer is shown only if it passes its checks, else the question is refused."""
    unnamed: list[str] = field(default_factory=list)
    """Names the question gives that no document holds ("the “with” statement"), for the refusal's reason."""
    quotes_answer: float | None = None
    """The model's p(yes) that the quotes answer the question, asked when its own answer was flagged."""


@dataclass(frozen=True)
class ShownQuote:
    """A passage sentence shown verbatim before the model writes (and as the answer when its text is
    set aside): `passage` is its passage's number in the list, `location` its place in the file."""

    passage: int
    text: str
    location: str


@dataclass
class Timings:
    """Seconds from the question to the end of each stage the answer went through (None: it did not
    run); `prompt_chars` is the size of the model's prompt."""

    retrieve_s: float | None = None
    outline_s: float | None = None
    rewrite_s: float | None = None
    relevance_s: float | None = None
    grounding_s: float | None = None
    quotes_s: float | None = None
    quotes_judge_s: float | None = None
    first_token_s: float | None = None
    draft_s: float | None = None
    """The model's last piece: its draft is whole, and being checked."""
    summary_s: float | None = None
    total_s: float | None = None
    prompt_chars: int | None = None

    def to_json(self) -> dict[str, float]:
        return {name: round(value, 4) for name, value in asdict(self).items() if value is not None}


@dataclass
class Answer:
    """An answer as it streams: `text` grows; `done` is set on the last update.

    `kind` says where the text came from: passages ("answer"), the relevance gate or the
    model declining ("refusal", with the closest passages listed), the index's file list
    ("document_list") or one whole file's outline and checked summary ("summary").
    """

    question: str
    text: str = ""
    model: str = ""
    passages: list[Passage] = field(default_factory=list)
    timings: Timings = field(default_factory=Timings)
    error: str | None = None
    done: bool = False
    kind: str = "answer"
    standalone_question: str | None = None
    """The follow-up rewritten to stand alone, as searched; None when the question was used as asked."""
    focus: str | None = None
    """A long question's most informative part, as searched (QUESTION_MAX_CHARS); None when it was searched whole."""
    refused: bool = False
    unsupported: list[str] = field(default_factory=list)
    """Answer sentences, verbatim, that no cited passage supports."""
    sentences_checked: int = 0
    highlights: dict[int, list[str]] = field(default_factory=dict)
    """1-based passage number -> its sentences, verbatim, that support the answer or match the question."""
    relevance: Relevance = field(default_factory=Relevance)
    quotes: list[ShownQuote] = field(default_factory=list)
    """Passage sentences, verbatim, that best answer the question; shown first."""
    set_aside: str | None = None
    """The model's text when the checks set it aside and the quotes stand as the answer."""
    notice: str | None = None
    """For the user: why the model's text was set aside, or that a long question was searched by a part of it."""
    model_hint: str | None = None
    """How to get better answers than the model in use gives (the embedded model answered)."""
    draft: str | None = None
    """The model's words as it wrote them, before any tidying or judging; None when no model ran
    (the evaluation records it, so a recorded run can be replayed through today's checks)."""
    tidied: list[str] = field(default_factory=list)
    """What was cut from the model's raw text: "repetition cut", "code removed", "cut off"."""
    indexing: str | None = None
    """Asked while a sync runs: that the answer uses only what is indexed so far, with files done of total."""
    more_passages: list[Passage] = field(default_factory=list)
    """Weak matches left out of the source list, once the answer is done (answer_sources.py): the model
    read them, the answer does not cite them, and they are far from the question. They are numbered
    after `passages`: the first is len(passages) + 1."""
    renumbered: dict[int, int] = field(default_factory=dict)
    """Passage number as the answer streamed (the prompt's order) -> its number in the list, when the
    list was reordered; the text, quotes and highlights hold the new numbers (answer_sources.py)."""

    def sources_json(self) -> list[dict[str, Any]]:
        """The listed sources, then the weak matches, each flagged `weak`; `n` in a citation is its place here."""
        return [{**passage_json(p), "weak": False} for p in self.passages] + [
            {**passage_json(p), "weak": True} for p in self.more_passages
        ]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "question": self.question,
            "standalone_question": self.standalone_question,
            "focus": self.focus,
            "kind": self.kind,
            "answer": self.text,
            "refused": self.refused,
            "unsupported": self.unsupported,
            "sentences_checked": self.sentences_checked,
            "model": self.model,
            "sources": self.sources_json(),
            "highlights": {str(n): texts for n, texts in sorted(self.highlights.items())},
            "relevance": asdict(self.relevance),
            "quotes": [asdict(q) for q in self.quotes],
            "set_aside": self.set_aside,
            "notice": self.notice,
            "model_hint": self.model_hint,
            "tidied": self.tidied,
            "indexing": self.indexing,
            "timings": self.timings.to_json(),
        }
        if self.error:
            out["error"] = self.error
        return out


def passage_json(p: Passage) -> dict[str, Any]:
    """A passage for `ask --json`: `page` and `pages` are the PDF's page numbers (1-based, as a viewer counts them);
    `page_label` is what the book prints on `page`, or None; `location` is written with the printed labels."""
    return {
        "source": p.source,
        "title": p.first.title,
        "page": p.page,
        "page_label": p.page_label,
        "pages": p.pages,
        "lines": list(p.lines) if p.lines else None,
        "heading_path": p.heading_path,
        "location": p.location,
        "slides": sorted({c.slide for c in p.chunks if c.slide is not None}),
        "sheet": p.first.sheet,
        "rows": [min(c.rows[0] for c in p.chunks if c.rows), max(c.rows[-1] for c in p.chunks if c.rows)] if p.first.rows else None,
        "symbols": list(dict.fromkeys(c.symbol for c in p.chunks if c.symbol)),
        "ocr": any(c.ocr for c in p.chunks),
        "chunk_index": p.first.chunk_index,
        "chunk_indexes": [c.chunk_index for c in p.chunks],
        "score": round(p.score, 6),
        "found_by": p.found_by,
        "text": p.text,
    }
