"""How many hand rules the answer path holds: regexes, word lists, thresholds and lines, per module.

    .venv/bin/python bench/rule_count.py [--json]

Issue 43 asks for the count before and after the answer design changes, with half or fewer as
the target. The count is read from the source by its syntax tree, so it is the same for anyone
who runs it:
- a regex is a string literal given as the pattern to a `re` function (`re.compile`, `re.search`, …);
- a word list is a set, frozenset, list or tuple literal of three or more strings (or a
  `"…".split()` of three or more words), wherever it stands;
- a threshold is a module- or class-level UPPER_CASE name bound to a number, or a fractional
  number compared against inside code (`score >= 0.4`);
- a tuned setting is a fractional-number setting of config.py that the module reads
  (`settings.grounding_min_similarity`): a threshold moved out of the code, counted once where read;
- lines are the module's lines.
The answer path is every module between the retrieved passages and the answer shown.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ANSWER_PATH = (
    "question_intent", "question_focus", "conversation", "answer_context", "grounding", "answer_check",
    "answer_tidy", "answer_verdict", "answer_review", "answer_sources", "free_answer",
    "answer_render", "common_words", "whole_document",
)
TUNED_SETTINGS = frozenset(f.name for f in dataclasses.fields(config.Settings) if isinstance(f.default, float))
RE_FUNCTIONS = {"compile", "search", "match", "fullmatch", "sub", "subn", "findall", "finditer", "split"}


@dataclass
class Count:
    module: str
    regexes: int = 0
    word_lists: int = 0
    thresholds: int = 0
    lines: int = 0

    @property
    def rules(self) -> int:
        return self.regexes + self.word_lists + self.thresholds


def _strings(node: ast.AST) -> int:
    if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        return sum(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    return 0


def _is_word_list(node: ast.AST) -> bool:
    if _strings(node) >= 3:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split":
        target = node.func.value
        return isinstance(target, ast.Constant) and isinstance(target.value, str) and len(target.value.split()) >= 3
    return False


def _is_regex(node: ast.Call) -> bool:
    func = node.func
    named = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "re"
    if not (named and func.attr in RE_FUNCTIONS and node.args):
        return False
    pattern = node.args[0]
    return isinstance(pattern, (ast.Constant, ast.JoinedStr, ast.BinOp)) and not isinstance(getattr(pattern, "value", ""), bytes)


def _named_number(node: ast.stmt) -> bool:
    if isinstance(node, ast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets, value = [node.target], node.value
    else:
        return False
    named = any(isinstance(t, ast.Name) and t.id.isupper() for t in targets)
    number = isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) and not isinstance(value.value, bool)
    return named and number


def count_module(path: Path) -> Count:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    count = Count(path.stem, lines=len(source.splitlines()))
    bodies = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    count.thresholds += sum(_named_number(stmt) for body in bodies for stmt in body)
    count.thresholds += len({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in TUNED_SETTINGS})
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_regex(node):
            count.regexes += 1
        if _is_word_list(node):
            count.word_lists += 1
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if isinstance(side, ast.Constant) and isinstance(side.value, float):
                    count.thresholds += 1
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    counts = [count_module(ROOT / f"{name}.py") for name in ANSWER_PATH if (ROOT / f"{name}.py").exists()]
    total = Count("total")
    for c in counts:
        total.regexes += c.regexes
        total.word_lists += c.word_lists
        total.thresholds += c.thresholds
        total.lines += c.lines
    if args.json:
        print(json.dumps({"modules": [asdict(c) | {"rules": c.rules} for c in counts], "total": asdict(total) | {"rules": total.rules}}))
        return 0
    print(f"{'module':18} {'regexes':>8} {'word lists':>11} {'thresholds':>11} {'rules':>6} {'lines':>6}")
    for c in [*counts, total]:
        print(f"{c.module:18} {c.regexes:8} {c.word_lists:11} {c.thresholds:11} {c.rules:6} {c.lines:6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
