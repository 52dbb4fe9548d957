"""An OpenAI-compatible chat endpoint, so any OpenAI client or chat UI can ask the documents.

POST /v1/chat/completions (streamed as server-sent events, or not) and GET /v1/models, with
one model, "docqa". The last user message is the question, the earlier user and assistant
messages are the history; system messages are dropped, since docqa's own prompt is what
keeps the model to the passages. The message text is what `ask` prints: the quotes, the
answer with [n] citations, then a plain "Sources:" list. The whole answer object
(`Answer.to_json()`, as `ask --json` prints it) rides along in a `docqa` field; `k` and
`where` may be sent the same way (`extra_body={"docqa": {"k": 3}}` with the openai client).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from answer_render import answer_as_text, quote_lines
from answer_sources import added_text, as_streamed, streamed_sources_text
from api_guard import error_body
from service import guarded

if TYPE_CHECKING:
    from rag_system import Answer
    from service import Service

MODEL = "docqa"
QUOTES_TITLE = "From the documents:"


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None


class DocqaOptions(BaseModel):
    """docqa's own request options, sent beside the OpenAI ones."""

    model_config = ConfigDict(extra="forbid")
    k: int | None = Field(None, ge=1, le=50, description="Passages to answer from (TOP_K).")
    where: dict[str, str | list[str]] | None = Field(None, description='Filter, e.g. {"source": "faq.md"} or {"ext": "pdf"}.')


class ChatRequest(BaseModel):
    """OpenAI's chat request; sampling options are accepted and left to docqa's settings."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(MODEL, description='Always "docqa".')
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    docqa: DocqaOptions | None = None


def message_text(message: ChatMessage) -> str:
    """A message's text: a plain string, or the text parts of a list of parts."""
    if isinstance(message.content, str):
        return message.content
    parts = message.content or []
    return "\n".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")


def question_and_history(messages: list[ChatMessage]) -> tuple[str, list[dict[str, str]]] | str:
    """The question and the turns before it; or why the messages hold no question."""
    if messages[-1].role != "user":
        return "The last message must be the user's question (role \"user\")."
    question = message_text(messages[-1]).strip()
    if not question:
        return "The last user message is empty: put the question in its content."
    history = [{"role": m.role, "content": message_text(m)} for m in messages[:-1] if m.role in ("user", "assistant")]
    return question, [turn for turn in history if turn["content"].strip()]


def openai_error(status: int, message: str, code: str) -> JSONResponse:
    return JSONResponse(error_body("/v1/", status, message, code), status_code=status)


def completion(answer: Answer) -> dict[str, Any]:
    """A whole answer as OpenAI's chat.completion, with docqa's answer object beside it."""
    content = answer_as_text(answer)
    if answer.notice:
        content += f"\n\n⚠ {answer.notice}"
    if answer.indexing:
        content += f"\n\n{answer.indexing}"
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "docqa": answer.to_json(),
    }


def completion_chunks(updates: Iterator[Answer]) -> Iterator[str]:
    """The answer as chat.completion.chunk events: quotes, tokens, notice and sources, then [DONE].

    Text the checks set aside has already gone out; the notice after it says so, as `ask` does.
    """
    ident, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())

    def event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        chunk = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": MODEL,
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"

    yield event({"role": "assistant", "content": ""})
    streamed, shown, quoted = "", "", False
    answer: Answer | None = None
    for update in guarded(updates, lambda message: event({}, "stop", error={"message": message, "type": "server_error", "code": "answer_failed"})):
        if isinstance(update, str):
            yield update
            return
        answer = update
        if answer.quotes and not quoted and not answer.refused:
            quoted = True
            lead = f"{QUOTES_TITLE}\n{quote_lines(answer.quotes)}\n\nAnswer: "
            streamed += lead
            yield event({"content": lead})
        if added := added_text(answer, shown):
            streamed += added
            yield event({"content": added})
            shown = answer.text
    if answer is None:
        return
    tail = ""
    rewritten = answer.kind == "summary" and answer.text != shown  # a summary's draft, judged once it streamed
    if (answer.set_aside is not None or rewritten) and not quoted:
        tail += f"\n\n{as_streamed(answer, answer.text)}"  # the numbers the streamed text used
    if answer.notice:
        tail += f"\n\n⚠ {answer.notice}" + (" (the quotes above stand as the answer)" if answer.set_aside is not None and quoted else "")
    if answer.indexing:
        tail += f"\n\n{answer.indexing}"
    tail += streamed_sources_text(answer, streamed + tail)
    if tail:
        yield event({"content": tail})
    yield event({}, "stop", docqa=answer.to_json())
    yield "data: [DONE]\n\n"


def openai_router(service: Service) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["OpenAI-compatible"])

    @router.get("/models", summary="The one model: docqa")
    def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "docqa"}]}

    @router.get("/models/{model}", summary="One model, by name")
    def model(model: str) -> Any:
        if model != MODEL:
            return openai_error(404, f"The model {model!r} does not exist: docqa serves one model, {MODEL!r}.", "model_not_found")
        return {"id": MODEL, "object": "model", "created": 0, "owned_by": "docqa"}

    @router.post("/chat/completions", summary="Answer the last user message from the documents, with citations")
    def chat_completions(request: ChatRequest) -> Any:
        if request.model != MODEL:
            return openai_error(404, f"The model {request.model!r} does not exist: use model={MODEL!r}.", "model_not_found")
        asked = question_and_history(request.messages)
        if isinstance(asked, str):
            return openai_error(400, asked, "invalid_messages")
        question, history = asked
        options = request.docqa or DocqaOptions(k=None, where=None)
        if request.stream:
            updates = service.stream_answer(question, k=options.k, where=options.where, history=history)
            return StreamingResponse(completion_chunks(updates), media_type="text/event-stream")
        return completion(service.ask(question, k=options.k, where=options.where, history=history))

    return router
