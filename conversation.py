"""Follow-up questions: the chat history the model sees, and standalone questions for retrieval.

Retrieval only sees one question, so "and what about tuples?" must first become "How do I
create a tuple?". A word rule does it, with no model: a follow-up that names a new topic ("what
about X") takes the previous question and swaps the term most like X for X (the embedding model
judges "most like"); one that points back ("why is it immutable?") gets the previous question's
key words added. The model's own rewrite, tried before, found the right passage no more often
and answered no better on bench/follow_ups.py's 20 pairs, and cost a model call per follow-up
(docs/answer-results.md, tenth session).

History sent to the model is bounded by turns and by an estimate of tokens.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import numpy as np

from answer_context import CHARS_PER_TOKEN
from answer_render import uncited
from grounding import content_terms
from keyword_index import exact_terms
from name_search import named_identifiers

log = logging.getLogger(__name__)

Message = dict[str, str]

HISTORY_ANSWER_CHARS = 300
"""Earlier answers reach the model cut to about this many characters: enough to say what "it" was,
too little to copy as the next answer (small models repeat their last answer word for word)."""

_LEAD = re.compile(
    r"^\s*(?:(?:and|but|so|also|then|ok(?:ay)?|now)\b[,\s]*)*"
    r"(?:(?:what|how)\s+about|what\s+of|how\s+(?:does|do|is|are)\s+that\s+(?:work\s+)?for|same\s+(?:for|with)|and\s+for|as\s+for)\s+",
    re.IGNORECASE,
)
_CONNECTIVE = re.compile(r"^\s*(?:and|but|so|also|then|ok(?:ay)?|now)\b[,\s]*", re.IGNORECASE)
_POINTERS = re.compile(
    r"\b(?:it|its|it's|they|them|their|theirs|that|those|this|these|he|she|him|her|the\s+same|there|such)\b",
    re.IGNORECASE,
)
_ONE = re.compile(
    r"\b(?:the|a|an|this|that|which|other|another)\s+(?:[a-z][\w-]*\s+)?ones?\b(?=\s*(?:[?.!,;:]|$|(?:is|are|do|does|should|would|will|can|to|of|for|in|with|or|and)\b))",
    re.IGNORECASE,
)
""""one" standing for a noun said before ("when do I need the deep one?", "which one is faster?");
"one element", "the ones digit" name their own noun."""
_TERSE = re.compile(r"^\s*(?:why|how|how so|really|example|examples|more|tell me more|go on|explain|and then|what else)\s*[?.!]*\s*$", re.IGNORECASE)
QUESTION_WORDS = {
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "is", "are", "was", "were",
    "do", "does", "did", "can", "could", "should", "would", "will", "i", "my", "me", "you", "your",
    "use", "get", "make", "way", "difference", "mean", "means",
}
"""Words that ask rather than name the topic, kept out of a question's key terms."""
POSSESSIVES = frozenset({"its", "their"})
"""Pointers that name whose: in a standalone question, usually its own subject's (`_points_nowhere`).
Of the dev pool's 256 standalone questions, asked after another, 7 were taken for follow-ups, 5 of
them by one of these; with the subject rule, 2 (bench/follow_ups.py), and the 20 follow-ups' pairs are read as before."""
FOLLOW_UP_MAX_WORDS = 10
"""A follow-up is short: a long question names its own topic, even when it says "it"."""
SWAP_MIN_SIMILARITY = 0.3
"""A previous term this similar to the new topic (cosine) is replaced by it; below, the topic is added."""

_ASKING = re.compile(r"(?:what|which|who|when|where|why|how|is|are|do|does|did|can|could|should|would|will)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_][\w'.-]*[\w]|[A-Za-z_]")


def user_questions(history: list[Message]) -> list[str]:
    return [m["content"].strip() for m in history if m.get("role") == "user" and m.get("content", "").strip()]


def looks_like_follow_up(question: str, history: list[Message]) -> bool:
    """A short question that leans on an earlier one: "and …", "what about …", or a pronoun."""
    if not user_questions(history):
        return False
    words = question.split()
    if len(words) > FOLLOW_UP_MAX_WORDS:
        return False
    if _LEAD.match(question) or _CONNECTIVE.match(question) or _TERSE.match(question):
        return True
    pointers = [m for m in _POINTERS.finditer(question) if not _points_nowhere(question, m)]
    pointer = min([*pointers, *_ONE.finditer(question)], key=lambda m: m.start(), default=None)
    return bool(pointer) and not _names_before(question, pointer.start())


_EXISTENTIAL = re.compile(r"\b(?:is|are|was|were|will\s+be|be)\s+there\b|\bthere(?:\s+(?:is|are|was|were|be)\b|'s\b)", re.IGNORECASE)


def _points_nowhere(question: str, pointer: re.Match[str]) -> bool:
    """"that" after a naming word starts a clause about it ("the small model that comes built in"),
    pointing at nothing earlier; after an asking word ("is that", "how does that") it points back.
    "there" beside a form of "be" ("which commands are there?", "is there a limit?") says that
    something exists, and points at no earlier place (seen in the browser: searched with the
    previous question's words added). "its" and "their" belong to the question's own subject when
    it names one before the verb ("Where does time write its statistics?", "Do namespaces get their
    own indentation?"), and point back when the subject is the asker ("how do I change its port?")."""
    if pointer.group().lower() in POSSESSIVES:
        return bool(key_terms(" ".join(_WORD.findall(question[: pointer.start()])[:-1])))
    if pointer.group().lower() == "there":
        return any(m.start() <= pointer.start() < m.end() for m in _EXISTENTIAL.finditer(question))
    if pointer.group().lower() != "that":
        return False
    before = _WORD.findall(question[: pointer.start()])
    return bool(before) and before[-1].lower() not in QUESTION_WORDS and bool(content_terms(before[-1]))


def _names_before(question: str, at: int) -> bool:
    """Whether the question gives an exact name (`TOP_K`, `//`, `--reindex`, `_.memoize`, `str.split()`)
    before `at`: "what is TOP_K set to if I don't change it" says what "it" is, and is no follow-up
    (seen in the browser: "Which key does _.memoize use for its cache?" searched with the previous
    question's words added)."""
    before = question[:at]
    return bool(exact_terms(before)) or (len(before.split()) > 1 and bool(named_identifiers(before)))


def key_terms(question: str) -> list[str]:
    """The words of a question that name its topic, in order, without asking words or stop words."""
    out: list[str] = []
    for word in _WORD.findall(question):
        plain = word.strip(".'").lower()
        if plain in QUESTION_WORDS or not content_terms(plain) or plain in (t.lower() for t in out):
            continue
        out.append(word.strip(".'"))
    return out


def rewrite_by_rule(question: str, previous: str, embedder: Any | None = None) -> str:
    """Standalone version of `question` using the previous (standalone) question; no model needed."""
    previous = previous.strip().rstrip("?.! ")
    topic = new_topic(question)
    if topic:
        swapped = _swap_in(previous, topic, embedder)
        return swapped if swapped else f"{previous}, and {topic}?"
    core = _CONNECTIVE.sub("", question).strip()
    if _TERSE.match(core):
        return f"{core.rstrip('?.! ').capitalize()}: {previous}?"
    missing = [t for t in key_terms(previous) if not content_terms(t) <= content_terms(core)]
    if not missing:
        return core
    return f"{core.rstrip('?.! ')} ({' '.join(missing[:6])})?"


def new_topic(question: str) -> str | None:
    """X in "what about X?", "and X?", "how about X?": a new topic for the previous question."""
    lead = _LEAD.match(question)
    if lead:
        return question[lead.end():].strip().rstrip("?.! ") or None
    if _CONNECTIVE.match(question):
        core = _CONNECTIVE.sub("", question).strip().rstrip("?.! ")
        if core and len(core.split()) <= 4 and not _ASKING.match(core) and not _POINTERS.search(core):
            return core
    return None


_ARTICLE = re.compile(r"^(?:a|an|the)\s+", re.IGNORECASE)


def _swap_in(previous: str, topic: str, embedder: Any | None) -> str | None:
    """`previous` with the key term most like `topic` replaced by it, or None when none is alike.

    A topic sharing a key word with the previous question replaces that word and the key word
    before it: "and a void function?" after "What is a fruitful function?" is "What is a void
    function?", not "What is a fruitful a void function?" (which the model answered about
    fruitful functions)."""
    terms = key_terms(previous)
    topic = _ARTICLE.sub("", topic)
    shared = _shared_run(previous, terms, topic)
    if shared:
        return f"{previous[: shared[0]]}{topic}{previous[shared[1]:]}?"
    if not terms or embedder is None:
        return None
    vectors = np.asarray(embedder.embed_documents([topic, *terms]), dtype=np.float32)
    sims = vectors[1:] @ vectors[0]
    best = int(np.argmax(sims))
    if sims[best] < SWAP_MIN_SIMILARITY:
        return None
    swapped = re.sub(rf"(?<![\w]){re.escape(terms[best])}(?![\w])", topic, previous, count=1)
    return f"{swapped}?"


def _shared_run(previous: str, terms: list[str], topic: str) -> tuple[int, int] | None:
    """Where in `previous` a key word shared with `topic` stands with the key word before it, its
    modifier, which the topic replaces ("fruitful function" for "void function"); None when
    no shared word has one."""
    said = content_terms(topic)
    words = [(m.start(), m.end(), m.group().strip(".'")) for m in _WORD.finditer(previous)]
    keys = {t.lower() for t in terms}
    for i in range(1, len(words)):
        word, before = words[i][2], words[i - 1][2]
        if word.lower() in keys and content_terms(word) & said and before.lower() in keys and not content_terms(before) & said:
            return words[i - 1][0], words[i][1]
    return None


def make_standalone(question: str, history: list[Message], embedder: Any | None) -> str | None:
    """The standalone form of a follow-up (`rewrite_by_rule`), or None when `question` already stands alone."""
    if not looks_like_follow_up(question, history):
        return None
    return rewrite_by_rule(question, previous_standalone(history, embedder), embedder)


def previous_standalone(history: list[Message], embedder: Any | None) -> str:
    """The last user question made standalone by the rule, resolving a chain of follow-ups."""
    questions = user_questions(history)
    resolved = questions[0]
    for q in questions[1:]:
        resolved = rewrite_by_rule(q, resolved, embedder) if looks_like_follow_up(q, [{"role": "user", "content": resolved}]) else q
    return resolved


def history_after(history: list[Message], question: str, answer: str, failed: bool) -> list[Message]:
    """The chat's history once this turn is over, as plain text for the next follow-up.

    The model sees earlier turns as the question asked and the answer given, without
    markup; a failed answer (the model could not run) is left out, question and all.
    """
    if failed:
        return list(history)
    return [*history, {"role": "user", "content": question}, {"role": "assistant", "content": answer}]


def bounded_history(history: list[Message] | None, max_turns: int, max_tokens: int) -> list[Message]:
    """The most recent turns that fit both bounds, oldest first; always whole user/assistant pairs,
    each earlier answer shortened (HISTORY_ANSWER_CHARS)."""
    if not history or max_turns <= 0 or max_tokens <= 0:
        return []
    clean = []
    for m in history:
        content = str(m.get("content") or "").strip()
        if m.get("role") == "assistant":
            content = uncited(content)  # its numbers pointed at other passages
            content = _shorten(content, HISTORY_ANSWER_CHARS)
        if m.get("role") in ("user", "assistant") and content:
            clean.append({"role": m["role"], "content": content})
    pairs: list[list[Message]] = []
    for m in clean:
        if m["role"] == "user" or not pairs:
            pairs.append([m])
        else:
            pairs[-1].append(m)
    budget = max_tokens * CHARS_PER_TOKEN
    kept: list[list[Message]] = []
    for pair in reversed(pairs[-max_turns:]):
        size = sum(len(m["content"]) for m in pair)
        if size > budget:
            if kept:
                break
            pair = [{**m, "content": _shorten(m["content"], budget // len(pair))} for m in pair]
            size = budget
        kept.append(pair)
        budget -= size
    return [m for pair in reversed(kept) for m in pair]


def _shorten(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: max(0, chars - 1)].rstrip() + "…"
