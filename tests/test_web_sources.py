"""The source list in a real browser: a question about one document of the folder lists no passage
of an unrelated document beside it; the weak matches are counted, one click away.

`python main.py serve` runs as a subprocess over the shipped user guide and a licence text that
no question about docqa concerns; the Ollama stand-in writes the answer, so the test measures the
list, not a model. Chromium comes from Debian, as in tests/test_web_ui.py; without it the test
skips, unless DOCQA_REQUIRE_BROWSER=1 makes that a failure. It waits for elements, never for the
network to go idle (Gradio keeps a connection open).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config import SETTING_FIELDS, env_name
from ollama_standin import OllamaStandin
from serving import ServerDidNotStart, free_port, running, wait_until_indexed

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
UNRELATED = ROOT / "licenses" / "Qwen2.5-Coder-LICENSE.txt"
GUIDE = "docqa-user-guide.pdf"
QUESTION = "which python version does it need"  # answered on the guide's page 2; the licence fills the slots past MAX_CHUNKS_PER_FILE
ANSWER_TIMEOUT_MS = 180_000


@pytest.fixture(scope="module")
def server_url(tmp_path_factory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("web_sources")
    docs = tmp / "documents"
    docs.mkdir()
    shutil.copy(ROOT / "documents" / GUIDE, docs / GUIDE)
    shutil.copy(UNRELATED, docs / UNRELATED.name)  # copies: the indexer refuses links
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    env = {k: v for k, v in os.environ.items() if k not in {env_name(f.name) for f in SETTING_FIELDS}}
    with OllamaStandin(pieces=["docqa needs ", "Python 3.11 [1]."]) as ollama:
        env.update(
            XDG_CONFIG_HOME=str(tmp / "xdg"), DOCQA_ENV_FILE=str(tmp / "no-project.env"), DOCS_DIR=str(docs),
            DB_DIR=str(tmp / "data"), GRADIO_SERVER_PORT=str(port), LLM_BACKEND="ollama", OLLAMA_HOST=ollama.url,
            PYTHONUNBUFFERED="1",
        )
        try:
            with running([sys.executable, "main.py", "serve"], url, tmp / "server.log", env, ROOT, 300):
                wait_until_indexed(url)
                yield url
        except ServerDidNotStart as exc:
            pytest.fail(str(exc))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing: install Debian's Chromium with `apt-get install chromium`"
        if os.environ.get("DOCQA_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.mark.browser
@pytest.mark.slow
def test_a_question_about_one_document_lists_no_passage_of_the_unrelated_one(browser, server_url):
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.goto(server_url)
        page.locator("#docqa-chat").wait_for()  # Gradio builds the page in the browser
        box = page.locator("#docqa-question textarea")
        box.fill(QUESTION)
        box.press("Enter")
        page.locator("#docqa-chat [data-testid='bot']").first.filter(has_text="— ollama:").wait_for(timeout=ANSWER_TIMEOUT_MS)
        sources = page.locator("#docqa-sources")
        more = sources.locator("details.docqa-weak")
        summary = more.locator(":scope > summary")  # a long card has a "Whole passage" one of its own
        expect(summary).to_contain_text("more weak match", timeout=ANSWER_TIMEOUT_MS)
        listed = sources.locator(".docqa-source:visible")
        expect(listed.first).to_contain_text(GUIDE)
        assert all(UNRELATED.name not in text for text in listed.all_inner_texts()), "no licence passage among the listed sources"
        hidden = more.locator(".docqa-source").filter(has_text=UNRELATED.name)
        expect(hidden.first).to_be_hidden()
        summary.click()  # one click away
        expect(hidden.first).to_be_visible()
    finally:
        context.close()
