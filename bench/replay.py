"""Replay recorded model answers through today's answer path: judge changes measured in a minute, not an hour.

    .venv/bin/python bench/replay.py RUN.json --qa QUESTIONS.jsonl --docs DIR [--data DIR] [--json]

RUN.json is the output of `main.py eval --qa … --answers --json` (or `bench/dev_pool.py
--answers --json`): each item holds the question and the model's words as it wrote them
(`draft`; runs recorded before it was kept hold only `model_text`, the text after tidying, so
for them a change to answer_tidy.py is not measured). The documents are indexed again (through the
evaluation's embedding cache under --data, so a dev-pool run's cache makes this quick), and
every question is asked again with a stand-in model that writes the recorded text, so the
retrieval, the quotes, the relevance gate and the judge all run as they do now; only the
model's words are fixed. With greedy decoding the model writes the same words for the same
prompt, so a change that leaves the prompt alone (a judge, a threshold) is measured exactly;
one that changes the prompt is not, and needs a real run. A draft the model was stopped in (at a
sentence the checks found wrong, free_answer.py) is recorded cut there: a judge loosened since then
is measured on the cut draft, not on what the model would have gone on to write.

Prints the same figures as the evaluation (answer shown right, unwarned wrong, refusals), and
with --json the whole result.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.answer import answering_system  # noqa: E402
from config import load_settings  # noqa: E402
from evaluation import is_answerable, load_qa, score_answers  # noqa: E402
from llm_handler import LLMBackend, make_llm_backend  # noqa: E402


class Recorded(LLMBackend):
    """Writes the recorded text of the question found in the prompt's last message; a yes-or-no
    judgement (the second judge of rag_system) goes to `judge`, the real model, or is "yes" without one."""

    def __init__(self, texts: dict[str, str], name: str, judge: LLMBackend | None = None) -> None:
        self.texts, self.name, self.judge = texts, name, judge

    def yes_probability(self, messages: list[dict[str, str]]) -> float:
        return self.judge.yes_probability(messages) if self.judge is not None else 1.0

    def stream(self, messages: list[dict[str, str]], max_tokens: int | None = None, schema: Any = None) -> Iterator[str]:
        prompt = messages[-1]["content"]
        found = [q for q in self.texts if q in prompt]
        if found:
            yield self.texts[max(found, key=len)]


def recorded_texts(run: dict[str, Any]) -> dict[str, str]:
    """Question -> what the model wrote: its draft, or for runs recorded before drafts were kept, the tidied text."""
    return {r["question"]: (r["draft"] if r.get("draft") is not None else r["model_text"]) or "" for r in run["answer_items"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="an evaluation's JSON output, with answer_items")
    parser.add_argument("--qa", type=Path, required=True, help="the questions it asked (JSONL)")
    parser.add_argument("--docs", type=Path, required=True, help="the documents folder it indexed")
    parser.add_argument("--data", type=Path, help="data folder whose eval-cache holds the embeddings (default: beside --docs)")
    parser.add_argument("--no-judge", action="store_true", help="no real model for the second judge (it then always says yes)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    run = json.loads(args.run.read_text(encoding="utf-8"))
    texts = recorded_texts(run)
    items = load_qa(args.qa)
    settings = load_settings(overrides={"docs_dir": args.docs, "db_dir": args.data or args.docs.parent / "data"})
    judge = None if args.no_judge else make_llm_backend(settings)
    with answering_system(settings, args.docs, Recorded(texts, run.get("answer_model", "recorded"), judge)) as (rag, _, _):
        result = score_answers(rag, [i for i in items if is_answerable(i)], [i for i in items if not is_answerable(i)], 5)
    rows = result["answer_items"]
    answerable = [r for r in rows if r["answerable"]]
    answered = [r for r in answerable if not r["refused"]]
    unwarned = [r for r in answered if not r["contains"] and not r["flagged"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    print(
        f"shown right {sum(r['contains'] for r in answerable)}/{len(answerable)}; unwarned wrong {len(unwarned)}/{len(answered)}; "
        f"unanswerable refused {sum(r['refused'] for r in unanswerable)}/{len(unanswerable)}; "
        f"false refusals {sum(r['refused'] for r in answerable)}/{len(answerable)}; set aside {sum(r['set_aside'] for r in rows)}",
        file=sys.stderr,
    )
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
