"""Limits: max_steps (each policy), tool calls, token budget and wall clock, each with its stop reason."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from runtime_support import Recorder, assert_memory_valid, outputs

from agentflow.agent.agent import Agent
from agentflow.agent.options import DEFAULT_FINAL_ANSWER_PROMPT, AgentOptions, ModelSettings
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.events import RunCancelled, RunFailed, RunFinished, StepStarted, ToolFailed
from agentflow.model.events import ModelCompleted, TextDelta
from agentflow.model.response import TokenUsage
from agentflow.model.tools import ToolChoice
from agentflow.result import StopReason
from agentflow.runtimes import MaxStepsExceeded
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import ToolContext, tool


@tool
async def lookup(q: str) -> str:
    """Look something up."""
    return f"about {q}"


def looping(prompt: AgentPrompt) -> AgentModelResult:
    """A model that always asks for one more tool call."""
    return reply(tool_calls=[("lookup", {"q": "more"})], usage=(10, 1))


async def test_default_max_steps_is_20_and_exhaustion_is_reported_not_silent() -> None:
    model = FakeModelClient([looping] * 20)
    agent = Agent(model, tools=[lookup])
    recorder = Recorder(agent)

    result = await agent.run("loop")

    assert AgentOptions().max_steps == 20
    assert result.stop_reason is StopReason.MAX_STEPS
    assert result.steps == 20
    assert len(recorder.of(StepStarted)) == 20
    assert len(result.tool_calls) == 20
    assert result.usage.total_tokens == 20 * 11
    [terminal] = recorder.terminals()
    assert isinstance(terminal, RunFinished)
    assert terminal.result.stop_reason is StopReason.MAX_STEPS
    assert_memory_valid(result.new_items)


async def test_on_max_steps_final_answer_makes_one_tool_less_call() -> None:
    model = FakeModelClient([looping, looping, reply("Best guess: 42.", usage=(30, 5))])
    agent = Agent(model, tools=[lookup], options=AgentOptions(max_steps=2, on_max_steps="final_answer"))

    result = await agent.run("loop")

    assert result.stop_reason is StopReason.MAX_STEPS
    assert result.output_text == "Best guess: 42."
    assert result.steps == 3
    assert result.usage.total_tokens == 11 + 11 + 35
    final_prompt = model.prompts[2]
    assert final_prompt.tool_choice == ToolChoice.none()
    assert final_prompt.items[-1]["content"][0]["text"] == DEFAULT_FINAL_ANSWER_PROMPT
    # The request for an answer is part of that prompt only, never of memory.
    assert DEFAULT_FINAL_ANSWER_PROMPT not in str(result.new_items)
    assert result.new_items[-1]["content"][0]["text"] == "Best guess: 42."


async def test_final_answer_call_that_still_calls_tools_gets_them_refused_and_memory_stays_valid() -> None:
    model = FakeModelClient([looping, looping])
    agent = Agent(model, tools=[lookup], options=AgentOptions(max_steps=1, on_max_steps="final_answer"))
    recorder = Recorder(agent)

    result = await agent.run("loop")

    assert result.stop_reason is StopReason.MAX_STEPS
    refused = recorder.of(ToolFailed)[-1]
    assert refused.result.error_type == "cancelled"
    assert "step limit" in refused.result.output
    assert_memory_valid(result.new_items)


async def test_on_max_steps_raise_raises_a_typed_error_with_the_partial_result() -> None:
    model = FakeModelClient([looping] * 3)
    agent = Agent(model, tools=[lookup], options=AgentOptions(max_steps=3, on_max_steps="raise"))
    recorder = Recorder(agent)

    with pytest.raises(MaxStepsExceeded) as caught:
        await agent.run("loop")

    assert caught.value.max_steps == 3
    assert caught.value.partial.stop_reason is StopReason.MAX_STEPS
    assert caught.value.partial.steps == 3
    [terminal] = recorder.terminals()
    assert isinstance(terminal, RunFailed)
    assert terminal.error_type == "MaxStepsExceeded"
    assert terminal.partial is not None
    assert terminal.partial.steps == 3


async def test_max_steps_none_means_unlimited() -> None:
    model = FakeModelClient([looping] * 25 + [reply("done")])
    result = await Agent(model, tools=[lookup], options=AgentOptions(max_steps=None)).run("loop")
    assert (result.stop_reason, result.steps) == (StopReason.FINAL_ANSWER, 26)


async def test_bad_limits_fail_when_the_options_are_built() -> None:
    with pytest.raises(ValueError, match="max_steps"):
        AgentOptions(max_steps=-1)
    with pytest.raises(ValueError, match="on_max_steps"):
        AgentOptions(on_max_steps="explode")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        AgentOptions(timeout=0)


async def test_max_tool_calls_refuses_calls_beyond_the_limit_and_stops() -> None:
    model = FakeModelClient(
        [
            reply(
                tool_calls=[
                    ("c1", "lookup", {"q": "a"}),
                    ("c2", "lookup", {"q": "b"}),
                    ("c3", "lookup", {"q": "c"}),
                ]
            )
        ]
    )
    agent = Agent(model, tools=[lookup], options=AgentOptions(max_tool_calls=2))

    result = await agent.run("go")

    assert result.stop_reason is StopReason.MAX_TOOL_CALLS
    assert [r.ok for r in result.tool_results] == [True, True, False]
    assert "limit of 2 tool calls" in result.tool_results[2].output
    assert [c for c, _ in outputs(result.new_items)] == ["c1", "c2", "c3"]
    assert len(model.prompts) == 1
    assert_memory_valid(result.new_items)


async def test_max_tool_calls_counts_across_steps() -> None:
    model = FakeModelClient([looping, looping, looping])
    result = await Agent(model, tools=[lookup], options=AgentOptions(max_tool_calls=2)).run("go")
    assert result.stop_reason is StopReason.MAX_TOOL_CALLS
    assert [r.ok for r in result.tool_results] == [True, True, False]
    assert result.steps == 3


async def test_token_budget_stops_before_running_more_tools() -> None:
    model = FakeModelClient([looping, looping, looping])
    agent = Agent(model, tools=[lookup], options=AgentOptions(max_tokens=20))

    result = await agent.run("go")

    # 11 tokens after step 0 (under budget: its tool runs); 22 after step 1 (its tool is not run).
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert result.steps == 2
    assert [r.ok for r in result.tool_results] == [True, False]
    assert "token budget" in result.tool_results[1].output
    assert result.usage.total_tokens == 22
    assert_memory_valid(result.new_items)


async def test_the_final_answer_call_after_max_steps_is_not_made_once_a_tool_spent_the_budget() -> None:
    @tool
    async def summarise(ctx: ToolContext) -> str:
        """Summarise with a model of its own."""
        ctx.add_usage(TokenUsage(500, 500, 1000))
        return "summary"

    model = FakeModelClient([reply(tool_calls=[("summarise", {})], usage=(10, 10)), reply("final")])
    options = AgentOptions(max_steps=1, on_max_steps="final_answer", max_tokens=100)
    result = await Agent(model, tools=[summarise], options=options).run("go")

    assert len(model.prompts) == 1
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert result.usage.total_tokens == 1020


async def test_usages_without_a_total_count_their_input_and_output_toward_the_budget() -> None:
    # A client that reports input and output only (no total) after one that reports all three.
    turns = [
        reply(tool_calls=[("lookup", {"q": "a"})], usage=TokenUsage(40, 40, 80)),
        reply(tool_calls=[("lookup", {"q": "b"})], usage=TokenUsage(40, 40)),
        reply(tool_calls=[("lookup", {"q": "c"})], usage=TokenUsage(40, 40)),
        reply("done", usage=TokenUsage(40, 40)),
    ]
    model = FakeModelClient(turns)
    result = await Agent(model, tools=[lookup], options=AgentOptions(max_tokens=100)).run("go")

    assert len(model.prompts) == 2
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert result.usage.total_tokens == 160


async def test_a_final_answer_over_the_token_budget_is_still_a_final_answer() -> None:
    model = FakeModelClient([reply("done", usage=(100, 100))])
    result = await Agent(model, options=AgentOptions(max_tokens=10)).run("go")
    assert result.stop_reason is StopReason.FINAL_ANSWER


async def test_wall_clock_limit_interrupts_a_hanging_model_call() -> None:
    closed: list[str] = []

    async def hanging(_prompt: AgentPrompt) -> Any:
        try:
            yield TextDelta("thinking")
            await anyio.sleep_forever()
            yield ModelCompleted(reply("never"))
        finally:
            closed.append("closed")

    model = FakeModelClient([reply(tool_calls=[("lookup", {"q": "a"})], usage=(5, 5)), hanging])
    agent = Agent(model, tools=[lookup], options=AgentOptions(timeout=0.2, stream=True))
    recorder = Recorder(agent)

    with anyio.fail_after(10):  # guards the test against a hang; the run must end through its own deadline
        result = await agent.run("go")

    assert result.stop_reason is StopReason.DEADLINE
    assert closed == ["closed"]
    assert model.streams_open == 0
    assert result.usage.total_tokens == 10
    assert result.steps == 1
    [terminal] = recorder.terminals()
    assert isinstance(terminal, RunCancelled)
    assert terminal.partial == result
    assert_memory_valid(result.new_items)


async def test_wall_clock_limit_interrupts_a_hanging_tool_and_completes_memory() -> None:
    @tool
    async def hang() -> str:
        """Never returns."""
        await anyio.sleep_forever()
        return "never"

    model = FakeModelClient([reply(tool_calls=[("c1", "lookup", {"q": "a"}), ("c2", "hang", {})])])
    agent = Agent(model, tools=[lookup, hang], options=AgentOptions(timeout=0.2, tool_timeout=None))

    with anyio.fail_after(10):
        result = await agent.run("go")

    assert result.stop_reason is StopReason.DEADLINE
    assert [(r.call_id, r.ok) for r in result.tool_results] == [("c1", True), ("c2", False)]
    assert result.tool_results[1].error_type == "cancelled"
    assert "time limit" in result.tool_results[1].output
    assert_memory_valid(result.new_items)


async def test_max_tool_concurrency_none_runs_every_call_of_a_step_at_once() -> None:
    count = 12  # more than the default limit of 8
    started = 0
    all_started = anyio.Event()

    @tool
    async def wait_for_all(n: int) -> int:
        """Returns once every call has started."""
        nonlocal started
        started += 1
        if started == count:
            all_started.set()
        await all_started.wait()  # deadlocks unless all calls run at the same time
        return n

    calls = [("wait_for_all", {"n": n}) for n in range(count)]
    model = FakeModelClient([reply(tool_calls=calls), reply("done")])
    agent = Agent(model, tools=[wait_for_all], options=AgentOptions(max_tool_concurrency=None))
    with anyio.fail_after(5):
        result = await agent.run("go")
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert [r.output for r in result.tool_results] == [str(n) for n in range(count)]


@pytest.mark.parametrize(
    "choice",
    ["required", ToolChoice.required(), ToolChoice.function("echo"), {"type": "function", "name": "echo"}],
)
async def test_a_forced_tool_choice_is_dropped_once_tools_have_run(choice: Any) -> None:
    @tool
    async def echo(x: int) -> int:
        """Echo."""
        return x

    model = FakeModelClient([reply(tool_calls=[("echo", {"x": 1})]), reply("The answer is 1.")])
    agent = Agent(model, tools=[echo], settings=ModelSettings(tool_choice=choice))
    result = await agent.run("go")
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert model.prompts[0].tool_choice is not None
    assert model.prompts[1].tool_choice is None


async def test_reset_tool_choice_false_keeps_forcing_every_step() -> None:
    @tool
    async def echo(x: int) -> int:
        """Echo."""
        return x

    model = FakeModelClient([reply(tool_calls=[("echo", {"x": n})]) for n in range(3)])
    options = AgentOptions(max_steps=3, reset_tool_choice=False)
    agent = Agent(model, tools=[echo], settings=ModelSettings(tool_choice="required"), options=options)
    result = await agent.run("go")
    assert result.stop_reason is StopReason.MAX_STEPS
    assert all(p.tool_choice is not None for p in model.prompts)


async def test_a_tool_choice_that_forces_nothing_is_kept() -> None:
    @tool
    async def echo(x: int) -> int:
        """Echo."""
        return x

    model = FakeModelClient([reply(tool_calls=[("echo", {"x": 1})]), reply("done")])
    agent = Agent(model, tools=[echo], settings=ModelSettings(tool_choice="auto"))
    await agent.run("go")
    assert [p.tool_choice for p in model.prompts] == ["auto", "auto"]
