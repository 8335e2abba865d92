"""Eager tool start: a call to an ``@tool(eager=True)`` tool starts while the model still streams its turn.

Over the real clients (Chat Completions and Responses) against ``ScriptedServer``: the server holds the rest
of the stream (``Hold``) until the eager tool has started, so every test that passes proves the call started
before the stream ended; without eager start the hold is never released and the hang guard fails the test.
Then the event order, memory (the assistant turn, then the results in call order), invalid arguments, the
tool-call budget, a stream that fails or a run that is cancelled while an early call runs, a turn that ends
up without the call, and runs that must not start anything early.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import anyio.lowlevel
import pytest
from runtime_support import Recorder, assert_memory_valid, outputs

from agentflow.agent.agent import Agent
from agentflow.agent.items import tool_call_ids
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.agent.prompt import AgentPrompt
from agentflow.events import (
    RunCancelled,
    RunFailed,
    StepFinished,
    ToolCallRequested,
    ToolFailed,
    ToolProgress,
    ToolStarted,
    ToolSucceeded,
)
from agentflow.model.events import (
    Event,
    ModelCompleted,
    ModelEvent,
    ModelRetry,
    TextDelta,
    ToolCallReady,
    ToolCallStarted,
)
from agentflow.model.messages import ToolCall
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.result import StopReason
from agentflow.runtimes import base as runtime_base
from agentflow.testing import Fault, Reply, ScriptedServer, TrackingTransport, chat_wire, responses_wire
from agentflow.testing.context import ReplyContext
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.testing.script import Hold
from agentflow.tools import ToolContext, ToolRegistry, tool

Protocol = Literal["chat", "responses"]
PROTOCOLS: list[Protocol] = ["chat", "responses"]


# -- the tools -----------------------------------------------------------------------------------------------


class Lookups:
    """An eager ``lookup`` tool that records every call; keys in ``hang`` run until they are cancelled.

    ``release`` is set once ``release_after`` calls have started: what a ``Hold`` waits for.
    """

    def __init__(self, *, release_after: int = 1, hang: Collection[str] = ()) -> None:
        self.release = anyio.Event()
        self.started: list[str] = []
        self.contexts: list[tuple[str, int, str]] = []
        self.cancelled: list[str] = []

        @tool(eager=True)
        async def lookup(key: str, ctx: ToolContext) -> str:
            """Look a key up (no side effects)."""
            self.started.append(key)
            self.contexts.append((ctx.run_id, ctx.step, ctx.call_id))
            if len(self.started) == release_after:
                self.release.set()
            await ctx.emit_progress(f"looking {key} up")
            if key in hang:
                try:
                    await anyio.sleep_forever()
                finally:
                    self.cancelled.append(key)
            return f"value of {key}"

        self.tool = lookup


class Writes:
    """A plain (not eager) ``write`` tool that records its calls."""

    def __init__(self) -> None:
        self.done: list[str] = []

        @tool
        async def write(key: str) -> str:
            """Write a key (a side effect: never started early)."""
            self.done.append(key)
            return f"wrote {key}"

        self.tool = write


# -- the server, the model, the transport --------------------------------------------------------------------


def ready_point(protocol: Protocol, turn: Reply, index: int) -> int:
    """How many SSE events of ``turn``'s stream the client needs to have call ``index`` whole (its
    ``ToolCallReady``): where a ``Hold`` stops the stream."""
    request = {"stream": True, "stream_options": {"include_usage": True}}
    ctx = ReplyContext.for_request(turn, request, serial=1, created=0, request_size=1)
    if protocol == "chat":
        frames = chat_wire.encode_stream(turn, ctx)
        # A call is whole once the next one starts, or at the finish chunk for the last one.
        if index + 1 < len(turn.tool_calls):
            marker = b'"tool_calls":[{"index":%d,"id"' % (index + 1)
        else:
            marker = b'"finish_reason":"tool_calls"'
        return next(i for i, frame in enumerate(frames) if marker in frame) + 1
    frames = responses_wire.encode_stream(turn, ctx)
    done = [i for i, f in enumerate(frames) if f.startswith(b"event: response.function_call_arguments.done")]
    return done[index] + 1


@asynccontextmanager
async def agent_on(
    protocol: Protocol, turns: Sequence[Any], tools: Sequence[Any], **kwargs: Any
) -> AsyncIterator[tuple[Agent, ScriptedServer, TrackingTransport]]:
    transport = TrackingTransport()
    async with ScriptedServer(turns) as server:
        model_class = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
        model = model_class(
            base_url=server.base_url, api_key="sk-test", model="gpt-test", transport=transport
        )
        agent = Agent(model, tools=list(tools), **kwargs)
        try:
            yield agent, server, transport
        finally:
            await agent.aclose()


async def stream_all(agent: Agent, prompt: str) -> tuple[list[Event], Any]:
    """Stream a run to its end (whatever the end): the events its consumer saw, and the run."""
    events: list[Event] = []
    with anyio.fail_after(10):  # a hang guard: without eager start a held stream is never released
        async with agent.stream(prompt) as run:
            async for event in run:
                events.append(event)
    return events, run


# -- checks --------------------------------------------------------------------------------------------------


def index_of(events: Sequence[Event], kind: type[Any], call_id: str | None = None, step: int = 0) -> int:
    """The position of the first event of ``kind`` (for the call ``call_id``) in ``step``."""
    return next(
        i
        for i, e in enumerate(events)
        if isinstance(e, kind) and e.step == step and (call_id is None or e.call.id == call_id)
    )


def check_calls_end_once(events: Sequence[Event]) -> None:
    """Every call is announced once, and ends once, after it was announced; nothing ends unannounced."""
    requested = [e.call.id for e in events if isinstance(e, ToolCallRequested)]
    ended = [e.call.id for e in events if isinstance(e, ToolSucceeded | ToolFailed)]
    assert len(requested) == len(set(requested)), requested
    assert sorted(requested) == sorted(ended), (requested, ended)
    for call_id in requested:
        assert index_of_any(events, ToolCallRequested, call_id) < index_of_any(
            events, ToolSucceeded | ToolFailed, call_id
        )


def index_of_any(events: Sequence[Event], kind: Any, call_id: str) -> int:
    return next(i for i, e in enumerate(events) if isinstance(e, kind) and e.call.id == call_id)


def stored_calls(items: Sequence[Any]) -> list[str]:
    """The ids of the tool calls memory holds, in order."""
    return [call_id for item in items for call_id in tool_call_ids(item)]


# -- the feature ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_eager_call_starts_while_the_model_still_streams(protocol: Protocol) -> None:
    lookups = Lookups()
    turn = Reply(text="Let me look.", tool_calls=[("lookup", {"key": "a"})], usage=(10, 5))
    turns = [
        Hold(turn, lookups.release, after_chunks=ready_point(protocol, turn, 0)),
        Reply(text="a is known.", usage=(20, 5)),
    ]
    async with agent_on(protocol, turns, [lookups.tool]) as (agent, server, _):
        events, run = await stream_all(agent, "Look a up.")

    result = run.result
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "a is known.")
    assert lookups.started == ["a"]  # once: its early result is the call's result
    [call] = result.tool_calls
    # The stream could only end after the tool started (the server held it): the order shows it.
    ready = index_of(events, ToolCallReady)
    requested = index_of(events, ToolCallRequested, call.id)
    started = index_of(events, ToolStarted, call.id)
    completed = index_of(events, ModelCompleted)
    assert ready < requested < started < completed
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert [(p.call_id, p.message) for p in progress] == [(call.id, "looking a up")]
    check_calls_end_once(events)
    # The tool saw the call as memory holds it: the run, the step and the stored call id.
    assert lookups.contexts == [(result.run_id, 0, call.id)]
    assert [r.output for r in result.tool_results] == ["value of a"]
    # Memory: the assistant turn, then the result, both sent with the next request.
    assert stored_calls(result.new_items) == [call.id]
    assert outputs(result.new_items) == [(call.id, "value of a")]
    assert_memory_valid(result.new_items)
    assert len(server.requests) == 2
    assert all(request.stream for request in server.requests)
    [finished] = [e for e in events if isinstance(e, StepFinished) and e.step == 0]
    assert finished.tool_calls == 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_eager_and_plain_calls_in_one_turn_keep_call_order(protocol: Protocol) -> None:
    lookups, writes = Lookups(release_after=2), Writes()
    calls = [("lookup", {"key": "a"}), ("write", {"key": "b"}), ("lookup", {"key": "c"})]
    turn = Reply(tool_calls=calls, usage=(10, 5))
    turns = [
        Hold(turn, lookups.release, after_chunks=ready_point(protocol, turn, 2)),
        Reply(text="Done.", usage=(20, 5)),
    ]
    async with agent_on(protocol, turns, [lookups.tool, writes.tool]) as (agent, _, _):
        events, run = await stream_all(agent, "Look a and c up, write b.")

    result = run.result
    a, b, c = (call.id for call in result.tool_calls)
    assert (lookups.started, writes.done) == (["a", "c"], ["b"])
    completed = index_of(events, ModelCompleted)
    # The lookups were announced and started mid-stream; the write only once the turn was complete.
    for early in (a, c):
        assert index_of(events, ToolStarted, early) < completed
    assert completed < index_of(events, ToolCallRequested, b) < index_of(events, ToolStarted, b)
    check_calls_end_once(events)
    # Results in call order, after the turn, whichever order the calls ran in.
    assert outputs(result.new_items) == [(a, "value of a"), (b, "wrote b"), (c, "value of c")]
    assert [r.call_id for r in result.tool_results] == [a, b, c]
    assert sorted(lookups.contexts) == sorted([(result.run_id, 0, a), (result.run_id, 0, c)])
    assert_memory_valid(result.new_items)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_call_with_invalid_arguments_is_not_started_early(protocol: Protocol) -> None:
    lookups = Lookups()
    turn = Reply(tool_calls=[("lookup", {"key": 5}), ("lookup", {"key": "b"})], usage=(10, 5))
    turns = [
        Hold(turn, lookups.release, after_chunks=ready_point(protocol, turn, 1)),
        Reply(text="Done.", usage=(20, 5)),
    ]
    async with agent_on(protocol, turns, [lookups.tool]) as (agent, _, _):
        events, run = await stream_all(agent, "Look up.")

    result = run.result
    bad, good = (call.id for call in result.tool_calls)
    assert lookups.started == ["b"]
    completed = index_of(events, ModelCompleted)
    assert index_of(events, ToolStarted, good) < completed
    # The invalid call fails in the normal path, after the turn, as it would without eager start.
    assert completed < index_of(events, ToolCallRequested, bad)
    [failed] = [e for e in events if isinstance(e, ToolFailed)]
    assert (failed.call.id, failed.result.error_type) == (bad, "invalid_arguments")
    check_calls_end_once(events)
    assert [c for c, _ in outputs(result.new_items)] == [bad, good]
    assert_memory_valid(result.new_items)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_no_more_calls_start_early_than_the_tool_call_budget_allows(protocol: Protocol) -> None:
    lookups = Lookups()
    turn = Reply(tool_calls=[("lookup", {"key": "a"}), ("lookup", {"key": "b"})], usage=(10, 5))
    turns = [Hold(turn, lookups.release, after_chunks=ready_point(protocol, turn, 1))]
    options = AgentOptions(max_tool_calls=1)
    async with agent_on(protocol, turns, [lookups.tool], options=options) as (agent, _, _):
        events, run = await stream_all(agent, "Look a and b up.")

    result = run.result
    assert result.stop_reason is StopReason.MAX_TOOL_CALLS
    a, b = (call.id for call in result.tool_calls)
    assert lookups.started == ["a"]  # b is beyond the budget: refused, as without eager start
    assert index_of(events, ModelCompleted) < index_of(events, ToolCallRequested, b)
    [refused] = [e for e in events if isinstance(e, ToolFailed)]
    assert refused.call.id == b
    assert "limit of 1 tool calls" in refused.result.output
    check_calls_end_once(events)
    assert [(c, "value of a" in o) for c, o in outputs(result.new_items)] == [(a, True), (b, False)]
    assert_memory_valid(result.new_items)


async def test_a_step_with_no_tool_call_left_in_the_budget_starts_nothing_early() -> None:
    lookups = Lookups()
    first = Reply(tool_calls=[("lookup", {"key": "a"})], usage=(10, 5))
    turns = [
        Hold(first, lookups.release, after_chunks=ready_point("chat", first, 0)),
        Reply(tool_calls=[("lookup", {"key": "b"})], usage=(10, 5)),
    ]
    options = AgentOptions(max_tool_calls=1)
    async with agent_on("chat", turns, [lookups.tool], options=options) as (agent, _, _):
        events, run = await stream_all(agent, "Look a, then b up.")

    result = run.result
    assert result.stop_reason is StopReason.MAX_TOOL_CALLS
    assert lookups.started == ["a"]
    b = result.tool_calls[1].id
    assert index_of(events, ModelCompleted, step=1) < index_of(events, ToolCallRequested, b, step=1)
    check_calls_end_once(events)
    assert_memory_valid(result.new_items)


async def test_early_calls_share_the_concurrency_limit_and_keep_their_time_limit() -> None:
    # One slot: b, announced early, waits for a to finish; a waits until the turn is complete.
    turn_done = anyio.Event()
    running: list[str] = []
    overlap: list[int] = []

    @tool(eager=True)
    async def lookup(key: str) -> str:
        """Look a key up (no side effects)."""
        running.append(key)
        overlap.append(len(running))
        if key == "a":
            release.set()
            await turn_done.wait()
        running.remove(key)
        return f"value of {key}"

    @tool(eager=True, timeout=0.01)
    async def slow_lookup(key: str) -> str:
        """A lookup that never answers (cut by its own time limit)."""
        await anyio.sleep_forever()
        return key

    release = anyio.Event()
    calls = [("lookup", {"key": "a"}), ("lookup", {"key": "b"}), ("slow_lookup", {"key": "c"})]
    turn = Reply(tool_calls=calls, usage=(10, 5))
    turns = [Hold(turn, release, after_chunks=ready_point("chat", turn, 2)), Reply(text="Done.")]
    options = AgentOptions(max_tool_concurrency=1)
    async with agent_on("chat", turns, [lookup, slow_lookup], options=options) as (agent, _, _):
        agent.on(ModelCompleted, lambda _event: turn_done.set())
        events, run = await stream_all(agent, "Look a, b and c up.")

    result = run.result
    a, b, c = (call.id for call in result.tool_calls)
    assert overlap == [1, 1]  # never two at once
    completed = index_of(events, ModelCompleted)
    assert index_of(events, ToolCallRequested, b) < completed < index_of(events, ToolStarted, b)
    assert index_of(events, ToolSucceeded, a) < index_of(events, ToolStarted, b)
    assert [r.error_type for r in result.tool_results] == [None, None, "timeout"]
    assert [call_id for call_id, _ in outputs(result.new_items)] == [a, b, c]
    check_calls_end_once(events)


# -- a turn that does not complete as expected ---------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_stream_cut_while_an_early_call_runs_cancels_it_and_keeps_memory_valid(
    protocol: Protocol,
) -> None:
    lookups = Lookups(hang={"a"})
    turn = Reply(text="Looking.", tool_calls=[("lookup", {"key": "a"})], usage=(10, 5))
    turns = [Fault.stall(after_chunks=ready_point(protocol, turn, 0), reply=turn)]
    memory = InMemoryMemory()
    async with agent_on(protocol, turns, [lookups.tool], memory=memory) as (agent, server, transport):

        async def cut_the_stream() -> None:
            await lookups.release.wait()  # the early call runs: now the connection drops mid-stream
            await server.stop()

        async with anyio.create_task_group() as tg:
            tg.start_soon(cut_the_stream)
            events, run = await stream_all(agent, "Look a up.")

    assert isinstance(events[-1], RunFailed)
    assert lookups.cancelled == ["a"]
    [requested] = [e for e in events if isinstance(e, ToolCallRequested)]
    [failed] = [e for e in events if isinstance(e, ToolFailed)]
    assert failed.call == requested.call
    assert failed.result.error_type == "cancelled"
    assert not [e for e in events if isinstance(e, ToolSucceeded)]
    check_calls_end_once(events)
    # The turn never completed: memory holds no call of it, so no result either.
    assert stored_calls(memory.items) == []
    assert outputs(memory.items) == []
    assert_memory_valid(memory.items)
    partial = run.partial
    assert partial.tool_calls == ()
    assert partial.tool_results == ()
    assert all(response.closed for response in transport.responses)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_early_call_that_finished_before_the_stream_failed_leaves_no_result_in_memory(
    protocol: Protocol,
) -> None:
    lookups = Lookups()
    turn = Reply(text="Looking.", tool_calls=[("lookup", {"key": "a"})], usage=(10, 5))
    turns = [Fault.stream_error(after_chunks=ready_point(protocol, turn, 0), reply=turn)]
    memory = InMemoryMemory()
    async with agent_on(protocol, turns, [lookups.tool], memory=memory) as (agent, _, _):
        events, run = await stream_all(agent, "Look a up.")

    assert isinstance(events[-1], RunFailed)
    assert lookups.started == ["a"]
    assert [type(e) for e in events if isinstance(e, ToolSucceeded | ToolFailed)] == [ToolSucceeded]
    check_calls_end_once(events)
    assert outputs(memory.items) == []
    assert_memory_valid(memory.items)
    assert run.partial.tool_results == ()


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_token_budget_reached_by_the_turn_cancels_the_early_call_still_running(
    protocol: Protocol,
) -> None:
    lookups = Lookups(release_after=2, hang={"b"})
    turn = Reply(tool_calls=[("lookup", {"key": "a"}), ("lookup", {"key": "b"})], usage=(50, 50))
    turns = [Hold(turn, lookups.release, after_chunks=ready_point(protocol, turn, 1))]
    options = AgentOptions(max_tokens=20)
    async with agent_on(protocol, turns, [lookups.tool], options=options) as (agent, _, _):
        events, run = await stream_all(agent, "Look a and b up.")

    result = run.result
    assert result.stop_reason is StopReason.MAX_TOKENS
    a, b = (call.id for call in result.tool_calls)
    assert lookups.cancelled == ["b"]
    check_calls_end_once(events)
    # a finished before the budget was known: its result stands; b was cut and says why.
    [(first, done), (second, cut)] = outputs(result.new_items)
    assert (first, done) == (a, "value of a")
    assert second == b
    assert "token budget" in cut
    assert [r.error_type for r in result.tool_results] == [None, "cancelled"]
    assert_memory_valid(result.new_items)


async def test_an_early_call_the_completed_turn_does_not_hold_is_cancelled_and_never_stored() -> None:
    lookups = Lookups(hang={"a"})
    call = ToolCall("c1", "lookup", '{"key":"a"}')

    async def turn(_prompt: AgentPrompt) -> AsyncIterator[ModelEvent]:
        # The model announces a call, then completes its turn without it.
        yield ToolCallStarted(0, call.id, call.name)
        yield ToolCallReady(0, call)
        await lookups.release.wait()
        yield TextDelta("Never mind.")
        yield ModelCompleted(reply("Never mind.", usage=(10, 5)))

    memory = InMemoryMemory()
    agent = Agent(FakeModelClient([turn]), tools=[lookups.tool], memory=memory)
    events, run = await stream_all(agent, "Look a up.")

    result = run.result
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "Never mind.")
    assert lookups.cancelled == ["a"]
    [failed] = [e for e in events if isinstance(e, ToolFailed)]
    assert (failed.call, failed.result.error_type) == (call, "cancelled")
    assert index_of(events, ModelCompleted) < events.index(failed) < index_of(events, StepFinished)
    check_calls_end_once(events)
    assert result.tool_calls == ()
    assert stored_calls(memory.items) == []
    assert_memory_valid(memory.items)


async def test_a_stream_retried_before_its_first_event_starts_the_call_once() -> None:
    lookups = Lookups()
    turn = Reply(tool_calls=[("lookup", {"key": "a"})], usage=(10, 5))
    turns = [
        Fault.status(500),
        Hold(turn, lookups.release, after_chunks=ready_point("responses", turn, 0)),
        Reply(text="Done.", usage=(20, 5)),
    ]
    async with agent_on("responses", turns, [lookups.tool]) as (agent, server, _):
        events, run = await stream_all(agent, "Look a up.")

    assert run.result.stop_reason is StopReason.FINAL_ANSWER
    assert [e for e in events if isinstance(e, ModelRetry)]
    assert lookups.started == ["a"]
    assert len(server.requests) == 3
    check_calls_end_once(events)


# -- cancellation mid-stream ---------------------------------------------------------------------------------

Way = Literal["run.cancel", "break", "exception", "cancel scope", "asyncio task", "deadline"]


@pytest.mark.parametrize(
    "way", ["run.cancel", "break", "exception", "cancel scope", "asyncio task", "deadline"]
)
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_cancelling_mid_stream_cancels_the_early_call_and_closes_the_stream(
    protocol: Protocol, way: Way
) -> None:
    lookups = Lookups(hang={"a"})
    turn = Reply(text="Looking.", tool_calls=[("lookup", {"key": "a"})], usage=(10, 5))
    turns = [Fault.stall(after_chunks=ready_point(protocol, turn, 0), reply=turn)]
    memory = InMemoryMemory()
    options = AgentOptions(stream=True, tool_timeout=None, timeout=0.3 if way == "deadline" else None)
    tasks_before = len(asyncio.all_tasks())
    async with agent_on(protocol, turns, [lookups.tool], memory=memory, options=options) as (
        agent,
        _,
        transport,
    ):
        recorder = Recorder(agent)
        with anyio.fail_after(10):  # a hang guard only
            if way in ("run.cancel", "break", "exception"):
                with contextlib.suppress(LookupError):
                    async with agent.stream("Look a up.") as run:
                        async for event in run:
                            if not isinstance(event, ToolStarted):
                                continue
                            await lookups.release.wait()
                            if way == "run.cancel":
                                await run.cancel()
                            elif way == "break":
                                break
                            else:
                                raise LookupError("the consumer failed")
            elif way == "cancel scope":
                async with anyio.create_task_group() as tg:
                    tg.start_soon(agent.run, "Look a up.")
                    await lookups.release.wait()
                    tg.cancel_scope.cancel()
            elif way == "asyncio task":
                task = asyncio.create_task(agent.run("Look a up."))
                await lookups.release.wait()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            else:
                result = await agent.run("Look a up.")
                assert result.stop_reason is StopReason.DEADLINE

        [terminal] = recorder.terminals()
        assert isinstance(terminal, RunCancelled)
        assert recorder.events[-1] is terminal
        expected = StopReason.DEADLINE if way == "deadline" else StopReason.CANCELLED
        assert terminal.partial.stop_reason is expected
        assert lookups.cancelled == ["a"]
        [failed] = recorder.of(ToolFailed)
        assert failed.result.error_type == "cancelled"
        check_calls_end_once(recorder.events)
        # Cut mid-stream: memory holds no call of the turn, so no result; it is still a valid conversation.
        assert stored_calls(memory.items) == []
        assert outputs(memory.items) == []
        assert_memory_valid(memory.items)
        assert terminal.partial.tool_calls == ()
        [response] = transport.responses
        assert response.closed
        assert response.socket_released
    assert len(asyncio.all_tasks()) == tasks_before  # no task left, the server's included


POINTS: list[type[Event]] = [
    ToolCallReady,
    ToolCallRequested,
    ToolStarted,
    ToolSucceeded,
    TextDelta,
    ModelCompleted,
    StepFinished,
]


@pytest.mark.parametrize("point", POINTS, ids=lambda p: p.__name__)
async def test_a_cancel_at_any_point_of_an_eager_step_ends_every_call_once_and_keeps_memory_valid(
    point: type[Event],
) -> None:
    lookups, writes = Lookups(), Writes()
    calls = [("c1", "lookup", {"key": "a"}), ("c2", "write", {"key": "b"}), ("c3", "lookup", {"key": "c"})]
    model = FakeModelClient([reply("Let me look.", tool_calls=calls, usage=(10, 5)), reply("Done.")])
    memory = InMemoryMemory()
    agent = Agent(model, tools=[lookups.tool, writes.tool], memory=memory, options=AgentOptions(stream=True))
    recorder = Recorder(agent)
    run = agent.stream("go")

    async def cancel_right_here(_event: Event) -> None:
        # Awaited inside ``publish``: the checkpoint lands the cancellation at exactly this point of the step.
        run.ctx.cancel_scope.cancel()
        await anyio.lowlevel.checkpoint()

    run.bus.on(point, cancel_right_here)
    with anyio.fail_after(10):
        async with run:
            events = [event async for event in run]

    [terminal] = recorder.terminals()
    assert isinstance(terminal, RunCancelled)
    assert events[-1] == terminal
    check_calls_end_once(recorder.events)
    assert_memory_valid(memory.items)
    partial = terminal.partial
    assert memory.items[1:] == partial.new_items[1:]  # the partial result tells exactly what memory holds
    assert {c for c, _ in outputs(memory.items)} == {r.call_id for r in partial.tool_results}
    # Finished work is kept for every call memory holds; no call ran twice.
    stored = set(stored_calls(memory.items))
    succeeded = {e.call.id: e.result for e in recorder.of(ToolSucceeded) if e.call.id in stored}
    assert {r.call_id: r for r in partial.tool_results if r.ok} == succeeded
    assert len(lookups.started) == len(set(lookups.started))
    assert model.streams_open == 0


# -- runs that start nothing early ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["no eager tool", "blocking call", "parallel_tool_calls=False"])
async def test_runs_that_must_not_start_calls_early_run_them_after_the_turn(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def never(*_args: Any) -> Any:
        raise AssertionError("no step of this run may open the eager machinery")

    monkeypatch.setattr(runtime_base, "run_early_step", never)
    lookups, writes = Lookups(), Writes()
    tools = [writes.tool] if case == "no eager tool" else [lookups.tool, writes.tool]
    name = "write" if case == "no eager tool" else "lookup"
    turns = [Reply(tool_calls=[(name, {"key": "a"}), ("write", {"key": "b"})]), Reply(text="Done.")]
    kwargs: dict[str, Any] = {}
    if case == "blocking call":
        kwargs["options"] = AgentOptions(stream=False)
    elif case == "parallel_tool_calls=False":
        kwargs["settings"] = ModelSettings(parallel_tool_calls=False)
    async with agent_on("chat", turns, tools, **kwargs) as (agent, server, _):
        events, run = await stream_all(agent, "Go.")

    result = run.result
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert server.requests[0].stream is (case != "blocking call")
    completed = index_of(events, ModelCompleted)
    requested = [i for i, e in enumerate(events) if isinstance(e, ToolCallRequested)]
    assert len(requested) == 2
    assert completed < min(requested)
    check_calls_end_once(events)
    assert ToolRegistry(tools).has_eager is (case != "no eager tool")


def test_eager_is_a_tool_option_and_the_registry_knows_it() -> None:
    lookups, writes = Lookups(), Writes()
    assert lookups.tool.eager
    assert not writes.tool.eager
    assert ToolRegistry([lookups.tool, writes.tool]).has_eager
    assert not ToolRegistry([writes.tool]).has_eager
    from_spec = type(writes.tool).from_spec(writes.tool.spec, writes.tool.fn, eager=True)
    assert from_spec.eager
    assert from_spec.spec == writes.tool.spec  # never part of what the model is sent


async def test_an_eager_run_over_http_is_freed_at_once_without_the_garbage_collector() -> None:
    # As for any run (tests/agent/e2e): nothing the early calls keep may lead back to the run's state.
    import gc

    from agentflow.runtimes.context import RunContext

    lookups = Lookups()
    turn = Reply(tool_calls=[("lookup", {"key": "a"})], usage=(10, 5))
    turns = [Hold(turn, lookups.release, after_chunks=ready_point("chat", turn, 0)), Reply(text="Done.")]
    async with agent_on("chat", turns, [lookups.tool]) as (agent, _, _):
        gc.collect()
        gc.disable()
        try:
            with anyio.fail_after(10):
                async with agent.stream("Look a up.") as run:
                    await run.wait()
            assert run.ctx.early_calls is None
            assert run.result.stop_reason is StopReason.FINAL_ANSWER
            del run
            alive = [o for o in gc.get_objects() if isinstance(o, RunContext)]
        finally:
            gc.enable()
    assert lookups.started == ["a"]
    assert alive == []
