"""``policy="coalesce_deltas"``: deltas that find a subscriber's buffer full merge per stream, never lost.

A merged delta carries the stamps of its last piece, comes out as soon as the buffer has room and before any
later event (a boundary waits behind it), so each stream's text, joined, is exactly what a backpressure
subscriber gets, whatever the schedule, also when the run ends or is cancelled meanwhile.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Hashable, Sequence
from contextlib import aclosing

import anyio
import anyio.lowlevel
import orjson
import pytest

from agentflow.agent.agent import Agent
from agentflow.bus import EventBus, check_subscription_options
from agentflow.events import (
    CodeOutput,
    ModelRequest,
    RunCancelled,
    RunFinished,
    StepFinished,
    StepStarted,
    ToolProgress,
)
from agentflow.http.sse import SseDecoder
from agentflow.model.events import (
    Event,
    ModelCompleted,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallArgumentsDelta,
)
from agentflow.result import AgentResult, StopReason
from agentflow.sse import sse_stream
from agentflow.subscription import MERGEABLE_TYPES, CoalescingSubscription
from agentflow.testing.fake import FakeModelClient, reply


def finished() -> RunFinished:
    return RunFinished(AgentResult("r", "done", StopReason.FINAL_ANSWER))


def cancelled() -> RunCancelled:
    return RunCancelled(AgentResult("r", "", StopReason.CANCELLED))


def stream_of(event: Event) -> Hashable:
    """What a test calls one stream: the pieces of text that join into one whole."""
    if isinstance(event, ToolCallArgumentsDelta):
        return (type(event), event.step, event.index)
    if isinstance(event, CodeOutput):
        return (type(event), event.step, event.stream)
    return (type(event), event.step)


def piece(event: Event) -> str:
    text: str = event.delta if isinstance(event, ToolCallArgumentsDelta) else event.text  # type: ignore[attr-defined]
    return text


def texts(events: Sequence[Event]) -> dict[Hashable, str]:
    joined: dict[Hashable, str] = {}
    for event in events:
        if isinstance(event, MERGEABLE_TYPES):
            joined[stream_of(event)] = joined.get(stream_of(event), "") + piece(event)
    return joined


async def publish_all(bus: EventBus, events: Sequence[Event]) -> None:
    for event in events:
        await bus.publish(event)


# -- merging -------------------------------------------------------------------------------------------------


async def test_subscribe_gives_a_coalescing_subscription_and_refuses_it_without_a_buffer() -> None:
    bus = EventBus("r")
    assert isinstance(bus.subscribe(policy="coalesce_deltas"), CoalescingSubscription)
    assert type(bus.subscribe(policy="drop_deltas")) is not CoalescingSubscription
    assert bus.subscribe().coalesced == 0  # every subscription has the counter
    with pytest.raises(ValueError, match="needs buffer >= 1"):
        bus.subscribe(buffer=0, policy="coalesce_deltas")
    with pytest.raises(ValueError, match="coalesce_deltas"):
        check_subscription_options(4, "coalesce")  # type: ignore[arg-type]
    agent = Agent(FakeModelClient([]))
    with pytest.raises(ValueError, match="needs buffer >= 1"):
        agent.stream("x", buffer=0, policy="coalesce_deltas")


async def test_deltas_that_find_the_buffer_full_merge_per_stream_with_the_stamps_of_their_last_piece() -> (
    None
):
    bus = EventBus("r")
    bus.step = 2
    async with bus.subscribe(buffer=1, policy="coalesce_deltas") as events:
        await publish_all(
            bus,
            [
                TextDelta("He"),  # 1: buffered
                TextDelta("ll"),  # 2: buffer full: pending
                ReasoningDelta("thinking "),  # 3
                TextDelta("o"),  # 4: joins "ll", which moves behind the reasoning (its newest piece is newer)
                ReasoningDelta("hard"),  # 5: joins the reasoning: now newest again
                RefusalDelta("no"),  # 6
            ],
        )  # no publish waited: nobody reads yet
        assert events.coalesced == 2
        received = [await events.receive() for _ in range(4)]
    assert [(type(e), piece(e), e.seq) for e in received] == [
        (TextDelta, "He", 1),
        (TextDelta, "llo", 4),
        (ReasoningDelta, "thinking hard", 5),
        (RefusalDelta, "no", 6),
    ]
    assert {(e.run_id, e.step) for e in received} == {("r", 2)}


async def test_tool_arguments_merge_per_call_code_output_per_stream_and_progress_is_dropped() -> None:
    bus = EventBus("r")
    async with bus.subscribe(buffer=1, policy="coalesce_deltas") as events:
        await publish_all(
            bus,
            [
                StepStarted(),  # 1: buffered
                ToolCallArgumentsDelta(0, '{"q":'),  # 2
                ToolCallArgumentsDelta(1, '{"city":'),  # 3
                ToolCallArgumentsDelta(0, '"a"}'),  # 4
                ToolProgress("c1", "search", "halfway"),  # 5: cannot merge: dropped
                CodeOutput("stdout", "1\n"),  # 6
                CodeOutput("stderr", "warning\n"),  # 7
                CodeOutput("stdout", "2\n"),  # 8
                ToolCallArgumentsDelta(1, '"Paris"}'),  # 9
            ],
        )
        assert (events.coalesced, events.dropped) == (3, 1)
        received = [await events.receive() for _ in range(5)]
    assert [
        (type(e).__name__, piece(e) if isinstance(e, MERGEABLE_TYPES) else "", e.seq) for e in received
    ] == [
        ("StepStarted", "", 1),
        ("ToolCallArgumentsDelta", '{"q":"a"}', 4),
        ("CodeOutput", "warning\n", 7),
        ("CodeOutput", "1\n2\n", 8),
        ("ToolCallArgumentsDelta", '{"city":"Paris"}', 9),
    ]
    assert [e.index for e in received if isinstance(e, ToolCallArgumentsDelta)] == [0, 1]
    assert [e.stream for e in received if isinstance(e, CodeOutput)] == ["stderr", "stdout"]


async def test_deltas_of_different_steps_are_different_streams() -> None:
    bus = EventBus("r")
    async with bus.subscribe((TextDelta,), buffer=1, policy="coalesce_deltas") as events:
        await bus.publish(TextDelta("a"))
        await bus.publish(TextDelta("b"))
        await bus.publish(StepStarted())  # not subscribed to: only the step tells the streams apart
        bus.step = 1
        await bus.publish(TextDelta("c"))
        await bus.publish(TextDelta("d"))
        await bus.publish(finished())
        received = [e async for e in events]
    assert [(e.text, e.step) for e in received] == [("a", 0), ("b", 0), ("cd", 1)]


async def test_a_consumer_held_back_by_a_barrier_gets_the_merged_deltas_as_soon_as_it_reads() -> None:
    bus = EventBus("r")
    events = bus.subscribe(buffer=2, policy="coalesce_deltas")
    go = anyio.Event()
    received: list[Event] = []

    async def consume() -> None:
        await go.wait()  # a browser on a slow link: nothing read while the model streams
        async for event in events:
            received.append(event)

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        words = [f"w{i} " for i in range(100)]
        await publish_all(bus, [TextDelta(word) for word in words])  # never waits for the consumer
        assert events.coalesced == 97  # two fit the buffer; the other 98 became one delta
        go.set()
        await anyio.wait_all_tasks_blocked()
        # Read as soon as there was room, although nothing else was published (the model may stall).
        assert [piece(e) for e in received] == ["w0 ", "w1 ", "".join(words[2:])]
        assert received[-1].seq == 100
        await bus.publish(finished())
    assert [type(e) for e in received][-1] is RunFinished


# -- order ---------------------------------------------------------------------------------------------------


async def test_a_boundary_waits_behind_the_merged_deltas_and_is_delivered_right_after_them() -> None:
    bus = EventBus("r")
    async with bus.subscribe(buffer=2, policy="coalesce_deltas") as events:
        await publish_all(bus, [TextDelta("a"), TextDelta("b"), TextDelta("c"), TextDelta("d")])
        boundary_published = anyio.Event()

        async def publish_boundary() -> None:
            await bus.publish(StepFinished())
            boundary_published.set()

        async with anyio.create_task_group() as group:
            group.start_soon(publish_boundary)
            await anyio.wait_all_tasks_blocked()
            assert not boundary_published.is_set()  # backpressure: the boundary never overtakes the deltas
            first = await events.receive()
            await anyio.wait_all_tasks_blocked()
            assert not boundary_published.is_set()  # the merged deltas took the room first
            second = await events.receive()
            await anyio.wait_all_tasks_blocked()
            assert boundary_published.is_set()  # in the buffer now, right behind them
        received = [first, second, await events.receive(), await events.receive()]
    assert [(type(e), e.seq) for e in received] == [
        (TextDelta, 1),
        (TextDelta, 2),
        (TextDelta, 4),
        (StepFinished, 5),
    ]
    assert received[2].text == "cd"  # type: ignore[attr-defined]


async def test_with_room_in_the_buffer_no_delta_is_merged_and_the_other_policies_are_unchanged() -> None:
    bus = EventBus("r")
    coalescing = bus.subscribe(buffer=8, policy="coalesce_deltas")
    dropping = bus.subscribe(buffer=2, policy="drop_deltas")
    await publish_all(bus, [TextDelta("a"), TextDelta("b"), TextDelta("c"), finished()])
    assert [type(e) async for e in coalescing] == [TextDelta, TextDelta, TextDelta, RunFinished]
    assert (coalescing.coalesced, coalescing.dropped) == (0, 0)
    assert [e.seq async for e in dropping] == [1, 2, 4]
    assert (dropping.coalesced, dropping.dropped) == (0, 1)


# -- the exact text, whatever the schedule -------------------------------------------------------------------


def random_delta(rng: random.Random) -> Event:
    word = rng.choice(["al", "pha ", "β", "\n", "", '"x"', "{}", "ünï "])
    kind = rng.randrange(6)
    if kind == 0:
        return ReasoningDelta(word)
    if kind == 1:
        return RefusalDelta(word)
    if kind == 2:
        return ToolCallArgumentsDelta(rng.randrange(3), word)
    if kind == 3:
        return CodeOutput(rng.choice(["stdout", "stderr"]), word)
    if kind == 4:
        return ToolProgress("c1", "search", word)
    return TextDelta(word)


@pytest.mark.parametrize("seed", range(40))
async def test_each_streams_text_is_exactly_what_a_backpressure_subscriber_gets_whatever_the_schedule(
    seed: int,
) -> None:
    rng = random.Random(seed)
    bus = EventBus("r")
    published: list[Event] = []
    bus.on(None, published.append)  # every event, as published
    backpressure = bus.subscribe(buffer=rng.randrange(0, 4))
    coalescing = bus.subscribe(buffer=rng.randrange(1, 4), policy="coalesce_deltas")
    # Deltas only: no boundary separates the steps' texts for it, only the streams' keys do.
    deltas_only = bus.subscribe(MERGEABLE_TYPES, buffer=rng.randrange(1, 4), policy="coalesce_deltas")
    got: dict[str, list[Event]] = {"backpressure": [], "coalescing": [], "deltas_only": []}
    held: list[anyio.Event] = []
    may_hold = [True]  # false while a publish may wait for a coalescing consumer

    async def consume(name: str, events: AsyncIterator[Event], reader: random.Random) -> None:
        async for event in events:
            got[name].append(event)
            if name != "backpressure" and may_hold[0] and reader.random() < 0.05:
                held.append(resume := anyio.Event())
                await resume.wait()  # a stalled browser, let go before anything may wait for it
            for _ in range(reader.randrange(4)):
                await anyio.lowlevel.checkpoint()

    async def publish_boundary(event: Event) -> None:
        # Deltas never wait for the coalescing subscriber; a boundary may, so it is not held meanwhile.
        may_hold[0] = False
        while held:
            held.pop().set()
        await bus.publish(event)
        may_hold[0] = True

    async def produce() -> None:
        for _ in range(rng.randrange(50, 400)):
            roll = rng.random()
            if roll < 0.8:
                await bus.publish(random_delta(rng))
            elif roll < 0.9:
                if rng.random() < 0.3:
                    bus.step += 1
                    await publish_boundary(StepStarted())
                else:
                    await publish_boundary(rng.choice([StepFinished(), ModelRequest("m", 1)]))
            else:
                for _ in range(rng.randrange(3)):
                    await anyio.lowlevel.checkpoint()
        if rng.random() < 0.5:
            bus.begin_ending()  # the last events, which never wait (a cancelled run's clean-up)
            for _ in range(rng.randrange(12)):
                await bus.publish(random_delta(rng) if rng.random() < 0.7 else StepFinished())
        await publish_boundary(rng.choice([finished(), cancelled()]))
        may_hold[0] = False
        while held:
            held.pop().set()

    async with anyio.create_task_group() as group:
        group.start_soon(consume, "backpressure", backpressure, random.Random(seed * 3))
        group.start_soon(consume, "coalescing", coalescing, random.Random(seed * 3 + 1))
        group.start_soon(consume, "deltas_only", deltas_only, random.Random(seed * 3 + 2))
        group.start_soon(produce)

    received = got["coalescing"]
    assert got["backpressure"] == published  # the reference: every event, once, in order
    seqs = [e.seq for e in received]
    assert seqs == sorted(set(seqs))  # seq still rises: a gap shows a merge (or a dropped progress)
    assert isinstance(received[-1], (RunFinished, RunCancelled))
    # Boundaries are never dropped nor reordered, and at each of them every stream's text so far is exactly
    # the reference's: no delta is merged across a boundary.
    reference_before: dict[int, dict[Hashable, str]] = {}
    for i, event in enumerate(published):
        if not isinstance(event, (*MERGEABLE_TYPES, ToolProgress)):
            reference_before[event.seq] = texts(published[:i])
    boundaries = [e for e in received if not isinstance(e, (*MERGEABLE_TYPES, ToolProgress))]
    assert [e.seq for e in boundaries] == list(reference_before)
    for i, event in enumerate(received):
        if event.seq in reference_before:
            assert texts(received[:i]) == reference_before[event.seq], f"seed {seed}, before seq {event.seq}"
    assert texts(received) == texts(got["deltas_only"]) == texts(got["backpressure"])
    assert [e.seq for e in got["deltas_only"]] == sorted({e.seq for e in got["deltas_only"]})
    # A merged delta is its stream's, with the stamps of its last piece.
    by_seq = {e.seq: e for e in published}
    for event in received + got["deltas_only"]:
        if isinstance(event, MERGEABLE_TYPES):
            last = by_seq[event.seq]
            assert (type(last), stream_of(last), last.run_id) == (type(event), stream_of(event), event.run_id)
    # The counters account for every delta.
    mergeable = [e for e in published if isinstance(e, MERGEABLE_TYPES)]
    delivered = [e for e in received if isinstance(e, MERGEABLE_TYPES)]
    assert len(delivered) + coalescing.coalesced == len(mergeable)
    progress = [e for e in published if isinstance(e, ToolProgress)]
    assert len(progress) - coalescing.dropped == sum(isinstance(e, ToolProgress) for e in received)


# -- the ending ----------------------------------------------------------------------------------------------


async def test_the_terminal_event_never_waits_and_comes_after_the_pending_deltas() -> None:
    bus = EventBus("r")
    events = bus.subscribe(buffer=1, policy="coalesce_deltas")
    await publish_all(bus, [TextDelta("a"), TextDelta("b"), TextDelta("c"), finished()])  # nobody reads
    assert bus.closed
    assert [(type(e), e.seq) for e in [e async for e in events]] == [
        (TextDelta, 1),
        (TextDelta, 3),
        (RunFinished, 4),
    ]


async def test_a_boundary_waiting_behind_pending_deltas_when_the_run_ends_keeps_its_place() -> None:
    bus = EventBus("r")
    events = bus.subscribe(buffer=1, policy="coalesce_deltas")
    await publish_all(bus, [TextDelta("a"), TextDelta("b"), TextDelta("c")])
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, StepFinished())
        await anyio.wait_all_tasks_blocked()  # it waits for the consumer, behind "bc"
        bus.begin_ending()  # the run is ending: that publish stops waiting (its event is held)
    # From here on everything is held behind that boundary, in publish order: nothing is merged across it.
    await publish_all(bus, [ToolProgress("c1", "t", "late"), TextDelta("d"), StepFinished(), cancelled()])
    received = [e async for e in events]
    assert [(type(e).__name__, getattr(e, "text", ""), e.seq) for e in received] == [
        ("TextDelta", "a", 1),
        ("TextDelta", "bc", 3),
        ("StepFinished", "", 4),
        ("ToolProgress", "", 5),
        ("TextDelta", "d", 6),
        ("StepFinished", "", 7),
        ("RunCancelled", "", 8),
    ]
    assert (events.coalesced, events.dropped) == (1, 0)


async def test_deltas_pending_when_the_ending_begins_still_merge_and_come_before_the_held_events() -> None:
    bus = EventBus("r")
    events = bus.subscribe(buffer=1, policy="coalesce_deltas")
    await publish_all(bus, [TextDelta("a"), TextDelta("b")])
    bus.begin_ending()
    await publish_all(bus, [TextDelta("c"), ToolProgress("c1", "t", "m"), StepFinished(), TextDelta("d")])
    await bus.publish(finished())
    received = [e async for e in events]
    assert [(type(e).__name__, getattr(e, "text", ""), e.seq) for e in received] == [
        ("TextDelta", "a", 1),
        ("TextDelta", "bc", 3),
        ("StepFinished", "", 5),
        ("TextDelta", "d", 6),  # held after the boundary, as it is: nothing merges across a boundary
        ("RunFinished", "", 7),
    ]
    assert (events.coalesced, events.dropped) == (1, 1)


async def test_a_cancel_cutting_a_boundary_that_waits_behind_pending_deltas_loses_nothing() -> None:
    bus = EventBus("r")
    events = bus.subscribe(buffer=1, policy="coalesce_deltas")
    await publish_all(bus, [TextDelta("a"), TextDelta("b"), TextDelta("c")])
    async with anyio.create_task_group() as group:
        scope = anyio.CancelScope()

        async def publish_boundary() -> None:
            with scope:
                await bus.publish(StepFinished())

        group.start_soon(publish_boundary)
        await anyio.wait_all_tasks_blocked()
        scope.cancel()  # a tool's time limit, say: the boundary is owed to this subscriber
    await bus.publish(cancelled())
    received = [e async for e in events]
    assert [(type(e).__name__, getattr(e, "text", ""), e.seq) for e in received] == [
        ("TextDelta", "a", 1),
        ("TextDelta", "bc", 3),
        ("StepFinished", "", 4),
        ("RunCancelled", "", 5),
    ]


async def test_closing_with_pending_deltas_lets_a_waiting_boundary_go_and_ends_the_iteration() -> None:
    bus = EventBus("r")
    events = bus.subscribe(buffer=1, policy="coalesce_deltas")
    await publish_all(bus, [TextDelta("a"), TextDelta("b"), TextDelta("c")])
    async with anyio.create_task_group() as group:
        group.start_soon(bus.publish, StepFinished())
        await anyio.wait_all_tasks_blocked()
        events.close()  # the consumer walked away: the publish stops waiting for it
    await bus.publish(TextDelta("d"))
    await bus.publish(finished())
    assert [e async for e in events] == []


async def test_a_subscription_to_a_closed_bus_ends_at_once() -> None:
    bus = EventBus("r")
    await bus.publish(finished())
    assert [e async for e in bus.subscribe(policy="coalesce_deltas")] == []


# -- through the agent and SSE -------------------------------------------------------------------------------


ANSWER = "a long answer, streamed one character at a time"


async def test_agent_run_coalesced_counts_the_merges_and_the_text_is_all_there() -> None:
    agent = Agent(FakeModelClient([reply(ANSWER)], chunk_size=1))
    async with agent.stream("x", buffer=1, policy="coalesce_deltas") as run:
        assert run.coalesced == 0
        received: list[Event] = []
        async for event in run:
            received.append(event)
            await anyio.wait_all_tasks_blocked()  # a slow UI: the run fills the one-slot buffer meanwhile
    deltas = [e for e in received if isinstance(e, TextDelta)]
    assert "".join(e.text for e in deltas) == ANSWER
    assert run.coalesced == len(ANSWER) - len(deltas) > 0
    assert run.dropped == 0
    completed = next(i for i, e in enumerate(received) if isinstance(e, ModelCompleted))
    assert not any(isinstance(e, TextDelta) for e in received[completed:])  # none after its turn's end


async def test_a_cancelled_run_delivers_every_pending_delta_before_run_cancelled() -> None:
    parts = [f"part {i}. " for i in range(30)]

    async def stalls_mid_answer(_prompt: object) -> AsyncIterator[Event]:
        for part in parts:
            yield TextDelta(part)
        await anyio.Event().wait()  # the model stalls; the user presses Stop
        yield TextDelta("never")  # pragma: no cover

    agent = Agent(FakeModelClient([stalls_mid_answer]))
    async with agent.stream("x", buffer=2, policy="coalesce_deltas") as run:
        received = [await anext(aiter(run))]  # RunStarted, then nothing read while the model streams
        await anyio.wait_all_tasks_blocked()
        await run.cancel()
        received += [e async for e in run]
    assert isinstance(received[-1], RunCancelled)
    assert "".join(e.text for e in received if isinstance(e, TextDelta)) == "".join(parts)
    assert received[-1].partial.output_text == "".join(parts)
    assert run.coalesced > 0
    seqs = [e.seq for e in received]
    assert seqs == sorted(set(seqs))


async def test_an_sse_client_of_a_coalescing_run_gets_the_whole_text_in_fewer_frames() -> None:
    agent = Agent(FakeModelClient([reply(ANSWER)], chunk_size=1))
    frames: list[bytes] = []
    async with (
        agent.stream("x", buffer=1, policy="coalesce_deltas") as run,
        aclosing(sse_stream(run)) as stream,
    ):
        async for frame in stream:
            frames.append(frame)
            await anyio.wait_all_tasks_blocked()  # a slow link
    decoder = SseDecoder()
    sent = [orjson.loads(message.data) for frame in frames for message in decoder.feed(frame)]
    deltas = [e for e in sent if e["type"] == "text_delta"]
    assert "".join(e["text"] for e in deltas) == ANSWER
    assert 0 < len(deltas) < len(ANSWER)
    assert [e["seq"] for e in sent] == sorted({e["seq"] for e in sent})
    assert sent[-1]["type"] == "run_finished"
