"""A real aiohttp app on 127.0.0.1 for the HTTP tests: one POST route, the test's own handler."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web


@contextlib.asynccontextmanager
async def serving(
    path: str, handle: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> AsyncIterator[str]:
    """Serve ``handle`` for ``POST path`` while the block runs; yields the server's origin
    (``http://127.0.0.1:<port>``)."""
    app = web.Application()
    app.router.add_post(path, handle)
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()
