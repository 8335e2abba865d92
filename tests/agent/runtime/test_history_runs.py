"""``history=``: a run that continues a stored conversation without a session. The model sees the history,
``new_items`` holds only this run's items (so a store that appends them stays whole), and a session, which
has its own memory, refuses it."""

from __future__ import annotations

from typing import Any

import pytest

from agentflow.agent.agent import Agent, run_sync
from agentflow.agent.items import assistant_item, function_call_item, user_item
from agentflow.agent.memory import InMemoryMemory, WindowedMemory
from agentflow.events import RunStarted
from agentflow.model.messages import AiMessage, UserMessage
from agentflow.testing.fake import FakeModelClient, reply


def roles(items: Any) -> list[str]:
    return [item.get("role") or item["type"] for item in items]


async def test_history_is_seen_by_the_model_but_not_listed_as_new() -> None:
    model = FakeModelClient([reply("Hello Ada."), reply("Ada.")])
    agent = Agent(model)
    store = list((await agent.run("My name is Ada.")).new_items)

    result = await agent.run("What is my name?", history=store)

    assert roles(model.prompts[-1].items) == ["user", "assistant", "user"]
    assert result.new_items == (user_item("What is my name?"), assistant_item("Ada."))
    store.extend(result.new_items)
    assert roles(store) == ["user", "assistant", "user", "assistant"]


async def test_history_leaves_the_stored_list_alone() -> None:
    agent = Agent(FakeModelClient([reply("b")]))
    store = [user_item("a")]
    await agent.run("q", history=store)
    assert store == [user_item("a")]


async def test_a_list_input_is_all_new() -> None:
    # The other way to pass a conversation: as the input itself, every item of which is this run's.
    model = FakeModelClient([reply("b")])
    store = [user_item("a"), assistant_item("x")]
    result = await Agent(model).run([*store, user_item("q")])
    assert len(result.new_items) == 4


async def test_history_takes_message_values_and_streams_too() -> None:
    model = FakeModelClient([reply("ok")])
    agent = Agent(model)
    started: list[RunStarted] = []
    async with agent.stream(
        "and now?", history=[UserMessage("q"), AiMessage("a")], on=[(RunStarted, started.append)]
    ) as run:
        result = await run.wait()
    assert roles(model.prompts[0].items) == ["user", "assistant", "user"]
    assert roles(result.new_items) == ["user", "assistant"]
    assert started[0].input == "and now?"


async def test_history_with_an_unanswered_call_is_completed_in_new_items() -> None:
    # A store written by a process that died mid-tool-call: the synthetic result is listed as new, so
    # appending new_items makes the store whole again.
    model = FakeModelClient([reply("done")])
    history = [user_item("go"), function_call_item("c1", "f", "{}")]
    result = await Agent(model).run("again", history=history)
    assert roles(result.new_items) == ["function_call_output", "user", "assistant"]


async def test_history_uses_the_agents_memory_factory() -> None:
    model = FakeModelClient([reply("ok")])
    agent = Agent(model, memory=lambda: WindowedMemory(2))
    history = [user_item(f"q{i}") for i in range(5)]
    await agent.run("last", history=history)
    assert len(model.prompts[0].items) <= 2


async def test_sessions_refuse_history() -> None:
    agent = Agent(FakeModelClient([]))
    chat = agent.session()
    with pytest.raises(TypeError, match="session's memory"):
        await chat.run("q", history=[user_item("a")])
    with pytest.raises(TypeError, match="session's memory"):
        chat.stream("q", history=[user_item("a")])
    with pytest.raises(TypeError, match="session's memory"):
        await Agent(FakeModelClient([]), memory=InMemoryMemory()).run("q", history=[])


@pytest.mark.parametrize(
    ("history", "message"),
    [
        ("text", "list of conversation items"),
        (user_item("a"), "list of conversation items"),
        (3, "list of conversation items"),
        ([user_item("a"), "b"], "history item 1 is a str"),
    ],
)
async def test_history_is_checked_at_the_call(history: Any, message: str) -> None:
    agent = Agent(FakeModelClient([]))
    with pytest.raises(TypeError, match=message):
        await agent.run("q", history=history)


def test_run_sync_takes_history() -> None:
    model = FakeModelClient([reply("b")])
    result = run_sync(Agent(model), "q", history=[user_item("a")])
    assert roles(model.prompts[0].items) == ["user", "user"]
    assert len(result.new_items) == 2
    model2 = FakeModelClient([reply("c")])
    assert Agent(model2).run_sync("q", history=[user_item("a")]).output_text == "c"
