"""A run cut short while a rejected final answer's retry is in flight leaves no unanswered retry prompt.

The retry prompt (the user turn sending the answer back) enters memory only together with the model's answer
to it. A session's memory then ends on the rejected answer, as the model gave it — a faithful, valid
conversation that the next turn continues — whichever way the run was cut short (``run.cancel()``, leaving
the ``async with`` block, cancelling the task awaiting ``run()``, the run's deadline) or failed. Once the
model has answered the retry, prompt and answer are kept, as any finished work is.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
import anyio.lowlevel
import attrs
import pytest
from runtime_support import assert_memory_valid, outputs

from agentflow import (
    Agent,
    AgentOptions,
    AgentResult,
    BadRequestError,
    InMemoryMemory,
    OpenAIChatModel,
    OpenAIResponsesModel,
    OutputType,
    RejectOutput,
    RunCancelled,
    RunFailed,
    Session,
    StopReason,
    ToolStarted,
)
from agentflow.model.events import Event, ModelCompleted
from agentflow.testing import Fault, Reply, ScriptedServer
from agentflow.tools import tool

Protocol = Literal["chat", "responses"]
Way = Literal["cancel", "leave_block", "cancel_task", "deadline", "failure"]
PROTOCOLS: list[Protocol] = ["chat", "responses"]
WAYS: list[Way] = ["cancel", "leave_block", "cancel_task", "deadline", "failure"]

REJECTED = '{"name": "Paris", "population": 0}'


@attrs.frozen
class City:
    name: str
    population: int


def positive(city: City) -> None:
    if city.population <= 0:
        raise RejectOutput("the population must be positive")


def model_for(protocol: Protocol, server: ScriptedServer) -> Any:
    cls = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
    return cls(base_url=server.base_url, api_key="sk-test", model="gpt-test")


def shape(items: tuple[Any, ...]) -> list[str]:
    """Each memory item's role (messages) or type (function calls and outputs)."""
    return [str(item.get("role") or item.get("type")) for item in items]


def texts(body: dict[str, Any]) -> str:
    """Everything a request sent, as text: enough to tell whether a prompt is in it."""
    return str(body.get("messages") or body.get("input"))


class RetryInFlight:
    """A session whose first final answer is rejected, with the retry's model call still in flight."""

    def __init__(self, protocol: Protocol, way: Way) -> None:
        self.sent = anyio.Event()

        def retry(_request: dict[str, Any]) -> Fault:
            self.sent.set()  # the retry prompt is on its way to the model: the cut lands now
            return Fault.status(400) if way == "failure" else Fault.stall()

        self.script: list[Any] = [Reply(text=REJECTED), retry, Reply(text="You are welcome.")]
        self.protocol = protocol
        # The deadline is the only cut this test does not make itself: long enough for the first call.
        self.options = AgentOptions(timeout=1.0) if way == "deadline" else AgentOptions()

    def session(self, server: ScriptedServer) -> Session[City]:
        spec = OutputType(City, validators=[positive])
        agent = Agent(model_for(self.protocol, server), output_type=spec, options=self.options)
        return agent.session(InMemoryMemory())


async def cut(way: Way, chat: Session[City], sent: anyio.Event) -> AgentResult[City] | None:
    """Run the session's turn and cut it short the given way; the partial result where there is one."""
    if way == "cancel":
        async with chat.stream("How many people live in Paris?") as run:
            await sent.wait()
            await run.cancel()
            events = [event async for event in run]
        assert isinstance(events[-1], RunCancelled)
        return run.result
    if way == "leave_block":
        async with chat.stream("How many people live in Paris?") as run:
            await sent.wait()
        assert isinstance(run.partial, AgentResult)
        return run.partial
    if way == "cancel_task":
        async with anyio.create_task_group() as tg:
            tg.start_soon(chat.run, "How many people live in Paris?")  # nobody listens to this run
            await sent.wait()
            tg.cancel_scope.cancel()
        return None
    if way == "deadline":
        return await chat.run("How many people live in Paris?")
    async with chat.stream("How many people live in Paris?") as run:
        events = [event async for event in run]
    assert isinstance(run.error, BadRequestError)
    assert isinstance(events[-1], RunFailed)
    return run.partial


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_cut_during_the_retry_leaves_memory_on_the_rejected_answer(
    protocol: Protocol, way: Way
) -> None:
    scenario = RetryInFlight(protocol, way)
    async with ScriptedServer(scenario.script) as server:
        chat = scenario.session(server)
        with anyio.fail_after(10):
            partial = await cut(way, chat, scenario.sent)
            # No retry prompt waits in memory: the conversation ends on the model's (rejected) answer.
            assert shape(chat.items) == ["user", "assistant"]
            assert REJECTED in str(chat.items[-1])
            if partial is not None:
                expected = {"deadline": StopReason.DEADLINE, "failure": StopReason.ERROR}
                assert partial.stop_reason is expected.get(way, StopReason.CANCELLED)
                assert partial.new_items == chat.items  # the partial result tells what memory holds
                assert partial.output_text == REJECTED
                assert partial.output is None
            # The next turn continues from there, with no retry prompt in between.
            follow = await chat.run("Thanks!", output_type=None)
    assert follow.output == "You are welcome."
    assert shape(chat.items) == ["user", "assistant", "user", "assistant"]
    retry_prompt = OutputType.rejected_prompt("the population must be positive")
    assert retry_prompt[:20] in texts(server.requests[1].body)  # the retry did ask
    assert retry_prompt[:20] not in texts(server.requests[2].body)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_answer_that_did_not_match_the_schema_is_left_alike(protocol: Protocol) -> None:
    sent = anyio.Event()

    def retry(_request: dict[str, Any]) -> Fault:
        sent.set()
        return Fault.stall()

    async with ScriptedServer([Reply(text="Paris, about two million."), retry]) as server:
        chat = Agent(model_for(protocol, server), output_type=City).session()
        with anyio.fail_after(10):
            async with chat.stream("How many people live in Paris?") as run:
                await sent.wait()
                await run.cancel()
    assert shape(chat.items) == ["user", "assistant"]
    assert run.result.output_text == "Paris, about two million."


@tool
async def census(city: str) -> int:
    """The census population of a city (this one never answers)."""
    await anyio.sleep_forever()
    return 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_retry_the_model_answered_stays_with_its_answer(protocol: Protocol) -> None:
    # The model answered the retry with a tool call; the cut lands in the tool: prompt and call are kept,
    # the call with a synthetic cancelled result, as any finished work.
    script = [Reply(text=REJECTED), Reply(tool_calls=[("census", {"city": "Paris"}, "call_1")])]
    async with ScriptedServer(script) as server:
        spec = OutputType(City, validators=[positive])
        chat = Agent(model_for(protocol, server), tools=[census], output_type=spec).session()
        with anyio.fail_after(10):
            async with chat.stream("How many people live in Paris?") as run:
                async for event in run:
                    if isinstance(event, ToolStarted):
                        await run.cancel()
    items = chat.items
    assert shape(items)[:3] == ["user", "assistant", "user"]
    assert "rejected: the population must be positive" in str(items[2])
    assert [call_id for call_id, _ in outputs(items)] == ["call_1"]
    assert_memory_valid(items)
    assert run.result.new_items == items


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_retry_answer_cut_while_it_is_published_is_kept_with_its_prompt(protocol: Protocol) -> None:
    script = [Reply(text=REJECTED), Reply(text='{"name": "Paris", "population": 3}')]
    async with ScriptedServer(script) as server:
        chat = Agent(
            model_for(protocol, server), output_type=OutputType(City, validators=[positive])
        ).session()
        run = chat.stream("How many people live in Paris?")

        async def cancel_on_the_retry_answer(event: Event) -> None:
            if event.step == 1:
                await run.cancel()
                await anyio.lowlevel.checkpoint()  # the cancel lands here, before the answer is handled

        run.bus.on(ModelCompleted, cancel_on_the_retry_answer)
        with anyio.fail_after(10):
            async with run:
                events = [event async for event in run]
    assert isinstance(events[-1], RunCancelled)
    assert shape(chat.items) == ["user", "assistant", "user", "assistant"]
    assert run.result.output_text == '{"name": "Paris", "population": 3}'
    assert run.result.output is None  # cut before it was read: not a final answer
    assert run.result.new_items == chat.items
