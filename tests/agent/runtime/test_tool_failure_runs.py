"""A tool whose failure ends the run (``@tool(on_error="raise")``, ``ToolFatalError``) or reaches the model as
other text (a formatter), in whole runs: ReAct (blocking and streamed, concurrent and sequential calls), eager
calls, CodeAct (the code's call, in the real sandbox and in an executor that swallows what its invoker raises)
and an agent used as a tool.

What every run that a call ends must show: exactly one terminal event, ``RunFailed``, last; the run raises the
call's own exception; every announced call ends exactly once; memory pairs every call with one result.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import attrs
import orjson
import pytest
from runtime_support import Recorder, assert_memory_valid, outputs

from agentflow.agent.agent import Agent
from agentflow.agent.as_tool import AgentToolError
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.agent.prompt import AgentPrompt
from agentflow.events import (
    CodeExecuted,
    RunFailed,
    RunFinished,
    ToolCallRequested,
    ToolFailed,
    ToolSucceeded,
)
from agentflow.model.events import Event, ModelEvent, TextDelta, ToolCallReady, ToolCallStarted
from agentflow.model.messages import ToolCall
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.result import StopReason
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.sandbox import CodeResult, ExecutionLimits
from agentflow.sandbox.executor import ToolInvoker
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import ToolFatalError, tool


class Declined(Exception):
    """The payment provider's refusal: must never reach the model, nor be retried by it."""


charged: list[int] = []


@tool(on_error="raise")
async def charge(amount: int) -> str:
    """Charge the customer's card."""
    charged.append(amount)
    raise Declined(f"card declined for {amount} (provider code 51)")


def check_ends_once(events: Sequence[Event]) -> None:
    """Every announced call ends exactly once, after it is announced, and the run has one terminal event,
    ``RunFailed``, last."""
    announced = [e.call.id for e in events if isinstance(e, ToolCallRequested)]
    ends = Counter(e.call.id for e in events if isinstance(e, ToolSucceeded | ToolFailed))
    assert len(announced) == len(set(announced))
    assert ends == Counter(announced), (announced, ends)
    terminals = [e for e in events if isinstance(e, RunFailed | RunFinished)]
    assert len(terminals) == 1
    assert isinstance(events[-1], RunFailed)


def parallel_slow() -> tuple[Any, list[str]]:
    cancelled: list[str] = []

    @tool
    async def slow(key: str) -> str:
        """A slow lookup."""
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.append(key)
        return key

    return slow, cancelled


# -- ReAct -------------------------------------------------------------------------------------------------


async def test_a_raise_tool_fails_the_run_with_its_exception_and_cancels_the_step_s_other_calls() -> None:
    slow, cancelled = parallel_slow()
    memory = InMemoryMemory()
    turn = reply(tool_calls=[("c1", "slow", {"key": "a"}), ("c2", "charge", {"amount": 5})], usage=(7, 3))
    agent = Agent(FakeModelClient([turn]), tools=[slow, charge], memory=memory)
    recorder = Recorder(agent)

    with anyio.fail_after(5), pytest.raises(Declined, match="provider code 51") as raised:
        await agent.run("Pay for my order.")

    check_ends_once(recorder.events)
    [failed] = recorder.terminals()
    assert isinstance(failed, RunFailed)
    assert (failed.error_type, failed.error) == ("Declined", "card declined for 5 (provider code 51)")
    assert cancelled == ["a"]
    # The call that failed keeps its own result; the one it cut gets the run's "failed" one.
    by_call = {e.call.id: e.result for e in recorder.of(ToolFailed)}
    assert by_call["c2"].error == "Declined: card declined for 5 (provider code 51)"
    assert (by_call["c1"].error_type, by_call["c1"].error) == (
        "cancelled",
        "the run failed before this tool call finished",
    )
    partial = failed.partial
    assert partial is not None
    assert partial is raised.value.run_result  # type: ignore[attr-defined]
    assert partial.stop_reason is StopReason.ERROR
    assert [r.call_id for r in partial.tool_results] == ["c1", "c2"]
    assert partial.usage.total_tokens == 10
    assert_memory_valid(memory.items)
    assert [call_id for call_id, _ in outputs(memory.items)] == ["c1", "c2"]


async def test_the_sequential_calls_after_the_one_ending_a_streamed_run_never_start() -> None:
    ran: list[str] = []

    @tool
    async def note(text: str) -> str:
        """Note something."""
        ran.append(text)
        return "noted"

    memory = InMemoryMemory()
    calls = [("c1", "note", {"text": "x"}), ("c2", "charge", {"amount": 1}), ("c3", "note", {"text": "y"})]
    agent = Agent(
        FakeModelClient([reply(tool_calls=calls)]),
        tools=[note, charge],
        memory=memory,
        settings=ModelSettings(parallel_tool_calls=False),
    )

    async with agent.stream("go") as run:
        events = [e async for e in run]

    check_ends_once(events)
    assert ran == ["x"]
    assert isinstance(run.error, Declined)
    with pytest.raises(Declined):
        _ = run.result
    ends = [(e.call.id, type(e).__name__, e.result.error_type) for e in events if isinstance(e, ToolFailed)]
    assert ends == [("c2", "ToolFailed", "exception"), ("c3", "ToolFailed", "cancelled")]
    assert_memory_valid(memory.items)


async def test_tool_fatal_error_ends_the_run_from_a_tool_with_the_default_policy() -> None:
    @tool
    async def export(table: str) -> str:
        """Export a table."""
        raise ToolFatalError(f"the export of {table} would exceed the quota; stop and tell the operator")

    memory = InMemoryMemory()
    model = FakeModelClient([reply(tool_calls=[("export", {"table": "users"})])])
    agent = Agent(model, tools=[export], memory=memory)
    recorder = Recorder(agent)

    with pytest.raises(ToolFatalError, match="exceed the quota"):
        await agent.run("Export users.")

    check_ends_once(recorder.events)
    assert_memory_valid(memory.items)


async def test_calls_ending_the_run_at_the_same_instant_raise_the_first_one_not_a_group() -> None:
    started: list[int] = []
    all_started = anyio.Event()

    @tool
    async def export(part: int) -> str:
        """Export a part; every part finds the same quota exceeded at the same time."""
        started.append(part)
        if len(started) == 3:
            all_started.set()
        await all_started.wait()
        raise ToolFatalError(f"part {part}: the export would exceed the quota")

    memory = InMemoryMemory()
    calls = [(f"c{part}", "export", {"part": part}) for part in range(3)]
    agent = Agent(FakeModelClient([reply(tool_calls=calls)]), tools=[export], memory=memory)
    recorder = Recorder(agent)

    with anyio.fail_after(5), pytest.raises(ToolFatalError, match="exceed the quota") as raised:
        await agent.run("Export everything.")

    assert not isinstance(raised.value, BaseExceptionGroup)
    # The calls that had not raised yet when the first one did are cancelled; the others are noted.
    [others, _run_result_note] = raised.value.__notes__
    assert re.fullmatch(r"[12] more call\(s\) of the same step ended the run at the same time: .*", others)
    check_ends_once(recorder.events)
    [failed] = recorder.terminals()
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "ToolFatalError"
    ended = 1 + int(others[0])
    ends = sorted(e.result.error_type for e in recorder.of(ToolFailed))
    assert ends == ["cancelled"] * (3 - ended) + ["exception"] * ended
    assert_memory_valid(memory.items)


async def test_a_raise_tool_that_times_out_fails_the_run_with_timeout_error() -> None:
    @tool(timeout=0.01, on_error="raise")
    async def transfer(amount: int) -> str:
        """Transfer money (whether it went through is unknown once it times out)."""
        await anyio.sleep_forever()
        return "done"

    memory = InMemoryMemory()
    model = FakeModelClient([reply(tool_calls=[("transfer", {"amount": 9})])])
    agent = Agent(model, tools=[transfer], memory=memory)
    recorder = Recorder(agent)

    with anyio.fail_after(5), pytest.raises(TimeoutError, match=r"tool 'transfer' timed out after 0\.01 s"):
        await agent.run("Send 9.")

    check_ends_once(recorder.events)
    [failed] = recorder.of(ToolFailed)
    assert failed.result.error_type == "timeout"
    assert_memory_valid(memory.items)


async def test_a_formatter_s_text_is_what_the_model_reads_next() -> None:
    def hide(exc: Exception, call: ToolCall) -> str:
        return f"{call.name} is unavailable right now; tell the user to try again later."

    @tool(on_error=hide)
    async def balance(account: str) -> str:
        """The balance of an account."""
        raise ConnectionError("postgres://admin:hunter2@10.0.0.7 refused the connection")

    model = FakeModelClient([reply(tool_calls=[("c1", "balance", {"account": "A"})]), reply("Sorry, later.")])
    agent = Agent(model, tools=[balance])

    result = await agent.run("What is my balance?")

    assert result.output_text == "Sorry, later."
    sent = outputs(model.prompts[1].items)
    assert sent == [("c1", "balance is unavailable right now; tell the user to try again later.")]
    assert "hunter2" not in orjson.dumps(model.prompts[1].items).decode()
    [failed] = result.tool_results
    assert failed.error == "ConnectionError: postgres://admin:hunter2@10.0.0.7 refused the connection"


async def test_the_conversation_a_failed_run_leaves_goes_on_in_the_next_run() -> None:
    memory = InMemoryMemory()
    model = FakeModelClient(
        [reply(tool_calls=[("c1", "charge", {"amount": 2})]), reply("Your card was declined.")]
    )
    agent = Agent(model, tools=[charge], memory=memory)

    with pytest.raises(Declined):
        await agent.run("Pay.")
    result = await agent.run("What happened?")

    assert result.output_text == "Your card was declined."
    assert_memory_valid(memory.items)
    # The next run's model reads the failed call with its TOOL_ERROR answer.
    [(call_id, output)] = outputs(model.prompts[1].items)
    assert call_id == "c1"
    assert output.startswith('TOOL_ERROR: {"errorType":"exception","error":"Declined: card declined for 2')


# -- eager calls -------------------------------------------------------------------------------------------


@tool(eager=True, on_error="raise")
async def read_quota(user: str) -> int:
    """A user's quota (a read: it may start while the model streams)."""
    raise Declined(f"the quota service is down for {user}")


async def test_an_eager_call_that_ends_the_run_after_its_turn_completed_ends_every_call_once() -> None:
    acting = anyio.Event()
    cancelled: list[str] = []

    @tool(eager=True, on_error="raise")
    async def read_stock(item: str) -> int:
        """Stock of an item (a read: it starts while the model streams, and fails once the step acts)."""
        await acting.wait()
        raise Declined(f"the stock service is down for {item}")

    @tool
    async def reserve(item: str) -> str:
        """Reserve an item (not eager: it starts once the turn is complete)."""
        acting.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.append(item)
        return item

    memory = InMemoryMemory()
    turn = reply(tool_calls=[("c1", "read_stock", {"item": "tea"}), ("c2", "reserve", {"item": "tea"})])
    agent = Agent(FakeModelClient([turn]), tools=[read_stock, reserve], memory=memory)

    with anyio.fail_after(5):
        async with agent.stream("Reserve tea if in stock.") as run:
            events = [e async for e in run]

    check_ends_once(events)
    assert isinstance(run.error, Declined)
    assert cancelled == ["tea"]
    failed = {e.call.id: e.result.error_type for e in events if isinstance(e, ToolFailed)}
    assert failed == {"c1": "exception", "c2": "cancelled"}
    assert_memory_valid(memory.items)
    assert [call_id for call_id, _ in outputs(memory.items)] == ["c1", "c2"]


async def test_an_eager_call_that_ends_the_run_while_the_model_streams_closes_the_stream() -> None:
    closed: list[str] = []
    call = ToolCall("c1", "read_quota", '{"user":"bob"}')

    async def turn(_prompt: AgentPrompt) -> AsyncIterator[ModelEvent]:
        try:
            yield ToolCallStarted(0, call.id, call.name)
            yield ToolCallReady(0, call)
            await anyio.sleep_forever()  # the rest of the turn never comes: the call ends the run first
            yield TextDelta("never")
        finally:
            closed.append("closed")

    memory = InMemoryMemory()
    agent = Agent(FakeModelClient([turn]), tools=[read_quota], memory=memory)

    with anyio.fail_after(5):
        async with agent.stream("Quota?") as run:
            events = [e async for e in run]

    check_ends_once(events)
    assert closed == ["closed"]
    assert isinstance(run.error, Declined)
    # The turn never reached memory, so neither did its call: the events are its only trace.
    assert outputs(memory.items) == []
    assert_memory_valid(memory.items)


async def test_eager_calls_ending_the_run_at_the_same_instant_raise_the_first_one_not_a_group() -> None:
    both_started = anyio.Event()
    started: list[str] = []

    @tool(eager=True, on_error="raise")
    async def fetch(url: str) -> str:
        """Fetch a page (a read: it starts while the model streams)."""
        started.append(url)
        if len(started) == 2:
            both_started.set()
        await both_started.wait()
        raise Declined(f"cannot reach {url}")

    calls = [ToolCall("c1", "fetch", '{"url": "a"}'), ToolCall("c2", "fetch", '{"url": "b"}')]

    async def turn(_prompt: AgentPrompt) -> AsyncIterator[ModelEvent]:
        for index, call in enumerate(calls):
            yield ToolCallStarted(index, call.id, call.name)
            yield ToolCallReady(index, call)
        await anyio.sleep_forever()  # both calls end the run while the model still streams

    agent = Agent(FakeModelClient([turn]), tools=[fetch])
    recorder = Recorder(agent)

    with anyio.fail_after(5), pytest.raises(Declined, match="cannot reach") as raised:
        await agent.run("Fetch a and b.")

    assert raised.value.__notes__[0].startswith("1 more call(s) of the same step ended the run at the same")
    check_ends_once(recorder.events)
    [failed] = recorder.terminals()
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "Declined"


# -- CodeAct -----------------------------------------------------------------------------------------------


def code(source: str) -> str:
    return orjson.dumps({"type": "code", "language": "python", "code": source}).decode()


async def test_code_calling_a_raise_tool_fails_the_run_even_though_the_code_catches_the_error() -> None:
    ran: list[str] = []

    @tool
    async def note(text: str) -> str:
        """Note something."""
        ran.append(text)
        return "noted"

    source = (
        "try:\n    charge(amount=4)\nexcept Exception as exc:\n    print('caught', exc)\nnote(text='after')"
    )
    memory = InMemoryMemory()
    async with ScriptedServer(
        [Reply(text=code(source)), Reply(text='{"type":"final","output":"x"}')]
    ) as server:
        model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="gpt-test")
        limits = ExecutionLimits(wall_time=5.0, cpu_seconds=5, memory_bytes=256 * 1024 * 1024)
        runtime = CodeActRuntime(CodeActOptions(limits=limits))
        async with Agent(model, runtime=runtime, tools=[charge, note], memory=memory) as agent:
            recorder = Recorder(agent)
            with anyio.fail_after(30), pytest.raises(Declined, match="card declined for 4"):
                await agent.run("Pay 4.")

    check_ends_once(recorder.events)
    assert ran == []
    assert len(server.requests) == 1  # the model is never asked again
    [executed] = recorder.of(CodeExecuted)
    assert executed.error == "the run failed before this code step finished"
    assert_memory_valid(memory.items)
    assert "CODE_ERROR" in orjson.dumps(memory.items[-1]).decode()


class SwallowingExecutor:
    """A third-party ``CodeExecutor`` that catches whatever its invoker raises and goes on at once with the
    code's next call (as a careless remote sandbox might)."""

    def __init__(self) -> None:
        self.caught: list[Exception] = []

    async def execute(
        self, code: str, tools: ToolInvoker, tool_names: Sequence[str], limits: ExecutionLimits
    ) -> CodeResult:
        try:
            await tools("charge", {"amount": 6})
        except Exception as exc:
            self.caught.append(exc)
        result = await tools("note", {"text": "after"})
        return CodeResult(ok=True, value=result.output)

    async def aclose(self) -> None:
        return None


async def test_an_executor_that_swallows_the_error_cannot_run_another_call() -> None:
    ran: list[str] = []

    @tool
    def note(text: str) -> str:
        """Note something (never waits: nothing but the executor could stop it)."""
        ran.append(text)
        return "noted"

    sandbox = SwallowingExecutor()
    memory = InMemoryMemory()
    runtime = CodeActRuntime(CodeActOptions(executor=sandbox))
    model = FakeModelClient([reply(code("charge(amount=6); note(text='after')")), reply("unused")])
    agent = Agent(model, runtime=runtime, tools=[charge, note], memory=memory)
    recorder = Recorder(agent)

    with pytest.raises(Declined):
        await agent.run("Pay 6.")

    assert [type(e) for e in sandbox.caught] == [Declined]
    assert ran == []
    check_ends_once(recorder.events)
    assert_memory_valid(memory.items)


# -- an agent used as a tool -------------------------------------------------------------------------------


async def test_a_sub_agent_s_raise_tool_ends_the_sub_run_and_the_parent_s_policy_decides_the_rest() -> None:
    def helper_agent() -> Agent[Any]:
        model = FakeModelClient([reply(tool_calls=[("charge", {"amount": 8})])])
        return Agent(model, name="Cashier", tools=[charge])

    # By default the parent's model is told (AgentToolError), and the parent goes on.
    parent_model = FakeModelClient(
        [reply(tool_calls=[("c1", "cashier", {"input": "charge 8"})]), reply("No.")]
    )
    cashier = helper_agent().as_tool(description="Charges cards.")
    result = await Agent(parent_model, tools=[cashier]).run("Pay 8.")
    assert result.output_text == "No."
    [(_, told)] = outputs(parent_model.prompts[1].items)
    assert "AgentToolError: agent 'cashier' failed: Declined: card declined for 8" in told

    # With the delegation itself set to "raise", the parent fails too, with the sub-run's failure as cause.
    strict = attrs.evolve(helper_agent().as_tool(description="Charges cards."), on_error="raise")
    parent = Agent(
        FakeModelClient([reply(tool_calls=[("c1", "cashier", {"input": "charge 8"})])]), tools=[strict]
    )
    with pytest.raises(AgentToolError) as raised:
        await parent.run("Pay 8.")
    assert isinstance(raised.value.__cause__, Declined)


async def test_runs_without_a_failure_are_unchanged() -> None:
    @tool(on_error="raise")
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    agent = Agent(FakeModelClient([reply(tool_calls=[("add", {"a": 1, "b": 2})]), reply("3")]), tools=[add])
    result = await agent.run("1+2?", options=AgentOptions(timeout=5))
    assert (result.output_text, [r.output for r in result.tool_results]) == ("3", ["3"])


# --- the agent's default ------------------------------------------------------------------------------------


@tool
async def lookup(key: str) -> str:
    """Look a key up."""
    raise KeyError(key)


@tool(on_error="feed")
async def guess(key: str) -> str:
    """Guess a key's value."""
    raise KeyError(key)


async def test_the_agent_s_on_tool_error_applies_to_tools_that_set_none() -> None:
    model = FakeModelClient([reply(tool_calls=[("lookup", {"key": "k"})])])
    agent = Agent(model, tools=[lookup], options=AgentOptions(on_tool_error="raise"))
    with pytest.raises(KeyError):
        await agent.run("go")


async def test_a_tool_s_own_on_error_wins_over_the_agent_s() -> None:
    model = FakeModelClient([reply(tool_calls=[("guess", {"key": "k"})]), reply("No idea.")])
    agent = Agent(model, tools=[guess], options=AgentOptions(on_tool_error="raise"))
    result = await agent.run("go")
    assert result.output_text == "No idea."
    assert result.tool_results[0].error_type == "exception"  # fed back, as the seed says


async def test_the_agent_s_formatter_writes_what_the_model_sees() -> None:
    model = FakeModelClient([reply(tool_calls=[("lookup", {"key": "k"})]), reply("Sorry.")])
    options = AgentOptions(on_tool_error=lambda exc, call: f"{call.name} is unavailable; try later")
    await Agent(model, tools=[lookup], options=options).run("go")
    assert [output for _, output in outputs(model.prompts[1].items)] == ["lookup is unavailable; try later"]


def test_a_bad_agent_policy_is_refused_when_the_options_are_made() -> None:
    with pytest.raises((TypeError, ValueError), match="on_tool_error"):
        AgentOptions(on_tool_error="ignore")  # type: ignore[arg-type]
