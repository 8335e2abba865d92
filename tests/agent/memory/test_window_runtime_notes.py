"""A runtime may write its notes for the model as user messages: a DeepResearch plan (``plan_role="user"``),
a CodeAct ``CODE_RESULT`` (``observation_role="user"``), an output retry prompt. None of them is the question
a ``WindowedMemory`` keeps ahead of its window, nor something the user said in the conversation a planner
is shown."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.items import (
    function_call_item,
    function_call_output_item,
    is_runtime_note,
    message_item,
    user_item,
)
from agentflow.agent.memory import WindowedMemory
from agentflow.plan import Plan
from agentflow.runtimes import codeact_prompt
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.runtimes.codeact_prompt import correction_text
from agentflow.runtimes.codeact_protocol import code_error_text, code_result_text
from agentflow.runtimes.deep_research import UPDATED_PLAN_HEADER, DeepResearchRuntime
from agentflow.runtimes.output import OutputType
from agentflow.runtimes.planner import ModelPlanner
from agentflow.sandbox import CodeResult, ExecutionLimits, ToolInvoker
from agentflow.testing.fake import FakeChatModel, FakeModelClient, chat_reply, reply
from agentflow.tools import tool

QUESTION = "What is the capital of France? (the QUESTION)"


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return "fact about " + q


def texts(items: Sequence[Any]) -> list[str]:
    out = []
    for item in items:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, list):
            out.append("".join(part.get("text", "") for part in content))
        elif isinstance(content, str):
            out.append(content)
    return out


def test_every_note_a_runtime_writes_is_recognised() -> None:
    plan = Plan.of("goal", ["step one"])
    research = DeepResearchRuntime(plan_role="user")
    spec = OutputType(int)
    notes = [
        research.plan_item(plan),
        research.plan_item(plan, UPDATED_PLAN_HEADER),
        user_item(code_result_text(CodeResult(ok=True, value=3))),
        user_item(code_error_text(CodeResult(ok=False, error="ZeroDivisionError"))),
        user_item(correction_text("it was empty")),
        # CodeAct's answer sent back for another try (an ``output_type``), where this CodeAct has one.
        user_item(getattr(codeact_prompt, "OUTPUT_ERROR_PREFIX", "CODE_ERROR: ") + "no"),
        user_item(spec.retry_prompt("not an integer")),
        user_item(spec.rejected_prompt("too small")),
    ]
    assert [is_runtime_note(note) for note in notes] == [True] * len(notes)
    people = [
        user_item(QUESTION),
        user_item("Plan: go to Paris"),
        message_item("assistant", "CODE_RESULT: 3"),
    ]
    assert [is_runtime_note(item) for item in people] == [False, False, False]


def test_the_window_keeps_the_question_not_a_later_note_written_as_a_user_message() -> None:
    memory = WindowedMemory(max_items=3)
    memory.extend([user_item(QUESTION), user_item("Plan:\n1. Look it up\n")])
    for index in range(3):
        call_id = f"c{index}"
        memory.extend([function_call_item(call_id, "lookup", "{}"), function_call_output_item(call_id, "x")])
        memory.extend([user_item(f'CODE_RESULT: {{"result":{index}}}')])
    kept = texts(memory.items)
    assert kept[0] == QUESTION
    assert kept[-1] == 'CODE_RESULT: {"result":2}'
    assert not any(text.startswith("Plan:") for text in kept)


@pytest.mark.parametrize("role", ["system", "user"])
async def test_deep_research_keeps_the_question_with_either_plan_role(role: Any) -> None:
    model = FakeModelClient(
        [reply(tool_calls=[("lookup", {"q": str(i)})]) for i in range(4)] + [reply("Paris")]
    )
    agent = Agent(
        model,
        tools=[lookup],
        runtime=DeepResearchRuntime(plan_role=role),
        memory=lambda: WindowedMemory(max_items=4),
    )
    await agent.run(QUESTION)
    assert QUESTION in texts(model.prompts[-1].items)


class CountingExecutor:
    """A ``CodeExecutor`` whose every step succeeds with the number of steps run so far."""

    def __init__(self) -> None:
        self.steps = 0

    async def execute(
        self, code: str, tools: ToolInvoker, tool_names: Sequence[str], limits: ExecutionLimits
    ) -> CodeResult:
        self.steps += 1
        return CodeResult(ok=True, value=self.steps)

    async def aclose(self) -> None:
        pass


def protocol(**answer: Any) -> str:
    return orjson.dumps(answer).decode()


@pytest.mark.parametrize("role", ["system", "user"])
async def test_codeact_keeps_the_question_with_either_observation_role(role: Any) -> None:
    answers = [protocol(type="code", language="python", code=f"{i} + 1") for i in range(4)]
    model = FakeModelClient([reply(a) for a in answers] + [reply(protocol(type="final", output="Paris"))])
    options = CodeActOptions(react=True, observation_role=role, executor=CountingExecutor())
    agent = Agent(model, runtime=CodeActRuntime(options), memory=lambda: WindowedMemory(max_items=4))
    await agent.run(QUESTION)
    assert QUESTION in texts(model.prompts[-1].items)


async def test_the_question_outlasts_output_retry_prompts_in_memory() -> None:
    # The first retry prompt enters memory with its answer; the second is then the request's last item,
    # and the window must still hold the question rather than the first prompt.
    model = FakeModelClient(
        [
            reply(tool_calls=[("lookup", {"q": "a"})]),
            reply(tool_calls=[("lookup", {"q": "b"})]),
            reply("not a number"),
            reply("still not a number"),
            reply("10"),
        ]
    )
    chat = Agent(model, tools=[lookup], output_type=int).session(WindowedMemory(2))
    result = await chat.run(QUESTION)
    assert result.output == 10
    assert QUESTION in texts(model.prompts[-1].items)


async def test_a_planner_is_not_shown_an_output_retry_prompt_as_something_the_user_said() -> None:
    planner_model = FakeChatModel([chat_reply('["Count"]'), chat_reply('["Count again"]')])
    agent = Agent(
        FakeModelClient([reply("three"), reply("3"), reply("4")]),
        runtime=DeepResearchRuntime(ModelPlanner(planner_model)),
        output_type=int,
    )
    session = agent.session()
    assert (await session.run("How many?")).output == 3
    await session.run("And now?")
    shown = planner_model.requests[-1].messages[-1].text
    assert shown.startswith("Conversation so far:\n- user: How many?\n- assistant: three\n- assistant: 3\n")
    assert "Your final answer" not in shown
