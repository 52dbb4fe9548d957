"""JSON and YAML files as their own text, one section per top-level key.

Data files are indexed as written, so chunks cite exact line ranges; cutting them at
their top-level keys keeps each setting or record group together, and the key becomes
the section's heading path ("database"), which tells a chunk from the middle of a long
file what it belongs to. A comment right above a YAML key goes with that key. A file
that does not parse is indexed as plain text, with a note saying why.
"""

from __future__ import annotations

import json
from pathlib import Path

from doc_types import ConvertedDocument, Section
from errors import ConversionError
from text_formats import convert_text_to_markdown, read_text_file


def convert_json_to_markdown(path: Path, source: str) -> ConvertedDocument:
    text, encoding, notes = read_text_file(path)
    try:
        keys = json_top_level_keys(text)
    except (ValueError, RecursionError) as exc:
        return _as_plain_text(path, source, f"not valid JSON ({exc}); indexed as plain text")
    return _keyed_document(path, source, "json", text, keys, encoding, notes)


def convert_yaml_to_markdown(path: Path, source: str) -> ConvertedDocument:
    import yaml

    text, encoding, notes = read_text_file(path)
    try:
        keys = []
        for node in yaml.compose_all(text, Loader=yaml.SafeLoader):
            if isinstance(node, yaml.MappingNode):
                keys += [(k.start_mark.line + 1, str(k.value)) for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
    except (yaml.YAMLError, RecursionError) as exc:
        reason = " ".join(str(exc).split())[:200]
        return _as_plain_text(path, source, f"not valid YAML ({reason}); indexed as plain text")
    lines = text.split("\n")
    keys = [(_above_comments(lines, line), key) for line, key in keys]
    return _keyed_document(path, source, "yaml", text, keys, encoding, notes)


def json_top_level_keys(text: str) -> list[tuple[int, str]]:
    """(line, key) of each member of a top-level JSON object; [] for an array or a scalar. Invalid JSON raises ValueError."""
    decoder = json.JSONDecoder()
    i = _skip_space(text, 0)
    if not text.startswith("{", i):
        json.loads(text)  # validates
        return []
    keys: list[tuple[int, str]] = []
    i = _skip_space(text, i + 1)
    if text.startswith("}", i):
        return keys if not text[i + 1 :].strip() else _invalid(text, i + 1)
    while True:
        key, end = decoder.raw_decode(text, i)
        if not isinstance(key, str):
            return _invalid(text, i)
        keys.append((text.count("\n", 0, i) + 1, key))
        i = _skip_space(text, end)
        if not text.startswith(":", i):
            return _invalid(text, i)
        _, i = decoder.raw_decode(text, _skip_space(text, i + 1))
        i = _skip_space(text, i)
        if text.startswith(",", i):
            i = _skip_space(text, i + 1)
            continue
        if text.startswith("}", i) and not text[i + 1 :].strip():
            return keys
        return _invalid(text, i)


def _invalid(text: str, at: int) -> list[tuple[int, str]]:
    raise ValueError(f"unexpected content at line {text.count(chr(10), 0, at) + 1}")


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _above_comments(lines: list[str], line: int) -> int:
    """The first line of the comment block right above a key, or the key's own line."""
    while line > 1 and lines[line - 2].lstrip().startswith("#"):
        line -= 1
    return line


def _keyed_document(path: Path, source: str, kind: str, text: str, keys: list[tuple[int, str]], encoding: str, notes: list[str]) -> ConvertedDocument:
    lines = text.split("\n")
    cuts: list[tuple[int, str]] = []
    for line, key in keys:
        if cuts and line <= cuts[-1][0]:
            continue  # several keys on one line (minified): one section
        cuts.append((line, key))
    sections = []
    for n, (line, key) in enumerate(cuts):
        start = 1 if n == 0 else line  # what comes before the first key ("{", "---", comments) goes with it
        end = cuts[n + 1][0] - 1 if n + 1 < len(cuts) else len(lines)
        body = "\n".join(lines[start - 1 : end])
        if body.strip():
            sections.append(Section(text=body, start_line=start, heading_path=[key]))
    if not sections:
        sections = [Section(text=text, start_line=1)]
    if not text.strip():
        raise ConversionError("the file is empty")
    return ConvertedDocument(source=source, title=path.stem, kind=kind, sections=sections, encoding=encoding, notes=notes)


def _as_plain_text(path: Path, source: str, note: str) -> ConvertedDocument:
    doc = convert_text_to_markdown(path, source, kind="text")
    doc.notes.append(note)
    return doc
