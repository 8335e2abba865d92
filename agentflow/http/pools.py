"""The connection pools of ``AiohttpTransport``: one aiohttp session per event loop (``Pool``), closed with
its loop, and the connector that notes what a keep-alive race needs to be told apart.

A keep-alive race: a pooled connection that the server closed for idling just as a request went out on it.
The request fails before any byte of an answer, and the server most likely never read it. It is told apart
from a server that read the request and then dropped the connection (which sending again would have worked
on twice) by two facts only the client has: how long the connection sat idle in the pool before it was
handed out (``IDLE_SECONDS``: long enough for the server to have closed it), and how soon after that it
failed (``RACE_SECONDS``: at once). Nothing here sends anything again: ``in_keepalive_race`` only says which
it was. Internal to the transport; used and closed only in each pool's own loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

import aiohttp

from .failures import closed

if TYPE_CHECKING:
    from aiohttp.client_proto import ResponseHandler
    from aiohttp.client_reqrep import ConnectionKey
    from aiohttp.connector import Connection
    from aiohttp.tracing import Trace

__all__ = [
    "IDLE_SECONDS",
    "RACE_SECONDS",
    "STALE_CONNECTION_ERRORS",
    "Pool",
    "PoolConnector",
    "in_keepalive_race",
    "pool_is_full",
]

# When the latest request of this context (task) got a pooled connection that had sat idle for at least
# ``IDLE_SECONDS`` (``time.monotonic()``), or -1.0 for any other: set by ``PoolConnector._get``, read by
# ``in_keepalive_race`` only when the request failed. A context variable because aiohttp gives the
# transport no handle on the request's connection, and concurrent requests run in tasks of their own (each
# with its own context).
_REUSED: contextvars.ContextVar[float] = contextvars.ContextVar("agentflow_http_reused", default=-1.0)
IDLE_SECONDS = 1.0
"""How long a pooled connection must have sat idle for its failure to count as a keep-alive race. Servers
close idle connections after seconds, never sooner: gunicorn after 2 s, uvicorn (vLLM, LiteLLM, most Python
servers) and Node after 5, nginx after 75. A connection reused within a second of its last answer (the next
step of an agent) was not closed for idling: a failure on it is a server that read the request and died."""
RACE_SECONDS = 0.5
"""How soon after a pooled connection was handed out its failure still counts as a keep-alive race. A server
that closed an idle connection answers the request's first bytes with its FIN or RST within a round trip;
a connection dropped later may have carried a request the model worked on."""

# What a pooled connection that the server closed while it sat idle fails with, when a request is sent on
# it: the server's FIN (no byte of an answer), its RST, or a write on the closing socket. A failure to
# connect (``ClientConnectorError``, a ``ClientOSError`` too) is not one: it never happens on a pooled one.
STALE_CONNECTION_ERRORS = (
    aiohttp.ServerDisconnectedError,
    aiohttp.ClientOSError,
    aiohttp.ClientConnectionResetError,
)


def pool_is_full(session: aiohttp.ClientSession) -> bool:
    """Whether a new request would queue for a pooled connection (every one of ``limit`` is in use).

    Best effort, from the connector's own count (aiohttp has no public one); unknown means not full.
    """
    connector = session.connector
    limit = getattr(connector, "limit", 0)
    acquired = getattr(connector, "_acquired", None)
    return bool(limit) and acquired is not None and len(acquired) >= limit


def in_keepalive_race(exc: BaseException) -> bool:
    """Whether a request failed in a keep-alive race: on a pooled connection that had sat idle long enough
    for the server to close it (``IDLE_SECONDS``), at once (``RACE_SECONDS``), before any byte of an answer
    (a ``ServerDisconnectedError`` that carries a partial status line or headers, its ``message``, is a
    server that began to answer)."""
    handed_out = _REUSED.get()
    if handed_out < 0 or isinstance(exc, aiohttp.ClientConnectorError):
        return False
    if time.monotonic() - handed_out > RACE_SECONDS:
        return False
    return not isinstance(exc, aiohttp.ServerDisconnectedError) or isinstance(exc.message, str)


class PoolConnector(aiohttp.TCPConnector):
    """aiohttp's connector, noting for each request whether its connection came from the pool after sitting
    idle there long enough for the server to have closed it (``_REUSED``).

    Knowing it lets the transport tell a keep-alive race (an idle pooled connection the server had just
    closed) from a server that read a request and dropped the connection.
    """

    async def _get(self, key: ConnectionKey, traces: list[Trace]) -> Connection | None:
        """aiohttp's pooled connection for ``key`` (or ``None``), noting when it was handed out if it had sat
        idle for ``IDLE_SECONDS``. aiohttp keeps with each one when it came back to the pool."""
        pooled: list[tuple[ResponseHandler, float]] | None = self._conns.get(key)  # type: ignore[assignment]
        oldest = pooled[0] if pooled else None  # the one aiohttp hands out, if it is still open
        connection = await super()._get(key, traces)
        handed_out = -1.0
        if connection is not None and oldest is not None and connection.protocol is oldest[0]:
            now = time.monotonic()  # aiohttp's clock for the pool
            if now - oldest[1] >= IDLE_SECONDS:
                handed_out = now
        _REUSED.set(handed_out)
        return connection


async def _close_with_its_loop(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """Parked (started, never resumed) in the loop that opened ``session``, to close it when the loop ends.

    asyncio closes the async generators still open when a loop shuts down (``shutdown_asyncgens``, which
    ``asyncio.run``, ``asyncio.Runner`` and ``anyio.run`` call while the loop still runs): that runs this
    ``finally`` in the right loop and thread, where closing the session closes its sockets. A loop closed
    without that step is only noticed once closed, when nothing can close its sockets any more (see
    ``Pool.forget``).
    """
    try:
        yield
    finally:
        await session.close()


class Pool:
    """The connections of one event loop: its aiohttp session, and the bodies being read from it.

    Used and closed only in its loop; ``forget`` is for a pool whose loop is closed.
    """

    __slots__ = ("closed", "loop", "reading", "session", "watch")

    def __init__(self, loop: asyncio.AbstractEventLoop | None, session: aiohttp.ClientSession) -> None:
        self.loop = loop  # None: a session passed in whose loop aiohttp did not record, not yet used
        self.session = session
        # Bodies being read (with their URL): ``close`` fails them, since closing a connection leaves
        # aiohttp's pending read waiting forever.
        self.reading: dict[aiohttp.StreamReader, str] = {}
        # Set by ``close``: a request that fails once it is set failed because of it, not of the server.
        self.closed = False
        self.watch: AsyncGenerator[None, None] | None = None  # ``_close_with_its_loop``

    async def start_watch(self) -> None:
        """Close the session when its loop shuts down (must run in that loop)."""
        self.watch = watch = _close_with_its_loop(self.session)
        await watch.asend(None)  # runs to its ``yield`` at once: asyncio registers it with the loop

    async def close(self) -> None:
        """Close the session, failing the reads still waiting on it (in its own loop)."""
        self.closed = True
        reading, self.reading = self.reading, {}
        for content, url in reading.items():
            if not content.at_eof():
                # Wakes a pending read now (and fails the next): after ``close`` nothing else would.
                content.set_exception(closed(url, "reading the response from"))
        watch = self.watch
        if watch is not None:
            await watch.aclose()  # its ``finally`` closes the session (and the loop forgets the generator)
        await self.session.close()

    async def forget(self) -> None:
        """Let go of a pool whose loop is closed.

        Its session was closed when the loop shut down, unless the loop was closed without
        ``shutdown_asyncgens``: then its sockets, which only that loop could close, stay open until the
        garbage collector takes them. Closing such a session only marks it closed (aiohttp skips a closed
        loop's transports), which keeps aiohttp's "Unclosed client session" warning quiet.
        """
        self.closed = True
        self.reading = {}
        self.watch = None  # a generator of a closed loop: asyncio drops it without running it
        with contextlib.suppress(Exception):
            await self.session.close()
