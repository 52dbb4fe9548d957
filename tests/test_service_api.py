"""docqa as a service, driven by clients no one here wrote: the official `openai` and `mcp` SDKs,
plus plain HTTP for the REST routes, against the real serve app (UI and APIs on one port).

The shipped documents are indexed once for the module; answers come from the Ollama stand-in,
so no model runs.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from conftest import ROOT, module_settings, rag_with
from ollama_standin import OllamaStandin
from serving import free_port

QUESTION = "Which two commands set up and run docqa?"
PIECES = ["Run ", "`make run` to set up and serve docqa, and `make test` to run its tests [1]."]
GUIDE = "docqa-user-guide.pdf"


def start_uvicorn(app, port: int):
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="docqa-api", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the serve app did not start")
        time.sleep(0.05)
    return server, thread


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder):
    """The app `main.py serve` runs, on a free loopback port, over the indexed shipped documents."""
    from web_ui import serving_app

    home = tmp_path_factory.mktemp("service")
    shutil.copytree(ROOT / "documents", home / "documents")
    with OllamaStandin(pieces=PIECES) as ollama:
        rag = rag_with(module_settings(home, llm_backend="ollama", ollama_host=ollama.url), embedder)
        rag.index()
        server, thread = start_uvicorn(serving_app(rag), free_port())
        host, port = server.servers[0].sockets[0].getsockname()[:2]
        try:
            yield type("Served", (), {"url": f"http://{host}:{port}", "rag": rag, "home": home, "ollama": ollama})
        finally:
            server.should_exit = True
            thread.join(timeout=15)
            rag.close()


def guide_page_2(sources: list[dict]) -> bool:
    """The user guide's page 2 says it; a passage there may run over from page 1."""
    return any(s["source"] == GUIDE and (s["page"] == 2 or 2 in (s["pages"] or [])) for s in sources)


# ---------------------------------------------------------------- OpenAI-compatible, with the openai client


def test_openai_client_gets_an_answer_citing_the_right_file_and_page(served):
    from openai import OpenAI

    client = OpenAI(base_url=f"{served.url}/v1", api_key="unused-on-loopback")
    assert [m.id for m in client.models.list()] == ["docqa"]
    reply = client.chat.completions.create(model="docqa", messages=[{"role": "user", "content": QUESTION}])
    text = reply.choices[0].message.content
    assert "make run" in text and "[1]" in text
    assert f"Sources:\n[1] {GUIDE}, page" in text
    docqa = reply.model_extra["docqa"]
    assert docqa["question"] == QUESTION and guide_page_2(docqa["sources"])


def test_openai_client_streams_quotes_tokens_and_sources(served):
    from openai import OpenAI

    client = OpenAI(base_url=f"{served.url}/v1", api_key="unused-on-loopback")
    stream = client.chat.completions.create(model="docqa", stream=True, messages=[
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is docqa?"},
        {"role": "assistant", "content": "A local question-answering app."},
        {"role": "user", "content": QUESTION},
    ])
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert "make run" in text and f"Sources:\n[1] {GUIDE}, page" in text
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert guide_page_2(chunks[-1].model_extra["docqa"]["sources"])


def test_openai_errors_come_in_openai_shape(served):
    import openai
    from openai import OpenAI

    client = OpenAI(base_url=f"{served.url}/v1", api_key="x")
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    assert info.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError, match="last message must be the user"):
        client.chat.completions.create(model="docqa", messages=[{"role": "assistant", "content": "hi"}])
    malformed = httpx.post(f"{served.url}/v1/chat/completions", json={"model": "docqa", "messages": "hi"})
    assert malformed.status_code == 422
    assert "messages" in malformed.json()["error"]["message"]


def test_a_stream_that_fails_midway_ends_with_an_error_event():
    from answer_types import Answer
    from openai_api import completion_chunks
    from service_api import answer_events

    def failing():
        yield Answer(question="q", text="Partly")
        raise RuntimeError("the model went away")

    last = list(completion_chunks(failing()))[-1]
    assert json.loads(last.removeprefix("data: "))["error"]["message"] == "Unexpected error: RuntimeError: the model went away"
    assert list(answer_events(failing()))[-1].startswith("event: error\ndata: ")


# ---------------------------------------------------------------- REST


def test_search_returns_passages_with_places_without_the_model(served):
    asked_before = len(served.ollama.requests)
    r = httpx.post(f"{served.url}/api/search", json={"query": "make run make test", "k": 3, "where": {"ext": "pdf"}})
    assert r.status_code == 200, r.text
    passages = r.json()["passages"]
    assert passages and all(p["source"] == GUIDE for p in passages)
    assert passages[0]["place"].startswith(f"{GUIDE}, page ") and passages[0]["n"] == 1
    assert len(served.ollama.requests) == asked_before


def test_ask_returns_what_ask_json_prints(served):
    r = httpx.post(f"{served.url}/api/ask", json={"question": QUESTION}, timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) >= {"question", "answer", "sources", "quotes", "unsupported", "timings"}
    assert guide_page_2(body["sources"])


def test_ask_streams_quotes_tokens_then_the_answer(served):
    events = []
    with httpx.stream("POST", f"{served.url}/api/ask", json={"question": QUESTION, "stream": True}, timeout=60) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        for block in r.read().decode().split("\n\n"):
            if block.strip():
                kind, data = block.split("\n", 1)
                events.append((kind.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    kinds = [k for k, _ in events]
    assert kinds[0] == "quotes" and "token" in kinds and kinds[-1] == "answer"
    assert guide_page_2(events[-1][1]["sources"])


def test_documents_and_status(served):
    docs = httpx.get(f"{served.url}/api/documents").json()["documents"]
    assert {d["source"] for d in docs if d["state"] == "indexed"} >= {GUIDE, "faq.md"}
    status = httpx.get(f"{served.url}/api/status").json()
    assert status["index"]["state"] == "idle" and status["files"] >= 3
    assert status["models"]["llm_backend"] == "ollama" and status["models"]["embedding"]


def test_upload_then_delete_a_document(served):
    note = b"# Kettles\n\nThe blue kettle boils water in ninety seconds.\n"
    r = httpx.post(f"{served.url}/api/documents", files={"files": ("kettle notes.md", note, "text/markdown")}, timeout=120)
    assert r.status_code == 201, r.text
    added = r.json()["added"][0]
    assert added["source"] == "kettle notes.md" and added["state"] == "indexed"
    refused = httpx.post(f"{served.url}/api/documents", files={"files": ("tool.exe", b"MZ", "application/octet-stream")})
    assert refused.status_code == 400 and "not supported" in refused.json()["detail"]
    gone = httpx.delete(f"{served.url}/api/documents/kettle notes.md", timeout=120)
    assert gone.status_code == 200, gone.text
    assert "kettle notes.md" not in {d["source"] for d in httpx.get(f"{served.url}/api/documents").json()["documents"]}
    assert httpx.delete(f"{served.url}/api/documents/kettle notes.md").status_code == 404


def test_oversized_body_is_413_and_malformed_is_422_with_a_message(served):
    big = httpx.post(f"{served.url}/api/ask", content=b"{" + b" " * 2_000_000 + b"}", headers={"content-type": "application/json"})
    assert big.status_code == 413 and "API_MAX_BODY_MB" in big.json()["detail"]
    bad = httpx.post(f"{served.url}/api/ask", json={"question": "", "k": "many"})
    assert bad.status_code == 422
    assert "question" in bad.json()["detail"] and "k" in bad.json()["detail"]
    wrong = httpx.post(f"{served.url}/api/search", json={"query": "x", "where": {"colour": "red"}})
    assert wrong.status_code == 400 and "source" in wrong.json()["detail"]


def test_twenty_concurrent_requests_each_get_their_own_answer(served):
    questions = [f"{QUESTION} (request {n})" for n in range(20)]

    def ask(q: str) -> dict:
        r = httpx.post(f"{served.url}/api/ask", json={"question": q}, timeout=180)
        assert r.status_code == 200, r.text
        return r.json()

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(ask, questions))
    assert [a["question"] for a in answers] == questions
    assert all(a["sources"] for a in answers)


def test_the_ui_is_served_on_the_same_port_and_answers_through_its_queue(served):
    from gradio_client import Client

    assert "gradio" in httpx.get(f"{served.url}/").text.lower()
    assert list(httpx.get(f"{served.url}/gradio_api/info").json()["named_endpoints"]) == ["/ask"]
    chat = Client(served.url, verbose=False).predict(QUESTION, [], [], [], api_name="/ask")[0]
    assert "make run" in str(chat[-1]["content"])
    assert httpx.get(f"{served.url}/api/docs").status_code == 200
    assert "/api/ask" in httpx.get(f"{served.url}/api/openapi.json").json()["paths"]


# ---------------------------------------------------------------- keys and limits


def guarded_app(keys: list[str], **settings):
    from api_guard import ApiGuard
    from config import load_settings

    async def ok(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    return ApiGuard(ok, load_settings(overrides=settings, environ={}), keys)


def call(app, path: str, client: str = "127.0.0.1", key: str | None = None) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=(client, 5000))
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with httpx.AsyncClient(transport=transport, base_url="http://docqa") as c:
            return await c.get(path, headers=headers)

    return asyncio.run(go())


def test_off_loopback_without_a_key_is_401_and_on_loopback_is_let_in():
    open_app = guarded_app([])
    assert call(open_app, "/api/status").status_code == 200
    refused = call(open_app, "/api/status", client="192.168.1.20")
    assert refused.status_code == 401 and "DOCQA_API_KEYS" in refused.json()["detail"]
    assert call(open_app, "/v1/models", client="192.168.1.20").json()["error"]["code"] == "invalid_api_key"
    assert call(open_app, "/", client="192.168.1.20").status_code == 200, "the UI has its own login"


def test_with_keys_every_client_needs_the_right_one():
    app = guarded_app(["k-alpha", "k-beta"])
    assert call(app, "/api/status").status_code == 401
    assert call(app, "/api/status", key="k-wrong").status_code == 401
    assert call(app, "/mcp", client="10.0.0.9", key="k-beta").status_code == 200
    assert call(app, "/api/docs", client="10.0.0.9").status_code == 200


def test_a_client_over_the_rate_limit_gets_429():
    app = guarded_app([], api_rate_limit_per_minute=3)
    assert [call(app, "/api/status").status_code for _ in range(4)] == [200, 200, 200, 429]


def test_api_keys_come_from_the_setting_and_the_file(tmp_path):
    from api_guard import load_api_keys
    from config import load_settings

    keys = tmp_path / "keys"
    keys.write_text("# team\nk-file\n", encoding="utf-8")
    settings = load_settings(overrides={"docqa_api_keys": "k1, k2", "docqa_api_key_file": str(keys)}, environ={})
    assert load_api_keys(settings) == ["k1", "k2", "k-file"]


# ---------------------------------------------------------------- MCP, with the mcp client


async def mcp_search(session) -> None:
    await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == {"search_documents", "ask_documents", "list_documents"}
    assert all(t.description for t in tools.values())
    found = await session.call_tool("search_documents", {"query": "make run make test", "k": 3})
    passages = found.structured_content["passages"]
    assert guide_page_2(passages[:1])
    assert f"[1] {GUIDE}, page" in found.content[0].text
    listed = await session.call_tool("list_documents", {})
    assert GUIDE in {d["source"] for d in listed.structured_content["documents"]}
    resources = {r.name: r for r in (await session.list_resources()).resources}
    assert {"faq.md", GUIDE} <= set(resources)
    faq = await session.read_resource(resources["faq.md"].uri)
    assert faq.contents[0].text == (ROOT / "documents" / "faq.md").read_text(encoding="utf-8")


def test_mcp_over_http_at_slash_mcp(served):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def go() -> None:
        async with streamable_http_client(f"{served.url}/mcp") as (read, write):
            async with ClientSession(read, write) as session:
                await mcp_search(session)
                answer = await session.call_tool("ask_documents", {"question": QUESTION})
                assert guide_page_2(answer.structured_content["citations"])

    asyncio.run(go())


def readme_mcp_config(docs: Path, data: Path) -> dict:
    """The stdio client configuration the README gives, with this checkout's paths put in."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split('```json\n{\n  "mcpServers"', 1)[1].split("```", 1)[0]
    text = ('{\n  "mcpServers"' + block).replace("/path/to/docqa/.venv/bin/python", sys.executable)
    text = text.replace("/path/to/your/documents", str(docs)).replace("/path/to/docqa/data", str(data))
    return json.loads(text.replace("/path/to/docqa", str(ROOT)))["mcpServers"]["docqa"]


def test_mcp_over_stdio_with_the_readme_configuration(tmp_path, served):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    shutil.copytree(ROOT / "documents", tmp_path / "documents")
    config = readme_mcp_config(tmp_path / "documents", tmp_path / "data")
    assert config["args"][-1] == "mcp"
    isolated = {  # no user or project .env, the Ollama stand-in, no network
        "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "DOCQA_ENV_FILE": str(tmp_path / "none.env"),
        "LLM_BACKEND": "ollama", "OLLAMA_HOST": served.ollama.url, "HF_HUB_OFFLINE": "1", "LOG_LEVEL": "WARNING",
    }
    params = StdioServerParameters(command=config["command"], args=config["args"], env={**config["env"], **isolated})

    async def go() -> None:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await mcp_search(session)

    asyncio.run(asyncio.wait_for(go(), timeout=300))
