"""A memory with ``async`` methods passes ``isinstance(m, Memory)`` (the protocol checks names only), but a
run never awaits its memory: such a memory is refused where it is given, not silently left empty."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.memory import InMemoryMemory, Memory, WindowedMemory, check_memory
from agentflow.agent.session import Session
from agentflow.testing.fake import FakeModelClient, reply


class DbMemory:
    """What a database-backed memory looks like when written with an async client."""

    def __init__(self) -> None:
        self.rows: list[Any] = []

    @property
    def items(self) -> tuple[Any, ...]:
        return tuple(self.rows)

    async def add(self, item: Any) -> None:
        self.rows.append(item)

    async def extend(self, items: Iterable[Any]) -> None:
        self.rows.extend(items)

    def clear(self) -> None:
        self.rows.clear()

    def snapshot(self) -> tuple[Any, ...]:
        return tuple(self.rows)

    async def restore(self, snapshot: Iterable[Any]) -> None:
        self.rows[:] = list(snapshot)


class AsyncItems(InMemoryMemory):
    """Sync writes, but reading the conversation needs an await."""

    @property
    async def items(self) -> tuple[Any, ...]:  # type: ignore[override]
        return ()


def _agent() -> Agent:
    return Agent(FakeModelClient([reply("a")]))


def test_the_protocol_alone_cannot_tell() -> None:
    assert isinstance(DbMemory(), Memory)  # why the explicit check is needed


def test_agent_session_refuses_an_async_memory() -> None:
    with pytest.raises(TypeError, match=r"DbMemory has async Memory methods \(add, extend, restore\)") as err:
        _agent().session(DbMemory())  # type: ignore[arg-type]
    # It says what to do instead.
    assert "InMemoryMemory" in str(err.value)
    assert "load_items" in str(err.value)
    assert "new_items" in str(err.value)


def test_agent_refuses_an_async_memory_instance() -> None:
    with pytest.raises(TypeError, match="async Memory methods"):
        Agent(FakeModelClient([]), memory=DbMemory())  # type: ignore[arg-type]


def test_agent_refuses_an_async_memory_class_as_factory() -> None:
    with pytest.raises(TypeError, match="async Memory methods"):
        Agent(FakeModelClient([]), memory=DbMemory)  # type: ignore[arg-type]


async def test_a_factory_making_async_memories_fails_the_run_before_it_starts() -> None:
    # A lambda cannot be looked into at construction: what it makes is checked when a run needs one.
    agent = Agent(FakeModelClient([reply("a")]), memory=lambda: DbMemory())  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="async Memory methods"):
        await agent.run("hi")
    with pytest.raises(TypeError, match="async Memory methods"):
        agent.session()


def test_session_refuses_an_async_memory() -> None:
    with pytest.raises(TypeError, match="async Memory methods"):
        Session(_agent(), DbMemory())  # type: ignore[arg-type]


def test_an_async_items_property_is_refused() -> None:
    with pytest.raises(TypeError, match=r"AsyncItems has async Memory methods \(items\)"):
        check_memory(AsyncItems())


async def test_sync_memories_are_accepted() -> None:
    class Custom(InMemoryMemory):
        pass

    for memory in (InMemoryMemory(), WindowedMemory(4), Custom()):
        check_memory(memory)
    agent = Agent(FakeModelClient([reply("a")]), memory=lambda: Custom())
    assert (await agent.run("hi")).output_text == "a"
