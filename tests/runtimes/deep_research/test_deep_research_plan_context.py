"""What the planner is told and how the plan is carried: a stand-in plan says so, a re-plan shows the calls
since the last plan (not every call of the run), the agent's instructions reach the planner, and the plan's
message role can be chosen."""

from __future__ import annotations

import orjson
import pytest
from deep_research_support import ScriptedPlanner, collect, lookup, message_text, roles

from agentflow.agent.agent import Agent
from agentflow.events import PlanCreated, PlanUpdated
from agentflow.model.messages import ToolCall
from agentflow.plan import Plan, PlanStep
from agentflow.result import ToolResult
from agentflow.runtimes.deep_research import DeepResearchRuntime
from agentflow.runtimes.planner import MAX_PLANNED_CALLS, ModelPlanner, PlanContext, planning_input
from agentflow.testing.fake import FakeChatModel, FakeModelClient, chat_reply, reply


def looked_up(steps: int, per_step: int = 1) -> FakeModelClient:
    """A model that makes ``per_step`` lookups in each of ``steps`` steps, then answers."""
    calls = [
        reply(tool_calls=[("lookup", {"topic": f"t{i}.{j}"}) for j in range(per_step)]) for i in range(steps)
    ]
    return FakeModelClient([*calls, reply("done")])


# --- a stand-in plan says so --------------------------------------------------------------------------------


async def test_a_fallback_plan_is_marked_with_why() -> None:
    planner = ModelPlanner(FakeChatModel([chat_reply("First A, then B, I think.")]))
    events, _ = await collect(
        Agent(FakeModelClient([reply("ok")]), runtime=DeepResearchRuntime(planner)), "A?"
    )
    (created,) = [e for e in events if isinstance(e, PlanCreated)]
    assert created.plan.texts == ("A?",)
    assert created.plan.is_fallback
    assert created.plan.fallback_reason is not None
    assert "not a plan" in created.plan.fallback_reason
    data = orjson.loads(orjson.dumps(created.to_dict()))
    assert "not a plan" in data["plan"]["fallback_reason"]


async def test_a_real_plan_and_a_failed_re_plan() -> None:
    answers = [chat_reply('{"steps": ["Find A", "Find B"]}'), chat_reply("no idea")]
    runtime = DeepResearchRuntime(ModelPlanner(FakeChatModel(answers)), replan_every=1)
    events, _ = await collect(Agent(looked_up(1), runtime=runtime, tools=[lookup]), "A and B")
    created, updated = [e.plan for e in events if isinstance(e, PlanCreated | PlanUpdated)]
    assert not created.is_fallback
    assert created.to_dict()["fallback_reason"] is None
    # A re-plan that fails keeps the current plan, and says it is a stand-in.
    assert updated.texts == ("Find A", "Find B")
    assert updated.fallback_reason is not None


# --- the calls a re-plan is shown ---------------------------------------------------------------------------


def call(index: int) -> tuple[ToolCall, ToolResult]:
    return ToolCall(f"c{index}", "lookup", f'{{"topic":"t{index}"}}'), ToolResult(
        f"c{index}", "lookup", f"r{index}"
    )


def replanning(calls: int, seen: int) -> PlanContext:
    pairs = [call(i) for i in range(calls)]
    return PlanContext(
        current=Plan.of("goal", ["a"]),
        steps_run=3,
        tool_calls=tuple(c for c, _ in pairs),
        tool_results=tuple(r for _, r in pairs),
        tool_calls_seen=seen,
    )


def test_a_re_plan_shows_the_calls_since_the_current_plan_and_counts_the_others() -> None:
    text = planning_input("goal", replanning(5, seen=3))
    assert (
        'Progress so far (3 steps run):\n- (3 earlier tool calls not shown)\n- lookup({"topic":"t3"}) -> r3\n'
        '- lookup({"topic":"t4"}) -> r4'
    ) in text
    assert "t2" not in text


def test_a_re_plan_with_no_call_since_the_plan_says_so() -> None:
    text = planning_input("goal", replanning(2, seen=2))
    assert "- (2 earlier tool calls not shown)\n- no tool calls since the current plan" in text
    assert "- no tool calls yet" in planning_input("goal", replanning(0, seen=0))


def test_a_re_plan_shows_at_most_the_latest_calls() -> None:
    text = planning_input("goal", replanning(MAX_PLANNED_CALLS + 7, seen=2))
    # 2 seen by the current plan, then 5 of the 25 since left out for the latest 20
    assert "- (7 earlier tool calls not shown)" in text
    assert text.count("- lookup(") == MAX_PLANNED_CALLS
    assert '"t6"' not in text
    assert '"t7"' in text
    assert f'"t{MAX_PLANNED_CALLS + 6}"' in text


async def test_the_runtime_tells_the_planner_which_calls_it_has_seen() -> None:
    planner = ScriptedPlanner([["a"], ["a"], ["a"], ["a"]])
    runtime = DeepResearchRuntime(planner, replan_every=1)
    await Agent(looked_up(3, per_step=2), runtime=runtime, tools=[lookup]).run("goal")
    seen = [(len(c.tool_calls), c.tool_calls_seen) for _, c in planner.calls[1:] if c is not None]
    assert seen == [(2, 0), (4, 2), (6, 4)]


async def test_the_re_planning_request_does_not_grow_with_the_run() -> None:
    first = chat_reply('{"steps": ["Find A", "Find B"]}')
    again = chat_reply('{"steps": [{"step": "Find A", "status": "done"}, "Find B"]}')
    chat = FakeChatModel([first, *[again] * 6])
    runtime = DeepResearchRuntime(ModelPlanner(chat), replan_every=1)
    await Agent(looked_up(6, per_step=3), runtime=runtime, tools=[lookup]).run("Compare A and B")
    sizes = [len(request.messages[-1].text) for request in chat.requests[1:]]
    assert len(sizes) == 6
    # From the second re-plan on, the earlier calls are a count (one more digit at most), not a list.
    assert max(sizes[1:]) - min(sizes[1:]) <= 1


# --- the agent's instructions reach the planner -------------------------------------------------------------


async def test_the_planner_is_told_the_agent_s_system_prompt_and_instructions() -> None:
    chat = FakeChatModel([chat_reply('{"steps": ["Search the wiki"]}')])
    agent = Agent(
        FakeModelClient([reply("ok")]),
        runtime=DeepResearchRuntime(ModelPlanner(chat)),
        system_prompt="Only use the internal wiki. Never browse the web.",
        instructions="Answer in French.",
    )
    await agent.run("Compare A and B")
    system, user = chat.requests[0].messages
    assert "keeps to the agent's instructions" in system.text
    assert user.text == (
        "The agent's instructions (every step must keep to them):\n"
        "Only use the internal wiki. Never browse the web.\n\nAnswer in French.\n\n"
        "Goal: Compare A and B"
    )


async def test_a_planner_gets_the_instructions_on_its_context() -> None:
    planner = ScriptedPlanner([["a"]])
    agent = Agent(
        FakeModelClient([reply("ok")]), runtime=DeepResearchRuntime(planner), system_prompt="Be brief."
    )
    await agent.run("goal")
    ((_, context),) = planner.calls
    assert context is not None
    assert (context.system_prompt, context.instructions) == ("Be brief.", None)


def test_long_instructions_are_cut_and_say_so() -> None:
    text = planning_input("goal", PlanContext(system_prompt="x" * 9000))
    assert "… [1000 more characters]" in text


# --- the plan's message role --------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["system", "user", "developer"])
async def test_the_plan_is_carried_by_a_message_of_the_chosen_role(role: str) -> None:
    model = FakeModelClient([reply("ok")])
    planner = ScriptedPlanner([["Find A", "Find B"]])
    await Agent(model, runtime=DeepResearchRuntime(planner, plan_role=role)).run("goal")  # type: ignore[arg-type]
    items = model.prompts[0].items
    assert roles(items) == ["user", role]
    assert message_text(items[1]) == "Plan:\n1. Find A\n2. Find B\n"


async def test_an_updated_plan_uses_the_same_role() -> None:
    planner = ScriptedPlanner([["a", "b"], [PlanStep("a", "done"), "b"]])
    model = looked_up(1)
    runtime = DeepResearchRuntime(planner, replan_every=1, plan_role="developer")
    await Agent(model, runtime=runtime, tools=[lookup]).run("goal")
    updated = [i for i in model.prompts[1].items if message_text(i).startswith("Updated plan:")]
    assert roles(updated) == ["developer"]


async def test_a_plan_written_as_a_user_message_is_not_taken_for_the_user_s_words() -> None:
    chat = FakeChatModel([chat_reply('["Describe it"]'), chat_reply('["Compare it"]')])
    agent = Agent(
        FakeModelClient([reply("It is small."), reply("Smaller than B.")]),
        runtime=DeepResearchRuntime(ModelPlanner(chat), plan_role="user"),
    )
    session = agent.session()
    await session.run("Tell me about the widget")
    await session.run("And compared to B?")
    second = chat.requests[1].messages[-1].text
    assert second.startswith(
        "Conversation so far:\n- user: Tell me about the widget\n- assistant: It is small.\n\nGoal:"
    )


def test_an_unknown_plan_role_is_refused() -> None:
    with pytest.raises(ValueError, match="plan_role must be 'system', 'user' or 'developer'"):
        DeepResearchRuntime(plan_role="assistant")  # type: ignore[arg-type]
    assert "plan_role='user'" in repr(DeepResearchRuntime(plan_role="user"))


# --- the planning DeepResearch shares with CodeAct ----------------------------------------------------------


async def test_a_react_re_plan_is_told_tool_calls_not_code() -> None:
    answers = [chat_reply('{"steps": ["Find A"]}'), chat_reply('{"steps": ["Find A (done)"]}')]
    chat = FakeChatModel(answers)
    planner = ScriptedPlanner([["a"], ["a"]])
    await Agent(looked_up(1), runtime=DeepResearchRuntime(planner, replan_every=1), tools=[lookup]).run(
        "goal"
    )
    assert [context.code_actions for _, context in planner.calls if context is not None] == [None, None]

    await Agent(
        looked_up(1), runtime=DeepResearchRuntime(ModelPlanner(chat), replan_every=1), tools=[lookup]
    ).run("goal")
    replanning = str(chat.requests[1].messages[-1].text)
    assert 'Progress so far (1 steps run):\n- lookup({"topic":"t0.0"}) -> facts about t0.0' in replanning
    assert "Code run" not in replanning


def test_the_runtime_holds_its_planning_and_reads_as_before() -> None:
    planner = ScriptedPlanner([])
    runtime = DeepResearchRuntime(planner, replan_every=2, plan_role="user")
    assert runtime.planning.planner is runtime.planner is planner
    assert (runtime.replan_every, runtime.plan_role, runtime.on_plan) == (2, "user", None)
    assert repr(DeepResearchRuntime()) == "DeepResearchRuntime(planner=SimplePlanner(), replan_every=None)"
