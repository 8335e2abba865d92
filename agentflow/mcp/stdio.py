"""``MCPServerStdio``: an MCP server run as a subprocess, spoken to over its stdin and stdout.

The ``mcp`` package starts the process and stops it when the connection closes (it closes the server's
stdin, waits a little, then kills the process group), shielded from cancellation: no process outlives the
``async with`` block. The server's stderr (its logs) goes to ours unless ``errlog`` says otherwise.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TextIO, Unpack

from mcp.client._transport import Transport
from mcp.client.stdio import StdioServerParameters, stdio_client

from .server import MCPServerBase, MCPServerOptions

__all__ = ["MCPServerStdio"]


class MCPServerStdio(MCPServerBase):
    """An MCP server started as ``command args…`` (a subprocess), its tools offered to agents.

    ``env`` is added to the small environment the ``mcp`` package passes on (``PATH``, ``HOME``, ``USER``…),
    not to all of ours, so that keys and tokens reach only the servers given them
    (``env={**os.environ}`` passes everything). ``cwd`` is the process's working directory. ``errlog`` is
    where its stderr goes (a file with a descriptor; default: our stderr). The other options are
    ``MCPServerBase``'s.

    >>> MCPServerStdio("python", ["weather_server.py"], tool_prefix="weather")
    <MCPServerStdio 'python weather_server.py' (not connected)>
    """

    __slots__ = ("_args", "_cwd", "_env", "_errlog", "_executable")

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        errlog: TextIO | None = None,
        **options: Unpack[MCPServerOptions],
    ) -> None:
        if not isinstance(command, str) or not command:
            raise TypeError(f"command must be the server's executable (a non-empty str), got {command!r}")
        if isinstance(args, str):
            raise TypeError(f"args must be a list of arguments, not a string: args=[{args!r}]")
        self._executable = command
        self._args = [str(a) for a in args]
        self._env = dict(env) if env is not None else None
        self._cwd = os.fspath(cwd) if cwd is not None else None
        self._errlog = errlog
        super().__init__(**options)

    def _default_name(self) -> str:
        line = " ".join([os.path.basename(self._executable), *self._args])
        return line if len(line) <= 80 else line[:77] + "..."

    def _command(self) -> str | None:
        return self._executable

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Transport]:
        parameters = StdioServerParameters(
            command=self._executable, args=self._args, env=self._env, cwd=self._cwd
        )
        async with AsyncExitStack() as stack:
            errlog = self._errlog if self._errlog is not None else _stderr(stack)
            yield stdio_client(parameters, errlog=errlog)


def _stderr(stack: AsyncExitStack) -> TextIO:
    """Our stderr when the child can write to it (it needs a file descriptor: a test's captured stderr may
    have none), else the process's original stderr, else the null device."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return stack.enter_context(open(os.devnull, "w"))  # closed with the connection
