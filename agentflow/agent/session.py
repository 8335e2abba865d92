"""``Session``: one conversation with an agent — a memory that persists across runs, one run at a time.

Runs of a session share its memory, so they take turns (``agentflow.agent.turns``): a second ``run()`` (or
``stream()``) waits until the first has ended, then sees its whole turn in memory. The turns belong to the
memory, not to the session: two sessions over one memory (a web app calling ``agent.session(store[id])`` per
request) take turns too, within one event loop. Nothing here talks to a model; the session hands its memory
and its turns to the agent's runs.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from ..result import OutputT
from .memory import Memory
from .run import RunStarter
from .turns import Turns, turns_of

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["Session"]


class Session(RunStarter[OutputT]):
    """A conversation with ``agent`` whose ``memory`` persists across runs; concurrent runs wait their turn.

    Get one with ``agent.session()``; ``run``, ``stream`` and ``run_sync`` work as on the agent::

        chat = agent.session()
        await chat.run("My name is Ada.")
        result = await chat.run("What is my name?")   # the model sees the first turn
    """

    __slots__ = ("_turns", "agent", "id", "memory")

    def __init__(self, agent: Agent[OutputT], memory: Memory, session_id: str | None = None) -> None:
        self.agent = agent
        self.memory = memory
        """The conversation (shared by every run of the session)."""
        self.id = session_id or f"session_{uuid.uuid4().hex}"
        self._turns = turns_of(memory)

    def __repr__(self) -> str:
        return f"Session({self.id!r}, {len(self.memory.items)} items)"

    @property
    def items(self) -> tuple[Any, ...]:
        """The conversation so far."""
        return self.memory.items

    @property
    def busy(self) -> bool:
        """Whether a run on this session's memory is in progress."""
        return self._turns.busy

    @property
    def waiting(self) -> int:
        """How many runs wait for the one in progress to end."""
        return self._turns.waiting

    def _run_on(self) -> tuple[Agent[OutputT], Memory | None, Turns | None]:
        return self.agent, self.memory, self._turns
