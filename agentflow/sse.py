"""Server-Sent Events for web services: a run's events as the bytes of a ``text/event-stream`` body.

Framework-neutral: ``sse_stream(run)`` is an async iterator of ``bytes`` frames that aiohttp's
``StreamResponse.write``, an ASGI ``send`` or any other server can forward as they come. Each event becomes
one frame::

    event: text_delta
    id: 7
    data: {"type":"text_delta","run_id":"run_…","step":0,"seq":7,"text":"Hel"}

``data`` is ``exact_json.dumps(event.to_dict())`` (orjson; integers beyond 64 bits stay exact) on one line,
``id`` the event's ``seq`` and ``event`` its ``type``, so a browser's ``EventSource`` can listen by type. This
module encodes and forwards only: it starts no run, imports no web framework and never swallows an event.
Cancelling the run when the client goes away is the server's job (see the "Embedding in web services" page of
the docs).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import TypeAlias

import anyio
import orjson
from anyio.streams.memory import MemoryObjectSendStream

from .exact_json import dumps as exact_dumps
from .json_forms import safe_repr
from .model.events import Event

__all__ = ["HEARTBEAT", "SSE_HEADERS", "encode_comment", "encode_sse", "sse_stream"]

HEARTBEAT = b": keep-alive\n\n"
"""The comment frame ``sse_stream`` sends while a run is quiet (clients ignore comments)."""

SSE_HEADERS: dict[str, str] = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    # nginx buffers proxied responses by default, which would hold the stream back.
    "X-Accel-Buffering": "no",
}
"""Response headers for an event stream."""


def encode_sse(event: Event) -> bytes:
    """One SSE frame for ``event``: ``event: <type>``, ``id: <seq>``, ``data: <JSON of to_dict()>``.

    >>> from agentflow.model.events import TextDelta
    >>> print(encode_sse(TextDelta("Hi", run_id="run_1", seq=3)).decode(), end="")
    event: text_delta
    id: 3
    data: {"type":"text_delta","run_id":"run_1","step":0,"seq":3,"text":"Hi"}
    <BLANKLINE>

    Integers beyond 64 bits (a tool's result may hold one) keep every digit. An event holding what JSON
    cannot carry is still written, so the stream goes on to its terminal event: text with a lone surrogate
    (a file name read with ``os.fsdecode``) with the surrogate escaped, any other such value as its
    ``repr``, and an event whose ``to_dict()`` fails as its type and stamps with an ``error``.
    """
    try:
        data = exact_dumps(event.to_dict())
    except (
        Exception
    ) as exc:  # orjson.JSONEncodeError is a TypeError; an overridden to_dict() may raise anything
        data = _written_anyway(event, exc)
    # orjson never writes a raw line break, so the JSON is always exactly one ``data:`` line.
    return b"event: %s\nid: %d\ndata: %s\n\n" % (event.type.encode(), event.seq, data)


def _written_anyway(event: Event, error: BaseException) -> bytes:
    """The JSON of an event ``encode_sse`` could not write as it is (see there)."""
    try:
        return exact_dumps(_scrubbed(event.to_dict()))
    except Exception as exc:
        error = exc
    return orjson.dumps(
        {
            "type": event.type,
            "run_id": event.run_id,
            "step": event.step,
            "seq": event.seq,
            "error": f"this {type(event).__name__} could not be written as JSON: {type(error).__name__}",
        }
    )


def _scrubbed(value: object, depth: int = 0) -> object:
    """``value`` with what JSON cannot carry replaced: lone surrogates escaped, unknown objects as repr."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if value is None or isinstance(value, bool | int | float) or depth > 64:
        return value if depth <= 64 else safe_repr(value)
    if isinstance(value, dict):
        return {_scrubbed(str(k), depth + 1): _scrubbed(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrubbed(v, depth + 1) for v in value]
    return _scrubbed(safe_repr(value), depth + 1)


def encode_comment(text: str = "") -> bytes:
    """A comment frame (ignored by clients; keeps idle connections and proxies alive).

    >>> encode_comment("hello")
    b': hello\\n\\n'
    """
    lines = text.splitlines() or [""]
    return b"".join(b": " + line.encode() + b"\n" if line else b":\n" for line in lines) + b"\n"


async def sse_stream(
    events: AsyncIterable[Event],
    *,
    heartbeat: float | None = None,
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
) -> AsyncIterator[bytes]:
    """The frames of ``events`` (e.g. an ``AgentRun``), in order, ending when ``events`` ends.

    ``heartbeat`` (seconds) sends ``HEARTBEAT`` at the end of every period of that length in which no frame
    went out, so proxies do not close a connection while a tool runs for minutes. The periods run on a fixed
    clock, so a quiet connection hears something at least every ``2 * heartbeat`` seconds: choose at most
    half the idle timeout of the proxies in between. With a heartbeat the events are read by a task of
    the stream's own task group: close the stream in the task that iterates it (run it to the end, or wrap
    it in ``contextlib.aclosing``). An exception raised by ``events`` is raised here, unchanged. ``sleep``
    is injectable for tests.
    """
    if heartbeat is None:
        async for event in events:
            yield encode_sse(event)
        return
    if heartbeat <= 0:
        raise ValueError(f"heartbeat must be a positive number of seconds or None, got {heartbeat!r}")
    # Buffer 0: an item is handed over only when the consumer takes it, so backpressure reaches the run.
    send, receive = anyio.create_memory_object_stream[_Item](0)
    quiet = _Quiet()
    error: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump, events, send.clone())
        tg.start_soon(_tick, send, quiet, heartbeat, sleep)
        try:
            async with receive:
                async for item in receive:
                    if item is None:
                        break
                    if isinstance(item, Exception):
                        error = item
                        break
                    if isinstance(item, bytes):
                        yield item
                    else:
                        frame = encode_sse(item)  # never raises: an event is always written
                        quiet.sent = True
                        yield frame
        except GeneratorExit:
            # Closed early (aclose): stop the helpers and end quietly. Raised inside the task group it
            # would come out wrapped in an exception group.
            pass
        finally:
            tg.cancel_scope.cancel()
    if error is not None:
        raise error


_Item: TypeAlias = "Event | bytes | Exception | None"
"""What the heartbeat helpers hand over: an event, the heartbeat, the source's error or ``None`` (end)."""


class _Quiet:
    """Whether an event went out since the last heartbeat tick."""

    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent = False


async def _pump(events: AsyncIterable[Event], send: MemoryObjectSendStream[_Item]) -> None:
    """Read the events in this task (the consumer may wait for a heartbeat meanwhile) and hand them over."""
    with send:
        try:
            try:
                async for event in events:
                    await send.send(event)
            except Exception as exc:
                # Handed over so the consumer raises it as is, not wrapped in an ExceptionGroup.
                await send.send(exc)
                return
            await send.send(None)
        except anyio.BrokenResourceError:
            pass  # the consumer stopped reading


async def _tick(
    send: MemoryObjectSendStream[_Item],
    quiet: _Quiet,
    interval: float,
    sleep: Callable[[float], Awaitable[None]],
) -> None:
    """Every ``interval``: a heartbeat, unless an event went out since the last tick."""
    with send:
        try:
            while True:
                await sleep(interval)
                if quiet.sent:
                    quiet.sent = False
                else:
                    await send.send(HEARTBEAT)
        except anyio.BrokenResourceError:
            pass
