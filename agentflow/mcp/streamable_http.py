"""``MCPServerStreamableHTTP``: an MCP server reached over the Streamable HTTP transport (an URL such as
``https://example.com/mcp``).

The ``mcp`` package speaks the transport over an ``httpx2`` client made here, with the given headers (an
``Authorization`` header, say) and timeouts, and closed with the connection. When the connection closes the
server is told the session ended (an HTTP ``DELETE``), unless the block is left by cancellation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Unpack
from urllib.parse import urlsplit, urlunsplit

import httpx2
from mcp.client._transport import Transport
from mcp.client.streamable_http import streamable_http_client

from .server import MCPServerBase, MCPServerOptions, _check_timeout

__all__ = ["MCPServerStreamableHTTP"]


class MCPServerStreamableHTTP(MCPServerBase):
    """An MCP server at ``url`` (Streamable HTTP), its tools offered to agents.

    ``headers`` are sent with every request. ``timeout`` (default 30 s) bounds connecting, each HTTP request's
    connect, write and pool waits, the handshake and ``tools/list``; ``read_timeout`` (default 300 s) is the
    longest wait for the next bytes of a response, which may stream for as long as a tool runs. The other
    options are ``MCPServerBase``'s.

    >>> MCPServerStreamableHTTP("https://user:secret@example.com/mcp?key=1")
    <MCPServerStreamableHTTP 'https://example.com/mcp' (not connected)>
    """

    __slots__ = ("_headers", "_http_error", "_read_timeout", "_url")

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        read_timeout: float | None = 300.0,
        **options: Unpack[MCPServerOptions],
    ) -> None:
        if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"url must be an http:// or https:// URL, got {url!r}")
        self._url = url
        self._headers = dict(headers) if headers is not None else None
        self._read_timeout = _check_timeout(read_timeout, "read_timeout")
        self._http_error: str | None = None
        super().__init__(**options)

    def _default_name(self) -> str:
        # Neither credentials nor a query (which may hold a key) belong in an error message or a log line.
        parts = urlsplit(self._url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Transport]:
        timeout = httpx2.Timeout(self._timeout, read=self._read_timeout)
        self._http_error = None
        hooks = {"response": [self._note_status]}
        async with httpx2.AsyncClient(headers=self._headers, timeout=timeout, event_hooks=hooks) as http:
            yield streamable_http_client(self._url, http_client=http)

    async def _note_status(self, response: httpx2.Response) -> None:
        # The mcp package reports a refused request as "Server returned an error response": the status
        # (401: a missing or wrong token) is what tells the user what to fix.
        if response.status_code >= 400:
            self._http_error = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()

    def _failure_detail(self) -> str | None:
        return self._http_error
