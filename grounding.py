"""Is the answer backed by the passages? Relevance before generation, support after it.

- `assess_relevance`: before answering, whether any retrieved passage is close enough to
  the question to answer from. Retrieval scores are rank-based (RRF) and say nothing about
  relevance, so this uses the cosine similarity of the question to the passages' sentences
  (with the real embedding model) and stemmed keyword overlap.
- `check_grounding`: after answering, which claims the passages back, by the one judge that is
  passed in (answer_check.back_claim: exact names and numbers, and the share of its words the
  evidence holds; no similarity threshold), and the highlights: in each passage backing a claim,
  the sentence sharing most of its words, and each passage's sentence closest to the question.

Passage sentences are embedded once per answer (`PassageSentences`) for relevance, the quotes
and the question's highlights.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from answer_render import CITATION, cite, uncited
from config import Settings
from keyword_index import exact_terms, tokenize, versions

# Abbreviations that end in a full stop inside a sentence ("e.g. PDF", "Fig. 3", "vs. 3.11"): a break
# after one cut a summary's key sentence and a quote in two. Each a fixed-width lookbehind.
_ABBREVIATIONS = ("e.g.", "i.e.", "cf.", "vs.", "viz.", "fig.", "Fig.", "Mr.", "Ms.", "Dr.", "approx.")
_SENTENCE_END = re.compile(
    "".join(rf"(?<!\b{re.escape(a)})" for a in _ABBREVIATIONS) + r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9`])"
)
_ITEM_MARK = r"(?:[-*•]|\d+[.)])"
_BLOCK_BREAK = re.compile(rf"\n\s*\n|\n(?=\s*(?:{_ITEM_MARK}|#+)\s)")
LIST_ITEM = re.compile(rf"\s*{_ITEM_MARK}\s")
"""A sentence that is a list item ("- TRANS_NONBLOCKING", "2. Open the file"): split_sentences starts one at each."""
YES_NO_WORDS = frozenset({"yes", "no"})
"""A bare yes or no: content words by the keyword index, but no claim a passage could back."""
MIN_SENTENCE_WORDS = 4
"""Shorter answer fragments ("Yes.", "[1]") carry no claim worth checking."""
MAX_SENTENCE_CHARS = 400
"""A longer span (a code block, a table) is cut at line ends so each piece can be matched."""
HIGHLIGHTS_PER_PASSAGE = 3


def split_sentences(text: str) -> list[str]:
    """Sentences of `text`, each an exact substring of it, in order; blank pieces dropped."""
    spans: list[str] = []
    for block in _BLOCK_BREAK.split(text):
        for sentence in _SENTENCE_END.split(block):
            sentence = sentence.strip()
            if not sentence:
                continue
            if len(sentence) <= MAX_SENTENCE_CHARS:
                spans.append(sentence)
            else:
                spans.extend(line.strip() for line in sentence.splitlines() if line.strip())
    return spans


TABLE_RULE = re.compile(r"^\|?[\s:|-]+\|?$")
"""A markdown table's rule line, `| --- | :-: |`, under its header row."""


def table_cells(sentence: str) -> list[str]:
    """A markdown table row's cells; empty for anything else (a rule line has none worth reading)."""
    stripped = sentence.strip()
    if not stripped.startswith("|") or "\n" in stripped or TABLE_RULE.match(stripped):
        return []
    return [c.strip() for c in stripped.strip("|").split("|")]


def header_rows(sentences: Sequence[str], i: int) -> list[int]:
    """The header row and rule line (indexes) of the table whose row `sentences[i]` is; empty when it has none."""
    k = i
    while k > 0 and sentences[k].lstrip().startswith("|") and not TABLE_RULE.match(sentences[k].strip()):
        k -= 1
    if k > 0 and TABLE_RULE.match(sentences[k].strip()) and table_cells(sentences[k - 1]) and k - 1 != i:
        return [k - 1, k]
    return []


def read_rows(sentences: Sequence[str]) -> list[str]:
    """The sentences as they read: a table row as its header's names with its cells ("codename: Jammy
    Jellyfish; release: 2022-04-21"). A row alone is a line of values whose meaning is in the header,
    so it matched no question by meaning ("What is Ubuntu 22.04 called?" scored 0.44 with its row)."""
    out = []
    for i, sentence in enumerate(sentences):
        cells = table_cells(sentence)
        header = header_rows(sentences, i) if cells else []
        names = table_cells(sentences[header[0]]) if header else []
        if cells and len(names) == len(cells):
            out.append("; ".join(f"{name}: {cell}" for name, cell in zip(names, cells, strict=True) if cell))
        else:
            out.append(sentence)
    return out


def sentence_spans(text: str, sentences: Sequence[str] | None = None) -> list[tuple[int, int] | None]:
    """Where each sentence of `text` (split_sentences, or the given ones) stands in it, as (start, end),
    None for one not found verbatim: for cutting or rewriting the text around sentences without
    losing its line breaks and layout."""
    spans: list[tuple[int, int] | None] = []
    at = 0
    for sentence in split_sentences(text) if sentences is None else sentences:
        start = text.find(sentence, at)
        if start < 0:
            spans.append(None)
            continue
        spans.append((start, start + len(sentence)))
        at = start + len(sentence)
    return spans


@functools.cache
def function_words() -> frozenset[str]:
    """Asking and pointing words, stemmed: the keyword index keeps them, but they carry no content.
    Made on first use: stemming needs the keyword index's stop words, which import bm25s."""
    return frozenset(
        tokenize(
            "what which who whom whose when where why how is are was were be been do does did done have has had can could "
            "should would will shall may might must i me my you your we our it its they them their this that "
            "these those there here a an the of about also and but so then else just"
        )
    )


_NEGATED = re.compile(r"\b(\w+?)n['’]t\b", re.IGNORECASE)
_CLITIC = re.compile(r"(?<=\w)['’](?:s|re|ve|ll|d|m)\b", re.IGNORECASE)
_CONTRACTED = {"ca": "can", "wo": "will", "sha": "shall"}  # can't, won't, shan't


def expand_contractions(text: str) -> str:
    """"don't" -> "do not", "it's" -> "it": split at the apostrophe, "don" and "t" read as
    content words, which no passage without the contraction holds."""
    text = _NEGATED.sub(lambda m: f"{_CONTRACTED.get(m.group(1).lower(), m.group(1))} not", text)
    return _CLITIC.sub("", text)


def content_terms(text: str) -> set[str]:
    """Stemmed content words, as the keyword index sees them, without asking words, contractions or citation numbers."""
    return set(tokenize(expand_contractions(CITATION.sub(" ", text)))) - function_words()


def _strip_markup(sentence: str) -> str:
    return " ".join(CITATION.sub(" ", sentence).replace("#", " ").replace("*", " ").split())


@dataclass
class PassageSentences:
    """The sentences of each passage with their embeddings, computed once per answer."""

    texts: list[list[str]]
    vectors: list[np.ndarray]
    terms: list[set[str]]

    @classmethod
    def embed(cls, embedder: Any, passages: Sequence[str]) -> PassageSentences:
        texts = [[s for s in split_sentences(p) if len(s.split()) >= 2] or [p.strip()] for p in passages]
        flat = [_strip_markup(s) for sentences in texts for s in read_rows(sentences)]
        matrix = np.asarray(embedder.embed_documents(flat), dtype=np.float32) if flat else np.zeros((0, 1))
        vectors, start = [], 0
        for sentences in texts:
            vectors.append(matrix[start : start + len(sentences)])
            start += len(sentences)
        return cls(texts=texts, vectors=vectors, terms=[content_terms(p) for p in passages])

    def best_match(self, vector: np.ndarray, numbers: Sequence[int]) -> tuple[float, int, int]:
        """(similarity, passage number, sentence index) of the closest sentence among `numbers` (1-based)."""
        best = (-1.0, 0, 0)
        for n in numbers:
            sims = self.vectors[n - 1] @ vector
            if len(sims):
                i = int(np.argmax(sims))
                if sims[i] > best[0]:
                    best = (float(sims[i]), n, i)
        return best


@dataclass
class Relevance:
    """How well the best passage fits the question, and whether that is enough to answer."""

    similarity: float
    overlap: float
    relevant: bool
    model_decides: bool = False
    """Not relevant by the rules, but close enough that the answer model's reading decides."""


def assess_relevance(
    question_vector: np.ndarray, question: str, sentences: PassageSentences, settings: Settings, rare: set[str] | frozenset[str] = frozenset()
) -> Relevance:
    """Relevant when the closest passage sentence is similar enough to the question.

    A passage can also pass on words alone: when it holds most of the question's content
    words (an exact name or identifier the embedding model does not know) and its
    similarity is still above the lower bar; or, whatever its similarity, when it holds
    every content word and one of them is `rare` in the corpus (few chunks hold it: an
    exact match on a name the embedding model has never seen).
    """
    numbers = range(1, len(sentences.texts) + 1)
    similarity = sentences.best_match(question_vector, numbers)[0] if sentences.texts else 0.0
    asked = content_terms(question)
    overlap = max((len(asked & terms) / len(asked) for terms in sentences.terms), default=0.0) if asked else 0.0
    exact_rare = bool(asked & rare) and any(asked <= terms for terms in sentences.terms)
    named = set(exact_terms(question)) | (set(versions(question)) & rare)  # a rare version names its row or release
    exact_name = bool(named) and any(named & terms for terms in sentences.terms)
    relevant = exact_rare or exact_name or similarity >= settings.relevance_min_similarity or (
        overlap >= settings.relevance_min_overlap and similarity >= settings.relevance_min_similarity_with_overlap
    )
    undecided = not relevant and similarity >= settings.relevance_model_decides_similarity
    return Relevance(round(similarity, 4), round(overlap, 4), relevant, undecided)


@dataclass(frozen=True)
class Backing:
    """One claim's evidence: the passages (1-based) it cites, and those that back it, which are
    its cited ones when they do, else the fewest that do, and none when no passage does."""

    cited: tuple[int, ...]
    passages: tuple[int, ...]
    reason: str = ""
    """Why the passages it cites do not back it ("" when they do)."""
    doubt: str = ""
    """Why, backed by its words, it may still be wrong: its evidence is about another name than the
    one the question and the claim give (shown marked, not set aside)."""


@dataclass
class SentenceSupport:
    """One claim of an answer and its evidence (answer_check.back_claim's Backing)."""

    sentence: str
    cited: list[int]
    backing: list[int]
    """The passages (1-based) that back it: those it cites when they do, else others; empty when none does."""
    doubted: bool = False
    """Backed by its words, but the evidence is about another name than the claim's: marked, still shown."""

    @property
    def supported(self) -> bool:
        return bool(self.backing)

    @property
    def recited(self) -> bool:
        """Backed by other passages than the ones it cites: its citations move to them."""
        return bool(self.cited) and self.supported and self.backing != self.cited


@dataclass
class Grounding:
    checked: list[SentenceSupport] = field(default_factory=list)
    highlights: dict[int, list[str]] = field(default_factory=dict)

    @property
    def unsupported(self) -> list[str]:
        """The sentences marked for the reader: those no passage backs, and those doubted."""
        return [s.sentence for s in self.checked if not s.supported or s.doubted]


def _highlightable(sentence: str) -> bool:
    """Worth marking on a card: a sentence, not a heading or a stray fragment."""
    return not sentence.lstrip().startswith("#") and len(sentence.split()) >= MIN_SENTENCE_WORDS


def claim_sentences(answer: str, skip: Sequence[str] = ()) -> list[str]:
    """Answer sentences that make a claim: long enough, not a notice docqa itself added. An answer
    with no sentence that long is one claim when it has content words: "As quoted above [1]." is an
    answer that says nothing, and it stood unchecked when only long sentences were checked."""
    out, short = [], []
    for sentence in split_sentences(answer):
        plain = _strip_markup(sentence)
        if plain.startswith("⚠") or any(s in sentence for s in skip):
            continue
        (out if len(plain.split()) >= MIN_SENTENCE_WORDS else short).append(sentence)
    whole = " ".join(short)
    return out or ([whole] if content_terms(whole) - YES_NO_WORDS else [])


Backer = Callable[[str], Backing]
"""A claim -> the passages it cites and those that back it: the one judge, bound to the passages."""


def check_grounding(
    answer: str,
    sentences: PassageSentences,
    back: Backer,
    question_vector: np.ndarray | None = None,
    skip: Sequence[str] = (),
    highlight_min_similarity: float = 1.0,
) -> Grounding:
    """Judge each claim of `answer` by `back`; collect highlights: in each backing passage the
    sentence holding most of the claim's words, and with `question_vector` each passage's sentence
    closest to the question when at least `highlight_min_similarity` close."""
    count = len(sentences.texts)
    result = Grounding()
    marked: dict[int, set[int]] = {}
    for claim in claim_sentences(answer, skip) if count else []:
        backed = back(claim)
        evidence = None if backed.doubt else _evidence_sentence(sentences, content_terms(claim), backed.passages)
        if evidence is not None:
            marked.setdefault(evidence[0], set()).add(evidence[1])
        result.checked.append(SentenceSupport(claim, list(backed.cited), list(backed.passages), bool(backed.doubt)))
    if question_vector is not None:
        for n in range(1, count + 1):
            sims = sentences.vectors[n - 1] @ question_vector
            for i in np.argsort(-sims):
                if sims[i] < highlight_min_similarity:
                    break
                if _highlightable(sentences.texts[n - 1][i]):
                    marked.setdefault(n, set()).add(int(i))
                    break
    for n, indexes in sorted(marked.items()):
        result.highlights[n] = [sentences.texts[n - 1][i] for i in sorted(indexes)[:HIGHLIGHTS_PER_PASSAGE]]
    return result


def _evidence_sentence(sentences: PassageSentences, terms: set[str], backing: Sequence[int]) -> tuple[int, int] | None:
    """(passage, sentence index) of the highlightable sentence of the backing passages sharing most of `terms`."""
    best, where = 0, None
    for n in backing:
        for i, text in enumerate(sentences.texts[n - 1]):
            shared = len(terms & content_terms(text))
            if shared > best and _highlightable(text):
                best, where = shared, (n, i)
    return where


Idf = Callable[[Iterable[str]], dict[str, float]]
"""KeywordIndex.idf: each word's inverse document frequency over the indexed chunks."""


def term_weights(terms: set[str], idf: Idf | None) -> dict[str, float]:
    """Each word's weight in an overlap: its idf, so that words every chunk holds (the product's name
    in its own manual, "questions" in a FAQ) count for little beside the one that names the subject;
    a word no chunk holds gets the highest weight. Without idf, 1 each."""
    if idf is None or not terms:
        return dict.fromkeys(terms, 1.0)
    known = idf(terms)
    top = max(known.values(), default=1.0)
    return {w: known.get(w, top) for w in terms}


def corrected_citations(answer: str, grounding: Grounding) -> str:
    """`answer` with each claim backed by other passages than it cites citing those instead; `grounding`
    is updated to match (the claim now cites what backs it), so it need not be judged again.

    Citations are where a user checks a claim, so one pointing at a passage that does not hold it
    sends them to a page that does not say it; the judge found the passages that do.
    """
    for support in grounding.checked:
        if support.recited:
            recited = cite(uncited(support.sentence), support.backing)
            answer = answer.replace(support.sentence, recited, 1)
            support.sentence, support.cited = recited, list(support.backing)
    return answer
