"""The checks an answer passes before it is shown: relevance, quotes, grounding and the verdict.

RAGSystem runs the answer path's stages in order; this module holds what each check does
to the `Answer`, all measured against one `Evidence`: the passages' sentences embedded once
with the question, which relevance, the quotes and the highlights read; the claims themselves
are judged by their words (answer_check.back_claim), with no similarity threshold. The checks
need the embedding model; without it RAGSystem makes no `Evidence` and the model's text is
shown unchecked, with a notice.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from answer_check import back_claim, check_claims
from answer_context import Quote, select_quotes, sentence_scores, shown_quotes
from answer_prompt import REFUSAL
from answer_render import quotes_text, refusal_text
from answer_types import Answer, Relevance
from answer_verdict import (
    add_missing_citations,
    add_notice,
    held_text,
    judge,
    let_quotes_stand,
)
from common_words import uncommon_words
from config import Settings
from embeddings import EmbeddingBackend
from errors import EmbeddingError
from grounding import (
    Grounding,
    PassageSentences,
    assess_relevance,
    check_grounding,
    claim_sentences,
    corrected_citations,
    split_sentences,
)
from keyword_index import KeywordIndex, tokenize, versions

log = logging.getLogger(__name__)


@dataclass
class Evidence:
    """The passages' sentences and the question, embedded once, and each sentence's closeness to the question."""

    sentences: PassageSentences
    question_vector: np.ndarray
    scores: list[np.ndarray]
    question: str
    """As searched (a follow-up made standalone): its words and numbers count as given when claims are judged."""
    names: frozenset[str] = frozenset()
    """The question's rare names (keyword tokens; `rare_names`): a claim repeating one is checked to be about it."""


Contradiction = Callable[[str], int | None]
"""Given the model's text so far, where its first whole sentence that the checks find wrong ends, or None."""


class AnswerReview:
    """The checks of one RAGSystem: its settings, the embedder the relevance thresholds were calibrated on, and the keywords' idf."""

    def __init__(self, settings: Settings, embedder: EmbeddingBackend, keywords: KeywordIndex) -> None:
        self.settings = settings
        self.embedder = embedder
        self.keywords = keywords

    def evidence(self, answer: Answer, question: str, rare: set[str]) -> Evidence | None:
        """Embed the passages' sentences and judge relevance (into answer.relevance); None when the embedding fails."""
        t = time.perf_counter()
        try:
            checker = self.embedder.for_checks  # torch's vectors, which the thresholds were calibrated on
            sentences = PassageSentences.embed(checker, [p.text for p in answer.passages])
            question_vector = np.asarray(checker.embed_query(question), dtype=np.float32)
        except EmbeddingError as exc:
            log.warning("Relevance and grounding checks skipped: %s", exc)
            return None
        relevance = assess_relevance(question_vector, question, sentences, self.settings, rare)
        answer.relevance = Relevance(relevance.similarity, relevance.overlap, relevance.relevant, relevance.model_decides)
        answer.timings.relevance_s = time.perf_counter() - t
        scores = sentence_scores(sentences, question_vector, question, self.keywords.idf)
        return Evidence(sentences, question_vector, scores, question, rare_names(question, rare))

    def quote(self, answer: Answer, evidence: Evidence) -> None:
        """The passage sentences that best answer the question, shown before the model writes."""
        quotes = select_quotes(evidence.sentences, evidence.scores)
        answer.quotes = shown_quotes(quotes, quote_places(answer, quotes))

    def refuse(self, answer: Answer, evidence: Evidence | None, nearest: bool = False) -> None:
        """The documents do not cover the question: say so, with the closest passages, instead of
        guessing; with `nearest`, also their sentences nearest to the question, verbatim, and then,
        unless a named word is missing, the reply opens "No answer could be confirmed" instead
        (answer_render.refusal_text)."""
        answer.kind, answer.refused = "refusal", True
        unnamed = answer.relevance.unnamed  # the passages match the question's other words: say why they do not answer it
        quotes = select_quotes(evidence.sentences, evidence.scores) if nearest and evidence else []
        answer.text = refusal_text(
            answer.passages,
            reason=f"No document names {' or '.join(unnamed)}." if unnamed else "",
            nearest=quotes_text(shown_quotes(quotes, quote_places(answer, quotes))),
        )
        if evidence is not None:
            self.ground(answer, evidence)

    def contradiction(self, answer: Answer, question: str) -> Contradiction:
        """The verdict's exact checks (answer_verdict.judge: numbers, names, code the passages lack) run on
        each sentence as soon as the model has finished it, so that a draft bound to be set aside
        can be stopped there. The last sentence is still being written and waits."""
        held = held_text([p.text for p in answer.passages], [p.label for p in answer.passages])
        checked: set[str] = set()

        def first_wrong(text: str) -> int | None:
            at = 0
            for sentence in split_sentences(text)[:-1]:
                at = text.find(sentence, at) + len(sentence)
                if sentence not in checked:
                    checked.add(sentence)
                    if check_claims([sentence], held, question):
                        return at
            return None

        return first_wrong

    def judge(self, answer: Answer, evidence: Evidence, question: str, grounding: Grounding | None) -> Grounding | None:
        """Keep the model's text, or let the quotes stand as the answer with the reason (answer_verdict.py);
        returns the grounding of the text judged last.

        A claim backed by other passages than it cites is first re-cited to them
        (grounding.corrected_citations), so a right claim cited to the wrong passage stands, cited right.
        """
        if grounding is not None and (recited := corrected_citations(answer.text, grounding)) != answer.text:
            log.info("Citation moved to the passages that back the sentence: %r", recited)
            answer.text, answer.tidied = recited, [*answer.tidied, "citation moved to the passage holding the sentence"]
            answer.unsupported = grounding.unsupported  # a doubted claim is re-cited too, and stays marked
        texts, labels = [p.text for p in answer.passages], [p.label for p in answer.passages]
        verdict = judge(answer.text, grounding, texts, question, answer.tidied, labels)
        if verdict.shown:
            answer.text = add_missing_citations(answer.text, grounding)
        elif answer.quotes:
            self.quotes_stand(answer, evidence, verdict.reason)
        else:
            add_notice(answer, f"Check this answer against the sources: {verdict.reason}.")
            answer.unsupported = answer.unsupported or claim_sentences(answer.text, [REFUSAL])
        return grounding

    def quotes_stand(self, answer: Answer, evidence: Evidence, reason: str) -> None:
        """The model's text is set aside (one click away in the UI); the verbatim quotes are the answer."""
        let_quotes_stand(answer, reason)
        self.ground(answer, evidence)  # for the highlights: the quotes are verbatim, never unsupported
        answer.unsupported = []

    def ground(self, answer: Answer, evidence: Evidence) -> Grounding:
        """Which answer sentences the passages back (answer.unsupported), and the highlights."""
        t = time.perf_counter()
        text = "" if answer.kind == "refusal" else answer.text
        back = functools.partial(back_claim, passages=[p.text for p in answer.passages], question=evidence.question, names=evidence.names)
        grounding = check_grounding(
            text, evidence.sentences, back, evidence.question_vector, skip=[REFUSAL],
            highlight_min_similarity=self.settings.highlight_min_similarity,
        )
        answer.unsupported = grounding.unsupported
        answer.sentences_checked = len(grounding.checked)
        answer.highlights = grounding.highlights
        answer.timings.grounding_s = time.perf_counter() - t
        return grounding


def rare_names(question: str, rare: set[str]) -> frozenset[str]:
    """The tokens of the question's names (common_words.uncommon_words) and versions ("1.4.1") that
    few chunks hold (`rare`, the retriever's rare terms): "dynamic_cast", not "Node.js" all through a
    manual, nor a common word that a small index happens to hold rarely ("built", "stop"), nor a
    common part of a rare name ("cast")."""
    named = {token for word in uncommon_words(question) for token in tokenize(word)} | set(versions(question))
    return frozenset(named & rare)


def quote_places(answer: Answer, quotes: list[Quote]) -> list[str]:
    """Where each quote stands in its passage: its own lines, page or heading (Passage.place_of)."""
    return [answer.passages[q.number - 1].place_of(q.text) for q in quotes]
