"""The built-in tools (safe by construction) and the bundled scripted model's answers."""

from __future__ import annotations

import datetime
from typing import Any

import orjson
import pytest

from agentflow.demo.responder import find_expressions, read_request, respond
from agentflow.demo.tools import BUILTIN_TOOLS, CalculatorError, calculator, evaluate, utc_now
from agentflow.runtimes.deep_research import DEEP_RESEARCH_INSTRUCTIONS
from agentflow.runtimes.planner import PLANNER_PROMPT, REPLANNER_PROMPT

# --- tools ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "value"),
    [("17 * 23", 391), ("2 ** 10 / 4", 256.0), ("(1 + 2) * -3", -9), ("7 // 2 + 7 % 2", 4), ("6 × 7", 42)],
)
def test_the_calculator_does_arithmetic(expression: str, value: float) -> None:
    assert evaluate(expression) == value
    assert calculator(expression) == value


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('true')", "not Call"),
        ("x + 1", "not Name"),
        ("(1).real", "not Attribute"),
        ("'a' * 3", "not Constant"),
        ("9 ** 9 ** 9", "exponent 387420489 is too large"),
        ("10 ** 200", "too large"),
        ("1 / 0", "division by zero"),
        ("2 ^ 3", r"write a \*\* b"),
        ("1 +", "not an arithmetic expression"),
        ("", "empty"),
        ("1+" * 200 + "1", "longer than 200 characters"),
    ],
)
def test_the_calculator_refuses_anything_but_bounded_arithmetic(expression: str, message: str) -> None:
    with pytest.raises(CalculatorError, match=message):
        evaluate(expression)


def test_utc_now_is_an_iso_timestamp_in_utc() -> None:
    parsed = datetime.datetime.fromisoformat(utc_now())
    assert parsed.utcoffset() == datetime.timedelta(0)


def test_the_builtin_tools_have_schemas_the_model_can_read() -> None:
    specs = {t.spec.name: t.spec for t in BUILTIN_TOOLS}
    assert set(specs) == {"calculator", "utc_now"}
    assert specs["calculator"].parameters["required"] == ["expression"]
    assert "arithmetic" in specs["calculator"].description


# --- the scripted model -------------------------------------------------------------------------------------


def test_expressions_are_found_in_prose() -> None:
    text = "Compare 3.14159 * 15 ^ 2 with 2 * 3.14159 * 10 ** 2. Also (17 * 23)? And 2024."
    assert find_expressions(text) == ["3.14159 * 15 ** 2", "2 * 3.14159 * 10 ** 2", "17 * 23"]


def _chat(*messages: dict[str, Any], tools: tuple[str, ...] = ("calculator", "utc_now")) -> dict[str, Any]:
    return {
        "messages": list(messages),
        "tools": [{"type": "function", "function": {"name": n}} for n in tools],
    }


def test_requests_of_both_protocols_read_the_same() -> None:
    chat = read_request(
        {
            "messages": [
                {"role": "system", "content": "S"},
                {"role": "user", "content": [{"type": "text", "text": "Q"}]},
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c1", "function": {"name": "utc_now", "arguments": "{}"}}],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "T"},
            ],
            "tools": [{"type": "function", "function": {"name": "utc_now"}}],
        }
    )
    responses = read_request(
        {
            "instructions": "S",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Q"}]},
                {"type": "function_call", "call_id": "c1", "name": "utc_now", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "T"},
            ],
            "tools": [{"type": "function", "name": "utc_now"}],
        }
    )
    assert chat.api == "chat"
    assert responses.api == "responses"
    for exchange in (chat, responses):
        assert exchange.system == "S"
        assert exchange.question == "Q"
        assert exchange.tools == ("utc_now",)
        assert [(s.role, s.tool, s.text) for s in exchange.since_question] == [
            ("tool_call", "utc_now", ""),
            ("tool_result", "utc_now", "T"),
        ]


def test_react_calls_every_tool_it_needs_at_once_then_answers_from_the_results() -> None:
    question = {"role": "user", "content": "What is 6 * 7 and the time?"}
    first = respond(_chat(question))
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("calculator", '{"expression":"6 * 7"}'),
        ("utc_now", "{}"),
    ]
    assert first.reasoning
    calls = [
        {"id": f"c{i}", "function": {"name": c.name, "arguments": c.arguments}}
        for i, c in enumerate(first.tool_calls)
    ]
    second = respond(
        _chat(
            question,
            {"role": "assistant", "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c0", "content": "42"},
            {"role": "tool", "tool_call_id": "c1", "content": "2030-01-01T00:00:00+00:00"},
        )
    )
    assert second.tool_calls == ()
    assert second.text == (
        "Here is what I found: 6 * 7 = 42; the current UTC time is 2030-01-01T00:00:00+00:00."
    )


def test_a_question_the_tools_cannot_help_with_gets_a_direct_answer() -> None:
    answer = respond(_chat({"role": "user", "content": "Who wrote Hamlet?"}))
    assert answer.tool_calls == ()
    assert answer.text is not None
    assert "scripted model" in answer.text
    assert "OPENAI_API_KEY" in answer.text


def test_the_planner_prompt_gets_a_json_plan_and_the_re_planner_statuses() -> None:
    goal = "Compare 2 * 3 with 4 * 5."
    plan = respond(
        {
            "messages": [
                {"role": "system", "content": PLANNER_PROMPT.format(max_steps=6)},
                {"role": "user", "content": f"Goal: {goal}"},
            ]
        }
    )
    assert orjson.loads(plan.text or "") == {
        "steps": [
            "Compute 2 * 3 with the calculator",
            "Compute 4 * 5 with the calculator",
            "Compare the results and write a structured summary",
        ]
    }
    progress = (
        f"Goal: {goal}\n\nCurrent plan:\n1. Compute 2 * 3 with the calculator\n"
        "2. Compute 4 * 5 with the calculator\n3. Compare the results and write a structured summary\n\n"
        'Progress so far (1 steps run):\n- calculator({"expression":"2 * 3"}) -> 6'
    )
    replan = respond(
        {
            "messages": [
                {"role": "system", "content": REPLANNER_PROMPT.format(max_steps=6)},
                {"role": "user", "content": progress},
            ]
        }
    )
    assert [s["status"] for s in orjson.loads(replan.text or "")["steps"]] == [
        "done",
        "in_progress",
        "pending",
    ]


def test_deep_research_gathers_one_step_of_evidence_per_turn_then_summarises() -> None:
    system = {"role": "system", "content": DEEP_RESEARCH_INSTRUCTIONS}
    question = {"role": "user", "content": "Which is larger, 2 * 3 or 4 * 5?"}
    first = respond(_chat(system, question))
    assert [c.arguments for c in first.tool_calls] == ['{"expression":"2 * 3"}']
    done = [
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "a", "function": {"name": "calculator", "arguments": '{"expression":"2 * 3"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "6"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "b", "function": {"name": "calculator", "arguments": '{"expression":"4 * 5"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "b", "content": "20"},
    ]
    assert [c.arguments for c in respond(_chat(system, question, *done[:2])).tool_calls] == [
        '{"expression":"4 * 5"}'
    ]
    summary = respond(_chat(system, question, *done)).text or ""
    assert summary.startswith(
        "## Question\nWhich is larger, 2 * 3 or 4 * 5?\n\n## Evidence\n1. 2 * 3 = 6\n2. 4 * 5 = 20"
    )
    assert "## Conclusion\n4 * 5 gives the largest value, 20: 14 more than 2 * 3" in summary


def test_codeact_gets_code_first_and_a_final_answer_after_the_code_result() -> None:
    system = {"role": "system", "content": "You are a CodeAct agent ... calculator(expression) ... utc_now()"}
    question = {"role": "user", "content": "What is 6 * 7?"}
    step = orjson.loads(respond(_chat(system, question, tools=())).text or "")
    assert step["type"] == "code"
    assert "calculator(expression='6 * 7')" in step["code"]
    final = respond(
        _chat(
            system, question, step, {"role": "system", "content": 'CODE_RESULT: {"result": "42"}'}, tools=()
        )
    )
    assert orjson.loads(final.text or "") == {"type": "final", "output": "42"}


def test_codeact_answers_at_once_when_there_is_nothing_to_compute() -> None:
    system = {"role": "system", "content": "You are a CodeAct agent ... calculator(expression) ... utc_now()"}
    answer = orjson.loads(respond(_chat(system, {"role": "user", "content": "hi"}, tools=())).text or "")
    assert answer["type"] == "final"
    assert "your question: 'hi'" in answer["output"]


def test_the_research_conclusion_shows_numbers_as_the_evidence_does() -> None:
    # Not ``:g`` (7006652 → 7.00665e+06) and not ``repr`` (a difference as 78.53975000000003).
    system = {"role": "system", "content": DEEP_RESEARCH_INSTRUCTIONS}
    question = {"role": "user", "content": "Which is larger, 3.14159 * 15 ** 2 or 2 * 3.14159 * 10 ** 2?"}
    done: list[dict[str, object]] = []
    for call_id, expression, value in (
        ("a", "3.14159 * 15 ** 2", "706.85775"),
        ("b", "2 * 3.14159 * 10 ** 2", "628.318"),
    ):
        arguments = orjson.dumps({"expression": expression}).decode()
        done.append(
            {
                "role": "assistant",
                "tool_calls": [{"id": call_id, "function": {"name": "calculator", "arguments": arguments}}],
            }
        )
        done.append({"role": "tool", "tool_call_id": call_id, "content": value})
    summary = respond(_chat(system, question, *done)).text or ""
    assert "gives the largest value, 706.85775: 78.53975 more than" in summary
