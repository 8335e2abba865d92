"""An answer cut while it streams (the run cancelled mid-answer) is kept only when it is prose: half a code
object is never the partial result's text, nor a turn in memory, even with ``keep_partial_answer=True``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from codeact_support import assert_codeact_memory_valid, final, item_text

from agentflow.agent.agent import Agent
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions
from agentflow.agent.prompt import AgentPrompt
from agentflow.model.events import ModelEvent, TextDelta
from agentflow.result import AgentResult, StopReason
from agentflow.runtimes.codeact import CodeActRuntime
from agentflow.testing import FakeModelClient, reply

CODE_START = '{"type": "code", "language": "python", "code": "import os\\nprint(os.listd'


def cut_after(text: str, reached: anyio.Event) -> Any:
    """A model turn that streams ``text`` and then waits forever: the cut lands mid-answer."""

    async def stream(_prompt: AgentPrompt) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text)
        reached.set()
        await anyio.sleep_forever()

    return stream


async def cut_run(text: str, *, keep: bool) -> tuple[AgentResult, InMemoryMemory, FakeModelClient]:
    """Run a session turn whose answer is cut after ``text``, then one more turn (answered ``"next"``)."""
    reached, memory = anyio.Event(), InMemoryMemory()
    model = FakeModelClient([cut_after(text, reached), reply(final("next"))])
    options = AgentOptions(stream=True, keep_partial_answer=keep)
    agent = Agent(model, runtime=CodeActRuntime(), memory=memory, options=options)
    chat = agent.session()
    try:
        async with chat.stream("list the files") as run:
            await reached.wait()
            await run.cancel()
        await chat.run("go on")
    finally:
        await agent.aclose()
    return run.result, memory, model


def assistant_texts(items: Any) -> list[str]:
    return [item_text(i) for i in items if isinstance(i, dict) and i.get("role") == "assistant"]


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize(
    "text",
    [
        CODE_START,
        "Let me look.\n```python\nimport os\nprint(os.listd",
        '{"type": "final", "output": "The files are',
        '{"type": "search", "query": "fi',
        '<think>List them.</think>\n{"type": "code", "code": "import os',
        '{"type": "code", "code": "1 + 1"}',  # whole, but the turn never ended: not run, not kept
    ],
    ids=["code-object", "code-fence", "final-object", "other-object", "code-after-reasoning", "whole-code"],
)
async def test_a_cut_answer_that_is_not_prose_is_no_partial_answer_and_never_kept(
    text: str, keep: bool
) -> None:
    result, memory, model = await cut_run(text, keep=keep)
    assert (result.stop_reason, result.output_text, result.output) == (StopReason.CANCELLED, "", None)
    assert [i.get("role") for i in result.new_items] == ["user"]
    assert_codeact_memory_valid(memory.items)
    # The session's next turn shows the model no half object of its own.
    assert assistant_texts(model.prompts[-1].items) == []


async def test_cut_prose_is_the_partial_answer_and_kept_with_keep_partial_answer() -> None:
    result, memory, model = await cut_run("The files are a.txt and", keep=True)
    assert (result.stop_reason, result.output_text) == (StopReason.CANCELLED, "The files are a.txt and")
    assert assistant_texts(result.new_items) == ["The files are a.txt and"]
    assert assistant_texts(model.prompts[-1].items) == ["The files are a.txt and"]
    assert_codeact_memory_valid(memory.items)


async def test_cut_prose_stays_out_of_memory_by_default() -> None:
    result, _, _ = await cut_run("The files are a.txt and", keep=False)
    assert result.output_text == "The files are a.txt and"
    assert [i.get("role") for i in result.new_items] == ["user"]


@pytest.mark.parametrize("keep", [False, True])
async def test_a_final_object_streamed_whole_before_the_cut_gives_its_output(keep: bool) -> None:
    answer = final("a.txt and b.txt")
    result, _, _ = await cut_run(answer, keep=keep)
    assert (result.stop_reason, result.output_text) == (StopReason.CANCELLED, "a.txt and b.txt")
    assert assistant_texts(result.new_items) == ([answer] if keep else [])
