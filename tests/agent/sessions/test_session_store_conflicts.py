"""Every append says where it goes (``start``): an append that succeeded although the session heard of a
failure is not written twice, and a conversation another process wrote to meanwhile is not appended to
blindly — that save is a ``SessionConflictError`` and the session reads the store again on its next turn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from session_store_support import OtherProcessStore, ScriptedStore, texts

from agentflow import InMemoryStore, SessionStore, SessionStoreError, SQLiteStore
from agentflow.agent.agent import Agent
from agentflow.agent.stores import SessionConflictError, StoreConflict
from agentflow.testing.fake import FakeModelClient, reply


def message(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": text}


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    if request.param == "memory":
        yield InMemoryStore()
    else:
        async with SQLiteStore(tmp_path / "chats.db") as sqlite:
            yield sqlite


async def test_an_append_at_the_wrong_place_is_a_conflict_and_writes_nothing(store: SessionStore) -> None:
    await store.append("s", [message("one")], start=0)
    with pytest.raises(StoreConflict) as caught:
        await store.append("s", [message("two")], start=0)
    assert (caught.value.expected, caught.value.found) == (0, 1)
    with pytest.raises(StoreConflict):
        await store.append("s", [message("two")], start=2)
    assert texts(await store.load("s")) == ["user:one"]


async def test_repeating_an_append_that_went_through_writes_nothing_twice(store: SessionStore) -> None:
    await store.append("s", [message("one"), message("two")], start=0)
    await store.append("s", [message("one"), message("two")], start=0)  # the reply was lost: sent again
    await store.append("s", [message("three")], start=2)
    assert texts(await store.load("s")) == ["user:one", "user:two", "user:three"]


async def test_a_repeated_append_with_more_after_it_writes_only_the_rest(store: SessionStore) -> None:
    await store.append("s", [message("one"), message("two")], start=0)
    # The caller heard of a failure and sends them again, with the next run's items after them.
    await store.append("s", [message("one"), message("two"), message("three")], start=0)
    with pytest.raises(StoreConflict):  # what the store holds after start is not these items
        await store.append("s", [message("other"), message("x"), message("y"), message("z")], start=0)
    assert texts(await store.load("s")) == ["user:one", "user:two", "user:three"]


async def test_without_start_an_append_goes_at_the_end(store: SessionStore) -> None:
    await store.append("s", [message("one")])
    await store.append("s", [message("one")])
    assert texts(await store.load("s")) == ["user:one", "user:one"]


async def test_a_save_whose_reply_was_lost_is_not_stored_twice() -> None:
    store = ScriptedStore()
    store.lose_replies = 1
    chat = Agent(FakeModelClient([reply("a1"), reply("a2")])).session(session_id="s", store=store)

    with pytest.raises(SessionStoreError, match="the reply was lost"):
        await chat.run("q1")
    await chat.run("q2")

    stored = await store.load("s")
    assert texts(stored) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2"]
    assert stored == list(chat.items)


async def test_two_processes_on_one_conversation_cannot_interleave_their_turns(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    async with SQLiteStore(path) as first_store, OtherProcessStore(path) as second_store:
        first = Agent(FakeModelClient([reply("a1"), reply("a3")])).session(session_id="s", store=first_store)
        second_model = FakeModelClient([reply("b2"), reply("b4")])
        second = Agent(second_model).session(session_id="s", store=second_store)
        assert await first.load() == ()
        assert await second.load() == ()  # both read the conversation before either wrote

        await first.run("q1")
        with pytest.raises(SessionConflictError, match=r"holds 2 item\(s\) in the store where 0") as caught:
            await second.run("q2")

        error = caught.value
        assert (error.operation, error.session_id) == ("append", "s")
        assert isinstance(error.__cause__, StoreConflict)
        assert error.run_result is not None
        assert error.run_result.output_text == "b2"
        assert texts(error.items) == ["user:q2", "assistant:b2"]  # what was not saved, handed back
        assert texts(await first_store.load("s")) == ["user:q1", "assistant:a1"]

        # The next turn reads the store again: it goes on from the first process's turn, not its own.
        await second.run("q3")
        assert texts(second_model.prompts[1].items) == ["user:q1", "assistant:a1", "user:q3"]
        assert texts(await first_store.load("s")) == ["user:q1", "assistant:a1", "user:q3", "assistant:b4"]


async def test_after_a_conflict_with_a_cleared_conversation_memory_starts_empty() -> None:
    store = InMemoryStore()
    chat_model = FakeModelClient([reply("a1"), reply("a2")])
    chat = Agent(chat_model).session(session_id="s", store=store)
    await chat.load()
    await store.append("s", [message("elsewhere")])  # another writer, which no session of ours can see
    with pytest.raises(SessionConflictError):
        await chat.run("q1")
    await store.clear("s")  # the conversation is forgotten in the store

    await chat.run("q2")
    assert texts(chat_model.prompts[1].items) == ["user:q2"]  # nothing of the conflicting turn is kept
    assert texts(await store.load("s")) == ["user:q2", "assistant:a2"]
