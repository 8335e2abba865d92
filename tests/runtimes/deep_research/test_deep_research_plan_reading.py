"""Which plan ``ModelPlanner`` reads from an answer holding several JSON values, and how it reads the odd
step: explicit plans win over stray lists, bracketed words stay text, odd items do not lose the plan."""

from __future__ import annotations

import pytest

from agentflow.plan import Plan, PlanStep, StepStatus
from agentflow.runtimes.planner import ModelPlanner, parse_plan_steps
from agentflow.testing.fake import FakeChatModel, chat_reply

# --- which JSON value is the plan --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        'I will use the tools ["search", "calculator"].\n{"steps": ["Find A", "Find B"]}',
        '{"steps": ["Find A", "Find B"]}\nTools: ["search", "calculator"]',
        'Tools ["search"], then {"Plan": ["Find A", "Find B"]} and sources [1], [2].',
    ],
    ids=["list-first", "object-first", "plan-key"],
)
def test_an_explicit_steps_object_wins_over_a_list_in_the_prose(answer: str) -> None:
    assert [s.text for s in parse_plan_steps(answer)] == ["Find A", "Find B"]


def test_a_fenced_json_block_wins_over_values_outside_it() -> None:
    answer = 'As asked, {"steps": ["..."]}:\n```json\n["Find A", "Find B"]\n```'
    assert [s.text for s in parse_plan_steps(answer)] == ["Find A", "Find B"]
    both_fenced = '```\n["search"]\n```\n```JSON\n{"steps": ["Find A", "Find B"]}\n```'
    assert [s.text for s in parse_plan_steps(both_fenced)] == ["Find A", "Find B"]


def test_a_code_fence_of_another_language_is_not_a_json_block() -> None:
    answer = '```python\nsteps = ["search", "fetch"]\n```\nPlan: {"steps": ["Find A", "Find B"]}'
    assert [s.text for s in parse_plan_steps(answer)] == ["Find A", "Find B"]


@pytest.mark.parametrize(
    "answer",
    [
        'I will use the ["search", "calculator"] tools.\n1. Find A\n2. Find B',
        'Here is the plan:\n1. Find A\n2. Find B\n\nNote: I will call search(["paris", "berlin"]).',
        'Steps:\n- Find A\n- Find B\n(tools: ["search"])',
    ],
    ids=["list-before", "list-after", "bullets"],
)
def test_a_numbered_or_bulleted_plan_wins_over_a_list_in_the_prose(answer: str) -> None:
    assert [s.text for s in parse_plan_steps(answer)] == ["Find A", "Find B"]


def test_a_bare_list_is_still_a_plan_when_nothing_better_is_there() -> None:
    answer = 'Plan: ["Find A", "Find B"]. {"note": 1}'
    assert [s.text for s in parse_plan_steps(answer)] == ["Find A", "Find B"]


async def test_the_model_planner_keeps_the_steps_object_after_a_tool_list() -> None:
    answer = (
        'I will use the tools ["search", "calculator"].\n'
        '{"steps": ["Find the population of Paris", "Find the population of Berlin", "Compare"]}'
    )
    plan = await ModelPlanner(FakeChatModel([chat_reply(answer)])).plan("Compare Paris and Berlin")
    assert plan.texts == ("Find the population of Paris", "Find the population of Berlin", "Compare")


# --- trailing status markers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "List the shops that are (open)",
        "Ask which deal is (current)",
        "Check the [active] accounts",
        "Find the [active]",
        "Call finish(done)",
        "(done)",
    ],
)
def test_ordinary_words_in_brackets_stay_in_the_step_text(text: str) -> None:
    (step,) = parse_plan_steps(f'{{"steps": ["{text}"]}}')
    assert step == PlanStep(text)


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("Find A (done)", StepStatus.DONE),
        ("Find A (in progress)", StepStatus.IN_PROGRESS),
        ("Find A [In-Progress]", StepStatus.IN_PROGRESS),
        ("Find A (skipped) ", StepStatus.SKIPPED),
        ("Find A (Pending)", StepStatus.PENDING),
    ],
)
def test_a_plan_s_status_words_are_read_from_the_end_of_a_step(text: str, status: StepStatus) -> None:
    assert parse_plan_steps(f'["{text}"]') == (PlanStep("Find A", status),)


def test_a_plan_s_own_text_reads_back_as_the_same_steps() -> None:
    plan = Plan.of("goal", ["List the shops that are (open)", "b", "c", "d"]).mark(1, "done")
    plan = plan.mark(2, StepStatus.IN_PROGRESS).mark(3, "skipped")
    assert parse_plan_steps(plan.to_text("Updated plan:")) == plan.steps


# --- odd items ----------------------------------------------------------------------------------------------


def test_an_unknown_status_keeps_the_step_pending() -> None:
    answer = (
        '{"steps": [{"step": "Find A", "status": "done"}, {"step": "Find B", "status": "blocked"},'
        ' {"step": "Find C", "status": 3}, {"step": "Compare", "state": null}]}'
    )
    assert parse_plan_steps(answer) == (
        PlanStep("Find A", StepStatus.DONE),
        PlanStep("Find B"),
        PlanStep("Find C"),
        PlanStep("Compare"),
    )


def test_null_and_blank_items_are_skipped() -> None:
    answer = '{"steps": ["Find A", null, "  ", {"step": ""}, {"title": null}, "Find B"]}'
    assert [s.text for s in parse_plan_steps(answer)] == ["Find A", "Find B"]


async def test_one_odd_item_does_not_lose_the_model_planner_s_plan() -> None:
    answer = (
        '{"steps": [{"step": "Find A", "status": "pending"}, {"step": "Find B", "status": "blocked"}, null,'
        ' {"step": "Compare", "status": "pending"}]}'
    )
    plan = await ModelPlanner(FakeChatModel([chat_reply(answer)]), on_invalid="raise").plan("Compare A and B")
    assert plan.texts == ("Find A", "Find B", "Compare")
