"""Follow-up questions: does making them standalone find the right passage?

    .venv/bin/python bench/follow_ups.py [--out /tmp/follow-ups] [--llm] [--llm-outputs FILE] [--json]
    .venv/bin/python bench/follow_ups.py --answers [--out /tmp/follow-ups] [--json]

Each item of bench/follow_ups.jsonl is a first question, the follow-up a user typed after it,
a short plausible answer to the first question, and the gold place of the follow-up's answer
(in the shipped documents or the Think Python PDF; pages are the PDF's 1-based indexes).
The folder (copies, never links: the indexer refuses symlinks) is indexed once, then for
each item the follow-up is searched three ways and hit@1 / hit@5 scored:

- `raw`: the follow-up as typed, what retrieval saw before follow-ups were rewritten;
- `rule`: conversation.make_standalone with the word rule alone;
- `llm`: make_standalone with the embedded model's rewrite (falls back to the rule when the
  rewrite is rejected). `--llm` asks the model once per item and saves what it wrote to
  `--llm-outputs`; without `--llm`, a saved file is replayed, so the model is run once and
  the rewrite checks of two versions of the code are compared on the same outputs.

`--answers` asks instead, as a user would in the UI, with the default settings: the first
question, then the follow-up with the chat's history (`RAGSystem.history_after`), and scores
the follow-up's answer: shown (the model's text kept), set aside for the quotes, or refused;
whether a shown answer cites a passage at the gold place; and the reason an answer was set aside.

A trusted internal tool: it searches through `rag.retriever` directly.
"""

from __future__ import annotations

import argparse
import dataclasses
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


class RecordedLLM:
    """Replays saved rewrites by follow-up, or asks the real model and records what it wrote."""

    def __init__(self, outputs: dict[str, str], model: Any | None = None) -> None:
        self.outputs, self.model, self.question = outputs, model, ""

    def complete(self, messages: list[dict[str, str]], max_tokens: int | None = None) -> str:
        if self.model is not None:
            self.outputs[self.question] = self.model.complete(messages, max_tokens=max_tokens)
        return self.outputs.get(self.question, "")


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


def run(rag: Any, items: list[dict[str, Any]], llm: RecordedLLM | None, k: int) -> list[dict[str, Any]]:
    from conversation import make_standalone

    rule_settings = dataclasses.replace(rag.settings, follow_up_rewrite="rule")
    llm_settings = dataclasses.replace(rag.settings, follow_up_rewrite="llm")
    rows = []
    for it in items:
        history = [{"role": "user", "content": it["first"]}, {"role": "assistant", "content": it["answer"]}]
        row: dict[str, Any] = {"id": it["id"], "follow_up": it["follow_up"]}
        ways: dict[str, str] = {"raw": it["follow_up"]}
        rule = make_standalone(it["follow_up"], history, None, rag.embedder, rule_settings)
        ways["rule"] = rule.question if rule else it["follow_up"]
        if llm is not None:
            llm.question = it["follow_up"]
            rewrite = make_standalone(it["follow_up"], history, llm, rag.embedder, llm_settings)
            ways["llm"] = rewrite.question if rewrite else it["follow_up"]
            row["llm_method"] = rewrite.method if rewrite else "none"
            row["llm_output"] = llm.outputs.get(it["follow_up"], "")
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
    from evaluation import ThrowawayIndex

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


def main(argv: list[str] | None = None) -> int:
    from config import load_settings
    from evaluation import ThrowawayIndex, load_qa

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/follow-ups"), help="folder to build (emptied first)")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--llm", action="store_true", help="ask the embedded model for each rewrite (and save its outputs)")
    parser.add_argument("--llm-outputs", type=Path, default=Path("/tmp/follow-ups-llm.json"), help="saved model rewrites")
    parser.add_argument("--json", action="store_true", help="end with one JSON line of every row")
    parser.add_argument("--answers", action="store_true", help="ask each pair in one chat and score the follow-up's answer")
    args = parser.parse_args(argv)

    settings = load_settings(overrides={"llm_backend": "llamacpp"})
    items = load_qa(PAIRS)
    build_folder(args.out)
    if args.answers:
        return answers_main(settings, items, args.out, args.json)
    llm: RecordedLLM | None = None
    if args.llm:
        llm = RecordedLLM({})
    elif args.llm_outputs.is_file():
        llm = RecordedLLM(json.loads(args.llm_outputs.read_text()))
    with ThrowawayIndex(settings, args.out) as index:
        report = index.rag.index()
        print(f"{len(index.rag.indexer.manifest.files)} files, {index.rag.keywords.count()} chunks; failed: {sorted(report.failed) or 'none'}")
        if args.llm and llm is not None:
            llm.model = index.rag.llm
        rows = run(index.rag, items, llm, args.k)
    if args.llm and llm is not None:
        args.llm_outputs.write_text(json.dumps(llm.outputs, indent=1))
    for r in rows:
        print(f"{r['id']}: raw {r['raw_rank']}, rule {r['rule_rank']} ({r['rule']!r})"
              + (f", llm {r['llm_rank']} [{r['llm_method']}] ({r['llm']!r})" if "llm" in r else ""))
    for way in ("raw", "rule", "llm"):
        if rows and f"{way}_rank" in rows[0]:
            s = score(rows, way, args.k)
            print(f"{way}: hit@1 {s['hit@1']:.3f}  hit@{args.k} {s[f'hit@{args.k}']:.3f}  MRR {s['mrr']:.3f}  ({s['questions']} follow-ups)")
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
