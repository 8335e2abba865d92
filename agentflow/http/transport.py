"""The HTTP SPI (seed 003's ``HttpTransport``) and its default implementation on aiohttp.

A transport sends one request. With ``stream=False`` it returns once the whole body is in (``read``
hands it back); with ``stream=True`` once the headers are in, and the body is then read chunk by chunk
(``next_chunk``). A transport enforces two of the ``Timeout`` limits itself: ``connect`` (opening a
connection) and ``read`` / ``idle`` (the longest wait for data: ``read`` for the response once the request
is sent, and for each next body chunk until the caller says the answer began; ``idle`` after that).
Failures come out typed: ``ModelConnectionError`` (with the network error as ``__cause__``) and
``ModelTimeoutError`` (whose ``limit`` names the limit), so the client above never sees aiohttp.
Transports know nothing about JSON, SSE, retries or the total timeout (the client's anyio cancel scope).
Request headers (which carry the API key) never appear in a repr or an error message.

How ``AiohttpTransport`` enforces the limits — chosen for the per-chunk cost, which decides streaming CPU:
- ``connect``: aiohttp's ``connect`` and ``sock_connect``: resolving the host name and opening a new
  connection (TCP and TLS), each socket attempt within it too. Waiting for a free pooled connection (more
  concurrent calls than ``limit``) counts against no limit but the client's total: the server has not seen
  the request yet, so it is not slow. A call that starts with the pool full therefore gets no ``connect``
  bound at all (aiohttp's ``connect`` would include its wait);
- ``read``, not streaming: aiohttp's ``sock_read`` (no data for ``read`` seconds, headers or body);
- ``read``, streaming, until the headers: one anyio deadline of ``connect + read`` over the whole request
  (resolving, connecting, sending the body, the first answer), unless the pool is full when the call
  starts — then the call queues for a connection, which is no timeout — plus aiohttp's ``sock_read``
  (its timer starts once the request is written), switched off once the headers are in: aiohttp would
  re-arm it on every chunk;
- ``read``, streaming, between chunks: a watchdog timer armed once per ``read`` period, which counts only
  the time spent *waiting* in ``next_chunk`` (a slow consumer is not a slow server). Re-arming a timer or
  entering a cancel scope per chunk would cost as much as a raw aiohttp loop spends per delta;
- ``idle``: once the client calls the response's ``answer_began`` (the stream's first model event), the
  watchdog's period becomes ``Timeout.stream_gap``. Until then the wait is ``read``'s: a reasoning model may
  think for minutes after the headers (and after the Responses API's ``response.created``) before its first
  token, and a short idle limit there would cut it off, or worse, have it sent again.

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
of loops already closed: it forgets them.

Retries are the client's business (its ``RetryPolicy``): failures go up typed. The one exception is a
keep-alive race: a pooled connection that the server closed just as the request went out on it (the request
fails before any byte of an answer, within ``_RACE_SECONDS`` of getting the connection). That request is
sent once more at once, on another connection, as browsers do: a server closing an idle connection has not
read what arrives on it. (aiohttp itself does this for idempotent methods only; a POST that failed later may
have been worked on, and goes to the retry policy.) Only once, only on a reused connection, and nothing is
published about it.

Redirects are not followed: a 3xx comes back as the response (the client makes it a ``RedirectError``).
Following one would turn a POST into a GET (301, 302, 303) or carry it to another host without its
``Authorization`` header (307, 308).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import math
import threading
import weakref
from collections.abc import AsyncGenerator, Mapping
from ssl import SSLCertVerificationError, SSLContext
from typing import TYPE_CHECKING, Protocol, runtime_checkable
from urllib.parse import urlsplit

import aiohttp
import anyio

from ..model.errors import ModelConnectionError, ModelTimeoutError, TimeoutLimit, redact_url
from .timeouts import Timeout

if TYPE_CHECKING:
    from aiohttp.connector import Connection
    from aiohttp.tracing import Trace

_NO_SCOPE = contextlib.nullcontext()  # reusable: entering it does nothing

log = logging.getLogger("agentflow.http")

# When the latest request of this context (task) got a pooled connection (loop time), or -1.0 for a new one:
# set by ``_PoolConnector.connect``, read by ``send`` only when the request failed. A context variable because
# aiohttp gives ``send`` no handle on the request's connection, and concurrent requests run in tasks of
# their own (each with its own context).
_REUSED: contextvars.ContextVar[float] = contextvars.ContextVar("agentflow_http_reused", default=-1.0)
_RACE_SECONDS = 1.0
"""How soon after a pooled connection was handed out its failure still counts as a keep-alive race. A server
that closed an idle connection answers the request's first bytes with its FIN or RST within a round trip;
a connection dropped later (a proxy's idle timeout during a long generation) may have carried a request the
model worked on, and sending that again would be billed twice, so it goes to the retry policy."""

# What a pooled connection that the server closed while it sat idle fails with, when a request is sent on
# it: the server's FIN (no byte of an answer), its RST, or a write on the closing socket. A failure to
# connect (``ClientConnectorError``, a ``ClientOSError`` too) is not one: it never happens on a pooled one.
_STALE_CONNECTION_ERRORS = (
    aiohttp.ServerDisconnectedError,
    aiohttp.ClientOSError,
    aiohttp.ClientConnectionResetError,
)

# aiohttp raises a bare RuntimeError, not a ClientError, for a read on a connection its session closed
# ("Connection closed.") and for a request on a closed session ("Session is closed"). Only these exact
# messages mean "closed": its other RuntimeErrors (two tasks reading one body…) are bugs that must surface.
_AIOHTTP_CLOSED = frozenset({"Connection closed.", "Session is closed"})
# aiohttp's ValueError for a request with an Authorization header and credentials of its own for the host
# (from the URL's user info, or from ~/.netrc when the session trusts the environment).
_AIOHTTP_TWO_AUTHORIZATIONS = (
    "Cannot combine AUTHORIZATION header with AUTH argument or credentials encoded in URL"
)

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
        reached or the connection drops, ``ModelTimeoutError`` when either limit is exceeded. A redirect
        is returned as it is, not followed (the client makes it a ``RedirectError``).
        """
        ...

    async def aclose(self) -> None:
        """Close the pooled connections (those of the calling event loop, for a transport that keeps a pool
        per loop). The transport may be used again afterwards (it reconnects).

        A call still in progress (in another task) fails with ``ModelConnectionError``: it must neither hang
        nor fail with anything untyped.
        """
        ...


def _where(url: str) -> str:
    """``scheme://host:port`` of a URL: enough to say where a failure happened, nothing more."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


class AiohttpResponse:
    """``HttpResponse`` over an ``aiohttp.ClientResponse`` (see the module notes on the read timeout).

    A wait for the next chunk is bounded by ``read_timeout`` until the caller says the answer began
    (``answer_began``), then by ``stream_gap`` (``Timeout.stream_gap``: the idle limit).
    """

    __slots__ = (
        "_body",
        "_content",
        "_gap",
        "_limit",
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

    def answer_began(self) -> None:
        """The caller's answer has begun (a stream's first event): from now on a wait for the next chunk is
        bounded by the idle limit (``Timeout.stream_gap``) instead of ``Timeout.read``.

        Not part of ``HttpResponse``: the client calls it when a response has it. Without it every wait is
        bounded by ``read``.
        """
        if self._limit == "idle":
            return
        self._limit = "idle"
        if self._gap != self._read_timeout:
            self._read_timeout = self._gap
            if self._watchdog is not None:
                # Armed for the longer limit: the next wait arms one for the new limit.
                self._watchdog.cancel()
                self._watchdog = None

    def _check_stall(self) -> None:
        read = self._read_timeout
        assert read is not None
        since = self._waiting_since
        if since >= 0 and self._loop.time() - since >= read:
            self._watchdog = None
            # Wakes the pending readany() with this error; the response is unusable afterwards.
            self._content.set_exception(_stalled(self._url, read, self._limit))
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


def _stalled(url: str, seconds: float, limit: TimeoutLimit) -> ModelTimeoutError:
    """The error of a stream that sent nothing for ``seconds``: before its answer began (``read``), or
    during it (``idle``)."""
    where = redact_url(url)
    if limit == "idle":
        return ModelTimeoutError(
            f"the stream from {where} stalled: no data for {seconds:g} s once the answer had begun (the "
            "idle timeout; Timeout(idle=...) sets it)",
            limit="idle",
        )
    return ModelTimeoutError(
        f"no answer from {where} within the read timeout of {seconds:g} s: the stream began but its answer "
        "did not (a reasoning model may think for minutes first); raise read_timeout= (or Timeout(read=...))",
        limit="read",
    )


def _failure(
    url: str, exc: BaseException, read_timeout: float | None
) -> ModelConnectionError | ModelTimeoutError:
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return ModelTimeoutError(
            f"no data from {redact_url(url)} within the read timeout of {read_timeout} s", limit="read"
        )
    return ModelConnectionError(
        f"connection to {_where(url)} lost while reading the response: {_describe(exc)}"
    )


def _not_sent(url: str, exc: BaseException) -> ModelConnectionError:
    """The error of a request that failed on the network: it names the URL and says what to check."""
    target = redact_url(url)
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        host = urlsplit(url).hostname
        return ModelConnectionError(
            f"could not reach {target}: the host name {host!r} does not resolve ({_describe(exc)}); check "
            "base_url's host, or your network (or proxy: AiohttpTransport(trust_env=True) uses HTTPS_PROXY)"
        )
    if isinstance(exc, aiohttp.ClientConnectorError):
        return ModelConnectionError(
            f"could not connect to {target} ({_describe(exc)}): is the server running, and is base_url's "
            "host and port right?"
        )
    return ModelConnectionError(f"request to {target} failed: {_describe(exc)}")


def _no_answer(url: str, read: float, stream: bool) -> ModelTimeoutError:
    """The error of a request that got no answer within the read timeout (aiohttp's ``sock_read``)."""
    where = redact_url(url)
    if stream:
        return ModelTimeoutError(
            f"no response headers from {where} within the read timeout of {read:g} s; raise read_timeout= "
            "(or Timeout(read=...)) if the server answers that slowly",
            limit="read",
        )
    return ModelTimeoutError(
        f"no answer from {where} within the read timeout of {read:g} s: a call that is not streamed gets its "
        "answer only once all of it is generated, which can take minutes (a reasoning model, a long output); "
        "raise read_timeout= (or Timeout(read=...)), or stream the call (model.stream(), agent.stream()): "
        "once a stream's answer begins only the gaps between its chunks are limited (Timeout.idle)",
        limit="read",
    )


def _closed_by_aiohttp(exc: RuntimeError) -> bool:
    """Whether aiohttp raised ``exc`` because the session or connection was closed (``_AIOHTTP_CLOSED``)."""
    return type(exc) is RuntimeError and str(exc) in _AIOHTTP_CLOSED


def _closed(url: str, doing: str) -> ModelConnectionError:
    """The error of a call whose HTTP session was closed under it (by ``aclose``, from another task)."""
    # Not retryable: the close was deliberate, and retrying would open a new session nobody closes (and
    # send again a request the server may already be working on).
    return ModelConnectionError(
        f"the HTTP session was closed while {doing} {_where(url)} (another task called aclose() on the "
        "model or its transport, or closed the session it was given)",
        retryable=False,
    )


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


def _stale_connection(exc: BaseException) -> bool:
    """Whether a request failed because its pooled connection had been closed by the server.

    Only before any byte of an answer: a ``ServerDisconnectedError`` that carries a partial status line or
    headers (its ``message``) is a server that began to answer.
    """
    handed_out = _REUSED.get()
    if isinstance(exc, aiohttp.ClientConnectorError) or handed_out < 0:
        return False
    if asyncio.get_running_loop().time() - handed_out > _RACE_SECONDS:
        return False
    return not isinstance(exc, aiohttp.ServerDisconnectedError) or isinstance(exc.message, str)


def _certificate_failure(url: str, exc: BaseException) -> ModelConnectionError:
    """The error of a server whose TLS certificate failed verification: not retried, it will fail again."""
    cause = exc.certificate_error if isinstance(exc, aiohttp.ClientConnectorCertificateError) else exc
    reason = getattr(cause, "verify_message", None) or str(cause)
    return ModelConnectionError(
        f"the TLS certificate of {_where(url)} could not be verified ({reason}). If the server uses a "
        "private or corporate CA, give its certificate: AiohttpTransport(ssl=ssl.create_default_context("
        "cafile=...)) or the SSL_CERT_FILE environment variable",
        retryable=False,
    )


class _PoolConnector(aiohttp.TCPConnector):
    """aiohttp's connector, noting for each request whether its connection came from the pool (``_REUSED``).

    Knowing it lets ``send`` tell a keep-alive race (a pooled connection the server had just closed) from
    a server that accepts connections and drops them.
    """

    def __init__(self, *, limit: int, ssl: SSLContext | bool) -> None:
        super().__init__(limit=limit, ssl=ssl)
        self._served: weakref.WeakSet[object] = weakref.WeakSet()  # protocols that carried a request

    async def connect(
        self,
        req: aiohttp.ClientRequest,
        traces: list[Trace],
        timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109 (aiohttp's signature)
    ) -> Connection:
        """aiohttp's ``connect``, noting whether (and when) the connection was used before."""
        _REUSED.set(-1.0)  # not the previous request's: this connect may fail before it is known
        connection = await super().connect(req, traces, timeout)
        protocol = connection.protocol
        served = self._served
        if protocol in served:
            _REUSED.set(asyncio.get_running_loop().time())
        else:
            served.add(protocol)
        return connection


async def _close_with_its_loop(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """Parked (started, never resumed) in the loop that opened ``session``, to close it when the loop ends.

    asyncio closes the async generators still open when a loop shuts down (``shutdown_asyncgens``, which
    ``asyncio.run``, ``asyncio.Runner`` and ``anyio.run`` call while the loop still runs): that runs this
    ``finally`` in the right loop and thread, where closing the session closes its sockets. A loop closed
    without that step is only noticed once closed, when nothing can close its sockets any more (see
    ``_Pool.forget``).
    """
    try:
        yield
    finally:
        await session.close()


class _Pool:
    """The connections of one event loop: its aiohttp session, and the bodies being read from it.

    Used and closed only in its loop; ``forget`` is for a pool whose loop is closed.
    """

    __slots__ = ("closed", "loop", "reading", "session", "watch")

    def __init__(self, loop: asyncio.AbstractEventLoop | None, session: aiohttp.ClientSession) -> None:
        self.loop = loop  # None: a session passed in, not yet used
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
                content.set_exception(_closed(url, "reading the response from"))
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


class AiohttpTransport:
    """The default transport: pooled ``aiohttp`` sessions, one per event loop, each opened lazily in its loop.

    A transport used from several loops (two ``asyncio.run`` calls, threads that each run their own loop)
    keeps a pool for each and never touches another loop's: see the module notes. ``aclose`` closes the
    calling loop's pool; a pool also closes when its loop shuts down.

    Options for the sessions it opens: ``limit`` caps the connections of each pool; ``trust_env=True``
    honours ``HTTP_PROXY``/``HTTPS_PROXY``/``NO_PROXY`` and ``~/.netrc`` as aiohttp does (off by default, as
    in aiohttp, which then reads ``~/.netrc`` in a worker thread on every request); ``ssl`` is an
    ``ssl.SSLContext`` for a custom CA or client certificate, ``True`` (the default) to verify with the
    system's CAs, ``False`` to skip verification. Pass ``session=`` to share a session you own instead: it
    is then used from every loop as it is (it belongs to the loop it was made in) and never closed here,
    and ``trust_env``/``ssl`` are set on it, not here.

    >>> AiohttpTransport()
    AiohttpTransport(limit=100)
    """

    __slots__ = ("_given", "_last", "_limit", "_lock", "_pools", "_ssl", "_timeouts", "_trust_env")

    def __init__(
        self,
        *,
        session: aiohttp.ClientSession | None = None,
        limit: int = 100,
        trust_env: bool = False,
        ssl: SSLContext | bool = True,
    ) -> None:
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
        # A session passed in: one pool for every loop. Otherwise one pool per running loop, in ``_pools``
        # (touched from any thread that runs a loop, hence ``_lock``), and ``_last`` the pool of the last
        # call: the one to use when the next call comes from the same loop, with no lookup and no lock.
        self._given = None if session is None else _Pool(None, session)
        self._pools: dict[asyncio.AbstractEventLoop, _Pool] = {}
        self._lock = threading.Lock()
        self._last: _Pool | None = self._given
        self._timeouts: tuple[Timeout, aiohttp.ClientTimeout, aiohttp.ClientTimeout] | None = None

    def __repr__(self) -> str:
        options = "" if not self._trust_env else ", trust_env=True"
        if self._ssl is not True:
            options += ", ssl=False" if self._ssl is False else ", ssl=<SSLContext>"
        return f"AiohttpTransport(limit={self._limit}{options})"

    async def _pool(self, loop: asyncio.AbstractEventLoop) -> _Pool:
        """The pool of ``loop``, opened if it has none (its first call, or the first after ``aclose``)."""
        given = self._given
        if given is not None:
            if given.loop is None:
                given.loop = loop
            return given
        opened = False
        with self._lock:
            pool = self._pools.get(loop)
            if pool is None or pool.session.closed:
                connector = _PoolConnector(limit=self._limit, ssl=self._ssl)
                session = aiohttp.ClientSession(
                    connector=connector,
                    trust_env=self._trust_env,
                    auto_decompress=True,
                    raise_for_status=False,
                )
                pool = self._pools[loop] = _Pool(loop, session)
                opened = True
            gone = self._forget_closed_loops()
        self._last = pool
        if opened:
            await pool.start_watch()
        for old in gone:
            await old.forget()
        return pool

    def _forget_closed_loops(self) -> list[_Pool]:
        """Take the pools of closed loops out of ``_pools`` (under ``_lock``). A loop's ``is_closed`` is
        all this reads of another thread's loop: once closed, nothing in that thread uses its pool."""
        pools = self._pools
        closed = [loop for loop in pools if loop.is_closed()]
        return [pools.pop(loop) for loop in closed]

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
        full = _pool_is_full(session)
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
                except _STALE_CONNECTION_ERRORS as exc:
                    if pool.closed or not _stale_connection(exc):
                        raise
                    # A keep-alive race: the server closed this pooled connection as the request went out,
                    # so its application never saw it. Sent again at once on another connection, as no
                    # retry (no back-off, no ModelRetry, not counted); a second failure is the server's.
                    log.debug("resending %s to %s: %s", method, _where(url), _describe(exc))
                    response = await session.request(
                        method, url, data=body, headers=headers, timeout=client_timeout, allow_redirects=False
                    )
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
                reading = pool.reading
                reading[response.content] = url
                try:
                    data = await response.read()
                finally:
                    reading.pop(response.content, None)
        except aiohttp.ConnectionTimeoutError as exc:
            raise ModelTimeoutError(
                f"connecting to {_where(url)} timed out after {timeout.connect or 0.0:g} s: is the host "
                "reachable (base_url, a firewall, a proxy)? Timeout(connect=...) sets the limit",
                limit="connect",
            ) from exc
        except aiohttp.ServerTimeoutError as exc:
            raise _no_answer(url, timeout.read or 0.0, stream) from exc
        except (aiohttp.ClientError, OSError) as exc:
            if pool.closed:  # the server did not drop it: we did
                raise _closed(url, "waiting for the response from") from exc
            if isinstance(exc, SSLCertVerificationError):  # aiohttp's certificate error is one too
                raise _certificate_failure(url, exc) from exc
            raise _not_sent(url, exc) from exc
        except RuntimeError as exc:
            if not _closed_by_aiohttp(exc):
                raise
            raise _closed(url, "sending the request to") from exc
        except ValueError as exc:
            if str(exc) != _AIOHTTP_TWO_AUTHORIZATIONS:
                raise
            raise ModelConnectionError(
                f"the request to {_where(url)} was not sent: it carries its own Authorization header (the "
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
