"""Name-aware search: a question that names a function, class or setting gets its definition first.

Keyword search already splits `parse_config` and `ParseConfig` into their words, but the
places that call a function share those words with the place that defines it, and vector
search cannot tell them apart at all. Code chunks carry the name of the function, method
or class they define (Chunk.symbol), so among the candidates a retriever found, the ones
that define a name the question mentions are moved to the front. `parse_config`,
`ParseConfig` and `parseConfig` name the same thing here; so do `load` and `Loader.load`.

Prose documents define names in reference tables: a row whose first cell is the name
(`| TOP_K | 5 | Passages given to the model |`) is where a settings table, a glossary or an
API table says what it is. Such a table holds many rows, so BM25's length normalisation
ranks it below short passages that merely mention the name. It is moved up to just after
the best passage, not before it: a question that names a setting often asks what to do
with it ("I changed CHUNK_SIZE. What do I run now?"), which prose answers, and putting the
table first lost that answer its first place on the shipped documents' dev set. When the
question asks what the name is ("What is TOP_K?", "what is TOP_K set to", "Default value
of TOP_K?"), the defining row is the answer, and it goes first.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

_WORD = re.compile(r"[A-Za-z_][\w.]*(?:\(\))?")
_IDENTIFIER = re.compile(r"_|[a-z][A-Z]|\(\)$|\.")
_TABLE_ROW_NAME = re.compile(r"^\|\s*`?([^|`\n]{1,80}?)`?\s*\|", re.M)
"""The first cell of a Markdown table row (what the converters write for DOCX, PDF and HTML tables)."""


def normalise(name: str) -> str:
    """One spelling for snake_case, camelCase and PascalCase: `parse_config` and `ParseConfig` -> "parseconfig"."""
    return name.replace("_", "").lower()


def named_identifiers(question: str) -> set[str]:
    """The names a question mentions: words written like code (snake_case, camelCase, `load()`, `Loader.load`),
    or the question itself when it is a single word."""
    words = _WORD.findall(question.strip())
    single = len(question.split()) == 1
    names = set()
    for word in words:
        word = word.rstrip(".")  # a sentence's full stop ("from my files.") makes no name
        if single or _IDENTIFIER.search(word):
            word = word.removesuffix("()").strip(".")
            names.add(normalise(word.rsplit(".", 1)[-1]))
            names.add(normalise(word.replace(".", "")))
    return {n for n in names if len(n) > 1}


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def asked_identifiers(question: str) -> set[str]:
    """The names the question asks about: those in its asking sentences (ending with "?"), or in
    all of it when none ends so. "I changed CHUNK_SIZE. What do I run now?" asks about none."""
    sentences = _SENTENCE_END.split(question.strip())
    asking = [s for s in sentences if s.rstrip().endswith("?")]
    return named_identifiers(" ".join(asking)) if asking else named_identifiers(question)


def defines(symbol: str | None, names: set[str]) -> bool:
    if not symbol or not names:
        return False
    return normalise(symbol.rsplit(".", 1)[-1]) in names or normalise(symbol.replace(".", "")) in names


def defines_in_table(text: str, names: set[str]) -> bool:
    """Whether a table row in `text` starts with one of `names`, as a reference table defines it."""
    return bool(names) and "|" in text and any(normalise(m.group(1).strip()) in names for m in _TABLE_ROW_NAME.finditer(text))


def asks_what_it_is(question: str, names: set[str]) -> bool:
    """Whether the question asks what a name it gives is, or its value: "What is TOP_K?", "what's
    TOP_K set to", "What does CHUNK_OVERLAP default to?", "Default value of TOP_K?", "TOP_K?";
    not "I changed CHUNK_SIZE. What do I run now?" (the name is not what is asked about)."""
    text = question.strip().rstrip("?!. ")
    spelled = "|".join(re.escape(w) for w in _WORD.findall(text) if normalise(w.removesuffix("()").strip(".")) in names)
    if not spelled:
        return False
    name = rf"`?(?:{spelled})`?"
    return bool(
        re.fullmatch(name, text)
        or re.search(rf"\b(?:what|which)(?:'s|\s+(?:is|are|does|do|was))\s+(?:(?:the|its|a)\s+)?(?:(?:default|value|meaning)\s+(?:of\s+)?)?{name}", text, re.I)
        or re.search(rf"\b(?:default|value|meaning)\s+(?:value\s+)?(?:of|for)\s+{name}", text, re.I)
        or re.search(rf"{name}(?:'s)?\s+(?:default|value)\b", text, re.I)
    )


def definitions_first(question: str, passages: Sequence[Any]) -> list[Any]:
    """The passages with those that define a name in the question first, scored just above the best;
    a table row that defines it comes right after the best passage, or first when the question
    asks what the name is (see the module docstring)."""
    names = named_identifiers(question)
    if not names:
        return list(passages)
    hits = [p for p in passages if defines(p.first.symbol, names)]
    if hits:
        top = max(p.score for p in passages)
        for rank, p in enumerate(hits, start=1):
            p.score = top * (1 + 0.01 * (len(hits) - rank + 1))  # keeps them first when passages are re-sorted by score
            p.found_by["name"] = rank
        return hits + [p for p in passages if p not in hits]
    table = next((p for p in passages if any(defines_in_table(c.text, names) for c in p.chunks)), None)
    if table is None or table is passages[0]:
        return list(passages)
    rest = [p for p in passages if p is not table]
    if asks_what_it_is(question, names):
        table.score = rest[0].score * 1.01  # keeps it first when passages are re-sorted by score
        table.found_by["name"] = 1
        return [table, *rest]
    table.score = rest[0].score  # ties the best: stays second when passages are re-sorted by score (a stable sort)
    table.found_by["name"] = 2
    return [rest[0], table, *rest[1:]]
