"""What each answer-path rule is worth: recorded answers replayed with one rule switched off at a time.

    .venv/bin/python bench/ablate.py RUN.json --qa QUESTIONS.jsonl --docs DIR [--only NAME ...] [--json]

Issue 43: a rule stays only if it improves the dev pool. This replays a recorded run (as
bench/replay.py does: the model's recorded words, today's retrieval, quotes and checks) once as
it stands and once per rule below with that rule switched off, and prints each one's figures
beside the baseline's, with the questions whose outcome moved. A rule whose switching-off moves
nothing on either half earns nothing on the pool.

Switching off replaces the rule's function, wherever a module holds it, by one that finds
nothing (no problem, no change to the text). That is an experiment's patch, not a design: the
answer path has no switches of its own. Runs recorded before `draft` was kept hold the tidied
text, so the tidying rules (answer_tidy) measure as moot on them; use a run with drafts.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.answer import answering_system  # noqa: E402
from bench.replay import Recorded, recorded_texts  # noqa: E402
from config import load_settings  # noqa: E402
from evaluation import is_answerable, load_qa, score_answers  # noqa: E402


def _none(*_: Any, **__: Any) -> list[str]:
    return []


def _unchanged(text: str, *_: Any, **__: Any) -> tuple[str, bool]:
    return text, False


def _same(text: str, *_: Any, **__: Any) -> str:
    return text


def _false(*_: Any, **__: Any) -> bool:
    return False


def _true(*_: Any, **__: Any) -> bool:
    return True


RULES: dict[str, tuple[str, str, Callable[..., Any]]] = {
    "exact_mismatches": ("answer_check", "exact_mismatches", _none),
    "corrected_citations": ("grounding", "corrected_citations", _same),
    "add_missing_citations": ("answer_verdict", "add_missing_citations", _same),
    "drop_repeats": ("answer_tidy", "drop_repeats", _unchanged),
    "join_lone_citation": ("answer_tidy", "join_lone_citation", _unchanged),
    "cite_outside_fences": ("answer_tidy", "cite_outside_fences", _same),
    "parts_named": ("answer_check", "_parts_named", _false),
    "unit_given": ("answer_check", "_unit_given", _true),
    "repeats_earlier": ("answer_tidy", "repeats_earlier", _false),
    "reverses": ("answer_check", "_reverses", _false),
    "list_marker": ("answer_check", "_LIST_MARKER", re.compile(r"(?!)")),
    "expand_contractions": ("grounding", "expand_contractions", _same),
}


@contextmanager
def switched_off(module: str, name: str, replacement: Callable[..., Any]) -> Iterator[None]:
    """`module.name` replaced by `replacement` in every loaded module that holds it, for the block."""
    original = getattr(sys.modules[module], name)
    holders = [(m, attr) for m in list(sys.modules.values()) for attr, value in list(vars(m).items()) if value is original]
    for m, attr in holders:
        setattr(m, attr, replacement)
    try:
        yield
    finally:
        for m, attr in holders:
            setattr(m, attr, original)


def figures(rows: list[dict[str, Any]]) -> dict[str, int]:
    answerable = [r for r in rows if r["answerable"]]
    answered = [r for r in answerable if not r["refused"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    return {
        "right": sum(r["contains"] for r in answerable),
        "answerable": len(answerable),
        "unwarned": sum(not r["contains"] and not r["flagged"] for r in answered),
        "flagged_right": sum(r["contains"] and r["flagged"] for r in answered),
        "answered": len(answered),
        "refused_unanswerable": sum(r["refused"] for r in unanswerable),
        "unanswerable": len(unanswerable),
        "false_refusals": sum(r["refused"] for r in answerable),
    }


def outcome(row: dict[str, Any]) -> str:
    if row["refused"]:
        return "refused"
    return ("right" if row["contains"] else "wrong") + (", flagged" if row["flagged"] else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--qa", type=Path, required=True)
    parser.add_argument("--docs", type=Path, required=True)
    parser.add_argument("--data", type=Path)
    parser.add_argument("--only", nargs="*", choices=sorted(RULES), help="these rules only (default: all)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    run = json.loads(args.run.read_text(encoding="utf-8"))
    texts = recorded_texts(run)
    items = load_qa(args.qa)
    answerable, unanswerable = [i for i in items if is_answerable(i)], [i for i in items if not is_answerable(i)]
    settings = load_settings(overrides={"docs_dir": args.docs, "db_dir": args.data or args.docs.parent / "data"})
    results: dict[str, Any] = {}
    with answering_system(settings, args.docs, Recorded(texts, run.get("answer_model", "recorded"))) as (rag, _, _):
        base = score_answers(rag, answerable, unanswerable, 5)["answer_items"]
        results["baseline"] = {"figures": figures(base), "moved": []}
        print(f"{'baseline':24} {_line(figures(base))}", file=sys.stderr)
        for name in args.only or RULES:
            with switched_off(*RULES[name]):
                rows = score_answers(rag, answerable, unanswerable, 5)["answer_items"]
            moved = [(b["question"], outcome(b), outcome(r)) for b, r in zip(base, rows, strict=True) if outcome(b) != outcome(r)]
            results[name] = {"figures": figures(rows), "moved": moved}
            print(f"{name:24} {_line(figures(rows))}  moved {len(moved)}", file=sys.stderr)
            for question, before, after in moved:
                print(f"    {before:>15} -> {after:15} {question[:90]}", file=sys.stderr)
    if args.json:
        print(json.dumps(results))
    return 0


def _line(f: dict[str, int]) -> str:
    return (
        f"right {f['right']}/{f['answerable']}  unwarned {f['unwarned']}/{f['answered']}  flagged right {f['flagged_right']}  "
        f"refused {f['refused_unanswerable']}/{f['unanswerable']}  false refusals {f['false_refusals']}"
    )


if __name__ == "__main__":
    sys.exit(main())
