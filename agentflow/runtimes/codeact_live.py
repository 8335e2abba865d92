"""A code step's live output: what the executor streams while the code runs becomes ``CodeOutput`` events.

The executor must never wait for the run's subscribers: the bus's default policy is backpressure (a full
subscriber buffer makes ``publish`` wait), and a sandbox held up by a slow UI would stop reading its child,
whose writes would then block, so the code's own time would run out waiting for a browser. So the two are
decoupled. ``LiveOutput.take`` is the executor's ``on_output`` listener: a plain function that appends to a
buffer and returns. A task of the step (``stream_step``) lets output gather for ``INTERVAL`` seconds from
its first piece, then publishes it, so a burst of small writes travels as one event; it is the only one that
waits for subscribers. What a step streams is bounded: at most ``max_chars`` characters per stream (the
sandbox's capture, ``ExecutionLimits.max_output_bytes``, is the natural bound) in at most ``MAX_EVENTS``
events; the rest is dropped (``CodeExecuted`` still has what the executor kept). ``flush`` publishes what
is left, in order: before each tool call of the code (so a UI sees output and calls in the order they
happened) and when the step ends.

Nothing here decides whether to stream (the runtime does so only while the run has a listener, and only
with an executor that takes ``on_output``) nor knows about memory.
"""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable
from typing import Final, Literal, TypeVar

import anyio

from ..bus import BusClosedError
from ..events import CodeOutput

__all__ = ["INTERVAL", "MAX_EVENTS", "LiveOutput", "stream_step"]

INTERVAL: Final = 0.05
"""Seconds output gathers before it is published (the sandbox child's own flush delay): a publication every
``INTERVAL`` at most, one event per stream in it unless the code switches between stdout and stderr."""

MAX_EVENTS: Final = 1_000
"""The most ``CodeOutput`` events of one step (code switching stream at every write cannot make more)."""

Stream = Literal["stdout", "stderr"]
_T = TypeVar("_T")


class LiveOutput:
    """The output of one code step on its way to ``CodeOutput`` events: ``take`` (never waits), ``flush``.

    ``publish`` publishes one event (the run's ``emit``); ``max_chars`` bounds what is taken of each stream.
    """

    __slots__ = ("_events", "_lock", "_pending", "_publish", "_ready", "_room")

    def __init__(self, publish: Callable[[CodeOutput], Awaitable[object]], max_chars: int) -> None:
        self._publish = publish
        # Runs of one stream, in the order written: consecutive pieces of a stream join the last run.
        self._pending: collections.deque[tuple[Stream, list[str]]] = collections.deque()
        self._room: dict[Stream, int] = {"stdout": max_chars, "stderr": max_chars}
        self._events = 0  # the runs begun so far: each is published as one event
        self._ready = anyio.Event()
        self._lock = anyio.Lock()

    def take(self, stream: Stream, text: str) -> None:
        """The executor's ``on_output``: keep ``text`` for publication (what fits in the stream's room)."""
        room = self._room.get(stream, 0)
        if room <= 0 or not text:
            return
        joins = bool(self._pending) and self._pending[-1][0] == stream
        if not joins and self._events >= MAX_EVENTS:
            self._room = {"stdout": 0, "stderr": 0}  # nothing more: later text would hide this gap
            return
        if len(text) > room:
            text = text[:room]
        self._room[stream] = room - len(text)
        if joins:
            self._pending[-1][1].append(text)
        else:
            self._events += 1
            self._pending.append((stream, [text]))
        self._ready.set()

    async def flush(self) -> None:
        """Publish everything taken so far, one ``CodeOutput`` per run of a stream, in order."""
        async with self._lock:
            while self._pending:
                # Taken off first: a cancel during the publish does not lose the event (the bus delivers a
                # publish it cut short), and it must not be published twice.
                stream, parts = self._pending.popleft()
                await self._publish(CodeOutput(stream=stream, text="".join(parts)))

    async def publish_while_running(self) -> None:
        """Publish what gathers, ``INTERVAL`` seconds after the first piece of it, until cancelled (or the bus
        closes): a line printed in pieces, or a burst of lines, travels as one event."""
        try:
            while True:
                await self._ready.wait()
                await anyio.sleep(INTERVAL)
                self._ready = anyio.Event()
                await self.flush()
        except BusClosedError:
            return  # someone closed the run's bus: nobody is left to tell


async def stream_step(live: LiveOutput, step: Callable[[], Awaitable[_T]]) -> _T:
    """``await step()`` while a task publishes ``live``'s output as it comes; what is left when the step ends
    waits for ``live.flush()``.

    The step's own exception propagates as itself (not in an exception group); a cancel stops both.
    """
    failure: Exception | None = None
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(live.publish_while_running)
        try:
            outcome = await step()
        except Exception as exc:
            failure = exc
        tasks.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return outcome
