"""The per-run event bus: stamping, typed subscriptions, backpressure, drop-deltas, ends, isolation."""

from __future__ import annotations

import gc
import logging
import warnings
from typing import Any

import anyio
import anyio.lowlevel
import orjson
import pytest

from agentflow.bus import DELTA_TYPES, BusClosedError, EventBus
from agentflow.events import (
    RunCancelled,
    RunEvent,
    RunFailed,
    RunFinished,
    StepFinished,
    StepStarted,
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


async def test_the_terminal_event_never_waits_and_reaches_a_subscriber_that_stopped_reading() -> None:
    bus = EventBus("r")
    stalled = bus.subscribe(buffer=1)
    await bus.publish(TextDelta("fills the buffer"))
    # Nobody reads: publishing the terminal event must still return at once (no task group, no timeout).
    terminal = await bus.publish(finished())
    assert bus.closed
    received = [e async for e in stalled]  # read later: the buffered event, then the terminal event, last
    assert [type(e) for e in received] == [TextDelta, RunFinished]
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
