"""Behaviour of the command line: `python main.py index / ask / stats / config / check`.

The CLI runs as a real subprocess on copies of the shipped documents. Each start costs
seconds (torch, Chroma), so the folder is indexed once per module, and the loop over the
example questions calls `main.main()` in this process with a local Ollama stand-in as the
model. Generating with the real llama.cpp model and indexing all of Think Python are `slow`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from answer_render import cited_numbers
from config import SETTING_FIELDS, env_name
from conftest import ROOT, THINKPYTHON_PDF, THINKPYTHON_QA, module_settings, rag_with, require
from ollama_standin import OllamaStandin


def load_make_documents() -> Any:
    spec = importlib.util.spec_from_file_location("make_documents", ROOT / "scripts" / "make_documents.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_documents = load_make_documents()
EXAMPLE_QUESTIONS = make_documents.EXAMPLE_QUESTIONS
EXPECTED_SOURCES = make_documents.EXPECTED_SOURCES
SETTING_NAMES = [env_name(f.name) for f in SETTING_FIELDS]


def cli_env(home: Path, **settings: str) -> dict[str, str]:
    """The parent's environment without any docqa setting or proxy, plus empty config files and `settings`."""
    drop = set(SETTING_NAMES) | {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        XDG_CONFIG_HOME=str(home / "xdg"),
        DOCQA_ENV_FILE=str(home / "no-project.env"),
        LLM_BACKEND="llamacpp",
        LLM_MAX_TOKENS="24",
        PYTHONIOENCODING="utf-8",
    )
    env.update(settings)
    return env


def run_cli(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "main.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> dict[str, Any]:
    """Copies of the shipped documents, indexed once by `python main.py index`."""
    home = tmp_path_factory.mktemp("cli")
    docs = home / "documents"
    shutil.copytree(ROOT / "documents", docs)
    env = cli_env(home, DOCS_DIR=str(docs), DB_DIR=str(home / "data"))
    result = run_cli(["index"], env)
    assert result.returncode == 0, result.stderr
    return {"home": home, "docs": docs, "db": home / "data", "env": env, "index": result}


# --- index, stats, check -------------------------------------------------------------------


def test_index_reports_every_shipped_file(shipped):
    out = shipped["index"].stdout
    assert "Indexed: 3 added, 0 updated, 0 removed, 0 unchanged, 0 failed" in out
    assert re.search(r"^3 files, \d+ chunks in the index\.$", out, re.M)
    assert "Traceback" not in shipped["index"].stderr


PROGRESS = re.compile(r"(\d+)(?:/(\d+)|chunk) \[.*?(\d+)/(\d+) files read\]")
"""A state of the indexing bar: chunks embedded, of how many (none until a file is read), and files read of all."""


def test_index_progress_counts_chunks_and_is_full_only_when_the_last_is_embedded(shipped):
    """The bar once stood at "3/3 files" while the chunks took seconds more to embed."""
    lines = re.split(r"[\r\n]", shipped["index"].stderr)
    found = [PROGRESS.search(line) for line in lines if line.startswith("Embedding chunks:")]
    states = [tuple(int(g) if g else None for g in m.groups()) for m in found if m]
    chunks = int(re.search(r"(\d+) chunks in the index", shipped["index"].stdout).group(1))
    assert states and states[-1] == (chunks, chunks, 3, 3), f"it ends at every chunk embedded: {states[-3:]}"
    full = [i for i, (done, total, _, _) in enumerate(states) if total is not None and done >= total]
    assert full and all(states[i][0] == chunks for i in full), "full only once every chunk is embedded"
    assert any(files == 3 and done < chunks for done, _, files, _ in states), "all files read, chunks still embedding: not full"


def test_stats_json_describes_the_index(shipped):
    result = run_cli(["stats", "--json"], shipped["env"])
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    chunks = int(re.search(r"(\d+) chunks in the index", shipped["index"].stdout).group(1))
    assert stats["files"] == 3
    assert stats["chunks"] == chunks == stats["vector_store_chunks"] == stats["keyword_index_chunks"]
    assert stats["failed"] == {}
    assert stats["embedding_model"] == "all-MiniLM-L6-v2"  # the default: ONNX fp32, the published model's vectors
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", stats["last_indexed"])
    assert stats["files_by_type"] == {"docx": 1, "markdown": 1, "pdf": 1}


HEAVY_LIBRARIES = {
    "gradio", "fastapi", "uvicorn", "starlette", "mcp",  # serve and mcp only
    "torch", "sentence_transformers", "transformers", "onnxruntime",  # embedding a question or a file
    "llama_cpp",  # loading the embedded model
    "rapidocr", "rapidocr_onnxruntime",  # OCR of a scanned page
    "bm25s", "numba", "langchain_text_splitters", "langchain_core",  # keyword search, splitting a file
}
"""Libraries that cost from 0.2 s to several seconds to import, and that the read-only commands never use."""


def run_cli_imports(args: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, set[str]]:
    """`python main.py ARGS` run to success, and the top-level modules it imported."""
    probe = (
        "import json, sys; import main; code = main.main(sys.argv[1:]); "
        "print(json.dumps(sorted({k.split('.')[0] for k in sys.modules})), file=sys.stderr); sys.exit(code)"
    )
    result = subprocess.run([sys.executable, "-c", probe, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result, set(json.loads(result.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    ("args", "allowed"),
    [(["stats"], {"chromadb"}), (["stats", "--files"], {"chromadb"}), (["check"], {"chromadb"}), (["config"], set())],
)
def test_light_commands_import_no_heavy_library(shipped, args, allowed):
    """`stats`, `check` and `config` start in about a second: a library is imported where it is used, not at start-up."""
    result, imported = run_cli_imports(args, shipped["env"])
    assert imported & HEAVY_LIBRARIES == set()
    assert imported & {"chromadb"} <= allowed  # config opens no store


def test_indexing_a_changed_file_imports_neither_bm25s_nor_torch(tmp_path):
    """A restart after one file changed: the keyword model is rebuilt on the next search, so indexing
    reads bm25s's stop words without importing the package (numba, scipy: about 0.5 s)."""
    docs = tmp_path / "documents"
    docs.mkdir()
    shutil.copy(ROOT / "documents" / "faq.md", docs / "faq.md")
    env = cli_env(tmp_path, DOCS_DIR=str(docs), DB_DIR=str(tmp_path / "data"))
    assert run_cli(["index"], env).returncode == 0
    with (docs / "faq.md").open("a") as f:
        f.write("\nThe quokka smiles at visitors on Rottnest Island.\n")
    result, imported = run_cli_imports(["index"], env)
    assert "1 updated" in result.stdout
    assert imported & {"bm25s", "numba", "torch", "sentence_transformers"} == set()
    found = run_cli(["ask", "--no-index", "--json", "Which animal smiles at visitors on Rottnest Island?"], env)
    assert "quokka" in found.stdout.lower()


def test_stop_words_are_bm25s_own():
    from bm25s.stopwords import STOPWORDS_EN

    from keyword_index import stopwords

    assert stopwords() == frozenset(STOPWORDS_EN) and "the" in stopwords()


def test_stats_files_prints_every_file_with_its_type_extent_chunks_and_status(make_settings, embedder, monkeypatch, capsys):
    import embeddings
    import main

    settings = make_settings()
    for name in ("docqa-user-guide.pdf", "faq.md"):
        shutil.copy(ROOT / "documents" / name, settings.docs_dir / name)
    (settings.docs_dir / "blank.pdf").write_bytes(b"")
    rag = rag_with(settings, embedder)
    rag.index()
    rag.close()
    monkeypatch.setattr(embeddings, "make_embedder", lambda *args, **kwargs: embedder)  # loaded once per session
    folders = ["--docs", str(settings.docs_dir), "--db", str(settings.db_dir)]

    assert main.main(["stats", "--files", *folders]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"Name\s+Type\s+Pages or lines\s+Chunks\s+Indexed at\s+Status", header), header
    rows = {line.split()[0]: line for line in lines}
    assert list(rows) == ["blank.pdf", "docqa-user-guide.pdf", "faq.md"]
    when = r"\d{4}-\d\d-\d\d \d\d:\d\d"
    assert re.fullmatch(rf"docqa-user-guide\.pdf\s+pdf\s+6 pages\s+\d+\s+{when}\s+indexed", rows["docqa-user-guide.pdf"])
    assert re.fullmatch(rf"faq\.md\s+markdown\s+\d+ lines\s+\d+\s+{when}\s+indexed", rows["faq.md"])
    assert re.fullmatch(r"blank\.pdf\s+pdf\s+-\s+-\s+-\s+failed: the file is empty \(0 bytes\).*", rows["blank.pdf"])

    assert main.main(["stats", "--files", "--json", *folders]) == 0
    documents = {d["source"]: d for d in json.loads(capsys.readouterr().out)["documents"]}
    assert documents["faq.md"]["state"] == "indexed" and documents["faq.md"]["chunks"] > 0
    assert str(settings.docs_dir) not in documents["blank.pdf"]["reason"]


def test_check_json_on_a_clean_index_exits_0(shipped):
    result = run_cli(["check", "--json"], shipped["env"])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"consistent": True, "problems": [], "repaired": []}


# --- ask -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_ask_json_answers_with_the_embedded_model_and_cites_sources(shipped):
    question = EXAMPLE_QUESTIONS[1]
    result = run_cli(["ask", question, "--json", "--no-index", "--k", "2"], shipped["env"])  # a short prompt
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert {"answer", "model", "sources", "timings"} <= set(answer)
    assert answer["answer"].strip()
    assert answer["model"].startswith("llama.cpp:")
    assert {"retrieve_s", "first_token_s", "total_s"} <= set(answer["timings"])
    assert answer["sources"][0]["source"] == EXPECTED_SOURCES[question]["file"]
    for source in answer["sources"]:
        assert {"source", "page", "lines", "chunk_index", "score", "text"} <= set(source)


@pytest.fixture
def ask_json(shipped, embedder, monkeypatch, capsys):
    """`python main.py ask QUESTION --json`, run in this process with a local Ollama stand-in."""
    import embeddings
    import main

    monkeypatch.setattr(embeddings, "make_embedder", lambda *args, **kwargs: embedder)  # loaded once per session
    # A reply with no claim of its own: the judge leaves its citation where the model put it (a claim
    # that another passage backs is re-cited there, and the sources list the cited passages first).
    with OllamaStandin(pieces=["Yes", " [1]."]) as ollama:
        for name, value in cli_env(shipped["home"], LLM_BACKEND="ollama", OLLAMA_HOST=ollama.url).items():
            monkeypatch.setenv(name, value)
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            monkeypatch.delenv(name, raising=False)

        def ask(question: str) -> tuple[int, dict[str, Any]]:
            code = main.main(["ask", question, "--json", "--no-index", "--docs", str(shipped["docs"]), "--db", str(shipped["db"])])
            return code, json.loads(capsys.readouterr().out)

        yield ask


def assert_source_shape(source: dict[str, Any]) -> None:
    assert isinstance(source["chunk_index"], int) and source["chunk_index"] >= 0
    assert isinstance(source["score"], float) and source["score"] > 0
    assert source["text"].strip()
    kind = Path(source["source"]).suffix
    if kind == ".pdf":  # cited by page
        assert 1 <= source["page"] <= 6 and source["lines"] is None
    elif kind == ".md":  # cited by lines
        start, end = source["lines"]
        assert 1 <= start <= end and source["page"] is None
    else:  # a .docx has neither
        assert kind == ".docx" and source["page"] is None and source["lines"] is None


@pytest.mark.parametrize("question", EXAMPLE_QUESTIONS)
def test_ask_cites_the_expected_file_first(ask_json, question):
    code, answer = ask_json(question)
    assert code == 0
    shown = answer["answer"] if answer["set_aside"] is None else answer["set_aside"]  # set aside where no passage backs them
    assert shown.startswith("Yes [1]")  # the model's words reach the JSON
    expected = EXPECTED_SOURCES[question]
    top = answer["sources"][0]
    assert top["source"] == expected["file"]
    if expected["page"] is not None:
        assert top["page"] == expected["page"]
    # The words the answer is built from reach the model, from that same place.
    same_place = [s["text"] for s in answer["sources"] if (s["source"], s["page"]) == (top["source"], top["page"])]
    assert all(any(term in text for text in same_place) for term in expected["terms"])
    # The passages the answer cites are listed first; the weak matches, if any, last.
    cited = cited_numbers(answer["answer"], len(answer["sources"]))
    assert cited == list(range(1, len(cited) + 1)), cited
    weak = [s["weak"] for s in answer["sources"]]
    assert weak == sorted(weak) and len(weak) <= 5
    for source in answer["sources"]:
        assert_source_shape(source)


# --- logs stay out of the answer -----------------------------------------------------------

CODE_ANSWER_PIECES = ["Use a list:\n\n", "```python\nxs = [1, 2]\n```"]
LOG_LINE = re.compile(r"\d\d:\d\d:\d\d (DEBUG|INFO|WARNING|ERROR) [\w.]+: ")


@pytest.fixture(scope="module")
def lists_folder(tmp_path_factory) -> dict[str, Any]:
    """A one-file documents folder and an Ollama stand-in that answers with a code block."""
    home = tmp_path_factory.mktemp("logs")
    docs = home / "documents"
    docs.mkdir()
    (docs / "lists.md").write_text(
        "# Lists\n\nA Python list is written with square brackets, for example xs = [1, 2].\n", encoding="utf-8"
    )
    with OllamaStandin(pieces=CODE_ANSWER_PIECES) as ollama:
        env = cli_env(home, DOCS_DIR=str(docs), DB_DIR=str(home / "data"), LLM_BACKEND="ollama", OLLAMA_HOST=ollama.url)
        yield {"home": home, "docs": docs, "env": env}


def run_in_terminal(args: list[str], env: dict[str, str], timeout: float = 300) -> str:
    """`python main.py ARGS` with stdout and stderr on one pseudo-terminal, as a user sees them."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "main.py", *args], cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        out += data
    os.close(master)
    assert proc.wait(timeout=timeout) == 0, out.decode(errors="replace")
    return out.decode().replace("\r\n", "\n")


def test_ask_prints_the_answer_and_sources_on_stdout_and_no_log_line(lists_folder):
    result = run_cli(["ask", "How do I write a Python list?"], lists_folder["env"])
    assert result.returncode == 0, result.stderr
    assert "```python\nxs = [1, 2]\n```\n" in result.stdout and "Sources:\n[1] lists.md" in result.stdout
    assert not LOG_LINE.search(result.stdout) and not re.search(r"\b(DEBUG|INFO|WARNING)\b|bm25s|rag_system:", result.stdout)
    logs = result.stderr.splitlines()
    assert any(LOG_LINE.match(line) and " INFO rag_system: Answered" in line for line in logs), "docqa's own log lines go to stderr"
    assert [line for line in logs if " DEBUG " in line] == [], "no DEBUG line at the default level"
    libraries = {"bm25s", "httpx", "httpcore", "chromadb", "urllib3", "sentence_transformers"}
    assert [line for line in logs if LOG_LINE.match(line) and line.split()[2].split(".")[0].rstrip(":") in libraries] == []


def test_a_log_line_never_runs_on_from_the_answer_in_a_terminal(lists_folder):
    shown = run_in_terminal(["ask", "How do I write a Python list?", "--no-index"], lists_folder["env"])
    assert "\n```\n" in shown, f"the closing fence stands on its own line:\n{shown}"
    starts = [shown[m.start() - 1] for m in LOG_LINE.finditer(shown) if m.start() > 0]
    assert starts and set(starts) == {"\n"}, f"every log line starts a line of its own:\n{shown}"


def test_library_debug_lines_appear_only_with_log_level_debug(lists_folder):
    result = run_cli(["ask", "How do I write a Python list?", "--no-index", "--log-level", "DEBUG"], lists_folder["env"])
    assert result.returncode == 0, result.stderr
    assert re.search(r" DEBUG (chromadb|httpcore|sentence_transformers)[\w.]*: ", result.stderr), result.stderr[-2000:]
    assert not LOG_LINE.search(result.stdout)


# --- beside a running server ---------------------------------------------------------------



def test_read_commands_work_beside_a_running_server_and_a_second_writer_is_refused(lists_folder):
    from serving import free_port, running, wait_until_indexed

    (lists_folder["docs"] / "setup.exe").write_bytes(b"MZ not a document")
    port = free_port()
    env = {**lists_folder["env"], "GRADIO_SERVER_PORT": str(port)}
    home = lists_folder["home"]
    with running([sys.executable, "main.py", "serve"], f"http://127.0.0.1:{port}/", home / "serve.log", env, ROOT, 300) as server:
        wait_until_indexed(f"http://127.0.0.1:{port}")  # serve listens first and syncs behind the page
        stats = run_cli(["stats"], env)
        assert stats.returncode == 0, stats.stderr
        assert "files: 1\n" in stats.stdout and "  markdown: 1\n" in stats.stdout
        assert "  setup.exe: unsupported file type .exe\n" in stats.stdout, "why a document is missing, as the guide says"
        check = run_cli(["check"], env)
        assert check.returncode == 0, check.stderr
        assert check.stdout.startswith("Consistent: manifest, vector store and keyword index agree")
        asked = run_cli(["ask", "How do I write a Python list?"], env)
        assert asked.returncode == 0, asked.stderr
        assert "```python\nxs = [1, 2]\n```" in asked.stdout and "\n[1] lists.md, lines 1-3" in asked.stdout
        assert "keeps this index up to date" in asked.stderr

        for writer in (["index"], ["check", "--repair"]):
            refused = run_cli(writer, env)
            assert refused.returncode == 2 and refused.stdout == ""
            assert f"is in use by docqa (pid {server.pid})" in refused.stderr and "`stats`, `check` and `ask` work beside it" in refused.stderr
            assert "Traceback" not in refused.stderr


# --- config --------------------------------------------------------------------------------


def config_rows(stdout: str) -> dict[str, tuple[str, str]]:
    """NAME -> (value, origin) from `python main.py config`."""
    rows = {}
    for line in stdout.splitlines():
        match = re.fullmatch(r"(\S+)\s+(.*?)\s+\((.+)\)", line)
        assert match, line
        rows[match.group(1)] = (match.group(2), match.group(3))
    return rows


def test_config_prints_every_setting_with_its_origin(tmp_path):
    result = run_cli(["config"], cli_env(tmp_path))
    assert result.returncode == 0, result.stderr
    rows = config_rows(result.stdout)
    assert list(rows) == SETTING_NAMES
    assert rows["TOP_K"] == ("5", "default")
    assert rows["LLM_BACKEND"] == ("llamacpp", "environment")


def test_config_precedence_is_user_file_then_project_file_then_environment_then_flags(tmp_path):
    user_file = tmp_path / "xdg" / "docqa" / ".env"
    user_file.parent.mkdir(parents=True)
    user_file.write_text("TOP_K=3\nCHUNK_SIZE=700\nRRF_K=30\nDOCS_DIR=/from/user\n")
    project_file = tmp_path / "project.env"
    project_file.write_text("TOP_K=4\nCHUNK_SIZE=800\nDOCS_DIR=/from/project\n")
    env = cli_env(tmp_path, DOCQA_ENV_FILE=str(project_file), TOP_K="6", DOCS_DIR="/from/env")
    result = run_cli(["config", "--docs", "/from/flag"], env)
    assert result.returncode == 0, result.stderr
    rows = config_rows(result.stdout)
    assert rows["RRF_K"] == ("30", str(user_file))
    assert rows["CHUNK_SIZE"] == ("800", str(project_file))
    assert rows["TOP_K"] == ("6", "environment")
    assert rows["DOCS_DIR"] == ("/from/flag", "command line")
    assert rows["CANDIDATE_K"] == ("100", "default")


@pytest.mark.parametrize("command", [["config"], ["ask", "anything?"], ["index"]])
def test_bad_value_stops_with_one_line_naming_the_variable(tmp_path, command):
    result = run_cli(command, cli_env(tmp_path, TOP_K="abc"))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith("docqa: TOP_K='abc' from environment")


def test_bad_value_in_the_project_file_names_the_file(tmp_path):
    project_file = tmp_path / "project.env"
    project_file.write_text("RETRIEVAL_MODE=fuzzy\n")
    result = run_cli(["config"], cli_env(tmp_path, DOCQA_ENV_FILE=str(project_file)))
    assert result.returncode == 2
    assert result.stderr.strip() == f"docqa: RETRIEVAL_MODE='fuzzy' from {project_file} is not one of hybrid, vector, bm25."


# --- Retrieval quality on a real book ------------------------------------------------------

# Five answerable dev.jsonl questions, one per kind of question the set asks.
THINKPYTHON_QUESTIONS = ["dev-02", "dev-04", "dev-14", "dev-24", "dev-26"]


@pytest.fixture(scope="module")
def thinkpython_rag(tmp_path_factory, embedder):
    """Think Python indexed once for the module (about 650 chunks: the slow part)."""
    home = tmp_path_factory.mktemp("thinkpython")
    docs = home / "documents"
    docs.mkdir()
    shutil.copy(require(THINKPYTHON_PDF), docs / "thinkpython2.pdf")  # a link outside the folder would be skipped
    rag = rag_with(module_settings(home), embedder)
    report = rag.index()
    assert report.added == ["thinkpython2.pdf"] and not report.failed
    yield rag
    rag.close()


@pytest.mark.slow
def test_thinkpython_questions_find_a_gold_page_in_the_top_5(thinkpython_rag):
    rows = {q["id"]: q for q in map(json.loads, require(THINKPYTHON_QA).read_text().splitlines())}
    found = {}
    for qid in THINKPYTHON_QUESTIONS:
        question = rows[qid]
        assert question["pages"], qid
        passages = thinkpython_rag.retrieve_context(question["question"], k=5)
        pages = {page for passage in passages for page in passage.pages}
        found[qid] = bool(pages & set(question["pages"]))
    assert sum(found.values()) >= 4, found
