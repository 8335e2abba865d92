"""A FastAPI (ASGI) service that runs the agent once per request and streams its events as SSE.

    python docs/examples/fastapi_service.py   # offline: a scripted model; OPENAI_API_KEY (and
                                              # OPENAI_BASE_URL, AGENTFLOW_MODEL) for a real one

then open http://127.0.0.1:8000/ . ``GET /runs?q=…`` is the event stream; ``GET /`` the page that shows it.
"""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path

import anyio
from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse, StreamingResponse
from starlette.types import Send

from agentflow.agent.agent import Agent
from agentflow.sse import SSE_HEADERS, sse_stream

PAGE = Path(__file__).parent / "static" / "index.html"


# --8<-- [start:response]
class AgentRunResponse(StreamingResponse):
    """Streams one agent run as SSE. The run lives inside ``stream_response``, so it is owned by the
    response: Starlette cancels ``stream_response`` when the client disconnects, and the run with it.

    A plain ``StreamingResponse(generator)`` whose generator opens the run does not close that generator
    when the client leaves mid-write: the run's ``async with`` would be left open until garbage collection.
    """

    def __init__(self, agent: Agent, question: str, *, heartbeat: float | None = 15.0) -> None:
        headers = {k: v for k, v in SSE_HEADERS.items() if k != "Content-Type"}
        super().__init__(content=(), media_type="text/event-stream", headers=headers)
        self.agent = agent
        self.question = question
        self.heartbeat = heartbeat

    async def stream_response(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        async with (
            self.agent.stream(self.question) as run,
            aclosing(sse_stream(run, heartbeat=self.heartbeat)) as frames,
        ):
            async for frame in frames:
                await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


# --8<-- [end:response]


def create_app(agent: Agent) -> FastAPI:
    """The service for ``agent`` (the caller owns the agent and closes it)."""
    app = FastAPI(title="agentflow SSE example")

    # --8<-- [start:route]
    @app.get("/runs")
    async def run_events(q: str = "") -> AgentRunResponse:
        if not q.strip():
            raise HTTPException(400, "ask something: /runs?q=...")
        return AgentRunResponse(agent, q.strip())

    # --8<-- [end:route]

    @app.get("/")
    async def page() -> FileResponse:
        return FileResponse(PAGE)

    return app


async def main() -> None:
    import uvicorn
    from web_agent import build_agent, demo_server, endpoint

    async with demo_server() as scripted, build_agent(**endpoint(scripted.base_url)) as agent:
        config = uvicorn.Config(create_app(agent), host="127.0.0.1", port=8000, lifespan="off")
        await uvicorn.Server(config).serve()


if __name__ == "__main__":
    anyio.run(main)
