"""A cancel that lands while the bus waits on one subscriber (a slow async callback, a full buffer) loses no
event for anyone: every subscriber still sees every event of the run once, in ``seq`` order, every tool call
that started also ended, and exactly one terminal event comes last.

Also the checks made where subscriptions are requested (``agent.on``, ``agent.stream``) and
``AgentRun.dropped``.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest
from runtime_support import TERMINAL, Recorder

from agentflow.agent.agent import Agent
from agentflow.events import (
    RunFinished,
    TerminalEvent,
    ToolCallRequested,
    ToolFailed,
    ToolStarted,
    ToolSucceeded,
)
from agentflow.model.events import Event, TextDelta
from agentflow.result import StopReason
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


@tool
async def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


def assert_whole(name: str, events: Sequence[Event]) -> None:
    """Every event of the run once, in seq order; every started call ended; one terminal event, last."""
    seqs = [e.seq for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), f"{name} got seqs {seqs}"
    terminals = [e for e in events if isinstance(e, TERMINAL)]
    assert len(terminals) == 1, f"{name} got {len(terminals)} terminal events"
    assert events[-1] is terminals[0], f"{name}: the terminal event is not last"
    started = [e.call.id for e in events if isinstance(e, ToolStarted)]
    ended = [e.call.id for e in events if isinstance(e, (ToolSucceeded, ToolFailed))]
    assert len(ended) == len(set(ended)), f"{name}: a call ended twice: {ended}"
    assert set(started) <= set(ended), f"{name}: calls started but never ended: {set(started) - set(ended)}"


async def test_a_cancel_while_a_slow_callback_handles_a_tool_result_still_reaches_every_subscriber() -> None:
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("lookup", {"q": "a"})]), reply("done")]), tools=[lookup]
    )
    writing = anyio.Event()
    audit: list[Event] = []

    async def audit_log(event: Event) -> None:  # a slow database insert: the user presses Stop meanwhile
        audit.append(event)
        if isinstance(event, ToolSucceeded):
            writing.set()
            await anyio.sleep_forever()

    ahead = Recorder(agent)
    agent.on(None, audit_log)
    behind = Recorder(agent)
    run = agent.stream("look it up")
    forwarder = run.bus.subscribe()  # a second consumer of the run (an SSE stream, say)
    late: list[Event] = []
    with anyio.fail_after(5):  # a hang guard
        async with run:
            run.bus.on(None, late.append)  # after the run's own subscription: last in the bus's order
            async with anyio.create_task_group() as group:

                async def press_stop() -> None:
                    await writing.wait()
                    await run.cancel()

                group.start_soon(press_stop)
                ui = [event async for event in run]

    assert run.result.stop_reason is StopReason.CANCELLED
    assert [r.output for r in run.result.tool_results] == ["result for a"]
    sinks = {
        "ui": ui,
        "forwarder": [event async for event in forwarder],
        "ahead": ahead.events,
        "audit": audit,
        "behind": behind.events,
        "late": late,
    }
    for name, events in sinks.items():
        assert_whole(name, events)
        assert [e.seq for e in events] == [e.seq for e in ui]
    assert any(isinstance(e, ToolSucceeded) for e in ui)


@pytest.mark.parametrize("reads_on_at_once", [False, True], ids=["consumer-yields", "consumer-reads-on"])
async def test_a_cancel_while_a_full_subscription_holds_the_run_up_still_reaches_every_subscriber(
    reads_on_at_once: bool,
) -> None:
    model = FakeModelClient(
        [reply(tool_calls=[("lookup", {"q": "a"}), ("lookup", {"q": "b"})]), reply("done")]
    )
    agent = Agent(model, tools=[lookup])
    ahead = Recorder(agent)
    run = agent.stream("look both up", buffer=1)  # the default policy: a full buffer holds the run up
    forwarder = run.bus.subscribe()
    late: list[Event] = []
    ui: list[Event] = []
    with anyio.fail_after(5):
        async with run:
            run.bus.on(None, late.append)
            async for event in run:
                ui.append(event)
                if isinstance(event, ToolCallRequested) and event.call.arguments == '{"q":"b"}':
                    await anyio.wait_all_tasks_blocked()  # the UI is busy: the run waits on its full buffer
                    await run.cancel()  # the user presses Stop
                    if not reads_on_at_once:
                        await anyio.wait_all_tasks_blocked()  # the run sees the cancel before the UI reads on

    assert run.result.stop_reason is StopReason.CANCELLED
    sinks = {"ui": ui, "forwarder": [e async for e in forwarder], "ahead": ahead.events, "late": late}
    for name, events in sinks.items():
        assert_whole(name, events)
        assert [e.seq for e in events] == [e.seq for e in ui]


async def test_a_tool_result_queued_behind_a_slow_callback_when_cancelled_still_reaches_everyone() -> None:
    second_started = anyio.Event()
    writing = anyio.Event()

    @tool
    async def first() -> str:
        """Returns once the second call runs."""
        await second_started.wait()
        return "first"

    @tool
    async def second() -> str:
        """Returns while the first call's result is being written."""
        second_started.set()
        await writing.wait()
        return "second"

    model = FakeModelClient([reply(tool_calls=[("first", {}), ("second", {})]), reply("done")])
    agent = Agent(model, tools=[first, second])

    async def audit_log(event: Event) -> None:
        if isinstance(event, ToolSucceeded) and event.call.name == "first":
            writing.set()
            await anyio.sleep_forever()

    agent.on(None, audit_log)
    behind = Recorder(agent)
    with anyio.fail_after(5):
        async with agent.stream("both") as run, anyio.create_task_group() as group:

            async def press_stop() -> None:
                await writing.wait()
                await anyio.wait_all_tasks_blocked()  # the second result waits for its turn on the bus
                await run.cancel()

            group.start_soon(press_stop)
            ui = [event async for event in run]

    # The second call's result was recorded before its event could be published: it still is.
    assert [(r.output, r.ok) for r in run.result.tool_results] == [("first", True), ("second", True)]
    for name, events in {"ui": ui, "behind": behind.events}.items():
        assert_whole(name, events)
        assert [e.call.name for e in events if isinstance(e, ToolSucceeded)] == ["first", "second"]


# -- checks where subscriptions are asked for ----------------------------------------------------------------


async def test_agent_on_takes_the_exported_terminal_union_and_stream_types_too() -> None:
    agent = Agent(FakeModelClient([reply("hi"), reply("again")]))
    ends: list[Event] = []
    agent.on(TerminalEvent, ends.append)
    await agent.run("x")
    async with agent.stream("y", types=(TextDelta, TerminalEvent)) as run:
        streamed = [type(e) async for e in run]
    assert streamed == [TextDelta, RunFinished]
    assert [type(e) for e in ends] == [RunFinished, RunFinished]


@pytest.mark.parametrize(
    ("types", "callback", "message"),
    [
        ("run_finished", print, "not a string"),
        (str, print, "Event subclasses"),
        (TextDelta | str, print, "Event subclasses"),
        (None, "not callable", "callback must be callable"),
    ],
)
async def test_agent_on_refuses_a_bad_registration_at_once_and_later_runs_still_work(
    types: object, callback: object, message: str
) -> None:
    agent = Agent(FakeModelClient([reply("hi")]))
    with pytest.raises(TypeError, match=message):
        agent.on(types, callback)  # type: ignore[arg-type]
    assert (await agent.run("x")).output_text == "hi"


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"types": "text_delta"}, TypeError),
        ({"types": (TextDelta, 3)}, TypeError),
        ({"buffer": -1}, ValueError),
        ({"buffer": 1.5}, ValueError),
        ({"policy": "drop-deltas"}, ValueError),
    ],
)
def test_agent_stream_checks_its_subscription_options_when_called(
    options: dict[str, object], error: type
) -> None:
    agent = Agent(FakeModelClient([]))
    with pytest.raises(error):
        agent.stream("x", **options)  # type: ignore[arg-type]
    with pytest.raises(error):
        agent.session().stream("x", **options)  # type: ignore[arg-type]


async def test_agent_run_dropped_counts_the_deltas_a_drop_deltas_iteration_skipped() -> None:
    answer = "a long answer, streamed one character at a time"
    agent = Agent(FakeModelClient([reply(answer)] * 2, chunk_size=1))
    async with agent.stream("x", buffer=1, policy="drop_deltas") as run:
        assert run.dropped == 0
        received: list[Event] = []
        async for event in run:
            received.append(event)
            await anyio.wait_all_tasks_blocked()  # a slow UI: the run fills the one-slot buffer meanwhile
    deltas = [e for e in received if isinstance(e, TextDelta)]
    assert run.dropped == len(answer) - len(deltas) > 0
    async with agent.stream("x") as run:
        async for _ in run:
            await anyio.wait_all_tasks_blocked()
    assert run.dropped == 0  # backpressure never drops
