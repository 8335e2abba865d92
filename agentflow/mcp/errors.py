"""The errors of MCP server connections, each naming the server, and the translation of what the ``mcp``
package raises into them.

The ``mcp`` package reports a failed connection in many shapes: an ``OSError`` from spawning the command,
an ``httpx`` connect error, its own ``MCPError`` ("Connection closed"), each often wrapped in one or more
``ExceptionGroup``\\ s by the task groups it runs. ``connection_error`` finds the cause that says what went
wrong and writes one message for it. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

__all__ = [
    "MCPConnectionError",
    "MCPRequestError",
    "MCPServerError",
    "connection_error",
    "leaf_cause",
    "request_error",
]


class MCPServerError(Exception):
    """Something went wrong with an MCP server: ``server`` is its name (given, or its command or URL)."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(f"MCP server {server!r}: {message}")
        self.server = server

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable (multiprocessing, task queues): the constructor's arguments, then the attributes set
        # since (a failed run's ``run_result``, notes).
        return (type(self), (self.server, self._message()), dict(self.__dict__))

    def _message(self) -> str:
        """The ``message`` the error was made with: its text without the server's name before it."""
        return str(self).removeprefix(f"MCP server {self.server!r}: ")


class MCPConnectionError(MCPServerError):
    """The server could not be reached or started, did not complete the MCP handshake, or the connection was
    lost (the process exited, the HTTP session ended); also raised when a server is used outside its
    ``async with`` block."""


class MCPRequestError(MCPServerError):
    """The server answered a request with an MCP protocol error (an unknown tool, invalid parameters…), or the
    request timed out. ``code`` is the JSON-RPC error code (``None`` for a timeout of our own).

    A tool that *fails* is not this: its result carries ``isError``, and the model gets its message.
    """

    def __init__(self, server: str, message: str, code: int | None = None) -> None:
        super().__init__(server, message)
        self.code = code

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.server, self._message(), self.code), dict(self.__dict__))


def leaf_cause(exc: BaseException) -> BaseException:
    """The first exception inside ``exc`` that is no ``BaseExceptionGroup`` (task groups nest them).

    >>> leaf_cause(ExceptionGroup("g", [ExceptionGroup("h", [KeyError("k")])]))
    KeyError('k')
    """
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def connection_error(
    server: str, exc: BaseException, *, command: str | None = None, detail: str | None = None
) -> MCPConnectionError:
    """The ``MCPConnectionError`` for a connection attempt that failed with ``exc`` (its cause).

    ``command`` is the stdio server's executable, named when it cannot be run; ``detail`` what the transport
    saw that the ``mcp`` package's error does not say (an HTTP status), added in parentheses.

    >>> str(connection_error("files", FileNotFoundError(2, "No such file"), command="mcp-files"))
    "MCP server 'files': cannot start it: the command 'mcp-files' was not found"
    >>> str(connection_error("api", TimeoutError(), command=None))
    "MCP server 'api': the MCP handshake did not complete in time (is it an MCP server? see its logs)"
    """
    cause = leaf_cause(exc)
    if command is not None and isinstance(cause, FileNotFoundError):
        reason = f"cannot start it: the command {command!r} was not found"
    elif command is not None and isinstance(cause, PermissionError):
        reason = f"cannot start it: the command {command!r} is not executable"
    elif isinstance(cause, TimeoutError):
        reason = "the MCP handshake did not complete in time (is it an MCP server? see its logs)"
    elif isinstance(cause, MCPError) and cause.code == CONNECTION_CLOSED:
        where = "the process exited or closed its output" if command is not None else "the server hung up"
        reason = (
            f"the connection closed during the MCP handshake ({where}; "
            f"{'its stderr' if command is not None else 'its logs'} should say why)"
        )
    else:
        reason = f"cannot connect: {_describe(cause)}"
    if detail is not None:
        reason += f" ({detail})"
    error = MCPConnectionError(server, reason)
    error.__cause__ = cause
    return error


def request_error(server: str, what: str, exc: MCPError) -> MCPServerError:
    """The error for a request (``what``: ``"tools/list"``, ``"tools/call 'search'"``) the server answered
    with ``exc``: a lost connection is an ``MCPConnectionError``, anything else an ``MCPRequestError``.

    >>> str(request_error("files", "tools/call 'read'", MCPError(-32602, "Unknown tool: read")))
    "MCP server 'files': tools/call 'read' failed: Unknown tool: read (code -32602)"
    """
    if exc.code == CONNECTION_CLOSED:
        error: MCPServerError = MCPConnectionError(server, f"the connection was lost during {what}")
    elif exc.code == REQUEST_TIMEOUT:
        error = MCPRequestError(server, f"{what} timed out", exc.code)
    else:
        error = MCPRequestError(server, f"{what} failed: {exc.message} (code {exc.code})", exc.code)
    error.__cause__ = exc
    return error


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
