"""An aiohttp service that runs the agent once per request and streams its events to the browser as SSE.

    python docs/examples/aiohttp_service.py            # offline: a scripted model on a local port
    OPENAI_API_KEY=sk-... python docs/examples/aiohttp_service.py   # OpenAI (or OPENAI_BASE_URL)

then open http://127.0.0.1:8080/ . ``GET /runs?q=…`` is the event stream; ``GET /`` the page that shows it.
"""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path

import anyio
from aiohttp import web

from agentflow.agent.agent import Agent
from agentflow.sse import SSE_HEADERS, sse_stream

PAGE = Path(__file__).parent / "static" / "index.html"
AGENT = web.AppKey("agent", Agent)


# --8<-- [start:handler]
async def run_events(request: web.Request) -> web.StreamResponse:
    """One agent run per request, its events forwarded as they happen."""
    question = request.query.get("q", "").strip()
    if not question:
        raise web.HTTPBadRequest(text="ask something: /runs?q=...")
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    # The run belongs to this handler. If the client goes away, aiohttp cancels the handler (the app runs
    # with handler_cancellation=True), and leaving this block cancels the run: its model stream and tools
    # stop, memory is completed, RunCancelled is published.
    async with (
        request.app[AGENT].stream(question) as run,
        aclosing(sse_stream(run, heartbeat=15.0)) as frames,
    ):
        try:
            async for frame in frames:
                await response.write(frame)
        except ConnectionResetError:
            return response  # the client left while we were writing: the run is cancelled on the way out
    await response.write_eof()
    return response


# --8<-- [end:handler]


async def page(request: web.Request) -> web.FileResponse:
    """The HTML page that opens an EventSource on /runs and renders the events."""
    return web.FileResponse(PAGE)


def create_app(agent: Agent) -> web.Application:
    """The service for ``agent`` (the caller owns the agent and closes it)."""
    app = web.Application()
    app[AGENT] = agent
    app.router.add_get("/", page)
    app.router.add_get("/runs", run_events)
    return app


# --8<-- [start:serve]
async def serve(app: web.Application, host: str = "127.0.0.1", port: int = 8080) -> web.AppRunner:
    """Start serving ``app``; the caller calls ``await runner.cleanup()`` to stop."""
    # aiohttp does NOT cancel a handler when its client disconnects unless asked to: without this, a run
    # whose client left would go on until its next write fails (or forever, while a tool waits).
    # On shutdown, open event streams get a few seconds, not aiohttp's default 60: an SSE stream is never
    # idle, so it would hold a redeploy up for the whole timeout; cancelled handlers cancel their runs.
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=5.0)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner


# --8<-- [end:serve]


async def main() -> None:
    from web_agent import build_agent, demo_server, endpoint

    async with demo_server() as scripted, build_agent(**endpoint(scripted.base_url)) as agent:
        runner = await serve(create_app(agent))
        print("Serving on http://127.0.0.1:8080/ (Ctrl+C to stop)")
        try:
            await anyio.sleep_forever()
        finally:
            await runner.cleanup()


if __name__ == "__main__":
    anyio.run(main)
