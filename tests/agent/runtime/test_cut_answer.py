"""A run cut short while the model streams its answer ("stop generating") keeps the text streamed so far.

The partial result's ``output_text`` is exactly the text the run published as ``TextDelta`` events, whichever
way the run ended early (``run.cancel()``, its deadline, the awaiting task cancelled, the stream failing).
Memory stays exactly as before unless ``AgentOptions(keep_partial_answer=True)``: then the cut answer is one
text-only assistant turn (never a half tool call), which a session's next turn sends back to the model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal

import anyio
import attrs
import pytest
from runtime_support import add, assert_memory_valid, paused_stream

from agentflow import (
    Agent,
    AgentOptions,
    AgentResult,
    InMemoryMemory,
    OpenAIChatModel,
    OpenAIResponsesModel,
    OutputType,
    RejectOutput,
    RunCancelled,
    StopReason,
)
from agentflow.agent.prompt import AgentPrompt
from agentflow.model.errors import ModelConnectionError
from agentflow.model.events import (
    ModelEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from agentflow.runtimes.errors import run_result
from agentflow.testing import Fault, Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply

Protocol = Literal["chat", "responses"]


def assistant_texts(items: Any) -> list[str]:
    """The text of every assistant message item."""
    return [
        part["text"]
        for item in items
        if item.get("role") == "assistant"
        for part in item.get("content") or ()
        if part.get("type") == "output_text"
    ]


class StreamingText:
    """A run whose model streams ``one two three`` and then waits: the cut lands mid-answer."""

    def __init__(self, *, keep: bool = False, timeout: float | None = None) -> None:
        self.reached, self.never = anyio.Event(), anyio.Event()
        self.closed: list[str] = []
        first = [TextDelta("one "), TextDelta("two "), TextDelta("three")]
        self.model = FakeModelClient(
            [paused_stream(first, self.never, self.reached, self.closed), reply("next answer")]
        )
        self.memory = InMemoryMemory()
        options = AgentOptions(stream=True, keep_partial_answer=keep, timeout=timeout)
        self.agent = Agent(self.model, memory=self.memory, options=options)


async def test_cancelling_mid_answer_keeps_the_streamed_text_out_of_memory() -> None:
    s = StreamingText()
    async with s.agent.stream("count") as run:
        seen = ""
        async for event in run:
            if isinstance(event, TextDelta):
                seen += event.text
                if seen == "one two three":
                    await run.cancel()
    result = run.result
    assert result.stop_reason is StopReason.CANCELLED
    assert result.output_text == "one two three"
    assert result.output is None  # not an answer: a cut one
    assert s.closed == ["closed"]
    # Memory is as it was before the answer began: the user turn alone.
    assert [item.get("role") for item in s.memory.items] == ["user"]
    assert result.new_items == s.memory.items


async def test_keep_partial_answer_stores_it_as_an_assistant_turn_the_next_run_sees() -> None:
    s = StreamingText(keep=True)
    chat = s.agent.session()
    async with chat.stream("count") as run:
        await s.reached.wait()
        await run.cancel()
    assert run.result.output_text == "one two three"
    assert chat.items[-1] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "one two three"}],
    }
    assert run.result.new_items == chat.items
    await chat.run("go on")
    assert assistant_texts(s.model.prompts[-1].items) == ["one two three"]


@pytest.mark.parametrize("way", ["deadline", "cancel_task", "failure"])
async def test_every_way_of_cutting_the_answer_keeps_its_text(way: str) -> None:
    if way == "failure":

        async def failing(_prompt: AgentPrompt) -> AsyncIterator[ModelEvent]:
            yield TextDelta("one two ")
            raise ModelConnectionError("the connection was lost")

        model = FakeModelClient([failing])
        agent = Agent(model, options=AgentOptions(stream=True))
        with pytest.raises(ModelConnectionError) as caught:
            await agent.run("count")
        partial = run_result(caught.value)
        assert partial is not None
        assert (partial.stop_reason, partial.output_text) == (StopReason.ERROR, "one two ")
        return
    s = StreamingText(timeout=0.5 if way == "deadline" else None)
    if way == "deadline":
        with anyio.fail_after(10):
            result = await s.agent.run("count")
        assert (result.stop_reason, result.output_text) == (StopReason.DEADLINE, "one two three")
        return
    cancelled: list[RunCancelled] = []
    s.agent.on(RunCancelled, cancelled.append)
    async with anyio.create_task_group() as tg:
        tg.start_soon(s.agent.run, "count")
        await s.reached.wait()
        tg.cancel_scope.cancel()
    [event] = cancelled
    assert event.partial.output_text == "one two three"


@pytest.mark.parametrize("keep", [False, True])
async def test_a_tool_call_being_streamed_is_never_kept(keep: bool) -> None:
    reached, never = anyio.Event(), anyio.Event()
    first: list[ModelEvent] = [
        TextDelta("Let me add. "),
        ToolCallStarted(0, "call_1", "add"),
        ToolCallArgumentsDelta(0, '{"a": 1, '),
    ]
    model = FakeModelClient([paused_stream(first, never, reached, [])])
    memory = InMemoryMemory()
    agent = Agent(model, tools=[add], memory=memory, options=AgentOptions(keep_partial_answer=keep))
    async with agent.stream("1 + 2?") as run:
        await reached.wait()
        await run.cancel()
    result = run.result
    assert result.output_text == "Let me add. "
    assert result.tool_calls == ()
    assert_memory_valid(memory.items)
    assert not any("tool_calls" in item for item in memory.items)
    assert assistant_texts(memory.items) == (["Let me add. "] if keep else [])


async def test_a_cut_before_any_text_keeps_nothing() -> None:
    reached, never = anyio.Event(), anyio.Event()
    model = FakeModelClient(
        [
            reply(tool_calls=[("add", {"a": 1, "b": 2})]),
            paused_stream([ReasoningDelta("thinking…")], never, reached, []),
        ]
    )
    memory = InMemoryMemory()
    agent = Agent(model, tools=[add], memory=memory, options=AgentOptions(keep_partial_answer=True))
    async with agent.stream("1 + 2?") as run:
        await reached.wait()
        before = memory.items
        await run.cancel()
    assert run.result.output_text == ""
    assert memory.items == before


@attrs.frozen
class Count:
    n: int


def positive(count: Count) -> None:
    if count.n <= 0:
        raise RejectOutput("n must be positive")


@pytest.mark.parametrize("keep", [False, True])
async def test_a_cut_answer_to_an_output_retry_enters_memory_after_its_prompt(keep: bool) -> None:
    reached, never = anyio.Event(), anyio.Event()
    model = FakeModelClient([reply('{"n": 0}'), paused_stream([TextDelta('{"n": ')], never, reached, [])])
    memory = InMemoryMemory()
    agent = Agent(
        model,
        memory=memory,
        output_type=OutputType(Count, validators=[positive]),
        options=AgentOptions(keep_partial_answer=keep),
    )
    async with agent.stream("count") as run:
        await reached.wait()
        await run.cancel()
    roles = [item.get("role") for item in memory.items]
    if keep:
        # The retry prompt is answered (cut short), so both enter memory.
        assert roles == ["user", "assistant", "user", "assistant"]
        assert "n must be positive" in str(memory.items[2])
        assert assistant_texts(memory.items)[-1] == '{"n": '
    else:
        assert roles == ["user", "assistant"]  # no unanswered retry prompt
    assert run.result.output_text == '{"n": '


def test_keep_partial_answer_is_a_bool() -> None:
    with pytest.raises(TypeError, match="keep_partial_answer"):
        AgentOptions(keep_partial_answer=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_stop_generating_over_http(protocol: Protocol, keep: bool) -> None:
    # The server stalls mid-answer; the consumer stops the run once it has shown some text.
    # After the role chunk and three deltas (Chat), or the four events before the first delta (Responses).
    after = 4 if protocol == "chat" else 8
    stalled = Fault.stall(after_chunks=after, reply=Reply(text="one two three four five six", chunk_size=4))
    async with ScriptedServer([stalled, Reply(text="next")]) as server:
        cls = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
        model = cls(base_url=server.base_url, api_key="sk-test", model="m")
        agent = Agent(model, options=AgentOptions(keep_partial_answer=keep))
        published: list[str] = []
        agent.on(TextDelta, lambda event: published.append(event.text))
        async with agent:
            chat = agent.session()
            seen = ""
            with anyio.fail_after(10):
                async with chat.stream("count") as run:
                    async for event in run:
                        if isinstance(event, TextDelta):
                            seen += event.text
                            if len(seen) >= 8:
                                await run.cancel()
                partial = run.result
                assert isinstance(partial, AgentResult)
                cut_text = "".join(published)
                await chat.run("go on")
    assert partial.stop_reason is StopReason.CANCELLED
    assert partial.output_text == cut_text
    assert partial.output_text.startswith(seen)
    assert len(seen) >= 8
    kept = str(server.requests[-1].body).count(partial.output_text)
    assert kept == (1 if keep else 0)
