"""The FastAPI example served as ``uvicorn app:app`` serves it, for ``test_web_signals`` to send SIGTERM to.

    python tests/web/signalled_service.py

``uvicorn.Server.run``, what ``uvicorn.run`` and the command line end in: uvicorn's own signal handlers, and
the example's lifespan (which chains ``OpenRuns.cancel_on_signals`` in front of them). The model is a
``FakeModelClient`` that asks for one tool call, and the tool waits until it is cancelled, so a stream stays
open until shutdown ends its run. The listening socket is bound here, on an ephemeral port printed on
stdout (``port <n>``); after the lifespan's shutdown it prints ``handlers restored <bool>``: whether
SIGTERM's handler is uvicorn's again. uvicorn's graceful-shutdown limit is an hour: only a run cancelled on
the signal lets the server stop in time.
"""

from __future__ import annotations

import signal
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import uvicorn
from web_support import load_example

from agentflow.agent.agent import Agent
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


@tool
async def wait_for_approval(change: str) -> str:
    """Wait until a human approves the change."""
    await anyio.sleep_forever()  # only cancellation ends this call
    return "approved"


def main() -> None:
    example = load_example("fastapi_service")
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("wait_for_approval", {"change": "deploy"})])]),
        tools=[wait_for_approval],
    )
    app = example.create_app(agent)
    example_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        uvicorns = signal.getsignal(signal.SIGTERM)
        async with example_lifespan(app):
            yield
        print("handlers restored", signal.getsignal(signal.SIGTERM) is uvicorns, flush=True)

    app.router.lifespan_context = lifespan
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    print("port", sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, lifespan="on", log_level="warning", timeout_graceful_shutdown=3600)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
