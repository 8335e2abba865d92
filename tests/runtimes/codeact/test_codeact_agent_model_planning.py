"""A CodeAct agent planning with its own model (``Agents.codeact(model, replan_every=N)``,
``planner="model"``) plans with the run's model: an ``agent.override``'s in a test, for the model name the
run's settings ask for; an explicit ``ModelPlanner(chat_model)`` keeps its own. And no re-plan once the
token budget is spent."""

from __future__ import annotations

import anyio
from codeact_support import Boxes, assert_codeact_memory_valid, code, final, get_price

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.agent.prompt import AgentPrompt
from agentflow.events import PlanCreated, PlanUpdated
from agentflow.model.events import Event
from agentflow.model.response import TokenUsage
from agentflow.result import StopReason
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.runtimes.planner import ModelPlanner
from agentflow.testing.fake import FakeChatModel, FakeModelClient, chat_reply, reply
from agentflow.tools import ToolContext, tool

PRICES = 'p = get_price("apple")\nprint("apple costs", p)\np'


def is_plan_prompt(prompt: AgentPrompt) -> bool:
    return (prompt.system_prompt or "").startswith("You are the planner")


def plans_of(events: list[Event]) -> list[tuple[str, ...]]:
    return [e.plan.texts for e in events if isinstance(e, PlanCreated | PlanUpdated)]


async def test_an_override_s_fake_makes_the_plans_and_the_production_model_is_never_called() -> None:
    production = FakeChatModel([])  # stands for an OpenAIChatModel: any call to it fails the test
    agent = Agents.codeact(
        production, codeact=CodeActOptions(react=True, executor=Boxes()), replan_every=1, tools=[get_price]
    )
    fake = FakeModelClient(
        [
            reply('["Price the apple", "Answer"]', usage=(5, 1)),
            reply(code(PRICES)),
            reply('["Price the apple (done)", "Answer"]', usage=(7, 2)),
            reply(final("An apple costs 0.5 euros.")),
        ]
    )
    events: list[Event] = []
    with agent.override(model=fake):
        with anyio.fail_after(30):
            result = await agent.run("How much is an apple?", on=[(None, events.append)])

    assert production.requests == []
    assert result.output_text == "An apple costs 0.5 euros."
    assert [is_plan_prompt(p) for p in fake.prompts] == [True, False, True, False]
    replan = fake.prompts[2]
    assert replan.tools == ()
    (told,) = replan.items
    assert "Code run since the current plan:" in told.text
    assert "get_price" in told.text
    assert plans_of(events) == [("Price the apple", "Answer"), ("Price the apple", "Answer")]
    assert result.usage.total_tokens == 6 + 9  # both planning calls counted (the steps report none)
    assert_codeact_memory_valid(result.new_items)


async def test_the_run_s_settings_model_name_reaches_the_plan_request() -> None:
    chat = FakeChatModel([chat_reply('["Answer"]'), chat_reply(final("ok"))] * 2)
    agent = Agents.codeact(chat, replan_every=2, settings=ModelSettings(model="gpt-4.1-mini"))
    result = await agent.run("goal", settings=ModelSettings(model="gpt-4.1"))
    assert result.output_text == "ok"
    assert [r.parameters.model for r in chat.requests] == ["gpt-4.1", "gpt-4.1"]
    with agent.override(settings=ModelSettings(model="test-model")):
        await agent.run("goal")
    assert [r.parameters.model for r in chat.requests[2:]] == ["test-model", "test-model"]


async def test_an_explicit_model_planner_keeps_its_own_model_under_an_override() -> None:
    planner_model = FakeChatModel([chat_reply('["planned by the planner model"]')])
    agent = Agents.codeact(FakeChatModel([]), planner=ModelPlanner(planner_model))
    fake = FakeModelClient([reply(final("ok"))])
    events: list[Event] = []
    with agent.override(model=fake):
        result = await agent.run("goal", on=[(None, events.append)])
    assert result.output_text == "ok"
    assert len(planner_model.requests) == 1
    (step,) = fake.prompts
    assert not is_plan_prompt(step)
    assert plans_of(events) == [("planned by the planner model",)]


# --- the token budget -------------------------------------------------------------------------------------


@tool
async def spend(ctx: ToolContext) -> str:
    """A sub-agent that spends tokens."""
    ctx.add_usage(TokenUsage(100, 100, 200))
    return "spent"


async def test_no_re_plan_once_a_code_step_spent_the_token_budget() -> None:
    planner_model = FakeChatModel([chat_reply('["s1"]', usage=(5, 5)), chat_reply('["s2"]', usage=(5, 5))])
    model = FakeModelClient([reply(code("print(spend())"), usage=(10, 10)), reply(final("done"))])
    runtime = CodeActRuntime(
        CodeActOptions(react=True, executor=Boxes()), planner=ModelPlanner(planner_model), replan_every=1
    )
    agent = Agent(model, runtime=runtime, tools=[spend], options=AgentOptions(max_tokens=100))
    events: list[Event] = []
    with anyio.fail_after(30):
        result = await agent.run("goal", on=[(None, events.append)])
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert len(planner_model.requests) == 1  # the first plan only
    assert len(model.prompts) == 1
    assert plans_of(events) == [("s1",)]
    assert result.usage.total_tokens == 10 + 20 + 200
    assert_codeact_memory_valid(result.new_items)


async def test_no_re_plan_by_the_agent_s_own_model_once_the_budget_is_spent() -> None:
    agent = Agents.codeact(
        FakeChatModel([]),
        codeact=CodeActOptions(react=True, executor=Boxes()),
        replan_every=1,
        tools=[spend],
        options=AgentOptions(max_tokens=100),
    )
    fake = FakeModelClient([reply('["s1"]', usage=(5, 5)), reply(code("print(spend())"), usage=(10, 10))])
    with agent.override(model=fake), anyio.fail_after(30):
        result = await agent.run("goal")
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert fake.remaining == 0  # no third call: the re-plan is not made
    assert len(fake.prompts) == 2
