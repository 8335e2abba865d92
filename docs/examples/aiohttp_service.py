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
from agentflow.agent.open_runs import OpenRuns
from agentflow.sse import SSE_HEADERS, sse_stream

PAGE = Path(__file__).parent / "static" / "index.html"


AGENT = web.AppKey("agent", Agent)
RUNS = web.AppKey("runs", OpenRuns)


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
    # stop, memory is completed, RunCancelled is published. On shutdown, RUNS cancels it (see create_app).
    # sse_stream sends a failure's public text, not its message (errors="full" would send that).
    async with (
        request.app[AGENT].stream(question, policy="coalesce_deltas") as run,
        request.app[RUNS].track(run),
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


# --8<-- [start:app]
def create_app(agent: Agent) -> web.Application:
    """The service for ``agent`` (the caller owns the agent and closes it)."""
    app = web.Application()
    app[AGENT] = agent
    app[RUNS] = runs = OpenRuns()
    app.router.add_get("/", page)
    app.router.add_get("/runs", run_events)

    async def cancel_runs(app: web.Application) -> None:
        await runs.cancel_all()

    # On shutdown aiohttp waits for every handler to finish, and an event stream finishes only when its run
    # does. on_shutdown runs before that wait (after the server stopped accepting connections): cancelled
    # there, each run sends its run_cancelled frame and its handler returns, so the wait is short.
    app.on_shutdown.append(cancel_runs)
    return app


# --8<-- [end:app]


# --8<-- [start:serve]
async def serve(
    app: web.Application, host: str = "127.0.0.1", port: int = 8080, *, shutdown_timeout: float = 5.0
) -> web.AppRunner:
    """Start serving ``app``; the caller calls ``await runner.cleanup()`` to stop."""
    # aiohttp does NOT cancel a handler when its client disconnects unless asked to: without this, a run
    # whose client left would go on until its next write fails (or forever, while a tool waits).
    # shutdown_timeout only bounds a handler that does not finish once its run is cancelled: aiohttp waits
    # that long, then as long again, then cancels the handler without waiting for it and closes its
    # connection (its client gets no terminal frame). The default, 60 s, would hold a redeploy up for 2 min.
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=shutdown_timeout)
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
