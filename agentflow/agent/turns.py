"""``Turns``: the runs on one memory take turns — the lock behind a session, one per event loop.

An ``anyio.Lock`` belongs to the event loop it is used in: a memory shared by runs in two loops (two threads
each calling ``session.run_sync``, which starts a loop per call) must not share one, or a release in one
thread would never wake the waiter in the other. So a memory's ``Turns`` keeps a lock per running loop:
runs in the same loop take turns, in the order they start; runs in different loops are not serialised.
``turns_of(memory)`` gives every session over one memory the same ``Turns``, and with it the same
``StoredTurns`` when the memory's conversation is kept in a store (``stored_turns``): one memory, one
conversation, one account of what the store holds.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from .stored_turns import StoredTurns

__all__ = ["Turns", "turns_of"]


class Turns:
    """The turn-taking of the runs on one memory (see the module docstring)."""

    __slots__ = ("__weakref__", "_locks", "stored_turns")

    def __init__(self) -> None:
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self.stored_turns: StoredTurns | None = None
        """The memory's conversation in a ``SessionStore``, once a session with a store was built over it
        (``agentflow.agent.stored_turns.stored_turns_of``); every session over the memory shares it."""

    def lock(self) -> anyio.Lock:
        """The lock of the running event loop (made on first use)."""
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = anyio.Lock()
        return lock

    @property
    def busy(self) -> bool:
        """Whether a run holds its turn, in any loop."""
        return any(lock.locked() for lock in self._locks.values())

    @property
    def waiting(self) -> int:
        """How many runs wait for their turn, in every loop."""
        return sum(lock.statistics().tasks_waiting for lock in self._locks.values())


_TURNS: weakref.WeakKeyDictionary[object, Turns] = weakref.WeakKeyDictionary()


def turns_of(memory: object) -> Turns:
    """The ``Turns`` every session over ``memory`` shares. A memory that cannot be hashed or weakly
    referenced gets one of its own per call (then only the runs of one session take turns)."""
    try:
        turns = _TURNS.get(memory)
        if turns is None:
            turns = _TURNS[memory] = Turns()
    except TypeError:
        turns = Turns()
    return turns
