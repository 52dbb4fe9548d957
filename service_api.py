"""docqa as a service: the REST routes under /api, and the one HTTP app that serves them all.

`build_service_app` makes the FastAPI app that `main.py serve` runs: REST (/api, documented at
/api/docs), OpenAI-compatible (/v1, openai_api.py) and MCP streamable HTTP (/mcp,
mcp_server.py), with the Gradio UI mounted at / by web_ui.serve. One server, one port, and
one guard (api_guard.py) for keys, rate and body size on every API route.
"""

from __future__ import annotations

import contextlib
import json
import logging
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, File, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from answer_sources import added_text
from api_guard import ApiGuard, error_body, load_api_keys
from errors import DocqaError
from service import BadRequest, Service, guarded

if TYPE_CHECKING:
    from rag_system import Answer, RAGSystem

log = logging.getLogger(__name__)

# Documents the bearer key in the OpenAPI schema; ApiGuard is what checks it.
bearer = HTTPBearer(auto_error=False, description="A key from DOCQA_API_KEYS (not needed on loopback when none is set).")

Filter = dict[str, str | list[str]]
WHERE_DOC = 'Filter by file or type: {"source": "faq.md"}, {"ext": "pdf"}, or a list of either.'


class Turn(BaseModel):
    role: Literal["user", "assistant"]
    content: str


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=4000)
    k: int | None = Field(None, ge=1, le=50, description="Passages to answer from (TOP_K).")
    where: Filter | None = Field(None, description=WHERE_DOC)
    history: list[Turn] = Field(default_factory=list, description="Earlier turns of this chat, oldest first.")
    stream: bool = Field(False, description="Server-sent events: quotes, tokens, then the answer object.")


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=4000)
    k: int | None = Field(None, ge=1, le=50)
    where: Filter | None = Field(None, description=WHERE_DOC)
    mode: Literal["hybrid", "vector", "bm25"] | None = None


class NotFound(DocqaError):
    """A route names something that is not there; the message says where to look."""


def answer_events(updates: Iterator[Answer]) -> Iterator[str]:
    """`quotes` once found, `token` as the text grows, then `answer`: the object `ask --json` prints."""
    shown, quoted = "", False
    answer: Answer | None = None
    for update in guarded(updates, lambda message: f"event: error\ndata: {json.dumps({'detail': message})}\n\n"):
        if isinstance(update, str):
            yield update
            return
        answer = update
        if answer.quotes and not quoted:
            quoted = True
            yield f"event: quotes\ndata: {json.dumps([asdict(q) for q in answer.quotes], ensure_ascii=False)}\n\n"
        if added := added_text(answer, shown):
            yield f"event: token\ndata: {json.dumps({'text': added}, ensure_ascii=False)}\n\n"
            shown = answer.text
    if answer is not None:
        yield f"event: answer\ndata: {json.dumps(answer.to_json(), ensure_ascii=False)}\n\n"


def rest_router(service: Service) -> APIRouter:
    router = APIRouter(prefix="/api", tags=["REST"], dependencies=[Depends(bearer)])

    @router.post("/ask", summary="Answer a question from the documents, with quotes and sources")
    def ask(request: AskRequest) -> Any:
        history = [t.model_dump() for t in request.history]
        if request.stream:
            updates = service.stream_answer(request.question, k=request.k, where=request.where, history=history)
            return StreamingResponse(answer_events(updates), media_type="text/event-stream")
        return service.ask(request.question, k=request.k, where=request.where, history=history).to_json()

    @router.post("/search", summary="The passages that match a query, with their places; no model is called")
    def search(request: SearchRequest) -> dict[str, Any]:
        return {"query": request.query, "passages": service.search(request.query, request.k, request.where, request.mode)}

    @router.get("/documents", summary="Every file the index knows, with its state")
    def documents() -> dict[str, Any]:
        return {"documents": service.documents()}

    @router.post("/documents", status_code=201, summary="Upload files; each is checked as in the UI, then indexed")
    def upload(files: list[UploadFile] = File(...)) -> dict[str, Any]:  # noqa: B008  (FastAPI reads the default)
        return add_uploads(service, files)

    @router.delete("/documents/{source:path}", summary="Remove a file from the documents folder and the index")
    def remove(source: str) -> dict[str, Any]:
        if source not in {d["source"] for d in service.documents()}:
            raise NotFound(f"{source} is not in the index: GET /api/documents lists the files by name.")
        service.rag.remove_document(source)
        return {"removed": source}

    @router.get("/status", summary="The index's state and progress, and the models in use")
    def status() -> dict[str, Any]:
        return service.status()

    return router


def add_uploads(service: Service, files: list[UploadFile]) -> dict[str, Any]:
    """Save each upload through RAGSystem (safe name, supported type, size), then index once."""
    added, refused = [], []
    for upload in files:
        name = upload.filename or "upload"
        with tempfile.NamedTemporaryFile(delete=False) as tmp:
            while chunk := upload.file.read(1 << 20):
                tmp.write(chunk)
        try:
            added.append(service.rag.add_upload(name, Path(tmp.name)))
        except DocqaError as exc:
            refused.append({"file": name, "reason": str(exc)})
        finally:
            Path(tmp.name).unlink(missing_ok=True)
    if not added:
        raise BadRequest("No file was added: " + "; ".join(r["reason"] for r in refused))
    service.rag.index()
    states = {d["source"]: d for d in service.documents()}
    return {"added": [states.get(name, {"source": name, "state": "pending"}) for name in added], "refused": refused}


def validation_message(exc: RequestValidationError) -> str:
    """Pydantic's errors as one line: where in the body, and what is wrong."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "Malformed request: " + "; ".join(parts) + ". See /api/docs for the request format."


def add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(error_body(request.url.path, 422, validation_message(exc), "invalid_request"), status_code=422)

    @app.exception_handler(DocqaError)
    async def refused(request: Request, exc: DocqaError) -> JSONResponse:
        status = 404 if isinstance(exc, NotFound) else 400 if isinstance(exc, BadRequest) else 503
        return JSONResponse(error_body(request.url.path, status, str(exc), type(exc).__name__), status_code=status)


def build_service_app(rag: RAGSystem, with_mcp: bool = True) -> FastAPI:
    """The HTTP app for the APIs; web_ui.serve mounts the Gradio UI at / on it."""
    from openai_api import openai_router

    service = Service(rag)
    mcp_routes: list[Any] = []
    session_manager: Any = None
    if with_mcp:
        from mcp_server import streamable_http_routes

        mcp_routes, session_manager = streamable_http_routes(service)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if session_manager is None:
            yield
            return
        async with session_manager.run():
            yield

    app = FastAPI(
        title="docqa", summary="Answers from your own documents, with citations.", lifespan=lifespan,
        docs_url="/api/docs", openapi_url="/api/openapi.json", redoc_url=None,
    )
    app.include_router(rest_router(service))
    app.include_router(openai_router(service))
    app.router.routes.extend(mcp_routes)
    add_error_handlers(app)
    app.add_middleware(ApiGuard, settings=rag.settings, keys=load_api_keys(rag.settings))
    return app
