"""Which passages an answer's source list shows, in which order, with the citations renumbered to match.

The retriever always returns k passages: the best the folder holds, whether or not they
bear on the question. In a folder of unrelated documents the last of them are often about
something else entirely (CRAN passages of an R FAQ under an answer about systemd), and a
reader takes every listed source for evidence. So the list keeps a passage only when it
is close to the question relative to the best one, and above an absolute floor; the rest
stay one click away as "weak matches", counted.

Closeness is the retriever's fused score (retriever.score_blend), not a cosine: it is
normalised over the question's candidates (the best candidate of each retriever 1, the
100th 0), so its scale does not depend on how the vectors are stored (issue 44 would make
them int8) or on the embedding model, and it carries BM25's view of exact names, which a
cosine misses. The thresholds were measured with bench/source_floor.py on three question
sets with gold places; see docs/retrieval-results.md.

The model reads every retrieved passage; only the list is arranged, once the answer is
final: the passages the answer cites (or quotes) first, in the order the text cites them,
then the other close ones in retrieval order, then the weak ones. One numbering runs over
them all, and every [n] the answer holds (its text, the set-aside text, the quotes and the
highlights) is renumbered to it, so [n] names the n-th card everywhere.

The weak matches are not dropped from the JSON: `Answer.to_json()` (ask --json, REST, the
OpenAI `docqa` field) lists them after the others in `sources`, each with `"weak": true`, so
`sources[n-1]` is what [n] cites; the MCP answer carries them as `weak_matches`. The UI and the
text answers show them collapsed or counted. A front end that printed the answer while it
streamed (the terminal, the OpenAI stream) printed the prompt's numbers, before the list was
arranged: `Answer.renumbered` maps them, and `as_streamed`/`streamed_sources_text` list the
sources by the numbers it printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from answer_render import citations, cited_numbers, sources_text, weak_matches_note
from answer_types import Answer
from config import Settings
from retriever import Passage


def best_possible_score(settings: Settings) -> float:
    """The fused score of a chunk every retriever ranks first, before the neighbour and exact-name bonuses."""
    if settings.fusion == "rrf":
        return (settings.vector_weight + settings.bm25_weight) / (settings.rrf_k + 1)
    return 1.0  # score_blend: a weighted mean of scores normalised to [0, 1]


def weak_flags(passages: Sequence[Passage], settings: Settings) -> list[bool]:
    """For each passage, whether it is a weak match: its score under SOURCE_MIN_RATIO of the best
    passage's, or its normalised score under SOURCE_MIN_SCORE. The best passage is never weak."""
    if not passages:
        return []
    best = max(p.score for p in passages)
    top = best_possible_score(settings)
    return [
        p.score < best and (p.score < settings.source_min_ratio * best or p.score / top < settings.source_min_score)
        for p in passages
    ]


def renumber_citations(text: str, numbers: dict[int, int]) -> str:
    """Every [n] citation of `text` (answer_render.citations: none inside code) as [numbers[n]]; others kept."""
    out, pos = [], 0
    for m in citations(text):
        n = int(m[1])
        if n in numbers:
            out += [text[pos : m.start(1)], str(numbers[n])]
            pos = m.end(1)
    return "".join(out) + text[pos:]


def listing_order(answer: Answer, weak: Sequence[bool]) -> tuple[list[int], int]:
    """The 0-based indexes of answer.passages in listing order, and how many of them are listed
    (the rest are weak matches): cited first, in the order the text cites them, then quoted,
    then the close ones in retrieval order, then the weak ones."""
    count = len(answer.passages)
    cited = [int(m[1]) - 1 for m in citations(answer.text) if 1 <= int(m[1]) <= count]
    cited += [q.passage - 1 for q in answer.quotes if 1 <= q.passage <= count]
    first = list(dict.fromkeys(cited))
    close = [i for i in range(count) if i not in first and not weak[i]]
    rest = [i for i in range(count) if i not in first and weak[i]]
    return first + close + rest, len(first) + len(close)


def arrange_sources(answer: Answer, settings: Settings) -> None:
    """Order answer.passages for the list and move the weak ones, uncited, to answer.more_passages;
    every passage number the answer holds is renumbered to the new order."""
    if not answer.passages:
        return
    order, listed = listing_order(answer, weak_flags(answer.passages, settings))
    numbers = {old + 1: new for new, old in enumerate(order, start=1)}
    passages = [answer.passages[i] for i in order]
    answer.passages, answer.more_passages = passages[:listed], passages[listed:]
    if all(old == new for old, new in numbers.items()):
        return
    answer.renumbered = numbers
    answer.text = renumber_citations(answer.text, numbers)
    if answer.set_aside:
        answer.set_aside = renumber_citations(answer.set_aside, numbers)
    answer.unsupported = [renumber_citations(s, numbers) for s in answer.unsupported]
    answer.quotes = [replace(q, passage=numbers.get(q.passage, q.passage)) for q in answer.quotes]
    answer.highlights = {numbers.get(n, n): texts for n, texts in answer.highlights.items()}


def as_streamed(answer: Answer, text: str) -> str:
    """`text`, written with the list's numbers, with the numbers the answer streamed with: for a front end
    that printed the answer as it came (a terminal, an OpenAI stream) and cannot rewrite it."""
    return renumber_citations(text, {new: old for old, new in answer.renumbered.items()}) if answer.renumbered else text


def added_text(answer: Answer, shown: str) -> str:
    """What the answer's text adds to `shown`, the text a front end that prints as it comes has sent:
    "" while the text is set aside or does not extend it (a summary's draft, judged once it streamed)."""
    return answer.text[len(shown) :] if answer.set_aside is None and answer.text.startswith(shown) else ""


def streamed_number(answer: Answer, n: int) -> int:
    """The number the answer streamed with for the list's passage n."""
    return next((old for old, new in answer.renumbered.items() if new == n), n)


def streamed_order(answer: Answer) -> list[Passage]:
    """Every passage, listed and weak, in the order the answer streamed with: passage n is the one its [n] cites."""
    passages = [*answer.passages, *answer.more_passages]
    if not answer.renumbered:
        return passages
    return [passages[answer.renumbered[old] - 1] for old in sorted(answer.renumbered)]


def streamed_sources_text(answer: Answer, streamed: str) -> str:
    """The "Sources:" list under an answer a front end streamed as it came: the passages `streamed` cites,
    by the numbers it cites them with, or, citing none, the listed ones; then how many weak matches were left out."""
    order = streamed_order(answer)
    listed = sources_text(order, streamed) if cited_numbers(streamed, len(order)) else sources_text(answer.passages, "")
    return listed + (f"\n({weak_matches_note(len(answer.more_passages))} left out)" if answer.more_passages else "")
