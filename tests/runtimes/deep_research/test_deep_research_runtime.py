"""The DeepResearch runtime: the plan in memory and in events, re-planning, the plan hook, and wiring."""

from __future__ import annotations

import anyio
import orjson
import pytest
from deep_research_support import ScriptedPlanner, collect, lookup, message_text, roles

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.events import PlanCreated, PlanUpdated, RunCancelled, RunFailed, RunStarted, StepStarted
from agentflow.model.response import TokenUsage
from agentflow.plan import Plan, PlanStep, StepStatus
from agentflow.result import StopReason
from agentflow.runtimes import resolve_runtime
from agentflow.runtimes.deep_research import DEEP_RESEARCH_INSTRUCTIONS, DeepResearchRuntime
from agentflow.runtimes.planner import (
    AgentModelPlanner,
    ModelPlanner,
    PlanContext,
    PlanParseError,
    SimplePlanner,
)
from agentflow.testing.fake import FakeChatModel, FakeModelClient, chat_reply, reply


def tool_then_answer(steps: int = 1) -> FakeModelClient:
    """A model that looks a topic up ``steps`` times, then answers."""
    calls = [reply(tool_calls=[("lookup", {"topic": f"t{i}"})], usage=(10, 2)) for i in range(steps)]
    return FakeModelClient([*calls, reply("## Summary\nDone.", usage=(20, 5))])


async def test_the_plan_follows_the_user_input_in_memory_in_the_reference_format() -> None:
    model = FakeModelClient([reply("Blue light scatters most.")])
    agent = Agents.deep_research(model)
    result = await agent.run("Why is the sky blue?")
    first = model.prompts[0]
    assert roles(first.items) == ["user", "system"]
    assert message_text(first.items[0]) == "Why is the sky blue?"
    assert message_text(first.items[1]) == "Plan:\n1. Why is the sky blue?\n"
    assert result.new_items[1] == first.items[1]
    assert first.system_prompt == DEEP_RESEARCH_INSTRUCTIONS


async def test_a_model_plan_lands_in_memory_one_numbered_line_per_step() -> None:
    planner = ScriptedPlanner([["Find A", "Find B", "Compare"]])
    model = FakeModelClient([reply("done")])
    await Agent(model, runtime=DeepResearchRuntime(planner)).run("Compare A and B")
    assert message_text(model.prompts[0].items[1]) == "Plan:\n1. Find A\n2. Find B\n3. Compare\n"


async def test_plan_created_comes_after_run_started_and_before_the_first_step() -> None:
    agent = Agents.deep_research(FakeModelClient([reply("ok")]))
    events, _ = await collect(agent, "goal")
    kinds = [type(e) for e in events]
    assert kinds[:3] == [RunStarted, PlanCreated, StepStarted]
    created = events[1]
    assert isinstance(created, PlanCreated)
    assert created.plan == Plan("goal", (PlanStep("goal"),))
    assert created.run_id == events[0].run_id
    data = orjson.loads(orjson.dumps(created.to_dict()))
    assert data["type"] == "plan_created"
    assert data["plan"]["steps"] == [{"text": "goal", "status": "pending"}]


async def test_a_blank_goal_writes_no_plan_but_still_announces_it() -> None:
    model = FakeModelClient([reply("?")])
    events, _ = await collect(Agents.deep_research(model), [{"type": "input_image", "image_url": "x"}])
    assert [e.plan.steps for e in events if isinstance(e, PlanCreated)] == [()]
    assert "system" not in roles(model.prompts[0].items)


async def test_re_planning_every_n_steps_publishes_plan_updated_with_the_progress() -> None:
    planner = ScriptedPlanner(
        [
            ["Look up t0", "Look up t1", "Look up t2", "Summarise"],
            [PlanStep("Look up t0", "done"), PlanStep("Look up t1", "done"), "Look up t2", "Summarise"],
        ]
    )
    agent = Agent(tool_then_answer(3), runtime=DeepResearchRuntime(planner, replan_every=2), tools=[lookup])
    events, result = await collect(agent, "Research t0 to t2")
    updates = [e for e in events if isinstance(e, PlanUpdated)]
    assert len(updates) == 1  # after step 2; step 4 is the final answer
    (update,) = updates
    assert update.plan.revision == 1
    assert [s.status for s in update.plan.steps][:2] == [StepStatus.DONE, StepStatus.DONE]
    # the planner saw the plan so far and the progress: two steps, two tool calls with their results
    goal, context = planner.calls[1]
    assert goal == "Research t0 to t2"
    assert context is not None
    assert context.current is not None
    assert context.current.texts == ("Look up t0", "Look up t1", "Look up t2", "Summarise")
    assert context.steps_run == 2
    assert [r.output for r in context.tool_results] == ["facts about t0", "facts about t1"]
    assert [t.name for t in context.tools] == ["lookup"]
    # PlanUpdated comes between the second step's end and the third step's start
    index = events.index(update)
    assert isinstance(events[index + 1], StepStarted)
    assert result.stop_reason is StopReason.FINAL_ANSWER


async def test_an_updated_plan_is_written_to_memory_when_it_changed() -> None:
    planner = ScriptedPlanner([["a", "b"], [PlanStep("a", "done"), PlanStep("b", "in_progress")]])
    model = tool_then_answer(1)
    await Agent(model, runtime=DeepResearchRuntime(planner, replan_every=1), tools=[lookup]).run("goal")
    texts = [message_text(i) for i in model.prompts[1].items if message_text(i)]
    assert texts[-1] == "Updated plan:\n1. a (done)\n2. b (in progress)\n"


async def test_an_unchanged_plan_is_announced_but_not_written_again() -> None:
    model = tool_then_answer(2)
    agent = Agents.deep_research(model, replan_every=1, tools=[lookup])
    events, _ = await collect(agent, "goal")
    assert [e.plan.revision for e in events if isinstance(e, PlanUpdated)] == [1, 2]
    last = model.prompts[-1].items
    assert sum(1 for i in last if message_text(i).startswith(("Plan:", "Updated plan:"))) == 1


async def test_no_re_plan_when_the_step_limit_ends_the_run() -> None:
    planner = ScriptedPlanner([["a"]])
    agent = Agent(
        tool_then_answer(5),
        runtime=DeepResearchRuntime(planner, replan_every=1),
        tools=[lookup],
        options=AgentOptions(max_steps=1),
    )
    events, result = await collect(agent, "goal")
    assert result.stop_reason is StopReason.MAX_STEPS
    assert not [e for e in events if isinstance(e, PlanUpdated)]
    assert len(planner.calls) == 1


async def test_the_on_plan_hook_can_edit_the_plan_before_it_is_used() -> None:
    seen: list[Plan] = []

    def edit(plan: Plan) -> Plan:
        seen.append(plan)
        return Plan(plan.goal, (*plan.steps, PlanStep("Cite every source")))

    model = FakeModelClient([reply("ok")])
    events, _ = await collect(Agents.deep_research(model, on_plan=edit), "goal")
    assert [p.texts for p in seen] == [("goal",)]
    (created,) = [e for e in events if isinstance(e, PlanCreated)]
    assert created.plan.texts == ("goal", "Cite every source")
    assert message_text(model.prompts[0].items[1]) == "Plan:\n1. goal\n2. Cite every source\n"


async def test_an_async_on_plan_hook_that_returns_none_keeps_the_plan_and_sees_re_plans() -> None:
    seen: list[int] = []

    async def inspect(plan: Plan) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(plan.revision)

    agent = Agents.deep_research(tool_then_answer(1), replan_every=1, on_plan=inspect, tools=[lookup])
    events, _ = await collect(agent, "goal")
    assert seen == [0, 1]
    assert [e.plan.revision for e in events if isinstance(e, PlanCreated | PlanUpdated)] == [0, 1]


async def test_an_on_plan_hook_returning_something_else_fails_the_run_clearly() -> None:
    agent = Agents.deep_research(FakeModelClient([]), on_plan=lambda plan: ["a"])  # type: ignore[arg-type,return-value]
    async with agent.stream("goal") as run:
        events = [event async for event in run]
    assert isinstance(run.error, TypeError)
    (failed,) = [e for e in events if isinstance(e, RunFailed)]
    assert failed.error_type == "TypeError"
    assert "on_plan must return a Plan or None, got list" in failed.error


async def test_a_planner_that_cannot_plan_fails_the_run_with_its_typed_error() -> None:
    chat = FakeChatModel([chat_reply("no plan here")])
    agent = Agents.deep_research(chat, planner=ModelPlanner(chat, on_invalid="raise"))
    with pytest.raises(PlanParseError):
        await agent.run("goal")


async def test_a_plan_that_cannot_be_read_still_counts_its_tokens_in_the_failed_run() -> None:
    chat = FakeChatModel([chat_reply("I will not plan.", usage=(300, 50))])
    agent = Agents.deep_research(chat, planner=ModelPlanner(chat, on_invalid="raise"))
    async with agent.stream("goal") as run:
        events = [e async for e in run]
    assert isinstance(events[-1], RunFailed)
    assert isinstance(run.error, PlanParseError)
    assert run.partial is not None
    assert run.partial.usage.total_tokens == 350


async def test_planning_tokens_count_towards_the_run_usage() -> None:
    planner = ScriptedPlanner([["a"]], usage=TokenUsage(100, 10, 110))
    model = FakeModelClient([reply("ok", usage=(20, 5))])
    result = await Agent(model, runtime=DeepResearchRuntime(planner)).run("goal")
    assert result.usage.total_tokens == 135


async def test_a_plan_that_uses_up_the_token_budget_stops_the_run_before_any_model_call() -> None:
    planner = ScriptedPlanner([["a"]], usage=TokenUsage(100, 10, 110))
    model = FakeModelClient([reply("never asked", usage=(20, 5))])
    agent = Agent(model, runtime=DeepResearchRuntime(planner), options=AgentOptions(max_tokens=100))
    result = await agent.run("goal")
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert model.prompts == []
    assert result.usage.total_tokens == 110


async def test_the_model_planner_over_the_agent_s_own_chat_model() -> None:
    chat = FakeChatModel(
        [
            chat_reply('```json\n{"steps": ["Look up sky", "Summarise"]}\n```', usage=(50, 10)),
            chat_reply("## Summary\nRayleigh scattering.", usage=(80, 12)),
        ]
    )
    events, result = await collect(Agents.deep_research(chat, planner="model"), "Why is the sky blue?")
    (created,) = [e for e in events if isinstance(e, PlanCreated)]
    assert created.plan.texts == ("Look up sky", "Summarise")
    assert created.plan.usage == TokenUsage(50, 10, 60)
    assert result.output_text == "## Summary\nRayleigh scattering."
    assert result.usage.total_tokens == 60 + 92
    assert len(chat.requests) == 2


async def test_planner_model_plans_with_the_model_name_the_agent_s_settings_set() -> None:
    chat = FakeChatModel([chat_reply('["Look up sky"]'), chat_reply("Rayleigh scattering.")])
    agent = Agents.deep_research(chat, planner="model", settings=ModelSettings(model="gpt-4.1-mini"))
    await agent.run("Why is the sky blue?")
    assert [r.parameters.model for r in chat.requests] == ["gpt-4.1-mini", "gpt-4.1-mini"]


async def test_each_run_of_a_session_plans_once_after_its_own_input() -> None:
    model = FakeModelClient([reply("one"), reply("two")])
    session = Agents.deep_research(model).session(InMemoryMemory())
    await session.run("first question")
    await session.run("second question")
    texts = [message_text(i) for i in model.prompts[1].items]
    assert texts == [
        "first question",
        "Plan:\n1. first question\n",
        "one",
        "second question",
        "Plan:\n1. second question\n",
    ]


async def test_a_follow_up_in_a_session_is_planned_knowing_the_conversation() -> None:
    plans = [chat_reply('["Describe the widget"]'), chat_reply('["Compare it with B"]')]
    planner_model = FakeChatModel(plans)
    agent = Agent(
        FakeModelClient([reply("The widget is small."), reply("It is smaller than B.")]),
        runtime=DeepResearchRuntime(ModelPlanner(planner_model)),
    )
    session = agent.session()
    await session.run("Tell me about the Acme widget")
    await session.run("And how does it compare to B?")

    first, second = (request.messages[-1].text for request in planner_model.requests)
    assert "Conversation so far" not in first
    assert second.startswith(
        "Conversation so far:\n- user: Tell me about the Acme widget\n- assistant: The widget is small.\n\n"
        "Goal: And how does it compare to B?"
    )


async def test_one_runtime_keeps_the_plans_of_concurrent_runs_apart() -> None:
    def answer(prompt: AgentPrompt) -> AgentModelResult:
        # A tool call first, the answer once the run's memory holds the tool's result.
        if any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in prompt.items):
            return reply("ok")
        return reply(tool_calls=[("lookup", {"topic": "x"})])

    runtime = DeepResearchRuntime(replan_every=1)
    agent = Agent(FakeModelClient([answer] * 4), runtime=runtime, tools=[lookup])
    plans: dict[str, list[tuple[str, ...]]] = {}

    async def one(goal: str) -> None:
        events, _ = await collect(agent, goal)
        plans[goal] = [e.plan.texts for e in events if isinstance(e, PlanCreated | PlanUpdated)]

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(one, "goal A")
        tasks.start_soon(one, "goal B")
    assert plans == {"goal A": [("goal A",), ("goal A",)], "goal B": [("goal B",), ("goal B",)]}


def test_the_runtime_resolves_by_every_name_and_checks_its_options() -> None:
    for name in ("deep_research", "deepresearch", "deep-research", "Deep_Research"):
        runtime = resolve_runtime(name)
        assert isinstance(runtime, DeepResearchRuntime)
        assert isinstance(runtime.planner, SimplePlanner)
    assert DeepResearchRuntime.name == "deep_research"
    with pytest.raises(ValueError, match="replan_every must be a positive integer"):
        DeepResearchRuntime(replan_every=0)
    with pytest.raises(TypeError, match="planner must be a Planner"):
        DeepResearchRuntime("simple")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="on_plan must be callable"):
        DeepResearchRuntime(on_plan="edit")  # type: ignore[arg-type]


def test_agents_deep_research_builds_the_runtime_from_its_options() -> None:
    chat = FakeChatModel([])
    agent = Agents.deep_research(chat, planner="model", replan_every=3)
    assert isinstance(agent.runtime, DeepResearchRuntime)
    assert isinstance(agent.runtime.planner, AgentModelPlanner)
    assert agent.runtime.replan_every == 3
    # The agent's own model plans, whatever kind of model client it is.
    fake = Agents.deep_research(FakeModelClient([]), planner="model").runtime
    assert isinstance(fake, DeepResearchRuntime)
    assert isinstance(fake.planner, AgentModelPlanner)
    with pytest.raises(ValueError, match="planner must be 'simple', 'model' or a Planner"):
        Agents.deep_research(chat, planner="smart")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sets the runtime itself"):
        Agents.deep_research(chat, runtime="react")


async def test_cancelling_while_the_planner_works_ends_the_run_cleanly() -> None:
    planning = anyio.Event()

    class SlowPlanner(SimplePlanner):
        async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
            planning.set()
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

    memory = InMemoryMemory()
    agent = Agent(FakeModelClient([]), runtime=DeepResearchRuntime(SlowPlanner()), memory=memory)
    async with agent.stream("goal") as run:
        async for event in run:
            if isinstance(event, RunStarted):
                await planning.wait()
                await run.cancel()
            last = event
    assert isinstance(last, RunCancelled)
    assert run.result.stop_reason is StopReason.CANCELLED
    assert roles(memory.items) == ["user"]
