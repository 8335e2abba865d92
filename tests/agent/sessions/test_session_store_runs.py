"""Sessions with a store: the conversation is loaded on the session's first turn and each run's items are
appended as the run ends, through ``run()``, ``stream()``, ``run_sync()`` and a restart of the process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from session_store_support import ScriptedStore, texts

from agentflow import InMemoryStore, SessionStore, SQLiteStore
from agentflow.agent.agent import Agent
from agentflow.agent.items import system_item
from agentflow.agent.memory import InMemoryMemory, WindowedMemory
from agentflow.events import RunFinished
from agentflow.model.events import Event
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_the_first_run_loads_the_stored_conversation_and_the_model_sees_it() -> None:
    store = ScriptedStore()
    model = FakeModelClient([reply("Hello Ada."), reply("You are Ada.")])
    await Agent(model).session(session_id="user-42", store=store).run("I am Ada.")

    chat = Agent(model).session(session_id="user-42", store=store)
    assert chat.items == ()  # nothing read before the first turn
    result = await chat.run("Who am I?")

    assert result.output_text == "You are Ada."
    assert texts(model.prompts[1].items) == ["user:I am Ada.", "assistant:Hello Ada.", "user:Who am I?"]
    assert store.loads == 2  # once per session, not once per run


async def test_each_run_appends_its_new_items_once() -> None:
    store = ScriptedStore()
    chat = Agent(FakeModelClient([reply("a1"), reply("a2")])).session(session_id="s", store=store)

    first = await chat.run("q1")
    second = await chat.run("q2")

    assert store.appends == [2, 2]
    assert store.loads == 1
    stored = await store.load("s")
    assert stored == [*first.new_items, *second.new_items]
    assert stored == list(chat.items)


async def test_a_restarted_process_continues_the_conversation_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    script = [Reply(text="Nice to meet you, Ada."), Reply(text="Your name is Ada.")]
    async with ScriptedServer(script) as server:
        # The first process: one turn, then everything is dropped.
        async with Agent(OpenAIChatModel(base_url=server.base_url, model="m")) as agent:
            store = SQLiteStore(path)
            await agent.session(session_id="user-42", store=store).run("My name is Ada.")
            await store.aclose()
        # The next process: a new agent and a new store on the same file.
        async with (
            Agent(OpenAIChatModel(base_url=server.base_url, model="m")) as agent,
            SQLiteStore(path) as store,
        ):
            chat = agent.session(session_id="user-42", store=store)
            result = await chat.run("What is my name?")

    assert result.output_text == "Your name is Ada."
    messages = server.requests[1].body["messages"][1:]  # after the runtime's system prompt
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "My name is Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "What is my name?"),
    ]


async def test_two_stores_on_one_file_see_each_others_conversations(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    first, second = SQLiteStore(path), SQLiteStore(path)
    try:
        chat = Agent(FakeModelClient([reply("a1")])).session(session_id="s", store=first)
        await chat.run("q1")
        assert texts(await second.load("s")) == ["user:q1", "assistant:a1"]
        other = Agent(FakeModelClient([reply("b1")])).session(session_id="t", store=second)
        await other.run("p1")
        assert texts(await first.load("t")) == ["user:p1", "assistant:b1"]
        assert texts(await first.load("s")) == ["user:q1", "assistant:a1"]
    finally:
        first.close()
        second.close()


async def test_tool_calls_round_trip_exactly() -> None:
    store = InMemoryStore()
    arguments = '{"a": 1,  "b": 2}'  # spacing kept: arguments are the model's raw JSON text
    model = FakeModelClient(
        [reply(tool_calls=[("call_XyZ_1", "add", arguments)]), reply("3"), reply("still 3")]
    )
    agent = Agent(model, tools=[add])
    chat = agent.session(session_id="s", store=store)
    await chat.run("1+2?")

    stored = await store.load("s")
    assert stored == list(chat.items)
    call = stored[1]["tool_calls"][0]
    assert (call["id"], call["function"]["name"], call["function"]["arguments"]) == (
        "call_XyZ_1",
        "add",
        arguments,
    )
    assert stored[2] == {"type": "function_call_output", "call_id": "call_XyZ_1", "output": "3"}

    later = agent.session(session_id="s", store=store)
    await later.run("and again?")
    assert list(model.prompts[2].items[:4]) == stored  # the model gets the same conversation back


async def test_stream_saves_before_its_terminal_event() -> None:
    store = ScriptedStore()
    chat = Agent(FakeModelClient([reply("a1"), reply("a2")])).session(session_id="s", store=store)

    store.pause_appends = True
    seen: list[Event] = []
    loop_ended = anyio.Event()
    async with chat.stream("q1") as run:

        async def consume() -> None:
            async for event in run:
                seen.append(event)
            # The loop ends after the run's turn: the items are stored and the result is there.
            assert texts(await store.load("s")) == ["user:q1", "assistant:a1"]
            assert run.result.output_text == "a1"
            loop_ended.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await store.append_started.wait()
            await anyio.wait_all_tasks_blocked()
            assert not any(isinstance(event, RunFinished) for event in seen)  # it waits for the save
            assert not loop_ended.is_set()
            store.release.set()
    assert loop_ended.is_set()
    assert isinstance(seen[-1], RunFinished)
    store.pause_appends = False
    async with chat.stream("q2") as run:
        await run.wait()
    assert store.appends == [2, 2]
    assert texts(await store.load("s"))[2:] == ["user:q2", "assistant:a2"]


def test_run_sync_loads_and_saves(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    store = SQLiteStore(path)
    model = FakeModelClient([reply("a1"), reply("a2")])
    agent = Agent(model)

    agent.session(session_id="s", store=store).run_sync("q1")  # a loop of its own, then closed
    agent.session(session_id="s", store=store).run_sync("q2")
    store.close()

    assert texts(model.prompts[1].items) == ["user:q1", "assistant:a1", "user:q2"]
    reopened = SQLiteStore(path)
    try:
        assert texts(anyio.run(reopened.load, "s")) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2"]
    finally:
        reopened.close()


async def test_exclusive_and_load_see_the_stored_conversation_first() -> None:
    store = InMemoryStore()
    await Agent(FakeModelClient([reply("a1")])).session(session_id="s", store=store).run("q1")

    chat = Agent(FakeModelClient([])).session(session_id="s", store=store)
    async with chat.exclusive() as memory:
        assert texts(memory.items) == ["user:q1", "assistant:a1"]

    other = Agent(FakeModelClient([])).session(session_id="s", store=store)
    assert texts(await other.load()) == ["user:q1", "assistant:a1"]
    assert await other.load() == other.items  # loaded once: the second call reads memory


async def test_clear_forgets_the_conversation_in_the_store_and_in_memory() -> None:
    store = InMemoryStore()
    model = FakeModelClient([reply("a1"), reply("a2")])
    chat = Agent(model).session(session_id="s", store=store)
    await chat.run("q1")

    await chat.clear()
    assert chat.items == ()
    assert await store.load("s") == []
    await chat.run("q2")
    assert texts(model.prompts[1].items) == ["user:q2"]
    assert texts(await store.load("s")) == ["user:q2", "assistant:a2"]

    plain = Agent(FakeModelClient([reply("x")])).session()
    await plain.run("q")
    await plain.clear()  # a session without a store clears its memory
    assert plain.items == ()


async def test_a_seeded_memory_starts_a_new_conversation_and_a_stored_one_replaces_it() -> None:
    store = InMemoryStore()
    model = FakeModelClient([reply("a1"), reply("a2")])
    seeded = InMemoryMemory([system_item("Be brief.")])
    await Agent(model).session(seeded, session_id="s", store=store).run("q1")
    assert texts(await store.load("s")) == ["system:Be brief.", "user:q1", "assistant:a1"]

    again = Agent(model).session(InMemoryMemory([system_item("Be brief.")]), session_id="s", store=store)
    await again.run("q2")
    assert texts(again.items) == ["system:Be brief.", "user:q1", "assistant:a1", "user:q2", "assistant:a2"]
    assert texts(await store.load("s")) == texts(again.items)


async def test_a_windowed_memory_reloads_trimmed_and_the_store_keeps_everything() -> None:
    store = InMemoryStore()
    model = FakeModelClient([reply(f"a{i}") for i in range(4)])
    for i in range(3):
        await Agent(model).session(WindowedMemory(max_items=2), session_id="s", store=store).run(f"q{i}")
    assert len(await store.load("s")) == 6
    chat = Agent(model).session(WindowedMemory(max_items=2), session_id="s", store=store)
    await chat.run("q3")
    assert texts(model.prompts[3].items) == ["assistant:a2", "user:q3"]  # the window, not all six
    assert len(await store.load("s")) == 8


async def test_many_sessions_on_one_sqlite_store_at_once() -> None:
    async with SQLiteStore(":memory:") as store:

        async def chat(n: int) -> None:
            model = FakeModelClient([reply(f"{n}-a1"), reply(f"{n}-a2")])
            session = Agent(model).session(session_id=f"user-{n}", store=store)
            await session.run(f"{n}-q1")
            await session.run(f"{n}-q2")

        async with anyio.create_task_group() as tg:
            for n in range(20):
                tg.start_soon(chat, n)

        for n in range(20):
            assert texts(await store.load(f"user-{n}")) == [
                f"user:{n}-q1",
                f"assistant:{n}-a1",
                f"user:{n}-q2",
                f"assistant:{n}-a2",
            ]


def test_a_store_needs_a_session_id_and_an_instance() -> None:
    agent = Agent(FakeModelClient([]))
    with pytest.raises(TypeError, match="session_id"):
        agent.session(store=InMemoryStore())
    with pytest.raises(TypeError, match="session_id"):
        agent.session(session_id="", store=InMemoryStore())
    with pytest.raises(TypeError, match="the class InMemoryStore"):
        agent.session(session_id="s", store=InMemoryStore)  # type: ignore[arg-type]
    not_a_store: Any = object()
    with pytest.raises(TypeError, match="SessionStore instance"):
        agent.session(session_id="s", store=not_a_store)
    session = agent.session(session_id="s", store=InMemoryStore())
    assert session.id == "s"
    assert repr(session) == "Session('s', 0 items, store=InMemoryStore)"
    assert isinstance(SQLiteStore(":memory:"), SessionStore)
