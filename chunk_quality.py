"""Which chunks of a file are worth indexing: low-information text stays out, repeats count once.

A 5 MB line of one repeated character became 6,250 identical chunks that the vector side
found moderately similar to every question, and they crowded out the files that answer.
Real folders hold the same kind of thing: logs, base64 and hex blobs, minified code. Two
screens, both per chunk, so the rest of such a file is still indexed:

- no word: text without a letter or digit (a page's rule line, "---", left alone between two
  removed navigation bars became a chunk, and a summary outlined it as a part of the document);
- low information: text that compresses more than `max_compression` times (long runs of
  one character or one line; prose compresses about 2x, the densest page of Think Python,
  a contents page of dot leaders, 4.7x), or whose characters mostly stand in ASCII runs of
  over 40 characters without a space (base64, hex, minified code; prose has words, URLs
  stay a minority of a chunk, and CJK text, written without spaces, is not ASCII);
- repeats: a chunk whose heading and text (case and spacing aside) equal an earlier
  chunk's of the same file adds nothing a search could find, so only the first is kept.

Written by hand because it is a few lines of zlib and a regular expression; no library
judges "worth embedding" for retrieval.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from doc_types import Chunk

_WORDLESS_RUN = re.compile(r"[\x21-\x7e]{41,}")
MIN_SCREENED_CHARS = 200
"""Shorter chunks are too short to judge by compression (zlib's header alone weighs on them)."""


def compression_ratio(text: str) -> float:
    raw = text.encode("utf-8")
    return len(raw) / max(1, len(zlib.compress(raw, 6)))


def wordless_share(text: str) -> float:
    """The share of the non-space characters that stand in ASCII runs of over 40 characters with no space."""
    total = sum(1 for c in text if not c.isspace())
    return sum(len(m) for m in _WORDLESS_RUN.findall(text)) / total if total else 0.0


def low_information(text: str, max_compression: float, max_wordless: float) -> bool:
    """True for text a question could not usefully match: no word at all, repetitive, or characters without words."""
    if not any(c.isalnum() for c in text):
        return True
    if len(text) < MIN_SCREENED_CHARS:
        return False
    return compression_ratio(text) > max_compression or wordless_share(text) > max_wordless


@dataclass
class Screened:
    """The chunks to index, and what was left out and why, for the file's notes in `stats`."""

    kept: list[Chunk]
    low_information: list[Chunk] = field(default_factory=list)
    repeats: list[Chunk] = field(default_factory=list)

    def notes(self, chunk_size: int, chunk_overlap: int) -> list[str]:
        out = []
        if self.low_information:
            count = len(self.low_information)
            out.append(f"low-information text left out ({_size(self.low_information, chunk_size, chunk_overlap)}, {_chunks(count)})")
        if self.repeats:
            out.append(f"{_chunks(len(self.repeats))} repeating earlier text counted once")
        return out


def _chunks(count: int) -> str:
    return f"{count} chunk" if count == 1 else f"{count} chunks"


def _size(chunks: Sequence[Chunk], chunk_size: int, chunk_overlap: int) -> str:
    """About how much of the file's text the chunks cover: consecutive chunks overlap."""
    chars = sum(len(c.text) for c in chunks)
    if len(chunks) > 1 and chunk_size > 0:
        chars = int(chars * (chunk_size - chunk_overlap) / chunk_size)
    if chars >= 1e6:
        return f"{chars / 1e6:.1f} MB"
    return f"{chars / 1e3:.0f} kB" if chars >= 1e3 else f"{chars} characters"


def screen_chunks(chunks: Sequence[Chunk], max_compression: float, max_wordless: float) -> Screened:
    """The chunks of one file worth indexing, in order; `max_compression` <= 0 turns the low-information screen off."""
    screened = Screened(kept=[])
    seen: set[tuple[str, ...]] = set()
    for chunk in chunks:
        key = (*chunk.heading_path, " ".join(chunk.text.lower().split()))
        if key in seen:
            screened.repeats.append(chunk)
        elif max_compression > 0 and low_information(chunk.text, max_compression, max_wordless):
            screened.low_information.append(chunk)
        else:
            seen.add(key)
            screened.kept.append(chunk)
    return screened
