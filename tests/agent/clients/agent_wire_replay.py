"""A tiny aiohttp server on 127.0.0.1 that answers each request with the next recorded body from
``shared/wire`` and records the request bodies, for end-to-end agent client tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer

WIRE = Path(__file__).resolve().parents[2] / "wire"


def recording(name: str) -> dict[str, Any]:
    """One recording of ``shared/wire``."""
    data: dict[str, Any] = orjson.loads((WIRE / name).read_bytes())
    return data


class Replay:
    """Answers requests in order with the given recordings; ``bodies`` holds the parsed request bodies."""

    def __init__(self, *names: str) -> None:
        self.recordings = [recording(name) for name in names]
        self.bodies: list[Any] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.bodies.append(orjson.loads(await request.read()))
        record = self.recordings[len(self.bodies) - 1]
        content_type = (
            "text/event-stream" if record["stream"] and record["status"] == 200 else "application/json"
        )
        return web.Response(
            status=record["status"], body=record["response_body"].encode(), content_type=content_type
        )


@asynccontextmanager
async def replay_server(*names: str) -> AsyncIterator[tuple[str, Replay]]:
    """``(base_url, replay)`` for a server answering with the named recordings in order."""
    replay = Replay(*names)
    app = web.Application()
    app.router.add_post("/v1/{tail:.*}", replay.handle)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    try:
        yield str(server.make_url("/v1")), replay
    finally:
        await server.close()
