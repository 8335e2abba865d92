"""``Session``: one conversation with an agent — a memory that persists across runs, one run at a time.

Runs of a session share its memory, so they are serialised by an ``anyio.Lock``: a second ``run()`` (or
``stream()``) waits until the first has ended, then sees its whole turn in memory. The lock belongs to the
memory, not to the session: two sessions over one memory (a web app calling ``agent.session(store[id])`` per
request) take turns too. Nothing here talks to a model; the session hands its memory and lock to the agent's
runs.
"""

from __future__ import annotations

import uuid
import weakref
from typing import TYPE_CHECKING, Any

import anyio

from .memory import Memory
from .run import RunStarter

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["Session", "memory_lock"]

_LOCKS: weakref.WeakKeyDictionary[Memory, anyio.Lock] = weakref.WeakKeyDictionary()


def memory_lock(memory: Memory) -> anyio.Lock:
    """The lock every session over ``memory`` shares, so the runs on one memory take turns whichever session
    started them. A memory that cannot be hashed or weakly referenced gets a lock per session.
    """
    try:
        lock = _LOCKS.get(memory)
        if lock is None:
            lock = _LOCKS[memory] = anyio.Lock()
    except TypeError:
        lock = anyio.Lock()
    return lock


class Session(RunStarter):
    """A conversation with ``agent`` whose ``memory`` persists across runs; concurrent runs wait their turn.

    Get one with ``agent.session()``; ``run``, ``stream`` and ``run_sync`` work as on the agent::

        chat = agent.session()
        await chat.run("My name is Ada.")
        result = await chat.run("What is my name?")   # the model sees the first turn
    """

    __slots__ = ("_lock", "agent", "id", "memory")

    def __init__(self, agent: Agent, memory: Memory, session_id: str | None = None) -> None:
        self.agent = agent
        self.memory = memory
        """The conversation (shared by every run of the session)."""
        self.id = session_id or f"session_{uuid.uuid4().hex}"
        self._lock = memory_lock(memory)

    def __repr__(self) -> str:
        return f"Session({self.id!r}, {len(self.memory.items)} items)"

    @property
    def items(self) -> tuple[Any, ...]:
        """The conversation so far."""
        return self.memory.items

    @property
    def busy(self) -> bool:
        """Whether a run on this session's memory is in progress."""
        return self._lock.locked()

    @property
    def waiting(self) -> int:
        """How many runs wait for the one in progress to end."""
        return self._lock.statistics().tasks_waiting

    def _run_on(self) -> tuple[Agent, Memory | None, anyio.Lock | None]:
        return self.agent, self.memory, self._lock
