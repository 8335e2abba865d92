"""Helpers for the web-service tests: load the docs examples, serve them on 127.0.0.1, read SSE streams."""

from __future__ import annotations

import importlib.util
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import anyio
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


@asynccontextmanager
async def aiohttp_service(agent: Agent) -> AsyncIterator[str]:
    """The aiohttp example serving ``agent`` on a free port; yields its root URL."""
    example = load_example("aiohttp_service")
    runner = await example.serve(example.create_app(agent), "127.0.0.1", 0)
    try:
        host, port = runner.addresses[0][:2]
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def fastapi_service(agent: Agent) -> AsyncIterator[str]:
    """The FastAPI example under a real uvicorn server on a free port; yields its root URL.

    The listening socket is bound here, so the URL is known (and connections queue) before uvicorn runs.
    """
    import uvicorn

    example = load_example("fastapi_service")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    config = uvicorn.Config(example.create_app(agent), lifespan="off", log_level="warning")
    server = uvicorn.Server(config)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(server.serve, sockets=[sock]))
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True
    finally:
        sock.close()


SERVICES = {"aiohttp": aiohttp_service, "fastapi": fastapi_service}


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
