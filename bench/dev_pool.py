"""The dev pool: questions on thirteen documents of eight kinds from this Debian machine's packages.

    .venv/bin/python bench/dev_pool.py [--half tune|check|all] [--out /tmp/dev-pool] [--answers] [--json]
    .venv/bin/python bench/dev_pool.py --verify [--half ...]

The answer design is tuned on one half of the pool and checked on the other, so that what was
tuned is measured on documents it never saw. bench/dev_pool.jsonl holds the questions, each with
a `half` ("tune" or "check"); the halves split by whole documents (bench/dev_pool_sources.md
lists them, with package, kind, licence and question count). Questions with no answer in the
documents name no `source`; their `topic` is the document they are about, which sets their half.

The documents are real files under /usr/share (PDF, HTML, Markdown, plain text, C and Python
source). Kinds that packages do not ship are made here at run time from a packaged file,
deterministically: a DOCX by Debian's pandoc from an HTML manual, an XLSX from distro-info-data's
CSV tables (openpyxl), a PPTX from a Markdown document (python-pptx, one slide per section).
Nothing third-party is committed but the questions. Without a file this names the package to
`apt-get install` and stops; it installs nothing.

Without --verify the chosen half's documents are built into `--out`/HALF/docs and `main.py eval
--qa` runs on that half's questions (`--answers`, `--json` passed through). --verify converts each
document with docqa's own converter and checks that every `text` snippet and `must_contain`
string occurs in what is indexed (case-insensitive, whitespace-normalised); it exits 1 listing
each failure. Add questions only from the documents, never from an answer seen.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
QUESTIONS = ROOT / "bench" / "dev_pool.jsonl"
HALVES = ("tune", "check")


@dataclass(frozen=True)
class Document:
    """One indexed file: its name in the folder, the packaged file(s) it is made from, and how."""

    name: str
    package: str
    paths: tuple[str, ...]
    kind: str  # pdf, html, markdown, text, docx, code, xlsx, pptx
    half: str
    make: str = "copy"  # copy, gunzip, pandoc-docx, csv-xlsx, markdown-pptx


DOCUMENTS = (
    Document("bzip2-manual.pdf", "bzip2-doc", ("/usr/share/doc/bzip2/manual.pdf.gz",), "pdf", "tune", "gunzip"),
    Document("ninja-manual.html", "ninja-build", ("/usr/share/doc/ninja-build/manual.html",), "html", "tune"),
    Document("BUILDING.md", "nodejs", ("/usr/share/doc/nodejs/BUILDING.md",), "markdown", "tune"),
    Document("triggers.txt", "dpkg-dev", ("/usr/share/doc/dpkg/spec/triggers.txt",), "text", "tune"),
    Document("python-policy.docx", "python3-dev", ("/usr/share/doc/python3/python-policy.html",), "docx", "tune", "pandoc-docx"),
    Document("shlex.py", "libpython3.11-stdlib", ("/usr/lib/python3.11/shlex.py",), "code", "tune"),
    Document(
        "distro-info.xlsx", "distro-info-data",
        ("/usr/share/distro-info/debian.csv", "/usr/share/distro-info/ubuntu.csv"), "xlsx", "tune", "csv-xlsx",
    ),
    Document("fontconfig-user.pdf", "fontconfig", ("/usr/share/doc/fontconfig/fontconfig-user.pdf.gz",), "pdf", "check", "gunzip"),
    Document("xtrans.html", "xtrans-dev", ("/usr/share/doc/xtrans-dev/xtrans.html",), "html", "check"),
    Document("cpp-style-guide.md", "nodejs", ("/usr/share/doc/nodejs/contributing/cpp-style-guide.md",), "markdown", "check"),
    Document("xz-file-format.txt", "liblzma-dev", ("/usr/share/doc/liblzma-dev/xz-file-format.txt.gz",), "text", "check", "gunzip"),
    Document("stemwords.c", "libstemmer0d", ("/usr/share/doc/libstemmer0d/examples/stemwords.c",), "code", "check"),
    Document("governance.pptx", "nodejs", ("/usr/share/doc/nodejs/GOVERNANCE.md",), "pptx", "check", "markdown-pptx"),
)
BY_NAME = {d.name: d for d in DOCUMENTS}
FIXED_TIME = "2000-01-01T00:00:00"  # document properties of the made files, so a rebuild is byte-stable where the writer allows


def missing_packages(documents: list[Document]) -> list[str]:
    """What must be installed first: each absent file with its package, and pandoc when a DOCX is made."""
    missing = [f"{path} (apt-get install {d.package})" for d in documents for path in d.paths if not Path(path).is_file()]
    if any(d.make == "pandoc-docx" for d in documents) and shutil.which("pandoc") is None:
        missing.append("pandoc (apt-get install pandoc)")
    return missing


def build(documents: list[Document], folder: Path) -> None:
    """Put each document into `folder` under its name: copied, unzipped or converted."""
    folder.mkdir(parents=True, exist_ok=True)
    for doc in documents:
        target = folder / doc.name
        source = Path(doc.paths[0])
        if doc.make == "copy":
            shutil.copyfile(source, target)
        elif doc.make == "gunzip":
            with gzip.open(source, "rb") as fh:
                target.write_bytes(fh.read())
        elif doc.make == "pandoc-docx":
            env = {**os.environ, "SOURCE_DATE_EPOCH": "946684800"}
            subprocess.run(["pandoc", "-f", "html", "-t", "docx", "-o", str(target), str(source)], check=True, env=env)
        elif doc.make == "csv-xlsx":
            csv_to_xlsx([Path(p) for p in doc.paths], target)
        elif doc.make == "markdown-pptx":
            markdown_to_pptx(source, target)
        else:
            raise ValueError(f"unknown way to make {doc.name}: {doc.make}")


def csv_to_xlsx(tables: list[Path], target: Path) -> None:
    """One sheet per CSV table, named after the file (debian, ubuntu); every cell kept as its text."""
    from datetime import datetime

    from openpyxl import Workbook

    book = Workbook()
    book.remove(book.active)
    for table in tables:
        sheet = book.create_sheet(table.stem)
        with open(table, encoding="utf-8", newline="") as fh:
            for row in csv.reader(fh):
                sheet.append(row)
    book.properties.created = book.properties.modified = datetime.fromisoformat(FIXED_TIME)
    book.save(target)


_LINK = re.compile(r"\[([^\]]+)\](?:\[[^\]]*\]|\([^)]*\))")
_ITEM = re.compile(r"^(?:[*-]|\d+\.) ")


def slide_sections(markdown: str) -> list[tuple[str, list[str]]]:
    """(heading, paragraphs) for each section of a Markdown document, as a slide shows them: wrapped lines
    joined, each list item its own paragraph without its marker; links read as their text, code marks and
    emphasis dropped; comments, link definitions and the table of contents left out."""
    sections: list[tuple[str, list[str]]] = []
    joining = False  # the next line continues the last paragraph
    for line in markdown.splitlines():
        text = _LINK.sub(r"\1", line).replace("`", "").replace("**", "").strip()
        if line.startswith("#"):
            sections.append((text.lstrip("#").strip(), []))
            joining = False
        elif not text or not sections or text.startswith(("<!--", "[")) or (text.startswith("* ") and "(#" in line):
            joining = False
        elif joining and not _ITEM.match(text):
            sections[-1][1][-1] += " " + text
        else:
            sections[-1][1].append(_ITEM.sub("", text))
            joining = True
    return [(heading, lines) for heading, lines in sections if lines or heading == sections[0][0]]


def markdown_to_pptx(source: Path, target: Path) -> None:
    """A slide deck of a Markdown document: a title slide, then one slide per section, its text as the body."""
    from datetime import datetime

    from pptx import Presentation

    deck = Presentation()
    sections = slide_sections(source.read_text(encoding="utf-8"))
    for number, (heading, lines) in enumerate(sections):
        slide = deck.slides.add_slide(deck.slide_layouts[0 if number == 0 else 1])
        slide.shapes.title.text = heading
        if number:
            body = slide.placeholders[1].text_frame
            body.text = lines[0]
            for line in lines[1:]:
                body.add_paragraph().text = line
    deck.core_properties.created = deck.core_properties.modified = datetime.fromisoformat(FIXED_TIME)
    deck.core_properties.last_modified_by = "dev_pool.py"
    deck.save(str(target))


def load(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def chosen(items: list[dict[str, Any]], half: str) -> list[dict[str, Any]]:
    return [it for it in items if half == "all" or it["half"] == half]


def _flat(text: str) -> str:
    return " ".join(text.lower().split())


def shape_failures(items: list[dict[str, Any]]) -> list[str]:
    """What is wrong with the questions themselves, before any document is read."""
    failures, seen = [], set()
    for it in items:
        qid = it.get("id")
        if qid in seen:
            failures.append(f"{qid}: id used twice")
        seen.add(qid)
        doc = BY_NAME.get(it.get("source") or it.get("topic") or "")
        if doc is None:
            failures.append(f"{qid}: names no known document (source or topic)")
        elif it.get("half") != doc.half:
            failures.append(f"{qid}: half {it.get('half')!r} but {doc.name} is in {doc.half!r}")
        if it.get("kind") == "unanswerable":
            if it.get("source") or it.get("must_contain") or it.get("text"):
                failures.append(f"{qid}: unanswerable but names a source, text or must_contain")
        elif not (it.get("source") and it.get("text") and it.get("must_contain")):
            failures.append(f"{qid}: answerable but lacks source, text or must_contain")
        elif any(s != s.lower() for s in it["must_contain"]):
            failures.append(f"{qid}: must_contain is not lowercase")
    return failures


def text_failures(items: list[dict[str, Any]], texts: dict[str, str]) -> list[str]:
    """Each answerable question's snippet and must_contain strings must stand in its document's indexed text
    (case-insensitive, whitespace-normalised). The snippet must also stand there with its own line breaks:
    `eval --qa` finds the right passage by that exact (lowercased) phrase, so a snippet that only matches
    once whitespace is normalised would score every retrieval of it a miss."""
    failures = []
    for it in items:
        if it.get("kind") == "unanswerable" or it.get("source") not in texts:
            continue
        raw = texts[it["source"]]
        flat = _flat(raw)
        for wanted in [it["text"], *it["must_contain"]]:
            if _flat(wanted) not in flat:
                failures.append(f"{it['id']}: {wanted!r} is not in {it['source']}")
        if _flat(it["text"]) in flat and it["text"].lower() not in raw:
            failures.append(f"{it['id']}: {it['text']!r} is in {it['source']} only with other line breaks or spacing")
    return failures


def verify(items: list[dict[str, Any]], documents: list[Document], out: Path) -> list[str]:
    """Build the documents, convert each as docqa indexes it, and list every failure."""
    from document_converter import convert_document

    build(documents, out)
    texts = {d.name: convert_document(out / d.name, d.name).markdown.lower() for d in documents}
    return shape_failures(items) + text_failures(items, texts)


def every_nth(items: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Every `n`th question of each document, in the file's order: a smaller run with every document in it."""
    seen: dict[str, int] = {}
    kept = []
    for item in items:
        doc = item.get("source") or item.get("topic") or ""
        if seen.get(doc, 0) % n == 0:
            kept.append(item)
        seen[doc] = seen.get(doc, 0) + 1
    return kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=(*HALVES, "all"), default="all", help="which questions (and documents) to use")
    parser.add_argument("--out", type=Path, default=Path("/tmp/dev-pool"), help="folder for the documents, questions and index")
    parser.add_argument("--verify", action="store_true", help="check the questions against the documents' text; run no evaluation")
    parser.add_argument("--answers", action="store_true", help="also generate and score answers")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--every", type=int, default=1, help="ask every Nth question of each document (2: half, for a quick run)")
    args = parser.parse_args()
    documents = [d for d in DOCUMENTS if args.half in ("all", d.half)]
    missing = missing_packages(documents)
    if missing:
        print("Missing: " + "; ".join(missing), file=sys.stderr)
        return 2
    items = every_nth(chosen(load(), args.half), args.every)
    if args.verify:
        with tempfile.TemporaryDirectory() as tmp:
            failures = verify(items, documents, Path(tmp))
        for failure in failures:
            print(failure, file=sys.stderr)
        print(f"{len(items)} questions on {len(documents)} documents: {len(failures)} failures")
        return 1 if failures else 0
    base = args.out / args.half
    docs = base / "docs"
    shutil.rmtree(docs, ignore_errors=True)
    build(documents, docs)
    qa_file = base / "questions.jsonl"
    qa_file.write_text("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items), encoding="utf-8")
    command = [sys.executable, str(ROOT / "main.py"), "eval", "--qa", str(qa_file), "--docs", str(docs), "--db", str(base / "data")]
    command += ["--answers"] * args.answers + ["--json"] * args.json
    return subprocess.call(command, cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main())
