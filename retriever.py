"""Hybrid retrieval: vector and BM25 rankings fused, then shaped into context for the prompt.

Vector search finds paraphrases and misses exact names; BM25 finds names and misses
paraphrases. Fusing them beats both. The default fusion blends their scores, each
min-max normalised over its own candidates: unlike reciprocal rank fusion (FUSION=rrf)
it keeps how far apart the candidates are, so a clear BM25 winner on an exact name
outweighs a flat vector list and the other way round. The context step then keeps one
long file from crowding out the others and merges neighbouring chunks of a file, so
the model sees one coherent passage instead of two overlapping fragments.

The retriever owns retrieval: it embeds the question (the stores only take and return
vectors and ids), finds definitions of the names a question mentions first, and for a
multi-part question adds each part's best passage to the whole question's.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from answer_render import place
from common_words import typo_edits, uncommon_words
from config import Settings
from doc_types import Chunk, describe_location, printed_page
from embeddings import EmbeddingBackend
from keyword_index import KeywordIndex, exact_terms, tokenize
from name_search import definitions_first
from question_focus import Focus, focus_question
from text_splitter import heading_path_at
from vector_store import NullVectorStore, VectorStore

log = logging.getLogger(__name__)

Where = dict[str, Any]


@dataclass
class Passage:
    """One or more adjacent chunks of one file, with how they were found."""

    chunks: list[Chunk]
    score: float
    found_by: dict[str, int] = field(default_factory=dict)  # retriever -> 1-based rank
    best: Chunk | None = None  # the chunk that ranked highest, once neighbours are merged in

    @property
    def first(self) -> Chunk:
        return self.chunks[0]

    @property
    def source(self) -> str:
        return self.first.source

    @property
    def pages(self) -> list[int]:
        return sorted({c.page for c in self.chunks if c.page is not None})

    @property
    def page(self) -> int | None:
        """The page of the best-matching chunk: where a reader should look first."""
        if self.best is not None and self.best.page is not None:
            return self.best.page
        return self.pages[0] if self.pages else None

    @property
    def page_label(self) -> str | None:
        """The label the book prints on `page` ("137"), when the PDF gives one that is not the page's number."""
        label = printed_page(self.chunks, self.page) if self.page is not None else None
        return label if label != str(self.page) else None

    def printed_page(self, page: int) -> str:
        """One of the passage's pages as the book prints it, else its number."""
        return printed_page(self.chunks, page)

    @property
    def lines(self) -> tuple[int, int] | None:
        spans = [c.lines for c in self.chunks if c.lines]
        if not spans:
            return None
        return (min(s[0] for s in spans), max(s[1] for s in spans))

    @property
    def heading_path(self) -> list[str]:
        return self.first.heading_path

    @property
    def text(self) -> str:
        out = self.chunks[0].text
        for chunk in self.chunks[1:]:
            out = join_overlapping(out, chunk.text)
        return out

    @property
    def location(self) -> str:
        """"page 3", "slides 2-3", "sheet Sales rows 2-40", "lines 10-42 (parse_config)", or the heading path."""
        return describe_location(self.chunks)

    @property
    def label(self) -> str:
        return place(self)

    def place_of(self, excerpt: str) -> str:
        """Where `excerpt` (a quote from this passage) stands: its own lines, its page, or the heading
        above it, not the whole passage's span nor the heading its first chunk starts under. The
        passage's label when no chunk holds it whole."""
        for chunk in self.chunks:
            at = chunk.text.find(excerpt)
            if at < 0:
                continue
            lines: dict[str, int | None] = {}
            if chunk.start_line is not None:
                first = chunk.start_line + chunk.text.count("\n", 0, at)
                lines = {"start_line": first, "end_line": first + excerpt.strip().count("\n")}
            path = heading_path_at(chunk.text, chunk.heading_path, at)
            return Passage([dataclasses.replace(chunk, heading_path=path, **lines)], self.score).label  # type: ignore[arg-type]
        return self.label


def join_overlapping(a: str, b: str, max_overlap: int = 2000) -> str:
    """Concatenate two neighbouring chunks, dropping the text they share (the splitter overlap)."""
    limit = min(len(a), len(b), max_overlap)
    for size in range(limit, 10, -1):
        if a.endswith(b[:size]):
            return a + b[size:]
    return a + "\n" + b


class Ranked(NamedTuple):
    """One chunk's place in a fused ranking: its id, its fused score, and its 1-based rank in each
    retriever that found it ("vector", "bm25", and "exact" once exact matches are put first)."""

    id: str
    score: float
    found_by: dict[str, int]


def reciprocal_rank_fusion(
    rankings: dict[str, list[str]], weights: dict[str, float], k: int = 60
) -> list[Ranked]:
    """Weighted RRF: score(d) = sum_r w_r / (k + rank_r(d)). Returns them best first."""
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, ids in rankings.items():
        weight = weights.get(name, 1.0)
        for rank, cid in enumerate(ids, start=1):
            scores[cid] = scores.get(cid, 0.0) + weight / (k + rank)
            ranks.setdefault(cid, {})[name] = rank
    ordered = sorted(scores, key=lambda c: scores[c], reverse=True)
    return [Ranked(cid, scores[cid], ranks[cid]) for cid in ordered]


def score_blend(
    hits: dict[str, list[tuple[str, float]]], weights: dict[str, float]
) -> list[Ranked]:
    """Weighted mean of min-max normalised scores; a retriever that missed a chunk gives it 0.

    Each retriever's list is scaled to [0, 1] on its own (best 1, worst candidate 0), so
    cosine similarities and BM25 scores become comparable. Returns them best first.
    """
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    total = sum(weights.get(name, 1.0) for name, found in hits.items() if found) or 1.0
    for name, found in hits.items():
        if not found:
            continue
        weight = weights.get(name, 1.0) / total
        values = [score for _, score in found]
        low, high = min(values), max(values)
        span = high - low
        for rank, (cid, score) in enumerate(found, start=1):
            norm = (score - low) / span if span > 1e-12 else 1.0
            scores[cid] = scores.get(cid, 0.0) + weight * norm
            ranks.setdefault(cid, {})[name] = rank
    ordered = sorted(scores, key=lambda c: (-scores[c], min(ranks[c].values())))
    return [Ranked(cid, scores[cid], ranks[cid]) for cid in ordered]


def add_neighbour_context(
    fused: list[Ranked], positions: dict[str, tuple[str, int]], weight: float
) -> list[Ranked]:
    """Add `weight` x the mean fused score of a chunk's previous and next chunk in its file.

    A chunk inside a section that matches as a whole beats an equally scored chunk that
    matches alone; neighbours that are not candidates count 0. Returns the list re-sorted.
    """
    score_at = {positions[cid]: score for cid, score, _ in fused if cid in positions}
    out = []
    for cid, score, ranks in fused:
        if cid in positions:
            source, index = positions[cid]
            around = score_at.get((source, index - 1), 0.0) + score_at.get((source, index + 1), 0.0)
            score += weight * around / 2
        out.append(Ranked(cid, score, ranks))
    out.sort(key=lambda item: item[1], reverse=True)
    return out


def exact_matches_first(
    fused: list[Ranked], held: dict[str, int]
) -> list[Ranked]:
    """Chunks holding more of the question's exact terms (keyword_index.exact_terms) first, fused order within.

    Vectors cannot see `TOP_K` or `//`, and a blend lets their guess outweigh BM25's exact
    match: in a folder with Think Python, "What is TOP_K?" ranked book pages above the
    settings table. A chunk naming the thing asked about outranks one that does not; its
    score is raised by the best score per term held, so re-sorting by score keeps the order.
    """
    if not held:
        return fused
    top = max(score for _, score, _ in fused)
    ordered = sorted(fused, key=lambda row: (-held.get(row.id, 0), -row.score))
    out = []
    for rank, (cid, score, ranks) in enumerate(ordered, start=1):
        if cid in held:
            ranks = {**ranks, "exact": rank}
            score += held[cid] * top
        out.append(Ranked(cid, score, ranks))
    return out


class Retriever:
    """Answers "which chunks fit this question" with vectors, BM25, or both fused."""

    def __init__(self, settings: Settings, vectors: VectorStore | NullVectorStore, keywords: KeywordIndex, embedder: EmbeddingBackend) -> None:
        self.settings = settings
        self.vectors = vectors
        self.keywords = keywords
        self.embedder = embedder

    def rank(self, question: str, mode: str | None = None, where: Where | None = None, depth: int | None = None) -> list[Ranked]:
        """The fused ranking (`Ranked`) for the question, best first."""
        s = self.settings
        mode = mode or s.retrieval_mode
        if not self.vectors.available and mode != "bm25":
            mode = "bm25"
        depth = depth or max(s.candidate_k, s.top_k)
        hits: dict[str, list[tuple[str, float]]] = {}
        if mode in ("hybrid", "vector"):
            query = self.embedder.embed_query(question)
            hits["vector"] = [(h.id, h.score) for h in self.vectors.search(query, depth, where)]
        if mode in ("hybrid", "bm25"):
            hits["bm25"] = self.keywords.search(question, depth, where)
        weights = {"vector": s.vector_weight, "bm25": s.bm25_weight}
        if s.fusion == "rrf":
            fused = reciprocal_rank_fusion({name: [cid for cid, _ in found] for name, found in hits.items()}, weights, s.rrf_k)
        else:
            fused = score_blend(hits, weights)
        if s.neighbour_weight > 0 and len(fused) > 1:
            fused = add_neighbour_context(fused, self.keywords.positions([row.id for row in fused]), s.neighbour_weight)
        terms = exact_terms(question)
        if terms and fused:
            fused = exact_matches_first(fused, self.keywords.terms_held([row.id for row in fused], terms))
        return fused

    def rare_terms(self, question: str) -> set[str]:
        """The question's terms (tokenized as the keyword index does) that at most `rare_term_max_chunks` chunks hold, and at least one."""
        limit = self.settings.rare_term_max_chunks
        frequencies = self.keywords.chunk_frequencies(set(tokenize(question))) if limit > 0 else {}
        return {term for term, count in frequencies.items() if 0 < count <= limit}

    def unnamed_terms(self, question: str) -> list[str]:
        """The question's uncommon words (names, identifiers: common_words.uncommon_words) that no
        chunk holds, nor a word a misspelling away ("ateriosus" beside "arteriosus")."""
        words = [(word, tokens[0]) for word in uncommon_words(question) if (tokens := tokenize(word))]
        held = self.keywords.chunk_frequencies({term for _, term in words})
        absent = [(word, term) for word, term in words if held.get(term, 0) == 0]
        return [word for word, term in absent if self.keywords.near_term(term, typo_edits(term)) is None]

    def focus(self, question: str) -> Focus:
        """What to search for a question: itself, or past QUESTION_MAX_CHARS its most informative part (question_focus.py)."""
        return focus_question(question, self.settings.question_max_chars, self.keywords.idf)

    def retrieve(
        self,
        question: str,
        k: int | None = None,
        where: Where | None = None,
        mode: str | None = None,
        rare: set[str] | None = None,
    ) -> list[Passage]:
        """The passages for the prompt: fused, capped per file, neighbours merged, best first.

        `rare` is `rare_terms(question)` when the caller already has it (the relevance gate uses it too).
        """
        started = time.perf_counter()
        k = k or self.settings.top_k
        ranked = self.rank(question, mode=mode, where=where)
        chunks = self.keywords.get_chunks([row.id for row in ranked[: max(k * 4, 20)]])
        ranked = keep_rare_match(ranked, chunks, self.rare_terms(question) if rare is None else rare, k)
        candidates = [Passage([chunks[cid]], score, found) for cid, score, found in ranked if cid in chunks]
        candidates = definitions_first(question, candidates)  # a question naming a function gets its definition first
        chosen = cap_per_file(candidates, k, self.settings.max_chunks_per_file)
        passages = merge_neighbours(chosen)
        log.debug("Retrieved %d passages in %.0f ms", len(passages), (time.perf_counter() - started) * 1000)
        return passages


def keep_rare_match(
    ranked: list[Ranked], chunks: dict[str, Chunk], rare: set[str], k: int
) -> list[Ranked]:
    """BM25's best chunk moved up into the top k when it holds a rare term of the question.

    A name that few chunks hold (a person, a product, an identifier) is the surest sign of
    where the answer stands, yet the vector side, which does not know the name, can fill
    the top k with chunks that are merely about the same kind of thing.
    """
    if not rare:
        return ranked
    at = next((i for i, row in enumerate(ranked) if row.found_by.get("bm25") == 1), None)
    if at is None or at < k or ranked[at].id not in chunks or not rare & set(tokenize(chunks[ranked[at].id].text)):
        return ranked
    return [*ranked[: k - 1], ranked[at], *ranked[k - 1 : at], *ranked[at + 1 :]]


def cap_per_file(candidates: list[Passage], k: int, cap: int) -> list[Passage]:
    """Take the best k, at most `cap` per file while other files still have candidates."""
    if cap <= 0:
        return candidates[:k]
    chosen: list[Passage] = []
    held: list[Passage] = []
    per_file: dict[str, int] = {}
    for p in candidates:
        if len(chosen) >= k:
            break
        if per_file.get(p.source, 0) >= cap:
            held.append(p)
            continue
        per_file[p.source] = per_file.get(p.source, 0) + 1
        chosen.append(p)
    if len(chosen) < k:  # only one or two files match: use their further chunks after all
        chosen.extend(held[: k - len(chosen)])
        chosen.sort(key=lambda p: p.score, reverse=True)
    return chosen


def merge_neighbours(passages: list[Passage]) -> list[Passage]:
    """Merge passages of the same file whose chunks are adjacent; keep the best score and rank order."""
    merged: list[Passage] = []
    by_source: dict[str, list[Passage]] = {}
    for p in passages:
        group = by_source.setdefault(p.source, [])
        for other in group:
            indexes = {c.chunk_index for c in other.chunks}
            if any(abs(c.chunk_index - i) <= 1 for c in p.chunks for i in indexes) and _same_place(other, p):
                other.chunks = sorted(other.chunks + p.chunks, key=lambda c: c.chunk_index)
                for name, rank in p.found_by.items():
                    other.found_by[name] = min(rank, other.found_by.get(name, rank))
                break
        else:
            fresh = Passage(list(p.chunks), p.score, dict(p.found_by), p.best or p.first)
            group.append(fresh)
            merged.append(fresh)
    return merged


def _same_place(a: Passage, b: Passage) -> bool:
    """Chunks on pages far apart are not neighbours even if their indexes are."""
    if a.pages and b.pages:
        return abs(a.pages[0] - b.pages[0]) <= 1 or abs(a.pages[-1] - b.pages[-1]) <= 1
    return True
