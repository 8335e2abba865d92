"""The live renderer, the ``--json`` line form, colour detection and the CLI's configuration rules."""

from __future__ import annotations

import argparse
import io

import orjson
import pytest

from agentflow.agent.prompt import AgentModelResult
from agentflow.cli import CliConfig, ConfigError, build_parser, resolve_config
from agentflow.demo.render import Renderer, json_line, use_color
from agentflow.events import (
    CodeExecuted,
    HandedOff,
    PlanCreated,
    PlanUpdated,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunStarted,
    StepStarted,
    ToolCallRequested,
    ToolFailed,
    ToolProgress,
    ToolSucceeded,
)
from agentflow.model.events import Event, ModelCompleted, ModelRetry, ReasoningDelta, TextDelta
from agentflow.model.messages import ToolCall
from agentflow.model.response import TokenUsage
from agentflow.plan import Plan
from agentflow.result import AgentResult, StopReason, ToolResult

CALL = ToolCall("call_1", "calculator", '{"expression":"6 * 7"}')
RESULT = AgentResult(
    "run_1",
    "It is 42.",
    StopReason.FINAL_ANSWER,
    steps=2,
    tool_calls=(CALL,),
    usage=TokenUsage(120, 30, 150, reasoning_tokens=10),
)
RUN: list[Event] = [
    RunStarted(input="6 * 7?", runtime="deep_research"),
    PlanCreated(plan=Plan.of("6 * 7?", ["Compute 6 * 7", "Answer"])),
    StepStarted(step=0),
    ReasoningDelta("I should "),
    ReasoningDelta("compute."),
    TextDelta("Computing."),
    ToolCallRequested(call=CALL),
    ToolProgress(call_id="call_1", tool="calculator", message="working"),
    ToolSucceeded(call=CALL, result=ToolResult("call_1", "calculator", "42")),
    PlanUpdated(plan=Plan.of("6 * 7?", ["Compute 6 * 7", "Answer"]).mark(0, "done").mark(1, "in_progress")),
    StepStarted(step=1),
    TextDelta("It is "),
    TextDelta("42."),
    RunFinished(result=RESULT),
]


def render(events: list[Event], *, color: bool = False) -> str:
    out = io.StringIO()
    renderer = Renderer(out, color=color)
    for event in events:
        renderer(event)
    renderer.finish()
    return out.getvalue()


def test_a_run_is_rendered_as_a_readable_transcript() -> None:
    assert render(RUN) == (
        "> [deep_research] 6 * 7?\n"
        "Plan:\n"
        "  [ ] 1. Compute 6 * 7\n"
        "  [ ] 2. Answer\n"
        "-- step 1 --\n"
        "(reasoning) I should compute.\n"
        "Computing.\n"
        '-> calculator({"expression":"6 * 7"})\n'
        "   ... calculator: working\n"
        "<- calculator: 42\n"
        "Plan (revision 0):\n"
        "  [x] 1. Compute 6 * 7\n"
        "  [~] 2. Answer\n"
        "-- step 2 --\n"
        "It is 42.\n"
        "== done: final_answer, 2 steps, 1 tool call\n"
        "   120 in / 30 out / 150 total tokens (10 reasoning)\n"
    )


def test_a_handoff_is_a_line_between_the_two_agents_steps() -> None:
    events: list[Event] = [
        StepStarted(step=0),
        HandedOff(source="Triage", target="Billing", call_id="call_1"),
        StepStarted(step=1),
        TextDelta("Refunded."),
    ]
    assert render(events) == (
        "-- step 1 --\n=> Triage hands the conversation over to Billing\n-- step 2 --\nRefunded.\n"
    )


def test_a_sub_agent_s_forwarded_events_show_its_tool_calls_and_ending_not_its_deltas() -> None:
    search = ToolCall("s1", "search", '{"q":"Eiffel"}')

    def forwarded(event: Event) -> ToolProgress:
        return ToolProgress(call_id="call_1", tool="researcher", message=event.type, data=event)

    nested = [
        forwarded(TextDelta("The tower")),
        forwarded(ToolCallRequested(call=search)),
        forwarded(ToolSucceeded(call=search, result=ToolResult("s1", "search", output="1889"))),
        forwarded(TextDelta(" was finished in 1889.")),
        forwarded(RunFinished(AgentResult("r2", "1889.", StopReason.FINAL_ANSWER, steps=2))),
    ]
    shown = render(nested).splitlines()
    assert shown[:3] == [
        '   ... researcher: -> search({"q":"Eiffel"})',
        "   ... researcher: <- search: 1889",
        "   ... researcher: answered (final_answer)",
    ]


def test_a_run_cancelled_mid_step_says_which_step_was_cut() -> None:
    partial = AgentResult("run_1", "", StopReason.CANCELLED, steps=0)
    events: list[Event] = [
        RunStarted(input="hi", runtime="react"),
        StepStarted(step=0),
        RunCancelled(partial=partial),
    ]
    assert (
        render(events).splitlines()[-2] == "== cancelled: cancelled, 0 steps (step 1 cut short), 0 tool calls"
    )
    # a new run starts counting again
    again = [RunStarted(input="hi", runtime="react"), RunCancelled(partial=partial)]
    assert render(events + again).splitlines()[-2] == "== cancelled: cancelled, 0 steps, 0 tool calls"


def test_colour_wraps_each_piece_and_always_resets() -> None:
    text = render(RUN, color=True)
    assert "\x1b[2mI should \x1b[0m" in text  # reasoning dimmed, fragment by fragment
    assert "(reasoning)" not in text
    assert '\x1b[36m-> calculator({"expression":"6 * 7"})\x1b[0m' in text
    # every coloured line ends reset, so an interrupted run never leaves the terminal coloured
    assert all(line.endswith("\x1b[0m") for line in text.splitlines() if "\x1b[" in line)


def test_failures_cancellations_retries_and_code_are_rendered() -> None:
    failed = ToolResult("call_1", "calculator", 'TOOL_ERROR: {"errorType":"exception"}', ok=False)
    events: list[Event] = [
        ModelRetry(attempt=1, max_attempts=3, delay=0.5, reason="HTTP 429"),
        ToolFailed(call=CALL, result=failed),
        CodeExecuted(code="x = 6 * 7\nprint(x)\nx", ok=True, result=42, stdout="42\n"),
        CodeExecuted(code="1/0", ok=False, error="ZeroDivisionError: division by zero"),
        RunFailed(error_type="AuthenticationError", error="Incorrect API key provided", partial=RESULT),
        RunCancelled(partial=RESULT),
    ]
    assert render(events).splitlines() == [
        "!  retrying in 0.5 s (attempt 1/3): HTTP 429",
        'x  calculator: TOOL_ERROR: {"errorType":"exception"}',
        "code:",
        "  | x = 6 * 7",
        "  | print(x)",
        "  | x",
        "  > 42",
        "  = 42",
        "code:",
        "  | 1/0",
        "  ! ZeroDivisionError: division by zero",
        "== failed: AuthenticationError: Incorrect API key provided",
        "   120 in / 30 out / 150 total tokens (10 reasoning)",
        "== cancelled: final_answer, 2 steps, 1 tool call",
        "   120 in / 30 out / 150 total tokens (10 reasoning)",
    ]


def test_codeact_runs_show_the_answer_instead_of_the_protocol_json() -> None:
    events: list[Event] = [
        RunStarted(input="q", runtime="codeact"),
        TextDelta('{"type": "code", "code": "42"}'),
        RunFinished(result=RESULT),
    ]
    lines = render(events).splitlines()
    assert lines[1] == "answer: It is 42."
    assert not any('"type"' in line for line in lines)


def test_codeact_code_is_shown_when_written_so_its_tool_calls_appear_under_it() -> None:
    code = "x = calculator(expression='6 * 7')\nx"
    answer = orjson.dumps({"type": "code", "language": "python", "code": code}).decode()
    events: list[Event] = [
        RunStarted(input="q", runtime="codeact"),
        StepStarted(step=0),
        TextDelta(answer),
        ModelCompleted(AgentModelResult(output_text=answer)),
        ToolCallRequested(call=CALL),
        ToolSucceeded(call=CALL, result=ToolResult("call_1", "calculator", "42")),
        CodeExecuted(code=code, ok=True, result=42),
        RunFinished(result=RESULT),
    ]
    assert render(events).splitlines()[1:9] == [
        "-- step 1 --",
        "code:",
        "  | x = calculator(expression='6 * 7')",
        "  | x",
        '-> calculator({"expression":"6 * 7"})',
        "<- calculator: 42",
        "  = 42",
        "answer: It is 42.",
    ]


def test_every_event_has_a_json_line_form() -> None:
    for event in [*RUN, CodeExecuted(code="x", ok=True, result={"a": (1, 2)})]:
        line = json_line(event)
        assert line.endswith(b"\n")
        assert line.count(b"\n") == 1
        assert orjson.loads(line)["type"] == event.type


@pytest.mark.parametrize(
    ("environ", "tty", "expected"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": "1"}, True, False),
        ({"NO_COLOR": ""}, True, True),
        ({"TERM": "dumb"}, True, False),
    ],
)
def test_colour_only_on_a_terminal_without_no_color(
    environ: dict[str, str], tty: bool, expected: bool
) -> None:
    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return tty

    assert use_color(Stream(), environ) is expected


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["run", "q", *argv])


def test_the_endpoint_comes_from_the_arguments_then_the_environment() -> None:
    assert resolve_config(_args("--offline"), {"OPENAI_API_KEY": "k"}) == CliConfig(
        "gpt-4o-mini", offline=True
    )
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://gw/v1", "AGENTFLOW_MODEL": "m1"}
    assert resolve_config(_args(), env) == CliConfig("m1", "http://gw/v1", "k")
    # OpenAI's key from the environment goes to a server named on the command line only when asked
    assert resolve_config(_args("--base-url", "http://x/v1", "--model", "m2"), env) == CliConfig(
        "m2", "http://x/v1", None
    )
    named = _args("--base-url", "http://x/v1", "--api-key-env", "OPENAI_API_KEY")
    assert resolve_config(named, env).api_key == "k"
    assert resolve_config(_args("--base-url", "https://api.openai.com/v1"), env).api_key == "k"
    # a local server needs no key
    assert resolve_config(_args("--base-url", "http://localhost:11434/v1"), {}).api_key is None
    assert resolve_config(_args("--api-key-env", "K2"), {"K2": "k2"}).api_key == "k2"


def test_missing_configuration_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY"):
        resolve_config(_args(), {})
    with pytest.raises(ConfigError, match="K2"):
        resolve_config(_args("--api-key-env", "K2"), {"OPENAI_API_KEY": "k"})


def test_the_key_never_shows_in_the_config_repr() -> None:
    config = resolve_config(_args(), {"OPENAI_API_KEY": "sk-very-secret"})
    assert "sk-very-secret" not in repr(config)
    assert "api_key=<set>" in repr(config)


def test_a_failure_of_every_model_is_reported_whole_and_a_task_group_s_by_its_first_error() -> None:
    from agentflow.cli import _leaf
    from agentflow.model.errors import RateLimitError, ServerError
    from agentflow.model.fallback import AllModelsFailedError

    errors = [
        ServerError("HTTP 503: overloaded", status=503),
        RateLimitError("HTTP 429: slow down", status=429),
    ]
    every = AllModelsFailedError("all 2 models failed", errors, ("a", "b"))
    assert _leaf(ExceptionGroup("task group", [every])) is every
    assert _leaf(ExceptionGroup("task group", [ExceptionGroup("inner", [errors[1]])])) is errors[1]
