"""Source code is cut along its definitions: each function, method or class is one chunk,
named, with its exact line range; long ones are cut between statements; a query naming a
function or class finds its definition first.

Fixtures are real code: docqa's own Python modules (checked against `ast`), and small
files in JavaScript, TypeScript, Go, Rust, Java, C and C++ written here.
"""

from __future__ import annotations

import ast

import pytest

from conftest import ROOT, module_settings, rag_with
from doc_types import Chunk, ConvertedDocument, Section, language_of
from document_converter import convert_document
from retriever import Passage
from text_splitter import split_document

OWN_MODULES = sorted(p for p in ROOT.glob("*.py"))


def code_chunks(name: str, text: str, size: int = 2000) -> list[Chunk]:
    doc = ConvertedDocument(source=name, title=name, kind="code", sections=[Section(text=text, start_line=1)])
    return split_document(doc, 1000, 200, code_chunk_size=size)


def by_symbol(chunks: list[Chunk]) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for c in chunks:
        if c.symbol:
            out.setdefault(c.symbol, []).append(c.lines)
    return out


def python_definitions(tree: ast.Module) -> dict[str, tuple[int, int, bool]]:
    """Qualified name -> (first line with decorators, last line, is a class) of every function, method and class, by ast."""
    out: dict[str, tuple[int, int, bool]] = {}

    def walk(body: list[ast.stmt], scope: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{scope}.{node.name}" if scope else node.name
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                out[name] = (start, node.end_lineno, isinstance(node, ast.ClassDef))
                if isinstance(node, ast.ClassDef):
                    walk(node.body, name)

    walk(tree.body, "")
    return out


# --- docqa's own source, checked against ast ---------------------------------------------


@pytest.mark.parametrize("path", OWN_MODULES, ids=lambda p: p.name)
def test_every_function_and_method_of_our_own_source_is_one_chunk_with_its_lines(path):
    doc = convert_document(path, path.name)
    assert doc.kind == "code"
    chunks = split_document(doc, 1000, 200, code_chunk_size=10**6)  # nothing too long to stay whole
    found = by_symbol(chunks)
    for name, (start, end, is_class) in python_definitions(ast.parse(path.read_text(encoding="utf-8"))).items():
        if is_class:  # the class chunk opens with its decorators and header; its methods are chunks of their own
            assert found[name][0][0] == start and all(end_ <= end for _, end_ in found[name]), name
        else:
            assert found.get(name) == [(start, end)], name
    lines = path.read_text(encoding="utf-8").split("\n")
    for c in chunks:
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])  # exact lines, nothing rewritten


def test_no_line_of_substance_is_lost():
    path = ROOT / "indexer.py"
    chunks = split_document(convert_document(path, "indexer.py"), 1000, 200, code_chunk_size=800)
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    lines = path.read_text(encoding="utf-8").split("\n")
    missing = [n for n, line in enumerate(lines, start=1) if line.strip() and n not in covered]
    assert missing == []


def test_a_method_keeps_its_class_as_context():
    text = "class Loader:\n    '''Loads things.'''\n\n    retries = 3\n\n    @staticmethod\n    def load(path):\n        return path\n"
    chunks = code_chunks("pkg/loader.py", text)
    method = next(c for c in chunks if c.symbol == "Loader.load")
    assert method.lines == (6, 8) and method.heading_path == ["Loader", "load"]
    assert method.embedding_text().startswith("pkg/loader.py > Loader > load\n    @staticmethod")
    assert method.location == "lines 6-8 (Loader.load)"
    header = next(c for c in chunks if c.symbol == "Loader")
    assert header.lines == (1, 4) and "Loads things" in header.text and "retries = 3" in header.text


def test_module_level_code_is_grouped():
    text = "import os\nimport sys\n\nLIMIT = 3\n\n\ndef main():\n    return LIMIT\n\n\nif __name__ == '__main__':\n    main()\n"
    chunks = code_chunks("tool.py", text)
    assert [(c.symbol, c.lines) for c in chunks] == [(None, (1, 4)), ("main", (7, 8)), (None, (11, 12))]


def test_a_long_function_is_cut_between_statements():
    body = "".join(f"    total_{n} = compute(value, {n})\n    if total_{n} > {n}:\n        value += total_{n}\n" for n in range(40))
    text = f"@cached\ndef crunch(value):\n    '''Crunch the value.'''\n{body}    return value\n"
    chunks = code_chunks("crunch.py", text, size=400)
    assert len(chunks) > 5 and {c.symbol for c in chunks} == {"crunch"}
    assert chunks[0].lines[0] == 1 and chunks[-1].lines[1] == text.count("\n")
    assert all(b.start_line == a.end_line + 1 for a, b in zip(chunks, chunks[1:], strict=False))
    assert all(len(c.text) <= 400 for c in chunks)
    tree = ast.parse(text)
    statement_starts = {n.lineno for n in tree.body[0].body}
    assert all(c.start_line in statement_starts for c in chunks[1:])  # cut where a statement starts
    assert "def crunch" in chunks[0].text and "Crunch the value" in chunks[0].text


def test_code_that_does_not_parse_is_cut_by_size_with_line_ranges():
    text = "def broken(:\n" + "    x = 1\n" * 200
    chunks = code_chunks("broken.py", text, size=400)
    assert all(c.symbol is None and c.start_line is not None for c in chunks)
    assert chunks[-1].end_line >= 200


# --- other languages, with tree-sitter -----------------------------------------------------

SOURCES = {
    "app.js": (
        """import fs from "fs";

/** Parse the settings file. */
export function parseConfig(path) {
  return JSON.parse(fs.readFileSync(path));
}

const loadAll = (paths) => {
  return paths.map(parseConfig);
};

class Loader extends Base {
  static retries = 3;

  load(path) {
    return parseConfig(path);
  }
}
""",
        {"parseConfig": (3, 6), "loadAll": (8, 10), "Loader.load": (15, 17)},
    ),
    "svc.ts": (
        """interface Options {
  verbose: boolean;
}

@Injectable()
export class Service {
  constructor(private readonly opts: Options) {}

  run(input: string): number {
    return input.length;
  }
}

export function helper<T>(value: T): T {
  return value;
}
""",
        {"Options": (1, 3), "Service.constructor": (7, 7), "Service.run": (9, 11), "helper": (14, 16)},
    ),
    "server.go": (
        """package main

import "fmt"

// Server answers requests.
type Server struct {
	addr string
}

// Start listens on the address.
func (s *Server) Start() error {
	fmt.Println(s.addr)
	return nil
}

func main() {
	(&Server{addr: ":80"}).Start()
}
""",
        {"Server": (5, 8), "Server.Start": (10, 14), "main": (16, 18)},
    ),
    "lib.rs": (
        """use std::fmt;

/// Settings read from disk.
#[derive(Debug)]
pub struct Config {
    path: String,
}

impl Config {
    /// Parse the file.
    pub fn parse_config(path: &str) -> Config {
        Config { path: path.to_string() }
    }
}

fn main() {
    let _ = Config::parse_config("a");
}
""",
        {"Config": (3, 7), "Config.parse_config": (10, 13), "main": (16, 18)},
    ),
    "Store.java": (
        """package store;

/** Keeps settings. */
public class Store {
    private int size;

    public Store() {
        size = 0;
    }

    @Override
    public String toString() {
        return "Store";
    }
}
""",
        {"Store.Store": (7, 9), "Store.toString": (11, 14)},
    ),
    "parse.c": (
        """#include <stdio.h>

struct point {
    int x;
};

/* Parse a config file. */
static int parse_config(const char *path) {
    printf("%s", path);
    return 0;
}

int main(void) {
    return parse_config("a");
}
""",
        {"point": (3, 5), "parse_config": (7, 11), "main": (13, 15)},
    ),
    "parser.cpp": (
        """#include <string>

namespace cfg {

class Parser {
 public:
  int parse(const std::string& text) {
    return text.size();
  }
};

template <typename T>
T identity(T value) {
  return value;
}

}  // namespace cfg
""",
        {"cfg.Parser.parse": (7, 9), "cfg.identity": (12, 15)},
    ),
}


@pytest.mark.parametrize("name", list(SOURCES))
def test_each_function_is_one_chunk_with_its_name_and_lines(name):
    text, expected = SOURCES[name]
    assert language_of(name) is not None
    found = by_symbol(code_chunks(name, text))
    for symbol, lines in expected.items():
        assert lines in found.get(symbol, []), (symbol, found)


def test_a_passage_of_code_is_cited_with_its_lines_and_names():
    text, _ = SOURCES["lib.rs"]
    chunks = code_chunks("lib.rs", text)
    method = next(c for c in chunks if c.symbol == "Config.parse_config")
    assert Passage([method], 1.0).location == "lines 10-13 (Config.parse_config)"


# --- name-aware search ---------------------------------------------------------------------

CALLERS = """from settings_loader import parse_config


def start(path):
    config = parse_config(path)
    return config


def reload(path):
    # parse_config again, the file may have changed
    return parse_config(path)


def check(path):
    assert parse_config(path) is not None
    return parse_config(path)
"""

DEFINITION = '''"""Settings on disk."""

import json


def parse_config(path):
    """Read a JSON settings file."""
    with open(path) as fh:
        return json.load(fh)
'''

JAVA_CALLERS = """class App {
    void boot() {
        SettingsStore store = new SettingsStore();
        store.loadSettings();
        store.loadSettings();
    }
}
"""

JAVA_STORE = """class SettingsStore {
    void loadSettings() {
        System.out.println("loading");
    }
}
"""


@pytest.fixture(scope="module")
def code_rag(tmp_path_factory, embedder):
    home = tmp_path_factory.mktemp("code")
    docs = home / "documents"
    docs.mkdir()
    for name, text in {"app.py": CALLERS, "settings_loader.py": DEFINITION, "App.java": JAVA_CALLERS, "SettingsStore.java": JAVA_STORE}.items():
        (docs / name).write_text(text, encoding="utf-8")
    (docs / "notes.md").write_text("# Notes\n\nThe settings are parsed at start and on reload.\n", encoding="utf-8")
    rag = rag_with(module_settings(home, convert_workers=1), embedder)
    try:
        rag.index()
        yield rag
    finally:
        rag.close()


@pytest.mark.parametrize(
    ("query", "source", "symbol"),
    [
        ("parse_config", "settings_loader.py", "parse_config"),
        ("ParseConfig", "settings_loader.py", "parse_config"),
        ("where is parse_config defined?", "settings_loader.py", "parse_config"),
        ("loadSettings", "SettingsStore.java", "SettingsStore.loadSettings"),
        ("load_settings", "SettingsStore.java", "SettingsStore.loadSettings"),
        ("SettingsStore", "SettingsStore.java", "SettingsStore"),
    ],
)
def test_a_query_naming_a_function_or_class_finds_its_definition_first(code_rag, query, source, symbol):
    best = code_rag.retrieve_context(query)[0]  # neighbouring chunks of a file merge into one passage
    assert best.source == source and symbol in [c.symbol for c in best.chunks]
    assert f"{symbol})" in best.location or f"{symbol}," in best.location


def test_a_two_part_question_naming_a_function_still_finds_its_definition_first(code_rag):
    question = "Where is parse_config defined, and what do the notes say about reloading the settings?"
    best = code_rag.retriever.retrieve(question)[0]
    assert best.source == "settings_loader.py" and "parse_config" in [c.symbol for c in best.chunks]
    assert "name" in best.found_by  # moved first by name-aware search, not by chance
