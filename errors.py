"""docqa's error tree. Every message says what the user can do about it.

DocqaError
├── ConfigError            a setting has a bad value
├── ConversionError        a file could not be turned into text (the file is skipped)
├── EmbeddingError         the embedding model could not be loaded or run
├── StoreError             the vector store or keyword index could not be used
├── LockError              another docqa process holds the data folder
└── LLMError               no answer could be generated
    ├── BackendUnavailable the backend cannot be reached or is missing its model
    └── GenerationError    the backend failed while answering

`plain_reason` says why a file was not indexed without library jargon or server paths.
"""

from __future__ import annotations

import re
from typing import Callable


class DocqaError(Exception):
    """Base of every error docqa raises on purpose."""


class ConfigError(DocqaError):
    pass


class ConversionError(DocqaError):
    pass


class EmbeddingError(DocqaError):
    pass


class StoreError(DocqaError):
    pass


class LockError(DocqaError):
    pass


class LLMError(DocqaError):
    pass


class BackendUnavailable(LLMError):
    pass


class GenerationError(LLMError):
    pass


def describe_error(exc: Exception) -> str:
    """An error as one line for the user: ours as written, anything else named as unexpected."""
    return str(exc) if isinstance(exc, DocqaError) else f"Unexpected error: {type(exc).__name__}: {exc}"


# Library messages that mean something simple, said simply; the first that matches is the whole reason.
_PLAIN_REASONS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    (re.compile(r"cannot open empty (file|document)|zero-length|file is empty", re.I),
     lambda m: "the file is empty (0 bytes): replace it with a complete copy, or remove it"),
    (re.compile(r"failed to open file .* as type (\w+)", re.I),
     lambda m: f"not a readable {m[1].upper()}: the file is damaged, or is not really a {m[1].upper()} (check its extension)"),
]
# An absolute path (POSIX, or Windows with a drive letter), kept to its last part: inside quotes
# whole (it may hold spaces), else up to a space. It must not follow a word character, a colon or
# a slash, so "text/plain" and "http://host/x" stay as they are.
_QUOTED_PATH = re.compile(r"(['\"])(?:[A-Za-z]:\\|/)[^'\"\n]*?([^'\"\n/\\]+)\1")
_ABSOLUTE_PATH = re.compile(r"(?<![\w:/\\.])(?:[A-Za-z]:\\|/)(?:[^\s'\"`,;()\[\]<>/\\]+[/\\])*([^\s'\"`,;()\[\]<>/\\]+)")


def plain_reason(reason: str) -> str:
    """Why a file was not indexed, in the user's words: known library messages put simply, and
    no server paths, which mean nothing to someone in a browser and tell a stranger too much."""
    for pattern, plain in _PLAIN_REASONS:
        match = pattern.search(reason)
        if match:
            return plain(match)
    return _ABSOLUTE_PATH.sub(r"\1", _QUOTED_PATH.sub(r"\1\2\1", reason))
