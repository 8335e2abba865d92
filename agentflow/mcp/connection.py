"""``Connection``: one connection to an MCP server, held open by an asyncio task of its own.

The ``mcp`` package's ``Client`` runs task groups and cancel scopes, which anyio ties to the task that entered
them: entered in the task of an ``async with server:`` block, they would have to be left by that same task,
so blocks of one server in different tasks (overlapping requests of a web service, each in ``async with
agent:``) could not share the connection. Here the client lives in a task that belongs to no block: the
first block starts it, the last one, whichever task that is, tells it to close and waits until it has. Its
cancel scope is no caller's, so a connection that dies fails the calls made after it (``lost``) instead of
cancelling anyone.

The task runs in an empty ``contextvars.Context``: a connection shared by many requests must not keep the
context variables (an ``Agent.override``, a trace span) of the one that happened to open it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import anyio
from mcp import Client

__all__ = ["Connection"]

_log = logging.getLogger("agentflow.mcp")


class Connection:
    """One connection: ``await open(...)`` starts its task and returns once the handshake is done,
    ``await close()`` ends it and returns once the transport is closed (a stdio server's process stopped)."""

    __slots__ = ("_closing", "_done", "_error", "_ready", "_scope", "_task", "client", "loop", "lost")

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        """The event loop the connection lives in: its streams cannot be used from another."""
        self.client: Client | None = None
        self.lost: BaseException | None = None
        """Why the connection ended under the blocks using it (the process exited, the session ended)."""
        self._error: BaseException | None = None
        self._ready = anyio.Event()
        self._closing = anyio.Event()
        self._done = anyio.Event()
        self._scope = anyio.CancelScope()
        self._task: asyncio.Task[None] | None = None

    async def open(
        self, connect: Callable[[], AbstractAsyncContextManager[Client]], limit: float | None, name: str
    ) -> Client:
        """Connect (``connect()`` gives the client to enter) within ``limit`` seconds; raises what connecting
        raised (``TimeoutError`` for the limit), with nothing left running."""
        # A reference kept for as long as the connection lives: the loop holds its tasks weakly.
        self._task = self.loop.create_task(self._run(connect, name), context=contextvars.Context())
        try:
            with anyio.fail_after(limit):
                await self._ready.wait()
        except BaseException:
            self._scope.cancel()
            with anyio.CancelScope(shield=True):
                await self._done.wait()
            raise
        if self._error is not None:
            raise self._error
        if self.client is None:  # the task was cancelled from outside (the loop shutting down)
            raise ConnectionError("the connection's task was cancelled before the handshake completed")
        return self.client

    async def close(self) -> None:
        """Close the connection and wait until it is closed (at once if it ended already). Cancelled while
        waiting, it stops the connection without the goodbyes (an HTTP ``DELETE``) and waits for that."""
        self._closing.set()
        try:
            await self._done.wait()
        except anyio.get_cancelled_exc_class():
            self._scope.cancel()
            with anyio.CancelScope(shield=True):
                await self._done.wait()
            raise

    async def _run(self, connect: Callable[[], AbstractAsyncContextManager[Client]], name: str) -> None:
        try:
            with self._scope:
                try:
                    async with connect() as client:
                        self.client = client
                        self._ready.set()
                        await self._closing.wait()
                except Exception as exc:
                    if not self._ready.is_set():
                        self._error = exc  # to ``open``, which raises it
                    else:
                        # The connection died under its blocks: calls from now on say so, the blocks go on.
                        self.lost = exc
                        _log.warning("MCP server %r: the connection was lost: %r", name, exc)
        finally:
            if not self._ready.is_set():
                self._ready.set()
            self._done.set()
            if self.lost is None and self.client is not None and not self._closing.is_set():
                self.lost = ConnectionError("the connection ended")  # cancelled from outside
