"""The web UI in a real browser: `python main.py serve` as a subprocess, driven by Playwright.

One server runs for the module, over a copy of the shipped documents plus one hostile
document whose text is HTML and a markdown image. Chromium comes from Debian
(`apt-get install chromium`); without it the browser tests skip, unless
DOCQA_REQUIRE_BROWSER=1 makes that a failure.

Gradio keeps a connection open, so the tests wait for elements and text, never for the
network to go idle. Set DOCQA_UPDATE_SCREENSHOT=1 to refresh docs/screenshot.png.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import web_ui
from config import SETTING_FIELDS, env_name
from scripts.make_documents import EXAMPLE_QUESTIONS, EXPECTED_SOURCES

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SCREENSHOT = ROOT / "docs" / "screenshot.png"

SERVER_START_S = 300  # indexing and model set-up on two busy cores
ANSWER_TIMEOUT_MS = 180_000

HOSTILE_DOCUMENT = """# Lighthouse notes

The lighthouse keeper's parrot is called Captain Biscuit and eats sunflower seeds.

<script>window.__pwned=1</script>

![x](http://127.0.0.1:9/x.png)

<img src="http://127.0.0.1:9/y.png" onerror="window.__pwned=2">
"""
HOSTILE_QUESTION = (
    "What is the lighthouse keeper's parrot called? "
    "<img src=http://127.0.0.1:9/q.png onerror=window.__pwned=3> ![q](http://127.0.0.1:9/q2.png) "
    "&lt;img src=http://127.0.0.1:9/q3.png onerror=window.__pwned=4&gt;"
)
NOWHERE = "127.0.0.1:9"


# ---------------------------------------------------------------- fast checks, no server


def test_example_buttons_ask_the_questions_the_documents_answer():
    assert web_ui.EXAMPLE_QUESTIONS == EXAMPLE_QUESTIONS


def test_safe_markdown_leaves_no_html_and_no_image():
    shown = web_ui.safe_markdown("<script>x()</script> ![x](http://127.0.0.1:9/x.png) a && b")
    assert "<" not in shown
    assert "![" not in shown
    assert "a && b" in shown


def test_sources_panel_escapes_document_text():
    chunk = SimpleNamespace(title="t")
    passage = SimpleNamespace(
        source="<b>evil</b>.md",
        location="lines 1-3",
        heading_path=["<i>Notes</i>"],
        found_by={"bm25": 1},
        score=0.5,
        text="# Notes\n<script>window.__pwned=1</script>",
        first=chunk,
    )
    answer = SimpleNamespace(passages=[passage], model="m", timings={"total_s": 1.0}, done=True)
    shown = web_ui.sources_html(answer)
    assert "<script>" not in shown and "<b>" not in shown and "<i>" not in shown
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in shown
    assert "lines 1-3" in shown and "score 0.5000" in shown


# ---------------------------------------------------------------- the real app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(tmp: Path, docs: Path, port: int) -> dict[str, str]:
    """The caller's environment minus any docqa setting, plus the ones this server needs."""
    env = {k: v for k, v in os.environ.items() if k not in {env_name(f.name) for f in SETTING_FIELDS}}
    env.update(
        XDG_CONFIG_HOME=str(tmp / "xdg"),
        DOCQA_ENV_FILE=str(tmp / "no-project.env"),
        DOCS_DIR=str(docs),
        DB_DIR=str(tmp / "data"),
        GRADIO_SERVER_PORT=str(port),
        LLM_BACKEND="llamacpp",
        LLM_MAX_TOKENS="48",
        OLLAMA_HOST=f"http://{NOWHERE}",
        PYTHONUNBUFFERED="1",
    )
    return env


def log_tail(log: Path, chars: int = 4000) -> str:
    return log.read_text(errors="replace")[-chars:] if log.exists() else "(no output)"


def wait_until_serving(proc: subprocess.Popen, url: str, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"`python main.py serve` exited with {proc.returncode}:\n{log_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    pytest.fail(f"`python main.py serve` did not answer at {url} within {SERVER_START_S}s:\n{log_tail(log)}")


@pytest.fixture(scope="module")
def docqa_url(tmp_path_factory) -> Iterator[str]:
    """`python main.py serve` over the shipped documents plus the hostile one; killed at the end."""
    tmp = tmp_path_factory.mktemp("web_ui")
    docs = tmp / "documents"
    shutil.copytree(ROOT / "documents", docs)
    (docs / "lighthouse-notes.md").write_text(HOSTILE_DOCUMENT, encoding="utf-8")
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log = tmp / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "main.py", "serve"],
            cwd=ROOT,
            env=server_env(tmp, docs, port),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until_serving(proc, url, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@pytest.fixture(scope="module")
def chromium_path() -> Path:
    if CHROMIUM.exists():
        return CHROMIUM
    message = (
        f"{CHROMIUM} is missing, so the browser tests cannot run: install Debian's Chromium with "
        "`apt-get install chromium`"
    )
    if os.environ.get("DOCQA_REQUIRE_BROWSER") == "1":
        pytest.fail(message + " (DOCQA_REQUIRE_BROWSER=1 makes this a failure)")
    pytest.skip(message + ", or set DOCQA_REQUIRE_BROWSER=1 to fail instead of skipping")


@pytest.fixture(scope="module")
def browser(chromium_path: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium_path), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def requested() -> list[str]:
    """Every URL the page asked for."""
    return []


@pytest.fixture
def page(browser: Any, docqa_url: str, requested: list[str]) -> Iterator[Any]:
    """A fresh page on the app, its requests recorded in `requested`."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.on("request", lambda request: requested.append(request.url))
    page.goto(docqa_url)
    page.locator("#docqa-chat").wait_for()  # Gradio builds the page in the browser
    yield page
    context.close()


def watch_answer(page: Any) -> None:
    """Record the length of the newest assistant message each time the chat changes."""
    page.evaluate(
        """() => {
            window.__answerLengths = [];
            const chat = document.querySelector('#docqa-chat');
            new MutationObserver(() => {
                const bots = chat.querySelectorAll('[data-testid="bot"]');
                if (bots.length) window.__answerLengths.push(bots[bots.length - 1].innerText.trim().length);
            }).observe(chat, {subtree: true, childList: true, characterData: true});
        }"""
    )


def finished_answer(page: Any) -> Any:
    """The newest assistant message once it carries its model footer ("— llama.cpp:…")."""
    bot = page.locator("#docqa-chat [data-testid='bot']").last
    bot.filter(has_text="— llama.cpp:").wait_for(timeout=ANSWER_TIMEOUT_MS)
    return bot


@pytest.mark.browser
@pytest.mark.slow
def test_example_question_streams_an_answer_citing_its_page(page, tmp_path):
    from playwright.sync_api import expect

    question = EXAMPLE_QUESTIONS[0]
    expected = EXPECTED_SOURCES[question]
    watch_answer(page)
    page.get_by_role("button", name=question).click()

    bot = finished_answer(page)
    lengths = page.evaluate("window.__answerLengths")
    final = bot.inner_text().strip()
    growing = sorted({n for n in lengths if 0 < n < len(final)})
    assert len(growing) >= 3, f"the answer arrived in one piece, not streamed: lengths seen {lengths}"
    expect(page.locator("#docqa-chat [data-testid='user']")).to_have_text(question)

    sources = page.locator("#docqa-sources")
    expect(sources).to_contain_text(re.compile(rf"{re.escape(expected['file'])} — pages? {expected['page']}(?!\d)"))
    expect(sources).to_contain_text("score ")
    model = re.search(r"Answered by (llama\.cpp:\S+) in", sources.inner_text())
    assert model, sources.inner_text()
    assert f"— {model[1]}" in final
    expect(page.locator("#docqa-status")).to_contain_text(f"model: {model[1]}")

    shot = tmp_path / "screenshot.png"
    page.screenshot(path=str(shot))
    if os.environ.get("DOCQA_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)

    page.get_by_role("button", name="New chat").click()
    expect(page.locator("#docqa-chat [data-testid='bot']")).to_have_count(0)
    expect(sources).to_have_text("Sources appear here.")


@pytest.mark.browser
@pytest.mark.slow
def test_document_and_question_markup_is_shown_as_text(page, requested):
    from playwright.sync_api import expect

    question_box = page.locator("#docqa-question textarea")
    question_box.fill(HOSTILE_QUESTION)
    question_box.press("Enter")
    finished_answer(page)

    sources = page.locator("#docqa-sources")
    expect(sources).to_contain_text("lighthouse-notes.md")
    expect(sources).to_contain_text("<script>window.__pwned=1</script>")
    expect(sources).to_contain_text("![x](http://127.0.0.1:9/x.png)")
    expect(page.locator("#docqa-chat [data-testid='user']")).to_contain_text("<img src=")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img[src*='127.0.0.1:9']").count() == 0
    assert [url for url in requested if NOWHERE in url] == []
    app = page.url.split("?")[0]
    elsewhere = [url for url in requested if not url.startswith((app, "data:", "blob:"))]
    assert elsewhere == [], "the page asked for something beyond docqa itself"


@pytest.mark.slow
def test_api_offers_only_the_ask_endpoint(docqa_url):
    with urllib.request.urlopen(docqa_url + "gradio_api/info", timeout=30) as response:
        info = json.load(response)
    assert list(info["named_endpoints"]) == ["/ask"]
    assert info["unnamed_endpoints"] == {}
