"""Store administration: the sessions a store holds, and erasing one whole (items and generation)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from session_store_support import texts

from agentflow import InMemoryStore, SQLiteStore
from agentflow.agent.agent import Agent
from agentflow.agent.items import user_item
from agentflow.testing.fake import FakeModelClient, reply


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[InMemoryStore | SQLiteStore]:
    if request.param == "memory":
        yield InMemoryStore()
    else:
        async with SQLiteStore(tmp_path / "chats.db") as sqlite:
            yield sqlite


async def test_session_ids_lists_the_sessions_that_hold_items(store: InMemoryStore | SQLiteStore) -> None:
    assert await store.session_ids() == []
    await store.append("user-b", [user_item("hi")])
    await store.append("user-a", [user_item("hi")])
    await store.append("user-c", [user_item("hi")])
    await store.clear("user-c")
    assert await store.session_ids() == ["user-a", "user-b"]


async def test_delete_erases_a_session_s_items_and_its_generation(store: InMemoryStore | SQLiteStore) -> None:
    agent = Agent(FakeModelClient([reply("a1"), reply("a2")]))
    await agent.session(session_id="alice@example.com", store=store).run("my card is 4111")
    await store.clear("alice@example.com")
    assert (await store.load("alice@example.com")).generation == 1  # clear keeps the generation

    await store.delete("alice@example.com")
    loaded = await store.load("alice@example.com")
    assert (loaded, loaded.generation) == ([], 0)
    assert await store.session_ids() == []
    if isinstance(store, SQLiteStore):
        rows = store._connect().execute(
            "SELECT count(*) FROM agentflow_session_items_generations WHERE session_id = ?",
            ("alice@example.com",),
        )
        assert rows.fetchone() == (0,)
    # The id is free for a new conversation.
    await agent.session(session_id="alice@example.com", store=store).run("hello again")
    assert texts(await store.load("alice@example.com")) == ["user:hello again", "assistant:a2"]
    await store.delete("nobody")  # an unknown id: nothing to do
