"""A stored conversation cleared and written again by another writer is not the one a session read, even when
it holds as many items: the stores keep a generation per session that ``clear`` moves on, sessions hand back
the one they read, and such a save is a ``SessionConflictError``, not a turn appended to someone else's
conversation. Databases made before the generations table existed get it on first use."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from session_store_support import OtherProcessStore, texts

from agentflow import InMemoryStore, SessionStore, SQLiteStore
from agentflow.agent.agent import Agent
from agentflow.agent.items import assistant_item, user_item
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.stores import (
    SessionConflictError,
    StoreConflict,
    check_append,
    decode_items,
    encode_item,
)
from agentflow.testing.fake import FakeModelClient, reply


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    if request.param == "memory":
        yield InMemoryStore()
    else:
        async with SQLiteStore(tmp_path / "chats.db") as sqlite:
            yield sqlite


def old_schema_database(path: Path, items: Sequence[Mapping[str, Any]]) -> None:
    """A file as the store wrote it before it kept generations: the items table alone."""
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE agentflow_session_items (session_id TEXT NOT NULL, seq INTEGER NOT NULL, "
            "item BLOB NOT NULL, PRIMARY KEY (session_id, seq))"
        )
        db.executemany(
            "INSERT INTO agentflow_session_items VALUES ('u', ?, ?)",
            [(seq, encode_item(item)) for seq, item in enumerate(items)],
        )
    db.close()


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    db.close()
    return names


async def test_a_tab_whose_conversation_another_process_cleared_and_rewrote_cannot_save_onto_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chats.db"
    async with SQLiteStore(path) as tab1_store, OtherProcessStore(path) as tab2_store:  # as two processes
        tab1_model = FakeModelClient([reply("Hi Ada"), reply("You are Ada"), reply("You are Bob")])
        tab1 = Agent(tab1_model).session(InMemoryMemory(), session_id="u", store=tab1_store)
        tab2 = Agent(FakeModelClient([reply("Hi Bob")])).session(
            InMemoryMemory(), session_id="u", store=tab2_store
        )
        await tab1.run("I am Ada")
        await tab2.clear()  # "new chat" in another tab...
        await tab2.run("I am Bob")  # ...and a turn as long as tab 1's

        with pytest.raises(SessionConflictError) as caught:
            await tab1.run("Who am I?")
        assert texts(caught.value.items) == ["user:Who am I?", "assistant:You are Ada"]
        assert isinstance(caught.value.__cause__, StoreConflict)
        assert "was cleared in the store since it was read" in str(caught.value)
        assert texts(await tab1_store.load("u")) == ["user:I am Bob", "assistant:Hi Bob"]

        # Sent again, the question is answered in the conversation as it is now.
        await tab1.run("Who am I?")
        assert texts(tab1_model.prompts[-1].items) == ["user:I am Bob", "assistant:Hi Bob", "user:Who am I?"]
        assert texts(await tab2_store.load("u")) == [
            "user:I am Bob",
            "assistant:Hi Bob",
            "user:Who am I?",
            "assistant:You are Bob",
        ]


async def test_code_calling_the_store_to_clear_and_rewrite_a_conversation_is_a_conflict(
    store: SessionStore,
) -> None:
    chat = Agent(FakeModelClient([reply("Hi Ada"), reply("You are Ada")])).session(
        session_id="u", store=store
    )
    await chat.run("I am Ada")
    # Another writer that no session of this process can see: an admin tool, a migration script.
    await store.clear("u")
    await store.append("u", [user_item("I am Bob"), assistant_item("Hi Bob")], start=0)

    with pytest.raises(SessionConflictError):
        await chat.run("Who am I?")
    assert texts(await store.load("u")) == ["user:I am Bob", "assistant:Hi Bob"]


class _UnreferenceableStore:
    """A store wrapping an ``InMemoryStore`` that cannot be weakly referenced, so its sessions over different
    memories do not take turns in this process: each is another writer to the others."""

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


async def test_in_memory_sessions_that_do_not_take_turns_see_a_cleared_and_rewritten_conversation() -> None:
    store = _UnreferenceableStore()
    tab1 = Agent(FakeModelClient([reply("Hi Ada"), reply("You are Ada")])).session(
        session_id="u", store=store
    )
    tab2 = Agent(FakeModelClient([reply("Hi Bob")])).session(session_id="u", store=store)
    await tab1.run("I am Ada")
    await tab2.clear()
    await tab2.run("I am Bob")

    with pytest.raises(SessionConflictError):
        await tab1.run("Who am I?")
    assert texts(await store.load("u")) == ["user:I am Bob", "assistant:Hi Bob"]


async def test_after_its_own_clear_a_session_still_sees_another_writer_clear_and_rewrite(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chats.db"
    async with SQLiteStore(path) as tab1_store, OtherProcessStore(path) as tab2_store:
        tab1 = Agent(FakeModelClient([reply("Hi Eve"), reply("Hi Ada"), reply("You are Ada")])).session(
            session_id="u", store=tab1_store
        )
        tab2 = Agent(FakeModelClient([reply("Hi Bob")])).session(session_id="u", store=tab2_store)
        await tab1.run("I am Eve")
        await tab1.clear()  # the session's own clear: the store's new generation is read on the next turn
        await tab1.run("I am Ada")
        await tab2.clear()
        await tab2.run("I am Bob")

        with pytest.raises(SessionConflictError):
            await tab1.run("Who am I?")
        assert texts(await tab1_store.load("u")) == ["user:I am Bob", "assistant:Hi Bob"]


async def test_an_old_database_loads_then_tells_a_cleared_conversation_apart(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    old_schema_database(path, [user_item("I am Ada"), assistant_item("Hi Ada")])

    async with SQLiteStore(path) as tab1_store, OtherProcessStore(path) as tab2_store:
        tab1 = Agent(FakeModelClient([reply("You are Ada")])).session(session_id="u", store=tab1_store)
        tab2 = Agent(FakeModelClient([reply("Hi Bob")])).session(session_id="u", store=tab2_store)
        assert texts(await tab1.load()) == ["user:I am Ada", "assistant:Hi Ada"]  # the old rows, as they were
        await tab2.clear()
        await tab2.run("I am Bob")

        with pytest.raises(SessionConflictError):
            await tab1.run("Who am I?")
        assert texts(await tab1_store.load("u")) == ["user:I am Bob", "assistant:Hi Bob"]
    assert tables(path) == {"agentflow_session_items", "agentflow_session_items_generations"}


async def test_an_old_database_goes_on_where_it_was(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    old_schema_database(path, [user_item("q1"), assistant_item("a1")])
    async with SQLiteStore(path) as store:
        chat = Agent(FakeModelClient([reply("a2")])).session(session_id="u", store=store)
        await chat.run("q2")
        assert texts(await store.load("u")) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2"]
        assert (await store.load("u")).generation == 0  # type: ignore[attr-defined]


async def test_a_load_carries_the_generation_that_clear_moves_on_and_never_brings_back(
    store: SessionStore,
) -> None:
    assert (await store.load("u")).generation == 0  # type: ignore[attr-defined]
    await store.clear("u")  # nothing to forget: nothing a reader saw changes
    assert (await store.load("u")).generation == 0  # type: ignore[attr-defined]
    await store.append("u", [user_item("one")])
    await store.clear("u")
    assert (await store.load("u")).generation == 1  # type: ignore[attr-defined]
    await store.append("u", [user_item("two")])
    await store.clear("u")
    await store.clear("u")
    assert (await store.load("u")).generation == 2  # type: ignore[attr-defined]
    assert (await store.load("other")).generation == 0  # type: ignore[attr-defined]


async def test_a_session_that_read_an_empty_conversation_saves_after_a_clear_that_forgot_nothing(
    store: SessionStore,
) -> None:
    chat = Agent(FakeModelClient([reply("a1")])).session(session_id="u", store=store)
    assert await chat.load() == ()
    await store.clear("u")
    await chat.run("q1")
    assert texts(await store.load("u")) == ["user:q1", "assistant:a1"]


class _CountingStore:
    """A store of one's own written before generations: a plain list from ``load``, the count check alone."""

    __slots__ = ("__weakref__", "rows", "starts")

    def __init__(self) -> None:
        self.rows: dict[str, list[bytes]] = {}
        self.starts: list[object] = []

    async def load(self, session_id: str) -> list[dict[str, Any]]:
        return decode_items(self.rows.get(session_id, []))

    async def append(
        self, session_id: str, items: Sequence[Mapping[str, Any]], *, start: int | None = None
    ) -> None:
        self.starts.append(start)
        rows = [encode_item(item) for item in items]
        stored = self.rows.setdefault(session_id, [])
        have = check_append(session_id, rows, start, len(stored), lambda: stored[start or 0 :])
        stored.extend(rows[have:])

    async def clear(self, session_id: str) -> None:
        self.rows.pop(session_id, None)


async def test_a_store_without_generations_still_works_on_counts() -> None:
    store = _CountingStore()
    chat = Agent(FakeModelClient([reply("a1"), reply("a2"), reply("a3")])).session(
        session_id="u", store=store
    )
    await chat.run("q1")
    await chat.clear()
    await chat.run("q2")
    await chat.run("q3")
    assert texts(await store.load("u")) == ["user:q2", "assistant:a2", "user:q3", "assistant:a3"]
    assert [type(start) for start in store.starts] == [int, int, int]  # plain counts, as it always had
    assert store.starts == [0, 0, 2]


async def test_an_old_database_opened_read_only_still_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A replica that only shows history: it has no generations table, and cannot be given one.
    path = tmp_path / "chats.db"
    old_schema_database(path, [user_item("I am Ada"), assistant_item("Hi Ada")])
    with sqlite3.connect(path) as writer:
        writer.execute("PRAGMA journal_mode=WAL")
    connect = sqlite3.connect

    def read_only(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        return connect(f"file:{database}?mode=ro", *args, uri=True, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", read_only)
    async with SQLiteStore(path) as replica:
        assert texts(await replica.load("u")) == ["user:I am Ada", "assistant:Hi Ada"]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):  # writing fails as it always did
            await replica.append("u", [user_item("more")], start=2)
    assert tables(path) == {"agentflow_session_items"}
