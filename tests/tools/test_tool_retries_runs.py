"""Tool retry limits in whole runs: a tool the model keeps getting wrong fails the run with
``ToolRetriesExceeded`` through the normal failure path (one ``RunFailed``, memory paired, the partial
result kept) instead of looping until ``max_steps``; ``AgentOptions(max_tool_retries=...)`` and
``@tool(max_retries=...)`` set the limit; eager calls count, CodeAct's calls from code do not."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import anyio
import orjson
import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.items import tool_call_ids, tool_output_call_id
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions
from agentflow.events import RunFailed, RunFinished, ToolCallRequested, ToolFailed, ToolSucceeded
from agentflow.model.events import Event
from agentflow.result import StopReason
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.runtimes.errors import AgentRunError, ToolRetriesExceeded
from agentflow.sandbox import CodeResult, ExecutionLimits
from agentflow.sandbox.executor import ToolInvoker
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import RejectCall, tool

rejected: list[str] = []


@tool
async def find(name: str) -> str:
    """Find a city: only Paris is known."""
    if name != "Paris":
        rejected.append(name)
        raise RejectCall(f"no city is named {name!r}; use its exact name")
    return "48.86 N, 2.35 E"


def finds(*names: str, usage: tuple[int, int] = (10, 2)) -> list[Any]:
    return [reply(tool_calls=[("find", {"name": name})], usage=usage) for name in names]


def record(agent: Agent[Any]) -> list[Event]:
    events: list[Event] = []
    agent.on(None, events.append)
    return events


def check_failed_once(events: Sequence[Event]) -> RunFailed:
    """Every announced call ends exactly once, and the run has one terminal event, ``RunFailed``, last."""
    announced = [e.call.id for e in events if isinstance(e, ToolCallRequested)]
    ends = Counter(e.call.id for e in events if isinstance(e, ToolSucceeded | ToolFailed))
    assert ends == Counter(announced), (announced, ends)
    terminals = [e for e in events if isinstance(e, RunFailed | RunFinished)]
    assert len(terminals) == 1
    assert isinstance(events[-1], RunFailed)
    return events[-1]


def check_paired(items: Sequence[Any]) -> None:
    """Memory pairs every tool call with exactly one output."""
    calls = [c for item in items for c in tool_call_ids(item)]
    outputs = [o for item in items if (o := tool_output_call_id(item)) is not None]
    assert Counter(calls) == Counter(outputs), (calls, outputs)


async def test_a_tool_the_model_keeps_getting_wrong_fails_the_run_after_its_retries() -> None:
    rejected.clear()
    memory = InMemoryMemory()
    model = FakeModelClient(finds(*(f"Pariss{i}" for i in range(20))))
    agent = Agent(model, tools=[find], memory=memory)
    events = record(agent)

    with anyio.fail_after(5), pytest.raises(ToolRetriesExceeded) as raised:
        await agent.run("Where is Paris?")

    # The default limit, 3: four failing steps in a row, not max_steps' twenty model calls.
    assert len(rejected) == 4
    assert len(model.prompts) == 4
    error = raised.value
    assert isinstance(error, AgentRunError)
    assert (error.tool, error.max_retries, error.error_type) == ("find", 3, "exception")
    assert error.error == "no city is named 'Pariss3'; use its exact name"
    failed = check_failed_once(events)
    assert (failed.error_type, failed.error) == ("ToolRetriesExceeded", str(error))
    # The partial result is the run's as it ended: every step's call and result, the usage of every call.
    partial = error.partial
    assert partial is failed.partial is error.run_result
    assert partial.stop_reason is StopReason.ERROR
    assert partial.run_id == failed.run_id
    assert [r.error for r in partial.tool_results] == [
        f"no city is named 'Pariss{i}'; use its exact name" for i in range(4)
    ]
    assert partial.usage.total_tokens == 48
    assert partial.new_items == tuple(memory.items)  # the input, then four calls and their results
    assert len(memory.items) == 9
    check_paired(memory.items)


async def test_the_other_calls_of_the_step_are_cancelled_and_answered() -> None:
    cancelled: list[str] = []

    @tool
    async def slow(key: str) -> str:
        """A slow lookup."""
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.append(key)
        return key

    strict = tool(max_retries=0)(find.fn)
    memory = InMemoryMemory()
    turn = reply(tool_calls=[("c1", "slow", {"key": "a"}), ("c2", "find", {"name": "Lyon"})])
    agent = Agent(FakeModelClient([turn]), tools=[slow, strict], memory=memory)
    events = record(agent)

    with anyio.fail_after(5), pytest.raises(ToolRetriesExceeded, match="failed in 1 step,"):
        await agent.run("Where is Lyon?")

    assert cancelled == ["a"]
    check_failed_once(events)
    by_call = {e.call.id: e.result for e in events if isinstance(e, ToolFailed)}
    assert by_call["c2"].error_type == "exception"
    assert by_call["c1"].error_type == "cancelled"
    check_paired(memory.items)


async def test_no_limit_keeps_the_old_behaviour_the_run_goes_on_until_max_steps() -> None:
    agent = Agent(
        FakeModelClient(finds(*(f"Pariss{i}" for i in range(6)))),
        tools=[find],
        options=AgentOptions(max_steps=6, max_tool_retries=None),
    )
    result = await agent.run("Where is Paris?")
    assert (result.stop_reason, result.steps) == (StopReason.MAX_STEPS, 6)


async def test_the_agent_s_limit_applies_to_tools_without_their_own_and_a_tool_s_own_wins() -> None:
    patient = tool(name="find_patiently", max_retries=5)(find.fn)
    calls = [reply(tool_calls=[("find_patiently", {"name": f"x{i}"})]) for i in range(4)]
    agent = Agent(
        FakeModelClient([*calls, reply("I could not find it.")]),
        tools=[patient],
        options=AgentOptions(max_tool_retries=1),
    )
    result = await agent.run("Where is x?")
    assert result.stop_reason is StopReason.FINAL_ANSWER

    strict = Agent(FakeModelClient(finds("x", "y")), tools=[find], options=AgentOptions(max_tool_retries=1))
    with pytest.raises(ToolRetriesExceeded, match="max_retries=1"):
        await strict.run("Where is x?")


async def test_a_model_that_gets_the_tool_right_in_between_is_not_stopped() -> None:
    names = ["a", "b", "c", "Paris"] * 3
    agent = Agent(FakeModelClient([*finds(*names), reply("Found it.")]), tools=[find])
    result = await agent.run("Where is Paris?")
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "Found it.")


async def test_made_up_tool_names_end_the_run_too() -> None:
    turns = [reply(tool_calls=[(name, {})]) for name in ("search", "web_search", "lookup", "google", "bing")]
    agent = Agent(FakeModelClient(turns), tools=[find])
    with pytest.raises(ToolRetriesExceeded) as raised:
        await agent.run("Search the web.")
    assert (raised.value.unknown, raised.value.tool) == (True, "google")


async def test_an_eager_call_counts_as_any_call() -> None:
    eager = tool(eager=True, max_retries=1)(find.fn)
    memory = InMemoryMemory()
    agent = Agent(
        FakeModelClient(finds("x", "y", "z")),
        tools=[eager],
        memory=memory,
        options=AgentOptions(stream=True),
    )
    events = record(agent)
    with anyio.fail_after(5), pytest.raises(ToolRetriesExceeded, match="failed in 2 steps in a row"):
        await agent.run("Where is x?")
    check_failed_once(events)
    check_paired(memory.items)


def code(source: str) -> str:
    return orjson.dumps({"type": "code", "language": "python", "code": source}).decode()


class CatchingExecutor:
    """A ``CodeExecutor`` whose code calls ``find`` with a wrong name and catches the error, as the model's
    code may (``try: find(...) except ToolError: ...``)."""

    def __init__(self) -> None:
        self.calls = 0

    async def execute(
        self, code: str, tools: ToolInvoker, tool_names: Sequence[str], limits: ExecutionLimits
    ) -> CodeResult:
        self.calls += 1
        result = await tools("find", {"name": f"Pariss{self.calls}"})
        return CodeResult(ok=True, value=result.output)

    async def aclose(self) -> None:
        return None


async def test_calls_from_codeact_code_are_not_counted() -> None:
    sandbox = CatchingExecutor()
    runtime = CodeActRuntime(CodeActOptions(executor=sandbox, react=True))
    steps = [reply(code("find(name='Pariss')")) for _ in range(6)]
    model = FakeModelClient([*steps, reply('{"type":"final","output":"not found"}')])
    agent = Agent(model, runtime=runtime, tools=[find], options=AgentOptions(max_tool_retries=0))

    result = await agent.run("Where is Paris?")

    assert sandbox.calls == 6
    assert all(not r.ok for r in result.tool_results)
    assert result.stop_reason is StopReason.FINAL_ANSWER


# -- the option ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "error"), [(-1, ValueError), (True, ValueError), (2.0, ValueError)])
def test_max_tool_retries_is_checked_when_the_options_are_built(
    value: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match=r"AgentOptions\.max_tool_retries must be an int >= 0"):
        AgentOptions(max_tool_retries=value)  # type: ignore[arg-type]


def test_the_default_is_three_and_none_is_no_limit() -> None:
    assert AgentOptions().max_tool_retries == 3
    assert AgentOptions(max_tool_retries=None).max_tool_retries is None


def test_a_peer_s_retries_keyword_says_where_retries_are_set_here() -> None:
    with pytest.raises(TypeError) as raised:
        Agent(FakeModelClient([]), retries=2)  # type: ignore[call-overload]
    assert str(raised.value) == (
        "Agent() got an unexpected keyword argument 'retries': how many times in a row the model may get a "
        "tool wrong is options=AgentOptions(max_tool_retries=...) (one tool's: @tool(max_retries=...)); a "
        "final answer's retries are output_type=OutputType(T, retries=...)"
    )
    with pytest.raises(TypeError, match=r"AgentOptions\(max_tool_retries=2\)"):
        AgentOptions(tool_retries=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"retry=RetryPolicy\(max_retries=...\)"):
        AgentOptions(max_retries=2)  # type: ignore[call-arg]


def test_a_peer_s_tool_keywords_say_their_name_here() -> None:
    with pytest.raises(TypeError) as raised:
        tool(retries=2)  # type: ignore[call-overload]
    assert str(raised.value) == (
        "tool() got unexpected keyword argument 'retries' (did you mean max_retries=?); it takes name, "
        "description, timeout, strict, inline, eager, on_error, return_direct, needs_approval, max_retries, "
        "enabled, input_guardrails, output_guardrails"
    )
    with pytest.raises(TypeError, match=r"'requires_approval' \(did you mean needs_approval=\?\), 'timout'"):
        tool(requires_approval=True, timout=3)  # type: ignore[call-overload]

    def lookup(city: str) -> str:
        return city

    with pytest.raises(TypeError, match=r"'name_override' \(did you mean name=\?\)"):
        tool(lookup, name_override="find")  # type: ignore[call-overload]
