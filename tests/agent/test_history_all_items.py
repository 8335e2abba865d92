"""``AgentResult.history`` and ``all_items``: the conversation a run continued, and the whole conversation
after it (pydantic-ai's ``all_messages()``), for plain runs, ``history=`` runs, streams and sessions; shared
with memory rather than copied, and left out of the result's JSON form."""

from __future__ import annotations

from typing import Any

from agentflow.agent.agent import Agent
from agentflow.agent.items import (
    assistant_item,
    dump_items,
    function_call_item,
    load_items,
    user_item,
)
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.stores import InMemoryStore
from agentflow.events import RunFinished
from agentflow.result import AgentResult, StopReason
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def kinds(items: Any) -> list[str]:
    return [item.get("role") or item["type"] for item in items]


async def test_a_plain_runs_whole_conversation_is_its_new_items() -> None:
    model = FakeModelClient([reply(tool_calls=[("add", {"a": 1, "b": 2})]), reply("3")])
    result = await Agent(model, tools=[add]).run("1+2?")
    assert result.history == ()
    assert result.all_items == result.new_items
    assert kinds(result.all_items) == ["user", "assistant", "function_call_output", "assistant"]


async def test_a_history_run_lists_the_history_then_its_own_items() -> None:
    agent = Agent(FakeModelClient([reply("Hi Ada."), reply("Ada.")]))
    first = await agent.run("I am Ada.")
    stored = load_items(dump_items(first.all_items))

    second = await agent.run("Who am I?", history=stored)

    assert second.history == tuple(stored)
    assert second.history[0] is stored[0]  # memory's snapshot holds the very items: nothing was copied
    assert second.all_items == (*stored, user_item("Who am I?"), assistant_item("Ada."))
    assert second.new_items == (user_item("Who am I?"), assistant_item("Ada."))


async def test_all_items_continue_from_run_to_run() -> None:
    agent = Agent(FakeModelClient([reply("a"), reply("b"), reply("c")]))
    result = await agent.run("1")
    result = await agent.run("2", history=result.all_items)
    result = await agent.run("3", history=result.all_items)
    assert kinds(result.all_items) == ["user", "assistant"] * 3


async def test_a_streamed_runs_result_and_terminal_event_carry_it_too() -> None:
    agent = Agent(FakeModelClient([reply("b")]))
    async with agent.stream("q", history=[user_item("a"), assistant_item("x")]) as run:
        finished = [event async for event in run if isinstance(event, RunFinished)]
    assert kinds(run.result.all_items) == ["user", "assistant", "user", "assistant"]
    assert finished[0].result.all_items == run.result.all_items


async def test_a_trailing_call_without_output_is_answered_in_place() -> None:
    model = FakeModelClient([reply("done")])
    history = [user_item("go"), function_call_item("c1", "f", "{}")]
    result = await Agent(model).run("again", history=history)
    assert kinds(result.all_items) == ["user", "function_call", "function_call_output", "user", "assistant"]
    assert kinds(result.all_items) == [*kinds(model.prompts[0].items), "assistant"]


async def test_a_call_answered_mid_conversation_keeps_its_place() -> None:
    # The run rewrote memory (the synthetic result goes right after the call's turn, before the next user
    # message): all_items is that conversation, in its order, with nothing twice.
    model = FakeModelClient([reply("done")])
    history = [user_item("go"), function_call_item("c1", "f", "{}"), user_item("later"), assistant_item("ok")]
    result = await Agent(model).run("again", history=history)
    expected = ["user", "function_call", "function_call_output", "user", "assistant", "user", "assistant"]
    assert kinds(result.all_items) == expected
    assert kinds(result.all_items) == [*kinds(model.prompts[0].items), "assistant"]
    load_items(dump_items(result.all_items))  # a conversation the check takes


async def test_a_sessions_whole_conversation_is_its_memory_after_the_run() -> None:
    agent = Agent(FakeModelClient([reply("a"), reply("b")]))
    chat = agent.session(InMemoryMemory([user_item("seed")]))
    first = await chat.run("1")
    second = await chat.run("2")
    assert first.all_items == second.history
    assert second.all_items == chat.items


async def test_a_stored_sessions_history_is_what_it_loaded() -> None:
    store = InMemoryStore()
    agent = Agent(FakeModelClient([reply("a"), reply("b")]))
    await agent.session(session_id="s", store=store).run("1")
    stored = await store.load("s")
    result = await agent.session(session_id="s", store=store).run("2")  # another request, same chat
    assert list(result.history) == stored != []
    assert list(result.all_items) == await store.load("s")


def test_the_json_form_leaves_the_conversation_out() -> None:
    result = AgentResult(
        "run_1", "ok", StopReason.FINAL_ANSWER, new_items=(user_item("q"),), history=(user_item("h"),)
    )
    assert "history" not in result.to_dict()
    assert "new_items" not in result.to_dict()
    assert "history" not in repr(result)
