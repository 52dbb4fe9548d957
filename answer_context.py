"""What the answer model reads, and the quotes shown before it writes.

A small model answers better from less: five whole passages (~1,500 tokens) bury the one
sentence that answers and cost seconds of prompt processing. From each passage this keeps
the sentences closest to the question with their neighbours, under a token budget, and
keeps the passage numbers so citations still point at the source cards.

The same sentence scores pick the quotes: the passage sentences that best answer the
question, verbatim, shown at once and standing as the answer when the model's text fails
its checks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from answer_types import ShownQuote
from grounding import (
    LIST_ITEM,
    TABLE_RULE,
    Idf,
    PassageSentences,
    content_terms,
    header_rows,
    sentence_spans,
    table_cells,
    term_weights,
)
from name_search import asked_identifiers, defines_in_table

OVERLAP_WEIGHT = 0.15
"""How much sharing the question's content words adds to a sentence's cosine similarity. 0.05 was
measured on 2026-12-06 (docs/answer-results.md): quotes held the answer for more of the dev pool's
questions, the tune half's answers scored the same, but Think Python lost two answers and the shipped
guide's "Can I ask docqa questions about a scanned PDF?" lost its quote of the file types read with OCR."""
CHARS_PER_TOKEN = 4
"""Budgets are counted without the model's tokenizer (Ollama's is out of reach): ~4 characters a token."""
DEFINITION_BONUS = 0.2
"""Added to a table row whose first cell is a name the question asks about (`| TOP_K | 5 | … |`): the
row that defines it answers "what is TOP_K set to", however little its words look like the question's.
A name only mentioned beside the question ("I changed CHUNK_SIZE. What do I run now?") gets none:
the row was quoted there over the answer (seen in the browser)."""
HEADING_STEP = 0.05
"""How far below its heading's score a section's first sentence may fall (`_under_headings`)."""
RANK_WEIGHT = 0.03
"""What each place further down the retrieved list takes off a sentence's score: retrieval
ranks the passage that answers first more often than a sentence's similarity alone picks it
(quotes holding the answer, Think Python dev 0.44 -> 0.53, shipped documents 0.58 -> 0.62)."""




@dataclass
class Quote:
    """A passage sentence, verbatim, that answers the question; `number` is its 1-based passage."""

    number: int
    text: str
    score: float
    sentences: range = range(0)
    """The passage's sentences it quotes (indexes): two quotes of one passage never share one."""


def sentence_scores(
    sentences: PassageSentences, question_vector: np.ndarray, question: str, idf: Idf | None = None
) -> list[np.ndarray]:
    """Per passage, each sentence's closeness to the question: cosine plus a share of its words (and a
    bonus for a table row defining a name it gives, split among the names it gives, or else for a row
    whose first cell it names in full), less a little for each place its passage is
    down the retrieved list. With `idf` (the keyword index's), the share weighs each word by how
    few chunks hold it, as BM25 does."""
    asked = content_terms(question)
    weights = term_weights(asked, idf)
    total = sum(weights.values())
    names = asked_identifiers(question)  # a name only mentioned beside the question gets no bonus
    out = []
    for rank, (texts, vectors) in enumerate(zip(sentences.texts, sentences.vectors, strict=True)):
        sims = vectors @ question_vector if len(texts) else np.zeros(0)
        if asked:
            overlap = np.array([sum(weights[w] for w in asked & content_terms(t)) / total for t in texts])
            sims = sims + OVERLAP_WEIGHT * overlap
        if names:
            bonus = DEFINITION_BONUS / _names_given(names)  # a row defines one name: with two asked, it answers half
            sims = sims + bonus * np.array([defines_in_table(t.strip(), names) for t in texts], dtype=np.float32)
        elif asked:
            sims = sims + DEFINITION_BONUS * np.array([_keyed_by(texts, i, asked) for i in range(len(texts))], dtype=np.float32)
        out.append(np.asarray(sims - RANK_WEIGHT * rank, dtype=np.float32))
    return out


def _keyed_by(texts: Sequence[str], i: int, asked: set[str]) -> bool:
    """Whether `texts[i]` is a table row whose first cell the question names in full: the row of
    "Debian 11" in a table of releases (`| 11 | Bullseye | … |`), whose other cells are values that
    look like no question. Seen with a CSV: the row of 5.0 was quoted for "What is the codename of
    Debian 11?". A header row (followed by its rule line) names columns, not a row."""
    cells = table_cells(texts[i])
    if not cells or (i + 1 < len(texts) and TABLE_RULE.match(texts[i + 1].strip())):
        return False
    key = content_terms(cells[0])
    return bool(key) and key <= asked


def _names_given(names: set[str]) -> int:
    """How many names the question gives: each comes in two forms ("copy.deepcopy": "deepcopy" and
    "copydeepcopy", name_search.named_identifiers), the short one ending the long one. Seen in the
    browser: "What must CHUNK_OVERLAP be, compared with CHUNK_SIZE?" was quoted the row
    "| CHUNK_OVERLAP | 200 | …", whose whole-bonus lifted it over "CHUNK_OVERLAP must be at least 0
    and smaller than CHUNK_SIZE", the answer, which names both."""
    return sum(not any(other != name and other.endswith(name) for other in names) for name in names) or 1


def _under_headings(texts: Sequence[str], sims: np.ndarray) -> np.ndarray:
    """A section's first sentence scores at least its heading's score, less HEADING_STEP.

    A heading that matches the question ("## Can I open docqa from another computer?") names
    what its section answers, and the section's opening sentence is where it answers; that
    sentence shares few words with the question ("Not by default: … listens on 127.0.0.1"),
    so alone it loses to a sentence elsewhere that merely sounds alike (seen in the browser).
    """
    out = np.array(sims, dtype=np.float32, copy=True)
    heading: float | None = None
    for i, text in enumerate(texts):
        if text.lstrip().startswith("#"):
            heading = float(sims[i])
        elif heading is not None and _quotable(text):
            out[i] = max(out[i], heading - HEADING_STEP)
            heading = None
    return out


_DOT_LEADER = re.compile(r"(?:\.\s?){5,}")
"""The dots between a contents entry and its page number ("9.1. Reading word lists . . . . 99"): a
quote running into them is a table of contents, which names where the answer is and never is the
answer (quoted first for dev-05)."""


def _quotable(text: str) -> bool:
    """A sentence or a table row worth quoting: not a heading, a code line or a table's rule."""
    stripped = text.strip()
    if stripped.startswith("|"):
        cells = [c for c in stripped.strip("|").split("|") if c.strip()]
        return len(cells) >= 2 and not TABLE_RULE.match(stripped)
    return bool(stripped) and not stripped.startswith(("#", ">>>", "```"))


QUOTE_CHARS = 320
"""A quote runs on past its best sentence while it is shorter than this: the sentence that
matches a "how do I" question best usually introduces the steps, commands or code after it."""


def _quote(texts: Sequence[str], number: int, i: int, score: float) -> Quote:
    """Sentence `i` of passage `number` and those after it up to QUOTE_CHARS."""
    window = [texts[i].strip()]
    if window[0].startswith("|"):  # a table row is quoted alone: the next rows are other settings
        return Quote(number, window[0], score, range(i, i + 1))
    for following in texts[i + 1 :]:
        if sum(len(t) for t in window) >= QUOTE_CHARS or following.lstrip().startswith("#") or _DEFINED_TERM.match(following):
            break
        window.append(following.strip())
    lines = any(_CODE_LINE.match(t) or LIST_ITEM.match(t) for t in window[1:])  # code and list items keep their lines
    text = "\n".join(window) if lines else " ".join(window)
    return Quote(number, text, score, range(i, i + len(window)))


_CODE_LINE = re.compile(r"^(\$ |>>> |[a-z_][\w.-]* [\w.-]+$|`)")
_DEFINED_TERM = re.compile(r"\s*[^\n:]{1,60}\n[ \t]*:[ \t]")
"""The next entry of a definition list ("backup\n:   Presumably so …", as HTML's <dl> converts): another
term's text, where a quote stops as it does at a heading. Seen with Debian's users-and-groups.html: the
quote about www-data ran on into the entry for the backup user."""


def select_quotes(sentences: PassageSentences, scores: Sequence[np.ndarray], most: int = 2) -> list[Quote]:
    """The `most` best-scoring quotable sentences, best first, each with what follows it in its passage.
    Two, not one with a second only when it scored nearly as well (a margin of 0.05): two held the answer
    for more questions on every dev set, and no outcome moved (docs/answer-results.md, tenth session).
    A sentence of any length is quotable (a minimum of five words kept out answers such as "Collaborators
    have:" with its list). A section's opening sentence scores as its heading does (`_under_headings`);
    the model's context is cut without that, which measured better for its answers."""
    scores = [_under_headings(texts, s) for texts, s in zip(sentences.texts, scores, strict=True)]
    ranked = sorted(
        (_quote(sentences.texts[n - 1], n, i, float(s[i])) for n, s in enumerate(scores, start=1) for i in range(len(s))
         if _quotable(sentences.texts[n - 1][i])),
        key=lambda q: -q.score,
    )
    picked: list[Quote] = []
    for quote in ranked:
        if any(_overlap(quote, p) for p in picked):
            continue
        if _DOT_LEADER.search(quote.text):
            continue
        picked.append(quote)
        if len(picked) == most:
            break
    return picked


def _overlap(a: Quote, b: Quote) -> bool:
    """Whether two quotes say the same: one holds the other, or both quote a sentence of one passage
    (the second quote repeated the first's steps, seen in the browser once two quotes were always shown)."""
    same_sentence = a.number == b.number and a.sentences.start < b.sentences.stop and b.sentences.start < a.sentences.stop
    return same_sentence or a.text in b.text or b.text in a.text


MAX_LIST_ITEMS = 12
MAX_ITEM_GAP = 4
"""Sentences of an item's own text ("This option controls the blocking mode …") between two items of one list."""


def list_items(texts: Sequence[str], i: int) -> list[int]:
    """The other items of the list that sentence `i` is an item of, or introduces (it ends with ":").

    A list answer needs every item, but the question matches one line best ("Which options can be
    set?": the first option's), so the context, cut to the best sentences and their neighbours, kept
    one item and the user got one of two options. Items are found on both sides of an item (after an
    introduction only), across an item's own sentences, never past a heading."""
    def is_item(j: int) -> bool:
        return bool(LIST_ITEM.match(texts[j]))

    introduces = texts[i].rstrip().endswith(":")
    if not (introduces or is_item(i)):
        return []
    found: list[int] = []
    for step in (1,) if introduces and not is_item(i) else (1, -1):
        j, gap = i + step, 0
        while 0 <= j < len(texts) and len(found) < MAX_LIST_ITEMS and gap <= MAX_ITEM_GAP and not texts[j].lstrip().startswith("#"):
            gap = 0 if is_item(j) else gap + 1
            if gap == 0:
                found.append(j)
            j += step
    return sorted(found)


def compact_passages(
    passages: Sequence[str], sentences: PassageSentences, scores: Sequence[np.ndarray], budget_tokens: int, neighbours: int = 1,
    lists: bool = True,
) -> list[str]:
    """Each passage cut to its sentences that bear on the question, with their neighbours, in the passage's order.

    Sentences are taken best first across all passages, each with the sentences around it
    (a single sentence's score is noisy: the one that answers often sits next to the one
    that matches the question best), a table row with its header row first (its values mean
    nothing without their column names), then the other items of a list it is in or introduces
    (`list_items`), until the budget is spent. A passage whose every
    sentence was taken is kept whole; one that got none is left empty (the caller drops it
    and keeps the numbering).
    """
    budget = budget_tokens * CHARS_PER_TOKEN
    keep: list[set[int]] = [set() for _ in passages]
    ranked = sorted(((float(s[i]), n, i) for n, s in enumerate(scores) for i in range(len(s))), reverse=True)
    used = 0
    for _, n, i in ranked:
        texts = sentences.texts[n]
        around = [i + d for r in range(1, neighbours + 1) for d in (-r, r)]
        for j in [i, *header_rows(texts, i), *around, *(list_items(texts, i) if lists else [])]:
            if 0 <= j < len(texts) and j not in keep[n]:
                cost = len(texts[j]) + 1
                if used + cost <= budget or not used:
                    keep[n].add(j)
                    used += cost
        if used >= budget:
            break
    out = []
    for n, indexes in enumerate(keep):
        texts = sentences.texts[n]
        if len(indexes) == len(texts) and texts:
            out.append(passages[n].strip())
            continue
        out.append(_excerpt(passages[n], texts, sorted(indexes)) if indexes else "")
    return out


def _excerpt(passage: str, texts: Sequence[str], indexes: Sequence[int]) -> str:
    """The kept sentences as they stand in the passage (line breaks and code layout intact), gaps as "…"."""
    spans = sentence_spans(passage, texts)  # None where not verbatim: the text itself stands in
    pieces: list[str] = []
    run: list[int] = []
    for i in list(indexes) + [-1]:
        if run and (i != run[-1] + 1 or i == -1):
            first, last = spans[run[0]], spans[run[-1]]
            pieces.append(passage[first[0] : last[1]] if first and last else " ".join(texts[j] for j in run))
            run = []
        if i >= 0:
            run.append(i)
    return "\n…\n".join(p.strip() for p in pieces)


def shown_quotes(quotes: Sequence[Quote], places: Sequence[str]) -> list[ShownQuote]:
    """The quotes as the answer carries them, `places` one a quote."""
    return [ShownQuote(q.number, q.text, where) for q, where in zip(quotes, places, strict=True)]
