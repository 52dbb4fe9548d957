"""A long question is searched by its most informative part, and the user is told.

A question of thousands of characters (a pasted e-mail, a log, a page of notes with the
question somewhere in it) swamps both retrievers: the embedding model reads only its first
256 word pieces, and BM25 adds up hundreds of common words until every long chunk matches
a little. Past QUESTION_MAX_CHARS the question is searched by the sentences that carry the
most weight of the documents' rare words (BM25's IDF) per character, up to that length,
in the order they were written. Words the index does not know weigh nothing, so filler
and repetition are left out first; a repeated sentence adds no new words and so no weight.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

from keyword_index import query_tokens

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")


class Focus(NamedTuple):
    """What to search for, the part of a long question searched (None: all of it), and what to tell the user."""

    search: str
    part: str | None
    notice: str | None


def sentences_of(text: str, limit: int) -> list[str]:
    """The sentences (or lines) of `text`, any longer than `limit` cut between words into pieces that fit."""
    out: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        words = sentence.split()
        piece: list[str] = []
        for word in words:
            if piece and len(" ".join([*piece, word])) > limit:
                out.append(" ".join(piece))
                piece = []
            piece.append(word[:limit])
        if piece:
            out.append(" ".join(piece))
    return out


def informative_part(question: str, limit: int, idf: Callable[[Iterable[str]], dict[str, float]]) -> str:
    """The sentences covering the most IDF weight of new words per character, greedily, within `limit`, in order.

    Without a sentence that has a known word (nothing indexed yet, or no word the documents
    use) it is the question's first `limit` characters, cut between words.
    """
    sentences = sentences_of(question, limit)
    tokens = [set(query_tokens(s)) for s in sentences]
    weights = idf(set().union(*tokens))
    chosen: set[int] = set()
    covered: set[str] = set()
    used = 0
    while True:
        best, gain = None, 0.0
        for i, sentence in enumerate(sentences):
            if i in chosen or used + len(sentence) + bool(chosen) > limit:
                continue
            value = sum(weights.get(t, 0.0) for t in tokens[i] - covered) / len(sentence)
            if value > gain:
                best, gain = i, value
        if best is None:
            break
        chosen.add(best)
        covered |= tokens[best]
        used += len(sentences[best]) + bool(len(chosen) > 1)
    if not chosen:
        return sentences[0] if sentences else question[:limit]
    return " ".join(sentences[i] for i in sorted(chosen))


def focus_question(question: str, limit: int, idf: Callable[[Iterable[str]], dict[str, float]]) -> Focus:
    """The question as it is when it fits in `limit` characters (0: no limit), else its informative part and a notice."""
    if limit <= 0 or len(question) <= limit:
        return Focus(question, None, None)
    part = informative_part(question, limit, idf)
    notice = (
        f"Your question is {len(question):,} characters long, so docqa searched by its most informative part "
        f"({len(part):,} characters: the sentences with the words rarest in your documents; QUESTION_MAX_CHARS={limit})."
    )
    return Focus(part, part, notice)
