"""``Session``: one conversation with an agent — a memory that persists across runs, one run at a time.

Runs of a session share its memory, so they are serialised by an ``anyio.Lock``: a second ``run()`` (or
``stream()``) waits until the first has ended, then sees its whole turn in memory. Nothing here talks to a
model; the session hands its memory and lock to the agent's runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from ..bus import Policy
from ..model.events import Event
from ..result import AgentResult
from .memory import Memory
from .run import AgentRun

if TYPE_CHECKING:
    from .agent import Agent, AgentInput

__all__ = ["Session"]


class Session:
    """A conversation with ``agent`` whose ``memory`` persists across runs; concurrent runs wait their turn.

    Get one with ``agent.session()``::

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
        self._lock = anyio.Lock()

    def __repr__(self) -> str:
        return f"Session({self.id!r}, {len(self.memory.items)} items)"

    @property
    def items(self) -> tuple[Any, ...]:
        """The conversation so far."""
        return self.memory.items

    @property
    def busy(self) -> bool:
        """Whether a run of this session is in progress."""
        return self._lock.locked()

    @property
    def waiting(self) -> int:
        """How many runs wait for the one in progress to end."""
        return self._lock.statistics().tasks_waiting

    def stream(
        self,
        input: AgentInput,
        *,
        types: Sequence[type[Event]] | type[Event] | None = None,
        buffer: int = 256,
        policy: Policy = "backpressure",
        run_id: str | None = None,
    ) -> AgentRun:
        """Like ``Agent.stream``, on this session's memory; the run starts once earlier runs have ended."""
        return self.agent._new_run(
            input,
            memory=self.memory,
            lock=self._lock,
            subscribe=True,
            types=types,
            buffer=buffer,
            policy=policy,
            run_id=run_id,
        )

    async def run(self, input: AgentInput, *, run_id: str | None = None) -> AgentResult:
        """Like ``Agent.run``, on this session's memory, after earlier runs of the session have ended."""
        run = self.agent._new_run(input, memory=self.memory, lock=self._lock, subscribe=False, run_id=run_id)
        async with run:
            return await run.wait()

    def run_sync(self, input: AgentInput) -> AgentResult:
        """``run`` for scripts: runs its own event loop (see ``agentflow.run_sync``)."""
        from .agent import run_sync

        return run_sync(self, input)
