"""``Agent.as_tool`` with in-process fakes: how the tool is made, how a nested run ends when its parent's call
is cut (every way that matters), sessions, and ``ToolContext``'s usage reporting that it relies on.

A cut nested run leaves nothing behind: its model stream is closed, no task is left, it publishes exactly one
``RunCancelled`` (forwarded when the parent is observed), the parent's memory is valid and the tokens the
nested run spent stay counted.
"""

from __future__ import annotations

import asyncio
import gc
import math
from collections.abc import AsyncIterator
from typing import Any, Literal

import anyio
import attrs
import pytest
from runtime_support import assert_memory_valid

from agentflow.agent.agent import Agent
from agentflow.agent.as_tool import AgentToolError
from agentflow.agent.options import AgentOptions
from agentflow.agent.prompt import AgentPrompt
from agentflow.events import RunCancelled, RunFinished, ToolProgress
from agentflow.model.events import Event, ModelEvent, TextDelta
from agentflow.model.messages import ToolCall
from agentflow.model.response import FinishReason, TokenUsage
from agentflow.result import StopReason
from agentflow.runtimes.context import RunContext
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import ToolContext, ToolExecutor, tool


def usage(total: int) -> TokenUsage:
    return TokenUsage(input_tokens=total - 1, output_tokens=1, total_tokens=total)


# -- making the tool ---------------------------------------------------------------------------------------


def test_the_tool_is_named_after_the_agent_in_a_functions_style() -> None:
    planner = Agent(FakeModelClient([]), name="Trip planner (v2)")
    made = planner.as_tool(description="Plans trips.")
    assert made.name == "trip_planner_v2"
    assert made.description == "Plans trips."
    assert made.spec.parameters["properties"]["input"]["type"] == "string"
    assert made.spec.parameters["required"] == ["input"]
    assert made.timeout == math.inf  # a run may take longer than the tools' default limit
    assert made.returns is not None
    assert made.returns.schema == {"type": "string"}
    assert planner.as_tool("plan_trip", "Plans trips.", timeout=None).timeout is None  # the caller's default


def test_an_agent_without_a_name_of_its_own_needs_one() -> None:
    with pytest.raises(TypeError, match=r"as_tool\(\) needs name="):
        Agent(FakeModelClient([])).as_tool(description="Does things.")
    assert Agent(FakeModelClient([])).as_tool("helper", "Does things.").name == "helper"
    with pytest.raises(TypeError, match=r"the agent's name '研究员' has no letters or digits a tool name"):
        Agent(FakeModelClient([]), name="研究员").as_tool(description="Researches.")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"description": None}, TypeError, "needs a description"),
        ({"description": "  "}, TypeError, "non-empty str"),
        ({"name": "two words", "description": "x"}, ValueError, "tool name 'two words' is not valid"),
        ({"description": "x", "timeout": 0}, ValueError, "timeout must be a positive number"),
        ({"description": "x", "forward_events": "yes"}, TypeError, "forward_events"),
    ],
)
def test_bad_options_are_refused_where_they_are_written(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        Agent(FakeModelClient([]), name="Helper").as_tool(**kwargs)


def test_a_session_of_another_agent_is_refused() -> None:
    other = Agent(FakeModelClient([]), name="Other").session()
    with pytest.raises(ValueError, match="a session of this agent"):
        Agent(FakeModelClient([]), name="Helper").as_tool(description="x", session=other)  # type: ignore[arg-type]


def test_an_agent_goes_into_tools_through_as_tool_only() -> None:
    # Agents carry no description for the calling model, so they are not tools by themselves.
    helper = Agent(FakeModelClient([]), name="Helper")
    with pytest.raises(TypeError, match=r"is an agent .*pass agent\.as_tool\(description="):
        Agent(FakeModelClient([]), tools=[helper])  # type: ignore[list-item]


async def test_a_sub_agent_whose_final_answer_is_none_answers_none() -> None:
    # ``output_type=int | None``: None is an answer (nothing found), not a run that stopped short.
    lookup = Agent(FakeModelClient([reply("null")] * 2), name="Order lookup", output_type=int | None)
    direct = await lookup.run("Order 7?")
    assert (direct.stop_reason, direct.output) == (StopReason.FINAL_ANSWER, None)
    turns = [reply(tool_calls=[("order_lookup", {"input": "Order 7?"})]), reply("No such order.")]
    parent = Agent(FakeModelClient(turns), tools=[lookup.as_tool(description="Finds an order's number.")])
    result = await parent.run("Find order 7.")
    [answer] = result.tool_results
    assert answer.ok
    assert (answer.output, answer.value) == ("", None)  # a tool returning None, as every tool


def test_a_structured_agents_tool_describes_its_value() -> None:
    made = Agent(FakeModelClient([]), name="Counter", output_type=list[int]).as_tool(description="Counts.")
    assert made.returns is not None
    assert made.returns.schema == {"type": "array", "items": {"type": "integer"}}  # bare, not wrapped


# -- runs --------------------------------------------------------------------------------------------------


def delegate(task: str = "Ping twice.", name: str = "helper", total: int = 15) -> Any:
    return reply(tool_calls=[(name, {"input": task})], usage=usage(total))


async def test_each_call_is_a_fresh_run_unless_a_session_is_given() -> None:
    sub_model = FakeModelClient([reply("one"), reply("two"), reply("three"), reply("four")])
    helper = Agent(sub_model, name="Helper")
    fresh = Agent(
        FakeModelClient([delegate("A"), delegate("B"), reply("done")]),
        tools=[helper.as_tool(description="Helps.")],
    )
    await fresh.run("Go.")
    assert [len(p.items) for p in sub_model.prompts] == [1, 1]

    chat = helper.session()
    continuing = Agent(
        FakeModelClient([delegate("C"), delegate("D"), reply("done")]),
        tools=[helper.as_tool(description="Helps.", session=chat)],
    )
    await continuing.run("Go.")
    assert [len(p.items) for p in sub_model.prompts[2:]] == [1, 3]  # the second call sees the first
    assert len(chat.items) == 4


async def test_the_same_agent_called_twice_at_once_runs_twice_apart() -> None:
    both = anyio.Event()
    asked: list[int] = []

    async def answer(prompt: AgentPrompt) -> Any:
        asked.append(len(prompt.items))
        if len(asked) == 2:
            both.set()
        await both.wait()  # deadlocks unless both nested runs wait on their model at once
        return reply(f"answer {len(asked)}", usage=usage(10))

    helper = Agent(FakeModelClient([answer, answer]), name="Helper")
    parent = Agent(
        FakeModelClient(
            [reply(tool_calls=[("helper", {"input": "A"}), ("helper", {"input": "B"})]), reply("done")]
        ),
        tools=[helper.as_tool(description="Helps.")],
    )
    with anyio.fail_after(10):
        result = await parent.run("Go.")
    assert asked == [1, 1]  # each its own memory
    assert [r.output for r in result.tool_results] == ["answer 2", "answer 2"]
    assert result.usage.total_tokens == 20


async def test_a_sub_agent_refusing_is_a_tool_error_with_its_refusal() -> None:
    refusal = attrs.evolve(reply(), refusal="I cannot help with that.")
    helper = Agent(FakeModelClient([refusal]), name="Helper")
    parent = Agent(FakeModelClient([delegate(), reply("ok")]), tools=[helper.as_tool(description="Helps.")])
    result = await parent.run("Go.")
    assert result.tool_results[0].error == "AgentToolError: agent 'helper' refused: I cannot help with that."


async def test_calling_the_tool_directly_runs_the_agent() -> None:
    made = Agent(FakeModelClient([reply("hi")]), name="Helper").as_tool(description="Helps.")
    assert await made("Say hi.") == "hi"
    stopped = Agent(FakeModelClient([reply("partial", finish_reason=FinishReason.LENGTH)]), name="Helper")
    with pytest.raises(AgentToolError, match="cut at the model's output-token limit") as caught:
        await stopped.as_tool(description="Helps.")("Say hi.")
    assert caught.value.result is not None
    assert caught.value.result.stop_reason is StopReason.TRUNCATED


# -- a parent's call cut mid-sub-run ---------------------------------------------------------------------

Way = Literal["run.cancel", "task.cancel", "cancel scope", "call timeout", "parent deadline"]
WAYS: list[Way] = ["run.cancel", "task.cancel", "cancel scope", "call timeout", "parent deadline"]


class Hanging:
    """A sub-agent's model: one finished step that spent 30 tokens (a ``ping`` call), then a stream that
    hangs after its first delta until it is cancelled."""

    def __init__(self) -> None:
        self.reached = anyio.Event()
        self.closed: list[str] = []

    def script(self) -> list[Any]:
        async def hang(_prompt: AgentPrompt) -> AsyncIterator[ModelEvent]:
            try:
                yield TextDelta("Pinged; now")
                self.reached.set()
                await anyio.sleep_forever()
            finally:
                self.closed.append("closed")

        return [reply(tool_calls=[("ping", {})], usage=usage(30)), hang]


@tool
async def ping() -> str:
    """Answer pong."""
    return "pong"


@pytest.mark.parametrize("observed", [True, False], ids=["observed", "unobserved"])
@pytest.mark.parametrize("way", WAYS)
async def test_a_cut_call_ends_its_sub_run_cleanly(way: Way, observed: bool) -> None:
    hanging = Hanging()
    helper = Agent(FakeModelClient(hanging.script()), name="Helper", tools=[ping])
    made = helper.as_tool(description="Helps.", timeout=0.05 if way == "call timeout" else math.inf)
    options = AgentOptions(timeout=0.2) if way == "parent deadline" else AgentOptions()
    parent = Agent(
        FakeModelClient([delegate(total=15), reply("Gave up on it.", usage=usage(5))]),
        tools=[made],
        options=options,
    )
    events: list[Event] = []
    if observed:
        parent.on(None, events.append)
    tasks_before = len(asyncio.all_tasks())

    with anyio.fail_after(10):  # a hang guard only: each way ends the call by itself
        if way == "run.cancel":
            async with parent.stream("Go.") as run:
                await hanging.reached.wait()
                await run.cancel()
                await run.wait()
            partial = run.partial
        elif way == "task.cancel":
            task = asyncio.create_task(parent.run("Go."))
            await hanging.reached.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            partial = None
        elif way == "cancel scope":
            async with anyio.create_task_group() as group:
                group.start_soon(parent.run, "Go.")
                await hanging.reached.wait()
                group.cancel_scope.cancel()
            partial = None
        else:
            partial = await parent.run("Go.")

    assert hanging.closed == ["closed"]  # the nested model stream was closed
    assert len(asyncio.all_tasks()) == tasks_before
    if way == "call timeout":
        # Only the call was cut: the parent goes on, with the sub-run's tokens counted.
        assert partial is not None
        assert partial.stop_reason is StopReason.FINAL_ANSWER
        assert partial.tool_results[0].error_type == "timeout"
        assert partial.usage.total_tokens == 15 + 30 + 5
    elif partial is not None:
        assert partial.stop_reason is (
            StopReason.DEADLINE if way == "parent deadline" else StopReason.CANCELLED
        )
        assert partial.tool_results[0].error_type == "cancelled"
        assert partial.usage.total_tokens == 15 + 30  # the sub-run's finished step is kept
        assert_memory_valid(partial.new_items)
    if observed:
        nested = [e.data for e in events if isinstance(e, ToolProgress)]
        assert len([e for e in nested if isinstance(e, RunCancelled)]) == 1
        assert not [e for e in nested if isinstance(e, RunFinished)]
        terminals = [e for e in events if isinstance(e, RunCancelled | RunFinished)]
        assert len(terminals) == 1  # the parent's own
        if way != "call timeout":
            assert isinstance(terminals[0], RunCancelled)
            assert_memory_valid(terminals[0].partial.new_items)
            assert terminals[0].partial.usage.total_tokens == 15 + 30
    else:
        assert events == []


async def test_runs_with_agent_tools_are_freed_without_the_garbage_collector() -> None:
    helper = Agent(FakeModelClient([reply("one"), reply("two")]), name="Helper")
    parent = Agent(
        FakeModelClient([delegate("A"), reply("done"), delegate("B"), reply("done")]),
        tools=[helper.as_tool(description="Helps.")],
    )
    gc.collect()
    gc.disable()
    try:
        await parent.run("Go.")
        async with parent.stream("Go.") as run:  # observed: the nested run's events are forwarded
            await run.wait()
        del run
        alive = [o for o in gc.get_objects() if isinstance(o, RunContext)]
    finally:
        gc.enable()
    assert alive == []


# -- ToolContext: usage and the budget -----------------------------------------------------------------------


async def test_usage_a_tool_reports_counts_toward_the_run_and_its_budget() -> None:
    budgets: list[int | None] = []

    @tool
    def summarise(text: str, ctx: ToolContext) -> str:
        """Summarise a text with a model of its own (a sync tool: reports from its worker thread)."""
        budgets.append(ctx.tokens_left)
        ctx.add_usage(usage(60))
        budgets.append(ctx.tokens_left)
        return text[:5]

    model = FakeModelClient([reply(tool_calls=[("summarise", {"text": "a long text"})], usage=usage(30))])
    agent = Agent(model, tools=[summarise], options=AgentOptions(max_tokens=80))
    result = await agent.run("Summarise.")
    assert budgets == [50, 0]
    assert result.usage.total_tokens == 90
    assert result.stop_reason is StopReason.MAX_TOKENS  # the tool's tokens spent the budget: no next call
    assert len(model.prompts) == 1


async def test_a_tool_executor_on_its_own_takes_a_usage_sink() -> None:
    class Meter:
        def __init__(self) -> None:
            self.total = TokenUsage()

        def add_usage(self, value: TokenUsage) -> None:
            self.total = self.total + value

        def tokens_left(self) -> int | None:
            return None

    @tool
    async def spend(ctx: ToolContext) -> str:
        """Spend some tokens."""
        ctx.add_usage(usage(7))
        return str(ctx.has_listeners())

    async def emit(_event: Event) -> None:
        return None

    meter = Meter()
    executor = ToolExecutor([spend], emit=emit, listening=lambda: False, usage=meter)
    result = await executor.run_call(ToolCall("c1", "spend", "{}"), run_id="r", step=0)
    assert result.output == "False"
    assert meter.total.total_tokens == 7
    bare = ToolExecutor([spend], emit=emit)  # no sink: reported usage goes nowhere, listeners unknown
    assert (await bare.run_call(ToolCall("c2", "spend", "{}"), run_id="r", step=0)).output == "True"


def test_add_usage_outside_the_loop_and_its_threads_says_where_it_works() -> None:
    class Sink:
        def add_usage(self, value: TokenUsage) -> None: ...

        def tokens_left(self) -> int | None:
            return None

    ctx = ToolContext(run_id="r", step=0, call_id="c", tool_name="t", emit=print, usage=Sink())
    with pytest.raises(RuntimeError, match="on the event loop or from a sync tool's worker thread"):
        ctx.add_usage(usage(1))
