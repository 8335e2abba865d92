"""``SQLiteStore`` runs its calls on a thread limiter of its own: sync tools or other libraries holding every
token of anyio's default limiter never make a chat's load or save wait for them."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from agentflow import SQLiteStore
from agentflow.agent.agent import Agent
from agentflow.agent.items import user_item
from agentflow.testing.fake import FakeModelClient, reply


def message(text: str) -> dict[str, Any]:
    return user_item(text)


async def test_store_calls_do_not_wait_for_anyios_default_thread_limiter(tmp_path: Path) -> None:
    default = anyio.to_thread.current_default_thread_limiter()
    borrowers = [object() for _ in range(int(default.total_tokens))]
    for borrower in borrowers:  # every thread of the default limiter busy elsewhere
        default.acquire_on_behalf_of_nowait(borrower)
    try:
        with anyio.fail_after(10):
            store = SQLiteStore(tmp_path / "chats.db")
            await store.append("s", [message("one")], start=0)
            assert await store.load("s") == [message("one")]
            chat = Agent(FakeModelClient([reply("a1")])).session(session_id="s", store=store)
            await chat.run("q1")
            assert len(await store.load("s")) == 3
            await store.clear("s")
            await store.aclose()
    finally:
        for borrower in borrowers:
            default.release_on_behalf_of(borrower)


def test_a_store_shared_by_event_loops_in_several_threads(tmp_path: Path) -> None:
    # ``run_sync`` in a thread pool: a loop per thread, each with the store's limiter of its own.
    store = SQLiteStore(tmp_path / "chats.db")
    failures: list[BaseException] = []

    async def writes(thread: int) -> None:
        for n in range(20):
            await store.append(f"t{thread}", [message(str(n))], start=n)

    def in_a_thread(thread: int) -> None:
        try:
            anyio.run(writes, thread)
        except BaseException as exc:  # reported by the test below, not lost in the thread
            failures.append(exc)

    threads = [threading.Thread(target=in_a_thread, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    try:
        assert failures == []
        for t in range(4):
            assert anyio.run(store.load, f"t{t}") == [message(str(n)) for n in range(20)]
    finally:
        store.close()
