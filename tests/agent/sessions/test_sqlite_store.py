"""``SQLiteStore``: an append-only log per session, one transaction per append, safe for many sessions of
one event loop and for two processes on one file."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentflow import SQLiteStore
from agentflow.agent.items import function_call_item, function_call_output_item, user_item


def message(text: str) -> dict[str, Any]:
    return user_item(text)


async def test_append_load_and_clear_per_session() -> None:
    async with SQLiteStore(":memory:") as store:
        assert await store.load("a") == []
        await store.append("a", [message("a1"), message("a2")])
        await store.append("b", [message("b1")])
        await store.append("a", [message("a3")])
        await store.append("a", [])  # nothing to do

        assert await store.load("a") == [message("a1"), message("a2"), message("a3")]
        assert await store.load("b") == [message("b1")]
        await store.clear("a")
        assert await store.load("a") == []
        assert await store.load("b") == [message("b1")]


async def test_items_come_back_exactly() -> None:
    items = [
        user_item("héllo ✓"),
        function_call_item("call_1", "add", '{"a": 1,  "b": 2}'),
        function_call_output_item("call_1", "3"),
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA…", "summary": []},
        {"type": "function_call_output", "call_id": "c2", "output": "x", "extra": 2**70},
    ]
    async with SQLiteStore(":memory:") as store:
        await store.append("s", items)
        assert await store.load("s") == items


async def test_the_file_is_in_wal_mode_with_one_row_per_item(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    async with SQLiteStore(path, table="my_items") as store:
        await store.append("s", [message("one"), message("two")])
        await store.append("s", [message("three")])
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        rows = db.execute("SELECT session_id, seq, item FROM my_items ORDER BY seq").fetchall()
    db.close()
    assert [(sid, seq) for sid, seq, _ in rows] == [("s", 0), ("s", 1), ("s", 2)]
    assert rows[0][2] == b'{"type":"message","role":"user","content":[{"type":"input_text","text":"one"}]}'


async def test_an_append_that_fails_half_way_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    async with SQLiteStore(path) as store:
        await store.append("s", [message("kept")])
        with sqlite3.connect(path) as db:  # a trigger that refuses the second item of the next append
            db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON agentflow_session_items "
                "WHEN instr(CAST(NEW.item AS TEXT), 'boom') > 0 "
                "BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
        db.close()
        with pytest.raises(sqlite3.IntegrityError, match="refused"):
            await store.append("s", [message("first of two"), message("boom")])
        assert await store.load("s") == [message("kept")]
        with pytest.raises(TypeError):  # an item JSON cannot hold: refused before the transaction
            await store.append("s", [message("fine"), {"type": "x", "value": object()}])
        await store.append("s", [message("next")])
        assert await store.load("s") == [message("kept"), message("next")]


async def test_a_cancelled_append_finishes_its_transaction_in_its_thread(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    async with SQLiteStore(path) as store:
        await store.append("s", [message("first")])
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock: the append waits for it
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(store.append, "s", [message("second"), message("third")])
                await anyio.wait_all_tasks_blocked()  # the append waits on its thread
                tg.cancel_scope.cancel()
                other.execute("COMMIT")
        finally:
            other.close()
        # Whole (the thread was not abandoned), and no transaction left open: the store goes on.
        await store.append("s", [message("fourth")])
        texts = [item["content"][0]["text"] for item in await store.load("s")]
        assert texts == ["first", "second", "third", "fourth"]


async def test_two_processes_appending_to_one_file_never_interleave_an_append(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    writer = (
        "import sys, anyio\n"
        "from agentflow.agent.sqlite_store import SQLiteStore\n"
        "async def main():\n"
        "    async with SQLiteStore(sys.argv[1], timeout=30) as store:\n"
        "        for n in range(25):\n"
        "            await store.append('shared', [\n"
        "                {'type': 'note', 'who': sys.argv[2], 'n': n, 'part': p} for p in range(3)])\n"
        "anyio.run(main)\n"
    )
    async with SQLiteStore(path) as store:
        await store.load("shared")  # the table exists before the writers race to create it
        async with anyio.create_task_group() as tg:
            for who in ("A", "B"):
                tg.start_soon(anyio.run_process, [sys.executable, "-c", writer, str(path), who])
        items = await store.load("shared")

    assert len(items) == 150
    batches = [items[i : i + 3] for i in range(0, 150, 3)]
    for batch in batches:
        assert [(i["who"], i["n"]) for i in batch] == [(batch[0]["who"], batch[0]["n"])] * 3
        assert [i["part"] for i in batch] == [0, 1, 2]
    for who in ("A", "B"):
        assert [b[0]["n"] for b in batches if b[0]["who"] == who] == list(range(25))


async def test_a_second_store_on_the_file_and_a_reopened_one_see_the_items(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    store = SQLiteStore(path)
    await store.append("s", [message("one")])
    async with SQLiteStore(path) as second:
        assert await second.load("s") == [message("one")]
        await second.append("s", [message("two")])
    store.close()
    assert await store.load("s") == [message("one"), message("two")]  # opened again on use
    await store.aclose()
    store.close()  # twice is fine


def test_the_table_name_is_checked() -> None:
    with pytest.raises(ValueError, match="table"):
        SQLiteStore(":memory:", table="items; DROP TABLE x")
    assert repr(SQLiteStore(":memory:")) == "SQLiteStore(':memory:')"
