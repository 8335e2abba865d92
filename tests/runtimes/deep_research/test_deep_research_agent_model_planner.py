"""``planner="model"`` plans with the run's own model: the model client each run uses (an
``agent.override``'s, a fake in a test) and the model name its settings ask for, never a model kept when the
agent was built; an explicit ``ModelPlanner(chat_model)`` keeps its own. And no re-plan once the run's token
budget is spent."""

from __future__ import annotations

from typing import Any

import anyio
import orjson
import pytest
from deep_research_support import collect, lookup

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.events import ModelRequest, PlanCreated, PlanUpdated, RunFailed
from agentflow.model.events import ModelCompleted
from agentflow.model.messages import UserMessage
from agentflow.model.response import TokenUsage
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.result import StopReason
from agentflow.runtimes.deep_research import DeepResearchRuntime
from agentflow.runtimes.planner import (
    PLANNER_PROMPT,
    AgentModelPlanner,
    ModelPlanner,
    PlanContext,
    PlanParseError,
)
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeChatModel, FakeModelClient, chat_reply, reply
from agentflow.tools import ToolContext, tool

PLANNER_SAYS = "You are the planner of a research agent"


def is_plan_prompt(prompt: AgentPrompt) -> bool:
    return (prompt.system_prompt or "").startswith(PLANNER_SAYS)


# --- agent.override(model=...) reaches the plan ------------------------------------------------------------


async def test_an_override_s_fake_model_client_makes_the_plans_and_the_production_model_is_never_called() -> (
    None
):
    production = FakeChatModel([])  # stands for an OpenAIChatModel: any call to it fails the test
    agent = Agents.deep_research(production, planner="model", replan_every=1, tools=[lookup])
    fake = FakeModelClient(
        [
            reply('["Look up sky", "Summarise"]', usage=(5, 1)),
            reply(tool_calls=[("lookup", {"topic": "sky"})]),
            reply('["Look up sky (done)", "Summarise"]', usage=(7, 2)),
            reply("Rayleigh scattering."),
        ]
    )
    with agent.override(model=fake):
        events, result = await collect(agent, "Why is the sky blue?")

    assert production.requests == []
    assert result.output_text == "Rayleigh scattering."
    plan, first_step, replan, last_step = fake.prompts
    assert [is_plan_prompt(p) for p in (plan, first_step, replan, last_step)] == [True, False, True, False]
    # The planner's own request: its system prompt, one user message, no tools, not streamed.
    assert (plan.tools, plan.stream, plan.model) == ((), False, None)
    assert [type(i) for i in plan.items] == [UserMessage]
    assert plan.items[0].text.startswith("Goal: Why is the sky blue?\n\nTools the agent can use:\n- lookup")
    assert "Progress so far" in replan.items[0].text
    plans = [e.plan for e in events if isinstance(e, PlanCreated | PlanUpdated)]
    assert [p.texts for p in plans] == [("Look up sky", "Summarise"), ("Look up sky", "Summarise")]
    assert plans[1].steps[0].status.value == "done"
    # Published and counted as a ChatModel planner's call is: its two messages, purpose "plan", once.
    requests = [e for e in events if isinstance(e, ModelRequest)]
    assert [(r.purpose, r.items, r.tools) for r in requests if r.purpose == "plan"] == [
        ("plan", 2, ()),
        ("plan", 2, ()),
    ]
    assert next(e.response.memory_items for e in events if isinstance(e, ModelCompleted)) == ()
    assert plans[0].usage == TokenUsage(5, 1, 6)
    assert result.usage.total_tokens == 6 + 9


async def test_an_override_s_chat_model_makes_the_plan_instead_of_the_agent_s() -> None:
    production = FakeChatModel([chat_reply('["step A"]')] * 3)
    agent = Agents.deep_research(production, planner="model")
    test = FakeChatModel([chat_reply('["step T"]'), chat_reply("done")])
    with agent.override(model=test):
        events, result = await collect(agent, "goal")
    assert result.output_text == "done"
    assert production.requests == []
    assert len(test.requests) == 2
    (created,) = [e for e in events if isinstance(e, PlanCreated)]
    assert created.plan.texts == ("step T",)
    # Outside the block the agent's own model plans again: the planner kept none of the override's.
    await agent.run("goal")
    assert len(production.requests) == 2
    assert len(test.requests) == 2


async def test_a_fake_model_client_agent_plans_with_its_fake_without_an_override() -> None:
    fake = FakeModelClient([reply('{"steps": ["a", "b"]}'), reply("ok")])
    events, result = await collect(Agents.deep_research(fake, planner="model"), "goal")
    assert result.output_text == "ok"
    (created,) = [e for e in events if isinstance(e, PlanCreated)]
    assert created.plan.texts == ("a", "b")
    assert is_plan_prompt(fake.prompts[0])


async def test_a_test_double_can_tell_the_planning_prompt_from_a_step_s() -> None:
    def answer(prompt: AgentPrompt) -> AgentModelResult:
        return reply('["plan step"]') if is_plan_prompt(prompt) else reply("the answer")

    agent = Agents.deep_research(FakeChatModel([]), planner="model")
    with agent.override(model=FakeModelClient([answer, answer])):
        result = await agent.run("goal")
    assert result.output_text == "the answer"


async def test_an_override_s_model_also_makes_an_unreadable_plan_fail_the_run_counted_once() -> None:
    agent = Agents.deep_research(FakeChatModel([]), planner=AgentModelPlanner(on_invalid="raise"))
    with agent.override(model=FakeModelClient([reply("I will not plan.", usage=(300, 50))])):
        async with agent.stream("goal") as run:
            events = [event async for event in run]
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "PlanParseError"
    assert failed.partial is not None
    assert failed.partial.usage.total_tokens == 350


# --- the run's model name reaches the plan -----------------------------------------------------------------


async def test_a_run_s_own_settings_model_name_reaches_the_plan_request() -> None:
    chat = FakeChatModel([chat_reply('["a"]'), chat_reply("ok")] * 2)
    agent = Agents.deep_research(chat, planner="model", settings=ModelSettings(model="gpt-4.1-mini"))
    await agent.run("goal", settings=ModelSettings(model="gpt-4.1"))
    assert [r.parameters.model for r in chat.requests] == ["gpt-4.1", "gpt-4.1"]
    # The agent's own name again for a run that sets none.
    await agent.run("goal")
    assert [r.parameters.model for r in chat.requests[2:]] == ["gpt-4.1-mini", "gpt-4.1-mini"]


async def test_an_override_s_settings_model_name_reaches_the_plan_request() -> None:
    agent = Agents.deep_research(FakeChatModel([]), planner="model")
    fake = FakeModelClient([reply('["a"]'), reply("ok")])
    with agent.override(model=fake, settings=ModelSettings(model="test-model")):
        events, _ = await collect(agent, "goal")
    assert [p.model for p in fake.prompts] == ["test-model", "test-model"]
    (plan_request, _) = [e for e in events if isinstance(e, ModelRequest)]
    assert (plan_request.purpose, plan_request.model) == ("plan", "test-model")


# --- the wire: what planner="model" sends is what ModelPlanner(model) sent ---------------------------------


@pytest.mark.parametrize("name", [None, "gpt-4.1-mini"])
async def test_planner_model_sends_the_same_chat_request_as_a_model_planner_on_the_same_model(
    name: str | None,
) -> None:
    settings = ModelSettings(model=name) if name else None
    bodies: list[bytes] = []
    for explicit in (False, True):
        async with (
            ScriptedServer([Reply(text='["a"]'), Reply(text="ok")]) as server,
            OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini", api_key="sk-test") as model,
        ):
            options: dict[str, Any] = {
                "settings": settings,
                "tools": [lookup],
                "system_prompt": "Use the wiki.",
            }
            if explicit:  # what planner="model" built before it planned with the run's model
                planner = ModelPlanner(model, parameters={"model": name} if name else None)
                agent = Agents.deep_research(model, planner=planner, **options)
            else:
                agent = Agents.deep_research(model, planner="model", **options)
            await agent.run("goal")
            bodies.append(server.requests[0].raw_body)
    assert bodies[0] == bodies[1]
    assert orjson.loads(bodies[0])["model"] == (name or "gpt-4o-mini")


async def test_planner_model_over_the_responses_api_puts_its_prompt_in_the_instructions() -> None:
    async with (
        ScriptedServer([Reply(text='["a"]'), Reply(text="ok")]) as server,
        OpenAIResponsesModel(base_url=server.base_url, model="gpt-4o-mini", api_key="sk-test") as model,
    ):
        result = await Agents.deep_research(model, planner="model", tools=[lookup]).run("goal")
    assert result.output_text == "ok"
    plan = server.requests[0].body
    assert "tools" not in plan
    assert plan["model"] == "gpt-4o-mini"
    assert plan["instructions"] == PLANNER_PROMPT.format(max_steps=6)
    (user,) = plan["input"]
    assert user["role"] == "user"
    assert user["content"][0]["text"].startswith("Goal: goal\n\nTools the agent can use:")


# --- an explicit ModelPlanner keeps its model -------------------------------------------------------------


async def test_an_explicit_model_planner_keeps_its_own_model_under_an_override() -> None:
    planner_model = FakeChatModel([chat_reply('["planned by the planner model"]')])
    agent = Agents.deep_research(FakeChatModel([]), planner=ModelPlanner(planner_model))
    fake = FakeModelClient([reply("ok")])
    with agent.override(model=fake, settings=ModelSettings(model="test-model")):
        events, result = await collect(agent, "goal")
    assert result.output_text == "ok"
    assert len(planner_model.requests) == 1
    assert planner_model.requests[0].parameters.model is None  # the run's settings are not the planner's
    (step,) = fake.prompts
    assert not is_plan_prompt(step)
    (created,) = [e for e in events if isinstance(e, PlanCreated)]
    assert created.plan.texts == ("planned by the planner model",)


# --- the planner outside a run -----------------------------------------------------------------------------


async def test_the_agent_model_planner_plans_through_the_call_it_is_given_and_only_in_a_run() -> None:
    planner = AgentModelPlanner(max_steps=3)
    with pytest.raises(RuntimeError, match="plans with the agent's own model, in a run only"):
        await planner.plan("goal")
    sent: list[AgentPrompt] = []

    async def call(prompt: AgentPrompt) -> AgentModelResult:
        sent.append(prompt)
        return reply("1. Find A\n2. Find B", usage=(3, 2))

    plan = await planner.plan("Compare A and B", PlanContext(agent_model_call=call))
    assert plan.texts == ("Find A", "Find B")
    assert plan.usage == TokenUsage(3, 2, 5)
    assert sent == [planner.request("Compare A and B")]
    assert "at most 3 short" in (sent[0].system_prompt or "")
    assert (await planner.plan("  ")).steps == ()  # a blank goal asks nothing
    with pytest.raises(PlanParseError):
        await AgentModelPlanner(on_invalid="raise").plan(
            "goal", PlanContext(agent_model_call=lambda prompt: _answer("no plan here"))
        )
    assert repr(planner) == "AgentModelPlanner(on_invalid='fallback')"


async def _answer(text: str) -> AgentModelResult:
    return reply(text)


# --- the token budget -------------------------------------------------------------------------------------


@tool
async def spend(ctx: ToolContext) -> str:
    """A sub-agent that spends tokens."""
    ctx.add_usage(TokenUsage(100, 100, 200))
    return "ok"


async def test_no_re_plan_once_the_run_s_token_budget_is_spent() -> None:
    planner_model = FakeChatModel([chat_reply('["s1"]', usage=(5, 5)), chat_reply('["s2"]', usage=(5, 5))])
    model = FakeModelClient([reply(tool_calls=[("spend", {})], usage=(10, 10)), reply("done")])
    agent = Agent(
        model,
        tools=[spend],
        runtime=DeepResearchRuntime(ModelPlanner(planner_model), replan_every=1),
        options=AgentOptions(max_tokens=100),
    )
    events, result = await collect(agent, "goal")
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert len(planner_model.requests) == 1  # the first plan only
    assert len(model.prompts) == 1
    assert not [e for e in events if isinstance(e, PlanUpdated)]
    assert result.usage.total_tokens == 10 + 20 + 200


async def test_a_re_plan_is_still_made_while_the_budget_lasts() -> None:
    planner_model = FakeChatModel([chat_reply('["s1"]', usage=(5, 5)), chat_reply('["s2"]', usage=(5, 5))])
    model = FakeModelClient([reply(tool_calls=[("lookup", {"topic": "x"})], usage=(10, 10)), reply("done")])
    agent = Agent(
        model,
        tools=[lookup],
        runtime=DeepResearchRuntime(ModelPlanner(planner_model), replan_every=1),
        options=AgentOptions(max_tokens=1000),
    )
    with anyio.fail_after(10):
        result = await agent.run("goal")
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert len(planner_model.requests) == 2
