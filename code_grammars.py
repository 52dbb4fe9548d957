"""Definitions in JavaScript, TypeScript, Go, Rust, Java, C and C++ source, found with tree-sitter.

Each language names, in its grammar's own node types, what is a function, what is
class-like (its members become chunks of their own), what wraps a definition without
changing it (`export`, `template <...>`), what only groups definitions (`#ifdef`,
`extern "C"`), and what belongs to the definition after it (doc comments, attributes,
decorators). The per-language grammar packages ship compiled parsers, so nothing is
downloaded at run time. Definition and Outline, the shape of a file that code_chunker
cuts along, are defined here and made by both readers: this one and code_chunker's `ast` one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

_BLOCKS = ("block", "body", "statement_list", "compound_statement", "declaration_list", "field_declaration_list", "enum_body_declarations")
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})


@dataclass
class Definition:
    """A function or class-like definition, as lines of its file (1-based, inclusive)."""

    name: str
    start: int  # its first line: decorators, attributes or doc comment included
    end: int
    container: bool = False  # class-like: its member definitions are chunks of their own
    members: list["Definition"] = field(default_factory=list)
    cuts: dict[int, int] = field(default_factory=dict)  # line -> nesting depth of a statement starting there


@dataclass
class Outline:
    definitions: list[Definition]
    cuts: dict[int, int]  # statement starts of the module-level code


@dataclass(frozen=True)
class Grammar:
    module: str  # the grammar package
    function: str  # its function returning the language
    functions: frozenset[str]
    containers: frozenset[str]
    wrappers: frozenset[str] = frozenset()  # hold one definition and add lines to it
    groups: frozenset[str] = frozenset()  # hold several definitions; their own lines are plain code
    attached: frozenset[str] = _COMMENTS  # belong to the definition right after them


_JS_FUNCTIONS = frozenset({"function_declaration", "generator_function_declaration", "method_definition", "function_signature", "abstract_method_signature"})
_TS_CONTAINERS = frozenset({"class_declaration", "abstract_class_declaration", "class", "interface_declaration", "enum_declaration", "type_alias_declaration", "internal_module", "module"})
_C_TYPES = frozenset({"struct_specifier", "enum_specifier", "union_specifier", "type_definition"})

GRAMMARS: dict[str, Grammar] = {
    "javascript": Grammar(
        "tree_sitter_javascript", "language", _JS_FUNCTIONS, frozenset({"class_declaration", "class"}),
        wrappers=frozenset({"export_statement"}), attached=_COMMENTS | {"decorator"},
    ),
    "typescript": Grammar(
        "tree_sitter_typescript", "language_typescript", _JS_FUNCTIONS, _TS_CONTAINERS,
        wrappers=frozenset({"export_statement", "ambient_declaration"}), attached=_COMMENTS | {"decorator"},
    ),
    "tsx": Grammar(
        "tree_sitter_typescript", "language_tsx", _JS_FUNCTIONS, _TS_CONTAINERS,
        wrappers=frozenset({"export_statement", "ambient_declaration"}), attached=_COMMENTS | {"decorator"},
    ),
    "go": Grammar("tree_sitter_go", "language", frozenset({"function_declaration", "method_declaration"}), frozenset({"type_declaration"})),
    "rust": Grammar(
        "tree_sitter_rust", "language", frozenset({"function_item", "function_signature_item", "macro_definition"}),
        frozenset({"impl_item", "trait_item", "mod_item", "struct_item", "enum_item", "union_item", "type_item"}),
        attached=_COMMENTS | {"attribute_item"},
    ),
    "java": Grammar(
        "tree_sitter_java", "language", frozenset({"method_declaration", "constructor_declaration", "compact_constructor_declaration"}),
        frozenset({"class_declaration", "interface_declaration", "enum_declaration", "record_declaration", "annotation_type_declaration"}),
    ),
    "c": Grammar(
        "tree_sitter_c", "language", frozenset({"function_definition"}), _C_TYPES,
        groups=frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif"}),
    ),
    "cpp": Grammar(
        "tree_sitter_cpp", "language", frozenset({"function_definition"}),
        _C_TYPES | {"class_specifier", "namespace_definition", "alias_declaration"},
        wrappers=frozenset({"template_declaration"}),
        groups=frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "linkage_specification"}),
    ),
}


@lru_cache(maxsize=None)
def _parser(language: str) -> Any:
    from tree_sitter import Language, Parser

    grammar = GRAMMARS[language]
    try:
        module = importlib.import_module(grammar.module)
    except ImportError as exc:
        raise ImportError(f"{grammar.module} is missing: install it with `pip install {grammar.module.replace('_', '-')}`") from exc
    return Parser(Language(getattr(module, grammar.function)()))


def tree_sitter_outline(text: str, language: str) -> Outline | None:
    try:
        tree = _parser(language).parse(text.encode("utf-8", errors="surrogatepass"))
    except (ImportError, ValueError, UnicodeEncodeError):
        return None
    reader = _Reader(GRAMMARS[language], text.encode("utf-8", errors="surrogatepass"))
    root = tree.root_node
    return Outline(reader.definitions(root.named_children), reader.cuts(root.named_children, 0))


def _first(node: Any) -> int:
    return node.start_point.row + 1


def _last(node: Any) -> int:
    """The last line of a node; a node ending at a line start (a // comment with its newline) ends on the line before."""
    row, column = node.end_point.row, node.end_point.column
    return row if column == 0 and row > node.start_point.row else row + 1


class _Reader:
    def __init__(self, grammar: Grammar, source: bytes) -> None:
        self.g = grammar
        self.source = source

    def text(self, node: Any) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")

    def definitions(self, nodes: list[Any]) -> list[Definition]:
        out: list[Definition] = []
        attached_start = attached_end = None
        for node in nodes:
            if node.type in self.g.attached:
                if attached_start is None or _first(node) > attached_end + 1:
                    attached_start = _first(node)
                attached_end = _last(node)
                continue
            found = self.definition(node)
            if found is not None:
                if attached_start is not None and attached_end >= found.start - 1:
                    found.start = min(found.start, attached_start)
                out.append(found)
            elif node.type in self.g.groups:
                out += self.definitions(node.named_children)
            attached_start = attached_end = None
        return out

    def definition(self, node: Any) -> Definition | None:
        """The definition a top-level or member node makes, with the node's full lines."""
        inner = node
        if node.type in self.g.wrappers:
            inner = next((c for c in node.named_children if self._kind(c)), None)
            if inner is None:
                return None
        kind = self._kind(inner)
        if kind is None:
            return None
        start, end = _first(node), _last(node)
        name = self.name(inner)
        if kind == "function":
            body = inner.child_by_field_name("body") or _value_body(inner)
            cuts = self.cuts(body.named_children, 0) if body is not None else {}
            if body is not None and body.named_children:
                cuts.pop(_first(body.named_children[0]), None)  # the signature stays with the first statement
            return Definition(name, start, end, cuts=cuts)
        body = inner.child_by_field_name("body")
        members = self._members(body)
        return Definition(name, start, end, container=True, members=self.definitions(members), cuts=self.cuts(members, 0))

    def _kind(self, node: Any) -> str | None:
        if node.type in self.g.functions:
            return "function"
        if node.type in self.g.containers:
            return "container"
        if node.type in ("lexical_declaration", "variable_declaration") and _value_body(node) is not None:
            return "function"  # const load = (path) => {...}
        return None

    def _members(self, body: Any) -> list[Any]:
        if body is None:
            return []
        out = []
        for child in body.named_children:
            if child.type == "enum_body_declarations" or child.type in self.g.groups:
                out += self._members(child) if child.type in self.g.groups else child.named_children
            else:
                out.append(child)
        return out

    def name(self, node: Any) -> str:
        if node.type == "method_declaration" and node.child_by_field_name("receiver") is not None:
            receiver = self.text(node.child_by_field_name("receiver"))  # Go: (s *Server)
            owner = receiver.strip("()").split()[-1].lstrip("*").split("[")[0] if receiver.strip("() ") else ""
            method = self.text(node.child_by_field_name("name"))
            return f"{owner}.{method}" if owner else method
        named = node.child_by_field_name("name")
        if named is not None:
            return self.text(named)
        if node.type == "impl_item":
            return self.text(node.child_by_field_name("type")).split("<")[0]  # impl Display for Config: Config
        if node.type == "type_declaration":
            spec = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")), None)
            named = spec.child_by_field_name("name") if spec is not None else None
            return self.text(named) if named is not None else "type"
        if node.type in ("lexical_declaration", "variable_declaration"):
            declarator = next((c for c in node.named_children if c.type == "variable_declarator"), None)
            named = declarator.child_by_field_name("name") if declarator is not None else None
            return self.text(named) if named is not None else "(anonymous)"
        declarator = node.child_by_field_name("declarator")
        while declarator is not None:
            if declarator.type in ("identifier", "field_identifier", "qualified_identifier", "destructor_name", "operator_name", "type_identifier"):
                return self.text(declarator).replace("::", ".")
            declarator = declarator.child_by_field_name("declarator")
        return "(anonymous)"

    def cuts(self, nodes: list[Any], depth: int) -> dict[int, int]:
        """Statement starts in these nodes and the blocks nested in them (to depth 4)."""
        out: dict[int, int] = {}
        for node in nodes:
            out.setdefault(_first(node), depth)
            if depth < 4:
                for child in node.named_children:
                    if child.type.endswith(_BLOCKS):
                        for line, d in self.cuts(child.named_children, depth + 1).items():
                            out.setdefault(line, d)
        return out


def _value_body(node: Any) -> Any:
    """The body of an arrow function or function expression assigned to a single variable."""
    if node.type not in ("lexical_declaration", "variable_declaration"):
        return None
    declarators = [c for c in node.named_children if c.type == "variable_declarator"]
    if len(declarators) != 1:
        return None
    value = declarators[0].child_by_field_name("value")
    if value is None or value.type not in ("arrow_function", "function_expression", "function", "generator_function"):
        return None
    return value.child_by_field_name("body")
