"""A FastAPI (ASGI) service that runs the agent once per request and streams its events as SSE.

    python docs/examples/fastapi_service.py   # offline: a scripted model; OPENAI_API_KEY (and
                                              # OPENAI_BASE_URL, AGENTFLOW_MODEL) for a real one

then open http://127.0.0.1:8000/ . ``GET /runs?q=…`` is the event stream; ``GET /`` the page that shows it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse, StreamingResponse
from starlette.types import Send

from agentflow.agent.agent import Agent
from agentflow.agent.open_runs import OpenRuns
from agentflow.sse import SSE_HEADERS, sse_stream

PAGE = Path(__file__).parent / "static" / "index.html"


# --8<-- [start:response]
class AgentRunResponse(StreamingResponse):
    """Streams one agent run as SSE. The run lives inside ``stream_response``, so it is owned by the
    response: when the client disconnects, Starlette cancels ``stream_response`` or its write fails there,
    and leaving the ``async with`` cancels the run, in the task that opened it.

    A plain ``StreamingResponse(generator)`` whose generator opens the run relies on the cancel landing inside
    the generator: it does under uvicorn (ASGI spec 2.3), but under a spec 2.4 server a disconnect shows as a
    write that fails, outside it, and the generator is left at its ``yield``, its run closed later from
    another task (see the docs page).
    """

    def __init__(
        self, agent: Agent, question: str, *, runs: OpenRuns, heartbeat: float | None = 15.0
    ) -> None:
        headers = {k: v for k, v in SSE_HEADERS.items() if k != "Content-Type"}
        super().__init__(content=(), media_type="text/event-stream", headers=headers)
        self.agent = agent
        self.question = question
        self.runs = runs
        self.heartbeat = heartbeat

    async def stream_response(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        # sse_stream sends a failure's public text, not its message (errors="full" would send that).
        async with (
            self.agent.stream(self.question, policy="coalesce_deltas") as run,
            self.runs.track(run),
            aclosing(sse_stream(run, heartbeat=self.heartbeat)) as frames,
        ):
            async for frame in frames:
                await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


# --8<-- [end:response]


def create_app(agent: Agent) -> FastAPI:
    """The service for ``agent`` (the caller owns the agent and closes it); ``app.state.runs`` holds the
    runs it is streaming."""
    runs = OpenRuns()

    # --8<-- [start:lifespan]
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # uvicorn waits for open responses before it runs this lifespan's shutdown, and an event stream ends
        # only when its run does. So the runs are cancelled on SIGINT / SIGTERM itself, ahead of uvicorn's own
        # handler (installed before the lifespan starts): each sends its run_cancelled frame, its response
        # ends, and uvicorn's wait is short. Works under `uvicorn app:app` and gunicorn's UvicornWorker.
        with runs.cancel_on_signals():
            yield

    # --8<-- [end:lifespan]

    app = FastAPI(title="agentflow SSE example", lifespan=lifespan)
    app.state.runs = runs

    # --8<-- [start:route]
    @app.get("/runs")
    async def run_events(q: str = "") -> AgentRunResponse:
        if not q.strip():
            raise HTTPException(400, "ask something: /runs?q=...")
        return AgentRunResponse(agent, q.strip(), runs=runs)

    # --8<-- [end:route]

    @app.get("/")
    async def page() -> FileResponse:
        return FileResponse(PAGE)

    return app


# --8<-- [start:server]
def build_server(app: FastAPI, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> uvicorn.Server:
    """A uvicorn server for ``app`` (from ``create_app``); ``options`` go to ``uvicorn.Config``.

    A signal stops it (the lifespan cancels the runs first). A program that stops it itself, with
    ``server.should_exit = True``, calls ``await app.state.runs.cancel_all()`` first.
    """
    # Without a limit uvicorn waits for open responses forever: this bounds one that does not end once its
    # run is cancelled.
    options.setdefault("timeout_graceful_shutdown", 5)
    return uvicorn.Server(uvicorn.Config(app, host=host, port=port, **options))


# --8<-- [end:server]


async def main() -> None:
    from web_agent import build_agent, demo_server, endpoint

    async with demo_server() as scripted, build_agent(**endpoint(scripted.base_url)) as agent:
        await build_server(create_app(agent)).serve()


if __name__ == "__main__":
    anyio.run(main)
