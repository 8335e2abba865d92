"""The HTTP SPI (seed 003's ``HttpTransport``) and its default implementation on aiohttp.

A transport sends one request. With ``stream=False`` it returns once the whole body is in (``read``
hands it back); with ``stream=True`` once the headers are in, and the body is then read chunk by chunk
(``next_chunk``). A transport enforces two of the ``Timeout`` limits itself: ``connect`` (opening a
connection) and ``read`` (the longest wait for data: for the response once the request is sent, then
for each next body chunk). Failures come out typed: ``ModelConnectionError`` (with the network error as
``__cause__``) and ``ModelTimeoutError``, so the client above never sees aiohttp. Transports know
nothing about JSON, SSE, retries or the total timeout (the client's anyio cancel scope). Request
headers (which carry the API key) never appear in a repr or an error message.

How ``AiohttpTransport`` enforces the limits — chosen for the per-chunk cost, which decides streaming CPU:
- ``connect``: aiohttp's ``sock_connect``, the opening of a new socket only. Waiting for a free pooled
  connection (more concurrent calls than ``limit``) counts against no limit but the client's total: the
  server has not seen the request yet, so it is not slow;
- ``read``, not streaming: aiohttp's ``sock_read`` (no data for ``read`` seconds, headers or body);
- ``read``, streaming, until the headers: one anyio deadline of ``connect + read`` over the whole request
  (resolving, connecting, sending the body, the first answer), unless the pool is full when the call
  starts — then the call queues for a connection, which is no timeout — plus aiohttp's ``sock_read``
  (its timer starts once the request is written), switched off once the headers are in: aiohttp would
  re-arm it on every chunk;
- ``read``, streaming, between chunks: a watchdog timer armed once per ``read`` period, which counts only
  the time spent *waiting* in ``next_chunk`` (a slow consumer is not a slow server). Re-arming a timer or
  entering a cancel scope per chunk would cost as much as a raw aiohttp loop spends per delta.

Closing the transport (``aclose``, which a model's ``aclose`` calls) while another task still waits on one of
its calls fails that call with ``ModelConnectionError`` saying the session was closed: aiohttp itself would
leave a pending read waiting forever (closing a connection drops its reader unwoken) and fail the next one
with a bare ``RuntimeError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Mapping
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit

import aiohttp
import anyio

from ..model.errors import ModelConnectionError, ModelTimeoutError
from .timeouts import Timeout

_NO_SCOPE = contextlib.nullcontext()  # reusable: entering it does nothing

# aiohttp raises a bare RuntimeError, not a ClientError, for a read on a connection its session closed
# ("Connection closed.") and for a request on a closed session ("Session is closed"). Only these exact
# messages mean "closed": its other RuntimeErrors (two tasks reading one body…) are bugs that must surface.
_AIOHTTP_CLOSED = frozenset({"Connection closed.", "Session is closed"})

__all__ = ["AiohttpResponse", "AiohttpTransport", "HttpResponse", "HttpTransport"]


@runtime_checkable
class HttpResponse(Protocol):
    """A response whose headers have arrived; the body is read with ``read`` or ``next_chunk``."""

    @property
    def status(self) -> int:
        """The HTTP status code."""
        ...

    @property
    def headers(self) -> Mapping[str, str]:
        """Response headers; lookups are case-insensitive."""
        ...

    async def read(self) -> bytes:
        """The whole body (already in memory when the request was sent with ``stream=False``)."""
        ...

    async def next_chunk(self) -> bytes:
        """The next piece of the body, as much as has arrived; ``b""`` at its end."""
        ...

    async def aclose(self) -> None:
        """Release the connection: back to the pool when the body was read to its end, else closed."""
        ...


@runtime_checkable
class HttpTransport(Protocol):
    """Sends HTTP requests. Implementations own their connection pool and release it in ``aclose``."""

    async def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeout: Timeout,  # noqa: ASYNC109
        stream: bool = False,
    ) -> HttpResponse:
        """Send a request; return once the whole response (``stream=False``) or its headers are in.

        ``timeout.connect`` bounds establishing the connection, ``timeout.read`` the wait for the
        response once the request is sent. Raises ``ModelConnectionError`` when the server cannot be
        reached or the connection drops, ``ModelTimeoutError`` when either limit is exceeded.
        """
        ...

    async def aclose(self) -> None:
        """Close every pooled connection. The transport may be used again afterwards (it reconnects).

        A call still in progress (in another task) fails with ``ModelConnectionError``: it must neither hang
        nor fail with anything untyped.
        """
        ...


def _where(url: str) -> str:
    """``scheme://host:port`` of a URL: enough to say where a failure happened, nothing more."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


class AiohttpResponse:
    """``HttpResponse`` over an ``aiohttp.ClientResponse`` (see the module notes on the read timeout)."""

    __slots__ = (
        "_body",
        "_content",
        "_loop",
        "_read_timeout",
        "_reading",
        "_response",
        "_url",
        "_waiting_since",
        "_watchdog",
    )

    def __init__(
        self,
        response: aiohttp.ClientResponse,
        url: str,
        read_timeout: float | None,
        body: bytes | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        reading: dict[aiohttp.StreamReader, str] | None = None,
    ) -> None:
        self._response = response
        self._content = response.content
        self._url = url
        self._read_timeout = read_timeout
        self._body = body
        self._loop = asyncio.get_running_loop() if loop is None else loop
        self._waiting_since = -1.0  # loop time when the pending next_chunk began waiting; -1: none
        self._watchdog: asyncio.TimerHandle | None = None
        # The transport's bodies being read, which its ``aclose`` fails; this one leaves it in ``aclose``.
        self._reading = reading

    @property
    def status(self) -> int:
        """The HTTP status code."""
        return self._response.status

    @property
    def headers(self) -> Mapping[str, str]:
        """Response headers (a case-insensitive multidict)."""
        return self._response.headers

    async def read(self) -> bytes:
        """The whole body; chunk by chunk (each under the read timeout) when it was not read yet."""
        if self._body is None:
            chunks: list[bytes] = []
            while chunk := await self.next_chunk():
                chunks.append(chunk)
            self._body = b"".join(chunks)
        return self._body

    async def next_chunk(self) -> bytes:
        """Whatever part of the body has arrived (at least one byte), or ``b""`` at the end."""
        read = self._read_timeout
        if read is not None:
            self._waiting_since = since = self._loop.time()
            if self._watchdog is None:
                self._watchdog = self._loop.call_at(since + read, self._check_stall)
        try:
            return await self._content.readany()
        except aiohttp.ClientError as exc:
            raise _failure(self._url, exc, read) from exc
        except RuntimeError as exc:
            if not _closed_by_aiohttp(exc):
                raise
            raise _closed(self._url, "reading the response from") from exc
        finally:
            self._waiting_since = -1.0

    def _check_stall(self) -> None:
        read = self._read_timeout
        assert read is not None
        since = self._waiting_since
        if since >= 0 and self._loop.time() - since >= read:
            self._watchdog = None
            where = _where(self._url)
            # Wakes the pending readany() with this error; the response is unusable afterwards.
            self._content.set_exception(
                ModelTimeoutError(f"no data from {where} within the read timeout of {read} s")
            )
            return
        base = since if since >= 0 else self._loop.time()
        self._watchdog = self._loop.call_at(base + read, self._check_stall)

    async def aclose(self) -> None:
        """Return the connection to the pool if the body was consumed, otherwise drop it."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self._reading is not None:
            self._reading.pop(self._content, None)
        if self._content.at_eof():
            self._response.release()
        else:
            self._response.close()


def _failure(
    url: str, exc: BaseException, read_timeout: float | None
) -> ModelConnectionError | ModelTimeoutError:
    where = _where(url)
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return ModelTimeoutError(f"no data from {where} within the read timeout of {read_timeout} s")
    return ModelConnectionError(f"connection to {where} lost while reading the response: {_describe(exc)}")


def _closed_by_aiohttp(exc: RuntimeError) -> bool:
    """Whether aiohttp raised ``exc`` because the session or connection was closed (``_AIOHTTP_CLOSED``)."""
    return type(exc) is RuntimeError and str(exc) in _AIOHTTP_CLOSED


def _closed(url: str, doing: str) -> ModelConnectionError:
    """The error of a call whose HTTP session was closed under it (by ``aclose``, from another task)."""
    return ModelConnectionError(
        f"the HTTP session was closed while {doing} {_where(url)} (another task called aclose() on the "
        "model or its transport, or closed the session it was given)"
    )


def _client_timeout(timeout: Timeout) -> tuple[Timeout, aiohttp.ClientTimeout]:
    """``timeout`` and its aiohttp form. ``connect`` (aiohttp's pool wait included) is left unset: only
    opening a socket is bounded (``sock_connect``).

    A transport keeps the last one (the same ``Timeout`` comes with every call of a model).
    """
    return timeout, aiohttp.ClientTimeout(total=None, sock_connect=timeout.connect, sock_read=timeout.read)


def _pool_is_full(session: aiohttp.ClientSession) -> bool:
    """Whether a new request would queue for a pooled connection (every one of ``limit`` is in use).

    Best effort, from the connector's own count (aiohttp has no public one); unknown means not full.
    """
    connector = session.connector
    limit = getattr(connector, "limit", 0)
    acquired = getattr(connector, "_acquired", None)
    return bool(limit) and acquired is not None and len(acquired) >= limit


def _stop_socket_timer(response: aiohttp.ClientResponse) -> None:
    """Switch aiohttp's ``sock_read`` off for the rest of a stream (the watchdog takes over), as aiohttp
    itself does for a websocket. Pooled connections get it back: aiohttp sets it anew for every request.
    """
    connection = response.connection
    protocol = None if connection is None else connection.protocol
    if protocol is not None:  # None: the body is in already and its connection released
        protocol.read_timeout = None
        protocol.start_timeout()  # with no timeout: cancels the timer pending since the last bytes


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class AiohttpTransport:
    """The default transport: one pooled ``aiohttp.ClientSession``, created lazily in the running loop.

    Pass ``session=`` to share a session you own (it is then never closed here). A transport used from a
    new event loop (e.g. two ``asyncio.run`` calls) opens a fresh session for that loop.

    >>> AiohttpTransport()
    AiohttpTransport(limit=100)
    """

    __slots__ = ("_closes", "_limit", "_loop", "_owned", "_reading", "_session", "_timeouts")

    def __init__(self, *, session: aiohttp.ClientSession | None = None, limit: int = 100) -> None:
        self._session = session
        self._owned = session is None
        self._limit = limit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timeouts: tuple[Timeout, aiohttp.ClientTimeout] | None = None
        # Bodies being read (with their URL): ``aclose`` fails them, since closing a connection leaves
        # aiohttp's pending read waiting forever. ``_closes`` counts ``aclose`` calls: a request that fails
        # while it changes failed because of it, not because of the server.
        self._reading: dict[aiohttp.StreamReader, str] = {}
        self._closes = 0

    def __repr__(self) -> str:
        return f"AiohttpTransport(limit={self._limit})"

    async def _open_session(self, loop: asyncio.AbstractEventLoop) -> aiohttp.ClientSession:
        """A new session for ``loop`` (the first, one for a new loop, or after ``aclose``)."""
        session = self._session
        if session is not None and not session.closed:
            # It belongs to an earlier event loop, now gone, and its sockets with it: closing only
            # marks it closed (aiohttp skips the dead loop's transports), which keeps GC quiet.
            with contextlib.suppress(Exception):
                await session.close()
        self._reading.clear()  # bodies of a loop that is gone: nothing is waiting for them any more
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._limit),
            auto_decompress=True,
            raise_for_status=False,
        )
        self._loop = loop
        return self._session

    async def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeout: Timeout,  # noqa: ASYNC109
        stream: bool = False,
    ) -> HttpResponse:
        """Send the request; return once the whole response (``stream=False``) or its headers are in."""
        loop = asyncio.get_running_loop()
        closes = self._closes
        session = self._session
        # The session in use: one passed in, or the one opened in this loop and still open.
        if session is None or (self._owned and (self._loop is not loop or session.closed)):
            session = await self._open_session(loop)
        limits = self._timeouts
        if limits is None or limits[0] is not timeout:
            limits = self._timeouts = _client_timeout(timeout)
        scope: anyio.CancelScope | None = None
        wait = math.inf
        if stream and timeout.read is not None and not _pool_is_full(session):
            # Until the headers, one deadline over all of it: resolving and opening the connection and
            # sending the body, which aiohttp's ``sock_read`` (it starts once the body is out) and
            # ``sock_connect`` (the socket only) leave unbounded. Not when the call will queue for a pooled
            # connection: waiting for the calls ahead of it is not the server being slow.
            wait = timeout.read + (timeout.connect or 0.0)
            scope = anyio.CancelScope(deadline=anyio.current_time() + wait)
        try:
            with scope or _NO_SCOPE:
                response = await session.request(
                    method, url, data=body, headers=headers, timeout=limits[1], allow_redirects=True
                )
            if stream:
                if scope is not None and scope.cancelled_caught:
                    raise ModelTimeoutError(
                        f"no response headers from {_where(url)} within {wait:g} s (connect + read)"
                    )
                _stop_socket_timer(response)
                data = None
                self._reading[response.content] = url  # until the response's aclose
            else:
                self._reading[response.content] = url
                try:
                    data = await response.read()
                finally:
                    self._reading.pop(response.content, None)
        except aiohttp.ConnectionTimeoutError as exc:
            where = _where(url)
            raise ModelTimeoutError(f"connecting to {where} timed out after {timeout.connect} s") from exc
        except aiohttp.ServerTimeoutError as exc:
            where = _where(url)
            awaited = "response headers" if stream else "complete response"
            message = f"no {awaited} from {where} within the read timeout of {timeout.read} s"
            raise ModelTimeoutError(message) from exc
        except (aiohttp.ClientError, OSError) as exc:
            if self._closes != closes:  # the server did not drop it: we did
                raise _closed(url, "waiting for the response from") from exc
            raise ModelConnectionError(f"request to {_where(url)} failed: {_describe(exc)}") from exc
        except RuntimeError as exc:
            if not _closed_by_aiohttp(exc):
                raise
            raise _closed(url, "sending the request to") from exc
        return AiohttpResponse(response, url, timeout.read, data, loop, self._reading if stream else None)

    async def aclose(self) -> None:
        """Close the session this transport opened (a session passed in stays open).

        A call still in progress on it (in another task) fails with ``ModelConnectionError``.
        """
        if not self._owned:
            return
        session, self._session = self._session, None
        self._closes += 1
        reading, self._reading = self._reading, {}
        for content, url in reading.items():
            if not content.at_eof():
                # Wakes a pending read now (and fails the next): after ``close`` nothing else would.
                content.set_exception(_closed(url, "reading the response from"))
        if session is not None and not session.closed:
            with contextlib.suppress(RuntimeError):  # its loop may already be closed
                await session.close()
