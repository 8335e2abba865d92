"""``MCPServerBase``: one connection to an MCP server, its tools as agentflow tools, and their calls.

``async with server:`` connects (``connection.Connection``: the ``mcp`` package's client runs in an asyncio
task of its own, so its tasks and cancel scopes belong to no caller) and leaving the block closes the
connection and waits until it is closed (the ``mcp`` package stops a stdio server's process, shielded from
cancellation), whether the block ends normally, with an error, or cancelled. Blocks may nest and overlap, in
one task or in many (the requests of a web service, each in ``async with agent:``): they share one
connection, opened by the first block to enter (the others wait for it: a lock) and closed when the last one
leaves, whichever task that is. A connection that dies (the process exits, the HTTP session ends) fails the
listings and calls made after it with ``MCPConnectionError`` instead of cancelling the code in the blocks;
the next block to enter connects again. The connection belongs to the event loop it was opened in: using it
from another raises at once.

Calls are the ``mcp`` package's: a call cancelled (a run cancelled, agentflow's tool timeout) is cancelled
on the server too (``notifications/cancelled``), and the connection stays usable. The transports (stdio, HTTP)
are the subclasses' job: ``_transport``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Collection
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self, TypedDict

import anyio
from mcp import Client
from mcp.client._transport import Transport
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, Implementation, ToolListChangedNotification
from mcp_types import Tool as MCPTool

from ..tools.failures import ToolErrorPolicy
from ..tools.tool import Tool
from .connection import Connection
from .errors import MCPConnectionError, MCPRequestError, connection_error, request_error
from .tools import ToolFilter, build_tools

if TYPE_CHECKING:
    from mcp.client.session import IncomingMessage
    from mcp.shared.dispatcher import ProgressFnT

__all__ = ["MCPServerBase", "MCPServerOptions"]

_log = logging.getLogger("agentflow.mcp")

_MAX_PAGES: Final = 100
"""Pages of ``tools/list`` read at most: a server whose cursor never ends cannot hang ``tools()``."""


class MCPServerOptions(TypedDict, total=False):
    """The options every MCP server takes as keywords, whatever its transport (see ``MCPServerBase``)."""

    name: str | None
    tool_prefix: str | None
    include: Collection[str] | None
    exclude: Collection[str] | None
    tool_filter: ToolFilter | None
    cache_tools: bool
    structured_content: bool
    tool_timeout: float | None
    on_error: ToolErrorPolicy | None
    timeout: float | None


def _names(value: Collection[str] | None, what: str) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise TypeError(f"{what} takes a list of tool names, not a string: {what}=[{value!r}]")
    return frozenset(value)


def _check_prefix(prefix: str | None) -> str | None:
    if prefix is not None and (not prefix or not all(c.isalnum() or c in "_-" for c in prefix)):
        raise ValueError(
            f"tool_prefix must be letters, digits, '_' or '-' (a part of a tool name), got {prefix!r}"
        )
    return prefix


def _check_timeout(value: float | None, what: str) -> float | None:
    if value is not None and (isinstance(value, bool) or not value > 0):
        raise ValueError(f"{what} must be a positive number of seconds or None, got {value!r}")
    return value


class MCPServerBase:
    """An MCP server whose tools an agent may use: ``async with server:`` connects, ``await server.tools()``
    lists its tools as agentflow ``Tool``\\ s. It is a toolset (``agentflow.tools.toolsets``): an agent given
    it (``Agent(model, tools=[server, ...])``) lists its tools at each run; ``async with agent:`` connects it.

    Options common to every transport (the subclasses take them as keywords):

    - ``name``: how errors and logs name the server (default: its command or URL);
    - ``tool_prefix``: prepended with ``_`` to every tool name (``"docs"``: ``docs_search``), so that two
      servers' tools cannot clash;
    - ``include`` / ``exclude``: the server's tool names (as the server spells them) to offer / leave out;
      ``tool_filter``: a function of a tool's MCP definition saying whether to offer it (all three apply);
    - ``cache_tools`` (default ``True``): ``tools()`` lists the server's tools once per connection, then
      returns the same ``Tool``\\ s; ``tools(refresh=True)`` or ``invalidate_tools()`` when they changed;
    - ``structured_content`` (default ``True``): a result with structured content gives the model that JSON
      rather than the result's text blocks (see ``agentflow.mcp.results``);
    - ``tool_timeout`` / ``on_error``: every tool's ``timeout`` and ``on_error`` (``None``: the agent's);
    - ``timeout`` (default 30 s): the limit for connecting (the handshake included) and for listing tools. A
      tool call has the agent's tool timeout instead.
    """

    __slots__ = (
        "_built",
        "_cache",
        "_connection",
        "_entered",
        "_entry_lock",
        "_exclude",
        "_filter",
        "_include",
        "_list_lock",
        "_name",
        "_on_error",
        "_prefix",
        "_structured",
        "_timeout",
        "_tool_timeout",
        "_tools",
    )

    def __init__(
        self,
        *,
        name: str | None = None,
        tool_prefix: str | None = None,
        include: Collection[str] | None = None,
        exclude: Collection[str] | None = None,
        tool_filter: ToolFilter | None = None,
        cache_tools: bool = True,
        structured_content: bool = True,
        tool_timeout: float | None = None,
        on_error: ToolErrorPolicy | None = None,
        timeout: float | None = 30.0,
    ) -> None:
        if tool_filter is not None and not callable(tool_filter):
            raise TypeError(f"tool_filter must be a function of a tool's MCP definition, got {tool_filter!r}")
        self._name = name if name is not None else self._default_name()
        self._prefix = _check_prefix(tool_prefix)
        self._include = _names(include, "include")
        self._exclude = _names(exclude, "exclude") or frozenset()
        self._filter = tool_filter
        self._cache = cache_tools
        self._structured = structured_content
        self._tool_timeout = _check_timeout(tool_timeout, "tool_timeout")
        self._on_error = on_error
        self._timeout = _check_timeout(timeout, "timeout")
        self._entered = 0
        self._connection: Connection | None = None
        self._entry_lock = anyio.Lock()
        self._list_lock = anyio.Lock()
        self._tools: list[Tool[..., Any]] | None = None
        self._built: dict[bytes, Tool[..., Any]] = {}
        """The last listing's tools by their definitions: a listing finding a definition unchanged reuses its
        ``Tool`` (compiling a schema's validator is most of a tool's cost, and a run's registry is kept while
        its tools are the same objects)."""

    # --- what the subclasses provide -------------------------------------------------------------

    def _transport(self) -> AbstractAsyncContextManager[Transport]:
        """The transport to connect over, entered in the connection's task (it may own resources, such as an
        HTTP client, that live as long as the connection)."""
        raise NotImplementedError

    def _default_name(self) -> str:
        """The name of a server not given one (its command line or URL)."""
        raise NotImplementedError

    def _failure_detail(self) -> str | None:
        """What the transport saw of a failed connection that the ``mcp`` package's error leaves out."""
        return None

    def _command(self) -> str | None:
        """The executable a stdio server runs (named when it cannot be started); None for other transports."""
        return None

    # --- the connection ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The name errors and logs use for this server."""
        return self._name

    @property
    def connected(self) -> bool:
        """Whether the server is connected (inside ``async with``, and the connection was not lost)."""
        connection = self._connection
        return connection is not None and connection.lost is None

    @property
    def server_info(self) -> Implementation | None:
        """The name and version the server gave when it connected (``None`` outside ``async with``, or when it
        gave none)."""
        client = self._connection.client if self._connection is not None else None
        return client.server_info if client is not None else None

    @property
    def instructions(self) -> str | None:
        """The instructions the server gave for using it (worth adding to an agent's), if any."""
        client = self._connection.client if self._connection is not None else None
        return client.instructions if client is not None else None

    async def __aenter__(self) -> Self:
        async with self._entry_lock:  # one block connects; the others entering meanwhile wait for it
            current = self._connection
            if current is not None and current.loop.is_closed():
                # Its loop ended without the block being left (a ``run_sync`` or ``asyncio.run`` that
                # returned): nothing of it can be closed or used any more.
                self._connection, self._entered, self._tools = None, 0, None
                current = None
            if current is not None:
                self._check_loop(current)
                if current.lost is None:
                    self._entered += 1
                    return self
                # Lost under the blocks still open: connect again, for them too.
                await current.close()
                self._tools = None
            self._connection = await self._open()
            self._entered += 1
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        connection = self._connection
        if connection is not None and connection.loop.is_closed():
            self._connection, self._entered, self._tools = None, 0, None  # nothing of it left to close
            return
        if connection is not None:
            self._check_loop(connection)
        if self._entered <= 0:
            raise RuntimeError(f"{self!r} was left more often than it was entered ('async with server:')")
        # No lock, and no await before the connection is detached: a block cancelled while leaving cannot
        # wait for a lock, and one entering from now on opens a new connection rather than get this one.
        self._entered -= 1
        if self._entered:
            return
        self._connection = None
        self._tools = None  # the next connection may find other tools (a restarted server)
        if connection is not None:
            # The block's own exception is not the connection's: it closes the same way however the block
            # ended, and the exception goes on from here.
            await connection.close()

    async def _open(self) -> Connection:
        connection = Connection()
        try:
            await connection.open(self._client_context, self._timeout, self._name)
        except Exception as exc:
            raise connection_error(  # noqa: B904 (its cause is set)
                self._name, exc, command=self._command(), detail=self._failure_detail()
            )
        return connection

    @asynccontextmanager
    async def _client_context(self) -> AsyncIterator[Client]:
        """The client of one connection, entered in the connection's task (the transport may own resources,
        such as an HTTP client, that live as long as the connection)."""
        async with (
            self._transport() as transport,
            Client(transport, client_info=_agentflow_info(), message_handler=self._on_message) as client,
        ):
            yield client

    def _check_loop(self, connection: Connection) -> None:
        if connection.loop is not asyncio.get_running_loop():
            raise MCPConnectionError(
                self._name,
                "connected in another event loop (another thread, or another asyncio.run / run_sync): a "
                "connection can only be used in the loop that opened it; connect it in this one",
            )

    async def _on_message(self, message: IncomingMessage) -> None:
        """What the server sends unasked. ``notifications/tools/list_changed`` forgets the cached tools, so
        the next ``tools()`` (the next run of an agent given the server) lists them again. Only servers of
        the handshake era send it so; at protocol 2026-07-28 it comes on a ``subscriptions/listen`` stream,
        which is not opened (``invalidate_tools()`` or ``cache_tools=False`` there)."""
        if isinstance(message, ToolListChangedNotification):
            self._tools = None

    def _connected(self) -> Connection:
        """The connection, usable here and now: else ``MCPConnectionError`` saying why not."""
        connection = self._connection
        if connection is None or connection.client is None:
            raise MCPConnectionError(
                self._name,
                "not connected: use it inside 'async with server:' (which connects it), or, for an agent "
                "given the server (Agent(tools=[server])), 'async with agent:'",
            )
        self._check_loop(connection)
        if connection.lost is not None:
            raise MCPConnectionError(
                self._name,
                "the connection was lost (a new 'async with server:' or 'async with agent:' block connects "
                "again)",
            ) from connection.lost
        return connection

    # --- tools ------------------------------------------------------------------------------------

    async def tools(self, *, refresh: bool = False) -> list[Tool[..., Any]]:
        """The server's tools (those its filters let through) as agentflow tools: what each run of an agent
        given the server offers (``Agent(tools=[server])``), or a list to give an agent (``Agent(tools=[*await
        server.tools()])``, fixed then).

        Listed once per connection when ``cache_tools`` is on; ``refresh=True`` lists them again. Raises
        ``MCPConnectionError`` outside ``async with``, once the connection is lost (never the tools of a dead
        connection), or in another event loop than the connection's, and ``MCPRequestError`` if the server
        refuses the request or does not answer within ``timeout``.
        """
        connection = self._connected()
        cached = self._tools
        if cached is not None and not refresh:
            return list(cached)
        async with self._list_lock:
            if self._tools is not None and not refresh:  # listed while this call waited for the lock
                return list(self._tools)
            tools = build_tools(
                self,
                await self.list_tools(),
                prefix=self._prefix,
                structured=self._structured,
                timeout=self._tool_timeout,
                on_error=self._on_error,
                known=self._built,
            )
            if self._cache and self._connection is connection:
                self._tools = tools
        return list(tools)

    def invalidate_tools(self) -> None:
        """Forget the cached tools: the next ``tools()`` lists them again."""
        self._tools = None

    async def list_tools(self) -> list[MCPTool]:
        """The MCP definitions of the server's tools that the filters let through, listed now (every page)."""
        connection = self._connected()
        client = connection.client
        assert client is not None
        found: list[MCPTool] = []
        cursor: str | None = None
        try:
            with anyio.fail_after(self._timeout):
                for _ in range(_MAX_PAGES):
                    page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                    found.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
        except MCPError as exc:
            raise self._failed(connection, "tools/list", exc)  # noqa: B904 (its cause is set)
        except TimeoutError:
            raise MCPRequestError(
                self._name, f"tools/list got no answer within {self._timeout:g} s"
            ) from None
        return self._filtered(found)

    def _filtered(self, definitions: list[MCPTool]) -> list[MCPTool]:
        if self._include is not None:
            missing = self._include - {d.name for d in definitions}
            if missing:
                _log.warning(
                    "MCP server %r has no tool named %s (include=...); it has: %s",
                    self._name,
                    ", ".join(sorted(missing)),
                    ", ".join(d.name for d in definitions) or "none",
                )
        return [
            d
            for d in definitions
            if (self._include is None or d.name in self._include)
            and d.name not in self._exclude
            and (self._filter is None or self._filter(d))
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, progress: ProgressFnT | None = None
    ) -> CallToolResult:
        """Call the server's tool ``name`` (as the server spells it) and return the MCP result as is.

        The agent's tools call this; use it directly for what a result holds that the model does not get
        (images, embedded resources). Raises ``MCPConnectionError`` when not connected or when the connection
        is lost, and ``MCPRequestError`` when the server answers with a protocol error (an unknown tool).
        """
        connection = self._connected()
        client = connection.client
        assert client is not None
        try:
            return await client.call_tool(name, arguments, progress_callback=progress)
        except MCPError as exc:
            raise self._failed(connection, f"tools/call {name!r}", exc)  # noqa: B904 (its cause is set)

    def _failed(self, connection: Connection, what: str, exc: MCPError) -> Exception:
        error = request_error(self._name, what, exc)
        if isinstance(error, MCPConnectionError) and connection.lost is None:
            connection.lost = error  # the calls after this one fail at once, and ``connected`` says so
        return error

    def __repr__(self) -> str:
        state = "connected" if self.connected else "not connected"
        return f"<{type(self).__name__} {self._name!r} ({state})>"


_client_info: Implementation | None = None


def _agentflow_info() -> Implementation:
    """How agentflow introduces itself to servers (read once: the version comes from the package metadata)."""
    global _client_info
    if _client_info is None:
        import agentflow

        _client_info = Implementation(name="agentflow", version=agentflow.__version__)
    return _client_info
