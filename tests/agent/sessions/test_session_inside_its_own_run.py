"""A tool of a session's run that opens the same conversation again (to read the chat so far, or as a
sub-agent with a session on it) is refused at once with a ``RuntimeError`` that says why, instead of waiting
for the run that waits for it — which hung for good when the step had two calls or more (each in a task of
its own). A session on another conversation is unaffected."""

from __future__ import annotations

import anyio
import pytest

from agentflow import InMemoryStore, tool
from agentflow.agent.agent import Agent
from agentflow.testing.fake import FakeModelClient, reply


@pytest.mark.parametrize("calls", [1, 3])
async def test_a_tool_opening_its_own_runs_conversation_gets_a_clear_error_not_a_hang(calls: int) -> None:
    store = InMemoryStore()

    @tool
    async def history() -> str:
        """Read the chat so far."""
        await anyio.lowlevel.checkpoint()  # a call that waits: the others run in tasks of their own
        items = await Agent(FakeModelClient([])).session(session_id="chat-1", store=store).load()
        return f"{len(items)} items"

    model = FakeModelClient([reply(tool_calls=[("history", {})] * calls), reply("done")])
    chat = Agent(model, tools=[history]).session(session_id="chat-1", store=store)
    with anyio.fail_after(10):  # a guard against the hang this pins, not a timing assertion
        result = await chat.run("hi")

    assert result.output_text == "done"
    assert len(result.tool_results) == calls
    for answer in result.tool_results:
        assert answer.error is not None
        assert "a run of this session's conversation ('chat-1') is in progress here" in answer.error


async def test_a_sub_agent_with_a_session_on_the_same_conversation_is_refused_too() -> None:
    store = InMemoryStore()
    helper = Agent(FakeModelClient([reply("summary")] * 2), name="Summarizer")
    summarize = helper.as_tool(
        description="Summarizes the chat.", session=helper.session(session_id="chat-1", store=store)
    )
    turns = [reply(tool_calls=[("summarizer", {"input": "a"}), ("summarizer", {"input": "b"})]), reply("ok")]
    chat = Agent(FakeModelClient(turns), tools=[summarize]).session(session_id="chat-1", store=store)
    with anyio.fail_after(10):
        result = await chat.run("hi")
    assert [r.error_type for r in result.tool_results] == ["exception", "exception"]
    assert all("is in progress here" in (r.error or "") for r in result.tool_results)


async def test_a_session_on_another_conversation_works_inside_a_run() -> None:
    store = InMemoryStore()
    await Agent(FakeModelClient([reply("old")])).session(session_id="notes", store=store).run("remember")

    @tool
    async def notes() -> str:
        """Read the notes conversation."""
        items = await Agent(FakeModelClient([])).session(session_id="notes", store=store).load()
        return f"{len(items)} items"

    model = FakeModelClient([reply(tool_calls=[("notes", {}), ("notes", {})]), reply("done")])
    chat = Agent(model, tools=[notes]).session(session_id="chat-1", store=store)
    result = await chat.run("hi")
    assert [r.output for r in result.tool_results] == ["2 items", "2 items"]
    # After the run its conversation is free again in this task (user, calls, 2 outputs, answer).
    assert len(await Agent(FakeModelClient([])).session(session_id="chat-1", store=store).load()) == 5
