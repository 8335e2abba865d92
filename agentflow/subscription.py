"""A subscriber's side of the event bus: a bounded buffer its consumer iterates, and what it holds at the end.

``EventBus.subscribe`` creates a ``Subscription``; the bus offers it each event (``_offer``: into the buffer
without waiting, else an awaitable that waits for room) and, once the run is ending, never waits on it
(``_offer_ending``: what does not fit is held and follows the buffered events). The subscription keeps
exactly one account of an event a publish waits to hand over (``_parked``), so a cancel that cuts that wait
can tell whether the consumer has the event (``_withdraw``). Its consumer reads with ``async for`` or
``receive()``. A ``coalesce_deltas`` subscriber is a ``CoalescingSubscription``: a subclass, so that the
other policies' per-event paths stay exactly as they are. The rules it serves (backpressure, dropped or
merged deltas, order, the end never waiting) are the bus's and are told in ``agentflow.bus``; this module
does not stamp, route or publish events, nor know about callbacks or runtimes.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator, Awaitable, Hashable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import anyio
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .events import CodeOutput, ToolProgress
from .model.events import Event, ReasoningDelta, RefusalDelta, TextDelta, ToolCallArgumentsDelta

if TYPE_CHECKING:
    from .bus import EventBus

__all__ = ["DELTA_TYPES", "MERGEABLE_TYPES", "CoalescingSubscription", "Policy", "Subscription"]

E_co = TypeVar("E_co", bound=Event, covariant=True)

DELTA_TYPES: tuple[type[Event], ...] = (
    TextDelta,
    ReasoningDelta,
    RefusalDelta,
    ToolCallArgumentsDelta,
    ToolProgress,
    CodeOutput,
)
"""The events a ``drop_deltas`` subscriber may lose when it falls behind (``CodeExecuted`` still carries
the whole output of a code step, as ``ModelCompleted`` the whole text)."""

MERGEABLE_TYPES: tuple[type[Event], ...] = (
    TextDelta,
    ReasoningDelta,
    RefusalDelta,
    ToolCallArgumentsDelta,
    CodeOutput,
)
"""The deltas a ``coalesce_deltas`` subscriber gets merged (per stream) rather than dropped when it falls
behind: every one of ``DELTA_TYPES`` but ``ToolProgress``, whose messages do not join into one."""

Policy = Literal["backpressure", "drop_deltas", "coalesce_deltas"]
"""What a subscriber's full buffer does to ``publish``: wait (``backpressure``), drop deltas
(``drop_deltas``), or merge deltas per stream and deliver them once there is room (``coalesce_deltas``)."""


class Subscription(Generic[E_co]):
    """A consumer's view of a run's events: an async iterator over a bounded buffer.

    Use it as an async context manager so it is closed (and removed from the bus) however the loop ends::

        async with bus.subscribe((TextDelta,)) as events:
            async for event in events:
                print(event.text, end="")

    Iteration ends after the run's terminal event. Leaving an ``async for`` early closes the subscription
    (at once with ``async with``; otherwise when Python finalises the loop's iterator, on the next pass of
    the event loop), so a consumer that stopped reading never holds up the run. To read a few events and
    keep the subscription, use ``receive()``. ``dropped`` counts the delta events a ``drop_deltas``
    (or ``coalesce_deltas``: ``ToolProgress`` only) subscriber lost because its buffer was full;
    ``coalesced`` the deltas a ``coalesce_deltas`` subscriber got merged into another one.
    """

    __slots__ = (
        "_bus",
        "_drop_deltas",
        "_held",
        "_parked",
        "_receive",
        "_room",
        "_send",
        "_sending",
        "_unbuffered",
        "coalesced",
        "dropped",
        "types",
    )

    def __init__(
        self, bus: EventBus, types: tuple[type[Event], ...] | None, buffer: int, policy: Policy
    ) -> None:
        self._bus = bus
        self.types = types
        """The event types this subscription receives (``None``: all)."""
        self._drop_deltas = policy == "drop_deltas"
        self.dropped = 0
        self.coalesced = 0
        send, receive = anyio.create_memory_object_stream[Any](max_buffer_size=buffer)
        self._send: MemoryObjectSendStream[Any] = send
        self._receive: MemoryObjectReceiveStream[Any] = receive
        # Events of the run's ending that did not fit the buffer; delivered after it (see ``_offer_ending``).
        self._held: collections.deque[Event] = collections.deque()
        # The event a publish waits to hand over (buffer full), until the consumer takes it in (``_deliver``).
        self._parked: Event | None = None
        self._room: anyio.Event | None = None
        # Without a buffer, the scope of a publish's send that waits for the consumer (the ending cuts it).
        self._sending: anyio.CancelScope | None = None
        self._unbuffered = buffer == 0

    # -- consumer side -------------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[E_co]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[E_co]:
        # A generator, so that leaving an ``async for`` early (``break``, an exception, cancellation) closes
        # the subscription when Python finalises the loop's iterator: a consumer that walked away can
        # never hold up the run, even without ``async with``.
        try:
            while True:
                yield await self.__anext__()
        except StopAsyncIteration:
            return
        finally:
            self.close()

    async def __anext__(self) -> E_co:
        """The next event; ``StopAsyncIteration`` (and the subscription closed) after the terminal event."""
        # Take a buffered event without a trip through the event loop: the buffer is bounded and the
        # producer yields whenever it is full, so this cannot starve other tasks.
        event: E_co
        try:
            if self._parked is None:
                return self._receive.receive_nowait()  # type: ignore[no-any-return]
            event = self._receive.receive_nowait()  # and a publish waits to hand one over: take it in
        except anyio.WouldBlock:
            pass
        except anyio.EndOfStream:
            return self._after_buffer()
        except anyio.ClosedResourceError:
            raise StopAsyncIteration from None
        else:
            self._take_in(event)
            return event
        try:
            event = await self._receive.receive()
        except anyio.EndOfStream:
            return self._after_buffer()
        except anyio.ClosedResourceError:
            raise StopAsyncIteration from None
        if self._parked is not None:
            self._take_in(event)
        return event

    def _after_buffer(self) -> E_co:
        # The bus has ended and the buffer is drained: the held events of the ending, then the end.
        if self._held:
            return self._held.popleft()  # type: ignore[return-value]
        self.close()
        raise StopAsyncIteration

    async def receive(self) -> E_co:
        """The next event; raises ``anyio.EndOfStream`` once the run has ended and every event was read."""
        try:
            event: E_co = await self._receive.receive()
        except anyio.EndOfStream:
            if self._held:
                return self._held.popleft()  # type: ignore[return-value]
            raise
        if self._parked is not None:
            self._take_in(event)
        return event

    def _take_in(self, taken: object) -> None:
        # The consumer took ``taken`` while a publish waits to hand ``_parked`` over: take that in now.
        if self._unbuffered:
            # No buffer: the consumer takes the parked event straight from the waiting ``send()``.
            if taken is self._parked:
                self._parked = None
            return
        try:
            self._send.send_nowait(self._parked)
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # ``taken`` was handed over directly, not from the buffer: no room yet
        self._parked = None
        if self._room is not None:
            self._room.set()

    def close(self) -> None:
        """Stop receiving: the bus forgets this subscription (buffered events are discarded)."""
        self._bus._remove(self)
        self._send.close()
        self._receive.close()
        if self._room is not None:
            self._room.set()  # a publish waiting for room finds the subscription closed

    async def aclose(self) -> None:
        """Async alias of ``close``."""
        self.close()

    def __del__(self) -> None:
        # A forgotten subscription is not a leak worth a ResourceWarning: it holds no OS resource and the
        # bus already let go of it (or will skip it once its buffer is closed).
        self._send.close()
        self._receive.close()

    async def __aenter__(self) -> Subscription[E_co]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- producer side (the bus) -----------------------------------------------------------------------

    def _offer(self, event: Event) -> Awaitable[None] | None:
        """Deliver without waiting if possible; otherwise return what the publisher must await."""
        try:
            self._send.send_nowait(event)
        except anyio.WouldBlock:
            if self._drop_deltas and isinstance(event, DELTA_TYPES):
                self.dropped += 1
                return None
            return self._deliver(event)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._bus._remove(self)
        return None

    async def _deliver(self, event: Event) -> None:
        # The buffer is full: the event is parked until the consumer takes it in (``_take_in``). Not
        # anyio's ``send()`` on a buffer: a cancel can land after the consumer took the item it offered,
        # and then nobody could tell whether this subscriber has the event. Parked, it is exactly one of
        # taken in or still here when a cancel cuts the wait (``_withdraw``).
        self._parked = event
        try:
            if self._unbuffered:
                # No buffer to take it into: the consumer takes it from the waiting send and returns it in
                # the same step, which clears ``_parked`` (``_take_in``), so the same holds. The ending
                # withdraws the send (``_release_parked``): an event the consumer did not take is held.
                self._sending = sending = anyio.CancelScope()
                with sending:
                    await self._send.send(event)
                if sending.cancelled_caught and self._parked is event:
                    self._held.appendleft(event)  # older than anything held since the ending began
                self._parked = None
                return
            while True:
                self._room = room = anyio.Event()
                await room.wait()
                if self._parked is not event:
                    return  # taken in
                # Woken without it: the consumer closed the subscription, which the send reports.
                try:
                    self._send.send_nowait(event)
                except anyio.WouldBlock:
                    continue
                self._parked = None
                return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._parked = None
            self._bus._remove(self)
        finally:
            self._room = None
            self._sending = None

    def _withdraw(self, event: Event) -> bool:
        """A cancel cut the delivery of ``event`` to this subscription: whether it was not delivered (and is
        now no longer offered)."""
        if self._parked is event:
            self._parked = None
            return True
        return False

    def _offer_ending(self, event: Event) -> None:
        """Deliver without ever waiting: what does not fit the buffer is held (the bus ends right after)."""
        if not self._held and self._parked is None:
            try:
                self._send.send_nowait(event)
                return
            except anyio.WouldBlock:
                if self._drop_deltas and isinstance(event, DELTA_TYPES):
                    self.dropped += 1
                    return
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._bus._remove(self)
                return
        # Held events come after everything buffered, so the order stays the publish order. Only the few
        # events of a run's ending (synthetic tool results, the terminal event) are ever held.
        self._held.append(event)

    def _release_parked(self) -> None:
        """The run is ending: a publish waiting for this consumer to make room stops waiting. Its event is
        held, ahead of anything held already (it is older), so it still comes after the buffered ones."""
        if self._parked is None:
            return
        if self._room is not None:
            self._held.appendleft(self._parked)
            self._parked = None
            self._room.set()
        elif self._sending is not None:
            # Without a buffer the event waits in the send, where the consumer may still take it before
            # the publish runs again; so the publish holds it (``_deliver``), unless the consumer took it.
            self._sending.cancel()

    def _end(self) -> None:
        if self._parked is not None:
            # A publish still waits to hand this over: it comes after the buffered events, and before the
            # ones held since (owed events paid at the close are newer).
            self._held.appendleft(self._parked)
            self._parked = None
            if self._room is not None:
                self._room.set()
        # Closing the send side lets the consumer drain what is buffered, then ends its iteration.
        self._send.close()


def _stream_of(event: Event) -> tuple[Hashable, str] | None:
    """The stream a mergeable delta continues, and the field its pieces join in; ``None``: not mergeable.

    A stream is what joins into one whole text: a step's answer, reasoning or refusal; one tool call's
    arguments (``index``); one of a code step's output streams (``stream``). The step is part of it, so a
    merged delta has the stamps of all its pieces, and so is the exact class: an event class of your own
    that subclasses one of these never merges with agentflow's.
    """
    cls = type(event)
    if isinstance(event, TextDelta | ReasoningDelta | RefusalDelta):
        return (cls, event.step), "text"
    if isinstance(event, ToolCallArgumentsDelta):
        return (cls, event.step, event.index), "delta"
    if isinstance(event, CodeOutput):
        return (cls, event.step, event.stream), "text"
    return None


class _MergedDelta:
    """One stream's deltas that found no room: the newest of them, and every piece of text to join."""

    __slots__ = ("_field", "_last", "_pieces")

    def __init__(self, event: Event, field: str) -> None:
        self._last = event
        self._field = field
        self._pieces: list[str] = [getattr(event, field)]

    def add(self, event: Event) -> None:
        self._last = event
        self._pieces.append(getattr(event, self._field))

    def event(self) -> Event:
        """The merged delta: the newest piece's event (its stamps, ``seq`` included) with every piece joined;
        the event itself when there is one piece."""
        if len(self._pieces) > 1:
            # Joined once, at delivery (appending to a growing string would be quadratic in a long stall),
            # and kept: built again only if more pieces come.
            joined = "".join(self._pieces)
            changes: dict[str, Any] = {self._field: joined}
            self._last = attrs.evolve(self._last, **changes)
            self._pieces = [joined]
        return self._last


class CoalescingSubscription(Subscription[E_co]):
    """A ``policy="coalesce_deltas"`` subscription: when its buffer is full, deltas are merged, not dropped.

    Each stream (a step's text, reasoning or refusal; a tool call's arguments; a code step's stdout or
    stderr) has at most one pending merged delta: the pieces that found no room, joined, with the stamps of
    the last piece (``seq`` included, so ``seq`` still rises and its gap shows the merge). Pending deltas
    enter the buffer as soon as the consumer makes room, the one with the oldest last piece first, and
    always before any later event of another kind: a boundary that finds deltas pending waits (backpressure)
    until they and it are delivered. So each stream's texts, joined, are exactly what a backpressure
    subscriber receives. ``ToolProgress``, which cannot be merged, is dropped as under ``drop_deltas``.
    ``coalesced`` counts the deltas merged into another one (a merged delta of three pieces counts 2).
    Needs a buffer of at least one event (``EventBus.subscribe`` checks it).
    """

    __slots__ = ("_pending",)

    def __init__(
        self, bus: EventBus, types: tuple[type[Event], ...] | None, buffer: int, policy: Policy
    ) -> None:
        super().__init__(bus, types, buffer, policy)
        # Merged deltas waiting for room, one per stream, ordered by their newest piece (re-inserted on every
        # merge, so ``seq`` rises in delivery order). All are newer than what is buffered and older than a
        # parked or held event. Never empty with room in the buffer: the consumer refills it (``_take_in``).
        self._pending: dict[Hashable, _MergedDelta] = {}

    # -- consumer side -------------------------------------------------------------------------------

    async def __anext__(self) -> E_co:
        """The next event; ``StopAsyncIteration`` (and the subscription closed) after the terminal event."""
        event: E_co
        try:
            event = self._receive.receive_nowait()
        except anyio.WouldBlock:
            # An empty buffer: nothing pending or parked either (they only wait while the buffer is full).
            try:
                event = await self._receive.receive()
            except anyio.EndOfStream:
                return self._after_buffer()
            except anyio.ClosedResourceError:
                raise StopAsyncIteration from None
        except anyio.EndOfStream:
            return self._after_buffer()
        except anyio.ClosedResourceError:
            raise StopAsyncIteration from None
        if self._pending or self._parked is not None:
            self._take_in(event)
        return event

    async def receive(self) -> E_co:
        """The next event; raises ``anyio.EndOfStream`` once the run has ended and every event was read."""
        try:
            event: E_co = await self._receive.receive()
        except anyio.EndOfStream:
            if self._held:
                return self._held.popleft()  # type: ignore[return-value]
            raise
        if self._pending or self._parked is not None:
            self._take_in(event)
        return event

    def _take_in(self, taken: object) -> None:
        # The consumer made room: the merged deltas go in first, oldest first, then the parked event (a
        # boundary that waits behind them, so newer than all of them).
        pending = self._pending
        while pending:
            stream = next(iter(pending))
            try:
                self._send.send_nowait(pending[stream].event())
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return
            del pending[stream]
        if self._parked is not None:
            super()._take_in(taken)

    def close(self) -> None:
        """Stop receiving: the bus forgets this subscription (buffered and pending events are discarded)."""
        self._pending.clear()
        super().close()

    # -- producer side (the bus) -----------------------------------------------------------------------

    def _offer(self, event: Event) -> Awaitable[None] | None:
        """Deliver (or merge a delta) without waiting if possible; otherwise what the publisher awaits."""
        if not self._pending:
            try:
                self._send.send_nowait(event)
                return None
            except anyio.WouldBlock:
                pass
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._bus._remove(self)
                return None
        # The buffer is full, or merged deltas wait for room (and are older): merge, drop, or wait.
        if self._merge(event):
            return None
        if isinstance(event, DELTA_TYPES):
            self.dropped += 1
            return None
        return self._deliver(event)

    def _offer_ending(self, event: Event) -> None:
        """Deliver without ever waiting: what does not fit the buffer is merged, dropped or held."""
        if not self._held and self._parked is None:
            if not self._pending:
                try:
                    self._send.send_nowait(event)
                    return
                except anyio.WouldBlock:
                    pass
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    self._bus._remove(self)
                    return
            if self._merge(event):
                return
            if isinstance(event, DELTA_TYPES):
                self.dropped += 1
                return
        # Held events come after the pending ones (``_end``), so the order stays the publish order.
        self._held.append(event)

    def _merge(self, event: Event) -> bool:
        """Add ``event`` to its stream's pending delta; ``False`` if it is not a delta that merges."""
        stream = _stream_of(event)
        if stream is None:
            return False
        key, field = stream
        merged = self._pending.pop(key, None)
        if merged is None:
            merged = _MergedDelta(event, field)
        else:
            merged.add(event)
            self.coalesced += 1
        self._pending[key] = merged  # last: it now ends with the newest piece
        return True

    def _end(self) -> None:
        super()._end()  # a parked event is now held first
        # The merged deltas still pending come right after the buffered events, before anything held.
        while self._pending:
            _, merged = self._pending.popitem()  # the newest first, each put in front
            self._held.appendleft(merged.event())
