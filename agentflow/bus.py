"""The per-run event bus: stamps every event with ``run_id``/``step``/``seq`` and delivers it to subscribers.

One ``EventBus`` belongs to one run. The runtime publishes; consumers either iterate a ``Subscription``
(a bounded anyio memory stream, kept in ``agentflow.subscription`` and re-exported here) or register a
callback with ``on``. Rules:

- **Backpressure by default.** ``publish`` waits while a subscriber's buffer is full, so a slow consumer
  slows the run instead of growing a queue. A subscriber may choose ``policy="drop_deltas"``: when its
  buffer is full, delta events (``DELTA_TYPES``) are dropped for that subscriber (and counted in
  ``Subscription.dropped``); boundaries and the terminal event are never dropped. With
  ``policy="coalesce_deltas"`` the deltas that find its buffer full are merged instead, one pending delta
  per stream (``MERGEABLE_TYPES``; counted in ``Subscription.coalesced``), delivered as soon as it has room
  and before any later event: a boundary waits behind them, so the text is all there (``ToolProgress``,
  which does not merge, is dropped).
- **Ordering.** Every subscriber sees events in ``seq`` order, also when several tasks publish at once.
- **No replay.** A subscriber sees only the events published after it subscribed.
- **End of stream.** Publishing the terminal event (``RunFinished``/``RunFailed``/``RunCancelled``) delivers
  it and then closes the bus: every subscription ends after it, and later ``publish`` calls raise.
- **The end never waits.** Once the run is ending (``begin_ending()``, or the terminal event itself),
  ``publish`` no longer waits for a full subscriber: what does not fit its buffer is held for it and
  delivered after the buffered events. So every subscriber still open gets the terminal event, last, even
  one that has stopped reading, and a consumer that stopped reading cannot hold up a run's clean-up.
- **A cancel never loses an event.** ``publish`` hands an event to its subscribers one after another; when a
  cancel lands while it waits on one of them (an async callback, a full buffer), the subscribers that have
  not got the event yet are owed it. They get it before anything else: at once when the run is ending
  (never waiting for a subscription), otherwise at the next ``publish`` or at ``close``. A callback that
  was running has seen the event; a subscription whose turn was cut gets it unless its consumer took it in
  first. A publish cancelled while it queues behind such a wait is published all the same, after it (its
  caller may count it as sent already). So nobody misses an event or sees one twice, and ``seq`` order
  holds.
- **Isolation.** A callback that raises is logged on the ``agentflow`` logger and recorded in
  ``callback_failures``; the run goes on. A subscription whose consumer closed it, left its
  ``async with`` or broke out of its ``async for`` is dropped from the bus and never blocks the run. A
  callback must not publish on the bus that calls it (``RuntimeError``).

``publish`` is on the hot path (one call per text delta): when nothing needs to wait it completes without
yielding to the event loop, and with no subscribers it only stamps the event. This module does no I/O of
its own and knows nothing about runtimes, tools or models.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

import anyio
import attrs

from .cancellation import cancel_requested
from .event_types import EventTypes, normalise_event_types
from .events import RunCancelled, RunFailed, RunFinished
from .model.events import Event
from .stamping import stampers
from .subscription import DELTA_TYPES, MERGEABLE_TYPES, CoalescingSubscription, Policy, Subscription

__all__ = [
    "DELTA_TYPES",
    "MERGEABLE_TYPES",
    "TERMINAL_TYPES",
    "BusClosedError",
    "CallbackFailure",
    "EventBus",
    "EventTypes",
    "Policy",
    "Subscription",
    "normalise_event_types",
]

_log = logging.getLogger("agentflow")

E = TypeVar("E", bound=Event)

TERMINAL_TYPES: tuple[type[Event], ...] = (RunFinished, RunFailed, RunCancelled)
"""The events that end a run (exactly one per run); publishing one closes the bus."""

_MAX_RECORDED_FAILURES = 100

_CLOSE_WAITS_FOR_CALLBACKS = 10.0
"""How long ``close`` may wait (shielded) to give callbacks the events a cancel cut short: as long as a
runtime gives its terminal publish, which pays them first thing."""

# The bus's state (``EventBus._state``): open; ending (publish never waits for a subscriber); closed.
_OPEN, _ENDING, _CLOSED = 0, 1, 2


class BusClosedError(RuntimeError):
    """``publish`` was called after the run's terminal event (or after ``close``)."""


@attrs.frozen
class CallbackFailure:
    """A callback raised while handling an event; the run went on."""

    event_type: str
    seq: int
    callback: str
    error: BaseException = attrs.field(eq=False)


class _Callback:
    __slots__ = ("_bus", "fn", "types")

    def __init__(
        self, bus: EventBus, types: tuple[type[Event], ...] | None, fn: Callable[[Any], Any]
    ) -> None:
        self._bus = bus
        self.types = types
        self.fn = fn

    def _offer(self, event: Event) -> Awaitable[None] | None:
        try:
            result = self.fn(event)
        except Exception as exc:
            self._bus._record_failure(event, self.fn, exc)
            return None
        if result is not None and inspect.isawaitable(result):
            return self._finish(event, result)
        return None

    _offer_ending = _offer

    def _withdraw(self, event: Event) -> bool:
        return False  # a callback that was running when the cancel landed has seen the event

    async def _finish(self, event: Event, pending: Awaitable[Any]) -> None:
        try:
            await pending
        except Exception as exc:
            self._bus._record_failure(event, self.fn, exc)
        except asyncio.CancelledError as exc:
            # A real cancel propagates, except during the run's ending: that runs shielded, so what reaches
            # a callback there is something it awaited being cancelled elsewhere (a connection that went
            # away), its own failure — as it is anywhere when no cancel was requested.
            if cancel_requested() and self._bus._state == _OPEN:
                raise
            self._bus._record_failure(event, self.fn, exc)

    def _end(self) -> None:
        pass


_Sink = Subscription[Any] | _Callback


class _EventClass:
    """What the bus needs per event class, computed once: fast stamping functions and flags."""

    __slots__ = ("restamp", "stamp", "terminal")

    def __init__(self, cls: type[Event]) -> None:
        self.terminal = issubclass(cls, TERMINAL_TYPES)
        self.restamp, self.stamp = stampers(cls)


_event_classes: dict[type[Event], _EventClass] = {}


def _match(kinds: tuple[type[Event], ...] | None, cls: type[Event]) -> bool:
    return kinds is None or issubclass(cls, kinds)


def check_subscription_options(buffer: int, policy: Policy) -> None:
    """``ValueError`` unless ``buffer`` is an int >= 0 (>= 1 to coalesce) and ``policy`` a ``Policy``, as
    ``subscribe`` needs."""
    if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 0:
        raise ValueError(f"buffer must be an int >= 0 (bounded), got {buffer!r}")
    if policy not in ("backpressure", "drop_deltas", "coalesce_deltas"):
        raise ValueError(f"policy must be 'backpressure', 'drop_deltas' or 'coalesce_deltas', got {policy!r}")
    if policy == "coalesce_deltas" and buffer == 0:
        # Merged deltas wait for a free slot in the buffer; without one, every event is handed straight to
        # a consumer waiting for it, and there is nothing to merge into.
        raise ValueError(
            "policy='coalesce_deltas' needs buffer >= 1 (merged deltas wait for room in the buffer); "
            "for an unbuffered subscription that waits for its consumer use policy='backpressure'"
        )


class EventBus:
    """Delivers one run's events to its subscribers and callbacks, stamped with ``run_id``, ``step``, ``seq``.

    >>> import anyio
    >>> from agentflow.model.events import TextDelta
    >>> async def demo():
    ...     bus = EventBus("run-1")
    ...     seen = []
    ...     bus.on((TextDelta,), seen.append)
    ...     await bus.publish(TextDelta("Hel"))
    ...     await bus.publish(TextDelta("lo"))
    ...     return [(e.run_id, e.seq, e.text) for e in seen]
    >>> anyio.run(demo)
    [('run-1', 1, 'Hel'), ('run-1', 2, 'lo')]
    """

    __slots__ = (
        "_careful",
        "_lock",
        "_owed",
        "_routes",
        "_seq",
        "_sinks",
        "_state",
        "callback_failures",
        "failed_callbacks",
        "run_id",
        "step",
    )

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.step = 0
        """The current step; the runtime sets it. Events published without a step of their own get it."""
        self._seq = 0
        self._state = _OPEN
        self._sinks: list[_Sink] = []
        self._routes: dict[type[Event], tuple[_Sink, ...]] = {}
        # Held only while a publish is suspended mid-delivery, so concurrent publishers stay in seq order;
        # created the first time one is (most runs never need it).
        self._lock: anyio.Lock | None = None
        # Events a cancel cut short, oldest first, each with the sinks that have not got it (``_owe``);
        # created the first time a cancel does that.
        self._owed: collections.deque[tuple[Event, tuple[_Sink, ...]]] | None = None
        # Whether ``publish`` must take the careful path: the bus is ending or closed, a publish is suspended
        # mid-delivery (the lock is held) or an event is owed. One flag, so the fast path tests one thing.
        self._careful = False
        self.failed_callbacks = 0
        """How many callback invocations raised (every one is logged)."""
        self.callback_failures: collections.deque[CallbackFailure] = collections.deque(
            maxlen=_MAX_RECORDED_FAILURES
        )
        """The most recent callback failures (at most 100 are kept; ``failed_callbacks`` counts all)."""

    @property
    def closed(self) -> bool:
        """True once the terminal event was published or ``close`` was called."""
        return self._state == _CLOSED

    @property
    def seq(self) -> int:
        """The ``seq`` of the last published event (0 before the first)."""
        return self._seq

    # -- subscribing ---------------------------------------------------------------------------------

    @overload
    def subscribe(
        self, types: None = None, *, buffer: int = 256, policy: Policy = "backpressure"
    ) -> Subscription[Event]: ...

    @overload
    def subscribe(
        self, types: type[E] | tuple[type[E], ...], *, buffer: int = 256, policy: Policy = "backpressure"
    ) -> Subscription[E]: ...

    @overload
    def subscribe(
        self, types: EventTypes, *, buffer: int = 256, policy: Policy = "backpressure"
    ) -> Subscription[Event]: ...

    def subscribe(
        self,
        types: EventTypes = None,
        *,
        buffer: int = 256,
        policy: Policy = "backpressure",
    ) -> Subscription[Any]:
        """A bounded subscription to the events of ``types`` (``isinstance`` match; ``None``: every event).

        ``types`` is a class, a union of classes (``agentflow.events.TerminalEvent``) or a tuple of them.
        ``buffer`` is how many events may wait for the consumer (0: each ``publish`` waits for it).
        ``policy="drop_deltas"`` drops delta events instead of waiting when the buffer is full;
        ``policy="coalesce_deltas"`` (``buffer`` >= 1) merges them per stream and delivers them as soon as
        there is room, before any later event (see ``CoalescingSubscription``). Events published before this
        call are not replayed. Subscribing to a closed bus gives an ended subscription.
        """
        check_subscription_options(buffer, policy)
        # A class of its own, so the other policies' per-event paths pay nothing for coalescing.
        kind = CoalescingSubscription if policy == "coalesce_deltas" else Subscription
        sub: Subscription[Any] = kind(self, normalise_event_types(types), buffer, policy)
        if self._state == _CLOSED:
            sub._end()
        else:
            self._add(sub)
        return sub

    def on(self, types: EventTypes, callback: Callable[[Any], Any]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event of ``types``; returns a function that unsubscribes.

        ``types`` as for ``subscribe``. The callback may be sync or async; an async one is awaited before
        ``publish`` returns (so it applies backpressure too). Exceptions are logged and recorded, never
        raised into the run. A callback must not publish on the same bus (``publish`` raises
        ``RuntimeError``): it runs while the bus delivers an event. Add events of your own where the run's
        events are consumed ("Events of your own" in docs/events.md), or from a tool with
        ``ctx.emit_progress``.
        """
        kinds = normalise_event_types(types)
        if not callable(callback):
            raise TypeError(f"callback must be callable (it is called with each event), got {callback!r}")
        entry = _Callback(self, kinds, callback)
        if self._state != _CLOSED:
            self._add(entry)

        def unsubscribe() -> None:
            self._remove(entry)

        return unsubscribe

    def _add(self, sink: _Sink) -> None:
        self._sinks.append(sink)
        self._routes.clear()

    def _remove(self, sink: _Sink) -> None:
        try:
            self._sinks.remove(sink)
        except ValueError:
            return
        self._routes.clear()

    def _route(self, cls: type[Event]) -> tuple[_Sink, ...]:
        route = self._routes.get(cls)
        if route is None:
            route = self._routes[cls] = tuple(s for s in self._sinks if _match(s.types, cls))
        return route

    # -- publishing ----------------------------------------------------------------------------------

    async def publish(self, event: E, *, owned: bool = False) -> E:
        """Stamp ``event`` (``run_id``, ``step`` unless it has one, next ``seq``) and deliver it.

        Returns the stamped event: a copy, so the event passed in can be published again or kept; with
        ``owned=True`` (the caller created ``event`` for this call and hands it over) it is stamped in
        place, which is cheaper — a runtime publishing its own events does that. Waits while a
        backpressure subscriber's buffer is full (never once the run is ending). Raises ``BusClosedError``
        after the terminal event, and ``RuntimeError`` when called from a callback of this bus.

        A cancel does not lose the event: if it cuts the delivery short (or lands while this publish queues
        behind another one), the subscribers that have not got it are owed it and get it first thing: at
        once if the run is ending, else at the next ``publish``.
        """
        if self._careful:
            # Ending or closed, another publish suspended mid-delivery, or an event owed: the careful path.
            return await self._publish_in_order(event, owned)
        cls = type(event)
        info = _event_classes.get(cls) or _event_classes.setdefault(cls, _EventClass(cls))
        if info.terminal:
            return await self._publish_in_order(event, owned)
        self._seq += 1
        stamped: E = (info.stamp if owned else info.restamp)(
            event, self.run_id, event.step or self.step, self._seq
        )
        if self._sinks:
            route = self._route(cls)
            for i, sink in enumerate(route):
                pending = sink._offer(stamped)
                if pending is not None:
                    # Slow path: hold the lock while suspended so no concurrent publish overtakes this one.
                    lock = self._take_lock()
                    try:
                        await self._deliver_from(stamped, route, i, pending)
                    finally:
                        self._release(lock)
                    break
        return stamped

    def has_listeners(self) -> bool:
        """Whether anyone subscribed or registered a callback — only then can a ``publish`` suspend.

        >>> bus = EventBus("run-1")
        >>> bus.has_listeners()
        False
        >>> unsubscribe = bus.on(None, print)
        >>> bus.has_listeners()
        True
        """
        return bool(self._sinks)

    def listens_to(self, *classes: type[Event]) -> bool:
        """Whether an event of any of ``classes`` would reach a subscriber or callback right now.

        >>> from agentflow.model.events import TextDelta, UsageReported
        >>> bus = EventBus("run-1")
        >>> unsubscribe = bus.on(UsageReported, print)
        >>> bus.listens_to(TextDelta), bus.listens_to(TextDelta, UsageReported)
        (False, True)
        """
        return any(self._route(cls) for cls in classes)

    @property
    def ending_may_wait(self) -> bool:
        """Whether publishing the run's last events could suspend: only for a callback (which may be async)
        or behind a publish suspended mid-delivery — subscriptions never hold the ending up."""
        locked = self._lock is not None and self._lock.locked()
        return locked or any(isinstance(sink, _Callback) for sink in self._sinks)

    def _take_lock(self) -> anyio.Lock:
        # Only ever called with the lock free: no checkpoint, so nothing yields.
        if self._lock is None:
            self._lock = anyio.Lock(fast_acquire=True)
        self._lock.acquire_nowait()
        self._careful = True
        return self._lock

    def _release(self, lock: anyio.Lock) -> None:
        lock.release()
        self._recheck()

    def _recheck(self) -> None:
        # Back to the fast path once nothing needs the careful one. (A lock handed to a waiter stays held.)
        self._careful = (
            self._state != _OPEN or bool(self._owed) or (self._lock is not None and self._lock.locked())
        )

    async def _publish_in_order(self, event: E, owned: bool) -> E:
        if self._state == _CLOSED:
            raise self._closed_error(event)
        cls = type(event)
        info = _event_classes.get(cls) or _event_classes.setdefault(cls, _EventClass(cls))
        held = None
        lock = self._lock
        if lock is not None and lock.locked():
            self._refuse_reentry(lock)
            if info.terminal:
                self.begin_ending()  # the delivery it queues behind stops waiting for a consumer too
            # Queue behind a publish suspended mid-delivery, so every subscriber sees seq order.
            held = lock
            try:
                await held.acquire()
            except BaseException:
                self._owe_whole(event, owned)
                raise
        try:
            if info.terminal:
                self.begin_ending()  # from here nothing waits for a subscription, not even what is owed
            try:
                while self._owed:
                    # What cut deliveries still owe goes first: nobody gets a later event before it.
                    owed, sinks = self._owed.popleft()
                    sinks = tuple(sink for sink in sinks if sink in self._sinks)  # who left is owed nothing
                    waiting = self._offer_all(owed, sinks)
                    if waiting is not None:
                        if held is None:
                            held = self._take_lock()
                        await self._deliver_from(owed, sinks, *waiting)
            except BaseException:
                self._owe_whole(event, owned)  # cut while paying: this event still follows
                raise
            if self._state == _CLOSED:
                raise self._closed_error(event)
            self._seq += 1
            stamp = info.stamp if owned else info.restamp
            stamped: E = stamp(event, self.run_id, event.step or self.step, self._seq)
            try:
                route = self._route(cls)
                waiting = self._offer_all(stamped, route)
                if waiting is not None:
                    if held is None:
                        # Taken only now, without a checkpoint: until something has to wait, nothing
                        # here yields, so the ending's events land even in a cancelled task.
                        held = self._take_lock()
                    await self._deliver_from(stamped, route, *waiting)
            finally:
                # However the delivery ends (even cut short waiting on an async callback), the terminal
                # event closes the bus: every subscriber has it or its end, and nothing more is published.
                if info.terminal:
                    self._close()
            return stamped
        finally:
            if held is not None:
                held.release()
            self._recheck()

    def _offer_all(self, event: Event, sinks: tuple[_Sink, ...]) -> tuple[int, Awaitable[None]] | None:
        """Offer ``event`` to ``sinks`` in order until one needs awaiting: its index and awaitable, if any."""
        ending = self._state != _OPEN
        for i, sink in enumerate(sinks):
            pending = sink._offer_ending(event) if ending else sink._offer(event)
            if pending is not None:
                return i, pending
        return None

    async def _deliver_from(
        self, event: Event, sinks: tuple[_Sink, ...], i: int, pending: Awaitable[None]
    ) -> None:
        """Finish a delivery suspended at ``sinks[i]``: await ``pending``, then the sinks after it in order.

        If it is cut short (a cancel, while one of them is awaited), whoever has not got ``event`` is owed it.
        """
        at = i  # the sink being delivered to: where a cut lands
        try:
            await pending
            for at in range(i + 1, len(sinks)):
                sink = sinks[at]
                later = sink._offer_ending(event) if self._state != _OPEN else sink._offer(event)
                if later is not None:
                    await later
        except BaseException:
            self._owe(event, sinks, at)
            raise

    def _owe(self, event: Event, sinks: tuple[_Sink, ...], i: int) -> None:
        # A callback that was running has seen the event; a subscription has it only if its consumer took
        # it in before the cut (``Subscription._withdraw``). The sinks after it never saw it.
        owed = sinks[i:] if sinks[i]._withdraw(event) else sinks[i + 1 :]
        if not owed:
            return
        if self._owed is None:
            self._owed = collections.deque()
        self._owed.appendleft((event, owed))  # the delivery in progress is older than anything owed
        self._careful = True
        if self._state != _OPEN:
            self._pay_without_waiting()  # this delivery is over: nothing can overtake what is paid now

    def _owe_whole(self, event: Event, owned: bool) -> None:
        # A cancel landed before this publish's own delivery began (it waited for its turn, or paid what was
        # owed). The caller may already count the event as sent (a tool's result is recorded before its end
        # event), so it is still published: stamped now, delivered after the events ahead of it. Not a
        # terminal event: that one closes the bus, which cannot happen while another delivery is under way.
        cls = type(event)
        info = _event_classes.get(cls) or _event_classes.setdefault(cls, _EventClass(cls))
        if self._state == _CLOSED or info.terminal:
            return
        self._seq += 1
        stamped = (info.stamp if owned else info.restamp)(
            event, self.run_id, event.step or self.step, self._seq
        )
        route = self._route(cls)
        if route:
            if self._owed is None:
                self._owed = collections.deque()
            self._owed.append((stamped, route))
            self._careful = True

    def _pay_without_waiting(self) -> None:
        # The run is ending: a subscription owed events gets them now, in order, never waiting (what does not
        # fit its buffer is held for it). A callback may be async, so it waits for the next publish (the
        # terminal event's at the latest) or ``close``, which pays it first. Only while no delivery is under
        # way (or from the one just cut), so nothing owed can overtake an event still being delivered.
        if not self._owed:
            return
        kept: collections.deque[tuple[Event, tuple[_Sink, ...]]] = collections.deque()
        for event, sinks in self._owed:
            for sink in sinks:
                if isinstance(sink, Subscription) and sink in self._sinks:
                    sink._offer_ending(event)
            callbacks = tuple(sink for sink in sinks if isinstance(sink, _Callback))
            if callbacks:
                kept.append((event, callbacks))
        self._owed = kept or None

    def _refuse_reentry(self, lock: anyio.Lock) -> None:
        # The publishing task holds the lock while it awaits a callback: a publish from that task is one
        # from inside the callback, which would wait for itself.
        owner = lock.statistics().owner
        if owner is not None and owner == anyio.get_current_task():
            raise RuntimeError(
                f"an event callback must not publish on the bus that calls it (run {self.run_id!r}): it runs "
                "while the bus delivers an event, and the bus waits for it. Add events of your own where "
                "the run's events are consumed instead (an async generator over the run that yields yours "
                "beside them), or from a tool with ctx.emit_progress(...): see 'Events of your own' in "
                "docs/events.md."
            )

    def _closed_error(self, event: Event) -> BusClosedError:
        return BusClosedError(
            f"run {self.run_id!r} has ended; cannot publish {type(event).__name__} after its terminal event"
        )

    # -- ending --------------------------------------------------------------------------------------

    def begin_ending(self) -> None:
        """The run is ending: from now on ``publish`` never waits for a subscriber.

        An event that does not fit a subscriber's buffer is held for it and delivered after the buffered
        ones, so a consumer that stopped reading cannot delay the run's clean-up nor miss its last events.
        Only the few events of an ending (synthetic tool results, the terminal event) should follow:
        held events are not bounded by ``buffer``. Publishing the terminal event does this by itself.
        An event a cancel cut short on its way to subscriptions reaches them now.
        """
        if self._state == _OPEN:
            self._state = _ENDING
            self._careful = True
            for sink in self._sinks:
                if isinstance(sink, Subscription):
                    sink._release_parked()  # a delivery waiting on a consumer that stopped reading goes on
            if self._lock is None or not self._lock.locked():
                self._pay_without_waiting()  # else the next publish pays, once the delivery under way is done

    async def close(self) -> None:
        """End every subscription (consumers still drain what is buffered) and refuse further events.

        Publishing a terminal event does this by itself; call it for a run that ends without one. An event a
        cancel cut short still reaches whoever is owed it, as at a run's ending: the subscriptions at once,
        the callbacks after any delivery under way, shielded but waited for at most 10 seconds in all.
        """
        if not self._owed or self._state == _CLOSED:
            self._close()
            return
        try:
            with anyio.move_on_after(_CLOSE_WAITS_FOR_CALLBACKS, shield=True):
                await self._pay_owed_before_closing()
        finally:
            self._close()

    async def _pay_owed_before_closing(self) -> None:
        # As the terminal publish does: stop waiting for subscriptions, queue behind a delivery under way
        # (it can then only wait for an async callback), then pay what is owed, oldest first.
        self.begin_ending()
        lock = self._lock
        if lock is not None and lock.locked():
            owner = lock.statistics().owner
            if owner is not None and owner == anyio.get_current_task():
                return  # closed from a callback: the delivery under way cannot end before this does
            await lock.acquire()
        else:
            lock = self._take_lock()
        try:
            while self._owed:
                owed, sinks = self._owed.popleft()
                sinks = tuple(sink for sink in sinks if sink in self._sinks)  # who left is owed nothing
                waiting = self._offer_all(owed, sinks)
                if waiting is not None:
                    await self._deliver_from(owed, sinks, *waiting)
        finally:
            self._release(lock)

    def _close(self) -> None:
        if self._state == _CLOSED:
            return
        # An event still owed reaches the subscriptions, and the callbacks owed it are called: a sync one (a
        # tracer ending its spans on the terminal event) gets it although an async callback ahead of it took
        # too long; what an async one returns can no longer be awaited, and is recorded as its failure.
        self._pay_without_waiting()
        owed, self._owed = self._owed, None
        if owed:
            self._call_owed_callbacks(owed)
        self._state = _CLOSED
        self._careful = True
        sinks, self._sinks = self._sinks, []
        self._routes.clear()
        for sink in sinks:
            sink._end()

    def _call_owed_callbacks(self, owed: collections.deque[tuple[Event, tuple[_Sink, ...]]]) -> None:
        late = RuntimeError("the bus closed before this async callback could be awaited with the event")
        for event, sinks in owed:
            for sink in sinks:
                if not isinstance(sink, _Callback) or sink not in self._sinks:
                    continue
                fn = sink.fn
                if inspect.iscoroutinefunction(fn):
                    self._record_failure(event, fn, late)
                    continue
                try:
                    result = fn(event)
                except Exception as exc:
                    self._record_failure(event, fn, exc)
                    continue
                if result is not None and inspect.isawaitable(result):
                    if inspect.iscoroutine(result):
                        result.close()  # never to be awaited: closed, so no "never awaited" warning
                    self._record_failure(event, fn, late)

    def _record_failure(self, event: Event, fn: Callable[[Any], Any], exc: BaseException) -> None:
        name = getattr(fn, "__qualname__", None) or repr(fn)
        self.failed_callbacks += 1
        self.callback_failures.append(CallbackFailure(type(event).__name__, event.seq, name, exc))
        _log.error(
            "event callback %s failed on %s (run %s, seq %d); the run continues",
            name,
            type(event).__name__,
            self.run_id,
            event.seq,
            exc_info=exc,
        )
