"""Twenty concurrent chat sessions through the Gradio API: all answered, none mixed up."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from load import docqa_server, run_load, write_documents  # noqa: E402

SESSIONS = 20


@pytest.mark.slow
def test_twenty_concurrent_sessions_are_all_answered_with_their_own_sources(tmp_path):
    docs, data = tmp_path / "docs", tmp_path / "data"
    write_documents(docs, SESSIONS)
    env = {"LLM_BACKEND": "llamacpp", "LLM_MAX_TOKENS": "4", "RATE_LIMIT_PER_MINUTE": "0", "UI_CONCURRENCY": "4"}
    with docqa_server(docs, data, env) as url:
        result = run_load(url, SESSIONS)
    assert result["failed"] == [], result["failed"][:3]
    assert result["answered"] == SESSIONS
    assert result["own_sources_first"] == SESSIONS, result
    assert result["p95_s"] > 0


@pytest.mark.slow
def test_rate_limit_answers_with_a_clear_message(tmp_path):
    from gradio_client import Client

    docs, data = tmp_path / "docs", tmp_path / "data"
    write_documents(docs, 2)
    env = {"LLM_BACKEND": "llamacpp", "LLM_MAX_TOKENS": "2", "RATE_LIMIT_PER_MINUTE": "2"}
    with docqa_server(docs, data, env) as url:
        client = Client(url, verbose=False)
        for animal in ("zorbat", "quillfin"):
            chat, _ = client.predict(f"What does the {animal} eat?", [], [], [], api_name="/ask")
            assert "Too many questions" not in str(chat[-1]["content"])
        chat, _ = client.predict("What does the zorbat eat?", [], [], [], api_name="/ask")
    last = str(chat[-1]["content"])  # a string, or Gradio's list of text parts
    assert "Too many questions" in last and "RATE_LIMIT_PER_MINUTE" in last
