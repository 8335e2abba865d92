"""The HTTP SPI (seed 003's ``HttpTransport``) and its default implementation on aiohttp.

A transport sends one request. With ``stream=False`` it returns once the whole body is in (``read``
hands it back); with ``stream=True`` once the headers are in, and the body is then read chunk by chunk
(``next_chunk``). A transport enforces two of the ``Timeout`` limits itself: ``connect`` (opening a
connection) and ``read`` / ``idle`` (``read`` for the response once the request is sent, and for a stream's
answer to begin once its headers are in; ``idle``, the longest wait for a chunk once the answer began).
Failures come out typed: ``ModelConnectionError`` (with the network error as ``__cause__``, scrubbed of the
request's headers and URL query), ``ModelTimeoutError`` (whose ``limit`` names the limit) and, for a body
that cannot be read (too large, compressed in a way that cannot be decoded), ``ProtocolError``; the client
above never sees aiohttp. Their wording lives in ``failures``.
Transports know nothing about JSON, SSE, retries or the total timeout (the client's anyio cancel scope).
Request headers (which carry the API key) never appear in a repr or an error message.

How ``AiohttpTransport`` enforces the limits — chosen for the per-chunk cost, which decides streaming CPU:
- ``connect``: aiohttp's ``connect`` and ``sock_connect``: resolving the host name and opening a new
  connection (TCP and TLS), each socket attempt within it too. Waiting for a free pooled connection (more
  concurrent calls than ``limit``) counts against no limit but the client's total: the server has not seen
  the request yet, so it is not slow. A call that starts with the pool full therefore gets no ``connect``
  bound at all (aiohttp's ``connect`` would include its wait);
- ``read``, not streaming: aiohttp's ``sock_read`` (no data for ``read`` seconds, headers or body), and a
  body that must be complete within ``read`` of its headers (checked as each piece arrives: a gateway that
  sends keep-alive bytes while the model works, as OpenRouter does, cannot hold the call open for good);
- ``read``, streaming, until the headers: one anyio deadline of ``connect + read`` over the whole request
  (resolving, connecting, sending the body, the first answer), unless the pool is full when the call
  starts — then the call queues for a connection, which is no timeout — plus aiohttp's ``sock_read``
  (its timer starts once the request is written), switched off once the headers are in: aiohttp would
  re-arm it on every chunk;
- ``read``, streaming, from the headers until the answer begins: one deadline, ``read`` after the headers
  arrived, armed then and disarmed by the response's ``answer_began`` (the client calls it at the stream's
  first model event). Only the caller can move it, by telling of progress (``progressed``: the client does
  for an event of the server's work that is not yet the answer, such as a hosted tool's web search item):
  it then runs ``read`` from there. Bytes alone never move it: keep-alive comments (``: ping``,
  OpenRouter's ``: OPENROUTER PROCESSING``) from a gateway whose upstream is stuck would otherwise hold the
  call open for good. A reasoning model may think for minutes after the headers (and after the Responses
  API's ``response.created``, or between hosted tools) before its first token, and a short idle limit there
  would cut it off, or worse, have it sent again. A caller that never calls ``answer_began`` gets the whole
  body under it;
- ``idle``, once the answer began: a watchdog timer armed once per ``Timeout.stream_gap`` period, which
  counts only the time spent *waiting* in ``next_chunk`` (a slow consumer is not a slow server).
  Re-arming a timer or entering a cancel scope per chunk would cost as much as a raw aiohttp loop spends
  per delta.

Bodies are bounded in size. A call that is not streamed accepts a 2xx body of up to ``max_body_bytes``
(128 MiB by default, far above any answer; a larger one is a ``ProtocolError``). An error body (non-2xx) is
kept up to ``MAX_ERROR_BODY_BYTES`` (64 KiB), enough for any error report and the start of any page: what
follows is not read (the connection is closed, not pooled). A stream's events are bounded by the client.

When a stream's caller has all it wants before the body ended (the protocol's end marker came, the rest is
the end of the body), ``release_at_end`` lets it go at once: the connection goes back to the pool when the
body's end arrives (aiohttp does that by itself), or is closed if it has not come within half a second.

Closing the transport (``aclose``, which a model's ``aclose`` calls) while another task still waits on one of
its calls fails that call with ``ModelConnectionError`` saying the session was closed: aiohttp itself would
leave a pending read waiting forever (closing a connection drops its reader unwoken) and fail the next one
with a bare ``RuntimeError``.

Event loops and threads. An aiohttp session belongs to the loop it was opened in, and must only be used and
closed there. ``AiohttpTransport`` therefore keeps one pool (session) per running loop: one model may serve
several threads that each run their own loop (``run_sync`` in a threaded web app). A call never touches
another loop's pool, and ``aclose`` closes the calling loop's pool only. A pool also closes itself when its
loop shuts down (``asyncio.run``, ``asyncio.Runner``, ``anyio.run``: their ``shutdown_asyncgens`` step), so a
loop that ends without ``aclose`` leaves no sockets open. The only other pools a call deals with are those
of loops already closed: it forgets them. A session passed in (``session=``) belongs to the loop it was made
in: a call from any other loop fails at once with a ``ModelConnectionError`` saying so.

Retries are the client's business (its ``RetryPolicy``): failures go up typed, and nothing is ever sent
twice here. A keep-alive race is only told apart (``pools``): a pooled connection that had sat idle for at
least ``IDLE_SECONDS`` (long enough for the server to close it for idling) and that fails at once
(``RACE_SECONDS``) as the request goes out on it, before any byte of an answer. Its
``ModelConnectionError`` says ``keepalive_race``: the server most likely never read that request, and the
policy retries it without a back-off (announced and counted as any retry; never under
``RetryPolicy.none()``). A connection reused sooner, or that fails later, may have carried a request the
server worked on (a worker killed mid-request, a proxy restarting): that failure is an ordinary one. (aiohttp
itself resends on a closed pooled connection for idempotent methods only, never a POST.)

Redirects are not followed: a 3xx comes back as the response (the client makes it a ``RedirectError``).
Following one would turn a POST into a GET (301, 302, 303) or carry it to another host without its
``Authorization`` header (307, 308).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
from collections.abc import Mapping
from ssl import SSLCertVerificationError, SSLContext
from typing import Protocol, runtime_checkable

import aiohttp
import anyio

from ..model.errors import ModelConnectionError, ModelTimeoutError, TimeoutLimit, redact_url
from .failures import (
    body_too_large,
    certificate_failure,
    closed,
    foreign_session,
    keepalive_race,
    lost,
    no_answer,
    not_sent,
    scrubbed,
    slow_body,
    stalled,
    where,
)
from .pools import STALE_CONNECTION_ERRORS, Pool, PoolConnector, in_keepalive_race, pool_is_full
from .timeouts import Timeout

_NO_SCOPE = contextlib.nullcontext()  # reusable: entering it does nothing

DEFAULT_MAX_BODY_BYTES = 128 * 1024 * 1024
"""The largest 2xx body a call that is not streamed accepts: far above any answer (a long output with
``logprobs`` runs to tens of MiB), low enough that a runaway server cannot exhaust memory."""
MAX_ERROR_BODY_BYTES = 64 * 1024
"""How much of an error body (non-2xx) is read: any error report, and the start of any page."""
_END_SECONDS = 0.5
"""How long a stream's connection waits for the end of a body whose caller is done (``release_at_end``)
before it is closed instead of going back to the pool."""

# aiohttp raises a bare RuntimeError, not a ClientError, for a read on a connection its session closed
# ("Connection closed.") and for a request on a closed session ("Session is closed"). Only these exact
# messages mean "closed": its other RuntimeErrors (two tasks reading one body…) are bugs that must surface.
_AIOHTTP_CLOSED = frozenset({"Connection closed.", "Session is closed"})
# aiohttp's ValueError for a request with an Authorization header and credentials of its own for the host
# (from the URL's user info, or from ~/.netrc when the session trusts the environment).
_AIOHTTP_TWO_AUTHORIZATIONS = (
    "Cannot combine AUTHORIZATION header with AUTH argument or credentials encoded in URL"
)

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "MAX_ERROR_BODY_BYTES",
    "AiohttpResponse",
    "AiohttpTransport",
    "HttpResponse",
    "HttpTransport",
]


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
        reached or the connection drops, ``ModelTimeoutError`` when either limit is exceeded,
        ``ProtocolError`` for a body that cannot be read. A redirect is returned as it is, not followed
        (the client makes it a ``RedirectError``). Nothing is sent twice: retrying is the caller's choice.
        """
        ...

    async def aclose(self) -> None:
        """Close the pooled connections (those of the calling event loop, for a transport that keeps a pool
        per loop). The transport may be used again afterwards (it reconnects).

        A call still in progress (in another task) fails with ``ModelConnectionError``: it must neither hang
        nor fail with anything untyped.
        """
        ...


class AiohttpResponse:
    """``HttpResponse`` over an ``aiohttp.ClientResponse`` (see the module notes on the read timeout).

    A body not read yet (a stream's) must begin its answer within ``read_timeout`` of the headers: the caller
    says when it did (``answer_began``), and may tell of the server's progress meanwhile (``progressed``: the
    deadline then runs from there); from then on each wait for the next chunk is bounded by ``stream_gap``
    (``Timeout.stream_gap``: the idle limit).
    """

    __slots__ = (
        "_body",
        "_content",
        "_gap",
        "_limit",
        "_loop",
        "_read_from",
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
        *,
        stream_gap: float | None = None,
    ) -> None:
        self._response = response
        self._content = response.content
        self._url = url
        self._read_timeout = read_timeout
        self._gap = stream_gap
        self._limit: TimeoutLimit = "read"  # which limit ``_read_timeout`` is now
        self._body = body
        self._loop = asyncio.get_running_loop() if loop is None else loop
        self._waiting_since = -1.0  # loop time when the pending next_chunk began waiting; -1: none
        self._watchdog: asyncio.TimerHandle | None = None
        self._read_from = self._loop.time()  # where the read deadline runs from (the headers, or progress)
        if body is None and read_timeout is not None:
            # Until the answer begins: one deadline from the headers, whatever arrives meanwhile.
            self._watchdog = self._loop.call_at(self._loop.time() + read_timeout, self._check_stall)
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
            raise lost(self._url, exc, read) from scrubbed(exc)
        except RuntimeError as exc:
            if not _closed_by_aiohttp(exc):
                raise
            raise closed(self._url, "reading the response from") from exc
        finally:
            self._waiting_since = -1.0

    def answer_began(self) -> None:
        """The caller's answer has begun (a stream's first event): the read deadline is off, and from now on
        each wait for the next chunk is bounded by the idle limit (``Timeout.stream_gap``).

        Not part of ``HttpResponse``: the client calls it when a response has it. Without it the whole body
        must arrive within ``read`` of the headers.
        """
        if self._limit == "idle":
            return
        self._limit = "idle"
        self._read_timeout = self._gap
        if self._watchdog is not None:
            # The read deadline: the next wait arms the idle watchdog.
            self._watchdog.cancel()
            self._watchdog = None

    def progressed(self) -> None:
        """The server made progress before the answer began (an event of its work that is not the answer
        yet, such as a hosted tool's item): the read deadline runs ``read`` from now. Does nothing once the
        answer began.

        Not part of ``HttpResponse``: the client calls it when a response has it. Only the caller can tell
        progress from keep-alive bytes, which must not extend the deadline.
        """
        if self._limit == "read":
            # The watchdog finds the deadline moved when it fires: no timer is re-armed here.
            self._read_from = self._loop.time()

    def release_at_end(self) -> None:
        """The caller is done with the body before its end arrived (a stream's end marker came): let the
        connection go back to the pool when the end arrives, or close it if that takes longer than half a
        second. Returns at once; the response must not be read or closed afterwards.

        Not part of ``HttpResponse``: the client calls it when a response has it.
        """
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self._reading is not None:
            self._reading.pop(self._content, None)
        response = self._response
        if self._content.is_eof():
            response.release()
        else:
            # aiohttp pools the connection by itself once the body's end arrives (unread or not); closing
            # it after that changes nothing.
            self._loop.call_later(_END_SECONDS, response.close)

    def _check_stall(self) -> None:
        read = self._read_timeout
        assert read is not None
        if self._limit == "read":
            deadline = self._read_from + read
            if self._loop.time() < deadline:
                # Progress moved the deadline since this timer was armed.
                self._watchdog = self._loop.call_at(deadline, self._check_stall)
                return
            # The read deadline passed before the answer began, whatever else arrived meanwhile.
            self._watchdog = None
            self._content.set_exception(stalled(self._url, read, "read"))
            return
        since = self._waiting_since
        if since >= 0 and self._loop.time() - since >= read:
            self._watchdog = None
            # Wakes the pending readany() with this error; the response is unusable afterwards.
            self._content.set_exception(stalled(self._url, read, "idle"))
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


def _closed_by_aiohttp(exc: RuntimeError) -> bool:
    """Whether aiohttp raised ``exc`` because the session or connection was closed (``_AIOHTTP_CLOSED``)."""
    return type(exc) is RuntimeError and str(exc) in _AIOHTTP_CLOSED


async def _read_whole(
    content: aiohttp.StreamReader,
    url: str,
    limit: int,
    truncate: bool,
    read: float | None,
    loop: asyncio.AbstractEventLoop,
) -> bytes:
    """A body that is not streamed, whole. One larger than ``limit`` is cut to it when ``truncate`` (an error
    body: its start is what matters) or is a ``ProtocolError``; one still coming ``read`` seconds after its
    headers is a read timeout (data that trickles in, such as a gateway's keep-alive bytes, never fires
    aiohttp's ``sock_read``)."""
    ends = math.inf if read is None else loop.time() + read
    chunks: list[bytes] = []
    size = 0
    while chunk := await content.readany():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            if truncate:
                return b"".join(chunks)[:limit]
            raise body_too_large(url, limit)
        if loop.time() > ends:
            raise slow_body(url, read or 0.0)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _client_timeout(timeout: Timeout) -> tuple[Timeout, aiohttp.ClientTimeout, aiohttp.ClientTimeout]:
    """``timeout`` and its two aiohttp forms: with ``connect`` (resolving and connecting, for a call that
    finds a free pooled connection or room for a new one) and without (for a call that will queue for
    one: aiohttp's ``connect`` includes that wait, which is no timeout).

    A transport keeps the last one (the same ``Timeout`` comes with every call of a model).
    """
    connect, read = timeout.connect, timeout.read
    return (
        timeout,
        aiohttp.ClientTimeout(total=None, connect=connect, sock_connect=connect, sock_read=read),
        aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=read),
    )


def _stop_socket_timer(response: aiohttp.ClientResponse) -> None:
    """Switch aiohttp's ``sock_read`` off for the rest of a stream (the watchdog takes over), as aiohttp
    itself does for a websocket. Pooled connections get it back: aiohttp sets it anew for every request.
    """
    connection = response.connection
    protocol = None if connection is None else connection.protocol
    if protocol is not None:  # None: the body is in already and its connection released
        protocol.read_timeout = None
        protocol.start_timeout()  # with no timeout: cancels the timer pending since the last bytes


class AiohttpTransport:
    """The default transport: pooled ``aiohttp`` sessions, one per event loop, each opened lazily in its loop.

    A transport used from several loops (two ``asyncio.run`` calls, threads that each run their own loop)
    keeps a pool for each and never touches another loop's: see the module notes. ``aclose`` closes the
    calling loop's pool; a pool also closes when its loop shuts down.

    Options for the sessions it opens: ``limit`` caps the connections of each pool; ``trust_env=True``
    honours ``HTTP_PROXY``/``HTTPS_PROXY``/``NO_PROXY`` and ``~/.netrc`` as aiohttp does (off by default, as
    in aiohttp, which then reads ``~/.netrc`` in a worker thread on every request); ``ssl`` is an
    ``ssl.SSLContext`` for a custom CA or client certificate, ``True`` (the default) to verify with the
    system's CAs, ``False`` to skip verification. ``max_body_bytes`` caps the body of a call that is not
    streamed (``DEFAULT_MAX_BODY_BYTES``, 128 MiB; a larger one raises ``ProtocolError``). Pass ``session=``
    to share a session you own instead: it is then used as it is, in the loop it was made in only (a call
    from another loop fails with ``ModelConnectionError`` saying so), and never closed here; ``trust_env``
    and ``ssl`` are set on it, not here.

    >>> AiohttpTransport()
    AiohttpTransport(limit=100)
    """

    __slots__ = (
        "_given",
        "_last",
        "_limit",
        "_lock",
        "_max_body",
        "_pools",
        "_ssl",
        "_timeouts",
        "_trust_env",
    )

    def __init__(
        self,
        *,
        session: aiohttp.ClientSession | None = None,
        limit: int = 100,
        trust_env: bool = False,
        ssl: SSLContext | bool = True,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int):
            raise TypeError(f"max_body_bytes must be an int (bytes), got {type(max_body_bytes).__name__}")
        if max_body_bytes <= 0:
            raise ValueError(f"max_body_bytes must be > 0, not {max_body_bytes}")
        if not isinstance(trust_env, bool):
            raise TypeError(f"trust_env must be True or False, got {type(trust_env).__name__}")
        if not isinstance(ssl, SSLContext | bool):
            raise TypeError(
                "ssl must be an ssl.SSLContext (e.g. ssl.create_default_context(cafile=...)), True (verify "
                f"with the system's CAs) or False (no verification), got {type(ssl).__name__}"
            )
        if session is not None and (trust_env or ssl is not True):
            raise ValueError(
                "trust_env= and ssl= configure the sessions AiohttpTransport opens: with session=, set them "
                "on that session (aiohttp.ClientSession(trust_env=..., "
                "connector=aiohttp.TCPConnector(ssl=...)))"
            )
        self._limit = limit
        self._trust_env = trust_env
        self._ssl = ssl
        self._max_body = max_body_bytes
        # A session passed in: the one pool, of the loop the session was made in (aiohttp's ``_loop``; None:
        # known at its first use). Otherwise one pool per running loop, in ``_pools`` (touched from any
        # thread that runs a loop, hence ``_lock``), and ``_last`` the pool of the last call: the one to use
        # when the next call comes from the same loop, with no lookup and no lock.
        self._given = None if session is None else Pool(getattr(session, "_loop", None), session)
        self._pools: dict[asyncio.AbstractEventLoop, Pool] = {}
        self._lock = threading.Lock()
        self._last: Pool | None = self._given
        self._timeouts: tuple[Timeout, aiohttp.ClientTimeout, aiohttp.ClientTimeout] | None = None

    def __repr__(self) -> str:
        options = "" if not self._trust_env else ", trust_env=True"
        if self._ssl is not True:
            options += ", ssl=False" if self._ssl is False else ", ssl=<SSLContext>"
        if self._max_body != DEFAULT_MAX_BODY_BYTES:
            options += f", max_body_bytes={self._max_body}"
        return f"AiohttpTransport(limit={self._limit}{options})"

    async def _pool(self, loop: asyncio.AbstractEventLoop) -> Pool:
        """The pool of ``loop``, opened if it has none (its first call, or the first after ``aclose``)."""
        given = self._given
        if given is not None:
            if given.loop is None:
                given.loop = loop
            elif given.loop is not loop:
                raise foreign_session()
            return given
        opened = False
        with self._lock:
            pool = self._pools.get(loop)
            if pool is None or pool.session.closed:
                connector = PoolConnector(limit=self._limit, ssl=self._ssl)
                session = aiohttp.ClientSession(
                    connector=connector,
                    trust_env=self._trust_env,
                    auto_decompress=True,
                    raise_for_status=False,
                )
                pool = self._pools[loop] = Pool(loop, session)
                opened = True
            gone = self._forget_closed_loops()
        self._last = pool
        if opened:
            await pool.start_watch()
        for old in gone:
            await old.forget()
        return pool

    def _forget_closed_loops(self) -> list[Pool]:
        """Take the pools of closed loops out of ``_pools`` (under ``_lock``). A loop's ``is_closed`` is
        all this reads of another thread's loop: once closed, nothing in that thread uses its pool."""
        pools = self._pools
        ended = [loop for loop in pools if loop.is_closed()]
        return [pools.pop(loop) for loop in ended]

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
        """Send the request; return once the whole response (``stream=False``) or its headers are in.

        Redirects are not followed: a 3xx response is returned as it is (following one would turn the POST
        into a GET, or send it on to another host without its ``Authorization``).
        """
        loop = asyncio.get_running_loop()
        pool = self._last
        # The pool in use: this loop's, open. Looked up (and opened) only when the last call was elsewhere.
        if pool is None or pool.loop is not loop or pool.session.closed:
            pool = await self._pool(loop)
        session = pool.session
        limits = self._timeouts
        if limits is None or limits[0] is not timeout:
            limits = self._timeouts = _client_timeout(timeout)
        full = pool_is_full(session)
        scope: anyio.CancelScope | None = None
        wait = math.inf
        if stream and timeout.read is not None and not full:
            # Until the headers, one deadline over all of it: resolving and opening the connection and
            # sending the body, which aiohttp's ``sock_read`` (it starts once the body is out) and
            # ``sock_connect`` (the socket only) leave unbounded. Not when the call will queue for a pooled
            # connection: waiting for the calls ahead of it is not the server being slow.
            wait = timeout.read + (timeout.connect or 0.0)
            scope = anyio.CancelScope(deadline=anyio.current_time() + wait)
        client_timeout = limits[2] if full else limits[1]
        try:
            with scope or _NO_SCOPE:
                try:
                    response = await session.request(
                        method, url, data=body, headers=headers, timeout=client_timeout, allow_redirects=False
                    )
                except STALE_CONNECTION_ERRORS as exc:
                    if pool.closed or not in_keepalive_race(exc):
                        raise
                    # Told apart, not sent again: whether to retry is the retry policy's call.
                    raise keepalive_race(url, exc) from scrubbed(exc)
            if stream:
                if scope is not None and scope.cancelled_caught:
                    raise ModelTimeoutError(
                        f"no response headers from {redact_url(url)} within {wait:g} s (the connect and "
                        "read timeouts: the server got the request and has not answered); raise "
                        "read_timeout= (or Timeout(read=...)) if the server answers that slowly",
                        limit="read",
                    )
                _stop_socket_timer(response)
                data = None
                pool.reading[response.content] = url  # until the response's aclose
            else:
                content = response.content
                reading = pool.reading
                reading[content] = url
                ok = 200 <= response.status < 300
                try:
                    data = await _read_whole(
                        content,
                        url,
                        self._max_body if ok else MAX_ERROR_BODY_BYTES,
                        not ok,
                        timeout.read,
                        loop,
                    )
                except BaseException:
                    response.close()  # as aiohttp's own read() does: the connection cannot be pooled
                    raise
                finally:
                    reading.pop(content, None)
        except aiohttp.ConnectionTimeoutError as exc:
            raise ModelTimeoutError(
                f"connecting to {where(url)} timed out after {timeout.connect or 0.0:g} s: is the host "
                "reachable (base_url, a firewall, a proxy)? Timeout(connect=...) sets the limit",
                limit="connect",
            ) from scrubbed(exc)
        except aiohttp.ServerTimeoutError as exc:
            raise no_answer(url, timeout.read or 0.0, stream) from scrubbed(exc)
        except (aiohttp.ClientError, OSError) as exc:
            if pool.closed:  # the server did not drop it: we did
                raise closed(url, "waiting for the response from") from scrubbed(exc)
            if isinstance(exc, SSLCertVerificationError):  # aiohttp's certificate error is one too
                raise certificate_failure(url, exc) from scrubbed(exc)
            raise not_sent(url, exc) from scrubbed(exc)
        except RuntimeError as exc:
            if not _closed_by_aiohttp(exc):
                raise
            raise closed(url, "sending the request to") from exc
        except ValueError as exc:
            if str(exc) != _AIOHTTP_TWO_AUTHORIZATIONS:
                raise
            raise ModelConnectionError(
                f"the request to {where(url)} was not sent: it carries its own Authorization header (the "
                "API key, or custom_headers), and aiohttp found credentials for the host too, in the "
                "base URL (user:password@) or, with trust_env=True, in ~/.netrc (a 'default' entry matches "
                "every host): keep one of them",
                retryable=False,
            ) from exc
        if not stream:
            return AiohttpResponse(response, url, timeout.read, data, loop)
        return AiohttpResponse(
            response, url, timeout.read, data, loop, pool.reading, stream_gap=timeout.stream_gap
        )

    async def aclose(self) -> None:
        """Close the calling event loop's pool (a session passed in stays open).

        A call still in progress on it (in another task) fails with ``ModelConnectionError``. Pools of other
        loops that still run are left alone: each belongs to its thread, where a call may be in progress;
        it closes when its own loop calls ``aclose`` or shuts down. Pools of closed loops are forgotten.
        """
        if self._given is not None:
            return
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.pop(loop, None)
            gone = self._forget_closed_loops()
        if pool is not None:
            if self._last is pool:
                self._last = None
            await pool.close()
        for old in gone:
            await old.forget()
