"""A real HTTP server speaking the slice of Ollama's API docqa uses, for offline tests.

It answers `GET /api/tags`, streaming `POST /api/chat` and `POST /api/embed` the way Ollama
does (chunked newline-delimited JSON, a final `"done": true` message, 404 for an unknown
model; embeddings are hashed bags of words, so similar texts get similar vectors), records
every request body so tests can assert what the client sent, and can drop the connection
mid-answer to play an Ollama that dies.

    with OllamaStandin(pieces=["Hello", " there"]) as server:
        settings = load_settings(overrides={"ollama_host": server.url}, environ={})
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _model_entry(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "model": name,
        "modified_at": _now(),
        "size": 2019393189,
        "digest": "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
        "details": {
            "parent_model": "",
            "format": "gguf",
            "family": "llama",
            "families": ["llama"],
            "parameter_size": "3.2B",
            "quantization_level": "Q4_K_M",
        },
    }


class OllamaStandin:
    """A local stand-in for `ollama serve` on 127.0.0.1 and a free port; use it with `with`.

    models: names /api/tags lists (Ollama's own names carry a tag, "llama3.2:latest").
    pieces: the answer /api/chat streams, one chunk per piece.
    drop_after: if set, send that many pieces, then cut the connection without finishing.
    piece_delay_s: seconds to wait before each piece, to play a slow model (an answer that
    takes a known while, for tests of what happens meanwhile).
    formatted: the reply to a request that names a `format` (a JSON schema: docqa's yes-or-no
    judge); the same `pieces` when not given.
    """

    def __init__(
        self,
        models: list[str] | None = None,
        pieces: list[str] | None = None,
        drop_after: int | None = None,
        dimension: int = 768,
        piece_delay_s: float = 0.0,
        formatted: list[str] | None = None,
    ) -> None:
        self.models = ["llama3.2:latest", "nomic-embed-text:latest"] if models is None else list(models)
        self.dimension = dimension
        self.pieces = ["Paris", " is the capital", " of France [1]."] if pieces is None else list(pieces)
        self.drop_after = drop_after
        self.piece_delay_s = piece_delay_s
        self.formatted = formatted
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # shutdown() waits up to one poll; keep tests quick
            name="ollama-standin",
            daemon=True,
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def embed_requests(self) -> list[dict[str, Any]]:
        """Bodies of the /api/embed requests received, oldest first."""
        return [r["body"] for r in self.requests if r["path"] == "/api/embed"]

    def embed(self, text: str) -> list[float]:
        """A hashed bag of words: texts sharing words get close vectors (deterministic, unnormalised)."""
        vector = [0.0] * self.dimension
        for word in re.findall(r"\w+", text.lower()):
            vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        vector[0] += 0.01  # never all zeros
        return vector

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the /api/chat requests received, oldest first."""
        return [r["body"] for r in self.requests if r["path"] == "/api/chat"]

    def serves(self, model: str) -> bool:
        return any(name == model or name == f"{model}:latest" for name in self.models)

    def __enter__(self) -> OllamaStandin:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _handler_for(standin: OllamaStandin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # chunked streaming, as Ollama does

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            standin.requests.append({"method": "GET", "path": self.path, "body": None})
            if self.path == "/api/tags":
                self._send_json(200, {"models": [_model_entry(m) for m in standin.models]})
            else:
                self._send_json(404, {"error": "not found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            standin.requests.append({"method": "POST", "path": self.path, "body": body})
            if self.path not in ("/api/chat", "/api/embed"):
                self._send_json(404, {"error": "not found"})
            elif not standin.serves(body.get("model", "")):
                self._send_json(404, {"error": f"model \"{body.get('model')}\" not found, try pulling it first"})
            elif self.path == "/api/embed":
                texts = body.get("input", "")
                texts = [texts] if isinstance(texts, str) else list(texts)
                self._send_json(200, {
                    "model": body["model"],
                    "embeddings": [standin.embed(t) for t in texts],
                    "total_duration": 14_143_917,
                    "load_duration": 1_019_500,
                    "prompt_eval_count": sum(len(t.split()) for t in texts),
                })
            elif body.get("stream", True):
                formatted = body.get("format") and standin.formatted is not None
                self._stream_chat(body["model"], standin.formatted if formatted else standin.pieces)
            else:
                message = {"role": "assistant", "content": "".join(standin.pieces)}
                self._send_json(200, {**self._chunk(body["model"], message), **self._final_fields()})

        def _stream_chat(self, model: str, pieces: list[str]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for sent, piece in enumerate(pieces):
                if standin.drop_after is not None and sent >= standin.drop_after:
                    self._drop()
                    return
                time.sleep(standin.piece_delay_s)
                self._write_line(self._chunk(model, {"role": "assistant", "content": piece}))
            final = {**self._chunk(model, {"role": "assistant", "content": ""}), **self._final_fields()}
            self._write_line(final)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _chunk(self, model: str, message: dict[str, str]) -> dict[str, Any]:
            return {"model": model, "created_at": _now(), "message": message, "done": False}

        def _final_fields(self) -> dict[str, Any]:
            return {
                "done": True,
                "done_reason": "stop",
                "total_duration": 5_000_000,
                "load_duration": 1_000_000,
                "prompt_eval_count": 26,
                "prompt_eval_duration": 1_000_000,
                "eval_count": len(standin.pieces),
                "eval_duration": 3_000_000,
            }

        def _write_line(self, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def _drop(self) -> None:
            """Close the socket without the chunked terminator, as a crashed server would."""
            self.close_connection = True
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)

        def _send_json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
