"""A raw HTTP/1.1 server on 127.0.0.1 for the transport tests: it does what a test tells it per request,
down to the connection (close it unanswered, answer half a status line), which a real web framework won't.

It runs in the test's event loop (``async with RawHttpServer(handler)``) or, for tests whose client loops
come and go (``asyncio.run`` per call, threads), in a thread with a loop of its own (``in_thread``).
It records every request with the connection it came on, and counts the connections still open;
``wait_until_all_closed`` waits on a condition the server notifies, nothing sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from types import TracebackType

import attrs
import orjson

OK = {
    "id": "c1",
    "object": "chat.completion",
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


@attrs.frozen
class RawRequest:
    """One request: ``connection`` numbers the connections from 1, ``index`` the requests on one from 1."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    connection: int
    index: int

    @property
    def stream(self) -> bool:
        return bool(self.body) and orjson.loads(self.body).get("stream") is True


@attrs.frozen
class RawReply:
    """Bytes to write (``b""``: none), then keep the connection open for the next request or close it."""

    data: bytes
    close: bool = False


Handler = Callable[[RawRequest], Awaitable[RawReply]]


def http_response(status: int, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def json_answer(payload: object = OK, status: int = 200, headers: dict[str, str] | None = None) -> bytes:
    return http_response(
        status, orjson.dumps(payload), {"Content-Type": "application/json", **(headers or {})}
    )


def sse_answer(chunks: Sequence[object]) -> bytes:
    """A Chat stream: each chunk as a ``data:`` event, then ``[DONE]``."""
    body = b"".join(b"data: " + orjson.dumps(chunk) + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"
    return http_response(200, body, {"Content-Type": "text/event-stream"})


CHAT_STREAM = sse_answer(
    [
        {"id": "s", "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": None}]},
        {"id": "s", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
)


async def answer_ok(request: RawRequest) -> RawReply:
    """A Chat answer "ok", in the request's mode."""
    return RawReply(CHAT_STREAM if request.stream else json_answer())


class RawHttpServer:
    """See the module notes. ``handler`` answers each request; ``tls`` serves HTTPS with that context."""

    def __init__(self, handler: Handler = answer_ok, *, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.tls = tls
        self.requests: list[RawRequest] = []
        self.connections = 0
        self.port = 0
        self._open = 0
        self._changed = threading.Condition()  # the open count changed (it may be read from another thread)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    async def __aenter__(self) -> RawHttpServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 5)

    def wait_until_all_closed(self, timeout: float) -> bool:
        """Whether every connection the server accepted got closed (by the client) within ``timeout``."""
        with self._changed:
            return self._changed.wait_for(lambda: self._open == 0, timeout)

    def _count(self, change: int) -> None:
        with self._changed:
            self._open += change
            self._changed.notify_all()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        connection, index = self.connections, 0
        self._writers.add(writer)
        self._count(+1)
        try:
            while (request := await _read_request(reader, connection, index + 1)) is not None:
                index += 1
                self.requests.append(request)
                reply = await self.handler(request)
                if reply.data:
                    writer.write(reply.data)
                    await writer.drain()
                if reply.close:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError, ssl.SSLError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()  # its socket closed too, before it is counted closed
            self._count(-1)


async def _read_request(reader: asyncio.StreamReader, connection: int, index: int) -> RawRequest | None:
    line = await reader.readline()
    if not line:
        return None  # the client closed the connection
    method, target, _ = line.decode().split(" ", 2)
    headers: dict[str, str] = {}
    while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = header.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return RawRequest(method, target, headers, body, connection, index)


@contextlib.contextmanager
def in_thread(server: RawHttpServer) -> Iterator[RawHttpServer]:
    """Run ``server`` in a thread with its own event loop, for as long as the ``with`` block lasts."""
    loop = asyncio.new_event_loop()
    started = threading.Event()
    stop: asyncio.Event | None = None

    async def serve() -> None:
        nonlocal stop
        stop = asyncio.Event()
        async with server:
            started.set()
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    try:
        assert started.wait(10), "the server did not start"
        yield server
    finally:
        assert stop is not None
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
