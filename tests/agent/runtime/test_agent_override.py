"""``agent.override(...)``: runs of an agent started in the block use the given model, tools, settings or
options; runs outside it, and tasks that did not start in it, use the agent's own."""

from __future__ import annotations

import anyio
import attrs
import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.result import StopReason
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


@tool
async def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def test_runs_in_the_block_use_the_given_model_and_the_agent_s_own_after_it() -> None:
    own = FakeModelClient([reply("own")])
    fake = FakeModelClient([reply("fake"), reply("fake again")])
    agent = Agent(own)
    with agent.override(model=fake):
        assert (await agent.run("hi")).output_text == "fake"
        assert (await agent.session().run("hi")).output_text == "fake again"
    assert (await agent.run("hi")).output_text == "own"
    assert agent.model_client is own  # the agent itself was left as it was


def test_run_sync_in_the_block_uses_it_too_and_closes_the_model_it_used() -> None:
    own, fake = FakeModelClient([]), FakeModelClient([reply("fake")])
    agent = Agent(own)
    with agent.override(model=fake):
        assert agent.run_sync("hi").output_text == "fake"
    assert (fake.closed, own.closed) == (True, False)


async def test_tools_settings_and_options_are_replaced_or_merged() -> None:
    fake = FakeModelClient([reply(tool_calls=[("lookup", {"city": "Oslo"})]), reply("Sunny.")])
    agent = Agent(FakeModelClient([]), settings=ModelSettings(temperature=0.1, top_p=0.5))
    with agent.override(
        model=fake, tools=[lookup], settings=ModelSettings(temperature=0.9), options=AgentOptions(max_steps=7)
    ):
        result = await agent.run("Weather in Oslo?")
    assert result.output_text == "Sunny."
    assert [r.output for r in result.tool_results] == ["sunny in Oslo"]
    prompt = fake.prompts[0]
    assert (prompt.temperature, prompt.top_p) == (0.9, 0.5)  # merged over the agent's, as a run's are
    assert [t.name for t in prompt.tools] == ["lookup"]


async def test_options_of_the_block_apply_and_a_run_s_own_come_on_top() -> None:
    calls = [("lookup", {"city": "Oslo"})]
    fake = FakeModelClient([reply(tool_calls=calls) for _ in range(5)])
    agent = Agent(FakeModelClient([]), tools=[lookup])
    with agent.override(model=fake, options=AgentOptions(max_steps=1, on_max_steps="stop")):
        assert (await agent.run("go")).stop_reason is StopReason.MAX_STEPS
        result = await agent.run("go", options=AgentOptions(max_steps=2, on_max_steps="stop"))
    assert result.steps == 2


async def test_blocks_nest_and_the_outer_comes_back() -> None:
    agent = Agent(FakeModelClient([]))
    outer = FakeModelClient([reply("outer"), reply("outer again")])
    with agent.override(model=outer, settings=ModelSettings(temperature=0.2)):
        with agent.override(model=FakeModelClient([reply("inner")])):
            assert (await agent.run("hi")).output_text == "inner"
        assert (await agent.run("hi")).output_text == "outer"
    assert outer.prompts[0].temperature == 0.2


async def test_only_tasks_started_in_the_block_see_it() -> None:
    own = FakeModelClient([reply("own")])
    agent = Agent(own)
    entered, outside_ran = anyio.Event(), anyio.Event()
    answers: dict[str, str] = {}

    async def outside() -> None:  # started before the block: its context has no override
        await entered.wait()
        answers["outside"] = (await agent.run("hi")).output_text
        outside_ran.set()

    async with anyio.create_task_group() as group:
        group.start_soon(outside)
        with agent.override(model=FakeModelClient([reply("fake")])):
            entered.set()
            await outside_ran.wait()
            async with anyio.create_task_group() as inner:  # started in the block: it sees it

                async def inside() -> None:
                    answers["inside"] = (await agent.run("hi")).output_text

                inner.start_soon(inside)
    assert answers == {"outside": "own", "inside": "fake"}


async def test_another_agent_is_not_overridden() -> None:
    one, two = Agent(FakeModelClient([])), Agent(FakeModelClient([reply("two's own")]))
    with one.override(model=FakeModelClient([reply("fake")])):
        assert (await two.run("hi")).output_text == "two's own"


def test_bad_values_are_refused_when_the_block_is_entered() -> None:
    agent = Agent(FakeModelClient([]))
    with pytest.raises(TypeError, match="settings= takes a ModelSettings"):
        agent.override(settings={"temperature": 0}).__enter__()  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="options= takes an AgentOptions"):
        agent.override(options=AgentOptions).__enter__()  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="model must be"):
        agent.override(model="gpt-4o").__enter__()  # type: ignore[arg-type]


async def test_an_empty_tool_list_is_an_override_too() -> None:
    fake = FakeModelClient([reply("No tools here.")])
    agent = Agent(FakeModelClient([]), tools=[lookup])
    with agent.override(model=fake, tools=[]):
        await agent.run("hi")
    assert fake.prompts[0].tools == ()


async def test_override_settings_with_a_response_format_clash_with_an_output_type() -> None:
    @attrs.frozen
    class City:
        name: str

    agent = Agent(FakeModelClient([]), output_type=City)
    clash = ModelSettings(response_format={"type": "json_object"})
    with agent.override(settings=clash), pytest.raises(TypeError, match="response_format"):
        await agent.run("hi")


async def test_an_override_s_options_reach_the_agent_used_as_a_tool() -> None:
    helper_model = FakeModelClient([reply("Oslo is sunny.")])
    helper = Agent(FakeModelClient([]), name="Helper")
    parent = Agent(
        FakeModelClient([reply(tool_calls=[("helper", {"input": "Weather in Oslo?"})]), reply("Sunny.")]),
        tools=[helper.as_tool(description="Answers weather questions.")],
    )
    seen: list[object] = []
    with helper.override(model=helper_model, options=AgentOptions(stream=False)):
        await parent.run("Weather?", on=[(None, seen.append)])  # observed: the helper's run is forwarded
    assert seen
    assert helper_model.prompts[0].stream is False  # the override's options, not the agent's
