"""Helpers for the web-service tests: load the docs examples, serve them on 127.0.0.1, read SSE streams."""

from __future__ import annotations

import importlib.util
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import anyio
import attrs
import orjson

from agentflow.agent.agent import Agent
from agentflow.http.sse import SseDecoder, SseEvent

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def load_example(name: str) -> ModuleType:
    """``docs/examples/<name>.py`` as a module (loaded once, under a name that cannot clash)."""
    module_name = f"agentflow_docs_example_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@attrs.frozen
class Served:
    """A docs example being served: its root URL, and how to shut it down gracefully while it serves."""

    url: str
    shutdown: Callable[[], Awaitable[None]]
    """Begin the server's graceful shutdown and return when it has completed."""


@asynccontextmanager
async def aiohttp_served(agent: Agent, **options: Any) -> AsyncIterator[Served]:
    """The aiohttp example serving ``agent`` on a free port (``options`` go to its ``serve``)."""
    example = load_example("aiohttp_service")
    runner = await example.serve(example.create_app(agent), "127.0.0.1", 0, **options)
    stopped = False

    async def shutdown() -> None:
        nonlocal stopped
        stopped = True
        await runner.cleanup()

    try:
        host, port = runner.addresses[0][:2]
        yield Served(f"http://{host}:{port}", shutdown)
    finally:
        if not stopped:
            await runner.cleanup()


@asynccontextmanager
async def fastapi_served(agent: Agent, **options: Any) -> AsyncIterator[Served]:
    """The FastAPI example under a real uvicorn server (the example's ``build_server``) on a free port;
    ``options`` go to ``uvicorn.Config``.

    The listening socket is bound here, so the URL is known (and connections queue) before uvicorn runs.
    The lifespan is off: it would install signal handlers in the test process. ``shutdown`` stops the server
    as a program does without a signal (``build_server``'s docstring); ``test_web_signals`` sends a real one.
    """
    example = load_example("fastapi_service")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    options = {"lifespan": "off", "log_level": "warning", **options}
    app = example.create_app(agent)
    server = example.build_server(app, **options)
    stopped = anyio.Event()

    async def serve() -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            stopped.set()

    async def shutdown() -> None:
        await app.state.runs.cancel_all()
        server.should_exit = True
        await stopped.wait()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            try:
                yield Served(f"http://127.0.0.1:{port}", shutdown)
            finally:
                server.should_exit = True
    finally:
        sock.close()


@asynccontextmanager
async def aiohttp_service(agent: Agent) -> AsyncIterator[str]:
    """The aiohttp example serving ``agent`` on a free port; yields its root URL."""
    async with aiohttp_served(agent) as served:
        yield served.url


@asynccontextmanager
async def fastapi_service(agent: Agent) -> AsyncIterator[str]:
    """The FastAPI example under a real uvicorn server on a free port; yields its root URL."""
    async with fastapi_served(agent) as served:
        yield served.url


SERVICES = {"aiohttp": aiohttp_service, "fastapi": fastapi_service}
SERVED = {"aiohttp": aiohttp_served, "fastapi": fastapi_served}


class SseReader:
    """Reads an open SSE response event by event (the events' JSON decoded)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response
        self._decoder = SseDecoder()
        self._ready: list[SseEvent] = []
        self.frames: list[SseEvent] = []

    async def next(self) -> SseEvent | None:
        while not self._ready:
            chunk = await self.response.content.readany()
            if not chunk:
                self._ready.extend(self._decoder.close())
                if not self._ready:
                    return None
                break
            self._ready.extend(self._decoder.feed(chunk))
        event = self._ready.pop(0)
        self.frames.append(event)
        return event

    async def until(self, event_type: str) -> SseEvent:
        while (event := await self.next()) is not None:
            if event.event == event_type:
                return event
        raise AssertionError(f"the stream ended without a {event_type!r} event: {self.types()}")

    async def all(self) -> list[SseEvent]:
        while await self.next() is not None:
            pass
        return self.frames

    def types(self) -> list[str]:
        return [frame.event for frame in self.frames]


def data(event: SseEvent) -> Any:
    return orjson.loads(event.data)
