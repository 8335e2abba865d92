"""What the model is shown of a step: printed output cut to its start and end, several code objects of one
answer run as one step, and the role of the runtime's messages chosen for the server's chat template."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from codeact_support import Recorder, code, codeact_agent, final, item_text, says

from agentflow.events import CodeExecuted
from agentflow.result import StopReason
from agentflow.runtimes.codeact import CodeActOptions
from agentflow.runtimes.codeact_protocol import CodeMessage, parse_answer, step_text
from agentflow.sandbox import CodeResult

# --- printed output ----------------------------------------------------------------------------------------


def test_long_output_keeps_its_start_and_end_around_a_marker() -> None:
    stdout = "".join(f"line {n}\n" for n in range(10_000))
    text = step_text(CodeResult(ok=True, value=1, stdout=stdout, stderr="e" * 50), max_output_chars=100)
    payload = orjson.loads(text.removeprefix("CODE_RESULT: "))
    shown = payload["stdout"]
    assert shown.startswith("line 0\nline 1\n")
    assert shown.endswith("line 9998\nline 9999\n")
    assert f"[... {len(stdout) - 100} characters of output cut here;" in shown
    assert len(shown) < 200
    assert payload["stderr"] == "e" * 50  # each stream on its own: this one fits


def test_a_failed_steps_output_is_cut_the_same_way() -> None:
    failed = CodeResult(ok=False, error="boom", stdout="o" * 500, stderr="s" * 500)
    payload = orjson.loads(step_text(failed, max_output_chars=10).removeprefix("CODE_ERROR: "))
    assert payload["error"] == "boom"
    assert payload["stdout"].startswith("ooooo\n[... 490 characters of output cut here;")
    assert payload["stderr"].endswith("]\nsssss")


@pytest.mark.parametrize("value", [0, -1, True, 1.5])
def test_max_output_chars_must_be_a_positive_int_or_none(value: Any) -> None:
    with pytest.raises(ValueError, match="max_output_chars must be an int >= 1 or None"):
        CodeActOptions(max_output_chars=value)


async def test_what_a_step_printed_is_cut_for_the_model_but_whole_on_its_event() -> None:
    source = "for n in range(20_000):\n    print(n)\n'done'"
    options = CodeActOptions(react=True, max_output_chars=2_000)
    async with codeact_agent([says(code(source)), says(final("done"))], codeact=options) as (agent, _):
        recorder = Recorder(agent)
        result = await agent.run("Count.")
    [executed] = recorder.of(CodeExecuted)
    assert len(executed.stdout) > 60_000  # as the sandbox captured it (64 KiB)
    [memory] = [item_text(i) for i in result.new_items if i.get("role") == "system"]
    stdout = orjson.loads(memory.removeprefix("CODE_RESULT: "))["stdout"]
    assert stdout.startswith("0\n1\n2\n")
    assert "characters of output cut here" in stdout
    assert stdout.endswith(executed.stdout[-900:])
    assert len(stdout) < 2_100


async def test_by_default_a_step_shows_the_model_at_most_8000_characters_of_each_stream() -> None:
    async with codeact_agent([says(code("print('x' * 50_000)\n1"))]) as (agent, _):
        result = await agent.run("Print.")
    [memory] = [item_text(i) for i in result.new_items if i.get("role") == "system"]
    stdout = orjson.loads(memory.removeprefix("CODE_RESULT: "))["stdout"]
    assert 7_990 <= stdout.count("x") <= 8_000  # (with the print's newline among the 8,000)


# --- several code objects in one answer --------------------------------------------------------------------


def test_consecutive_code_objects_are_joined_into_one_step() -> None:
    answer = code("a = 1\nprint('first')") + "\n\nThen:\n" + code("print('second', a)\na + 1")
    assert parse_answer(answer) == CodeMessage("a = 1\nprint('first')\n\nprint('second', a)\na + 1")


def test_joining_stops_at_a_final_object_or_code_in_another_language() -> None:
    assert parse_answer(code("x = 1") + final("guess") + code("x = 2")) == CodeMessage("x = 1")
    assert parse_answer(code("x = 1") + code("x = 2", "javascript")) == CodeMessage("x = 1")


async def test_every_code_object_of_an_answer_runs() -> None:
    answer = code("a = 1\nprint('first')") + "\n\nThen:\n" + code("print('second', a)\na + 1")
    async with codeact_agent([says(answer)]) as (agent, _):
        recorder = Recorder(agent)
        result = await agent.run("Run both.")
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "2")
    [executed] = recorder.of(CodeExecuted)
    assert executed.stdout == "first\nsecond 1\n"


# --- the role of the runtime's messages --------------------------------------------------------------------


@pytest.mark.parametrize("role", ["system", "user", "developer"])
async def test_code_results_and_protocol_errors_are_sent_in_the_chosen_role(role: Any) -> None:
    def second(body: Any) -> Any:
        roles = [m["role"] for m in body["messages"]]
        assert roles == ["system", "user", "assistant", role]
        assert body["messages"][-1]["content"].startswith("PROTOCOL_ERROR: ")
        return says(code("6 * 7"))

    def third(body: Any) -> Any:
        messages = body["messages"]
        assert [m["role"] for m in messages] == ["system", "user", "assistant", role, "assistant", role]
        assert messages[-1]["content"] == 'CODE_RESULT: {"result":42}'
        return says(final("42"))

    options = CodeActOptions(react=True, observation_role=role)
    turns = [says('{"type": "final", "output": 4,, }'), second, third]
    async with codeact_agent(turns, codeact=options) as (agent, server):
        result = await agent.run("Compute.")
    assert not server.errors
    assert result.output_text == "42"


def test_the_default_role_is_the_references_system() -> None:
    assert CodeActOptions().observation_role == "system"


def test_an_unknown_role_is_refused() -> None:
    with pytest.raises(ValueError, match="observation_role must be 'system', 'user' or 'developer'"):
        CodeActOptions(observation_role="tool")  # type: ignore[arg-type]
