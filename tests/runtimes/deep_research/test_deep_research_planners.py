"""Planners and plans: the simple planner, the model-backed planner, tolerant parsing and the plan's text."""

from __future__ import annotations

import logging

import orjson
import pytest

from agentflow.model.errors import RateLimitError
from agentflow.model.messages import SystemMessage, ToolCall, UserMessage
from agentflow.model.response import TokenUsage
from agentflow.model.tools import ToolSpec
from agentflow.plan import Plan, PlanStep, StepStatus
from agentflow.result import ToolResult
from agentflow.runtimes.planner import (
    ModelPlanner,
    PlanContext,
    Planner,
    PlanParseError,
    SimplePlanner,
    parse_plan_steps,
    planning_input,
)
from agentflow.testing.fake import FakeChatModel, chat_reply

# --- the plan ---------------------------------------------------------------------------------------------


def test_a_fresh_plan_is_written_in_the_reference_format() -> None:
    plan = Plan.of("goal", ["Find A", "Find B"])
    assert plan.to_text() == "Plan:\n1. Find A\n2. Find B\n"


def test_step_statuses_other_than_pending_appear_in_the_text() -> None:
    plan = (
        Plan.of("goal", ["a", "b", "c", "d"])
        .mark(0, "done")
        .mark(1, StepStatus.IN_PROGRESS)
        .mark(3, "skipped")
    )
    assert (
        plan.to_text("Updated plan:")
        == "Updated plan:\n1. a (done)\n2. b (in progress)\n3. c\n4. d (skipped)\n"
    )
    assert plan.current == PlanStep("b", StepStatus.IN_PROGRESS)
    assert not plan.finished
    assert plan.mark(1, "done").mark(2, "done").finished


def test_a_plan_rejects_blank_steps_unknown_statuses_and_a_bare_string() -> None:
    with pytest.raises(ValueError, match="must not be blank"):
        PlanStep("  ")
    with pytest.raises(ValueError, match="unknown plan step status 'later'"):
        PlanStep("a", "later")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not one string"):
        Plan("goal", "one step")  # type: ignore[arg-type]
    with pytest.raises(IndexError, match="no step 2"):
        Plan.of("goal", ["a", "b"]).mark(2, "done")


def test_a_plan_serialises_with_orjson() -> None:
    plan = Plan.of("goal", ["a"]).mark(0, "done")
    plan = Plan(plan.goal, plan.steps, revision=2, usage=TokenUsage(3, 4, 7))
    data = orjson.loads(orjson.dumps(plan.to_dict()))
    assert data["steps"] == [{"text": "a", "status": "done"}]
    assert data["revision"] == 2
    assert data["usage"]["total_tokens"] == 7


# --- the simple planner -----------------------------------------------------------------------------------


async def test_the_simple_planner_makes_the_goal_the_only_step() -> None:
    plan = await Planner.simple().plan("Why is the sky blue?")
    assert plan == Plan("Why is the sky blue?", (PlanStep("Why is the sky blue?"),))


async def test_the_simple_planner_makes_no_step_for_a_blank_goal() -> None:
    assert (await SimplePlanner().plan("   ")).steps == ()


async def test_the_simple_planner_keeps_the_current_plan_when_re_planning() -> None:
    current = Plan.of("goal", ["a", "b"]).mark(0, "done")
    assert await SimplePlanner().plan("goal", PlanContext(current=current, steps_run=2)) is current


# --- reading a model's answer ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        '["Find A", "Find B"]',
        '{"steps": ["Find A", "Find B"]}',
        '{"Plan": ["Find A", "Find B"]}',
        '```json\n{"steps": ["Find A", "Find B"]}\n```',
        'Sure, here is my plan [draft]:\n```\n["Find A", "Find B"]\n```\nGood luck!',
        '{"steps": [{"step": "Find A"}, {"title": "Find B", "status": "pending"}]}',
        "1. Find A\n2. Find B",
        "Plan:\n- Find A\n- Find B",
    ],
    ids=["list", "steps-object", "plan-key", "fenced", "prose", "step-objects", "numbered", "bullets"],
)
def test_plans_are_read_tolerantly(answer: str) -> None:
    assert [s.text for s in parse_plan_steps(answer)] == ["Find A", "Find B"]


def test_statuses_are_read_from_objects_and_from_trailing_words() -> None:
    steps = parse_plan_steps(
        '{"steps": [{"step": "a", "status": "Completed"}, {"step": "b", "status": "in progress"},'
        ' {"step": "c", "state": "TODO"}, {"step": "d", "status": "dropped"}]}'
    )
    assert [s.status for s in steps] == [
        StepStatus.DONE,
        StepStatus.IN_PROGRESS,
        StepStatus.PENDING,
        StepStatus.SKIPPED,
    ]
    assert [s.status for s in parse_plan_steps("1. a (done)\n2. b [in progress]\n3. c")] == [
        StepStatus.DONE,
        StepStatus.IN_PROGRESS,
        StepStatus.PENDING,
    ]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("I cannot help with that.", ""),
        ("[]", "an empty list of steps"),
        ('{"answer": 42}', "without a steps list"),
        ('{"steps": [null, "  ", {"step": ""}]}', "all blank or null"),
        ('{"steps": [1, 2]}', "a step must be a string or an object"),
        ("", ""),
    ],
    ids=["prose", "empty-list", "no-steps-key", "only-blanks", "numbers", "empty"],
)
def test_an_answer_that_is_not_a_plan_is_a_typed_error_that_says_why(answer: str, reason: str) -> None:
    with pytest.raises(PlanParseError, match="the model's answer is not a plan") as caught:
        parse_plan_steps(answer)
    assert reason in str(caught.value)
    assert caught.value.text == answer


# --- the model-backed planner -------------------------------------------------------------------------------


async def test_the_model_planner_asks_the_model_for_steps() -> None:
    model = FakeChatModel([chat_reply('{"steps": ["Find A", "Find B"]}', usage=(30, 10))])
    planner = ModelPlanner(model, max_steps=4, parameters={"temperature": 0})
    tools = (ToolSpec("search", "Search the web.", {"type": "object"}),)
    plan = await planner.plan("Compare A and B", PlanContext(tools=tools))
    assert plan.texts == ("Find A", "Find B")
    assert plan.usage == TokenUsage(30, 10, 40)
    (request,) = model.requests
    system, user = request.messages
    assert isinstance(system, SystemMessage)
    assert system.text.startswith("You are the planner of a research agent")
    assert "at most 4" in system.text
    assert isinstance(user, UserMessage)
    assert user.text == "Goal: Compare A and B\n\nTools the agent can use:\n- search: Search the web."
    assert request.parameters.temperature == 0


async def test_the_model_planner_shows_the_plan_and_the_progress_when_re_planning() -> None:
    model = FakeChatModel([chat_reply('{"steps": [{"step": "Find A", "status": "done"}, "Find B"]}')])
    current = Plan.of("Compare A and B", ["Find A", "Find B"])
    call = ToolCall("call_1", "search", '{"q":"A"}')
    context = PlanContext(
        current=current,
        steps_run=1,
        tool_calls=(call,),
        tool_results=(ToolResult("call_1", "search", "A is 3"),),
        latest_text="A looks small.",
    )
    plan = await ModelPlanner(model).plan("Compare A and B", context)
    assert plan.steps == (PlanStep("Find A", "done"), PlanStep("Find B"))  # type: ignore[arg-type]
    system, user = model.requests[0].messages
    assert isinstance(system, SystemMessage)
    assert "Revise the plan" in system.text
    assert user.text == planning_input("Compare A and B", context)
    assert "Current plan:\n1. Find A\n2. Find B" in user.text
    assert 'Progress so far (1 steps run):\n- search({"q":"A"}) -> A is 3' in user.text
    assert "The agent's latest notes:\nA looks small." in user.text


async def test_an_invalid_answer_falls_back_to_the_simple_plan_and_logs_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = FakeChatModel([chat_reply("I'd rather not plan.", usage=(5, 5))])
    with caplog.at_level(logging.WARNING, logger="agentflow"):
        plan = await ModelPlanner(model).plan("Why is the sky blue?")
    assert plan.texts == ("Why is the sky blue?",)
    assert plan.usage == TokenUsage(5, 5, 10)
    assert "not a plan" in caplog.text
    assert "using the simple plan instead" in caplog.text


async def test_an_invalid_answer_raises_with_on_invalid_raise() -> None:
    model = FakeChatModel([chat_reply('{"answer": "blue"}')])
    with pytest.raises(PlanParseError, match="without a steps list"):
        await ModelPlanner(model, on_invalid="raise").plan("Why is the sky blue?")


async def test_a_model_error_always_propagates() -> None:
    model = FakeChatModel([RateLimitError("slow down", status=429)])
    with pytest.raises(RateLimitError):
        await ModelPlanner(model).plan("goal")


async def test_a_blank_goal_needs_no_model_call() -> None:
    model = FakeChatModel([])
    assert (await ModelPlanner(model).plan(" ")).steps == ()
    assert model.requests == []


def test_the_model_planner_checks_its_options() -> None:
    model = FakeChatModel([])
    with pytest.raises(ValueError, match="on_invalid must be 'fallback' or 'raise'"):
        ModelPlanner(model, on_invalid="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_steps must be a positive integer"):
        ModelPlanner(model, max_steps=0)
    with pytest.raises(TypeError, match="needs a ChatModel"):
        ModelPlanner("gpt-4o")  # type: ignore[arg-type]
    assert isinstance(Planner.from_model(model), ModelPlanner)
