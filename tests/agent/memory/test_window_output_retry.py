"""A ``WindowedMemory`` keeps the latest user message, the question, in every request. An output retry prompt
(sent when a final answer does not match the ``output_type``) is a user turn too; it must not take the
question's place, or the retry request asks the model to fix an answer to a question it can no longer see."""

from __future__ import annotations

import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.memory import WindowedMemory
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

QUESTION = "What is 1+2+3+4? (the QUESTION)"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.mark.parametrize("window", [1, 2, 4, 6])
async def test_the_question_is_in_the_output_retry_request(window: int) -> None:
    model = FakeModelClient(
        [
            reply(tool_calls=[("add", {"a": 1, "b": 2})]),
            reply(tool_calls=[("add", {"a": 3, "b": 4})]),
            reply("not a number"),  # rejected: the retry prompt goes back with it
            reply("10"),
        ]
    )
    chat = Agent(model, tools=[add], output_type=int).session(WindowedMemory(window))

    result = await chat.run(QUESTION)

    assert result.output == 10
    retry_request = model.prompts[-1].items
    assert any(QUESTION in str(item) for item in retry_request)
    # ...and the rejected answer with the prompt about it, last.
    assert "not a number" in str(retry_request[-2])
    assert retry_request[-1]["role"] == "user"
    assert QUESTION not in str(retry_request[-1])
