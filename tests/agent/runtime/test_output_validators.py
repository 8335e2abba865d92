"""Output validators: ``OutputType(T, validators=[...])`` checks of the user's own on the final answer.

Over real HTTP (``ScriptedServer``) on both protocols, streamed (a subscription), awaited with a callback
(an observed bus) and awaited with nothing listening: a validator sees the value read and may replace it;
``RejectOutput`` sends the answer back with its message alone (``OutputRejected``, the same ``retries``);
any other exception fails the run with ``ValidatorError``; tool steps are never validated.
"""

from __future__ import annotations

import pickle
from typing import Any, Literal

import anyio
import attrs
import pytest

from agentflow import (
    Agent,
    AgentResult,
    OpenAIChatModel,
    OpenAIResponsesModel,
    OutputContext,
    OutputRejected,
    OutputType,
    OutputValidationError,
    RejectOutput,
    RunFailed,
    StopReason,
    ValidatorError,
)
from agentflow.model.events import Event
from agentflow.runtimes.output import OUTPUT_REJECTED_PROMPT
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool

Protocol = Literal["chat", "responses"]
How = Literal["stream", "observed", "unobserved"]
PROTOCOLS: list[Protocol] = ["chat", "responses"]
HOWS: list[How] = ["stream", "observed", "unobserved"]


@attrs.frozen
class City:
    """A city and its population."""

    name: str
    population: int


@tool
async def population(city: str) -> int:
    """The population of a city."""
    return 2_102_650


def model_for(protocol: Protocol, server: ScriptedServer) -> Any:
    cls = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
    return cls(base_url=server.base_url, api_key="sk-test", model="gpt-test")


async def run_how(
    how: How, agent: Agent[Any], text: str, **kwargs: Any
) -> tuple[AgentResult[Any], list[Event]]:
    """The run's result and the events it published (none seen when nobody listens)."""
    events: list[Event] = []
    with anyio.fail_after(10):
        if how == "stream":
            async with agent.stream(text, **kwargs) as run:
                async for event in run:
                    events.append(event)
            return run.result, events
        if how == "observed":
            agent.on(None, events.append)
        return await agent.run(text, **kwargs), events


def last_user_text(protocol: Protocol, body: dict[str, Any]) -> str:
    """The text of the last user turn of a request."""
    if protocol == "chat":
        last = body["messages"][-1]
        assert last["role"] == "user"
        text: str = last["content"]
        return text
    item = body["input"][-1]
    assert item["role"] == "user"
    [part] = item["content"]
    text = part["text"]
    return text


def positive(city: City) -> None:
    if city.population <= 0:
        raise RejectOutput(f"the population of {city.name} must be positive, not {city.population}")


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_validator_sees_the_value_and_may_replace_it(protocol: Protocol, how: How) -> None:
    seen: list[City] = []

    def check(city: City) -> None:
        seen.append(city)  # returns None: the value as it is

    def normalise(city: City) -> City:
        return attrs.evolve(city, name=city.name.title())

    spec = OutputType(City, validators=[check, normalise, positive])
    async with (
        ScriptedServer([Reply(text='{"name": "paris", "population": 3}', chunk_size=4)]) as server,
        Agent(model_for(protocol, server), output_type=spec) as agent,
    ):
        result, events = await run_how(how, agent, "Paris?")
    assert seen == [City("paris", 3)]
    assert result.output == City("Paris", 3)
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert not [e for e in events if isinstance(e, OutputRejected)]
    assert len(server.requests) == 1


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_rejection_goes_back_with_its_message_alone(protocol: Protocol, how: How) -> None:
    turns = [
        Reply(text='{"name": "Paris", "population": 0}'),
        Reply(text='{"name": "Paris", "population": 3}'),
    ]
    async with (
        ScriptedServer(turns) as server,
        Agent(model_for(protocol, server), output_type=OutputType(City, validators=[positive])) as agent,
    ):
        result, events = await run_how(how, agent, "Paris?")
    assert result.output == City("Paris", 3)
    assert result.steps == 2
    message = "the population of Paris must be positive, not 0"
    if how != "unobserved":
        rejected = [e for e in events if isinstance(e, OutputRejected)]
        assert [(e.error, e.retrying, e.step) for e in rejected] == [(message, True, 0)]
    # The model sees the validator's message; the answer matched the schema, so the schema is not repeated.
    sent = last_user_text(protocol, server.requests[1].body)
    assert sent == OUTPUT_REJECTED_PROMPT.format(error=message)
    assert '"required"' not in sent
    # The rejected answer and the retry prompt are in memory, between the input and the answer.
    assert len(result.new_items) == 4


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_rejections_beyond_the_retries_fail_the_run(protocol: Protocol) -> None:
    def never(city: City) -> City:
        raise RejectOutput("no city is good enough")

    turns = [Reply(text='{"name": "Paris", "population": 3}', usage=(10, 5))] * 2
    async with (
        ScriptedServer(turns) as server,
        Agent(
            model_for(protocol, server), output_type=OutputType(City, retries=1, validators=[never])
        ) as agent,
    ):
        events: list[Event] = []
        agent.on(None, events.append)
        with anyio.fail_after(10), pytest.raises(OutputValidationError) as caught:
            await agent.run("Paris?")
    error = caught.value
    assert error.reason == "no city is good enough"
    assert error.text == '{"name": "Paris", "population": 3}'
    assert error.partial.usage.total_tokens == 30
    assert error.partial.output is None  # a rejected value is never the output
    assert [e.retrying for e in events if isinstance(e, OutputRejected)] == [True, False]
    terminal = events[-1]
    assert isinstance(terminal, RunFailed)
    assert terminal.error_type == "OutputValidationError"
    assert len(server.requests) == 2


@pytest.mark.parametrize("stream", [False, True])
async def test_an_async_validator_gets_the_run_s_context_and_never_sees_a_tool_step(stream: bool) -> None:
    contexts: list[OutputContext] = []

    async def in_europe(city: City, context: OutputContext) -> City:
        await anyio.lowlevel.checkpoint()
        contexts.append(context)
        if city.name == "Tokyo":
            raise RejectOutput("name a city in Europe")
        return city

    turns = [
        Reply(tool_calls=[("population", {"city": "Tokyo"})], usage=(5, 1)),
        Reply(text='{"name": "Tokyo", "population": 1}', usage=(5, 1)),
        Reply(text='{"name": "Paris", "population": 2}', usage=(5, 1)),
    ]
    async with (
        ScriptedServer(turns) as server,
        Agent(
            model_for("chat", server),
            tools=[population],
            output_type=OutputType(City, validators=[in_europe]),
        ) as agent,
    ):
        result, _ = await run_how("stream" if stream else "unobserved", agent, "A big city?")
    assert result.output == City("Paris", 2)
    # Only the final answers are validated, never the tool step.
    assert [(c.step, c.rejections, c.usage.total_tokens) for c in contexts] == [(1, 0, 12), (2, 1, 18)]
    assert {c.run_id for c in contexts} == {result.run_id}
    assert contexts[1].text == '{"name": "Paris", "population": 2}'


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_validator_that_raises_anything_else_fails_the_run(protocol: Protocol, how: How) -> None:
    def broken(city: City) -> City:
        raise KeyError("population_db")

    async with (
        ScriptedServer([Reply(text='{"name": "Paris", "population": 3}')] * 2) as server,
        Agent(model_for(protocol, server), output_type=OutputType(City, validators=[broken])) as agent,
    ):
        with pytest.raises(ValidatorError) as caught:
            await run_how(how, agent, "Paris?")
    error = caught.value
    assert error.validator.endswith("broken")
    assert isinstance(error.__cause__, KeyError)
    assert "raised KeyError: 'population_db'" in str(error)
    assert "RejectOutput" in str(error)  # says how to send an answer back instead
    assert error.partial.stop_reason is StopReason.ERROR
    assert error.partial.output is None
    assert error.partial.output_text == '{"name": "Paris", "population": 3}'
    assert len(server.requests) == 1  # not a bad answer: nothing goes back to the model


async def test_the_failure_is_published_as_run_failed() -> None:
    async def broken(city: City) -> None:
        raise RuntimeError("the database is down")

    async with (
        ScriptedServer([Reply(text='{"name": "Paris", "population": 3}')]) as server,
        Agent(model_for("responses", server), output_type=OutputType(City, validators=[broken])) as agent,
        agent.stream("Paris?") as run,
    ):
        events = [event async for event in run]
    terminal = events[-1]
    assert isinstance(terminal, RunFailed)
    assert terminal.error_type == "ValidatorError"
    assert "the database is down" in terminal.error
    assert isinstance(run.error, ValidatorError)
    assert not [e for e in events if isinstance(e, OutputRejected)]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_run_may_bring_its_own_validators(stream: bool) -> None:
    agent_checks: list[object] = []
    run_checks: list[object] = []

    def small(n: int) -> None:
        run_checks.append(n)
        if n > 10:
            raise RejectOutput("at most 10")

    turns = [Reply(text='{"result": 42}'), Reply(text='{"result": 7}')]
    async with (
        ScriptedServer(turns) as server,
        Agent(
            model_for("chat", server), output_type=OutputType(City, validators=[agent_checks.append])
        ) as agent,
    ):
        result, _ = await run_how(
            "stream" if stream else "observed",
            agent,
            "A number?",
            output_type=OutputType(int, validators=[small]),
        )
    assert result.output == 7
    assert run_checks == [42, 7]
    assert agent_checks == []  # the agent's output type (and its validators) do not apply to this run
    assert server.requests[0].body["response_format"]["json_schema"]["name"] == "int"


@pytest.mark.parametrize("stream", [False, True])
async def test_prompted_mode_rejections_go_back_too(stream: bool) -> None:
    turns = [
        Reply(text='{"name": "Paris", "population": -1}'),
        Reply(text='{"name": "Paris", "population": 3}'),
    ]
    spec = OutputType(City, mode="prompted", validators=[positive])
    async with ScriptedServer(turns) as server, Agent(model_for("chat", server), output_type=spec) as agent:
        result, _ = await run_how("stream" if stream else "unobserved", agent, "Paris?")
    assert result.output == City("Paris", 3)
    for request in server.requests:
        assert "response_format" not in request.body
    assert last_user_text("chat", server.requests[1].body) == OutputType.rejected_prompt(
        "the population of Paris must be positive, not -1"
    )


def test_validators_are_checked_where_they_are_given() -> None:
    with pytest.raises(TypeError, match="must be callable"):
        OutputType(City, validators=[42])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="validators must be a list of callables"):
        OutputType(City, validators=positive)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"must take the value, or the value and an OutputContext"):
        OutputType(City, validators=[lambda a, b, c: a])
    with pytest.raises(TypeError, match="RejectOutput takes the message"):
        RejectOutput(42)  # type: ignore[arg-type]
    spec = OutputType(City, validators=[positive, lambda city, context=None: city, print])
    assert spec.validator_context == (False, True, True)


def test_a_validator_error_survives_pickling() -> None:
    partial = AgentResult("run_1", "", StopReason.ERROR, steps=1)
    error = pickle.loads(pickle.dumps(ValidatorError("check", "KeyError: 'x'", partial)))
    assert (error.validator, error.error, error.partial) == ("check", "KeyError: 'x'", partial)
    assert pickle.loads(pickle.dumps(RejectOutput("why"))).message == "why"
