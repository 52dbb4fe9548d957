"""docqa as an MCP server: search, ask and list the documents from any MCP client.

Built on the official `mcp` SDK's MCPServer (FastMCP until mcp 2 renamed it): it makes each
tool's input and output schema from the function's type hints, so a tool is one typed
function, and it serves the same tools over stdio (`python main.py mcp`, for desktop
clients that start the server themselves) and streamable HTTP (/mcp on the serve app, behind
the API key). The low-level `Server` would have us write that schema and dispatch by hand.

Each tool returns readable text, with [n] citations, for the model, and structured content
for programs. The indexed files are offered as resources (docqa://documents/NAME).
"""

from __future__ import annotations

import contextlib
import mimetypes
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote, unquote

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp_types import CallToolResult, TextContent
from mcp_types import Resource as MCPResource
from pydantic import BaseModel, Field

from answer_render import answer_as_text
from config import LOOPBACK
from service import Service, answer_summary

if TYPE_CHECKING:
    from rag_system import RAGSystem

RESOURCE_PREFIX = "docqa://documents/"
INSTRUCTIONS = (
    "docqa answers from the user's own indexed documents. Use search_documents to find passages "
    "(each with its file and page or lines) and ask_documents for an answer with quotes and [n] "
    "citations; cite the file and page when you use them. list_documents shows what is indexed."
)


class SearchResult(BaseModel):
    query: str
    passages: list[dict[str, Any]] = Field(description="Best first: n, place, source, page/lines, score, text.")


class AskResult(BaseModel):
    answer: str
    kind: str
    refused: bool
    quotes: list[dict[str, Any]]
    citations: list[dict[str, Any]] = Field(description="Passage n is what [n] in the answer cites.")
    weak_matches: list[dict[str, Any]] = Field(
        default_factory=list, description="Passages far from the question that the answer does not cite, numbered on after the citations."
    )
    unsupported: list[str] = Field(description="Answer sentences the sources do not confirm: no passage backs them, or their evidence is about another name than the one asked.")
    notice: str | None
    model: str
    error: str | None


class DocumentList(BaseModel):
    documents: list[dict[str, Any]] = Field(description="source, state (indexed, failed, skipped), chunks, reason.")


def passages_text(passages: list[dict[str, Any]]) -> str:
    if not passages:
        return "No passage matched: try other words, or check list_documents for what is indexed."
    return "\n\n".join(f"[{p['n']}] {p['place']} (score {p['score']:.3f})\n{p['text']}" for p in passages)


def result(text: str, data: BaseModel) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data.model_dump(mode="json"))


class DocumentsServer(MCPServer):
    """MCPServer whose resources are the files indexed now, not a list fixed at start-up."""

    def __init__(self, service: Service) -> None:
        super().__init__("docqa", instructions=INSTRUCTIONS, log_level="WARNING")
        self.service = service

    async def list_resources(self) -> list[MCPResource]:
        return [
            MCPResource(uri=RESOURCE_PREFIX + quote(source, safe=""), name=source,
                        mime_type=mimetypes.guess_type(source)[0] or "application/octet-stream",
                        description=f"{source}, as indexed by docqa")
            for source in self.service.indexed_sources()
        ]

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        name = str(uri)
        if not name.startswith(RESOURCE_PREFIX):
            return await super().read_resource(uri, context)
        source = unquote(name[len(RESOURCE_PREFIX):])
        if source not in self.service.indexed_sources():
            raise ResourceNotFoundError(f"{source} is not an indexed document: list_documents names them.")
        return document_contents(self.service, source)


def document_contents(service: Service, source: str) -> Iterable[ReadResourceContents]:
    """The file itself: text as text, anything else (PDF, DOCX) as bytes for the client to read."""
    data = (service.rag.settings.docs_dir / source).read_bytes()
    mime = mimetypes.guess_type(source)[0] or "application/octet-stream"
    try:
        return [ReadResourceContents(content=data.decode("utf-8"), mime_type=mime)]
    except UnicodeDecodeError:
        return [ReadResourceContents(content=data, mime_type=mime)]


def build_server(service: Service) -> DocumentsServer:
    server = DocumentsServer(service)

    @server.tool(description=(
        "Search the user's indexed documents for passages about a query, without generating an answer. "
        "Returns the best passages with their file, page or lines, and scores. Use it to find evidence to cite. "
        'where filters by file or type: {"source": "faq.md"} or {"ext": "pdf"}.'
    ))
    def search_documents(query: str, k: int = 5, where: dict[str, str | list[str]] | None = None) -> Annotated[CallToolResult, SearchResult]:
        passages = service.search(query, k=k, where=where)
        return result(passages_text(passages), SearchResult(query=query, passages=passages))

    @server.tool(description=(
        "Answer a question from the user's indexed documents. Returns the answer with [n] citations, the "
        "verbatim quotes it rests on, the cited passages with file and page or lines, and any answer sentences "
        "the passages do not support. Slower than search_documents: it runs the local model."
    ))
    def ask_documents(question: str) -> Annotated[CallToolResult, AskResult]:
        answer = service.ask(question)
        return result(answer_as_text(answer), AskResult(**answer_summary(answer)))

    @server.tool(description="List the files docqa has indexed, and those it failed or skipped, with why.")
    def list_documents() -> Annotated[CallToolResult, DocumentList]:
        docs = service.documents()
        lines = [f"{d['source']}: {d['state']}" + (f", {d['chunks']} chunks" if d["state"] == "indexed" else f" ({d['reason']})") for d in docs]
        return result("\n".join(lines) or "No documents are indexed yet.", DocumentList(documents=docs))

    return server


def streamable_http_routes(service: Service) -> tuple[list[Any], Any]:
    """The /mcp route for the serve app, and the session manager its lifespan must run."""
    settings = service.rag.settings
    server = build_server(service)
    # On loopback the SDK checks Host and Origin against DNS rebinding; off loopback the API key guards it.
    host = settings.gradio_server_name if settings.gradio_server_name in LOOPBACK else "0.0.0.0"
    app = server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True, host=host)
    return list(app.routes), server.session_manager


def run_stdio(rag: RAGSystem, index: bool = True) -> None:
    """`main.py mcp`: bring the index up to date (unless a running docqa keeps it so), then serve
    MCP on stdin and stdout until the client leaves."""
    # stdout is the protocol channel: anything a library prints while indexing goes to stderr.
    if index:
        with contextlib.redirect_stdout(sys.stderr):
            rag.index()
            rag.watch()
    build_server(Service(rag)).run("stdio")
