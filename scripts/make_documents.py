"""Generate docqa's shipped example documents.

    python scripts/make_documents.py [--out DIR] [--check]

Writes three files, all written by the docqa project itself (no third-party text):

* ``docqa-user-guide.pdf``     six pages made with PyMuPDF, one chapter per page:
  1 overview and privacy, 2 installation, 3 adding documents and incremental indexing,
  4 asking questions and citations, 5 choosing a language model, 6 troubleshooting.
* ``docqa-configuration.docx`` made with python-docx: precedence of settings,
  ``python main.py config`` and a table of configuration variables, whose defaults
  are read from config.py so the document and ``config`` never disagree.
* ``faq.md``                   a Markdown FAQ, one question per ``##`` section.

Output is deterministic: running the script twice gives the same bytes (no
timestamps in the text, fixed document metadata, fixed ZIP entry dates, no random
PDF /ID). Importing this module has no side effects; PyMuPDF, python-docx and
docqa's config.py are imported only when a document is built.

``EXAMPLE_QUESTIONS`` are questions each answered clearly by one place in these
documents; ``EXPECTED_SOURCES`` maps each to that place (``page`` is the 1-based
PDF page, ``None`` for files without pages) and to ``terms``: phrases found verbatim
in that place that a correct answer is built from.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import io
import sys
import zipfile
from pathlib import Path

USER_GUIDE = "docqa-user-guide.pdf"
CONFIGURATION = "docqa-configuration.docx"
FAQ = "faq.md"

# The same four questions web_ui.py offers as example buttons.
EXAMPLE_QUESTIONS = [
    "Which two commands set up and run docqa?",
    "What is the default chunk size?",
    "Does docqa send my documents anywhere?",
    "How do I use Ollama for better answers?",
]

EXPECTED_SOURCES = {
    EXAMPLE_QUESTIONS[0]: {"file": USER_GUIDE, "page": 2, "terms": ["make run", "make test"]},
    EXAMPLE_QUESTIONS[1]: {"file": CONFIGURATION, "page": None, "terms": ["CHUNK_SIZE", "1000"]},
    EXAMPLE_QUESTIONS[2]: {"file": FAQ, "page": None, "terms": ["no cloud component", "stay on your computer"]},
    EXAMPLE_QUESTIONS[3]: {
        "file": USER_GUIDE,
        "page": 5,
        "terms": ["ollama serve", "ollama pull llama3.2"],
    },
}

EXAMPLE_ANSWERS = {
    EXAMPLE_QUESTIONS[0]: [["make run"], ["make test"]],
    EXAMPLE_QUESTIONS[1]: [["1000"]],
    EXAMPLE_QUESTIONS[2]: [["no cloud", "stay on your computer", "stays on your computer", "never leave", "does not send"]],
    EXAMPLE_QUESTIONS[3]: [["ollama pull llama3.2"]],
}
"""What a right answer to each example question says: every group must be met, by any one of its phrases."""

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "documents"

# Fixed metadata date, so the files do not change from run to run.
FIXED_DATE = _dt.datetime(2025, 1, 1, 0, 0, 0)

# --------------------------------------------------------------------------------------
# User guide (PDF). Each inner list is one page; each item is (kind, text).
# Kinds: title, subtitle, h1, h2, p, bullet, code. ASCII only: the PDF uses the
# built-in Helvetica and Courier fonts.
# --------------------------------------------------------------------------------------

GUIDE_PAGES: list[list[tuple[str, str]]] = [
    [
        ("title", "docqa User Guide"),
        ("subtitle", "Private question answering over your own documents, on your own computer"),
        ("h1", "1. Overview and privacy"),
        (
            "p",
            "docqa answers questions about your own documents. You put PDF files, Word "
            "files, plain text and Markdown into the documents folder, ask a question in "
            "your web browser, and docqa replies with a short answer followed by citations "
            "that point to the file and to the page or lines the answer came from.",
        ),
        ("h2", "How an answer is made"),
        (
            "p",
            "When docqa indexes a document it converts it to text and splits the text into "
            "overlapping chunks. Each chunk is stored twice: in a BM25 keyword index, and as "
            "a vector made by the all-MiniLM-L6-v2 embedding model in a ChromaDB vector "
            "store. A question is matched against both indexes (hybrid retrieval), the two "
            "rankings are fused, and the best passages are handed to a local language "
            "model, which writes the answer from those passages only.",
        ),
        ("h2", "Privacy: nothing leaves your computer"),
        (
            "p",
            "docqa is private by design. Your documents, your questions and the answers "
            "never leave your machine: the embedding model and the language model both run "
            "locally, and docqa makes no calls to cloud services. The web interface listens "
            "on 127.0.0.1, so only programs on the same computer can open it.",
        ),
        (
            "p",
            "If you use Ollama as the language model, Ollama also runs on your own computer "
            "and docqa talks to it at a local address (see chapter 5). Once docqa is "
            "installed it works without an internet connection.",
        ),
        ("h2", "What is in this guide"),
        (
            "p",
            "Chapter 2 installs docqa, chapter 3 adds documents, chapter 4 asks questions "
            "and explains citations, chapter 5 chooses a language model and chapter 6 "
            "solves common problems. Every setting is described in "
            "docqa-configuration.docx, and short answers to frequent questions are in "
            "faq.md.",
        ),
    ],
    [
        ("h1", "2. Installation"),
        (
            "p",
            "docqa needs Python 3.11, 3.12 or 3.13. Check the version with python3 --version before you "
            "start. No graphics card is needed: the models docqa ships with run on an "
            "ordinary CPU.",
        ),
        ("h2", "Two commands: make run and make test"),
        (
            "p",
            "Setting up and running docqa takes two commands, both typed in a terminal in "
            "the project folder. The first sets everything up and starts docqa:",
        ),
        ("code", "make run"),
        (
            "p",
            "make run creates the virtual environment, installs the dependencies into it, "
            "indexes the documents folder and starts the web interface. Run it again "
            "whenever you want to start docqa; set-up steps that are already done are "
            "skipped.",
        ),
        ("p", "The second command runs docqa's test suite, which confirms that the installation works:"),
        ("code", "make test"),
        ("h2", "Where the virtual environment goes"),
        (
            "p",
            "make run puts the virtual environment in a folder named .venv inside the "
            "project folder. Nothing is installed into your system Python, and deleting "
            "the project folder removes docqa completely, including its virtual "
            "environment and its index.",
        ),
        (
            "p",
            "To run a docqa command by hand, use the Python inside the virtual environment, "
            "for example .venv/bin/python main.py stats, or activate the environment first "
            "with source .venv/bin/activate and then run python main.py stats.",
        ),
        ("h2", "Opening docqa in the browser"),
        (
            "p",
            "When make run has started the web interface, open http://127.0.0.1:7860 in "
            "your browser. The first start takes longest, because every document has to be "
            "indexed; later starts are quick.",
        ),
    ],
    [
        ("h1", "3. Adding documents"),
        (
            "p",
            "Copy or save your files into the documents folder inside the project folder; "
            "files in sub-folders are found too. docqa indexes them the next time it starts. "
            "To index without starting the web interface, run python main.py index.",
        ),
        ("h2", "Supported file types"),
        ("bullet", "PDF files (.pdf), read page by page from their text layer"),
        ("bullet", "Word documents (.docx); save older .doc files as .docx first"),
        ("bullet", "Markdown files (.md, .markdown, .mdx, .rst)"),
        ("bullet", "Plain text (.txt) and other text formats such as .csv, .json, .html and source code"),
        ("bullet", "Images (.png, .jpg, .tif, .webp, .bmp) and scanned PDF pages, read offline with OCR"),
        (
            "p",
            "Files of other types are skipped. A file larger than 10 MB (the MAX_FILE_MB "
            "setting) is skipped too, and so is a file that cannot be converted to text, such "
            "as a damaged PDF. The other documents are still indexed.",
        ),
        ("h2", "Incremental indexing"),
        (
            "p",
            "docqa does not read every document again each time it starts. It keeps a "
            "manifest, data/manifest.json, that records the size, the modification time "
            "(mtime) and the SHA-256 hash of every indexed file. On restart docqa compares "
            "each file with its manifest entry and re-indexes only the files that are new "
            "or changed. Unchanged files are left alone, so a restart without changes is "
            "quick, and files you delete from the folder are removed from the index.",
        ),
        (
            "p",
            "When you edit a document, docqa indexes the new version and replaces the "
            "passages of the old one, so answers always come from the current text.",
        ),
        ("h2", "Rebuilding the index"),
        (
            "p",
            "To throw the index away and build it again from every file, for example after "
            "changing CHUNK_SIZE, CHUNK_OVERLAP or EMBEDDING_MODEL, run:",
        ),
        ("code", "python main.py index --reindex"),
        ("p", "To see how many files and chunks are indexed, run python main.py stats."),
    ],
    [
        ("h1", "4. Asking questions"),
        (
            "p",
            "Type a question into the box in the web interface and press Enter. docqa finds "
            "the passages that match the question best, gives the top TOP_K of them to the "
            "language model, and shows the answer with its sources underneath.",
        ),
        ("h2", "Citations"),
        (
            "p",
            "Every answer cites its sources, so you can check it against the original. A "
            "citation names the file and the place in the file the passage comes from:",
        ),
        ("bullet", "PDF files are cited by page number, for example docqa-user-guide.pdf, page 4."),
        ("bullet", "Text and Markdown files are cited by line range, for example faq.md, lines 12-18."),
        (
            "p",
            "Open the cited file at that page or those lines to read the passage in its "
            "context. When an answer matters, check the citation before you rely on it.",
        ),
        ("h2", "Asking from the command line"),
        ("p", "You can also ask without a browser. The answer and its citations are printed in the terminal:"),
        ("code", 'python main.py ask "When does my lease end?"'),
        (
            "p",
            "Add --json to get machine-readable output for scripts: the answer together "
            "with its list of sources, each with its file and its page or lines.",
        ),
        ("code", 'python main.py ask "When does my lease end?" --json'),
        ("h2", "One question at a time"),
        (
            "p",
            "Each question is answered on its own from the passages found for it. Ask about "
            "one thing at a time and use the words your documents use; a question that "
            "mixes several topics finds weaker passages for each of them.",
        ),
    ],
    [
        ("h1", "5. Choosing a language model"),
        (
            "p",
            "docqa writes its answers with one of two local language models. The "
            "LLM_BACKEND setting chooses between them:",
        ),
        ("bullet", "auto (the default): use Ollama when it answers, otherwise the embedded model"),
        ("bullet", "ollama: always use Ollama, and report an error when it cannot be reached"),
        ("bullet", "llamacpp: always use the embedded model"),
        ("h2", "Better answers: use Ollama with llama3.2 (recommended)"),
        (
            "p",
            "For better answers, use Ollama with the llama3.2 model. Ollama is a separate "
            "program that runs language models on your own computer. Install it from "
            "ollama.com, then start the Ollama server and download the model:",
        ),
        ("code", "ollama serve"),
        ("code", "ollama pull llama3.2"),
        (
            "p",
            "Then restart docqa. With LLM_BACKEND=auto it finds Ollama by itself at start-up at "
            "OLLAMA_HOST (http://127.0.0.1:11434 by default) and uses OLLAMA_MODEL "
            "(llama3.2 by default). Put LLM_BACKEND=ollama in .env if you would rather have "
            "docqa report an error than fall back to the embedded model when Ollama is not "
            "running.",
        ),
        ("h2", "The embedded Qwen model"),
        (
            "p",
            "Without Ollama, docqa uses its embedded model: Qwen2.5-Coder-1.5B-Instruct, run by "
            "llama.cpp inside the docqa process. It comes with docqa, needs no other "
            "program and runs on any CPU, so docqa always has a model to answer with.",
        ),
        (
            "p",
            "The embedded model is very small. It handles short factual answers that appear "
            "almost word for word in your documents, but it makes more mistakes than "
            "llama3.2 with questions that need reasoning or combine several passages. To "
            "use another GGUF model file with the embedded backend, set LLAMACPP_MODEL_PATH "
            "to its path.",
        ),
    ],
    [
        ("h1", "6. Troubleshooting"),
        ("h2", "Cannot reach Ollama"),
        (
            "p",
            "This message means docqa tried to use Ollama but nothing answered at "
            "OLLAMA_HOST. Start the Ollama server (chapter 5 shows the commands) and ask "
            "again. If Ollama runs at another address or port, set OLLAMA_HOST in .env to "
            "that address. If the message says Ollama has no model llama3.2, download the "
            "model as shown in chapter 5.",
        ),
        (
            "p",
            "With LLM_BACKEND=auto, docqa looks for Ollama when it starts and uses the "
            "embedded model if Ollama does not answer; restart docqa after starting Ollama "
            "to switch to it.",
        ),
        ("h2", "Port 7860 is already in use"),
        (
            "p",
            "The web interface listens on port 7860. If another program already uses that "
            "port, docqa cannot start its web interface. Choose a free port with the "
            "GRADIO_SERVER_PORT setting: add the line GRADIO_SERVER_PORT=7861 to .env, start "
            "docqa again and open http://127.0.0.1:7861 instead.",
        ),
        ("h2", "A document is missing from the answers"),
        (
            "p",
            "Run python main.py stats. It shows what is indexed and lists every skipped or "
            "failed file with the reason: a file type docqa does not read, a file larger than "
            "MAX_FILE_MB, or a file that could not be converted to text.",
        ),
        ("h2", "Another docqa process holds the data folder"),
        (
            "p",
            "Only one docqa process at a time can index the data folder. While docqa runs, "
            "python main.py stats, check and ask still work beside it. To index or repair from "
            "another terminal, stop the running docqa first, for example by closing the "
            "terminal it runs in, and try again.",
        ),
        ("h2", "Checking the index and the settings"),
        (
            "p",
            "python main.py check compares the manifest, the vector store and the keyword "
            "index and reports every file whose passages do not agree; python main.py check "
            "--repair re-indexes only those files. python main.py config shows every setting "
            "in use and where its value came from.",
        ),
    ],
]

# PDF layout (points). A4 portrait.
PAGE_W, PAGE_H = 595.0, 842.0
MARGIN_X, MARGIN_TOP, MARGIN_BOTTOM = 64.0, 72.0, 64.0
TEXT_W = PAGE_W - 2 * MARGIN_X
INK = (0.1, 0.1, 0.1)
ACCENT = (0.08, 0.22, 0.45)
# kind: (font, size, colour, indent, space before, line height factor)
PDF_STYLES = {
    "title": ("hebo", 26.0, ACCENT, 0.0, 0.0, 1.2),
    "subtitle": ("heit", 11.0, (0.35, 0.35, 0.35), 0.0, 2.0, 1.35),
    "h1": ("hebo", 18.0, ACCENT, 0.0, 22.0, 1.25),
    "h2": ("hebo", 13.0, ACCENT, 0.0, 12.0, 1.3),
    "p": ("helv", 10.5, INK, 0.0, 6.0, 1.45),
    "bullet": ("helv", 10.5, INK, 16.0, 3.0, 1.45),
    "code": ("cour", 10.0, INK, 16.0, 6.0, 1.45),
}


def _import_pymupdf():
    try:
        import pymupdf
    except ImportError:  # older releases only provide the fitz name
        import fitz as pymupdf
    return pymupdf


def _wrap(pymupdf, text: str, font: str, size: float, width: float) -> list[str]:
    """Greedy word wrap measured with the real font metrics."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if pymupdf.get_text_length(candidate, fontname=font, fontsize=size) <= width or not line:
            line = candidate
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    for ln in lines:
        if pymupdf.get_text_length(ln, fontname=font, fontsize=size) > width:
            raise ValueError(f"word too long for the page: {ln!r}")
    return lines


def build_user_guide(path: Path) -> None:
    pymupdf = _import_pymupdf()
    doc = pymupdf.open()
    for number, blocks in enumerate(GUIDE_PAGES, start=1):
        page = doc.new_page(width=PAGE_W, height=PAGE_H)
        y = MARGIN_TOP
        previous = None
        for kind, text in blocks:
            font, size, colour, indent, before, leading = PDF_STYLES[kind]
            if previous is not None and not (kind == previous == "bullet") and not (
                kind == previous == "code"
            ):
                y += before
            elif kind == previous == "code":
                y += 1.0
            x = MARGIN_X + indent
            width = TEXT_W - indent - (12.0 if kind in ("bullet", "code") else 0.0)
            lines = _wrap(pymupdf, text, font, size, width)
            step = size * leading
            if kind == "code":
                # Shaded box: 4 pt padding above the capitals, 4 pt below the descenders.
                top = y + 2
                bottom = top + 4 + size + step * (len(lines) - 1) + 4
                box = pymupdf.Rect(x - 8, top, PAGE_W - MARGIN_X, bottom)
                page.draw_rect(box, color=None, fill=(0.93, 0.94, 0.96), overlay=False)
                x += 4
                y = top + 4 + size * 0.8 - step
            for i, line in enumerate(lines):
                y += step
                if kind == "bullet" and i == 0:
                    page.draw_circle((x - 8.5, y - size * 0.33), 1.7, color=None, fill=INK)
                page.insert_text((x, y), line, fontname=font, fontsize=size, color=colour)
            if kind == "code":
                y = bottom
            if kind == "title":
                y += 4
            if kind == "subtitle":
                y += 8
                page.draw_line((MARGIN_X, y), (PAGE_W - MARGIN_X, y), color=ACCENT, width=0.8)
            previous = kind
        if y > PAGE_H - MARGIN_BOTTOM:
            raise ValueError(f"user guide page {number} overflows ({y:.0f} > {PAGE_H - MARGIN_BOTTOM:.0f})")
    doc.set_metadata(
        {
            "title": "docqa User Guide",
            "author": "docqa",
            "subject": "Installing and using docqa",
            "keywords": "docqa, user guide",
            "creator": "docqa scripts/make_documents.py",
            "producer": "PyMuPDF",
            "creationDate": "",
            "modDate": "",
        }
    )
    data = doc.tobytes(garbage=4, deflate=True, no_new_id=True)
    doc.close()
    path.write_bytes(data)


# --------------------------------------------------------------------------------------
# Configuration reference (DOCX).
# --------------------------------------------------------------------------------------

CONFIG_ROWS = [
    ("DOCS_DIR", "Folder of documents docqa answers from."),
    ("DB_DIR", "Data folder: vector store, keyword index, manifest and conversion cache."),
    ("MAX_FILE_MB", "Files larger than this many megabytes are skipped."),
    ("CHUNK_SIZE", "Characters of text per chunk."),
    ("CHUNK_OVERLAP", "Characters shared by neighbouring chunks."),
    ("EMBEDDING_MODEL", "Local folder of a sentence-transformers model that turns chunks into vectors."),
    ("RETRIEVAL_MODE", "hybrid (BM25 keywords + vectors), vector or bm25."),
    ("TOP_K", "Passages given to the language model per question."),
    ("LLM_BACKEND", "auto (Ollama when it answers, else the embedded llama.cpp model), ollama or llamacpp."),
    ("OLLAMA_HOST", "Address of the Ollama server."),
    ("OLLAMA_MODEL", "Ollama model that writes the answers."),
    ("GRADIO_SERVER_NAME", "Address the web interface listens on."),
    ("GRADIO_SERVER_PORT", "Port the web interface listens on."),
    ("LOG_LEVEL", "DEBUG, INFO, WARNING or ERROR."),
]
"""The settings the configuration reference lists, with their meaning; each default is read from config.py."""

EMPTY_DEFAULTS = {"EMBEDDING_MODEL": "(empty: the packaged all-MiniLM-L6-v2)"}
"""How the table names a default that is an empty string."""


def setting_defaults() -> dict[str, str]:
    """Every setting's default as the documents write it ("10", not "10.0"), from config.py: one source, so they agree."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from config import SETTING_FIELDS, Settings, env_name

    defaults = Settings()
    out = {}
    for f in SETTING_FIELDS:
        value = getattr(defaults, f.name)
        shown = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
        out[env_name(f.name)] = shown or EMPTY_DEFAULTS.get(env_name(f.name), "(empty)")
    return out


def config_table() -> list[tuple[str, str, str]]:
    """The table of the configuration reference: header, then (variable, default, meaning)."""
    defaults = setting_defaults()
    return [("Variable", "Default", "Meaning"), *((name, defaults[name], meaning) for name, meaning in CONFIG_ROWS)]


PRECEDENCE = [
    "Built-in defaults: the Default column of the table below.",
    "The user-wide file ~/.config/docqa/.env (or $XDG_CONFIG_HOME/docqa/.env), for "
    "settings you want in every project.",
    "The project's .env file in the folder you run docqa from, or the file named by "
    "DOCQA_ENV_FILE.",
    "Environment variables, for example LOG_LEVEL=DEBUG python main.py serve.",
    "Command-line flags, which override everything else for that one command.",
]

def tuning() -> list[str]:
    """The tuning advice; the defaults it names come from config.py."""
    defaults = setting_defaults()
    return [
        "More context per answer: raise TOP_K so the language model sees more passages; "
        "answers take a little longer.",
        f"Longer or shorter passages: CHUNK_SIZE (default {defaults['CHUNK_SIZE']} characters) and CHUNK_OVERLAP "
        f"(default {defaults['CHUNK_OVERLAP']} characters) control how documents are split into chunks. Rebuild the "
        "index after changing either (user guide, chapter 3).",
        "Exact words such as names, codes or error messages: RETRIEVAL_MODE=bm25 ranks "
        "passages by keywords only.",
        "Questions worded differently from the documents: RETRIEVAL_MODE=vector ranks passages "
        "by meaning only.",
        f"Everything else: keep the default, {defaults['RETRIEVAL_MODE']}, which fuses both rankings.",
    ]


def _normalise_zip(data: bytes) -> bytes:
    """Rewrite a ZIP with fixed entry dates so the bytes do not depend on the clock."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            info = zipfile.ZipInfo(item.filename, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            dst.writestr(info, src.read(item.filename))
    return out.getvalue()


def _code_paragraph(doc, text: str, last: bool = False) -> None:
    from docx.shared import Pt

    para = doc.add_paragraph()
    run = para.add_run(text)
    run.font.name = "Courier New"
    run.font.size = Pt(10)
    para.paragraph_format.space_after = Pt(10 if last else 0)
    para.paragraph_format.left_indent = Pt(18)


def build_configuration(path: Path) -> None:
    import docx
    from docx.shared import Cm, Pt

    doc = docx.Document()
    props = doc.core_properties
    props.title = "docqa Configuration Reference"
    props.author = "docqa"
    props.last_modified_by = "docqa"
    props.subject = "Settings of docqa"
    props.keywords = "docqa, configuration, settings"
    props.comments = ""
    props.revision = 1
    props.created = FIXED_DATE
    props.modified = FIXED_DATE
    props.last_printed = FIXED_DATE

    doc.add_heading("docqa Configuration Reference", 0)
    doc.add_paragraph(
        "docqa is configured with settings such as CHUNK_SIZE or LLM_BACKEND. Every setting "
        "has a default, so docqa works without any configuration; change a setting only when "
        "you need to. This document explains where docqa reads settings from and lists the "
        "settings most people change."
    )

    doc.add_heading("Where settings come from", 1)
    doc.add_paragraph(
        "docqa reads settings from several places. When a setting is given in more than one "
        "place, the later place in this list wins (lowest precedence first):"
    )
    for item in PRECEDENCE:
        doc.add_paragraph(item, style="List Number")
    doc.add_paragraph(
        "In short, the precedence is: defaults < ~/.config/docqa/.env < project .env < "
        "environment variables < command-line flags."
    )

    doc.add_heading("Writing a .env file", 2)
    doc.add_paragraph(
        "A .env file holds one setting per line, written as NAME=value. Lines that start "
        "with # are comments. This example gives the language model more passages and logs "
        "more detail:"
    )
    example = ("TOP_K=8", "LOG_LEVEL=DEBUG")
    for i, line in enumerate(example):
        _code_paragraph(doc, line, last=i == len(example) - 1)

    doc.add_heading("Checking the active configuration", 1)
    doc.add_paragraph(
        "Run python main.py config to print every setting with the value docqa will use and "
        "where that value came from: the default, the user-wide file, the project .env file, "
        "the environment or the command line. Use it whenever a change does not seem to take "
        "effect."
    )
    doc.add_heading("Invalid values", 2)
    doc.add_paragraph(
        "If a value is invalid, for example a word where a number is expected, docqa stops "
        "at start-up with a message that names the variable and the place its value came "
        "from. CHUNK_OVERLAP must be at least 0 and smaller than CHUNK_SIZE, and TOP_K must "
        "be at least 1."
    )

    doc.add_heading("Configuration variables", 1)
    doc.add_paragraph(
        "The table lists each variable with its default value and its meaning. Set a "
        "variable in a .env file or in the environment, as described above."
    )
    rows = config_table()
    table = doc.add_table(rows=len(rows), cols=3)
    table.style = "Table Grid"
    widths = (Cm(4.4), Cm(4.6), Cm(7.4))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            cell = table.cell(r, c)
            cell.width = widths[c]
            cell.text = ""
            run = cell.paragraphs[0].add_run(value)
            run.font.size = Pt(9.5)
            if r == 0:
                run.bold = True
            elif c == 0:
                run.font.name = "Courier New"
    doc.add_paragraph(
        "python main.py config also lists the advanced settings that the table leaves out, "
        "for example CANDIDATE_K, RRF_K and LLM_TEMPERATURE."
    )

    doc.add_heading("Tuning retrieval", 1)
    doc.add_paragraph(
        "Retrieval decides which passages the language model sees. If answers miss "
        "information that is in your documents, try these changes one at a time:"
    )
    for item in tuning():
        doc.add_paragraph(item, style="List Bullet")

    buf = io.BytesIO()
    doc.save(buf)
    path.write_bytes(_normalise_zip(buf.getvalue()))


# --------------------------------------------------------------------------------------
# FAQ (Markdown).
# --------------------------------------------------------------------------------------

FAQ_TEXT = """\
# docqa FAQ

Short answers to questions people often ask about docqa. The user guide
(docqa-user-guide.pdf) explains each topic step by step, and every setting is
described in docqa-configuration.docx.

## Does docqa send my documents anywhere?

No. docqa has no cloud component: your documents, the index built from them,
your questions and the answers all stay on your computer. Both the embedding
model and the language model run locally, and by default the web interface can
only be opened from the same machine.

## Which file types can I add?

PDF (`.pdf`), Word (`.docx`), Markdown (`.md`, `.markdown`, `.mdx`, `.rst`),
plain text (`.txt`) and other text formats such as `.csv`, `.json`, `.html` and
source code, and images and scanned PDFs (read with OCR). Put the files in the
`documents` folder; chapter 3 of the user guide explains limits and skipped files.

## How can I make the answers more accurate?

- Switch to llama3.2, the recommended model, instead of the small embedded
  model; chapter 5 of the user guide shows how to set it up.
- Ask about one thing at a time, in the same words as your documents.
- Read the citations: they show which passages each reply was built from.
- If the right passage is not found, change TOP_K or RETRIEVAL_MODE as
  described in docqa-configuration.docx.

## How do I rebuild the index?

Run `python main.py index --reindex`. It throws the index away and builds it
again from every file. You only need it after changing CHUNK_SIZE,
CHUNK_OVERLAP or EMBEDDING_MODEL: new and changed files are indexed
automatically at the next start.

## Why does an answer say the documents do not cover it?

docqa answers only from the passages it finds for your question. When none of
them contains the answer, it replies "The documents do not cover this." instead
of making something up. Usually one of these is the reason:

- The information is not in your documents.
- The file was skipped while indexing; `python main.py stats` shows what is
  indexed.
- The question uses different words than the document; rephrase it with the
  document's own words.

## How fast is indexing?

It depends on your computer and on how much text your documents hold, because
every chunk is turned into a vector on the CPU. A handful of short files is
ready in seconds; hundreds of long PDFs take minutes. Only the first run pays
the full cost: after that, docqa indexes only the files that are new or changed.

## Does docqa work with documents that are not in English?

It works best in English. The packaged embedding model, all-MiniLM-L6-v2, was
trained on English text, so vector search is most accurate for English
documents and questions. Keyword search (BM25) matches exact words in any
language, so the default hybrid mode still finds passages that share words
with your question. For documents in other languages, set EMBEDDING_MODEL to a
local multilingual sentence-transformers model and rebuild the index.

## Can I open docqa from another computer?

Not by default: the web interface listens on 127.0.0.1, which only the same
computer can reach. Setting GRADIO_SERVER_NAME=0.0.0.0 makes it reachable from
your network, and then anyone who can reach it can ask about your documents.
Do this only on a network you trust.

## Where does docqa keep its data?

In the `data` folder (the DB_DIR setting): the vector store, the keyword index,
the manifest of indexed files and a cache of converted text. Deleting this
folder makes docqa forget everything it has indexed. Your documents are not
touched, and the next start indexes them again.
"""


def build_faq(path: Path) -> None:
    path.write_bytes(FAQ_TEXT.encode("utf-8"))


# --------------------------------------------------------------------------------------
# Checks and command line.
# --------------------------------------------------------------------------------------


def _places(out_dir: Path) -> dict[tuple[str, int | None], str]:
    """Text of every citable place: (file, page) for the PDF, (file, None) otherwise."""
    pymupdf = _import_pymupdf()
    import docx

    places: dict[tuple[str, int | None], str] = {}
    with pymupdf.open(out_dir / USER_GUIDE) as pdf:
        for i, page in enumerate(pdf, start=1):
            places[(USER_GUIDE, i)] = page.get_text()
    d = docx.Document(str(out_dir / CONFIGURATION))
    parts = [p.text for p in d.paragraphs]
    for table in d.tables:
        for row in table.rows:
            parts.append(" | ".join(cell.text for cell in row.cells))
    places[(CONFIGURATION, None)] = "\n".join(parts)
    places[(FAQ, None)] = (out_dir / FAQ).read_text(encoding="utf-8")
    return places


def check_outputs(out_dir: Path) -> list[str]:
    """Problems with the generated documents (empty list when all is well).

    Each example question's terms must all appear in its expected place and, together,
    in no other place; PDF headings must be larger than body text.
    """
    problems: list[str] = []
    places = _places(out_dir)
    for question in EXAMPLE_QUESTIONS:
        expected = EXPECTED_SOURCES[question]
        key = (expected["file"], expected["page"])
        terms = expected["terms"]
        if key not in places:
            problems.append(f"{question!r}: no place {key}")
            continue
        missing = [t for t in terms if t not in places[key]]
        if missing:
            problems.append(f"{question!r}: {key} lacks {missing}")
        others = [k for k, text in places.items() if k != key and all(t in text for t in terms)]
        if others:
            problems.append(f"{question!r}: terms also all found in {others}")
    pymupdf = _import_pymupdf()
    with pymupdf.open(out_dir / USER_GUIDE) as pdf:
        if not 4 <= pdf.page_count <= 6:
            problems.append(f"user guide has {pdf.page_count} pages")
        for i, page in enumerate(pdf, start=1):
            spans = [
                s
                for b in page.get_text("dict")["blocks"]
                for line in b.get("lines", [])
                for s in line["spans"]
                if s["text"].strip()
            ]
            body = max((s["size"] for s in spans if s["font"] == "Helvetica"), default=0)
            heads = [s for s in spans if "Bold" in s["font"] and s["size"] > body]
            if not heads:
                problems.append(f"user guide page {i}: no heading larger than body text")
            for s in spans:
                x0, y0, x1, y1 = s["bbox"]
                if x0 < 0 or y0 < 0 or x1 > page.rect.width or y1 > page.rect.height:
                    problems.append(f"user guide page {i}: text off the page: {s['text']!r}")
    return problems


def build_all(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / USER_GUIDE, out_dir / CONFIGURATION, out_dir / FAQ]
    build_user_guide(paths[0])
    build_configuration(paths[1])
    build_faq(paths[2])
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate docqa's example documents.")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--check", action="store_true", help="also check the generated documents and fail on problems"
    )
    args = parser.parse_args(argv)
    for path in build_all(args.out):
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    if args.check:
        problems = check_outputs(args.out)
        for problem in problems:
            print(f"problem: {problem}", file=sys.stderr)
        if problems:
            return 1
        print("check: all example questions point to one place; headings OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
