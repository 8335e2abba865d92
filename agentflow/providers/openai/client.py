"""``OpenAIHttpClient``: the HTTP half shared by the Chat Completions and Responses models.

It owns what both protocols do the same way: headers and the API key, JSON POSTs, SSE streams read in
chunks, the connect/read/total timeouts (anyio cancel scopes), the retry policy and the mapping of failures
onto typed ``ModelError``\\ s. What a payload *means* is not its business: a non-streaming call returns the
decoded JSON, and a stream is interpreted by a ``StreamDecoder`` that the caller supplies (pure, one per
attempt). Its neighbours hold the rest: the base URL rule (``base_url``), the checks of its options
(``http_options``) and the decoder contract with the failed-stream helpers (``stream_decoding``); the names
other modules import from here (``DEFAULT_BASE_URL``, ``StreamDecoder``, ``check_sdk_keywords``,
``normalize_base_url``, ``redact_url``) are re-exported.

The API key lives only in the ``Authorization`` header sent on the wire: never in a repr, a log line, an
exception message or an event. A server that echoes it (or another credential the client sends) in an error
has it masked there (``secret_masking``). Where it comes from when none is given is ``environment``'s rule.

Bodies are bounded: an error body is read up to 64 KiB (the transport's ``MAX_ERROR_BODY_BYTES``), one
server-sent event up to ``max_event_bytes``, a blocking answer up to the transport's own limit.

Callbacks: ``on_retry`` may be a plain or an async function (its awaitable is awaited); one that raises is
logged (``ERROR`` on ``agentflow.http``) and the call goes on, as an event callback's failure leaves a run
going. ``sleep`` must be an async function: a blocking one (``time.sleep``) would stall the event loop.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar, overload

import anyio
import attrs
import orjson

from ...http.request_guard import guard
from ...http.retry import RetryPolicy
from ...http.sse import DEFAULT_MAX_EVENT_BYTES, SseDecoder, SseEvent
from ...http.timeouts import Timeout
from ...http.transport import MAX_ERROR_BODY_BYTES, AiohttpTransport, HttpResponse, HttpTransport
from ...model.errors import (
    AuthenticationError,
    ModelConnectionError,
    ModelError,
    ModelTimeoutError,
    ProtocolError,
    body_excerpt,
    error_from_status,
    extend_message,
    redact_url,
)
from ...model.events import ModelEvent, ModelRetry, UsageReported
from ...model.retries import retry_listener
from .base_url import DEFAULT_BASE_URL, join_url, normalize_base_url
from .environment import ENV_API_KEY, ENV_BASE_URL, resolve_endpoint
from .http_options import check_http_options, check_sdk_keywords
from .secret_masking import CREDENTIAL_WORDS, known_secrets, mask_secrets, with_call_secrets
from .stream_decoding import StreamDecoder, not_a_stream, partial_of

__all__ = [
    "DEFAULT_BASE_URL",
    "OpenAIHttpClient",
    "StreamDecoder",
    "check_sdk_keywords",
    "normalize_base_url",
    "redact_url",
]

_USER_AGENT = "agentflow/0.1"
_EMPTY: Mapping[str, str] = MappingProxyType({})
# Media types that are never an event stream: an HTML or XML page answered with 200 (a captive portal, a
# proxy's login or error page). Parsed as SSE it would look like a cut-off stream and be retried. Every
# other type — text/event-stream, text/plain, none at all — is read as SSE (some servers and proxies
# mislabel real streams, and a wrong refusal would break them) unless it starts like a page or a JSON
# object: no line of an event stream starts with ``<`` or ``{``.
_NOT_A_STREAM = frozenset({"text/html", "application/xhtml+xml", "text/xml", "application/xml"})
_EXCERPT_BYTES = 4096  # read of such a page, kept as the error's body
_SNIFFED = 64  # first bytes of a stream looked at for how it starts (past leading whitespace)
# Failures of a stream's body, not of what it said: the decoder still holds what arrived before them.
_BODY_FAILURES = (ModelConnectionError, ModelTimeoutError)

OnRetry = Callable[[ModelRetry], object]
"""An ``on_retry`` callback: a plain function, or an async one (whatever awaitable it returns is awaited)."""

log = logging.getLogger("agentflow.http")

T = TypeVar("T")


class OpenAIHttpClient:
    """HTTP client for OpenAI-compatible servers: JSON POSTs and SSE streams, with retries and timeouts.

    ``base_url`` and ``api_key`` left out (``None``) are looked up as ``environment.resolve_endpoint`` says:
    ``OPENAI_BASE_URL``, else OpenAI's; ``OPENAI_API_KEY`` only for OpenAI's own URL or one that came from
    ``OPENAI_BASE_URL``. ``api_key=""`` sends no key whatever the environment holds.
    ``transport`` defaults to an ``AiohttpTransport`` owned (and closed) by this client; a transport you
    pass is yours to close. ``headers`` are sent after the standard ones (so they may replace them).
    ``timeout`` defaults to ``Timeout()``; ``connect_timeout`` / ``read_timeout`` (seconds) override its two
    limits. ``retry`` defaults to ``RetryPolicy()``. ``sleep`` (an async function) replaces ``anyio.sleep``
    for the back-off (tests record delays with it); ``on_retry`` (plain or async) is told about every retry,
    before its wait (a stream also yields it as a ``ModelRetry`` event). ``max_event_bytes`` caps one
    server-sent event of a stream (default 8 MiB): a larger one raises ``ProtocolError`` instead of growing
    without bound. Both models build their client from their own keywords of the same names. Each option's
    type is checked here, so a wrong one (``timeout=30``, ``retry=3``, ``sleep=time.sleep``) fails at
    construction with a ``TypeError`` that says what to pass.

    >>> OpenAIHttpClient(base_url="http://127.0.0.1:8000", api_key="sk-secret")
    OpenAIHttpClient(base_url='http://127.0.0.1:8000/v1', api_key=<set>)
    """

    __slots__ = (
        "_auth_note",
        "_base",
        "_has_key",
        "_json_headers",
        "_max_event_bytes",
        "_on_retry",
        "_owns_transport",
        "_query",
        "_retry",
        "_secrets",
        "_sleep",
        "_stream_headers",
        "_timeout",
        "_transport",
    )

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        transport: HttpTransport | None = None,
        timeout: Timeout | None = None,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        on_retry: OnRetry | None = None,
        max_event_bytes: int | None = None,
    ) -> None:
        check_http_options(
            base_url=base_url,
            api_key=api_key,
            headers=headers,
            transport=transport,
            timeout=timeout,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            retry=retry,
            sleep=sleep,
            on_retry=on_retry,
            max_event_bytes=max_event_bytes,
        )
        endpoint = resolve_endpoint(base_url, api_key, headers)
        try:
            self._base, self._query = normalize_base_url(endpoint.base_url)
        except ValueError as exc:
            if not endpoint.base_from_env:
                raise
            raise ValueError(f"{exc} (it came from the {ENV_BASE_URL} environment variable)") from None
        api_key = endpoint.api_key
        extra = _EMPTY if headers is None else headers
        if endpoint.headers:
            extra = {**endpoint.headers, **extra}
        limits = Timeout() if timeout is None else timeout
        if connect_timeout is not None:
            limits = attrs.evolve(limits, connect=connect_timeout)
        if read_timeout is not None:
            limits = attrs.evolve(limits, read=read_timeout)
        common: dict[str, str] = {"Content-Type": "application/json", "User-Agent": _USER_AGENT}
        self._has_key = bool(api_key)
        if api_key:
            common["Authorization"] = f"Bearer {api_key}"
        # Custom headers come last, so a gateway may replace any default (e.g. its own auth header).
        self._json_headers = {**common, "Accept": "application/json", **extra}
        self._stream_headers = {**common, "Accept": "text/event-stream", **extra}
        self._auth_note = _auth_note(api_key, endpoint.key_from_env, extra)
        self._secrets = known_secrets(api_key, extra, endpoint.base_url)
        self._owns_transport = transport is None
        self._transport: HttpTransport = AiohttpTransport() if transport is None else transport
        self._timeout = limits
        self._retry = RetryPolicy() if retry is None else retry
        self._sleep: Callable[[float], Awaitable[None]] = anyio.sleep if sleep is None else sleep
        self._on_retry: OnRetry | None = on_retry
        self._max_event_bytes = DEFAULT_MAX_EVENT_BYTES if max_event_bytes is None else max_event_bytes

    def __repr__(self) -> str:
        key = "<set>" if self._has_key else "None"
        return f"OpenAIHttpClient(base_url={redact_url(self._base)!r}, api_key={key})"

    @property
    def has_api_key(self) -> bool:
        """Whether an API key is sent (the key itself is never exposed)."""
        return self._has_key

    @property
    def base_url(self) -> str:
        """The normalized base URL (no trailing slash, no query)."""
        return self._base

    @property
    def timeout(self) -> Timeout:
        """The time limits applied to every call."""
        return self._timeout

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy applied to every call."""
        return self._retry

    @property
    def max_event_bytes(self) -> int:
        """The largest server-sent event a stream accepts."""
        return self._max_event_bytes

    def url(self, path: str) -> str:
        """The full URL of an endpoint path such as ``"/chat/completions"``."""
        return join_url(self._base, self._query, path)

    async def aclose(self) -> None:
        """Close the pooled connections (when this client created its transport)."""
        if self._owns_transport:
            await self._transport.aclose()

    # --- non-streaming -----------------------------------------------------------------------

    @overload
    async def post_json(
        self,
        path: str,
        body: Mapping[str, Any],
        *,
        on_retry: OnRetry | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any: ...

    @overload
    async def post_json(
        self,
        path: str,
        body: Mapping[str, Any],
        *,
        decode: Callable[[Any], T],
        on_retry: OnRetry | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> T: ...

    async def post_json(
        self,
        path: str,
        body: Mapping[str, Any],
        *,
        decode: Callable[[Any], Any] | None = None,
        on_retry: OnRetry | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """POST ``body`` as JSON and return the decoded JSON answer, retrying per the policy.

        ``headers`` are sent with this call only, after the client's own (they may replace one).

        ``decode`` (optional) turns the JSON answer into the caller's result inside the retry loop: a
        retryable ``ModelError`` it raises (a 200 body that reports a ``server_error``…) is retried like
        an HTTP failure, and its result is returned.

        Every retry goes to ``on_retry`` (the client's and this call's) and to the context's
        ``retry_listener`` (an agent run's bus).

        Raises the typed ``ModelError`` for the status (``error_from_status``), ``ModelConnectionError``,
        ``ModelTimeoutError``, ``ProtocolError`` when a 2xx body is not JSON, or what ``decode`` raises.
        """
        url = self.url(path)
        data = _encode(body)
        sent_headers = self._json_headers if not headers else {**self._json_headers, **headers}
        deadline = self._deadline()
        attempt = 1
        while True:
            # One attempt, inline (no coroutine of its own: it is on the path of every call).
            response: HttpResponse | None = None
            try:
                response = await self._send(url, data, sent_headers, deadline, stream=False)
                try:
                    raw = await response.read()  # already in memory: the transport read it within its timeout
                finally:
                    await response.aclose()
                status = response.status
                if not 200 <= status < 300:
                    raise self._status_error(status, raw, response, url)
                try:
                    payload = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    # Named with its content type: an HTML page (a proxy's, a portal's) is the usual cause.
                    kind = response.headers.get("Content-Type") or "no Content-Type"
                    text = raw.decode("utf-8", "replace")
                    raise ProtocolError(
                        f"the response from {redact_url(url)} is not valid JSON ({exc}); it is {kind}: "
                        f"{body_excerpt(text)!r}",
                        status=status,
                        body=text,
                    ) from exc
                return payload if decode is None else decode(payload)
            except ModelError as error:
                if response is not None and not error.headers:
                    error.headers = response.headers  # an error the 200 body reported: its request id
                secrets = with_call_secrets(self._secrets, headers)
                if secrets:
                    mask_secrets(error, secrets)
                retry = self._plan_retry(error, attempt, deadline, url)
                if retry is None:
                    raise
            for callback in (self._on_retry, on_retry):
                if callback is not None:
                    await _notify(callback, retry)
            listener = retry_listener.get()
            if listener is not None:
                await listener(retry)
            await self._wait(retry.delay)
            attempt += 1

    # --- streaming ---------------------------------------------------------------------------

    async def stream(
        self,
        path: str,
        body: Mapping[str, Any],
        decoder: Callable[[], StreamDecoder],
        headers: Mapping[str, str] | None = None,
    ) -> AsyncGenerator[ModelEvent, None]:
        """POST ``body`` and yield the model events that ``decoder`` makes of the SSE stream (``headers``:
        sent with this call only, after the client's own).

        A failed attempt is retried (announced by a ``ModelRetry`` event, and to the client's ``on_retry``)
        only while no event has been yielded yet; afterwards the error propagates. A body that fails once
        the stream began (connection lost, read or total timeout) carries what had arrived as its
        ``partial``, as a cut-off stream does (the decoder's); so does an error the server reports in the
        stream after part of the answer. Closing the generator closes the connection, except after the
        completion event: the end marker came, and the connection goes back to the pool once the body's end
        arrives (closed if it does not come within half a second), without keeping the caller waiting.

        The transport's read limit runs until the answer begins: the first event that is part of it (a
        usage report, which vLLM sends with every chunk when asked, is not). Until then it runs from the
        server's last progress: a Responses event about the output that carries no model event (a hosted
        tool's item or its status: ``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
        ``mcp_call``…) restarts it. Nothing else does: not keep-alive comments (``: ping``, OpenRouter's
        ``: OPENROUTER PROCESSING``), a usage report, a Chat chunk with nothing in it, nor the Responses
        envelope (``response.created``, ``.in_progress``, ``.queued``), which says the response exists, not
        that it moves. The idle limit is not taken on at progress: a model may think for minutes between
        hosted tools and its first token.

        A body that is one JSON object instead of events (labelled JSON, or opening with ``{`` under any
        label) is the server's typed error when it reports one, else a ``ProtocolError`` showing it; a page
        (labelled HTML or XML, or opening with ``<`` under any label) is a ``ProtocolError`` showing its
        start: never a cut-off stream, which would be retried. Events larger than ``max_event_bytes`` fail
        likewise.
        """
        url = self.url(path)
        data = _encode(body)
        sent_headers = self._stream_headers if not headers else {**self._stream_headers, **headers}
        deadline = self._deadline()
        attempt = 1
        while True:
            emitted = False  # an event was yielded: no retry any more
            answering = False  # an event of the answer was: the transport's idle limit applies
            response: HttpResponse | None = None
            decode: StreamDecoder | None = None
            try:
                response = await self._send(url, data, sent_headers, deadline, stream=True)
                await self._check_stream_response(response, deadline, url)
                decode = decoder()
                feed = decode.feed
                sse = SseDecoder(self._max_event_bytes)
                next_chunk = response.next_chunk
                chunk = await self._read_chunk(response, deadline, url)
                start = chunk[:_SNIFFED].lstrip()[:1]
                if start == b"{" or start == b"<":
                    # One JSON object or a page, not events (no line of an event stream starts so): a
                    # server's error without SSE framing, a proxy's page. Read as SSE it would look like a
                    # cut-off stream, and be retried.
                    raise await self._not_events(chunk, response, deadline, url)
                while True:
                    for sse_event in sse.feed(chunk) if chunk else sse.close():
                        events = feed(sse_event)
                        if events:
                            if not answering:
                                emitted = True
                                if _answer_in(events):
                                    # The answer began: the idle limit takes over from the read limit.
                                    answering = True
                                    began = getattr(response, "answer_began", None)
                                    if began is not None:
                                        began()
                            for event in events:
                                yield event
                        elif not answering and _progress(sse_event):
                            # The server's work before the answer (a hosted tool's item): the read
                            # deadline runs from here.
                            progressed = getattr(response, "progressed", None)
                            if progressed is not None:
                                progressed()
                        if decode.done:
                            break
                    if not chunk or decode.done:
                        break
                    if deadline is None:
                        chunk = await next_chunk()
                    else:
                        chunk = await self._read_chunk(response, deadline, url)
                last = decode.finish()
                emitted = True
                # The answer first. The body has not ended yet when the end marker came in ``chunk``: the
                # transport pools the connection once its end arrives, without the caller waiting for it
                # — also when the consumer closes the stream during these last events (the agents stop at
                # the completion). A transport that cannot closes it (below).
                try:
                    for event in last:
                        yield event
                finally:
                    if chunk:
                        release_at_end = getattr(response, "release_at_end", None)
                        if release_at_end is not None:
                            release_at_end()
                            response = None  # released: not to be closed below
                return
            except ModelError as error:
                if response is not None and not error.headers:
                    # A failure after the headers (a cut body, an in-band error): the response's headers
                    # go with it, for its ``request_id`` (what a provider's support asks for).
                    error.headers = response.headers
                secrets = with_call_secrets(self._secrets, headers)
                if secrets:
                    mask_secrets(error, secrets)
                retry = None if emitted else self._plan_retry(error, attempt, deadline, url)
                if retry is None:
                    # What had arrived goes with the error: a dropped body's, or an in-band error's that
                    # came after some of the answer (a provider failing mid-answer, e.g. a token limit).
                    if (
                        decode is not None
                        and error.partial is None
                        and (emitted or isinstance(error, _BODY_FAILURES))
                    ):
                        error.partial = partial_of(decode)
                    raise
            finally:
                if response is not None:
                    await response.aclose()
            if self._on_retry is not None:
                await _notify(self._on_retry, retry)
            yield retry
            await self._wait(retry.delay)
            attempt += 1

    async def _check_stream_response(self, response: HttpResponse, deadline: float | None, url: str) -> None:
        status = response.status
        if not 200 <= status < 300:
            raw = await self._read_start(response, deadline, url, MAX_ERROR_BODY_BYTES)
            raise self._status_error(status, raw, response, url)
        content_type = response.headers.get("Content-Type", "")
        if "json" in content_type:
            # Some servers answer a stream request with one JSON object: an error, or no stream at all.
            raw = await self._read_start(response, deadline, url, MAX_ERROR_BODY_BYTES)
            raise not_a_stream(raw, response, url, repr(content_type))
        if content_type.partition(";")[0].strip().lower() in _NOT_A_STREAM:
            raise _a_page(await self._read_start(response, deadline, url), response, url)

    async def _not_events(
        self, chunk: bytes, response: HttpResponse, deadline: float | None, url: str
    ) -> ModelError:
        """The error of a stream whose first ``chunk`` starts like a JSON object or a page, not events."""
        if chunk.lstrip()[:1] == b"{":
            rest = await self._read_start(response, deadline, url, MAX_ERROR_BODY_BYTES - len(chunk))
            return not_a_stream(chunk + rest, response, url, "a JSON body")
        rest = await self._read_start(response, deadline, url, _EXCERPT_BYTES - len(chunk))
        return _a_page((chunk + rest)[:_EXCERPT_BYTES], response, url)

    async def _read_start(
        self, response: HttpResponse, deadline: float | None, url: str, limit: int = _EXCERPT_BYTES
    ) -> bytes:
        """At most ``limit`` bytes of what is left of the body: enough to show what a page is, whatever
        its size."""
        chunks: list[bytes] = []
        size = 0
        while size < limit:
            chunk = await self._read_chunk(response, deadline, url)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)[: max(0, limit)]

    # --- shared mechanics --------------------------------------------------------------------

    def _deadline(self) -> float | None:
        total = self._timeout.total
        return None if total is None else anyio.current_time() + total

    def _total_timeout(self, url: str) -> ModelTimeoutError:
        total = self._timeout.total
        return ModelTimeoutError(
            f"the call to {redact_url(url)} exceeded its total timeout of {total} s (Timeout(total=...))",
            limit="total",
        )

    async def _within(self, call: Callable[[], Awaitable[T]], deadline: float | None, url: str) -> T:
        """``await call()`` under the total deadline (the transport enforces connect and read itself)."""
        if deadline is None:
            return await call()
        try:
            with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                return await call()
        except TimeoutError:
            raise self._total_timeout(url) from None

    def _send(
        self, url: str, data: bytes, headers: Mapping[str, str], deadline: float | None, *, stream: bool
    ) -> Awaitable[HttpResponse]:
        if guard.on:
            refused = guard.refused(url)
            if refused is not None:
                raise refused

        def send() -> Awaitable[HttpResponse]:
            return self._transport.send(
                "POST", url, headers=headers, body=data, timeout=self._timeout, stream=stream
            )

        # Without a total deadline the transport's own awaitable, with no coroutine in between.
        return send() if deadline is None else self._within(send, deadline, url)

    async def _read_chunk(self, response: HttpResponse, deadline: float | None, url: str) -> bytes:
        return await self._within(response.next_chunk, deadline, url)

    def _status_error(self, status: int, raw: bytes, response: HttpResponse, url: str) -> ModelError:
        """The typed error of a non-2xx answer; a 401/403 also says what was (not) sent as the key."""
        error = error_from_status(status, raw, response.headers, url=url)
        note = self._auth_note
        if note is not None and isinstance(error, AuthenticationError) and status in (401, 403):
            extend_message(error, note)
        return error

    async def _wait(self, delay: float) -> None:
        """The back-off before a retry, through ``sleep`` (which must be async: checked as it is used,
        since a plain function returning an awaitable is fine and cannot be told apart before)."""
        pending = self._sleep(delay)
        if not inspect.isawaitable(pending):
            raise TypeError(
                f"sleep= must be an async function of seconds, such as anyio.sleep, but {_name(self._sleep)}"
                f"({delay!r}) returned {type(pending).__name__}, not an awaitable (a blocking sleep such as "
                "time.sleep stalls every task of the event loop)"
            )
        await pending

    def _plan_retry(
        self, error: ModelError, attempt: int, deadline: float | None, url: str
    ) -> ModelRetry | None:
        """The retry to make after ``attempt`` failed, or ``None`` to give up and raise ``error`` (whose
        message then says how many attempts were made, and why there is no other)."""
        policy = self._retry
        if not policy.is_retryable(error):
            if isinstance(error, ModelTimeoutError) and error.limit == "read":
                extend_message(
                    error,
                    f"{_attempts(attempt)}: a read timeout is not retried, since the server got the request "
                    "and may still be generating (and billing) it; RetryPolicy(retry_read_timeouts=True) "
                    "retries it",
                )
            elif attempt > 1:
                extend_message(error, f"after {_attempts(attempt)}")
            return None
        if attempt > policy.max_retries:
            if attempt > 1:
                extend_message(
                    error,
                    f"gave up after {_attempts(attempt)} (retry=RetryPolicy(max_retries="
                    f"{policy.max_retries}) sets how many)",
                )
            return None
        delay = policy.delay(attempt, error)
        if not math.isfinite(delay) or (deadline is not None and anyio.current_time() + delay >= deadline):
            if not (isinstance(error, ModelTimeoutError) and error.limit == "total"):  # that one says so
                extend_message(
                    error,
                    f"gave up after {_attempts(attempt)}: the total timeout (Timeout(total=...)) leaves no "
                    f"time for the next one, {delay:g} s from now",
                )
            return None
        log.info(
            "retrying POST %s in %.2f s (attempt %d of %d) after: %s",
            redact_url(url),
            delay,
            attempt + 1,
            policy.max_attempts,
            error.message,
        )
        return ModelRetry(
            attempt=attempt + 1, max_attempts=policy.max_attempts, delay=delay, reason=error.message
        )


def _answer_in(events: list[ModelEvent]) -> bool:
    """Whether ``events`` carry part of the answer: anything but a usage report (vLLM's continuous usage
    stats report it with every chunk, the first ones included, while the model still thinks)."""
    return any(type(event) is not UsageReported for event in events)


_ENVELOPES = frozenset({"response.created", "response.in_progress", "response.queued"})
"""The Responses events that say the response exists, not that its output moves: no progress."""


def _progress(event: SseEvent) -> bool:
    """Whether ``event``, which gave no model event, shows the server's progress before the answer: a
    Responses event about the output (a hosted tool's item or status), not its envelope (``_ENVELOPES``).
    Called only before the answer began, for events that gave nothing (a few per hosted tool)."""
    kind = event.event
    if kind == "message":  # no ``event:`` line: the type is in the data
        try:
            payload = orjson.loads(event.data)
        except orjson.JSONDecodeError:
            return False  # ``[DONE]``, or something the decoder already judged
        named = payload.get("type") if type(payload) is dict else None
        if type(named) is not str:
            return False  # a Chat chunk with nothing in it (a role, an empty delta, a filter report)
        kind = named
    return kind.startswith("response.") and kind not in _ENVELOPES


def _a_page(start: bytes, response: HttpResponse, url: str) -> ProtocolError:
    """The error of a stream answered with a page (a proxy's, a gateway's, a login page): its start shown."""
    text = start.decode("utf-8", "replace")
    content_type = response.headers.get("Content-Type")
    page = f"a {content_type!r} page" if content_type else "a page with no Content-Type"
    return ProtocolError(
        f"expected an event stream from {redact_url(url)} but got {page} (a proxy, gateway or login page "
        f"answering in the server's place?): {body_excerpt(text)!r}",
        status=response.status,
        body=text,
    )


def _encode(body: Mapping[str, Any]) -> bytes:
    """``body`` as JSON. Integer keys (``logit_bias`` token ids, as the openai SDK takes them) become strings;
    orjson needs an option for that which slows every body down, so only a body that has some pays for it.
    """
    try:
        return orjson.dumps(body)
    except TypeError:
        return orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS)


def _attempts(count: int) -> str:
    return f"{count} attempt" if count == 1 else f"{count} attempts"


def _name(fn: object) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _auth_note(api_key: str | None, key_from_env: bool, headers: Mapping[str, str]) -> str | None:
    """What a 401/403 message adds about the key: where the one sent came from, or that none was sent."""
    if api_key:
        return f"the API key sent came from the {ENV_API_KEY} environment variable" if key_from_env else None
    sent = {name.lower() for name in headers}
    if "authorization" in sent or any(word in name for name in sent for word in CREDENTIAL_WORDS):
        return None  # a credential of the gateway's own kind went (Azure's api-key…)
    return (
        "no API key was sent: pass api_key=... (or custom_headers= for a gateway's own header, such as "
        f"Azure's api-key); {ENV_API_KEY} is only read for OpenAI's own base URL or one given by "
        f"{ENV_BASE_URL}"
    )


async def _notify(callback: OnRetry, retry: ModelRetry) -> None:
    """Tell ``callback`` about ``retry``, awaiting what an async one returns; a failure is logged, never
    raised: an observer must not break the call it observes."""
    try:
        result = callback(retry)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.error(
            "on_retry callback %s failed on the retry (attempt %d of %d); the call goes on",
            _name(callback),
            retry.attempt,
            retry.max_attempts,
            exc_info=True,
        )
