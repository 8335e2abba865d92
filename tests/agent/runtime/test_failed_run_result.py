"""A failed run's partial result is reachable from whatever ``agent.run()`` raises (``exc.run_result``).

The exception keeps its type (``except BadRequestError`` still works; a model error's own ``partial`` stays
the model-level one), carries the same ``AgentResult`` the ``RunFailed`` event holds (steps, tool results,
billed usage, ``new_items``), and says so in a note, so a traceback shows where to look.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from runtime_support import Recorder, add

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.agent.prompt import AgentPrompt
from agentflow.events import RunFailed
from agentflow.model.errors import BadRequestError, ModelError
from agentflow.model.response import TokenUsage
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.result import AgentResult, StopReason
from agentflow.runtimes.errors import MaxStepsExceeded, run_result
from agentflow.testing import Fault, Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply


def failed_event(recorder: Recorder) -> RunFailed:
    [failed] = recorder.of(RunFailed)
    assert isinstance(failed, RunFailed)
    return failed


async def test_a_model_error_after_a_tool_step_carries_the_run_s_partial_result() -> None:
    script = [Reply(tool_calls=[("add", {"a": 1, "b": 2})], usage=(100, 10)), Fault.status(400)]
    async with ScriptedServer(script) as server:
        agent = Agent(OpenAIChatModel(base_url=server.base_url, model="m"), tools=[add])
        recorder = Recorder(agent)
        async with agent:
            with pytest.raises(BadRequestError) as caught:
                await agent.run("1 + 2?")

    exc = caught.value
    assert exc.partial is None  # the model-level partial: the 400 carried no answer
    partial = exc.run_result  # type: ignore[attr-defined]
    assert partial is run_result(exc)
    assert partial is failed_event(recorder).partial
    assert partial.stop_reason is StopReason.ERROR
    assert partial.steps == 1
    assert [r.output for r in partial.tool_results] == ["3"]
    assert partial.usage == TokenUsage(100, 10, 110)  # the first call was billed
    assert [item.get("type") for item in partial.new_items] == ["message", "message", "function_call_output"]
    assert any("run_result" in note and partial.run_id in note for note in exc.__notes__)


async def test_a_streamed_run_raises_the_same_exception_with_the_same_result() -> None:
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("add", {"a": 1, "b": 2})]), BadRequestError("no")]), tools=[add]
    )
    async with agent.stream("1 + 2?") as run:
        events = [event async for event in run]

    assert isinstance(events[-1], RunFailed)
    with pytest.raises(BadRequestError) as caught:
        _ = run.result
    assert caught.value is run.error
    assert run_result(caught.value) is run.partial is events[-1].partial
    assert run_result(caught.value) is not None


async def test_an_agent_run_error_s_run_result_is_its_partial() -> None:
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("add", {"a": 1, "b": 2})])]),
        tools=[add],
        options=AgentOptions(max_steps=1, on_max_steps="raise"),
    )
    with pytest.raises(MaxStepsExceeded) as caught:
        await agent.run("1 + 2?")
    assert caught.value.run_result is caught.value.partial
    assert run_result(caught.value) is caught.value.partial
    assert caught.value.partial.stop_reason is StopReason.MAX_STEPS


async def test_an_exception_object_failing_two_runs_points_at_the_last() -> None:
    shared = BadRequestError("the same object, raised twice")
    agent = Agent(FakeModelClient([shared, shared]))
    results: list[AgentResult] = []
    for _ in range(2):
        with pytest.raises(BadRequestError) as caught:
            await agent.run("hi")
        result = run_result(caught.value)
        assert result is not None
        results.append(result)
    assert results[0].run_id != results[1].run_id
    notes = [note for note in shared.__notes__ if "run_result" in note]
    assert len(notes) == 1
    assert results[1].run_id in notes[0]


class Sealed(Exception):
    """An exception that takes no new attributes (a frozen attrs exception behaves so)."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is sealed")


async def test_an_exception_refusing_attributes_is_raised_as_it_is() -> None:
    async def sealed(_prompt: AgentPrompt) -> Any:
        raise Sealed("cannot carry anything")

    agent = Agent(FakeModelClient([sealed]))
    recorder = Recorder(agent)
    with pytest.raises(Sealed):
        await agent.run("hi")
    assert failed_event(recorder).partial is not None  # the event still has it


def test_run_result_of_an_exception_no_run_raised_is_none() -> None:
    assert run_result(ValueError("plain")) is None
    exc = ModelError("odd")
    exc.run_result = "not a result"  # type: ignore[attr-defined]
    assert run_result(exc) is None


async def test_the_result_travels_with_a_pickled_exception() -> None:
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("add", {"a": 1, "b": 2})]), BadRequestError("no")]), tools=[add]
    )
    with pytest.raises(BadRequestError) as caught:
        await agent.run("1 + 2?")
    copy = pickle.loads(pickle.dumps(caught.value))
    assert type(copy) is BadRequestError
    restored = run_result(copy)
    assert restored is not None
    assert restored.tool_results == caught.value.run_result.tool_results  # type: ignore[attr-defined]
