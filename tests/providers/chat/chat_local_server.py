"""Helpers for the chat tests: a real aiohttp server on 127.0.0.1 (port 0) with scripted replies.

It records every request it receives.

Tests queue replies (``server.add(json_reply(...))``); each request takes the next one. A stalled reply
waits on ``server.release``, an event only the fixture's teardown sets — nothing sleeps.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
import orjson
from aiohttp import web

from agentflow import ChatModel, ModelError, UserMessage
from agentflow.model.events import ModelEvent

Reply = Callable[[web.Request, "LocalServer"], Awaitable[web.StreamResponse]]

WIRE = Path(__file__).resolve().parents[2] / "wire"


@attrs.frozen
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    peer: int  # the client's port: equal ports mean a pooled connection was reused

    def json(self) -> Any:
        return orjson.loads(self.body)


class LocalServer:
    """Scripted OpenAI-compatible endpoint for tests."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self.release = anyio.Event()
        self.handler_done = anyio.Event()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    def add(self, *replies: Reply) -> LocalServer:
        self.replies.extend(replies)
        return self

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}"

    async def close(self) -> None:
        self.release.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        peer = request.transport.get_extra_info("peername")[1] if request.transport else -1
        self.requests.append(Recorded(request.method, request.path, dict(request.headers), body, peer))
        if not self.replies:
            return web.json_response({"error": {"message": "no scripted reply left"}}, status=500)
        reply = self.replies.pop(0)
        return await reply(request, self)


def json_reply(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    async def reply(request: web.Request, server: LocalServer) -> web.StreamResponse:
        return web.Response(
            body=orjson.dumps(payload), status=status, headers=headers, content_type="application/json"
        )

    return reply


def raw_reply(
    body: bytes | str,
    status: int = 200,
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
) -> Reply:
    data = body.encode() if isinstance(body, str) else body

    async def reply(request: web.Request, server: LocalServer) -> web.StreamResponse:
        all_headers = {"Content-Type": content_type, **(headers or {})}
        return web.Response(body=data, status=status, headers=all_headers)

    return reply


def sse_reply(
    chunks: Sequence[bytes | str],
    *,
    end: str = "eof",
    status: int = 200,
    content_type: str = "text/event-stream",
) -> Reply:
    """Write ``chunks`` one by one; then ``end``: "eof" (clean end), "reset" (drop the connection,
    no final chunk) or "stall" (keep the connection open, send nothing more)."""
    data = [c.encode() if isinstance(c, str) else c for c in chunks]

    async def reply(request: web.Request, server: LocalServer) -> web.StreamResponse:
        response = web.StreamResponse(status=status, headers={"Content-Type": content_type})
        await response.prepare(request)
        for chunk in data:
            await response.write(chunk)
        if end == "reset":
            assert request.transport is not None
            request.transport.abort()
            return response
        if end == "stall":
            await server.release.wait()
            with contextlib.suppress(ConnectionError):  # the client gave up long ago
                await response.write_eof()
            return response
        await response.write_eof()
        return response

    return reply


def stall_reply() -> Reply:
    """Never answer (until teardown): the client's read timeout must fire."""

    async def reply(request: web.Request, server: LocalServer) -> web.StreamResponse:
        await server.release.wait()
        return web.Response(status=500)

    return reply


def sse_body(*payloads: Any, done: bool = True) -> bytes:
    """An SSE body with one ``data:`` event per payload (dicts are JSON-encoded), then ``[DONE]``."""
    parts = [b"data: " + (p.encode() if isinstance(p, str) else orjson.dumps(p)) + b"\n\n" for p in payloads]
    if done:
        parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def pieces(body: bytes | str, size: int) -> list[bytes]:
    """``body`` cut into ``size``-byte chunks (cutting through lines and UTF-8 characters)."""
    data = body.encode() if isinstance(body, str) else body
    return [data[i : i + size] for i in range(0, len(data), size)]


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def load_wire(name: str) -> dict[str, Any]:
    path = WIRE / name
    data: dict[str, Any] = orjson.loads(path.read_bytes())
    return data


def wire_files(pattern: str) -> list[str]:
    names = sorted(p.name for p in WIRE.glob(pattern))
    assert names, f"no recordings match {pattern} in {WIRE}"
    return names


async def collect(model: ChatModel) -> tuple[list[ModelEvent], ModelError | None]:
    """Stream ``[UserMessage("hi")]``: every event received, and the ``ModelError`` that ended it (if any)."""
    events: list[ModelEvent] = []
    try:
        async with model.stream([UserMessage("hi")]) as stream:
            async for event in stream:
                events.append(event)
    except ModelError as error:
        return events, error
    return events, None


class SleepRecorder:
    """An injectable sleep that records the requested delays and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
