"""The per-run event bus: stamping, typed subscriptions, backpressure, drop-deltas, ends, isolation."""

from __future__ import annotations

import gc
import logging
import typing
import warnings
from typing import Any

import anyio
import anyio.lowlevel
import attrs
import orjson
import pytest

import agentflow.bus as bus_module
from agentflow.bus import DELTA_TYPES, BusClosedError, EventBus
from agentflow.events import (
    RunCancelled,
    RunEvent,
    RunFailed,
    RunFinished,
    StepFinished,
    StepStarted,
    TerminalEvent,
    ToolProgress,
    ToolStarted,
)
from agentflow.model.events import Event, ReasoningDelta, TextDelta, ToolCallArgumentsDelta
from agentflow.model.messages import ToolCall
from agentflow.result import AgentResult, StopReason


def finished() -> RunFinished:
    return RunFinished(AgentResult("run-1", "done", StopReason.FINAL_ANSWER))


async def test_publish_stamps_run_id_step_and_a_seq_from_one() -> None:
    bus = EventBus("run-1")
    bus.step = 3
    original = TextDelta("hi")
    first = await bus.publish(original)
    second = await bus.publish(StepStarted())
    assert (first.run_id, first.step, first.seq, first.text) == ("run-1", 3, 1, "hi")
    assert (second.seq, bus.seq) == (2, 2)
    assert (original.run_id, original.seq) == ("", 0)  # events are immutable: the bus stamps a copy
    assert orjson.loads(orjson.dumps(first.to_dict())) == {
        "type": "text_delta",
        "run_id": "run-1",
        "step": 3,
        "seq": 1,
        "text": "hi",
    }


async def test_an_owned_event_is_stamped_in_place_and_delivered_as_itself() -> None:
    bus = EventBus("run-1")
    seen: list[Event] = []
    bus.on(None, seen.append)
    mine = StepStarted()
    stamped = await bus.publish(mine, owned=True)
    terminal = await bus.publish(finished(), owned=True)
    assert stamped is mine
    assert seen == [mine, terminal]
    assert (mine.run_id, mine.step, mine.seq) == ("run-1", 0, 1)
    assert terminal.seq == 2
    assert bus.closed


def test_the_ending_may_wait_only_for_a_callback() -> None:
    bus = EventBus("r")
    bus.subscribe()
    assert not bus.ending_may_wait  # subscriptions never hold the ending up
    bus.on(None, lambda event: None)
    assert bus.ending_may_wait  # a callback may be async


async def test_an_event_that_carries_its_own_step_keeps_it() -> None:
    bus = EventBus("r")
    bus.step = 5
    event = await bus.publish(ToolProgress("c1", "search", "page 2", step=2))
    assert event.step == 2


async def test_subscribers_get_stamped_events_of_their_types_only() -> None:
    bus = EventBus("r")
    texts, run_events, all_events = bus.subscribe((TextDelta,)), bus.subscribe(RunEvent), bus.subscribe()
    async with texts, run_events, all_events:
        call = ToolCall("c1", "search", "{}")
        await bus.publish(TextDelta("a"))
        await bus.publish(ToolStarted(call))
        await bus.publish(finished())
        assert [e.seq async for e in texts] == [1]
        assert [type(e) async for e in run_events] == [ToolStarted, RunFinished]
        assert [e.seq async for e in all_events] == [1, 2, 3]


async def test_events_published_before_subscribing_are_not_replayed() -> None:
    bus = EventBus("r")
    await bus.publish(TextDelta("early"))
    async with bus.subscribe() as events:
        await bus.publish(TextDelta("late"))
        await bus.publish(finished())
        assert [getattr(e, "text", None) async for e in events] == ["late", None]


async def test_terminal_event_ends_every_subscription_and_the_bus() -> None:
    bus = EventBus("r")
    async with bus.subscribe() as events:
        await bus.publish(StepStarted())
        terminal = await bus.publish(RunFailed("ValueError", "boom"))
        received = [e async for e in events]
    assert received[-1] == terminal
    assert bus.closed
    with pytest.raises(BusClosedError, match="terminal event"):
        await bus.publish(RunCancelled(AgentResult("r", "", StopReason.CANCELLED)))
    late = bus.subscribe()
    assert [e async for e in late] == []  # subscribing to an ended run gives an ended subscription


async def test_close_ends_subscriptions_after_their_buffered_events() -> None:
    bus = EventBus("r")
    events = bus.subscribe()
    await bus.publish(TextDelta("a"))
    await bus.publish(TextDelta("b"))
    await bus.close()
    assert [e.text async for e in events if isinstance(e, TextDelta)] == ["a", "b"]


@pytest.mark.parametrize("buffer", [1, 0], ids=["buffered", "unbuffered"])
async def test_the_terminal_event_never_waits_and_reaches_a_subscriber_that_stopped_reading(
    buffer: int,
) -> None:
    bus = EventBus("r")
    stalled = bus.subscribe(buffer=buffer)
    for _ in range(buffer):
        await bus.publish(TextDelta("fills the buffer"))
    # Nobody reads: publishing the terminal event must still return at once (no task group, no timeout).
    terminal = await bus.publish(finished())
    assert bus.closed
    received = [e async for e in stalled]  # read later: the buffered event, then the terminal event, last
    assert [type(e) for e in received] == [TextDelta, RunFinished][1 - buffer :]
    assert received[-1] == terminal


async def test_once_the_run_is_ending_publish_holds_what_does_not_fit_in_publish_order() -> None:
    bus = EventBus("r")
    stalled = bus.subscribe(buffer=1)
    dropping = bus.subscribe(buffer=1, policy="drop_deltas")
    await bus.publish(StepStarted())
    bus.begin_ending()
    call = ToolCall("c1", "search", "{}")
    # None of these waits, although both buffers are full and nobody reads.
    await bus.publish(TextDelta("late delta"))
    await bus.publish(ToolStarted(call))
    await bus.publish(RunCancelled(AgentResult("r", "", StopReason.CANCELLED)))
    assert [e.seq async for e in stalled] == [1, 2, 3, 4]
    assert [(await dropping.receive()).seq for _ in range(3)] == [1, 3, 4]
    assert dropping.dropped == 1  # a drop_deltas subscriber still loses deltas, never boundaries
    with pytest.raises(anyio.EndOfStream):
        await dropping.receive()


async def test_a_terminal_publish_cut_short_in_an_async_callback_still_ends_the_bus() -> None:
    bus = EventBus("r")
    events = bus.subscribe()
    in_callback = anyio.Event()

    async def hangs(_event: Event) -> None:
        in_callback.set()
        await anyio.sleep_forever()

    bus.on(RunFinished, hangs)
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, finished())
        await in_callback.wait()
        group.cancel_scope.cancel()
    assert bus.closed
    assert [type(e) async for e in events] == [RunFinished]


async def test_a_terminal_publish_cut_in_an_async_callback_still_reaches_the_callbacks_after_it() -> None:
    # A tracer ending its spans on the terminal event must get it even when a slow callback ahead of it made
    # the run's ending give up waiting; an async callback after it can no longer be awaited.
    bus = EventBus("r")
    in_callback = anyio.Event()

    async def hangs(_event: Event) -> None:
        in_callback.set()
        await anyio.sleep_forever()

    later: list[Event] = []

    async def later_async(_event: Event) -> None:
        raise AssertionError("not to be awaited after the close")

    bus.on(RunFinished, hangs)
    bus.on(RunFinished, later.append)
    bus.on(RunFinished, later_async)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        async with anyio.create_task_group() as group:
            group.start_soon(bus.publish, finished())
            await in_callback.wait()
            group.cancel_scope.cancel()
        gc.collect()
    assert bus.closed
    assert [type(e) for e in later] == [RunFinished]
    assert [f.callback for f in bus.callback_failures] == [hangs.__qualname__, later_async.__qualname__]


async def test_a_slow_subscriber_slows_publish_by_default() -> None:
    bus = EventBus("r")
    published = 0
    async with bus.subscribe(TextDelta, buffer=1) as events:

        async def producer() -> None:
            nonlocal published
            for i in range(3):
                await bus.publish(TextDelta(str(i)))
                published += 1

        async with anyio.create_task_group() as group:
            group.start_soon(producer)
            await anyio.wait_all_tasks_blocked()
            assert published == 1  # one event fits the buffer; the second waits for the consumer
            assert (await events.receive()).text == "0"
            await anyio.wait_all_tasks_blocked()
            assert published == 2
            assert [(await events.receive()).text for _ in range(2)] == ["1", "2"]
        assert published == 3


async def test_drop_deltas_drops_only_deltas_and_counts_them() -> None:
    bus = EventBus("r")
    async with bus.subscribe(buffer=1, policy="drop_deltas") as events:
        await bus.publish(TextDelta("kept"))
        for delta in (
            TextDelta("x"),
            ReasoningDelta("y"),
            ToolCallArgumentsDelta(0, "{"),
            ToolProgress("c", "t", "m"),
        ):
            await bus.publish(delta)  # buffer full: dropped, publish does not wait
        assert events.dropped == 4

        boundary_published = anyio.Event()

        async def publish_boundary() -> None:
            await bus.publish(StepFinished())
            await bus.publish(finished())
            boundary_published.set()

        async with anyio.create_task_group() as group:
            group.start_soon(publish_boundary)
            await anyio.wait_all_tasks_blocked()
            assert not boundary_published.is_set()  # boundaries wait, never dropped
            received = [type(e) async for e in events]
        assert received == [TextDelta, StepFinished, RunFinished]


def test_delta_types_are_the_streaming_fragments() -> None:
    assert set(DELTA_TYPES) >= {TextDelta, ReasoningDelta, ToolCallArgumentsDelta, ToolProgress}
    assert StepStarted not in DELTA_TYPES
    assert RunFinished not in DELTA_TYPES


async def test_concurrent_publishers_reach_each_subscriber_in_seq_order() -> None:
    bus = EventBus("r")
    async with bus.subscribe(buffer=0) as events:

        async def producer(name: str) -> None:
            for i in range(20):
                await bus.publish(TextDelta(f"{name}{i}"))

        seqs: list[int] = []
        async with anyio.create_task_group() as group:
            group.start_soon(producer, "a")
            group.start_soon(producer, "b")
            group.start_soon(producer, "c")
            for _ in range(60):
                seqs.append((await events.receive()).seq)
                if len(seqs) % 7 == 0:
                    await anyio.lowlevel.checkpoint()
        assert seqs == sorted(seqs) == list(range(1, 61))


async def test_sync_and_async_callbacks_receive_their_events() -> None:
    bus = EventBus("r")
    sync_seen: list[Event] = []
    async_seen: list[Event] = []

    async def on_step(event: Event) -> None:
        await anyio.lowlevel.checkpoint()
        async_seen.append(event)

    bus.on((TextDelta,), sync_seen.append)
    bus.on(StepStarted, on_step)
    await bus.publish(TextDelta("a"))
    await bus.publish(StepStarted())
    assert [e.seq for e in sync_seen] == [1]
    assert [e.seq for e in async_seen] == [2]  # awaited before publish returned


async def test_unsubscribing_a_callback_stops_it() -> None:
    bus = EventBus("r")
    seen: list[Event] = []
    unsubscribe = bus.on(None, seen.append)
    await bus.publish(TextDelta("a"))
    unsubscribe()
    unsubscribe()  # idempotent
    await bus.publish(TextDelta("b"))
    assert len(seen) == 1


async def test_a_failing_callback_is_logged_recorded_and_isolated(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus("run-9")
    seen: list[Event] = []

    def broken(event: Event) -> None:
        raise ValueError("callback bug")

    async def broken_async(event: Event) -> None:
        raise KeyError("async bug")

    bus.on(None, broken)
    bus.on(None, broken_async)
    bus.on(None, seen.append)
    with caplog.at_level(logging.ERROR, logger="agentflow"):
        await bus.publish(TextDelta("a"))
        await bus.publish(finished())
    assert [type(e) for e in seen] == [TextDelta, RunFinished]  # later callbacks still ran, run went on
    assert bus.failed_callbacks == 4
    assert [(f.event_type, f.seq, type(f.error)) for f in bus.callback_failures][:2] == [
        ("TextDelta", 1, ValueError),
        ("TextDelta", 1, KeyError),
    ]
    assert "broken" in caplog.text
    assert "run-9" in caplog.text


async def test_a_subscriber_that_left_is_removed_and_never_blocks_the_run() -> None:
    bus = EventBus("r")
    async with bus.subscribe(TextDelta, buffer=0) as events, anyio.create_task_group() as group:
        group.start_soon(bus.publish, TextDelta("a"))
        assert (await events.receive()).text == "a"
    # The consumer left its ``async with``; a zero-buffer subscription would otherwise block forever.
    with anyio.fail_after(5):
        for i in range(10):
            await bus.publish(TextDelta(str(i)))


async def test_breaking_out_of_iteration_inside_async_with_releases_the_bus() -> None:
    bus = EventBus("r")

    async def consume() -> None:
        async with bus.subscribe(buffer=0) as events:
            async for _ in events:
                break

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        await anyio.wait_all_tasks_blocked()
        await bus.publish(TextDelta("first"))
    with anyio.fail_after(5):
        await bus.publish(TextDelta("second"))


async def test_breaking_out_of_a_plain_async_for_closes_the_subscription() -> None:
    bus = EventBus("r")
    events = bus.subscribe(buffer=0)

    async def consume() -> None:
        async for _ in events:
            break  # no ``async with``: leaving the loop still releases the bus

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        await anyio.wait_all_tasks_blocked()
        await bus.publish(TextDelta("first"))
    with anyio.fail_after(5):
        for i in range(3):
            await bus.publish(TextDelta(str(i)))
    assert [e async for e in events] == []


async def test_a_cancelled_consumer_releases_the_bus() -> None:
    bus = EventBus("r")
    events = bus.subscribe(buffer=0)

    async def consume() -> None:
        async for _ in events:
            pass

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        await anyio.wait_all_tasks_blocked()
        group.cancel_scope.cancel()
    with anyio.fail_after(5):
        await bus.publish(TextDelta("nobody reads this"))


async def test_cancelling_a_blocked_publish_leaves_the_bus_usable() -> None:
    bus = EventBus("r")
    events = bus.subscribe(buffer=0)
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, TextDelta("never read"))
        await anyio.wait_all_tasks_blocked()
        group.cancel_scope.cancel()
    events.close()
    with anyio.fail_after(5):
        assert (await bus.publish(TextDelta("next"))).seq == 2


async def test_a_forgotten_subscription_does_not_warn() -> None:
    bus = EventBus("r")
    bus.subscribe()
    await bus.publish(finished())
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        gc.collect()


def test_subscribe_rejects_unbounded_or_odd_arguments() -> None:
    bus = EventBus("r")
    for bad in (-1, float("inf"), True, 1.5):
        with pytest.raises(ValueError, match="buffer"):
            bus.subscribe(buffer=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="policy"):
        bus.subscribe(policy="latest")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="Event subclasses"):
        bus.subscribe((str,))  # type: ignore[type-var]


async def test_publish_without_subscribers_only_stamps() -> None:
    bus = EventBus("r")
    events: list[Any] = [await bus.publish(TextDelta(str(i))) for i in range(3)]
    assert [e.seq for e in events] == [1, 2, 3]


# -- a delivery a cancel cuts short ------------------------------------------------------------------------


def seqs(events: list[Event]) -> list[int]:
    return [event.seq for event in events]


async def test_a_cancel_while_an_async_callback_runs_owes_the_event_to_the_subscribers_after_it() -> None:
    bus = EventBus("r")
    in_callback = anyio.Event()

    async def slow(event: Event) -> None:
        if isinstance(event, TextDelta) and event.text == "cut":
            in_callback.set()
            await anyio.sleep_forever()

    bus.on(None, slow)  # ahead of the subscriptions: they are the ones a cut would leave without the event
    first, second = bus.subscribe(), bus.subscribe(buffer=0)
    called: list[Event] = []
    bus.on(None, called.append)
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, TextDelta("cut"))
        await in_callback.wait()
        group.cancel_scope.cancel()
    assert bus.seq == 1
    with anyio.fail_after(5):  # a hang guard
        bus.begin_ending()  # the run ends: the subscriptions get the owed event at once, without waiting
        assert (await first.receive()).seq == 1
        await bus.publish(finished())  # the callback gets it first thing, before the terminal event
        assert seqs([e async for e in first]) == [2]
        assert seqs([e async for e in second]) == [1, 2]  # held for it: nobody was reading
    assert seqs(called) == [1, 2]


async def test_a_cancel_while_a_full_subscription_waits_owes_it_the_event_the_next_publish_pays() -> None:
    bus = EventBus("r")
    full = bus.subscribe(buffer=1)
    later = bus.subscribe()
    await bus.publish(TextDelta("fills the buffer"))
    limit = anyio.CancelScope()  # a local limit (a tool's time limit, say): the run goes on after it

    async def publish_within_the_limit() -> None:
        with limit:
            await bus.publish(StepStarted())

    async with anyio.create_task_group() as group:
        group.start_soon(publish_within_the_limit)
        await anyio.wait_all_tasks_blocked()
        limit.cancel()
    # The cut publish reached neither the full subscription nor the one after it; the next publish pays it
    # first, so both see every event once, in seq order.
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(bus.publish, StepFinished())
            assert seqs([await full.receive() for _ in range(3)]) == [1, 2, 3]
        await bus.publish(finished())
    assert seqs([e async for e in full]) == [4]
    assert seqs([e async for e in later]) == [1, 2, 3, 4]


@pytest.mark.parametrize("begin_ending", [True, False], ids=["ending-begun", "terminal-only"])
@pytest.mark.parametrize("buffer", [1, 0], ids=["buffered", "unbuffered"])
async def test_a_subscription_owed_an_event_gets_it_held_when_the_run_ends_without_reading(
    buffer: int, begin_ending: bool
) -> None:
    bus = EventBus("r")
    stalled = bus.subscribe(buffer=buffer)
    for _ in range(buffer):
        await bus.publish(TextDelta("fills the buffer"))
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, ToolStarted(ToolCall("c1", "search", "{}")))
        await anyio.wait_all_tasks_blocked()
        group.cancel_scope.cancel()
    with anyio.fail_after(5):  # nothing here waits for the subscriber that stopped reading
        if begin_ending:
            bus.begin_ending()
        await bus.publish(RunCancelled(AgentResult("r", "", StopReason.CANCELLED)))
    received = [e async for e in stalled]
    assert seqs(received) == list(range(1, buffer + 3))
    assert [type(e) for e in received] == [TextDelta, ToolStarted, RunCancelled][1 - buffer :]


async def test_a_publish_cancelled_while_it_queues_is_still_published_after_the_one_ahead() -> None:
    bus = EventBus("r")
    release = anyio.Event()

    async def slow(event: Event) -> None:
        if isinstance(event, StepStarted):
            await release.wait()

    bus.on(None, slow)
    events = bus.subscribe()
    queued = anyio.CancelScope()

    async def publish_queued() -> None:
        with queued:
            await bus.publish(TextDelta("queued"))

    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, StepStarted())
        await anyio.wait_all_tasks_blocked()
        group.start_soon(publish_queued)
        await anyio.wait_all_tasks_blocked()
        queued.cancel()  # the caller gives up waiting; the event is published all the same, in its turn
        await anyio.wait_all_tasks_blocked()
        release.set()
    await bus.publish(finished())
    assert [type(e) async for e in events] == [StepStarted, TextDelta, RunFinished]
    assert bus.seq == 3


async def test_a_publish_cut_while_it_pays_what_is_owed_is_still_published_after_it() -> None:
    bus = EventBus("r")
    full = bus.subscribe(buffer=1)
    await bus.publish(TextDelta("fills the buffer"))
    for event in (StepStarted(), StepFinished()):  # the second is cut paying the first to ``full``
        async with anyio.create_task_group() as group:
            group.start_soon(bus.publish, event)
            await anyio.wait_all_tasks_blocked()
            group.cancel_scope.cancel()
    assert bus.seq == 3
    with anyio.fail_after(5):
        await bus.publish(finished())
    assert [type(e) async for e in full] == [TextDelta, StepStarted, StepFinished, RunFinished]


@pytest.mark.parametrize("buffer", [0, 1])
async def test_an_event_the_consumer_took_just_before_the_cut_is_not_delivered_twice(buffer: int) -> None:
    bus = EventBus("r")
    events = bus.subscribe(buffer=buffer)
    if buffer:
        await bus.publish(TextDelta("fills the buffer"))
    publishing = anyio.CancelScope()

    async def publish_one() -> None:
        with publishing:
            await bus.publish(StepStarted())

    got: list[Event] = []
    async with anyio.create_task_group() as group:
        group.start_soon(publish_one)
        await anyio.wait_all_tasks_blocked()
        # The user presses Stop and the consumer reads on before the publishing task runs again: it takes
        # the waiting event, then the cancel lands on the publish.
        publishing.cancel()
        for _ in range(buffer + 1):
            got.append(await events.__anext__())
    await bus.publish(finished())
    got.extend([e async for e in events])
    assert seqs(got) == list(range(1, buffer + 3))


async def test_the_terminal_event_reaches_the_subscriptions_behind_a_callback_cut_short() -> None:
    bus = EventBus("r")
    in_callback = anyio.Event()

    async def hangs(_event: Event) -> None:
        in_callback.set()
        await anyio.sleep_forever()

    bus.on(RunFinished, hangs)
    events = bus.subscribe()
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, finished())
        await in_callback.wait()
        group.cancel_scope.cancel()  # the ending's time limit, say
    assert bus.closed
    assert [type(e) async for e in events] == [RunFinished]


async def test_closing_the_bus_hands_a_waiting_publish_to_the_subscription() -> None:
    bus = EventBus("r")
    events = bus.subscribe(buffer=1)
    await bus.publish(TextDelta("a"))
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, TextDelta("b"))
        await anyio.wait_all_tasks_blocked()
        await bus.close()
    assert [e.text async for e in events if isinstance(e, TextDelta)] == ["a", "b"]


async def test_a_publish_waiting_on_a_subscription_its_consumer_closes_goes_on() -> None:
    bus = EventBus("r")
    events = bus.subscribe(buffer=1)
    seen: list[Event] = []
    bus.on(None, seen.append)
    await bus.publish(TextDelta("a"))
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, TextDelta("b"))
        await anyio.wait_all_tasks_blocked()
        events.close()
    assert seqs(seen) == [1, 2]
    with anyio.fail_after(5):
        assert (await bus.publish(TextDelta("c"))).seq == 3
    assert seqs(seen) == [1, 2, 3]


# -- callbacks that publish, event type unions ---------------------------------------------------------------


@attrs.frozen
class Note(RunEvent):
    text: str


async def test_a_callback_publishing_on_its_own_bus_gets_a_clear_error_and_the_run_goes_on() -> None:
    bus = EventBus("r")
    events = bus.subscribe()

    async def async_publisher(event: Event) -> None:
        await bus.publish(Note("from an async callback"))

    bus.on(StepStarted, async_publisher)
    bus.on(StepFinished, lambda event: bus.publish(Note("from a sync one")))  # its coroutine is awaited
    await bus.publish(StepStarted())
    await bus.publish(StepFinished())
    await bus.publish(finished())
    assert [type(e) async for e in events] == [StepStarted, StepFinished, RunFinished]
    assert [f.event_type for f in bus.callback_failures] == ["StepStarted", "StepFinished"]
    for failure in bus.callback_failures:
        assert isinstance(failure.error, RuntimeError)
        assert "must not publish on the bus that calls it" in str(failure.error)
        assert "'Events of your own' in docs/events.md" in str(failure.error)


async def test_a_callback_may_have_another_task_publish_after_the_event_it_handles() -> None:
    bus = EventBus("r")
    events = bus.subscribe()
    async with anyio.create_task_group() as group:

        def add_note(event: Event) -> None:  # returns None: the bus awaits what a callback returns
            group.start_soon(bus.publish, Note("after it"))

        bus.on(StepStarted, add_note)
        await bus.publish(StepStarted())
    await bus.publish(finished())
    assert [type(e) async for e in events] == [StepStarted, Note, RunFinished]


async def test_event_types_may_be_unions_of_event_classes() -> None:
    bus = EventBus("r")
    terminal = bus.subscribe(TerminalEvent)
    mixed = bus.subscribe((TextDelta, StepStarted | StepFinished))
    # The old spelling works too (at run time: to a type checker it is a special form, not a UnionType).
    typed = bus.subscribe(typing.Union[TextDelta, RunFinished])  # type: ignore[call-overload]  # noqa: UP007
    called: list[Event] = []
    bus.on(TerminalEvent, called.append)
    for event in (TextDelta("a"), StepStarted(), ToolStarted(ToolCall("c", "t", "{}")), StepFinished()):
        await bus.publish(event)
    await bus.publish(finished())
    assert [type(e) async for e in terminal] == [RunFinished]
    assert [type(e) async for e in mixed] == [TextDelta, StepStarted, StepFinished]
    assert [type(e) async for e in typed] == [TextDelta, RunFinished]
    assert [type(e) for e in called] == [RunFinished]


@pytest.mark.parametrize(
    ("types", "message"),
    [
        ("run_finished", "not a string"),
        (("run_finished",), "got 'run_finished'"),
        (str, "got <class 'str'>"),
        (TextDelta | str, "got <class 'str'> \\(in "),
        (typing.Optional[TextDelta], "NoneType"),  # noqa: UP045
        (42, "got 42"),
    ],
)
def test_bad_event_types_are_refused_when_subscribing_or_registering(types: Any, message: str) -> None:
    bus = EventBus("r")
    with pytest.raises(TypeError, match=message):
        bus.subscribe(types)
    with pytest.raises(TypeError, match=message):
        bus.on(types, print)
    assert not bus.has_listeners()


def test_a_callback_must_be_callable() -> None:
    with pytest.raises(TypeError, match="callback must be callable"):
        EventBus("r").on(None, "print")  # type: ignore[arg-type]


# -- the ending and a delivery parked for a consumer ---------------------------------------------------------


@pytest.mark.parametrize("begin_ending", [True, False], ids=["ending-begun", "terminal-only"])
@pytest.mark.parametrize("buffer", [1, 0], ids=["buffered", "unbuffered"])
async def test_the_ending_does_not_wait_on_a_delivery_parked_for_a_consumer_that_stopped_reading(
    buffer: int, begin_ending: bool
) -> None:
    # A publish from a task of its own waits for room in a consumer that stopped reading; the run then ends.
    # Its terminal publish must neither wait for that consumer nor be lost.
    bus = EventBus("r")
    stalled = bus.subscribe(buffer=buffer)
    for _ in range(buffer):
        await bus.publish(TextDelta("fills the buffer"))
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, TextDelta("parked"))  # the consumer reads nothing
        await anyio.wait_all_tasks_blocked()
        if begin_ending:
            bus.begin_ending()
        with anyio.fail_after(1):
            await bus.publish(finished())
    assert bus.closed
    seen = [event async for event in stalled]
    expected = [*(["TextDelta"] * buffer), "TextDelta", "RunFinished"]
    assert [type(e).__name__ for e in seen] == expected
    assert seqs(seen) == list(range(1, buffer + 3))


async def test_the_ending_releases_an_unbuffered_delivery_caught_before_its_send_waits() -> None:
    bus = EventBus("r")
    stalled = bus.subscribe(buffer=0)
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, TextDelta("parked"))
        # One pass of the event loop: the publish has parked the event and yields on its way into the
        # send, not yet waiting there, when the run ends.
        await anyio.lowlevel.checkpoint()
        bus.begin_ending()
        with anyio.fail_after(1):
            await bus.publish(finished())
    assert [(type(e).__name__, e.seq) async for e in stalled] == [("TextDelta", 1), ("RunFinished", 2)]


@pytest.mark.parametrize("buffer", [1, 0], ids=["buffered", "unbuffered"])
async def test_a_consumer_that_reads_on_as_the_ending_releases_its_delivery_gets_each_event_once(
    buffer: int,
) -> None:
    bus = EventBus("r")
    events = bus.subscribe(buffer=buffer)
    for _ in range(buffer):
        await bus.publish(TextDelta("fills the buffer"))
    got: list[Event] = []
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, TextDelta("parked"))
        await anyio.wait_all_tasks_blocked()
        bus.begin_ending()
        # The consumer reads on before the released publish runs again: without a buffer it takes the
        # parked event itself (with one, the buffered event; the parked one is then held for it).
        got.append(await events.__anext__())
        with anyio.fail_after(1):
            await bus.publish(finished())
    got.extend([e async for e in events])
    assert seqs(got) == list(range(1, buffer + 3))
    assert isinstance(got[-1], RunFinished)


@pytest.mark.parametrize("buffer", [1, 0], ids=["buffered", "unbuffered"])
async def test_a_consumer_still_reading_gets_every_event_of_the_ending_in_order(buffer: int) -> None:
    bus = EventBus("r")
    got: list[Event] = []

    async def consume() -> None:
        async with bus.subscribe(buffer=buffer) as events:
            async for event in events:
                got.append(event)
                await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        await anyio.wait_all_tasks_blocked()
        for i in range(3):
            await bus.publish(TextDelta(str(i)))
        bus.begin_ending()
        await bus.publish(ToolStarted(ToolCall("c1", "search", "{}")))
        with anyio.fail_after(1):
            await bus.publish(finished())
    assert seqs(got) == [1, 2, 3, 4, 5]
    assert isinstance(got[-1], RunFinished)


@pytest.mark.parametrize("buffer", [1, 0], ids=["buffered", "unbuffered"])
async def test_a_delivery_parked_at_the_close_keeps_its_place_before_newer_events(buffer: int) -> None:
    bus = EventBus("r")
    stalled = bus.subscribe(buffer=buffer)
    for _ in range(buffer):
        await bus.publish(TextDelta("fills the buffer"))
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, TextDelta("parked"))
        await anyio.wait_all_tasks_blocked()
        with anyio.move_on_after(0.05):
            await bus.publish(TextDelta("queued"))  # queued behind it, then cut: still published, after it
        await bus.close()
    assert seqs([event async for event in stalled]) == list(range(1, buffer + 3))


# -- closing the bus after a cancel cut a delivery short -----------------------------------------------------


def first_a_callback_that_hangs_on_cut(bus: EventBus) -> anyio.Event:
    """Register, ahead of the sinks registered after it, a callback that hangs on ``TextDelta("cut")``; the
    event is set once it runs."""
    in_callback = anyio.Event()

    async def slow(event: Event) -> None:
        if isinstance(event, TextDelta) and event.text == "cut":
            in_callback.set()
            await anyio.sleep_forever()

    bus.on(None, slow)
    return in_callback


async def publish_cut_short(bus: EventBus, in_callback: anyio.Event) -> None:
    """Publish ``TextDelta("cut")``; a cancel cuts its delivery while the hanging callback runs."""
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, TextDelta("cut"))
        await in_callback.wait()
        group.cancel_scope.cancel()


async def test_closing_the_bus_hands_an_event_cut_short_to_the_callbacks_owed_it() -> None:
    bus = EventBus("r")
    in_callback = first_a_callback_that_hangs_on_cut(bus)
    events = bus.subscribe()
    called: list[Event] = []
    awaited: list[Event] = []

    async def record(event: Event) -> None:
        await anyio.lowlevel.checkpoint()
        awaited.append(event)

    bus.on(None, called.append)
    bus.on(None, record)
    await publish_cut_short(bus, in_callback)
    await bus.close()
    assert seqs(called) == seqs(awaited) == [1]  # subscriptions always got it; now the callbacks do too
    assert seqs([e async for e in events]) == [1]
    assert bus.closed


async def test_a_close_in_a_cancelled_task_still_hands_the_callbacks_what_they_are_owed() -> None:
    bus = EventBus("r")
    in_callback = first_a_callback_that_hangs_on_cut(bus)
    awaited: list[Event] = []

    async def record(event: Event) -> None:
        await anyio.lowlevel.checkpoint()
        awaited.append(event)

    bus.on(None, record)
    await publish_cut_short(bus, in_callback)
    with anyio.CancelScope() as scope:
        scope.cancel()  # clean-up after a cancel: the close runs shielded, as a run's ending does
        await bus.close()
    assert seqs(awaited) == [1]
    assert bus.closed
    assert bus.failed_callbacks == 0


async def test_closing_the_bus_waits_for_a_callback_owed_an_event_only_so_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bus_module, "_CLOSE_WAITS_FOR_CALLBACKS", 0.05)
    bus = EventBus("r")
    in_callback = first_a_callback_that_hangs_on_cut(bus)
    events = bus.subscribe()

    async def hangs(_event: Event) -> None:
        await anyio.sleep_forever()

    bus.on(None, hangs)
    later: list[Event] = []
    bus.on(None, later.append)
    await publish_cut_short(bus, in_callback)
    with anyio.fail_after(5):  # a hang guard
        await bus.close()
    assert bus.closed
    assert seqs(later) == [1]  # the callback after the hanging one still got it, once the wait was cut
    assert [f.callback for f in bus.callback_failures] == [hangs.__qualname__]
    assert seqs([e async for e in events]) == [1]
