"""The base loop on a FakeModelClient: answers, tool round trips, call ids, tool errors, concurrency."""

from __future__ import annotations

import gc
from typing import Any

import anyio
import orjson
import pytest
from runtime_support import Recorder, add, assert_memory_valid, collect, outputs, shout

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.agent.items import function_call_item, user_item
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.bus import EventBus
from agentflow.events import (
    ModelRequest,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    ToolCallRequested,
    ToolFailed,
    ToolProgress,
    ToolStarted,
    ToolSucceeded,
)
from agentflow.model.events import ModelCompleted, TextDelta, ToolCallReady
from agentflow.model.messages import ToolCall
from agentflow.model.response import FinishReason, TokenUsage
from agentflow.result import StopReason
from agentflow.runtimes import ReActRuntime
from agentflow.runtimes.context import RunContext
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import ToolContext, ToolExecutor, tool


async def test_final_answer_without_tools_ends_the_run_in_one_step() -> None:
    model = FakeModelClient([reply("Paris.", usage=(12, 3))])
    agent = Agent(model, system_prompt="You are terse.")

    result = await agent.run("Capital of France?")

    assert result.output_text == "Paris."
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.steps == 1
    assert result.usage == TokenUsage(12, 3, 15)
    assert result.run_id.startswith("run_")
    assert [i["role"] for i in result.new_items] == ["user", "assistant"]


async def test_prompt_holds_system_prompt_runtime_instructions_tools_and_memory() -> None:
    model = FakeModelClient([reply("ok")])
    agent = Agent(
        model,
        tools=[add],
        system_prompt="You are terse.",
        instructions="Answer in French.",
        settings=ModelSettings(model="gpt-test", temperature=0.1, parallel_tool_calls=True),
    )

    await agent.run("hi")

    prompt = model.prompts[0]
    assert prompt.system_prompt == "You are terse.\n\nUse tools when necessary. Return concise final answers."
    assert prompt.instructions == "Answer in French."
    assert [t.name for t in prompt.tools] == ["add"]
    assert prompt.items == (user_item("hi"),)
    assert (prompt.model, prompt.temperature, prompt.parallel_tool_calls) == ("gpt-test", 0.1, True)
    assert prompt.stream is False  # agent.run() makes plain calls unless options.stream says otherwise


async def test_react_runtime_name_and_instructions_match_the_seed() -> None:
    assert ReActRuntime.name == "react"
    assert ReActRuntime.instructions == "Use tools when necessary. Return concise final answers."
    assert isinstance(Agents.react(FakeModelClient([])).runtime, ReActRuntime)
    assert isinstance(Agent(FakeModelClient([])).runtime, ReActRuntime)


async def test_tool_round_trip_event_sequence_and_memory() -> None:
    model = FakeModelClient(
        [reply(tool_calls=[("c1", "add", {"a": 2, "b": 3})], usage=(10, 5)), reply("5", usage=(20, 1))]
    )
    agent = Agent(model, tools=[add])

    events, result = await collect(agent, "2+3?")

    names = [type(e).__name__ for e in events]
    assert names == [
        "RunStarted",
        "StepStarted", "ModelRequest",
        "ToolCallStarted", "ToolCallArgumentsDelta", "ToolCallReady", "UsageReported", "ModelCompleted",
        "ToolCallRequested", "ToolStarted", "ToolSucceeded",
        "StepFinished",
        "StepStarted", "ModelRequest", "TextDelta", "UsageReported", "ModelCompleted",
        "StepFinished",
        "RunFinished",
    ]  # fmt: skip
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert {e.run_id for e in events} == {result.run_id}
    assert [e.step for e in events if isinstance(e, StepStarted)] == [0, 1]
    assert all(e.step == 0 for e in events[1:12])
    assert result.output_text == "5"
    assert [r.output for r in result.tool_results] == ["5"]
    assert result.tool_calls == (ToolCall("c1", "add", '{"a":2,"b":3}'),)
    second_prompt = model.prompts[1]
    assert outputs(second_prompt.items) == [("c1", "5")]
    assert_memory_valid(result.new_items)
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result == result


async def test_missing_call_ids_are_completed_before_the_assistant_turn_is_stored() -> None:
    raw_calls = (ToolCall("", "add", '{"a":1,"b":1}'), ToolCall(" ", "add", '{"a":2,"b":2}'))
    entries = [
        {"id": None, "type": "function", "function": {"name": "add", "arguments": c.arguments}}
        for c in raw_calls
    ]
    turn = AgentModelResult(
        tool_calls=raw_calls,
        memory_items=({"type": "message", "role": "assistant", "tool_calls": entries},),
    )
    model = FakeModelClient([turn, reply("done")])
    agent = Agent(model, tools=[add])
    recorder = Recorder(agent)

    result = await agent.run("go")

    stored = result.new_items[1]
    assert [c["id"] for c in stored["tool_calls"]] == ["tool_step_0_0", "tool_step_0_1"]
    assert outputs(result.new_items) == [("tool_step_0_0", "2"), ("tool_step_0_1", "4")]
    assert [e.call.id for e in recorder.of(ToolCallRequested)] == ["tool_step_0_0", "tool_step_0_1"]
    assert_memory_valid(model.prompts[1].items)


async def test_responses_shaped_function_call_items_get_the_completed_ids_and_names() -> None:
    raw_calls = (ToolCall("", "functions.add", '{"a":1,"b":1}'),)
    turn = AgentModelResult(
        tool_calls=raw_calls,
        memory_items=({"type": "reasoning", "id": "rs_1", "encrypted_content": "x"},
                      {**function_call_item("", "functions.add", '{"a":1,"b":1}'), "id": "fc_1"}),
    )  # fmt: skip
    model = FakeModelClient([turn, reply("done")])
    agent = Agent(model, tools=[add])

    result = await agent.run("go")

    reasoning, call = result.new_items[1], result.new_items[2]
    assert reasoning == {"type": "reasoning", "id": "rs_1", "encrypted_content": "x"}
    assert call == {
        "type": "function_call",
        "call_id": "tool_step_0_0",
        "name": "add",
        "arguments": '{"a":1,"b":1}',
        "id": "fc_1",
    }
    assert result.tool_results[0].ok
    assert result.tool_results[0].output == "2"
    assert_memory_valid(result.new_items)


async def test_invalid_arguments_become_a_tool_error_fed_back_to_the_model() -> None:
    model = FakeModelClient([reply(tool_calls=[("c1", "add", {"a": "two", "b": 3})]), reply("sorry")])
    agent = Agent(model, tools=[add])
    recorder = Recorder(agent)

    result = await agent.run("go")

    [failed] = recorder.of(ToolFailed)
    assert failed.result.error_type == "invalid_arguments"
    [(call_id, text)] = outputs(model.prompts[1].items)
    assert call_id == "c1"
    assert text.startswith("TOOL_ERROR: ")
    payload = orjson.loads(text.removeprefix("TOOL_ERROR: "))
    assert list(payload) == ["errorType", "error", "tool", "callId"]
    assert payload["errorType"] == "invalid_arguments"
    assert payload["tool"] == "add"
    assert payload["callId"] == "c1"
    assert result.stop_reason is StopReason.FINAL_ANSWER


async def test_empty_arguments_mean_an_empty_object() -> None:
    @tool
    async def ping() -> str:
        """Answer pong."""
        return "pong"

    model = FakeModelClient([reply(tool_calls=[ToolCall("c1", "ping", "")]), reply("ok")])
    result = await Agent(model, tools=[ping]).run("go")

    assert result.tool_results[0].output == "pong"


async def test_unknown_tool_becomes_a_tool_error_and_the_run_goes_on() -> None:
    model = FakeModelClient([reply(tool_calls=[("c1", "nope", {})]), reply("ok")])
    result = await Agent(model, tools=[add]).run("go")

    [r] = result.tool_results
    assert (r.ok, r.error_type) == (False, "unknown_tool")
    assert orjson.loads(r.output.removeprefix("TOOL_ERROR: "))["errorType"] == "unknown_tool"
    assert outputs(model.prompts[1].items) == [("c1", r.output)]
    assert result.output_text == "ok"


async def test_tool_exception_becomes_a_tool_error() -> None:
    @tool
    async def boom() -> str:
        """Fail."""
        raise ValueError("bad city")

    model = FakeModelClient([reply(tool_calls=[("c1", "boom", {})]), reply("ok")])
    result = await Agent(model, tools=[boom]).run("go")

    payload = orjson.loads(result.tool_results[0].output.removeprefix("TOOL_ERROR: "))
    assert payload == {
        "errorType": "exception",
        "error": "ValueError: bad city",
        "tool": "boom",
        "callId": "c1",
    }


@pytest.mark.parametrize("listening", [False, True], ids=["run", "stream"])
async def test_a_tool_that_outlives_the_tool_timeout_is_a_tool_error_and_the_others_finish(
    listening: bool,
) -> None:
    # Without a listener the step's calls share one deadline; with one, each call has its own scope.
    @tool
    async def slow() -> str:
        """Never answer."""
        await anyio.sleep_forever()
        return "unreachable"

    @tool
    async def quick() -> str:
        """Answer at once."""
        return "fast"

    calls = [("c1", "slow", {}), ("c2", "quick", {}), ("c3", "slow", {})]
    model = FakeModelClient([reply(tool_calls=calls), reply("done")])
    agent = Agent(model, tools=[slow, quick], options=AgentOptions(tool_timeout=0.05))
    if listening:
        async with agent.stream("go") as run:
            events = [event async for event in run]
        result = run.result
        assert [e.call.id for e in events if isinstance(e, ToolSucceeded)] == ["c2"]
    else:
        result = await agent.run("go")
    assert [(r.call_id, r.error_type) for r in result.tool_results] == [
        ("c1", "timeout"),
        ("c2", None),
        ("c3", "timeout"),
    ]
    payload = orjson.loads(result.tool_results[0].output.removeprefix("TOOL_ERROR: "))
    assert payload == {
        "errorType": "timeout",
        "error": "tool 'slow' timed out after 0.05 s",
        "tool": "slow",
        "callId": "c1",
    }
    assert result.output_text == "done"
    # The model saw the timeouts: the second prompt holds every call's output, in call order.
    assert [call_id for call_id, _ in outputs(model.prompts[1].items)] == ["c1", "c2", "c3"]


async def test_a_steps_tools_run_concurrently() -> None:
    n = 4
    started = 0
    all_started = anyio.Event()

    @tool
    async def wait_for_all(i: int) -> int:
        """Return i once every call of the step has started (deadlocks if they ran one by one)."""
        nonlocal started
        started += 1
        if started == n:
            all_started.set()
        await all_started.wait()
        return i

    model = FakeModelClient([reply(tool_calls=[("wait_for_all", {"i": i}) for i in range(n)]), reply("ok")])
    agent = Agent(model, tools=[wait_for_all])

    with anyio.fail_after(5):  # a guard against a deadlock, not a timing assertion
        result = await agent.run("go")

    assert [r.output for r in result.tool_results] == ["0", "1", "2", "3"]


async def test_results_reach_memory_in_call_order_while_events_follow_completion_order() -> None:
    gates = {name: anyio.Event() for name in ("first", "second")}
    second_done = anyio.Event()

    @tool
    async def first() -> str:
        """Finishes after the second."""
        await second_done.wait()
        return "one"

    @tool
    async def second() -> str:
        """Finishes first."""
        gates["second"].set()
        second_done.set()
        return "two"

    model = FakeModelClient([reply(tool_calls=[("c1", "first", {}), ("c2", "second", {})]), reply("ok")])
    agent = Agent(model, tools=[first, second])
    recorder = Recorder(agent)

    result = await agent.run("go")

    assert [e.call.id for e in recorder.of((ToolSucceeded, ToolFailed))] == ["c2", "c1"]
    assert outputs(result.new_items) == [("c1", "one"), ("c2", "two")]
    assert [r.call_id for r in result.tool_results] == ["c1", "c2"]


async def test_parallel_tool_calls_false_runs_calls_one_at_a_time_in_order() -> None:
    order: list[str] = []

    @tool
    async def step(name: str) -> str:
        """Record the order."""
        order.append(f"start {name}")
        await anyio.lowlevel.checkpoint()
        order.append(f"end {name}")
        return name

    model = FakeModelClient(
        [reply(tool_calls=[("step", {"name": "a"}), ("step", {"name": "b"})]), reply("ok")]
    )
    agent = Agent(model, tools=[step], settings=ModelSettings(parallel_tool_calls=False))

    await agent.run("go")

    assert order == ["start a", "end a", "start b", "end b"]
    assert model.prompts[0].parallel_tool_calls is False


async def test_sync_tools_and_tool_progress_events_that_never_enter_memory() -> None:
    @tool
    async def slow(ctx: ToolContext) -> str:
        """Report progress."""
        await ctx.emit_progress("half way", {"pct": 50})
        return "done"

    model = FakeModelClient(
        [reply(tool_calls=[("c1", "slow", {}), ("c2", "shout", {"text": "hi"})]), reply("ok")]
    )
    agent = Agent(model, tools=[slow, shout])

    events, result = await collect(agent, "go")

    [progress] = [e for e in events if isinstance(e, ToolProgress)]
    assert (progress.call_id, progress.message, progress.data, progress.step) == (
        "c1",
        "half way",
        {"pct": 50},
        0,
    )
    assert [r.output for r in result.tool_results] == ["done", "HI"]
    assert "half way" not in orjson.dumps([i for i in result.new_items]).decode()


async def test_usage_is_summed_over_every_model_call_and_reported_per_step() -> None:
    u1 = TokenUsage(100, 20, 120, cached_input_tokens=60, reasoning_tokens=7)
    u2 = TokenUsage(150, 10, 160, cached_input_tokens=100)
    model = FakeModelClient([reply(tool_calls=[("add", {"a": 1, "b": 1})], usage=u1), reply("2", usage=u2)])
    agent = Agent(model, tools=[add])
    recorder = Recorder(agent)

    result = await agent.run("go")

    assert result.usage == u1 + u2
    assert [e.usage for e in recorder.of(StepFinished)] == [u1, u2]
    assert [e.tool_calls for e in recorder.of(StepFinished)] == [1, 0]


async def test_stream_publishes_model_events_mid_call() -> None:
    gate = anyio.Event()
    final = reply("Hello world")

    async def streaming(_prompt: AgentPrompt) -> Any:
        yield TextDelta("Hello ")
        await gate.wait()  # the consumer must see the first delta before the model finishes
        yield TextDelta("world")
        yield ModelCompleted(final)

    model = FakeModelClient([streaming])
    agent = Agent(model)
    seen: list[str] = []

    async with agent.stream("hi") as run:
        async for event in run:
            if isinstance(event, TextDelta):
                seen.append(event.text)
                gate.set()

    assert seen == ["Hello ", "world"]
    assert run.result.output_text == "Hello world"
    assert model.prompts[0].stream is True
    assert model.streams_open == 0


async def test_blocking_calls_still_publish_text_and_completion_events() -> None:
    model = FakeModelClient([reply("Hi!", reasoning="think")])
    agent = Agent(model, options=AgentOptions(stream=False))

    events, _ = await collect(agent, "hi")

    names = [type(e).__name__ for e in events]
    assert names == [
        "RunStarted",
        "StepStarted",
        "ModelRequest",
        "ReasoningDelta",
        "TextDelta",
        "ModelCompleted",
        "StepFinished",
        "RunFinished",
    ]
    assert isinstance(events[2], ModelRequest)
    assert events[2].items == 1
    assert model.prompts[0].stream is False


async def test_stream_subscription_can_filter_event_types() -> None:
    model = FakeModelClient([reply(tool_calls=[("add", {"a": 1, "b": 2})]), reply("3")], chunk_size=1)
    agent = Agent(model, tools=[add])

    async with agent.stream("go", types=(ToolCallReady, ToolSucceeded, RunFinished)) as run:
        kinds = [type(e).__name__ async for e in run]

    assert kinds == ["ToolCallReady", "ToolSucceeded", "RunFinished"]


async def test_run_input_may_be_items_or_a_message() -> None:
    from agentflow.model.messages import UserMessage

    model = FakeModelClient([reply("a"), reply("b")])
    agent = Agent(model)
    recorder = Recorder(agent)

    await agent.run([user_item("one"), user_item("two")])
    await agent.run(UserMessage("three"))

    assert [e.input for e in recorder.of(RunStarted)] == ["two", "three"]
    assert len(model.prompts[0].items) == 2
    # A Message input is kept as its item (plain JSON), which sends the same request.
    assert model.prompts[1].items == (user_item("three"),)


async def test_bad_input_is_a_clear_type_error() -> None:
    agent = Agent(FakeModelClient([]))
    with pytest.raises(TypeError, match="run input"):
        await agent.run(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty list"):
        await agent.run([])


async def test_one_runtime_and_agent_serve_concurrent_runs_independently() -> None:
    def answer(prompt: AgentPrompt) -> AgentModelResult:
        return reply(f"echo {prompt.items[0]['content'][0]['text']}")

    model = FakeModelClient([answer] * 10)
    agent = Agent(model)
    results: dict[int, str] = {}

    async def one(i: int) -> None:
        results[i] = (await agent.run(f"q{i}")).output_text

    async with anyio.create_task_group() as tg:
        for i in range(10):
            tg.start_soon(one, i)

    assert results == {i: f"echo q{i}" for i in range(10)}


async def test_tool_started_events_carry_the_step() -> None:
    model = FakeModelClient(
        [
            reply("x", tool_calls=[("add", {"a": 1, "b": 1})]),
            reply(tool_calls=[("add", {"a": 2, "b": 2})]),
            reply("y"),
        ]
    )
    agent = Agent(model, tools=[add])
    recorder = Recorder(agent)

    result = await agent.run("go")

    assert [e.step for e in recorder.of(ToolStarted)] == [0, 1]
    assert result.steps == 3
    assert result.output_text == "y"


async def test_concurrent_runs_that_overlap_in_their_tools_stay_isolated() -> None:
    n = 3
    started = 0
    all_started = anyio.Event()

    @tool
    async def lookup(q: str, ctx: ToolContext) -> str:
        """Answers once the tool of every run has started (so the runs really overlap)."""
        nonlocal started
        started += 1
        if started == n:
            all_started.set()
        await all_started.wait()
        await ctx.emit_progress(f"progress {q}")
        return f"result {q}"

    def answer(prompt: AgentPrompt) -> AgentModelResult:
        question = prompt.items[0]["content"][0]["text"]
        if len(prompt.items) == 1:
            return reply(tool_calls=[("lookup", {"q": question})], usage=(1, 1))
        return reply(f"answer to {question}: {prompt.items[-1]['output']}", usage=(1, 1))

    agent = Agent(FakeModelClient([answer] * (2 * n)), tools=[lookup])
    recorder = Recorder(agent)
    results: dict[int, Any] = {}

    async def one(i: int) -> None:
        results[i] = await agent.run(f"q{i}")

    with anyio.fail_after(5):  # a deadlock guard: the tools wait for each other across runs
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, i)

    assert len({r.run_id for r in results.values()}) == n
    for i, result in results.items():
        assert result.output_text == f"answer to q{i}: result q{i}"
        assert outputs(result.new_items) == [(result.tool_calls[0].id, f"result q{i}")]
        assert result.usage == TokenUsage(2, 2, 4)
        events = [e for e in recorder.events if e.run_id == result.run_id]
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert [type(e).__name__ for e in events if isinstance(e, RunFinished)] == ["RunFinished"]
        assert [e.message for e in events if isinstance(e, ToolProgress)] == [f"progress q{i}"]


async def test_run_and_stream_are_one_loop_with_the_same_events_and_result() -> None:
    def make_agent() -> Agent:
        script = [reply(tool_calls=[("c1", "add", {"a": 1, "b": 2})], usage=(3, 1)), reply("3", usage=(2, 1))]
        # The same model path both ways (stream() would otherwise stream the model calls).
        return Agent(FakeModelClient(script), tools=[add], options=AgentOptions(stream=False))

    awaited = make_agent()
    recorder = Recorder(awaited)
    ran = await awaited.run("go", run_id="run_same")
    async with make_agent().stream("go", run_id="run_same") as run:
        streamed = [event async for event in run]

    def shape(events: list[Any]) -> list[tuple[str, int, int]]:
        return [(type(e).__name__, e.seq, e.step) for e in events]

    assert shape(recorder.events) == shape(streamed)
    got = run.result
    assert (got.output_text, got.stop_reason, got.steps, got.usage) == (
        ran.output_text,
        ran.stop_reason,
        ran.steps,
        ran.usage,
    )
    assert got.new_items == ran.new_items
    assert [r.output for r in got.tool_results] == [r.output for r in ran.tool_results]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
async def test_a_finished_run_is_freed_at_once_without_the_garbage_collector(streamed: bool) -> None:
    # A reference cycle through the run's state would keep every run (memory, events, results) alive until
    # the collector runs: under many concurrent runs that is most of the collector's work.
    model = FakeModelClient([reply(tool_calls=[("c1", "add", {"a": 1, "b": 2})]), reply("3")])
    agent = Agent(model, tools=[add])
    gc.collect()
    gc.disable()
    try:
        if streamed:
            async with agent.stream("go") as run:
                async for _ in run:
                    pass
            del run
        else:
            await agent.run("go")
        alive = [o for o in gc.get_objects() if isinstance(o, RunContext | ToolExecutor | EventBus)]
    finally:
        gc.enable()
    assert alive == []


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
async def test_an_answer_cut_at_the_token_limit_stops_as_truncated(streamed: bool) -> None:
    agent = Agent(FakeModelClient([reply("The answer is a long expl", finish_reason=FinishReason.LENGTH)]))
    if streamed:
        async with agent.stream("explain") as run:
            await run.wait()
        result = run.result
    else:
        result = await agent.run("explain")
    assert result.stop_reason is StopReason.TRUNCATED
    assert result.output_text == "The answer is a long expl"  # what the model wrote is kept
