"""Resuming a paused run (``approvals=``) whose approved call is to a ``return_direct`` tool: as when the
same call is approved inside a run, its result is the run's answer and the model is not called again —
unless the resumed run has input of its own, or the call did not succeed, or its text is no answer for the
run's ``output_type``."""

from __future__ import annotations

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.result import AgentResult, StopReason
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

DEFER = AgentOptions(tool_approval="defer")


@tool(needs_approval=True, return_direct=True)
async def send_report(text: str) -> str:
    """Send the report; its confirmation is the answer."""
    return text


async def _paused(text: str = "SENT Q3") -> AgentResult:
    turn = reply(tool_calls=[("c1", "send_report", {"text": text})])
    paused = await Agent(FakeModelClient([turn]), tools=[send_report], options=DEFER).run("send it")
    assert paused.stop_reason is StopReason.APPROVAL_REQUIRED
    return paused


async def test_an_approved_return_direct_call_answers_the_resumed_run() -> None:
    paused = await _paused()
    model = FakeModelClient([])  # any model call would fail the run
    result = await Agent(model, tools=[send_report]).run(history=paused.all_items, approvals={"c1": True})
    assert (result.stop_reason, result.output_text, result.output) == (
        StopReason.FINAL_ANSWER,
        "SENT Q3",
        "SENT Q3",
    )
    assert model.prompts == []
    assert [r.output for r in result.tool_results] == ["SENT Q3"]
    assert result.all_items[-1]["type"] == "function_call_output"  # the conversation ends with the answer


async def test_the_answer_is_read_into_the_output_type() -> None:
    paused = await _paused("42")
    result = await Agent(FakeModelClient([]), tools=[send_report], output_type=int).run(
        history=paused.all_items, approvals={"c1": True}
    )
    assert (result.stop_reason, result.output) == (StopReason.FINAL_ANSWER, 42)


async def test_the_model_goes_on_for_input_a_denial_or_a_text_that_is_no_answer() -> None:
    paused = await _paused()
    cases: list[tuple[Agent, dict[str, bool | str], str | None]] = [
        (Agent(FakeModelClient([reply("and then?")]), tools=[send_report]), {"c1": True}, "also tell Bob"),
        (Agent(FakeModelClient([reply("not sent")]), tools=[send_report]), {"c1": False}, None),
        (
            Agent(FakeModelClient([reply("7")]), tools=[send_report], output_type=int),
            {"c1": True},
            None,
        ),  # "SENT Q3" is no int: a result like any other
    ]
    for agent, decisions, question in cases:
        result = await agent.run(question, history=paused.all_items, approvals=decisions)
        assert result.stop_reason is StopReason.FINAL_ANSWER
        assert result.steps == 1  # the model answered
