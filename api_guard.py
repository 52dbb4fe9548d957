"""Who may call the service API, how often, and with how large a body.

One ASGI middleware stands in front of /api, /v1 and /mcp, so REST, OpenAI and MCP clients
meet the same rules from one place, before any route reads its body:

- a bearer key from DOCQA_API_KEYS or DOCQA_API_KEY_FILE (never the UI's password), compared
  in constant time; with no keys configured, only a loopback client of a server bound to
  loopback gets in, as the UI needs no password there;
- one token bucket per client (API_RATE_LIMIT_PER_MINUTE) for every route;
- a body cap: API_MAX_BODY_MB for JSON, the larger of MAX_FILE_MB and MAX_UPLOAD_MB for an upload
  (413 beyond); the type's own limit is checked when the file is saved (documents_folder.py).

Errors come in the shape each client reads: OpenAI's `{"error": {...}}` under /v1, FastAPI's
`{"detail": ...}` elsewhere.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from config import LOOPBACK, Settings
from errors import ConfigError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

GUARDED = ("/api/", "/v1/", "/mcp")
OPEN_PATHS = ("/api/docs", "/api/openapi.json")
"""The API's documentation describes routes, not documents: readable without a key."""
UPLOAD_PATH = "/api/documents"
UPLOAD_OVERHEAD = 1_000_000
"""Room for the multipart framing around an uploaded file of the largest size allowed."""


def load_api_keys(settings: Settings) -> list[str]:
    """Keys from DOCQA_API_KEYS (comma-separated) and DOCQA_API_KEY_FILE (one a line, # comments)."""
    keys = [k.strip() for k in settings.docqa_api_keys.split(",") if k.strip()]
    if settings.docqa_api_key_file:
        try:
            lines = Path(settings.docqa_api_key_file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigError(
                f"DOCQA_API_KEY_FILE {settings.docqa_api_key_file} cannot be read: {exc.strerror or exc}; "
                "fix the path or unset it."
            ) from exc
        keys += [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    return keys


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def check_key(authorization: str | None, keys: list[str], client_host: str | None, server_loopback: bool) -> str | None:
    """Why the request is refused (None when it may go on).

    With keys configured, every client needs one, loopback included. Without keys, only a
    loopback client of a loopback server is let in: off loopback a key is the only way.
    """
    scheme, _, given = (authorization or "").partition(" ")
    if keys:
        if scheme.lower() != "bearer" or not given.strip():
            return "Missing API key: send `Authorization: Bearer <key>` with a key from DOCQA_API_KEYS."
        # Compare with every key, so the time taken says nothing about which one came close.
        matched = [hmac.compare_digest(given.strip().encode(), key.encode()) for key in keys]
        return None if any(matched) else "Invalid API key: use one of the keys in DOCQA_API_KEYS or DOCQA_API_KEY_FILE."
    if server_loopback and is_loopback(client_host):
        return None
    return (
        "This docqa server needs an API key for clients off loopback: set DOCQA_API_KEYS (or DOCQA_API_KEY_FILE) "
        "on the server and send `Authorization: Bearer <key>`."
    )


class TokenBucket:
    """Per client, `per_minute` requests in a burst, refilled evenly over the minute."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def wait_s(self, client: str) -> float:
        """0 when the client may go on now (a token is taken), else the seconds until it may."""
        if self.per_minute <= 0:
            return 0.0
        rate = self.per_minute / 60.0
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(client, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - last) * rate)
            if tokens < 1.0:
                self._buckets[client] = (tokens, now)
                return (1.0 - tokens) / rate
            self._buckets[client] = (tokens - 1.0, now)
            return 0.0


def error_body(path: str, status: int, message: str, code: str) -> dict[str, Any]:
    """An error as the client of `path` reads it: OpenAI's shape under /v1, FastAPI's elsewhere."""
    if path.startswith("/v1/"):
        kind = "server_error" if status >= 500 else "authentication_error" if status == 401 else "invalid_request_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return {"detail": message, "code": code}


async def send_error(send: Send, path: str, status: int, message: str, code: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps(error_body(path, status, message, code)).encode()
    start_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": body})


class ApiGuard:
    """The ASGI middleware: key, rate and body size, for the guarded paths only (the UI has its own login)."""

    def __init__(self, app: ASGIApp, settings: Settings, keys: list[str]) -> None:
        self.app = app
        self.settings = settings
        self.keys = keys
        self.server_loopback = settings.gradio_server_name in LOOPBACK
        self.bucket = TokenBucket(settings.api_rate_limit_per_minute)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(GUARDED) or path.startswith(OPEN_PATHS):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = (scope.get("client") or (None, None))[0]
        refused = check_key(headers.get("authorization"), self.keys, host, self.server_loopback)
        if refused:
            await send_error(send, path, 401, refused, "invalid_api_key", [(b"www-authenticate", b"Bearer")])
            return
        client = hashlib.sha256(headers.get("authorization", "").encode()).hexdigest() if self.keys else str(host)
        wait = self.bucket.wait_s(client)
        if wait > 0:
            message = f"Too many requests: at most {self.settings.api_rate_limit_per_minute} a minute (API_RATE_LIMIT_PER_MINUTE); try again in {wait:.0f} s."
            await send_error(send, path, 429, message, "rate_limit_exceeded", [(b"retry-after", str(max(1, round(wait))).encode())])
            return
        capped = await self._capped(scope, receive, send, headers)
        if capped is not None:
            await self.app(scope, capped, send)

    def _limit(self, scope: Scope) -> tuple[int, str]:
        if scope.get("method") == "POST" and scope.get("path") == UPLOAD_PATH:
            # The body's type is not known yet: the larger limit here, each file's own when it is saved.
            if self.settings.max_upload_mb >= self.settings.max_file_mb:
                return int(self.settings.max_upload_mb * 1e6) + UPLOAD_OVERHEAD, f"{self.settings.max_upload_mb:g} MB (MAX_UPLOAD_MB)"
            return int(self.settings.max_file_mb * 1e6) + UPLOAD_OVERHEAD, f"{self.settings.max_file_mb:g} MB (MAX_FILE_MB)"
        return int(self.settings.api_max_body_mb * 1e6), f"{self.settings.api_max_body_mb:g} MB (API_MAX_BODY_MB)"

    async def _capped(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> Receive | None:
        """`receive` itself when the declared length fits; the body read ahead when none is declared; None once refused."""
        limit, named = self._limit(scope)
        path = scope.get("path", "")
        too_large = f"The request body is over the {named} limit: send less."
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.isdigit() or int(declared) > limit:
                await send_error(send, path, 413, too_large, "request_too_large")
                return None
            return receive
        if "chunked" not in headers.get("transfer-encoding", ""):
            return receive
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > limit:
                await send_error(send, path, 413, too_large, "request_too_large")
                return None
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return replay
