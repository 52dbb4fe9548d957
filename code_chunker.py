"""Cut source code along its definitions: one chunk per function, method or class.

A function keeps its decorators and docstring (or the doc comment above it, in languages
that document that way); a method is its own chunk named `Class.method`, so the class
name stays with it; a class chunk holds its header, docstring and class-level statements.
The code between definitions (imports, constants, a main block) is grouped into chunks
of its own. A definition longer than the size limit is cut between statements, preferring
the outermost ones. Every chunk is a run of whole lines, so its line range is exact.

Python is read with `ast`; JavaScript, TypeScript, Go, Rust, Java, C and C++ with
tree-sitter (code_grammars). Other languages, and code that does not parse, are left to
the size-based splitter.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from itertools import pairwise

from code_grammars import GRAMMARS, Definition, Outline, tree_sitter_outline


@dataclass
class CodeUnit:
    start_line: int
    end_line: int
    symbol: str | None  # "Parser.parse_config"; None for module-level code


def code_units(text: str, language: str, max_chars: int) -> list[CodeUnit] | None:
    """The chunks of a code file as line ranges, or None when its language has no parser here or it does not parse."""
    if language == "python":
        outline = python_outline(text)
    else:
        outline = tree_sitter_outline(text, language) if language in GRAMMARS else None
    if outline is None:
        return None
    lines = text.split("\n")
    return _cover(lines, outline.definitions, outline.cuts, 1, len(lines), "", max_chars)


def supports(language: str | None) -> bool:
    """Whether code in this language is cut along its definitions."""
    return language == "python" or language in GRAMMARS


# ---------------------------------------------------------------- Python


def python_outline(text: str) -> Outline | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return Outline(_python_definitions(tree.body), _statement_cuts(tree.body))


def _python_start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno] + [d.lineno for d in decorators])


def _python_definitions(body: list[ast.stmt]) -> list[Definition]:
    out = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            cuts = _statement_cuts(node.body)
            cuts.pop(_python_start(node.body[0]), None)  # the signature stays with the first statement
            out.append(Definition(node.name, _python_start(node), node.end_lineno or node.lineno, cuts=cuts))
        elif isinstance(node, ast.ClassDef):
            out.append(
                Definition(
                    node.name, _python_start(node), node.end_lineno or node.lineno, container=True,
                    members=_python_definitions(node.body), cuts=_statement_cuts(node.body),
                )
            )
    return out


def _statement_cuts(body: list[ast.stmt], depth: int = 0, out: dict[int, int] | None = None) -> dict[int, int]:
    """Where statements start, at every depth: the places a long definition may be cut."""
    out = {} if out is None else out
    for node in body:
        out.setdefault(_python_start(node), depth)
        if depth >= 4:
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(node, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                _statement_cuts(inner, depth + 1, out)
        for handler in getattr(node, "handlers", []) or []:
            out.setdefault(handler.lineno, depth + 1)
            _statement_cuts(handler.body, depth + 2, out)
        for case in getattr(node, "cases", []) or []:
            out.setdefault(case.pattern.lineno, depth + 1)
            _statement_cuts(case.body, depth + 2, out)
    return out


# ---------------------------------------------------------------- units


def _cover(lines: list[str], definitions: list[Definition], cuts: dict[int, int], lo: int, hi: int, scope: str, max_chars: int) -> list[CodeUnit]:
    """Units for lines lo..hi: each definition on its own, the code between them grouped."""
    out: list[CodeUnit] = []
    pos = lo
    for d in sorted(definitions, key=lambda d: d.start):
        if d.start < pos or d.end > hi:
            continue  # overlapping or outside (never in valid code)
        if d.start > pos:
            out += _pack(lines, pos, d.start - 1, cuts, scope or None, max_chars, drop_empty=True)
        name = f"{scope}.{d.name}" if scope else d.name
        if d.container and d.members:
            out += _cover(lines, d.members, d.cuts, d.start, d.end, name, max_chars)
        else:
            out += _pack(lines, d.start, d.end, d.cuts, name, max_chars)
        pos = d.end + 1
    if pos <= hi:
        out += _pack(lines, pos, hi, cuts, scope or None, max_chars, drop_empty=True)
    return out


def _size(lines: list[str], start: int, end: int) -> int:
    return sum(len(line) + 1 for line in lines[start - 1 : end])


def _pack(lines: list[str], start: int, end: int, cuts: dict[int, int], symbol: str | None, max_chars: int, drop_empty: bool = False, depth: int = 0) -> list[CodeUnit]:
    """Lines start..end as one unit, or, when too long, as pieces cut at statement starts of the lowest depth that fits."""
    if drop_empty:
        while start <= end and not lines[start - 1].strip():
            start += 1
        while end >= start and not lines[end - 1].strip():
            end -= 1
        if start > end or not any(re.search(r"\w", line) for line in lines[start - 1 : end]):
            return []  # blank lines and closing braces
    if _size(lines, start, end) <= max_chars:
        return [CodeUnit(start, end, symbol)]
    depths = sorted({d for line, d in cuts.items() if start < line <= end and d >= depth})
    if not depths:
        return _pack_lines(lines, start, end, symbol, max_chars)
    level = depths[0]
    bounds = [start] + sorted(line for line, d in cuts.items() if start < line <= end and d == level) + [end + 1]
    out: list[CodeUnit] = []
    piece_start = start
    for a, b in pairwise(bounds):
        if _size(lines, piece_start, b - 1) <= max_chars:
            continue
        if piece_start < a:
            out.append(CodeUnit(piece_start, a - 1, symbol))
            piece_start = a
        if _size(lines, a, b - 1) > max_chars:
            out += _pack(lines, a, b - 1, cuts, symbol, max_chars, depth=level + 1)
            piece_start = b
    if piece_start <= end:
        out.append(CodeUnit(piece_start, end, symbol))
    return out


def _pack_lines(lines: list[str], start: int, end: int, symbol: str | None, max_chars: int) -> list[CodeUnit]:
    """The last resort for a single long statement: as many whole lines per piece as fit."""
    out: list[CodeUnit] = []
    piece_start, size = start, 0
    for n in range(start, end + 1):
        width = len(lines[n - 1]) + 1
        if size and size + width > max_chars:
            out.append(CodeUnit(piece_start, n - 1, symbol))
            piece_start, size = n, 0
        size += width
    out.append(CodeUnit(piece_start, end, symbol))
    return out
