"""Stores that misbehave on cue, for the tests of sessions with a ``SessionStore``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import anyio

from agentflow.agent.items import tool_call_ids, tool_output_call_id
from agentflow.agent.sqlite_store import SQLiteStore
from agentflow.agent.stores import InMemoryStore


class OtherProcessStore(SQLiteStore):
    """A ``SQLiteStore`` as another process's is to this one: no turn of this process reaches its sessions
    (two ``SQLiteStore`` objects on one file take turns, see ``conversation_key``)."""

    __slots__ = ()
    conversation_key = None


def texts(items: Iterable[Any]) -> list[str]:
    """Each item in short: ``role:text`` for a message, its type otherwise."""
    out = []
    for item in items:
        if item.get("type") == "message" and item.get("content"):
            content = item["content"]
            text = content if isinstance(content, str) else content[0]["text"]
            out.append(f"{item['role']}:{text}")
        else:
            out.append(str(item.get("type")))
    return out


def assert_memory_valid(items: Sequence[Any]) -> None:
    """Every tool call has exactly one output after it, and every output answers a call."""
    open_calls: list[str] = []
    answered: set[str] = set()
    for item in items:
        open_calls.extend(tool_call_ids(item))
        output = tool_output_call_id(item)
        if output is not None:
            assert output in open_calls, item
            assert output not in answered, item
            answered.add(output)
    assert set(open_calls) == answered


class ScriptedStore(InMemoryStore):
    """An ``InMemoryStore`` whose calls can fail (the next ``fail_loads`` loads, ``fail_appends`` appends),
    pause (``append`` waits for ``release`` once ``pause_appends`` is set) and be counted."""

    __slots__ = (
        "append_started",
        "appends",
        "fail_appends",
        "fail_loads",
        "loads",
        "lose_replies",
        "pause_appends",
        "release",
    )

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0
        self.appends: list[int] = []  # the item count of every append the store took
        self.fail_loads = 0
        self.fail_appends = 0
        self.lose_replies = 0
        self.pause_appends = False
        self.append_started = anyio.Event()
        self.release = anyio.Event()

    async def load(self, session_id: str) -> list[dict[str, Any]]:
        self.loads += 1
        if self.fail_loads:
            self.fail_loads -= 1
            raise ConnectionError("the store is down")
        return await super().load(session_id)

    async def append(
        self, session_id: str, items: Sequence[Mapping[str, Any]], *, start: int | None = None
    ) -> None:
        if self.pause_appends:
            self.append_started.set()
            await self.release.wait()
        if self.fail_appends:
            self.fail_appends -= 1
            raise ConnectionError("the store is down")
        await super().append(session_id, items, start=start)
        self.appends.append(len(items))
        if self.lose_replies:
            # Written, but the session hears of a failure (a dropped reply, a timeout after the commit).
            self.lose_replies -= 1
            raise ConnectionError("the reply was lost")
