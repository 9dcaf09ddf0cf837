"""A bound on how deeply a JSON request body nests, ahead of every route of a served app (the MCP server, the
HTTP API): a body nested deeper than :data:`MAX_DEPTH` is refused with HTTP 400 and one line (a JSON-RPC error on
the MCP route) before any parser recurses into it (5,000 levels made the MCP server answer HTTP 500)."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

MAX_DEPTH = 64  #: the deepest JSON nesting a request may have (a tool call needs 4)
MAX_SCAN = 64 * 2**20  #: bodies larger than this are left to the server's own size limits
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
Scope = dict[str, Any]
ASGI = Callable[[Scope, Callable[[], Awaitable[dict[str, Any]]], Callable[[dict[str, Any]], Awaitable[None]]],
                Awaitable[None]]


def json_depth(body: bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` in a JSON text (brackets inside strings do not count)."""
    bare = np.frombuffer(_STRINGS.sub(b"", body), dtype=np.uint8)
    steps = (np.isin(bare, (ord("["), ord("{"))).astype(np.int64) - np.isin(bare, (ord("]"), ord("}"))))
    return int(np.cumsum(steps).max(initial=0))


class DepthGuard:
    """ASGI middleware: read a JSON POST body, refuse it when nested deeper than ``max_depth``, else pass it on."""

    def __init__(self, app: ASGI, max_depth: int = MAX_DEPTH) -> None:
        self.app, self.max_depth = app, max_depth

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        if scope.get("type") != "http" or scope.get("method") != "POST" or b"json" not in headers.get(
                b"content-type", b""):
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message], receive), send)
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        depth = json_depth(body) if len(body) <= MAX_SCAN else 0
        if depth > self.max_depth:
            await _refuse(scope, send, depth, self.max_depth)
            return
        await self.app(scope, _replay([{"type": "http.request", "body": body, "more_body": False}], receive), send)


def _replay(messages: list[dict[str, Any]], then: Any) -> Callable[[], Awaitable[dict[str, Any]]]:
    """``messages`` first, then the connection's own ``receive`` (a streamed response waits on it for the client
    leaving)."""
    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else await then()

    return receive


async def _refuse(scope: Scope, send: Any, depth: int, limit: int) -> None:
    line = f"the request's JSON is nested {depth} levels deep; at most {limit} are accepted."
    mcp = "/mcp" in str(scope.get("path", ""))
    payload = ({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": line}} if mcp
               else {"error": line})
    body = json.dumps(payload).encode("utf-8")
    await send({"type": "http.response.start", "status": 400,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
