"""Follow-up questions: does making them standalone find the right passage?

    .venv/bin/python bench/follow_ups.py [--out /tmp/follow-ups] [--json]
    .venv/bin/python bench/follow_ups.py --answers [--out /tmp/follow-ups] [--json]

Each item of bench/follow_ups.jsonl is a first question, the follow-up a user typed after it,
a short plausible answer to the first question, and the gold place of the follow-up's answer
(in the shipped documents or the Think Python PDF; pages are the PDF's 1-based indexes).
The folder (copies, never links: the indexer refuses symlinks) is indexed once, then for
each item the follow-up is searched two ways and hit@1 / hit@5 scored:

- `raw`: the follow-up as typed, what retrieval saw before follow-ups were rewritten;
- `rule`: conversation.make_standalone, the word rule (the model's own rewrite, measured here
  before, did no better and was deleted: docs/answer-results.md, tenth session).

Before that it counts the dev pool's questions (each written to stand alone) that the rule takes
for follow-ups when asked after another question: each would be searched with that question's words.

`--answers` asks instead, as a user would in the UI, with the default settings: the first
question, then the follow-up with the chat's history (`RAGSystem.history_after`), and scores
the follow-up's answer: shown (the model's text kept), set aside for the quotes, or refused;
whether a shown answer cites a passage at the gold place; and the reason an answer was set aside.

A trusted internal tool: it searches through `rag.retriever` directly.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EVAL = ROOT.parent / "shared" / "eval"
THINKPYTHON_PDF = EVAL / "thinkpython" / "thinkpython2.pdf"
PAIRS = ROOT / "bench" / "follow_ups.jsonl"


def build_folder(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for path in sorted((ROOT / "documents").iterdir()):
        if path.is_file():
            shutil.copy(path, out / path.name)
    shutil.copy(THINKPYTHON_PDF, out / THINKPYTHON_PDF.name)


def search_rank(rag: Any, question: str, item: dict[str, Any], k: int) -> int | None:
    from evaluation import gold_places, rank_of_first_hit

    return rank_of_first_hit(rag.retriever.retrieve(question, k=k), gold_places(item, None))


def score(rows: list[dict[str, Any]], way: str, k: int) -> dict[str, float]:
    from evaluation import retrieval_scores

    return retrieval_scores([r[f"{way}_rank"] for r in rows], k)


def run(rag: Any, items: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    from conversation import make_standalone

    rows = []
    for it in items:
        history = [{"role": "user", "content": it["first"]}, {"role": "assistant", "content": it["answer"]}]
        row: dict[str, Any] = {"id": it["id"], "follow_up": it["follow_up"]}
        ways = {"raw": it["follow_up"], "rule": make_standalone(it["follow_up"], history, rag.embedder) or it["follow_up"]}
        for way, question in ways.items():
            row[way] = question
            row[f"{way}_rank"] = search_rank(rag, question, it, k)
        rows.append(row)
    return rows


def ask(rag: Any, question: str, history: list[dict[str, str]]) -> Any:
    *_, answer = rag.stream_answer(question, history=history)  # the last update is the finished answer
    return answer


def answer_rows(rag: Any, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each follow-up asked after its first question in one chat; what the user was shown."""
    from answer_render import cited_numbers
    from evaluation import gold_places, rank_of_first_hit

    rows = []
    for it in items:
        first = ask(rag, it["first"], [])
        answer = ask(rag, it["follow_up"], rag.history_after([], first))
        cited = [answer.passages[n - 1] for n in cited_numbers(answer.text, len(answer.passages))]
        shown = not answer.refused and answer.set_aside is None and not answer.error
        status = "shown" if shown else "set aside" if answer.set_aside is not None else "refused" if answer.refused else "error"
        row = {
            "id": it["id"], "follow_up": it["follow_up"], "searched_as": answer.standalone_question, "status": status,
            "shown": shown, "set_aside": status == "set aside", "refused": status == "refused",
            "cites_gold": shown and rank_of_first_hit(cited, gold_places(it, None)) is not None,
            "notice": answer.notice, "text": answer.text if shown else (answer.set_aside or answer.text),
        }
        rows.append(row)
        gold = ", cites the gold place" if row["cites_gold"] else ""
        print(f"{it['id']}: {status}{gold} | searched as {row['searched_as']!r}\n    {' '.join(row['text'].split())[:300]}", flush=True)
    return rows


def answers_main(settings: Any, items: list[dict[str, Any]], out: Path, as_json: bool) -> int:
    from throwaway_index import ThrowawayIndex

    with ThrowawayIndex(settings, out) as index:
        index.rag.index()
        rows = answer_rows(index.rag, items)
    n = max(1, len(rows))
    summary = {k: round(sum(r[k] for r in rows) / n, 3) for k in ("shown", "cites_gold", "set_aside", "refused")}
    print(f"follow-up answers ({len(rows)}): shown {summary['shown']:.3f}  shown citing the gold place {summary['cites_gold']:.3f}"
          f"  set aside {summary['set_aside']:.3f}  refused {summary['refused']:.3f}")
    if as_json:
        print(json.dumps({"summary": summary, "rows": rows}))
    return 0


def dev_pool_questions() -> list[str]:
    """The dev pool's questions, each written to stand alone."""
    lines = (ROOT / "bench" / "dev_pool.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


def standalone_misread(questions: list[str]) -> list[str]:
    """The standalone `questions` that `looks_like_follow_up` takes for follow-ups when asked after
    another question: each would be searched with that question's words added."""
    from conversation import looks_like_follow_up

    earlier = [{"role": "user", "content": "What is a tuple?"}, {"role": "assistant", "content": "A tuple is a sequence."}]
    return [q for q in questions if looks_like_follow_up(q, earlier)]


def main(argv: list[str] | None = None) -> int:
    from config import load_settings
    from evaluation import load_qa
    from throwaway_index import ThrowawayIndex

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/follow-ups"), help="folder to build (emptied first)")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="end with one JSON line of every row")
    parser.add_argument("--answers", action="store_true", help="ask each pair in one chat and score the follow-up's answer")
    args = parser.parse_args(argv)

    standalone = dev_pool_questions()
    misread = standalone_misread(standalone)
    print(f"standalone questions taken for follow-ups: {len(misread)} of the dev pool's {len(standalone)}: {misread}")
    settings = load_settings(overrides={"llm_backend": "llamacpp"})
    items = load_qa(PAIRS)
    build_folder(args.out)
    if args.answers:
        return answers_main(settings, items, args.out, args.json)
    with ThrowawayIndex(settings, args.out) as index:
        report = index.rag.index()
        print(f"{len(index.rag.indexer.manifest.files)} files, {index.rag.keywords.count()} chunks; failed: {sorted(report.failed) or 'none'}")
        rows = run(index.rag, items, args.k)
    for r in rows:
        print(f"{r['id']}: raw {r['raw_rank']}, rule {r['rule_rank']} ({r['rule']!r})")
    for way in ("raw", "rule"):
        s = score(rows, way, args.k)
        print(f"{way}: hit@1 {s['hit@1']:.3f}  hit@{args.k} {s[f'hit@{args.k}']:.3f}  MRR {s['mrr']:.3f}  ({s['questions']} follow-ups)")
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
