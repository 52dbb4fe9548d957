"""Name-aware search: a question that names a function or class gets its definition first.

Keyword search already splits `parse_config` and `ParseConfig` into their words, but the
places that call a function share those words with the place that defines it, and vector
search cannot tell them apart at all. Code chunks carry the name of the function, method
or class they define (Chunk.symbol), so among the candidates a retriever found, the ones
that define a name the question mentions are moved to the front. `parse_config`,
`ParseConfig` and `parseConfig` name the same thing here; so do `load` and `Loader.load`.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

_WORD = re.compile(r"[A-Za-z_][\w.]*(?:\(\))?")
_IDENTIFIER = re.compile(r"_|[a-z][A-Z]|\(\)$|\.")


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
        if single or _IDENTIFIER.search(word):
            word = word.removesuffix("()").strip(".")
            names.add(normalise(word.rsplit(".", 1)[-1]))
            names.add(normalise(word.replace(".", "")))
    return {n for n in names if len(n) > 1}


def defines(symbol: str | None, names: set[str]) -> bool:
    if not symbol or not names:
        return False
    return normalise(symbol.rsplit(".", 1)[-1]) in names or normalise(symbol.replace(".", "")) in names


def definitions_first(question: str, passages: Sequence[Any]) -> list[Any]:
    """The passages with those that define a name in the question first, scored just above the best."""
    names = named_identifiers(question)
    hits = [p for p in passages if defines(p.first.symbol, names)]
    if not hits:
        return list(passages)
    top = max(p.score for p in passages)
    for rank, p in enumerate(hits, start=1):
        p.score = top * (1 + 0.01 * (len(hits) - rank + 1))  # keeps them first when passages are re-sorted by score
        p.found_by["name"] = rank
    return hits + [p for p in passages if p not in hits]
