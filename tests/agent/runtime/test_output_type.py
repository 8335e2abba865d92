"""Structured output: ``Agent(output_type=…)`` on both protocols, over real HTTP, streamed and not.

The request asks for the type's JSON schema (``response_format`` on Chat, ``text.format`` on Responses), the
final answer is read into the type (``AgentResult.output``), and an answer that does not match goes back to
the model with what is wrong (``OutputRejected``), up to ``retries`` times, then fails the run.
"""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any, Literal, TypedDict

import anyio
import attrs
import orjson
import pytest

from agentflow import (
    Agent,
    AgentOptions,
    AgentResult,
    MaxStepsExceeded,
    ModelSettings,
    OpenAIChatModel,
    OpenAIResponsesModel,
    OutputRejected,
    OutputType,
    OutputValidationError,
    RunFailed,
    RunFinished,
    StopReason,
    run_sync,
)
from agentflow.agent.chat_client import to_chat_request
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.agent.responses_client import to_responses_request
from agentflow.model.events import Event
from agentflow.runtimes.output import OUTPUT_INSTRUCTIONS
from agentflow.runtimes.react import ReActRuntime
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

Protocol = Literal["chat", "responses"]
PROTOCOLS: list[Protocol] = ["chat", "responses"]


@attrs.frozen
class City:
    """A city and its population."""

    name: str
    population: int
    country: str | None = None


@dataclasses.dataclass
class Forecast:
    city: str
    days: list[float]


class Person(TypedDict):
    name: str
    age: int


@tool
async def population(city: str) -> int:
    """The population of a city."""
    return 2_102_650


def model_for(protocol: Protocol, server: ScriptedServer) -> Any:
    cls = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
    return cls(base_url=server.base_url, api_key="sk-test", model="gpt-test")


def asked_format(protocol: Protocol, body: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema a request asked for, in Chat's ``json_schema`` shape."""
    if protocol == "chat":
        fmt = body["response_format"]
        assert fmt["type"] == "json_schema"
        inner: dict[str, Any] = fmt["json_schema"]
        return inner
    fmt = dict(body["text"]["format"])
    assert fmt.pop("type") == "json_schema"
    return fmt


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_the_answer_is_read_into_the_type_after_tools(protocol: Protocol, stream: bool) -> None:
    turns = [
        Reply(tool_calls=[("population", {"city": "Paris"})]),
        Reply(text='{"name": "Paris", "population": 2102650, "country": null}', chunk_size=7),
    ]
    async with (
        ScriptedServer(turns) as server,
        Agent(model_for(protocol, server), tools=[population], output_type=City) as agent,
    ):
        with anyio.fail_after(10):
            if stream:
                events: list[Event] = []
                async with agent.stream("How many people live in Paris?") as run:
                    async for event in run:
                        events.append(event)
                result = run.result
                assert isinstance(events[-1], RunFinished)
                assert events[-1].to_dict()["result"]["output"] == {
                    "name": "Paris",
                    "population": 2102650,
                    "country": None,
                }
            else:
                result = await agent.run("How many people live in Paris?")
    assert result is not None
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.output == City("Paris", 2102650)
    # Every call asks for the schema: the model may call tools first, then answers in it.
    for request in server.requests:
        schema = asked_format(protocol, request.body)
        assert schema["name"] == "City"
        assert schema["strict"] is True
        assert schema["schema"]["required"] == ["name", "population", "country"]
        assert schema["schema"]["additionalProperties"] is False
        assert schema["schema"]["properties"]["country"] == {"type": ["string", "null"]}


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_answer_that_does_not_match_goes_back_with_the_error(protocol: Protocol) -> None:
    turns = [Reply(text='{"name": "Paris"}'), Reply(text='{"name": "Paris", "population": 3}')]
    async with ScriptedServer(turns) as server, Agent(model_for(protocol, server), output_type=City) as agent:
        events: list[Event] = []
        with anyio.fail_after(10):
            async with agent.stream("Paris?") as run:
                async for event in run:
                    events.append(event)
    result = run.result
    assert result is not None
    assert result.output == City("Paris", 3)
    assert result.steps == 2
    rejected = [e for e in events if isinstance(e, OutputRejected)]
    assert len(rejected) == 1
    assert rejected[0].retrying is True
    # Said against the schema the model was given (strict: every property is required, optional ones null).
    assert rejected[0].error == "output is missing the required properties 'population', 'country'"
    assert rejected[0].step == 0
    # The second request carries the rejected answer, then the error as a user turn.
    second = server.requests[1].body
    expected = OutputType(City).retry_prompt(rejected[0].error)
    assert '"required":["name","population","country"]' in expected  # the schema goes with the error
    if protocol == "chat":
        assert [m["role"] for m in second["messages"]][-3:] == ["user", "assistant", "user"]
        assert second["messages"][-1]["content"] == expected
    else:
        last = second["input"][-1]
        assert last["role"] == "user"
        assert last["content"] == [{"type": "input_text", "text": expected}]
    # Both turns are in the run's new items: memory stays a faithful conversation.
    assert len(result.new_items) == 4


async def test_the_run_fails_once_the_retries_are_spent() -> None:
    model = FakeModelClient([reply("I think Paris.", usage=(10, 5))] * 2)
    agent = Agent(model, output_type=OutputType(City, retries=1))
    events: list[Event] = []
    agent.on(None, events.append)
    with pytest.raises(OutputValidationError) as caught:
        await agent.run("Paris?")
    error = caught.value
    assert error.text == "I think Paris."
    assert error.reason.startswith("the answer is not valid JSON: unexpected character")
    assert error.partial.usage.total_tokens == 30  # both calls count
    assert [e.retrying for e in events if isinstance(e, OutputRejected)] == [True, False]
    terminal = events[-1]
    assert isinstance(terminal, RunFailed)
    assert terminal.error_type == "OutputValidationError"
    assert len(model.prompts) == 2


async def test_no_retries_fails_at_the_first_answer_that_does_not_match() -> None:
    model = FakeModelClient([reply("[]")])
    with pytest.raises(OutputValidationError, match="must be a JSON object"):
        await Agent(model, output_type=OutputType(City, retries=0)).run("Paris?")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"result": [1, 2, 3]}', [1, 2, 3]),
        ("[1, 2, 3]", [1, 2, 3]),  # a server that ignored the schema: the bare value
        ("Here it is:\n```json\n[1, 2, 3]\n```", [1, 2, 3]),
    ],
)
async def test_a_type_that_is_not_an_object_is_wrapped(text: str, expected: list[int]) -> None:
    model = FakeModelClient([reply(text)])
    result = await Agent(model, output_type=list[int]).run("Three numbers?")
    assert result.output == expected
    fmt = model.prompts[0].response_format
    assert fmt is not None
    assert fmt["json_schema"]["schema"] == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
        "required": ["result"],
        "additionalProperties": False,
    }


def test_an_answer_leaving_out_optional_fields_is_read_with_their_defaults() -> None:
    # What a server that ignores the (strict) schema sends.
    spec = OutputType(City)
    assert spec.strict is True
    assert spec.parse('{"name": "Paris", "population": 3}') == City("Paris", 3)
    assert spec.parse('{"name": "Paris", "population": 3, "country": null}') == City("Paris", 3)


async def test_fenced_json_in_prose_is_read() -> None:
    answer = 'Sure! ```json\n{"city": "Oslo", "days": [1.5, 2]}\n``` Anything else?'
    result = await Agent(FakeModelClient([reply(answer)]), output_type=Forecast).run("Oslo?")
    assert result.output == Forecast("Oslo", [1.5, 2.0])


async def test_a_typeddict_and_a_literal() -> None:
    result = await Agent(FakeModelClient([reply('{"name": "Ada", "age": 36}')]), output_type=Person).run("?")
    assert result.output == {"name": "Ada", "age": 36}
    result = await Agent(FakeModelClient([reply('{"result": "yes"}')]), output_type=Literal["yes", "no"]).run(
        "?"
    )
    assert result.output == "yes"


def test_a_type_strict_mode_cannot_express_gets_a_plain_schema() -> None:
    spec = OutputType(dict[str, int])
    assert spec.strict is False
    assert spec.response_format()["json_schema"]["strict"] is False
    assert spec.parse('{"result": {"a": 1}}') == {"a": 1}
    with pytest.raises(TypeError, match="strict mode"):
        OutputType(dict[str, int], strict=True)


def test_output_type_options() -> None:
    spec = OutputType(list[City], name="city list!", description="Cities, largest first.")
    fmt = spec.response_format()["json_schema"]
    assert fmt["name"] == "city_list"
    assert fmt["description"] == "Cities, largest first."
    assert OutputType(list[int]).name == "list"
    assert repr(OutputType(City)).startswith("OutputType(")


async def test_a_refusal_is_not_an_invalid_answer() -> None:
    model = FakeModelClient([AgentModelResult(refusal="I can't help with that.")])
    result = await Agent(model, output_type=City).run("?")
    assert result.stop_reason is StopReason.REFUSAL
    assert result.output is None
    assert len(model.prompts) == 1


async def test_the_final_answer_step_after_max_steps_is_read_too() -> None:
    model = FakeModelClient([reply(tool_calls=[("population", {"city": "Paris"})]), reply('{"result": 5}')])
    agent = Agent(
        model,
        tools=[population],
        output_type=int,
        options=AgentOptions(max_steps=1, on_max_steps="final_answer"),
    )
    result = await agent.run("?")
    assert result.stop_reason is StopReason.MAX_STEPS
    assert result.output == 5
    model = FakeModelClient([reply(tool_calls=[("population", {"city": "Paris"})]), reply("five")])
    agent = Agent(
        model,
        tools=[population],
        output_type=int,
        options=AgentOptions(max_steps=1, on_max_steps="final_answer"),
    )
    with pytest.raises(OutputValidationError):  # no retry in the last step
        await agent.run("?")


async def test_each_run_of_a_session_has_its_own_output() -> None:
    model = FakeModelClient([reply('{"result": 1}'), reply('{"result": 2}')])
    session = Agent(model, output_type=int).session()
    assert (await session.run("one")).output == 1
    assert (await session.run("two")).output == 2


class _TextOnlyRuntime(ReActRuntime):
    """A runtime that cannot read its answer into an output type."""

    name = "text_only"
    structured_output = False


def test_bad_configurations_are_refused_where_they_are_written() -> None:
    model = FakeModelClient([])
    with pytest.raises(TypeError, match="text_only runtime does not read"):
        Agent(model, runtime=_TextOnlyRuntime(), output_type=City)
    with pytest.raises(TypeError, match=r"either output_type or ModelSettings\.response_format"):
        Agent(model, output_type=City, settings=ModelSettings(response_format={"type": "json_object"}))
    with pytest.raises(TypeError, match="output_type=str is the default"):
        Agent(model, output_type=str)
    with pytest.raises(ValueError, match="retries"):
        OutputType(City, retries=-1)
    with pytest.raises(TypeError, match="unsupported annotation"):
        Agent(model, output_type=object)
    with pytest.raises(TypeError, match="response_format must be a mapping"):
        ModelSettings(response_format="json")  # type: ignore[arg-type]


async def test_a_response_format_setting_is_sent_on_both_protocols() -> None:
    settings = ModelSettings(response_format={"type": "json_object"})
    model = FakeModelClient([reply('{"a": 1}')])
    result = await Agent(model, settings=settings).run("JSON please")
    assert result.output_text == '{"a": 1}'
    assert result.output == '{"a": 1}'  # no output type: the output is the answer's text
    prompt = model.prompts[0]
    assert prompt.response_format == {"type": "json_object"}
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    request = to_chat_request(AgentPrompt(response_format=schema))
    assert request.parameters.response_format == schema
    responses = to_responses_request(AgentPrompt(response_format=schema))
    assert responses.text == {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}}


def test_settings_keep_their_own_copy() -> None:
    given = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    settings = ModelSettings(response_format=given)
    given["json_schema"]["name"] = "changed"
    assert settings.response_format is not None
    assert settings.response_format["json_schema"]["name"] == "x"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # An example, a draft or a thought comes before the answer: the last value that matches wins.
        ('The format is {"name": "X", "population": 0}. Answer: {"name": "Rome", "population": 2}', "Rome"),
        (
            '<think>Maybe {"name": "Roma", "population": 1}? No.</think>{"name": "Rome", "population": 2}',
            "Rome",
        ),
        ('Draft {"name": "Rome"} Final {"name": "Rome", "population": 2} Done {"x": 1}', "Rome"),
    ],
)
def test_the_last_value_that_matches_is_the_answer(text: str, expected: str) -> None:
    assert OutputType(City).parse(text) == City(expected, 2)


def test_a_big_integer_in_a_fence_stays_exact() -> None:
    spec = OutputType(dict[str, int])
    assert spec.parse('```json\n{"result": {"id": 123456789012345678901234567890}}\n```') == {
        "id": 123456789012345678901234567890
    }


def test_an_answer_with_several_mistakes_is_told_them_all() -> None:
    with pytest.raises(ValueError, match=r"^output is missing") as caught:
        OutputType(City).parse('{"name": 7, "population": "many", "mayor": "x"}')
    # In strict mode the model was told that every property is required, an optional one as nullable.
    assert str(caught.value).split("; ") == [
        "output is missing the required property 'country'",
        "output has unknown property 'mayor' (expected: name, population, country)",
        "output.name must be string, got the number 7",
        'output.population must be integer, got the string "many"',
    ]


def test_a_malformed_answer_is_reported_as_such_not_as_its_inner_values() -> None:
    text = '```json\n{"city": {"name": "Rome", "population": 2}, "note": "x",}\n```'
    with pytest.raises(ValueError, match="the answer is not valid JSON: ") as caught:
        OutputType(City).parse(text)
    assert "missing" not in str(caught.value)


async def test_a_rejection_with_no_step_left_fails_the_run_instead_of_leaving_a_retry_prompt() -> None:
    model = FakeModelClient([reply("not json")])
    agent = Agent(model, output_type=City, options=AgentOptions(max_steps=1))
    session = agent.session()
    with pytest.raises(OutputValidationError):
        await session.run("Paris?")
    # No retry prompt waits in memory for an answer the run will never give.
    assert "does not match" not in str(session.memory.items[-1])


async def test_prompted_mode_puts_the_schema_in_the_system_prompt_and_sends_no_format() -> None:
    model = FakeModelClient([reply('{"name": "Paris", "population": 3}')])
    agent = Agent(model, system_prompt="Be brief.", output_type=OutputType(City, mode="prompted"))
    result = await agent.run("Paris?")
    assert result.output == City("Paris", 3)
    prompt = model.prompts[0]
    assert prompt.response_format is None
    assert prompt.system_prompt is not None
    assert prompt.system_prompt.startswith("Be brief.")
    assert prompt.system_prompt.endswith(
        OUTPUT_INSTRUCTIONS.format(schema=orjson.dumps(OutputType(City).schema).decode())
    )
    with pytest.raises(ValueError, match="mode"):
        OutputType(City, mode="tool")  # type: ignore[arg-type]


def test_the_run_errors_survive_pickling() -> None:
    partial = AgentResult("run_1", "", StopReason.ERROR, steps=2)
    for error in (
        OutputValidationError("bad", "text", partial),
        MaxStepsExceeded(3, partial),
    ):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error)
        assert str(copy) == str(error)
        assert copy.partial == partial
    assert pickle.loads(pickle.dumps(OutputValidationError("bad", "text", partial))).text == "text"


async def test_an_attrs_output_is_written_by_its_aliases_in_events() -> None:
    @attrs.frozen
    class Page:
        _limit: int

    model = FakeModelClient([reply('{"limit": 5}')])
    events: list[Event] = []
    agent = Agent(model, output_type=Page)
    agent.on(RunFinished, events.append)
    result = await agent.run("?")
    assert result.output == Page(5)
    assert events[0].to_dict()["result"]["output"] == {"limit": 5}


def test_an_output_type_is_immutable_and_checks_its_options() -> None:
    spec = OutputType(City)
    with pytest.raises(AttributeError, match="immutable"):
        spec.name = "Other"  # type: ignore[misc]
    assert spec.response_format()["json_schema"]["name"] == "City"
    with pytest.raises(TypeError, match="name must be a str"):
        OutputType(City, name=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="description must be a str"):
        OutputType(City, description=5)  # type: ignore[arg-type]


async def test_a_run_may_take_its_own_output_type() -> None:
    model = FakeModelClient([reply("Hello."), reply('{"name": "Paris", "population": 3}'), reply("Bye.")])
    chat = Agent(model).session()  # a free-text conversation
    assert (await chat.run("Hi")).output == "Hello."
    summary = await chat.run("Which city, as data?", output_type=City)
    assert summary.output == City("Paris", 3)
    assert model.prompts[1].response_format is not None
    assert (await chat.run("Thanks")).output == "Bye."
    assert model.prompts[2].response_format is None
    # And the other way: a typed agent, one free-text run; each checked where it is given.
    typed = Agent(FakeModelClient([reply("Just text.")]), output_type=City)
    async with typed.stream("Say hi", output_type=None) as run:
        async for _ in run:
            pass
    assert run.result is not None
    assert run.result.output_text == "Just text."
    assert run.result.output == "Just text."
    with pytest.raises(TypeError, match="text_only runtime does not read"):
        Agent(FakeModelClient([]), runtime=_TextOnlyRuntime()).stream("x", output_type=City)


def test_a_blocking_run_takes_its_own_output_type_and_run_id() -> None:
    model = FakeModelClient(
        [reply('{"name": "Paris", "population": 3}'), reply('{"name": "Rome", "population": 4}')]
    )
    agent = Agent(model)  # free text, one typed run each way in
    result = agent.run_sync("Which city, as data?", output_type=City, run_id="sync-1")
    assert (result.output, result.run_id) == (City("Paris", 3), "sync-1")
    assert model.prompts[0].response_format is not None
    result = run_sync(agent, "And another?", output_type=OutputType(City), run_id="sync-2")
    assert (result.output, result.run_id) == (City("Rome", 4), "sync-2")


async def test_a_rejection_with_the_token_budget_spent_fails_instead_of_leaving_a_retry_prompt() -> None:
    model = FakeModelClient([reply("nope", usage=(100, 10))])
    chat = Agent(model, options=AgentOptions(max_tokens=100)).session()
    with pytest.raises(OutputValidationError):
        await chat.run("hi", output_type=City)
    assert "does not match" not in str(chat.memory.items[-1])
