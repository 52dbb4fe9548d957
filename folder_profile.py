"""What a documents folder holds, and the chunking settings that suit it (`python main.py analyze`).

The profile walks the folder as indexing would (discovery), counts files and bytes by
type and code by language, lists what would be skipped and why, and measures what
chunking is about: how long the sections between headings are in the documents, and how
long the functions and classes are in the code. From those it suggests CHUNK_SIZE,
CHUNK_OVERLAP and CODE_CHUNK_SIZE, each with its reason, as lines to put in .env.
Conversions run in the same time- and memory-limited workers as indexing, on a sample
of at most MAX_SAMPLED files, so profiling a large folder stays quick and safe.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from code_chunker import code_units
from config import Settings
from discovery import discover, file_type
from doc_types import ConvertedDocument, language_of
from document_converter import kind_of
from text_splitter import MARKDOWN_KINDS, heading_positions

MAX_SAMPLED = 300
PROSE_KINDS = MARKDOWN_KINDS | {"text"}
EMBEDDING_WINDOW_CHARS = 1200  # all-MiniLM-L6-v2 reads 256 tokens, about this much English; the rest of a chunk is unseen by vector search


@dataclass
class Lengths:
    """Lengths in characters of a kind of unit (sections, functions)."""

    count: int = 0
    median: int = 0
    p75: int = 0
    p90: int = 0

    @classmethod
    def of(cls, values: list[int]) -> "Lengths":
        if not values:
            return cls()
        values = sorted(values)
        def at(q: float) -> int:
            return values[min(len(values) - 1, int(q * len(values)))]
        return cls(len(values), int(statistics.median(values)), at(0.75), at(0.9))


@dataclass
class FolderProfile:
    folder: str
    files: int = 0
    bytes: int = 0
    by_type: dict[str, dict[str, int]] = field(default_factory=dict)  # kind -> {"files", "bytes"}
    by_extension: dict[str, int] = field(default_factory=dict)
    languages: dict[str, dict[str, int]] = field(default_factory=dict)  # language -> {"files", "lines"}
    sections: Lengths = field(default_factory=Lengths)
    functions: Lengths = field(default_factory=Lengths)
    function_lines_median: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    ignored: int = 0
    sampled: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    recommended: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def env_lines(self) -> list[str]:
        return [f"{name}={value}" for name, value in self.recommended.items()]


def profile_folder(settings: Settings, max_sampled: int = MAX_SAMPLED) -> FolderProfile:
    found = discover(settings.docs_dir, int(settings.max_file_mb * 1e6))
    profile = FolderProfile(folder=str(settings.docs_dir), skipped=dict(sorted(found.skipped.items())), ignored=found.ignored)
    for source, (path, st) in sorted(found.found.items()):
        kind = kind_of(path) or "unknown"
        profile.files += 1
        profile.bytes += st.st_size
        entry = profile.by_type.setdefault(kind, {"files": 0, "bytes": 0})
        entry["files"] += 1
        entry["bytes"] += st.st_size
        ext = file_type(source)
        profile.by_extension[ext] = profile.by_extension.get(ext, 0) + 1
    profile.by_type = dict(sorted(profile.by_type.items(), key=lambda kv: -kv[1]["files"]))
    profile.by_extension = dict(sorted(profile.by_extension.items(), key=lambda kv: -kv[1]))

    sections: list[int] = []
    functions: list[int] = []
    function_lines: list[int] = []
    for source, doc in _sample(settings, found.found, max_sampled, profile):
        if doc.kind == "code":
            language = language_of(source) or "unknown"
            lines = doc.markdown.count("\n") + 1
            entry = profile.languages.setdefault(language, {"files": 0, "lines": 0})
            entry["files"] += 1
            entry["lines"] += lines
            units = code_units(doc.markdown, language, 10**9) or []
            for unit in units:
                if unit.symbol:
                    text = "\n".join(doc.markdown.split("\n")[unit.start_line - 1 : unit.end_line])
                    functions.append(len(text))
                    function_lines.append(unit.end_line - unit.start_line + 1)
        elif doc.kind in PROSE_KINDS:
            sections += section_lengths(doc)
    profile.languages = dict(sorted(profile.languages.items(), key=lambda kv: -kv[1]["lines"]))
    profile.sections = Lengths.of(sections)
    profile.functions = Lengths.of(functions)
    profile.function_lines_median = int(statistics.median(function_lines)) if function_lines else 0
    recommend(profile, settings)
    return profile


def _sample(settings: Settings, found: dict[str, tuple[Path, Any]], limit: int, profile: FolderProfile) -> list[tuple[str, ConvertedDocument]]:
    """Convert an evenly spread sample of the files, in the indexing workers; cached conversions are reused."""
    from converter_workers import ConverterPool
    from document_converter import cached_conversion, file_sha256

    sources = sorted(found)
    if len(sources) > limit:
        step = len(sources) / limit
        sources = [sources[int(i * step)] for i in range(limit)]
    docs: list[tuple[str, ConvertedDocument]] = []
    jobs = []
    for source in sources:
        path = found[source][0]
        try:
            sha = file_sha256(path)
        except OSError as exc:
            profile.failed[source] = f"cannot be read: {exc.strerror or exc}"
            continue
        cached = cached_conversion(settings.cache_dir, sha)
        if cached is not None:
            docs.append((source, ConvertedDocument.from_json(cached.read_text(encoding="utf-8"))))
        else:
            jobs.append((source, path, sha))
    if jobs:
        pool = ConverterPool(settings.convert_workers, settings.convert_timeout_s, settings.convert_memory_mb, cache_dir=None)
        try:
            for source, doc, error in pool.convert(jobs):
                if doc is None:
                    profile.failed[source] = error or "could not be converted"
                else:
                    docs.append((source, doc))
        finally:
            pool.close()
    profile.sampled = len(docs) + len(profile.failed)
    return sorted(docs, key=lambda item: item[0])


def section_lengths(doc: ConvertedDocument) -> list[int]:
    """Characters in each part of a document between its headings; paragraphs for plain text."""
    text = doc.markdown
    if doc.kind == "text":
        return [len(p) for p in text.split("\n\n") if p.strip()]
    starts = [offset for offset, _, _ in heading_positions(text)]
    bounds = sorted({0, *starts, len(text)})
    return [len(text[a:b].strip()) for a, b in pairwise(bounds) if text[a:b].strip()]


def _round(value: float, step: int) -> int:
    return int(max(step, round(value / step) * step))


def recommend(profile: FolderProfile, settings: Settings) -> None:
    """Chunk sizes that fit this folder, each with its reason; unchanged settings are suggested as they are."""
    sections, functions = profile.sections, profile.functions
    if sections.count:
        size = min(max(_round(sections.p75, 100), 400), EMBEDDING_WINDOW_CHARS)
        if sections.p75 > EMBEDDING_WINDOW_CHARS:
            why = (f"sections are long (75% under {sections.p75} characters); chunks stay within what the embedding "
                   f"model reads (~{EMBEDDING_WINDOW_CHARS} characters) and are cut at paragraphs")
        else:
            why = f"75% of the {sections.count} sections between headings are under {sections.p75} characters, so most fit one chunk whole"
        profile.recommended["CHUNK_SIZE"] = size
        profile.reasons["CHUNK_SIZE"] = why
        profile.recommended["CHUNK_OVERLAP"] = _round(size * 0.15, 10)
        profile.reasons["CHUNK_OVERLAP"] = "15% of the chunk size: enough to keep a sentence cut at a chunk edge whole in one of the two"
    if functions.count:
        code_size = min(max(_round(functions.p90 + 250, 500), 1000), 6000)
        profile.recommended["CODE_CHUNK_SIZE"] = code_size
        profile.reasons["CODE_CHUNK_SIZE"] = (
            f"90% of the {functions.count} functions and classes are under {functions.p90} characters, so they stay "
            "one chunk each; longer ones are cut between statements"
        )
    if not profile.recommended:
        profile.reasons["none"] = "nothing to measure: the folder has no documents or code that could be read"


def format_profile(profile: FolderProfile, settings: Settings) -> str:
    """The profile as a short report for the terminal."""
    out = [f"{profile.folder}: {profile.files} files to index, {profile.bytes / 1e6:.1f} MB"
           f" ({len(profile.skipped)} skipped, {profile.ignored} left out by ignore rules)"]
    if profile.by_type:
        out.append("\nBy type:")
        out += [f"  {kind:<10} {v['files']:>6} files {v['bytes'] / 1e6:>9.2f} MB" for kind, v in profile.by_type.items()]
        out.append("  extensions: " + ", ".join(f"{ext if ext == '(none)' else '.' + ext} {n}" for ext, n in profile.by_extension.items()))
    if profile.languages:
        out.append("\nCode by language:")
        out += [f"  {lang:<12} {v['files']:>6} files {v['lines']:>9,} lines" for lang, v in profile.languages.items()]
    s, f = profile.sections, profile.functions
    if s.count:
        out.append(f"\nSections between headings: {s.count}, median {s.median} characters, 75% under {s.p75}, 90% under {s.p90}")
    if f.count:
        out.append(f"Functions and classes: {f.count}, median {f.median} characters ({profile.function_lines_median} lines), 90% under {f.p90}")
    if profile.sampled < profile.files:
        out.append(f"(lengths measured on a sample of {profile.sampled} of {profile.files} files)")
    if profile.skipped:
        out.append("\nSkipped:")
        out += [f"  {source}: {reason}" for source, reason in profile.skipped.items()]
    if profile.failed:
        out.append("\nCould not be read:")
        out += [f"  {source}: {reason}" for source, reason in profile.failed.items()]
    if profile.recommended:
        out.append("\nRecommended chunking (add these lines to .env, then run `python main.py index`; the index is rebuilt):")
        for name, value in profile.recommended.items():
            current = getattr(settings, name.lower())
            note = "same as now" if current == value else f"now {current}"
            out.append(f"  {name}={value}    # {note}: {profile.reasons[name]}")
    else:
        out.append("\n" + profile.reasons.get("none", ""))
    return "\n".join(out)
