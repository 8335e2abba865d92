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
import contextlib
import weakref
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from .stored_turns import StoredTurns

__all__ = ["Turns", "held_by_a_run", "holding", "turn_keys", "turns_of"]


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


_HELD: ContextVar[tuple[weakref.ref[object], ...]] = ContextVar("agentflow_held_turns", default=())
"""What the runs in progress in this context hold (or wait for): weak references to the keys of their turns
(``turn_keys``). A run's tool calls run in copies of its context, so a tool sees what its run holds; weak,
because a copy may outlive the run a little (a callback the loop has not run yet) and must not keep a
finished request's conversation alive."""


def turn_keys(turns: Turns) -> tuple[object, ...]:
    """What ``turns`` takes: the memory's turn (its locks, shared by every session over the memory) and, for a
    stored session, its conversation's."""
    conversation = getattr(turns, "conversation", None)
    return (turns._locks,) if conversation is None else (turns._locks, conversation)


@contextlib.contextmanager
def holding(turns: Turns) -> Iterator[None]:
    """Mark ``turns`` as held by the run in progress in this context (and its tools) for the block."""
    token = _HELD.set((*_HELD.get(), *(weakref.ref(key) for key in turn_keys(turns))))
    try:
        yield
    finally:
        _HELD.reset(token)


def held_by_a_run(turns: Turns, conversation: object | None = None) -> bool:
    """Whether a run in progress in this context (a tool of it, say) holds ``turns``' memory turn, or
    ``conversation``: a session taking it here would wait for that run, which waits for the tool."""
    held = _HELD.get()
    if not held:
        return False
    for ref in held:
        key = ref()
        if key is not None and (key is turns._locks or (conversation is not None and key is conversation)):
            return True
    return False
