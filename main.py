"""docqa command line: index, ask, serve, mcp, stats, config, check, eval, analyze.

A thin layer over RAGSystem: it parses flags into settings, calls the API, and turns
docqa's errors into one-line messages with the fix (exit status 2), never a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from config import Settings, describe_settings, load_settings
from errors import DocqaError, LockError, describe_error

if TYPE_CHECKING:
    from index_status import IndexStatus
    from rag_system import Answer, RAGSystem

log = logging.getLogger("docqa")


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a flag given before the subcommand is not reset by the subcommand's default.
    common.add_argument("--docs", metavar="DIR", default=argparse.SUPPRESS, help="documents folder (DOCS_DIR)")
    common.add_argument("--db", metavar="DIR", default=argparse.SUPPRESS, help="data folder for the index (DB_DIR)")
    common.add_argument("--log-level", metavar="LEVEL", default=argparse.SUPPRESS, help="DEBUG, INFO, WARNING or ERROR (LOG_LEVEL)")

    parser = argparse.ArgumentParser(
        prog="python main.py",
        description="docqa: ask questions about your own documents, answered locally with citations.",
        parents=[common],
    )
    sub = parser.add_subparsers(dest="command")

    serve = sub.add_parser("serve", parents=[common], help="index incrementally, then serve the web UI (default)")
    serve.add_argument("--host", help="address to listen on (GRADIO_SERVER_NAME)")
    serve.add_argument("--port", type=int, help="port (GRADIO_SERVER_PORT)")
    serve.add_argument("--reindex", action="store_true", help="rebuild the index from scratch first")

    index = sub.add_parser("index", parents=[common], help="index the documents folder, then exit")
    index.add_argument("--reindex", action="store_true", help="rebuild the index from scratch")
    index.add_argument("--json", action="store_true", help="print the report as one JSON object")

    ask = sub.add_parser("ask", parents=[common], help="answer one question and print its sources")
    ask.add_argument("question")
    ask.add_argument("--k", type=int, help="passages to use (TOP_K)")
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    ask.add_argument("--where", action="append", metavar="FIELD=VALUE", help="filter: source=FILE or ext=pdf (repeatable)")
    ask.add_argument("--mode", choices=["hybrid", "vector", "bm25"], help="retrieval mode (RETRIEVAL_MODE)")
    ask.add_argument("--no-index", action="store_true", help="skip the incremental index update before answering")

    stats = sub.add_parser("stats", parents=[common], help="what is indexed, what failed and why")
    stats.add_argument("--json", action="store_true")
    stats.add_argument("--files", action="store_true", help="list every file: type, pages or lines, chunks, when indexed, status")

    sub.add_parser("config", parents=[common], help="print the effective settings and where each came from")
    sub.add_parser("mcp", parents=[common], help="index incrementally, then serve MCP tools over stdio (for MCP clients)")

    analyze = sub.add_parser("analyze", parents=[common], help="profile the documents folder and recommend chunking settings")
    analyze.add_argument("--json", action="store_true", help="print the profile as one JSON object")

    check = sub.add_parser("check", parents=[common], help="compare manifest, vector store and keyword index")
    check.add_argument("--repair", action="store_true", help="re-index only the affected files")
    check.add_argument("--json", action="store_true")

    ev = sub.add_parser("eval", parents=[common], help="measure retrieval (BEIR) or answers (QA file)")
    ev.add_argument("--beir", metavar="DIR", help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv")
    ev.add_argument("--split", default="train", help="qrels split (train or test)")
    ev.add_argument("--qa", metavar="FILE", help="QA file as thinkpython/dev.jsonl; a line may name its \"source\" file, \"lines\" or \"text\"")
    ev.add_argument(
        "--source-file", metavar="NAME", help="--qa: the document (relative to --docs) that questions naming no source are about"
    )
    ev.add_argument("--k", type=int, default=5, help="sources per question for --qa")
    ev.add_argument("--answers", action="store_true", help="also generate and score answers (--qa)")
    ev.add_argument(
        "--in-chat", action="store_true", help="--answers: ask the questions in one chat, each after the earlier ones and their answers"
    )
    ev.add_argument("--mode", choices=["hybrid", "vector", "bm25"], help="retrieval mode")
    ev.add_argument("--limit", type=int, help="use only the first N queries or documents (quick runs)")
    ev.add_argument("--json", action="store_true")
    return parser


def parse_where(items: list[str] | None) -> dict[str, Any] | None:
    if not items:
        return None
    where: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in ("source", "ext"):
            raise DocqaError(f"--where {item!r}: use source=FILE or ext=TYPE (e.g. --where ext=pdf)")
        value = value.lstrip(".") if key == "ext" else value
        if key in where:
            existing = where[key] if isinstance(where[key], list) else [where[key]]
            where[key] = existing + [value]
        else:
            where[key] = value
    return where


def settings_from_args(args: argparse.Namespace) -> Settings:
    overrides = {
        "docs_dir": getattr(args, "docs", None),
        "db_dir": getattr(args, "db", None),
        "log_level": getattr(args, "log_level", None),
        "gradio_server_name": getattr(args, "host", None),
        "gradio_server_port": getattr(args, "port", None),
        "retrieval_mode": getattr(args, "mode", None) if args.command == "ask" else None,
    }
    return load_settings(overrides={k: v for k, v in overrides.items() if v is not None})


OUR_LOGGERS = frozenset({"docqa", "__main__", *(p.stem for p in Path(__file__).resolve().parent.glob("*.py"))})
"""Loggers named after docqa's own modules; every other logger is a library's."""


class OpenLine:
    """Whether the answer streaming to stdout has left its line unfinished (a log line must not run on from it)."""

    open = False


class LogLines(logging.StreamHandler):  # type: ignore[type-arg]
    """Log lines on stderr, each on a line of its own, also when stderr shares a terminal with a streaming answer."""

    def emit(self, record: logging.LogRecord) -> None:
        if OpenLine.open and shares_stdout(self.stream):
            sys.stdout.flush()
            self.stream.write("\n")  # on stderr: the answer on stdout stays as it is
            OpenLine.open = False
        super().emit(record)


def shares_stdout(stream: Any) -> bool:
    """Whether `stream` and stdout end up in the same place (one terminal, or 2>&1)."""
    try:
        return os.path.samestat(os.fstat(stream.fileno()), os.fstat(sys.stdout.fileno()))
    except (AttributeError, OSError, ValueError):
        return False


def setup_logging(level: str) -> None:
    """docqa's log lines on stderr at LOG_LEVEL; a library's only from WARNING, unless LOG_LEVEL=DEBUG.

    Some libraries set their own logger to DEBUG (bm25s does), so the level is held by the
    handler, not left to the loggers.
    """
    threshold = getattr(logging, level.upper(), logging.INFO)
    handler = LogLines(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S"))
    handler.setLevel(threshold)
    library_threshold = threshold if threshold <= logging.DEBUG else max(threshold, logging.WARNING)
    handler.addFilter(lambda r: r.levelno >= (threshold if r.name.split(".")[0] in OUR_LOGGERS else library_threshold))
    logging.basicConfig(level=threshold, handlers=[handler])


class TerminalProgress:
    """Indexing progress on stderr, counted in chunks embedded: the files are read quickly and their chunks
    embedded after, so a bar of files stood full while the embedding went on. This one fills only when the
    last chunk is embedded; the files read are shown beside it."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.stage = ""

    def __call__(self, status: IndexStatus) -> None:
        if status.stage == "checking":
            self._show("Checking files", "file", status.done, status.total or None, "")
        elif status.stage == "indexing" and status.total:
            self._show("Embedding chunks", "chunk", status.chunks_done, status.chunks_expected(), f"{status.done}/{status.total} files read")

    def _show(self, stage: str, unit: str, done: int, total: int | None, note: str) -> None:
        from tqdm import tqdm

        if stage != self.stage:
            self.close()
            self.stage = stage
            self.bar = tqdm(desc=stage, unit=unit, file=sys.stderr, leave=True, mininterval=0)
        self.bar.total, self.bar.n = total, done
        self.bar.set_postfix_str(note, refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def cmd_index(rag: RAGSystem, args: argparse.Namespace) -> int:
    shown = TerminalProgress()
    try:
        report = rag.index(reindex=args.reindex, on_status=None if args.json else shown)
    finally:
        shown.close()
    if args.json:
        out = dataclasses.asdict(report)
        out["stages"] = {k: round(v, 3) for k, v in report.stages.items()}
        indexed = [d for d in rag.documents() if d.state == "indexed"]
        out.update(files=len(indexed), chunks=sum(d.chunks for d in indexed))
        print(json.dumps(out))
        return 0
    print(f"Indexed: {report.summary()}")
    for source, reason in sorted(report.failed.items()):
        print(f"  failed: {source}: {reason}")
    stats = rag.stats()
    print(f"{stats['files']} files, {stats['chunks']} chunks in the index.")
    return 0


def cmd_ask(rag: RAGSystem, args: argparse.Namespace) -> int:
    from answer_render import source_line, weak_matches_note
    from answer_sources import streamed_number

    if not args.no_index:
        rag.index()
    where = parse_where(args.where)
    if args.json:
        whole = rag.ask(args.question, k=args.k, where=where)
        print(json.dumps(whole.to_json(), ensure_ascii=False, indent=2))
        return 0 if not whole.error else 1
    answer = stream_to_terminal(rag.stream_answer(args.question, k=args.k, where=where))
    if answer is None:
        return 1
    if answer.focus:
        print(f"\nSearched for (the most informative part of a long question): {answer.focus}")
    if answer.unsupported:
        print(f"\nNot confirmed by the sources ({len(answer.unsupported)} of {answer.sentences_checked} sentences):")
        for sentence in answer.unsupported:
            print(f"  - {' '.join(sentence.split())}")
    print(f"\n— {answer.model or 'no model'}")
    if answer.passages:  # numbered as the answer was printed while it streamed, cited first
        print("\nClosest passages:" if answer.refused else "\nSources:")
        for n, passage in enumerate(answer.passages, start=1):
            print(source_line(streamed_number(answer, n), passage))
    if answer.more_passages:
        print(f"({weak_matches_note(len(answer.more_passages))}: far from the question; `ask --json` lists them)")
    return 0 if not answer.error else 1


def stream_to_terminal(updates: Iterator[Answer]) -> Answer | None:
    """Print the quotes as soon as they are found, then the model's answer as it streams.

    When the checks set the model's text aside, it has already been printed: the notice
    says so, and the quotes above stand as the answer. A summary streams its outline and then
    a draft; once judged, its text is printed again as it stands.
    """
    from answer_render import quote_lines
    from answer_sources import added_text, as_streamed

    shown = ""
    quoted = False
    answer: Answer | None = None
    for answer in updates:
        if answer.quotes and not quoted and not answer.refused:
            quoted = True
            print("From the documents:\n" + quote_lines(answer.quotes) + "\n\nAnswer:", flush=True)
        if added := added_text(answer, shown):
            sys.stdout.write(added)
            sys.stdout.flush()
            OpenLine.open, shown = not answer.text.endswith("\n"), answer.text
    if answer is None:
        return None
    rewritten = answer.kind == "summary" and answer.text != shown
    if (answer.set_aside is not None or rewritten) and not quoted:
        print(("\n" if rewritten else "") + as_streamed(answer, answer.text))
    print()
    OpenLine.open = False
    if answer.notice:
        print(f"\n⚠ {answer.notice}" + (" (the quotes above)" if answer.set_aside is not None and quoted else ""))
    if answer.model_hint:
        print(f"\n{answer.model_hint}")
    return answer


def files_table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    """Columns padded to their widest cell; the last (the status and its reason) runs on."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    lines = ["  ".join([*(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)), row[-1]]) for row in [header, *rows]]
    return "\n".join(line.rstrip() for line in lines)


def cmd_stats(rag: RAGSystem, args: argparse.Namespace) -> int:
    from index_status import DOCUMENT_COLUMNS, document_rows

    stats = rag.stats()
    if args.files and args.json:
        stats["documents"] = [dataclasses.asdict(d) for d in rag.documents()]
    if args.json:
        print(json.dumps(stats, indent=2, ensure_ascii=False))
        return 0
    if args.files:
        documents = rag.documents()
        print(files_table(document_rows(documents), DOCUMENT_COLUMNS) if documents else "No files in the documents folder yet.")
        return 0
    for key, value in stats.items():
        if isinstance(value, dict):
            print(f"{key}: {len(value) if key in ('failed', 'skipped') else ''}")
            for k, v in value.items():
                print(f"  {k}: {v}")
        else:
            print(f"{key}: {value}")
    return 0


def cmd_check(rag: RAGSystem, args: argparse.Namespace) -> int:
    check = rag.check(repair=args.repair)
    if args.json:
        print(json.dumps({"consistent": check.consistent, "problems": check.problems, "repaired": check.repaired}, indent=2))
    elif check.consistent:
        print("Consistent: manifest, vector store and keyword index agree for every file.")
    else:
        for p in check.problems:
            print(f"{p['source']}: {p['store']} has {p['missing']} missing and {p['extra']} extra chunks")
        if check.repaired:
            print(f"Re-indexed {len(check.repaired)} file(s): {', '.join(check.repaired)}")
        else:
            print("Run `python main.py check --repair` to re-index the affected files.")
    return 0 if check.consistent else 1


def cmd_analyze(settings: Settings, args: argparse.Namespace) -> int:
    from rag_system import profile_documents

    if not settings.docs_dir.is_dir():
        raise DocqaError(f"The documents folder {settings.docs_dir} does not exist: create it, or name another with --docs DIR.")
    profile, report = profile_documents(settings)
    print(json.dumps(profile, indent=2, ensure_ascii=False) if args.json else report)
    return 0


def cmd_config(settings: Settings) -> int:
    rows = describe_settings(settings)
    width = max(len(r[0]) for r in rows)
    for name, value, origin in rows:
        print(f"{name:<{width}}  {value!s:<40}  ({origin})")
    return 0


def cmd_serve(rag: RAGSystem, args: argparse.Namespace) -> int:
    """Listen at once; the model loads and the folder syncs behind the page, which shows the sync's progress.

    A first run over a large folder indexes for minutes to hours: the page must not wait for it, and
    questions asked meanwhile are answered from what is indexed so far (the answer says so).
    """
    from web_ui import serve

    rag.announce_sync()
    threading.Thread(target=start_up, args=(rag, args.reindex), name="docqa-start-up", daemon=True).start()
    serve(rag)
    return 0


def start_up(rag: RAGSystem, reindex: bool = False) -> None:
    """Serve's background start: load the answer model beside the sync, watch the folder, sync it."""
    threading.Thread(target=_warm_up, args=(rag,), name="docqa-model-load", daemon=True).start()
    rag.watch()  # before the sync, so a file added while it runs is not missed
    shown = TerminalProgress()
    try:
        rag.index(reindex=reindex, on_status=shown)
    except Exception as exc:  # the page shows the failed sync; the server keeps answering from the index it has
        log.error("The start-up sync failed: %s", describe_error(exc))
    finally:
        shown.close()


def _warm_up(rag: RAGSystem) -> None:
    try:
        rag.warm_up()
    except DocqaError as exc:  # the first question reports it too, with what to do
        log.warning("The answer model did not load at start: %s", describe_error(exc))


def cmd_mcp(rag: RAGSystem, args: argparse.Namespace) -> int:
    from mcp_server import run_stdio

    run_stdio(rag, index=not getattr(args, "no_index", False))
    return 0


def cmd_eval(settings: Settings, args: argparse.Namespace) -> int:
    from evaluation import run_eval_command

    return run_eval_command(settings, args)


def open_system(settings: Settings, args: argparse.Namespace) -> RAGSystem:
    """The system, opened to write or only to read, as the command needs.

    stats, check and ask --no-index only read, so they work beside a running server; ask and
    mcp index first unless another docqa holds the folder, which keeps the index up to date.
    """
    from rag_system import RAGSystem

    reads = args.command == "stats" or (args.command == "check" and not args.repair) or (args.command == "ask" and args.no_index)
    if reads:
        return RAGSystem(settings, lock="read")
    try:
        return RAGSystem(settings)
    except LockError:
        if args.command not in ("ask", "mcp"):
            raise
    log.info("Another docqa keeps this index up to date; answering from it as it is")
    args.no_index = True
    return RAGSystem(settings, lock="read")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.command = args.command or "serve"
    for name in ("reindex", "host", "port"):
        if not hasattr(args, name):
            setattr(args, name, False if name == "reindex" else None)
    rag = None
    try:
        settings = settings_from_args(args)
        setup_logging(settings.log_level)
        if args.command == "config":
            return cmd_config(settings)
        if args.command == "eval":
            return cmd_eval(settings, args)
        if args.command == "analyze":
            return cmd_analyze(settings, args)
        rag = open_system(settings, args)
        handler = {"serve": cmd_serve, "mcp": cmd_mcp, "index": cmd_index, "ask": cmd_ask, "stats": cmd_stats, "check": cmd_check}
        return handler[args.command](rag, args)
    except DocqaError as exc:
        print(f"docqa: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        if rag is not None:
            rag.close()


if __name__ == "__main__":
    sys.exit(main())
