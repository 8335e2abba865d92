"""Reasoning a server leaves inline (``think_tags=None``, as MiniMax-M2 wants) is not the answer: a protocol
object or a code fence the model only considered inside a leading ``<think>`` block is never run, nor taken
as the final answer."""

from __future__ import annotations

from typing import Any

import pytest
from codeact_support import code, final, get_price, item_text

from agentflow.agent.agent import Agent
from agentflow.agent.prompt import AgentPrompt
from agentflow.events import CodeExecuted
from agentflow.model.response import FinishReason
from agentflow.result import AgentResult, StopReason
from agentflow.runtimes.codeact import CodeActRuntime
from agentflow.runtimes.codeact_protocol import (
    MAX_ANSWER_CHARS,
    CodeMessage,
    FinalMessage,
    NotProtocol,
    answer_body,
    parse_answer,
)
from agentflow.testing import FakeModelClient, reply

GUESS = '{"type": "final", "output": "guess"}'
LISTING = "```python\nimport os\nos.listdir('/')\n```"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            f"<think>Maybe just {GUESS}? No, compute it.</think>{code('2 + 2')}",
            CodeMessage("2 + 2"),
        ),
        (
            f"<think>I could run\n{LISTING}\nbut no need.</think>\n\n{final('4')}",
            FinalMessage("4"),
        ),
        (
            f"\n<thinking>{code('import os')} is one way.</thinking>\n{code('2 + 2')}",
            CodeMessage("2 + 2"),
        ),
        (f"<think>{code('import os')}</think>\n\n```py\n2 + 2\n```", CodeMessage("2 + 2")),
    ],
    ids=["final-in-reasoning", "fence-in-reasoning", "thinking-tags", "fence-after-reasoning"],
)
def test_the_answer_after_a_reasoning_block_decides(text: str, expected: object) -> None:
    assert parse_answer(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        f"<think>Run it?\n{LISTING}\nNo: 2 + 2 is 4.</think>The answer is 4.",
        f"<think>Either {GUESS} or code.</think>\n\nThe answer is 4.",
    ],
    ids=["fence", "object"],
)
def test_prose_after_a_reasoning_block_is_prose(text: str) -> None:
    answer = parse_answer(text)
    assert isinstance(answer, NotProtocol)
    assert answer.attempt is None
    assert answer.text == text  # the whole answer, as the model wrote it


def test_a_reasoning_block_never_closed_holds_no_answer() -> None:
    text = f"<think>I will send {code('import os')} and then"
    answer = parse_answer(text)
    assert isinstance(answer, NotProtocol)
    assert answer_body(text) == ""


def test_a_reasoning_block_later_in_the_answer_is_answer_text() -> None:
    assert parse_answer(f"Here: <think>aside</think> {code('2 + 2')}") == CodeMessage("2 + 2")
    assert (
        answer_body("Tags like <think>x</think> wrap reasoning.")
        == "Tags like <think>x</think> wrap reasoning."
    )


def test_the_read_limit_counts_from_the_end_of_the_reasoning() -> None:
    reasoning = "<think>" + "hm " * (MAX_ANSWER_CHARS // 3 + 10) + "</think>"
    assert parse_answer(reasoning + code("2 + 2")) == CodeMessage("2 + 2")


async def run(script: list[Any]) -> tuple[AgentResult, FakeModelClient, list[Any]]:
    fake = FakeModelClient(script)
    agent = Agent(fake, runtime=CodeActRuntime(), tools=[get_price])
    events: list[Any] = []
    agent.on(CodeExecuted, events.append)
    try:
        result = await agent.run("What is 2 + 2?")
    finally:
        await agent.aclose()
    return result, fake, events


async def test_code_written_only_in_the_reasoning_is_never_run() -> None:
    answer = f"<think>I could run\n{LISTING}\nbut 2 + 2 is 4.</think>\n\nThe answer is 4."
    result, fake, executed = await run([reply(answer)])
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, answer)
    assert executed == []
    assert len(fake.prompts) == 1


async def test_the_code_object_after_the_reasoning_runs_not_the_final_one_inside_it() -> None:
    answer = f"<think>Maybe just {GUESS}? No, compute it.</think>\n{code('2 + 2')}"
    result, _, executed = await run([reply(answer)])
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "4")
    assert [e.code for e in executed] == ["2 + 2"]


@pytest.mark.parametrize(
    ("answer", "finish", "said"),
    [
        (f"<think>Perhaps {GUESS}.</think>\n\n", FinishReason.STOP, "it was empty"),
        (f"<think>Perhaps {GUESS} or", FinishReason.LENGTH, "the output-token limit was reached"),
    ],
    ids=["closed", "cut"],
)
async def test_an_answer_that_is_only_reasoning_is_sent_back_as_empty(
    answer: str, finish: FinishReason, said: str
) -> None:
    def second(prompt: AgentPrompt) -> Any:
        [*_, last] = [item_text(i) for i in prompt.items if isinstance(i, dict) and i.get("role") == "system"]
        assert last.startswith("PROTOCOL_ERROR: ")
        assert said in last
        return reply(final("4"))

    result, fake, _ = await run([reply(answer, finish_reason=finish), second])
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "4")
    assert len(fake.prompts) == 2
