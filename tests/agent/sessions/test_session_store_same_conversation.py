"""Sessions over different memories that name the same store and ``session_id`` (a session per request, two
requests of one chat at once) take turns on the stored conversation within one event loop: each reads what
the others saved, so none fails its save with a conflict after its model call was paid for. What no turn of
this process can see (another process) is still a ``SessionConflictError``, one that says what happened and
what to do."""

from __future__ import annotations

import gc
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from session_store_support import OtherProcessStore, ScriptedStore, texts

from agentflow import InMemoryStore, SessionStore, SessionStoreError, SQLiteStore
from agentflow.agent.agent import Agent
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.agent.stores import SessionConflictError
from agentflow.testing.fake import FakeModelClient, reply


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    if request.param == "memory":
        yield InMemoryStore()
    else:
        async with SQLiteStore(tmp_path / "chats.db") as sqlite:
            yield sqlite


async def test_two_requests_on_one_conversation_take_turns_and_the_second_sees_the_first(
    store: SessionStore,
) -> None:
    called = anyio.Event()
    release = anyio.Event()

    async def slow(prompt: AgentPrompt) -> AgentModelResult:
        called.set()
        await release.wait()
        return reply("a1")

    model = FakeModelClient([slow, reply("a2")])
    agent = Agent(model)
    answers: dict[str, str] = {}

    async def request(question: str) -> None:
        # The documented web pattern: a session per request, over a fresh memory, keyed by the chat's id.
        chat = agent.session(session_id="chat-1", store=store)
        answers[question] = (await chat.run(question)).output_text

    async with anyio.create_task_group() as tg:
        tg.start_soon(request, "q1")
        await called.wait()
        tg.start_soon(request, "q2")  # a second tab, a double submit
        await anyio.wait_all_tasks_blocked()
        assert len(model.prompts) == 1  # the second request waits for the first one's turn, unloaded
        release.set()

    assert answers == {"q1": "a1", "q2": "a2"}  # both succeed
    assert texts(model.prompts[1].items) == ["user:q1", "assistant:a1", "user:q2"]
    assert texts(await store.load("chat-1")) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2"]


async def test_a_long_lived_session_reads_again_what_another_session_saved_or_cleared() -> None:
    store = InMemoryStore()
    tab_model = FakeModelClient([reply("a2"), reply("a3")])
    tab = Agent(tab_model).session(session_id="s", store=store)
    other = Agent(FakeModelClient([reply("a1")])).session(session_id="s", store=store)
    assert await tab.load() == ()

    await other.run("q1")
    await tab.run("q2")  # no conflict: the tab reads the conversation again first
    assert texts(tab_model.prompts[0].items) == ["user:q1", "assistant:a1", "user:q2"]
    assert texts(await store.load("s")) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2"]

    await other.clear()
    await tab.run("q3")
    assert texts(tab_model.prompts[1].items) == ["user:q3"]  # the cleared conversation, not the tab's copy
    assert texts(await store.load("s")) == ["user:q3", "assistant:a3"]


async def test_a_session_holding_unsaved_items_gets_the_conflict_and_its_items() -> None:
    store = ScriptedStore()
    tab = Agent(FakeModelClient([reply("a1"), reply("a3")])).session(session_id="s", store=store)
    store.fail_appends = 1
    with pytest.raises(SessionStoreError, match="stay unsaved"):
        await tab.run("q1")
    await Agent(FakeModelClient([reply("a2")])).session(session_id="s", store=store).run("q2")

    # Reading the store again would drop q1's turn: the save says so instead, and hands it back.
    with pytest.raises(SessionConflictError) as caught:
        await tab.run("q3")
    assert texts(caught.value.items) == ["user:q1", "assistant:a1", "user:q3", "assistant:a3"]
    assert texts(await store.load("s")) == ["user:q2", "assistant:a2"]


async def test_exclusive_holds_the_conversation_for_sessions_over_other_memories() -> None:
    store = InMemoryStore()
    model = FakeModelClient([reply("a1")])
    agent = Agent(model)
    holder = agent.session(session_id="s", store=store)
    other = agent.session(session_id="s", store=store)

    async with anyio.create_task_group() as tg, holder.exclusive():
        tg.start_soon(other.run, "q1")
        await anyio.wait_all_tasks_blocked()
        assert model.prompts == []  # waits for the block
        with pytest.raises(RuntimeError, match="holds the turn of conversation 's'"):
            await agent.session(session_id="s", store=store).run("q0")  # would wait for itself
    assert texts(await store.load("s")) == ["user:q1", "assistant:a1"]
    assert texts(await holder.load()) == ["user:q1", "assistant:a1"]  # the holder reads it again


async def test_other_session_ids_and_other_stores_do_not_wait() -> None:
    store = InMemoryStore()
    model = FakeModelClient([reply("b"), reply("c")])
    agent = Agent(model)
    async with agent.session(session_id="a", store=store).exclusive():
        await agent.session(session_id="b", store=store).run("qb")
        await agent.session(session_id="a", store=InMemoryStore()).run("qc")
    assert len(model.prompts) == 2


async def test_a_store_per_request_on_one_database_takes_turns(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    called, release = anyio.Event(), anyio.Event()

    async def slow(prompt: AgentPrompt) -> AgentModelResult:
        called.set()
        await release.wait()
        return reply("a1")

    model = FakeModelClient([slow, reply("a2")])
    agent = Agent(model)

    async def request(question: str) -> None:
        async with SQLiteStore(path) as store:  # the README's inline form, written in a handler
            await agent.session(session_id="chat-1", store=store).run(question)

    async with anyio.create_task_group() as tg:
        tg.start_soon(request, "q1")
        await called.wait()
        tg.start_soon(request, "q2")  # a double submit
        await anyio.wait_all_tasks_blocked()
        assert len(model.prompts) == 1  # the second waits for the first one's turn
        release.set()

    assert texts(model.prompts[1].items) == ["user:q1", "assistant:a1", "user:q2"]
    async with SQLiteStore(path) as store:
        assert texts(await store.load("chat-1")) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2"]
    assert SQLiteStore(path).conversation_key == SQLiteStore(str(path)).conversation_key
    assert SQLiteStore(path, table="other").conversation_key != SQLiteStore(path).conversation_key
    assert SQLiteStore(":memory:").conversation_key is None


async def test_a_conflict_with_another_writer_says_so_and_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    async with SQLiteStore(path) as first_store, OtherProcessStore(path) as second_store:
        first = Agent(FakeModelClient([reply("a1")])).session(session_id="s", store=first_store)
        second = Agent(FakeModelClient([reply("b2")])).session(session_id="s", store=second_store)
        await second.load()
        await first.run("q1")
        with pytest.raises(SessionConflictError) as caught:
            await second.run("q2")

    message = str(caught.value)
    assert "another writer saved to it" in message
    assert "another process wrote" not in message
    assert "Send its input again" in message
    assert caught.value.retryable is True
    assert caught.value.run_result is not None
    assert caught.value.run_result.output_text == "b2"
    assert texts(caught.value.items) == ["user:q2", "assistant:b2"]


async def test_the_conversations_of_finished_requests_and_dropped_stores_are_not_kept() -> None:
    store = InMemoryStore()
    agent = Agent(FakeModelClient([reply(f"a{n}") for n in range(50)]))
    kept = []
    for n in range(50):
        chat = agent.session(session_id=f"chat-{n}", store=store)
        await chat.run("q")
        assert chat._stored is not None
        kept.append(weakref.ref(chat._stored.conversation))
    del chat
    gc.collect()
    assert all(ref() is None for ref in kept)

    dropped = weakref.ref(store)
    del store
    gc.collect()
    assert dropped() is None


class _SlottedStore:
    """A store that cannot be weakly referenced: its sessions work, without taking turns across memories."""

    __slots__ = ("inner",)

    def __init__(self) -> None:
        self.inner = InMemoryStore()

    async def load(self, session_id: str) -> Sequence[Mapping[str, Any]]:
        return await self.inner.load(session_id)

    async def append(
        self, session_id: str, items: Sequence[Mapping[str, Any]], *, start: int | None = None
    ) -> None:
        await self.inner.append(session_id, items, start=start)

    async def clear(self, session_id: str) -> None:
        await self.inner.clear(session_id)


async def test_a_store_that_cannot_be_weakly_referenced_still_works() -> None:
    store = _SlottedStore()
    model = FakeModelClient([reply("a1"), reply("a2")])
    await Agent(model).session(session_id="s", store=store).run("q1")
    await Agent(model).session(session_id="s", store=store).run("q2")
    assert texts(await store.load("s")) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2"]
