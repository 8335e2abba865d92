"""``ScriptedServer``: a local OpenAI-compatible HTTP server that answers from a script.

It serves ``POST /v1/chat/completions`` and ``POST /v1/responses`` (also without ``/v1``) on 127.0.0.1
and a free port. Each request is recorded, takes the next turn of the script (see ``script``), and is
answered in the request's protocol and mode (JSON, or SSE when ``"stream": true``) by the pure encoders
in ``chat_wire`` / ``responses_wire``. Faults are played here, since they are about the connection.

This module owns the I/O only; it knows nothing about agentflow's clients and must never import them.
Stalls wait on an event that ``stop()`` releases, and a ``Hold`` on its own event or that one: nothing here
sleeps. A client that leaves before or while
it is answered (the end of every cancellation test) is not a server error: its answer stops quietly.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Literal, Protocol

import anyio
import attrs
import orjson
from aiohttp import web

from . import chat_wire, responses_wire
from .context import ReplyContext
from .script import (
    Fault,
    FaultKind,
    Hold,
    Reply,
    Responder,
    Turn,
    check_turn,
    openai_error,
    pretty_json,
)

__all__ = ["RecordedRequest", "ScriptedServer"]

_log = logging.getLogger("agentflow.testing")

Api = Literal["chat", "responses"]

_ROUTES: dict[str, Api] = {
    "/v1/chat/completions": "chat",
    "/chat/completions": "chat",
    "/v1/responses": "responses",
    "/responses": "responses",
}


class _WireCodec(Protocol):
    """What ``chat_wire`` and ``responses_wire`` both provide."""

    MALFORMED_FRAME: bytes
    MALFORMED_BODY: bytes

    def encode_json(self, reply: Reply, ctx: ReplyContext) -> bytes: ...

    def encode_stream(self, reply: Reply, ctx: ReplyContext) -> list[bytes]: ...


_CODECS: dict[Api, _WireCodec] = {"chat": chat_wire, "responses": responses_wire}
_BATCH_BYTES = 64 * 1024  # frames are written in batches of about this size
_JSON = "application/json"
_SSE = "text/event-stream; charset=utf-8"


@attrs.frozen
class RecordedRequest:
    """One request the server received: ``path``, lower-cased ``headers``, parsed JSON ``body``.

    ``body`` is ``None`` when the body was empty or not JSON; ``raw_body`` keeps the bytes.
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    raw_body: bytes = attrs.field(repr=False)

    @property
    def api(self) -> Api | None:
        """``"chat"`` or ``"responses"`` by path, ``None`` for any other path."""
        return _ROUTES.get(self.path.rstrip("/"))

    @property
    def stream(self) -> bool:
        """Whether the request asked for a stream (``"stream": true``)."""
        return isinstance(self.body, Mapping) and self.body.get("stream") is True


class ScriptedServer:
    """A scripted OpenAI-compatible server for tests, demos and benchmarks.

    ``script`` is a sequence of turns (each a ``Reply``, a ``Fault``, a ``Hold``, or a callable taking the
    parsed request body and returning one of them, possibly async), or one callable that answers every
    request. ``default`` answers once the script is used up; without it an exhausted script answers
    HTTP 500 with an error body that says so. Server-side problems (exhausted script, a callable that
    raised, a bad fault position, an unknown path) are also listed in ``errors``; their answers carry
    ``x-should-retry: false``, so a client fails at once instead of retrying into the next turn.

    >>> import asyncio
    >>> async def example() -> str:
    ...     async with ScriptedServer([Reply(text="Hello world", chunk_size=5)]) as server:
    ...         return server.base_url
    >>> asyncio.run(example()).startswith("http://127.0.0.1:")
    True
    """

    def __init__(
        self,
        script: Iterable[Turn] | Responder = (),
        *,
        default: Turn | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(script, Reply | Fault | Hold):
            raise TypeError("pass the script as a list of turns: ScriptedServer([turn, ...])")
        self._turns: list[Turn] = []
        if callable(script):
            if default is not None:
                raise TypeError("give either one responder callable or a script with a default, not both")
            default = script
        else:
            self.add(*script)
        if default is not None:
            check_turn(default, "default")
        self._default = default
        self._next = 0
        self._host = host
        self._requested_port = port
        self._clock = clock
        self._requests: list[RecordedRequest] = []
        self._errors: list[str] = []
        self._runner: web.ServerRunner | None = None
        self._stopping: anyio.Event | None = None
        self._port: int | None = None

    # --- script -----------------------------------------------------------------------------

    def add(self, *turns: Turn) -> None:
        """Append turns to the script (allowed while the server runs)."""
        for turn in turns:
            check_turn(turn, f"turn {len(self._turns)}")
            self._turns.append(turn)

    @property
    def remaining(self) -> int:
        """How many scripted turns have not been used yet (the default turn not counted)."""
        return len(self._turns) - self._next

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        """Every request received so far, in arrival order."""
        return tuple(self._requests)

    @property
    def errors(self) -> tuple[str, ...]:
        """What went wrong on the server side (each also sent as an error response)."""
        return tuple(self._errors)

    # --- lifecycle ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (only while running)."""
        if self._port is None:
            raise RuntimeError("the scripted server is not running: use `async with server:` or start()")
        return self._port

    @property
    def url(self) -> str:
        """The server root, e.g. ``http://127.0.0.1:8123`` (an IPv6 host in brackets: ``http://[::1]:8123``)."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, e.g. ``http://127.0.0.1:8123/v1``."""
        return f"{self.url}/v1"

    async def start(self) -> None:
        """Bind and start serving."""
        if self._runner is not None:
            raise RuntimeError("the scripted server is already running")
        self._stopping = anyio.Event()
        runner = web.ServerRunner(web.Server(self._handle, access_log=None), shutdown_timeout=5.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host, self._requested_port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        """Release stalled responses (their connections are dropped) and shut down."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        assert self._stopping is not None
        self._stopping.set()
        try:
            await runner.cleanup()
        finally:
            self._port = None

    async def __aenter__(self) -> ScriptedServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # --- request handling ---------------------------------------------------------------------

    def _take_turn(self) -> Turn | None:
        if self._next < len(self._turns):
            turn = self._turns[self._next]
            self._next += 1
            return turn
        return self._default

    def _problem(self, status: int, message: str, error_type: str = "scripted_server_error") -> web.Response:
        self._errors.append(message)
        # Final: a client that retried a 500 would take the next turn, and a broken script could pass.
        return web.Response(
            status=status,
            body=pretty_json(openai_error(message, error_type)),
            content_type=_JSON,
            headers={"x-should-retry": "false"},
        )

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        try:
            return await self._serve(request)
        except ConnectionError:
            transport = request.transport
            if transport is not None and not transport.is_closing():
                raise  # the client is still there: a real failure of this server, for aiohttp to log
            # The client went away before its answer was written: a cancelled call, a closed model, the
            # usual end of a cancellation test. No one is left to answer, and nothing went wrong here.
            _log.debug(
                "scripted server: the client of %s %s left before its answer was written",
                request.method,
                request.path,
            )
            return web.Response()  # aiohttp fails to send it and, for a gone client, says nothing

    async def _serve(self, request: web.BaseRequest) -> web.StreamResponse:
        raw = await request.content.read()  # unlike request.read(), no 1 MiB cap on agent histories
        try:
            body: Any = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
        headers = {name.lower(): value for name, value in request.headers.items()}
        recorded = RecordedRequest(request.method, request.path, headers, body, raw)
        self._requests.append(recorded)
        serial = len(self._requests)
        api = recorded.api
        if api is None:
            message = f"scripted server: no route for {request.method} {request.path} (it serves POST "
            return self._problem(
                404, message + "/v1/chat/completions and /v1/responses)", "invalid_request_error"
            )
        if request.method != "POST":
            return self._problem(405, f"scripted server: {request.path} takes POST, not {request.method}")
        if not isinstance(body, dict):
            message = f"scripted server: the body of request #{serial} is not a JSON object"
            return self._problem(400, message, "invalid_request_error")
        turn = self._take_turn()
        if turn is None:
            used = len(self._turns)
            return self._problem(
                500,
                f"scripted server: script exhausted: all {used} turns were used and there is no default "
                f"turn (request #{serial}, {request.path})",
            )
        if not isinstance(turn, Reply | Fault | Hold):
            try:
                answer = turn(body)
                if inspect.isawaitable(answer):
                    answer = await answer
            except Exception as exc:
                return self._problem(
                    500,
                    f"scripted server: callable turn raised {type(exc).__name__}: {exc} (request #{serial})",
                )
            if not isinstance(answer, Reply | Fault | Hold):
                got = type(answer).__name__
                return self._problem(
                    500, f"scripted server: callable turn returned {got}, not a Reply, a Fault or a Hold"
                )
            turn = answer
        return await self._answer(request, api, body, turn, serial, len(raw))

    async def _answer(
        self,
        request: web.BaseRequest,
        api: Api,
        body: dict[str, Any],
        turn: Reply | Fault | Hold,
        serial: int,
        size: int,
    ) -> web.StreamResponse:
        fault = turn if isinstance(turn, Fault) else None
        hold = turn if isinstance(turn, Hold) else None
        headers = {"x-request-id": f"req_scripted_{serial:06d}"}
        if fault is not None and fault.kind is FaultKind.STATUS:
            headers.update(fault.headers)
            if not any(name.lower() == "content-type" for name in fault.headers):
                headers["Content-Type"] = _JSON
            return web.Response(status=fault.http_status, body=fault.body, headers=headers)
        reply = fault.reply if fault is not None else hold.reply if hold is not None else turn
        assert isinstance(reply, Reply)
        headers.update(reply.headers)
        codec = _CODECS[api]
        ctx = ReplyContext.for_request(
            reply, body, serial=serial, created=int(self._clock()), request_size=size
        )
        if body.get("stream") is not True:
            payload = codec.encode_json(reply, ctx)
            if hold is not None and not await self._released(hold):
                _drop_connection(request)
                return web.Response()
            if fault is None:
                return web.Response(body=payload, headers={**headers, "Content-Type": _JSON})
            return await self._json_fault(request, fault, payload, codec, {**headers, "Content-Type": _JSON})
        frames = codec.encode_stream(reply, ctx)
        headers["Content-Type"] = _SSE
        if hold is not None:
            return await self._stream_held(request, headers, frames, hold, api)
        if fault is None:
            return await self._send(request, headers, frames)
        if fault.after_chunks >= len(frames):
            return self._problem(
                500,
                f"scripted server: Fault.{fault.kind.value}(after_chunks={fault.after_chunks}) but the "
                f"{api} stream of its reply has only {len(frames)} events; use a smaller after_chunks "
                "or a longer reply",
            )
        return await self._stream_fault(request, headers, frames, fault, api, ctx)

    async def _send(
        self, request: web.BaseRequest, headers: dict[str, str], frames: list[bytes]
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers=headers)
        await response.prepare(request)
        await _write_batched(response, frames)
        return response

    async def _stream_fault(
        self,
        request: web.BaseRequest,
        headers: dict[str, str],
        frames: list[bytes],
        fault: Fault,
        api: Api,
        ctx: ReplyContext,
    ) -> web.StreamResponse:
        cut = fault.after_chunks
        kind = fault.kind
        if kind is FaultKind.MALFORMED_CHUNK:
            return await self._send(
                request, headers, [*frames[:cut], _CODECS[api].MALFORMED_FRAME, *frames[cut:]]
            )
        if kind is FaultKind.STREAM_ERROR:
            if api == "chat":
                error_frames = chat_wire.encode_stream_error(fault.error, as_event=fault.as_event)
            else:
                error_frames = responses_wire.encode_stream_error(ctx, fault.error, sequence_number=cut)
            return await self._send(request, headers, [*frames[:cut], *error_frames])
        response = await self._send(request, headers, frames[:cut])
        if kind is FaultKind.STALL:
            await self._wait_for_stop()
            _drop_connection(request)
        elif kind is FaultKind.DISCONNECT:
            _drop_connection(request)
        # TRUNCATE: returning ends the chunked body cleanly.
        return response

    async def _stream_held(
        self, request: web.BaseRequest, headers: dict[str, str], frames: list[bytes], hold: Hold, api: Api
    ) -> web.StreamResponse:
        cut = hold.after_chunks
        if cut >= len(frames):
            return self._problem(
                500,
                f"scripted server: Hold(after_chunks={cut}) but the {api} stream of its reply has only "
                f"{len(frames)} events; use a smaller after_chunks or a longer reply",
            )
        response = await self._send(request, headers, frames[:cut])
        if hold.reached is not None:
            hold.reached.set()
        if not await self._released(hold):
            _drop_connection(request)
            return response
        await _write_batched(response, frames[cut:])
        return response

    async def _released(self, hold: Hold) -> bool:
        """Wait until ``hold.release`` is set or the server stops; whether it was released."""
        assert self._stopping is not None
        stopping = self._stopping

        async def first(event: anyio.Event) -> None:
            await event.wait()
            group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(first, hold.release)
            group.start_soon(first, stopping)
        return hold.release.is_set()

    async def _json_fault(
        self,
        request: web.BaseRequest,
        fault: Fault,
        payload: bytes,
        codec: _WireCodec,
        headers: dict[str, str],
    ) -> web.StreamResponse:
        kind = fault.kind
        if kind is FaultKind.MALFORMED_CHUNK:
            return web.Response(body=codec.MALFORMED_BODY, headers=headers)
        if kind is FaultKind.STREAM_ERROR:
            return web.Response(body=pretty_json({"error": dict(fault.error)}), headers=headers)
        response = web.StreamResponse(headers=headers)
        await response.prepare(request)
        if kind is FaultKind.STALL:
            await self._wait_for_stop()
            _drop_connection(request)
            return response
        await _write_batched(response, [payload[: len(payload) // 2]])
        if kind is FaultKind.DISCONNECT:
            _drop_connection(request)
        return response

    async def _wait_for_stop(self) -> None:
        assert self._stopping is not None
        await self._stopping.wait()


async def _write_batched(response: web.StreamResponse, frames: list[bytes]) -> None:
    """Write frames in batches of about ``_BATCH_BYTES``; stop quietly if the client went away."""
    batch: list[bytes] = []
    size = 0
    try:
        for frame in frames:
            batch.append(frame)
            size += len(frame)
            if size >= _BATCH_BYTES:
                await response.write(b"".join(batch))
                batch.clear()
                size = 0
        if batch:
            await response.write(b"".join(batch))
    except ConnectionError:
        pass  # the client closed the connection: there is no one left to answer


def _drop_connection(request: web.BaseRequest) -> None:
    """Close the TCP connection without ending the body (no final chunk): a mid-stream disconnect."""
    transport = request.transport
    if transport is not None:
        transport.close()
