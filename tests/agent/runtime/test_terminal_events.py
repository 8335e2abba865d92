"""Exactly one terminal event per run, in every path; a failure keeps a partial result and valid memory."""

from __future__ import annotations

import anyio
import pytest
from runtime_support import Recorder, add, assert_memory_valid

from agentflow.agent.agent import Agent
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions
from agentflow.events import RunFailed, RunFinished
from agentflow.model.errors import RateLimitError, StreamCutOffError
from agentflow.model.events import TextDelta
from agentflow.result import StopReason
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


async def test_finished_run_has_one_run_finished_as_its_last_event() -> None:
    agent = Agent(FakeModelClient([reply("hi")]))
    recorder = Recorder(agent)

    result = await agent.run("go")

    [terminal] = recorder.terminals()
    assert isinstance(terminal, RunFinished)
    assert terminal.result == result
    assert recorder.events[-1] is terminal


async def test_a_model_error_ends_the_run_with_run_failed_and_is_raised() -> None:
    error = RateLimitError("slow down", status=429)
    memory = InMemoryMemory()
    model = FakeModelClient([reply(tool_calls=[("add", {"a": 1, "b": 2})], usage=(4, 4)), error])
    agent = Agent(model, tools=[add], memory=memory)
    recorder = Recorder(agent)

    with pytest.raises(RateLimitError):
        await agent.run("go")

    [terminal] = recorder.terminals()
    assert isinstance(terminal, RunFailed)
    assert (terminal.error_type, terminal.error) == ("RateLimitError", str(error))
    assert terminal.partial is not None
    assert terminal.partial.stop_reason is StopReason.ERROR
    assert terminal.partial.usage.total_tokens == 8
    assert [r.output for r in terminal.partial.tool_results] == ["3"]
    assert recorder.events[-1] is terminal
    assert_memory_valid(memory.items)


class Abort(BaseException):
    """Not an Exception: like SystemExit, it must escape the run, not become a tool error."""


async def test_a_base_exception_from_a_tool_ends_the_run_with_run_failed_and_escapes_as_itself() -> None:
    @tool
    async def abort() -> str:
        """Raises a BaseException."""
        raise Abort("stop the process")

    memory = InMemoryMemory()
    agent = Agent(FakeModelClient([reply(tool_calls=[("abort", {})])]), tools=[abort], memory=memory)
    recorder = Recorder(agent)

    with pytest.raises(Abort, match="stop the process"):  # not wrapped in a BaseExceptionGroup
        await agent.run("go")

    [terminal] = recorder.terminals()
    assert isinstance(terminal, RunFailed)
    assert terminal.error_type == "Abort"
    assert recorder.events[-1] is terminal
    assert_memory_valid(memory.items)


async def test_a_failed_stream_run_ends_the_iteration_and_raises_from_result() -> None:
    model = FakeModelClient([[TextDelta("half")]])  # a stream that ends without ModelCompleted
    agent = Agent(model)

    async with agent.stream("go") as run:
        events = [e async for e in run]

    assert isinstance(events[-1], RunFailed)
    assert events[-1].error_type == "StreamCutOffError"
    assert isinstance(run.error, StreamCutOffError)
    with pytest.raises(StreamCutOffError):
        _ = run.result
    assert run.partial is not None
    assert run.partial.stop_reason is StopReason.ERROR
    with pytest.raises(StreamCutOffError):
        await run.wait()


async def test_result_before_the_end_is_a_clear_error() -> None:
    gate = anyio.Event()

    async def slow(_prompt: object) -> object:
        await gate.wait()
        return reply("done")

    agent = Agent(FakeModelClient([slow]))
    async with agent.stream("go") as run:
        with pytest.raises(RuntimeError, match="not ended"):
            _ = run.result
        gate.set()
        await run.wait()
    assert run.result.output_text == "done"


async def test_a_failing_event_callback_never_kills_the_run() -> None:
    agent = Agent(FakeModelClient([reply("fine")]))

    def broken(_event: object) -> None:
        raise RuntimeError("listener bug")

    agent.on(None, broken)
    recorder = Recorder(agent)

    result = await agent.run("go")

    assert result.output_text == "fine"
    assert len(recorder.terminals()) == 1


async def test_a_run_can_be_entered_only_once() -> None:
    agent = Agent(FakeModelClient([reply("a")]))
    run = agent.stream("go")
    async with run:
        await run.wait()
    with pytest.raises(RuntimeError, match="already started"):
        async with run:
            pass


async def test_iterating_without_entering_is_a_clear_error() -> None:
    run = Agent(FakeModelClient([])).stream("go")
    with pytest.raises(RuntimeError, match="async with"):
        await run.__anext__()


async def test_options_stream_false_makes_stream_runs_use_blocking_calls() -> None:
    model = FakeModelClient([reply("a")])
    agent = Agent(model, options=AgentOptions(stream=False))
    async with agent.stream("go") as run:
        await run.wait()
    assert model.prompts[0].stream is False
    assert model.streams_opened == 0
