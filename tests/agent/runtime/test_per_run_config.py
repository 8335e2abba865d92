"""A run's own ``settings=`` and ``options=``: settings merge over the agent's, options replace them, every
limit applies to that run alone, and the agent's next run is the agent's again."""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest

from agentflow.agent.agent import Agent, run_sync
from agentflow.agent.chat_client import ChatModelClient
from agentflow.agent.options import AgentOptions, ModelSettings, merge_settings
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.result import StopReason
from agentflow.runtimes import MaxStepsExceeded
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeChatModel, FakeModelClient, chat_reply, reply
from agentflow.tools import tool


@tool
async def lookup(q: str) -> str:
    """Look something up."""
    return f"about {q}"


def looping(prompt: AgentPrompt) -> AgentModelResult:
    """A model that always asks for one more tool call."""
    return reply(tool_calls=[("lookup", {"q": "more"})], usage=(10, 1))


# -- settings ------------------------------------------------------------------------------------------------


async def test_a_run_s_temperature_reaches_the_wire_and_the_next_run_is_the_agent_s_again() -> None:
    async with ScriptedServer([Reply(text="ok")] * 4) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="m")
        agent = Agent(model, settings=ModelSettings(temperature=0.7, max_output_tokens=50))
        async with agent:
            await agent.run("a")
            await agent.run("b", settings=ModelSettings(temperature=0))
            await agent.run("c")
            async with agent.stream("d", settings=ModelSettings(temperature=1.5, model="other")) as run:
                async for _ in run:
                    pass

    bodies = [r.body for r in server.requests]
    assert [b["temperature"] for b in bodies] == [0.7, 0, 0.7, 1.5]
    # What a run leaves unset is the agent's: the output cap reaches every request.
    assert [b["max_completion_tokens"] for b in bodies] == [50, 50, 50, 50]
    assert [b["model"] for b in bodies] == ["m", "m", "m", "other"]


async def test_the_chat_client_reuses_parameters_within_a_run_and_never_across_different_settings() -> None:
    # Its reuse is keyed by the identity of the settings' values: a run's own settings are other values.
    script = [chat_reply(tool_calls=[("lookup", {"q": "x"})]), chat_reply("done")] * 3
    chat_model = FakeChatModel(script)
    agent = Agent(ChatModelClient(chat_model), tools=[lookup], settings=ModelSettings(temperature=0.2))

    await agent.run("agent's")
    await agent.run("run's", settings=ModelSettings(temperature=0.9, max_output_tokens=7))
    await agent.run("agent's again")

    params = [r.parameters for r in chat_model.requests]
    assert [(p.temperature, p.max_completion_tokens) for p in params] == [
        (0.2, None),
        (0.2, None),
        (0.9, 7),
        (0.9, 7),
        (0.2, None),
        (0.2, None),
    ]
    assert params[0] is params[1]  # the steps of one run share one ChatParameters
    assert params[2] is params[3]
    assert params[4] is params[5]


async def test_a_session_s_run_takes_its_own_settings() -> None:
    model = FakeModelClient([reply("one"), reply("two"), reply("three")])
    chat = Agent(model, settings=ModelSettings(temperature=0.5, user="u1")).session()

    await chat.run("first")
    await chat.run("second", settings=ModelSettings(temperature=0, user="u2"))
    await chat.run("third")

    assert [(p.temperature, p.user) for p in model.prompts] == [(0.5, "u1"), (0, "u2"), (0.5, "u1")]
    assert len(model.prompts[2].items) == 5  # the session's memory is shared as always


def test_run_sync_takes_settings_and_options() -> None:
    model = FakeModelClient([looping, looping, reply("answer")])
    agent = Agent(model, tools=[lookup])

    result = agent.run_sync("go", settings=ModelSettings(top_p=0.1), options=AgentOptions(max_steps=1))

    assert result.stop_reason is StopReason.MAX_STEPS
    assert result.steps == 1
    assert model.prompts[0].top_p == 0.1
    chat = agent.session()
    assert run_sync(chat, "go", settings=ModelSettings(top_p=0.3)).output_text == "answer"
    assert [p.top_p for p in model.prompts[1:]] == [0.3, 0.3]


def test_settings_merge_field_by_field_and_extra_body_key_by_key() -> None:
    agent = ModelSettings(
        model="a", temperature=0.7, max_output_tokens=500, user="u", extra_body={"top_k": 40, "seed": 1}
    )
    run = ModelSettings(temperature=0, parallel_tool_calls=False, extra_body={"seed": 7})

    merged = merge_settings(agent, run)

    assert merged == ModelSettings(
        model="a",
        temperature=0,
        max_output_tokens=500,
        user="u",
        parallel_tool_calls=False,
        extra_body={"top_k": 40, "seed": 7},
    )
    assert agent.extra_body == {"top_k": 40, "seed": 1}  # neither input is changed
    # Nothing to merge: the object itself, so a model client's parameter reuse goes on working.
    assert merge_settings(agent, ModelSettings()) is agent
    assert merge_settings(ModelSettings(), run) is run


async def test_a_run_s_response_format_and_an_output_type_are_refused_together() -> None:
    @attrs.frozen
    class City:
        name: str

    agent = Agent(FakeModelClient([reply('{"type": "json_object"}')]), output_type=City)
    json_format = ModelSettings(response_format={"type": "json_object"})
    with pytest.raises(TypeError, match="response_format"):
        await agent.run("x", settings=json_format)
    # A free-text run of the typed agent may send its own format.
    result = await agent.run("x", settings=json_format, output_type=None)
    assert result.output == '{"type": "json_object"}'


@pytest.mark.parametrize(
    ("keyword", "value", "match"),
    [
        ("settings", {"temperature": 0}, r"settings= takes a ModelSettings, not a dict"),
        ("settings", AgentOptions(), r"this AgentOptions goes in options="),
        ("options", {"max_steps": 1}, r"options=AgentOptions\(\*\*your_dict\)"),
        ("options", ModelSettings(), r"this ModelSettings goes in settings="),
        ("options", 3, r"options= takes an AgentOptions, e.g. options=AgentOptions\(max_steps=5\), got int"),
    ],
)
async def test_a_run_s_settings_and_options_are_checked(keyword: str, value: Any, match: str) -> None:
    agent = Agent(FakeModelClient([]))
    with pytest.raises(TypeError, match=match):
        await agent.run("x", **{keyword: value})
    with pytest.raises(TypeError, match=match):
        agent.stream("x", **{keyword: value})
    with pytest.raises(TypeError, match=match):
        Agent(FakeModelClient([]), **{keyword: value})


# -- options -------------------------------------------------------------------------------------------------


async def test_a_run_s_max_steps_stops_that_run_only() -> None:
    model = FakeModelClient([looping] * 5)
    agent = Agent(model, tools=[lookup], options=AgentOptions(max_steps=3))

    short = await agent.run("go", options=AgentOptions(max_steps=2))
    usual = await agent.run("go")

    assert (short.stop_reason, short.steps) == (StopReason.MAX_STEPS, 2)
    assert (usual.stop_reason, usual.steps) == (StopReason.MAX_STEPS, 3)


async def test_a_run_s_options_replace_the_agent_s_whole() -> None:
    # The agent's max_steps=1 is not kept: the run's AgentOptions() has the default (20).
    model = FakeModelClient([looping, looping, reply("answer")])
    agent = Agent(model, tools=[lookup], options=AgentOptions(max_steps=1, on_max_steps="raise"))

    result = await agent.run("go", options=AgentOptions())
    assert (result.stop_reason, result.steps) == (StopReason.FINAL_ANSWER, 3)

    # One field of the agent's changed, the others kept: attrs.evolve.
    model = FakeModelClient([looping, looping])
    agent = Agent(model, tools=[lookup], options=AgentOptions(max_steps=1, on_max_steps="raise"))
    with pytest.raises(MaxStepsExceeded):
        await agent.run("go", options=attrs.evolve(agent.options, max_steps=2))
    assert len(model.prompts) == 2


async def test_a_run_s_tool_call_and_token_limits_apply_to_it() -> None:
    model = FakeModelClient([looping] * 4)
    agent = Agent(model, tools=[lookup])
    capped = await agent.run("go", options=AgentOptions(max_tool_calls=1))
    assert capped.stop_reason is StopReason.MAX_TOOL_CALLS

    model = FakeModelClient([looping] * 4)
    agent = Agent(model, tools=[lookup])
    budget = await agent.run("go", options=AgentOptions(max_tokens=15))
    assert budget.stop_reason is StopReason.MAX_TOKENS
    assert budget.usage.total_tokens == 22  # two calls of 11: the budget is checked between calls


async def test_a_run_s_timeout_ends_that_run() -> None:
    @tool
    async def hang() -> str:
        """Never returns."""
        await anyio.sleep_forever()
        return "never"

    model = FakeModelClient([reply(tool_calls=[("hang", {})])])
    agent = Agent(model, tools=[hang])
    with anyio.fail_after(10):  # guards against a hang; the run must end through its own deadline
        result = await agent.run("go", options=AgentOptions(timeout=0.1, tool_timeout=None))
    assert result.stop_reason is StopReason.DEADLINE


async def test_a_run_s_stream_option_decides_whether_its_model_calls_stream() -> None:
    model = FakeModelClient([reply("one"), reply("two")])
    agent = Agent(model)

    async with agent.stream("x", options=AgentOptions(stream=False)) as run:
        async for _ in run:
            pass
    assert model.streams_opened == 0
    await agent.run("y", options=AgentOptions(stream=True))
    assert model.streams_opened == 1


async def test_without_its_own_a_run_uses_the_agent_s_objects_as_they_are() -> None:
    agent = Agent(FakeModelClient([reply("x")]), settings=ModelSettings(temperature=0))
    run = agent.stream("x")
    assert run.ctx.settings is agent.settings
    assert run.ctx.options is agent.options
    given = AgentOptions(max_steps=2)
    run = agent.stream("x", options=given)
    assert run.ctx.options is given
    assert run.ctx.settings is agent.settings
