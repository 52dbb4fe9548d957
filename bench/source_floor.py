"""Which passages would the source list hide? The thresholds of answer_sources.py, measured on gold places.

    .venv/bin/python bench/source_floor.py [--out /tmp/source-floor] [--json] [--rows FILE]

No model writes anything here. Every question of three sets with gold places is searched as
`ask` searches it (its focus, its parts, its rare terms), and each retrieved passage is marked
gold (it holds the question's gold place, evaluation.GoldPlace) or not. For each candidate
pair (SOURCE_MIN_RATIO, SOURCE_MIN_SCORE) the table counts the gold passages the list would
hide, which must be none, and the other passages it would hide.

The sets: ../shared/eval/thinkpython/dev.jsonl on the Think Python PDF, bench/shipped_dev.jsonl
on the shipped documents, bench/system_docs.jsonl on four manuals this machine ships
(bench/system_docs.py). Each is searched on a folder of its own documents, and all three on
one mixed folder of every document, where a passage from another set's document ("foreign")
is noise for sure; `foreign hidden` counts those. Embeddings are cached in DB_DIR/eval-cache.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from answer_sources import best_possible_score  # noqa: E402
from config import load_settings  # noqa: E402
from evaluation import gold_places, is_answerable, load_qa  # noqa: E402
from throwaway_index import ThrowawayIndex  # noqa: E402

EVAL = ROOT.parent / "shared" / "eval"
THINKPYTHON_PDF = EVAL / "thinkpython" / "thinkpython2.pdf"
SETS = {
    "thinkpython": (EVAL / "thinkpython" / "dev.jsonl", [THINKPYTHON_PDF]),
    "shipped": (ROOT / "bench" / "shipped_dev.jsonl", sorted((ROOT / "documents").iterdir())),
    "system": (ROOT / "bench" / "system_docs.jsonl", [
        Path("/usr/share/doc/zlib1g-dev/examples/zlib_how.html"),
        Path("/usr/share/doc/base-passwd/users-and-groups.html"),
        Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),
        Path("/usr/share/doc/nodejs/api/dgram.md"),
    ]),
}
RATIOS = [0.3, 0.4, 0.45, 0.5, 0.55, 0.6]
FLOORS = [0.0, 0.3, 0.4, 0.5]


@dataclass
class Row:
    """One retrieved passage of one question."""

    folder: str
    question_set: str
    id: str
    rank: int
    ratio: float  # score / the best passage's score
    norm: float  # score / the best a chunk can get (answer_sources.best_possible_score)
    gold: bool
    foreign: bool  # from a document of another question set (mixed folder only)


def search_rows(rag: Any, folder: str, question_set: str, items: list[dict[str, Any]], own: set[str], top: float) -> list[Row]:
    """Retrieve for every item as RAGSystem.stream_answer does, and mark each passage."""
    rows = []
    for item in items:
        places = gold_places(item, THINKPYTHON_PDF.name) if is_answerable(item) else []
        search, _, _ = rag.retriever.focus(item["question"])
        passages = rag.retriever.retrieve(search, rare=rag.retriever.rare_terms(search))
        best = max((p.score for p in passages), default=1.0) or 1.0
        for rank, p in enumerate(passages, start=1):
            rows.append(Row(
                folder, question_set, str(item.get("id")), rank, p.score / best, p.score / top,
                any(place.holds(p) for place in places), p.source not in own,
            ))
    return rows


def weak(row: Row, ratio: float, floor: float) -> bool:
    """As answer_sources.weak_flags decides it; the best passage (ratio 1) is never weak."""
    return row.ratio < 1.0 and (row.ratio < ratio or row.norm < floor)


def table(rows: list[Row]) -> list[dict[str, Any]]:
    out = []
    for ratio in RATIOS:
        for floor in FLOORS:
            hidden = [r for r in rows if weak(r, ratio, floor)]
            out.append({
                "ratio": ratio, "floor": floor,
                "gold_hidden": sum(r.gold for r in hidden), "gold": sum(r.gold for r in rows),
                "other_hidden": sum(not r.gold for r in hidden), "other": sum(not r.gold for r in rows),
                "foreign_hidden": sum(r.foreign for r in hidden), "foreign": sum(r.foreign for r in rows),
            })
    return out


def index_folder(settings: Any, out: Path, name: str, files: list[Path]) -> ThrowawayIndex:
    docs = out / name
    shutil.rmtree(docs, ignore_errors=True)
    docs.mkdir(parents=True)
    for path in files:
        shutil.copyfile(path, docs / path.name)  # copies: the indexer refuses symlinks
    index = ThrowawayIndex(settings, docs)
    index.rag.index()
    return index


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/source-floor"), help="folder for the copies")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--rows", type=Path, help="also write every passage's row here (JSON lines)")
    args = parser.parse_args()
    missing = [str(p) for _, files in SETS.values() for p in files if not p.is_file()]
    if missing:
        print("Missing (see bench/system_docs.py for the packages): " + "; ".join(missing), file=sys.stderr)
        return 2
    settings = load_settings()
    top = best_possible_score(settings)
    rows: list[Row] = []
    folders = {name: [name] for name in SETS} | {"mixed": list(SETS)}
    for folder, set_names in folders.items():
        files = [p for name in set_names for p in SETS[name][1]]
        with index_folder(settings, args.out, folder, files) as index:
            for name in set_names:
                own = {p.name for p in SETS[name][1]}
                rows += search_rows(index.rag, folder, name, load_qa(SETS[name][0]), own, top)
    gold = [r for r in rows if r.gold]
    result = {
        "questions": len({(r.folder, r.id) for r in rows}),
        "passages": len(rows),
        "gold_min_ratio": round(min(r.ratio for r in gold), 4),
        "gold_min_norm": round(min(r.norm for r in gold), 4),
        "table": table(rows),
        "by_folder": {f: table([r for r in rows if r.folder == f]) for f in folders},
    }
    if args.rows:
        args.rows.write_text("".join(json.dumps(r.__dict__) + "\n" for r in rows), encoding="utf-8")
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['questions']} questions, {result['passages']} passages; lowest gold passage: "
          f"ratio {result['gold_min_ratio']}, normalised score {result['gold_min_norm']}")
    print("ratio floor  gold hidden  other hidden  foreign hidden (mixed folder)")
    for t in result["table"]:
        print(f"{t['ratio']:5} {t['floor']:5}  {t['gold_hidden']:4}/{t['gold']:<6} {t['other_hidden']:5}/{t['other']:<7} "
              f"{t['foreign_hidden']:5}/{t['foreign']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
