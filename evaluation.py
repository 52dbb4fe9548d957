"""Measure retrieval and answers on real data, through the same code path that answers users.

`eval --beir DIR` indexes a BEIR corpus into a throwaway data folder (never the user's),
ranks every judged query with the real Retriever, scores documents by their best chunk,
and reports nDCG@10, Recall@10/100 and MRR@10 computed by ranx.
`eval --qa FILE --docs DIR` indexes DIR the same way and checks, for each question, where
the first passage from its gold file (and gold pages, lines or phrase, where given) stands
among the top-k sources: hit@1, hit@k and MRR, overall and per file, so a folder of many
documents is scored file by file. `--answers` also generates and scores answers.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

from answer_render import is_refusal
from config import Settings
from doc_types import ConvertedDocument, Section
from errors import ConfigError
from throwaway_index import ThrowawayIndex

log = logging.getLogger(__name__)


def load_beir(folder: Path, split: str) -> tuple[dict[str, dict[str, str]], dict[str, str], dict[str, dict[str, int]]]:
    corpus_file, queries_file, qrels_file = folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / f"{split}.tsv"
    for f in (corpus_file, queries_file, qrels_file):
        if not f.is_file():
            raise ConfigError(f"{f} is missing: --beir needs a BEIR folder with corpus.jsonl, queries.jsonl and qrels/{split}.tsv")
    corpus = {}
    with open(corpus_file, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                d = json.loads(line)
                corpus[str(d["_id"])] = {"title": d.get("title", ""), "text": d.get("text", "")}
    queries = {}
    with open(queries_file, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                q = json.loads(line)
                queries[str(q["_id"])] = q["text"]
    qrels: dict[str, dict[str, int]] = {}
    with open(qrels_file, encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader)
        if header and header[0].isdigit():  # no header line
            fh.seek(0)
            reader = csv.reader(fh, delimiter="\t")
        for row in reader:
            if len(row) >= 3 and int(row[2]) > 0:
                qrels.setdefault(str(row[0]), {})[str(row[1])] = int(row[2])
    return corpus, queries, qrels


def beir_documents(corpus: dict[str, dict[str, str]]) -> list[ConvertedDocument]:
    """Each BEIR document as a converted document whose source is its id; the title leads its text."""
    docs = []
    for doc_id, d in corpus.items():
        text = f"{d['title']}\n\n{d['text']}".strip() if d["title"] else d["text"]
        docs.append(ConvertedDocument(source=doc_id, title=d["title"], kind="text", sections=[Section(text=text, start_line=1)]))
    return docs


def percentile(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(values, q)) if values else 0.0


# Candidates per retriever when ranking documents: a document has several chunks, and
# Recall@100 needs 100 documents in the run, more than the usual CANDIDATE_K chunks give.
BEIR_DEPTH = 300
BEIR_METRICS = ["ndcg@10", "recall@10", "recall@100", "mrr@10"]


def documents_by_best_chunk(retriever: Any, ranked: list[tuple[str, float, dict[str, int]]]) -> dict[str, float]:
    """Document-level run: a document's score is its best chunk's (the chunk ids map to sources)."""
    chunks = retriever.keywords.get_chunks([cid for cid, _, _ in ranked])
    scores: dict[str, float] = {}
    for cid, score, _ in ranked:
        chunk = chunks.get(cid)
        if chunk is not None and chunk.source not in scores:
            scores[chunk.source] = score
    return scores


def beir_slice(corpus: dict[str, Any], judged: list[str], qrels: dict[str, dict[str, int]], limit: int) -> tuple[dict[str, Any], list[str]]:
    """The first `limit` judged queries and a corpus of about 10 documents per query: theirs, then others."""
    judged = judged[:limit]
    keep = [d for q in judged for d in qrels[q] if d in corpus]
    keep = list(dict.fromkeys(keep))
    extra = [d for d in corpus if d not in set(keep)][: max(0, limit * 10 - len(keep))]
    return {d: corpus[d] for d in keep + extra}, judged


def evaluate_beir(
    settings: Settings, folder: Path, split: str = "train", mode: str | None = None, limit: int | None = None, embedder: Any = None
) -> dict[str, Any]:
    """Index a BEIR corpus into a throwaway index and score one retrieval mode."""
    return evaluate_beir_modes(settings, folder, [mode or settings.retrieval_mode], split, limit, embedder)[0]


def evaluate_beir_modes(
    settings: Settings, folder: Path, modes: list[str], split: str = "train", limit: int | None = None, embedder: Any = None
) -> list[dict[str, Any]]:
    """Score several retrieval modes on one throwaway index (indexing is the slow part).

    Query latency is the time of Retriever.rank (embedding, both searches, fusion);
    mapping chunks to documents for scoring is left out, as it is not part of answering.
    """
    from ranx import Qrels, Run, evaluate

    corpus, queries, qrels = load_beir(folder, split)
    judged = [q for q in queries if q in qrels]
    if limit:
        corpus, judged = beir_slice(corpus, judged, qrels, limit)
    results = []
    with ThrowawayIndex(settings, embedder=embedder) as index:
        started = time.perf_counter()
        index.rag.indexer.add_converted(beir_documents(corpus))
        index_s = time.perf_counter() - started
        retriever = index.rag.retriever
        depth = max(settings.candidate_k, BEIR_DEPTH)
        for mode in modes:
            run: dict[str, dict[str, float]] = {}
            latencies = []
            for qid in judged:
                t = time.perf_counter()
                ranked = retriever.rank(queries[qid], mode=mode, depth=depth)
                latencies.append((time.perf_counter() - t) * 1000)
                run[qid] = documents_by_best_chunk(retriever, ranked) or {"__none__": 0.0}
            metrics = evaluate(Qrels({q: qrels[q] for q in judged}), Run(run), BEIR_METRICS)
            results.append({
                **{k: round(float(v), 4) for k, v in metrics.items()},
                "mode": mode,
                "queries": len(judged),
                "docs": len(corpus),
                "chunks": index.rag.keywords.count(),
                "index_s": round(index_s, 2),
                "embeddings_reused": index.cache.reused,
                "query_ms_p50": round(percentile(latencies, 50), 2),
                "query_ms_p95": round(percentile(latencies, 95), 2),
            })
    return results


def load_qa(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ConfigError(f"QA file {path} does not exist")
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@dataclasses.dataclass(frozen=True)
class GoldPlace:
    """Where an answer stands: a file, and within it pages, a line range or a phrase when given.

    The phrase (`text`) places an answer in a file that has neither pages nor lines, such as a DOCX.
    """

    source: str | None
    pages: frozenset[int] = frozenset()
    lines: tuple[int, int] | None = None
    text: str | None = None

    def holds(self, passage: Any) -> bool:
        """A passage hits when it comes from the file and overlaps the pages or lines, and holds the phrase."""
        if self.source is not None and passage.source != self.source:
            return False
        if self.pages and not self.pages & set(passage.pages):
            return False
        if self.lines is not None:
            span = passage.lines
            if span is None or span[1] < self.lines[0] or span[0] > self.lines[1]:
                return False
        return self.text is None or self.text.lower() in passage.text.lower()


def is_answerable(item: dict[str, Any]) -> bool:
    """An item names where its answer stands; "unanswerable" items name nothing."""
    if item.get("kind") == "unanswerable":
        return False
    return any(item.get(key) for key in ("pages", "lines", "source", "file", "places"))


def gold_places(item: dict[str, Any], default_source: str | None) -> list[GoldPlace]:
    """An item's places: its `places` list (any one is a hit), or one place from its own fields.

    A place's file is its `source` (or `file`), a path relative to the documents folder;
    without one it is `default_source`: the one document a set like thinkpython/dev.jsonl is about.
    """
    def place(fields: dict[str, Any]) -> GoldPlace:
        lines = fields.get("lines")
        return GoldPlace(
            source=fields.get("source") or fields.get("file") or default_source,
            pages=frozenset(fields.get("pages") or ()),
            lines=(int(lines[0]), int(lines[-1])) if lines else None,
            text=fields.get("text"),
        )

    return [place(p) for p in item["places"]] if item.get("places") else [place(item)]


def default_source_for(items: list[dict[str, Any]], sources: list[str], source_file: str | None, qa_name: str) -> str | None:
    """The file that items naming no source are about: --source-file, else the folder's only document."""
    if source_file:
        if source_file not in sources:
            raise ConfigError(f"--source-file {source_file} is not an indexed document of the folder (it has {len(sources)})")
        return source_file
    unnamed = [it for it in items if is_answerable(it) and not any(p.source for p in gold_places(it, None))]
    if not unnamed or len(sources) == 1:
        return sources[0] if len(sources) == 1 else None
    raise ConfigError(
        f"{len(unnamed)} questions in {qa_name} name no source file and the folder holds {len(sources)} documents: "
        "pass --source-file NAME (the file they are about), or give each question a \"source\""
    )


def rank_of_first_hit(passages: list[Any], places: list[GoldPlace]) -> int | None:
    return next((i for i, p in enumerate(passages, start=1) if any(place.holds(p) for place in places)), None)


def retrieval_scores(ranks: list[int | None], k: int) -> dict[str, Any]:
    """hit@1, hit@k and MRR of the 1-based ranks of each question's first right passage (None: not found)."""
    n = max(1, len(ranks))
    return {
        "questions": len(ranks),
        "hit@1": round(sum(r == 1 for r in ranks) / n, 4),
        f"hit@{k}": round(sum(r is not None and r <= k for r in ranks) / n, 4),
        "mrr": round(sum(1.0 / r for r in ranks if r) / n, 4),
    }


def score_retrieval(
    rag: Any, items: list[dict[str, Any]], k: int = 5, mode: str | None = None, source_file: str | None = None, qa_name: str = "the QA file"
) -> dict[str, Any]:
    """Retrieve for every answerable item on an indexed RAGSystem; hit@1, hit@k, MRR overall and per gold file.

    A question counts towards the file of its first place. The overall numbers are over all
    questions, so a folder's big document weighs as much as its questions do.
    """
    answerable = [it for it in items if is_answerable(it)]
    default = default_source_for(items, sorted(rag.indexer.manifest.files), source_file, qa_name)
    latencies, rows = [], []
    for it in answerable:
        places = gold_places(it, default)
        t = time.perf_counter()
        passages = rag.retriever.retrieve(it["question"], k=k, mode=mode)
        latencies.append((time.perf_counter() - t) * 1000)
        rows.append({"id": it.get("id"), "source": places[0].source, "rank": rank_of_first_hit(passages, places)})
    overall = retrieval_scores([r["rank"] for r in rows], k)
    by_source = {
        str(source): retrieval_scores([r["rank"] for r in rows if r["source"] == source], k)
        for source in sorted({r["source"] for r in rows}, key=str)
    }
    out: dict[str, Any] = {
        **{key: value for key, value in overall.items() if key != "questions"},
        # the names before results were scored per file; a hit was then any passage on a gold page
        "page_hit@1": overall["hit@1"], f"page_hit@{k}": overall[f"hit@{k}"], "page_mrr": overall["mrr"],
        "items": len(items),
        "answerable": len(answerable),
        "by_source": by_source,
        "query_ms_p50": round(percentile(latencies, 50), 2),
        "misses": [r["id"] for r in rows if r["rank"] is None],
    }
    if k != 5:
        out.setdefault("hit@5", out[f"hit@{k}"])
        out.setdefault("page_hit@5", out[f"hit@{k}"])
    return out


def evaluate_qa(
    settings: Settings, qa_file: Path, docs_dir: Path, k: int = 5, answers: bool = False, mode: str | None = None,
    limit: int | None = None, embedder: Any = None, source_file: str | None = None, in_chat: bool = False,
) -> dict[str, Any]:
    """Index the folder into a throwaway index, then score retrieval (and, with `answers`, the answers) on the QA file;
    `in_chat` asks the questions one after another in one chat (score_answers)."""
    items = load_qa(qa_file)[: limit or None]
    if not docs_dir.is_dir():
        raise ConfigError(f"--docs {docs_dir} is not a folder")
    with ThrowawayIndex(settings, docs_dir, embedder) as index:
        started = time.perf_counter()
        index.rag.index()
        index_s = time.perf_counter() - started
        out = score_retrieval(index.rag, items, k, mode, source_file, str(qa_file))
        out["index_s"] = round(index_s, 2)
        if answers:
            answerable = [it for it in items if is_answerable(it)]
            out.update(score_answers(index.rag, answerable, [it for it in items if not is_answerable(it)], k, in_chat))
    return out


def score_answers(
    rag: Any, answerable: list[dict[str, Any]], unanswerable: list[dict[str, Any]], k: int, in_chat: bool = False
) -> dict[str, Any]:
    """Answer accuracy (must_contain), refusals where the documents have no answer, false
    refusals where they do, and how well the checks catch wrong answers.

    An answer counts as a refusal when docqa refused (the relevance gate, or the model
    declining) or its text reads as one. `must_contain` is checked on the answer shown
    (the model's text, or the quotes when the checks set it aside), never on the passages
    listed under a refusal; `model_contains` on the model's own text. A wrong model answer
    is "flagged" when it was set aside or has sentences marked unsupported: the detector's
    recall is the share of wrong model answers flagged, its precision the share of flagged
    ones that were wrong. "Unwarned wrong" answers are shown, wrong, with no flag at all.

    `in_chat`: each question is asked in one chat after the ones before it and docqa's answers,
    as a user asks several unrelated questions in a row; the earlier turns must not make the
    answers worse.
    """
    rows, history = [], []
    for item in answerable + unanswerable:
        row, answer = _answer_row(rag, item, k, history if in_chat else None)
        rows.append(row)
        history = rag.history_after(history, answer) if in_chat else history
    ans = [r for r in rows if r["answerable"]]
    un = [r for r in rows if not r["answerable"]]
    answered = [r for r in ans if not r["refused"]]
    wrong = [r for r in answered if not r["model_contains"]]
    flagged = [r for r in answered if r["flagged"]]
    checked = sum(r["sentences_checked"] for r in answered)
    supported = sum(r["sentences_checked"] - r["unsupported"] for r in answered)

    def share(part: int, whole: int) -> float | None:
        return round(part / whole, 4) if whole else None

    return {
        "answer_contains": round(sum(r["contains"] for r in ans) / max(1, len(ans)), 4),
        "model_contains": round(sum(r["model_contains"] for r in ans) / max(1, len(ans)), 4),
        "refusal_rate": round(sum(r["refused"] for r in un) / max(1, len(un)), 4),
        "false_refusal_rate": round(sum(r["refused"] for r in ans) / max(1, len(ans)), 4),
        "set_aside": sum(r["set_aside"] for r in answered),
        "unwarned_wrong_share": share(sum(1 for r in answered if not r["contains"] and not r["flagged"]), len(answered)),
        "detector_recall": share(sum(r["flagged"] for r in wrong), len(wrong)),
        "detector_precision": share(sum(not r["model_contains"] for r in flagged), len(flagged)),
        "supported_sentence_share": share(supported, checked),
        "sentences_checked": checked,
        "answer_model": next((r["model"] for r in rows if r["model"]), ""),
        "quotes_s_p50": _p50(r["quotes_s"] for r in rows),
        "first_token_s_p50": _p50(r["first_token_s"] for r in rows),
        "answer_s_p50": round(percentile([r["total_s"] for r in rows], 50), 2),
        "answer_s_p95": round(percentile([r["total_s"] for r in rows], 95), 2),
        "answer_items": rows,
    }


def _p50(values: Any) -> float | None:
    present = [v for v in values if v is not None]
    return round(percentile(present, 50), 2) if present else None


_QUOTE_MARK = re.compile(r"^> ?(\\(?=>))?", re.M)


def read_as_shown(markdown: str) -> str:
    """The answer as a reader sees it rendered: a quote's ">" marks gone, its lines joined with one space."""
    return " ".join(_QUOTE_MARK.sub("", markdown).split())


def _answer_row(rag: Any, item: dict[str, Any], k: int, history: list[dict[str, str]] | None = None) -> tuple[dict[str, Any], Any]:
    """One question asked as a user would, streamed: when the quotes came, what was shown, what was flagged;
    the row and the answer."""
    started = time.perf_counter()
    quotes_s = None
    answer = None
    for answer in rag.stream_answer(item["question"], k=k, history=history):
        if answer.quotes and quotes_s is None:
            quotes_s = time.perf_counter() - started
    assert answer is not None
    refused = answer.refused or is_refusal(answer.text)
    wanted = [s.lower() for s in item.get("must_contain", [])]
    model_text = answer.set_aside if answer.set_aside is not None else answer.text

    def holds(text: str) -> bool:
        return not refused and all(s in read_as_shown(text).lower() for s in wanted)

    return {
        "id": item.get("id"),
        "question": item["question"],
        "searched_as": answer.standalone_question,  # in a chat: the question was read as a follow-up and rewritten
        "must_contain": item.get("must_contain", []),
        "answer": answer.text,
        "model_text": model_text,
        "draft": answer.draft,  # the model's own words: bench/replay.py replays them through today's checks
        "quotes": [q.text for q in answer.quotes],
        "answerable": is_answerable(item),
        "refused": refused,
        "kind": answer.kind,
        "contains": holds(answer.text),
        "model_contains": holds(model_text),
        "set_aside": answer.set_aside is not None,
        "flagged": answer.set_aside is not None or bool(answer.unsupported),
        "unsupported": len(answer.unsupported),
        "unsupported_sentences": answer.unsupported,
        "sentences_checked": answer.sentences_checked,
        "similarity": answer.relevance.similarity,
        "doubted": answer.relevance.model_decides,  # the relevance rules left it to the model
        "quotes_answer": answer.relevance.quotes_answer,  # the model's p(yes) that the quotes answer (a flagged answer)
        "model": answer.model,
        "quotes_s": quotes_s,
        "first_token_s": answer.timings.first_token_s,
        "total_s": time.perf_counter() - started,
        "notice": answer.notice,
    }, answer


def print_table(result: dict[str, Any]) -> None:
    width = max(len(k) for k in result)
    for key, value in result.items():
        if key == "by_source":
            for source, scores in value.items():
                print(f"{'  ' + source:<{width}}  " + "  ".join(f"{name} {v}" for name, v in scores.items()))
        else:
            print(f"{key:<{width}}  {value}")


def run_eval_command(settings: Settings, args: argparse.Namespace, embedder: Any = None) -> int:
    """`main.py eval`; `embedder` is made from the settings when not given."""
    if bool(args.beir) == bool(args.qa):
        raise ConfigError("eval needs exactly one of --beir DIR or --qa FILE --docs DIR")
    if args.beir:
        result = evaluate_beir(settings, Path(args.beir), args.split, args.mode, args.limit, embedder)
    else:
        if not getattr(args, "docs", None):
            raise ConfigError("eval --qa FILE needs --docs DIR: the folder holding the documents the questions are about")
        result = evaluate_qa(
            settings, Path(args.qa), Path(args.docs), args.k, args.answers, args.mode, args.limit, embedder,
            getattr(args, "source_file", None), getattr(args, "in_chat", False),
        )
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)
    sys.stdout.flush()
    return 0
