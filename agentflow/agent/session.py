"""``Session``: one conversation with an agent — a memory that persists across runs, one run at a time.

Runs of a session share its memory, so they take turns (``agentflow.agent.turns``): a second ``run()`` (or
``stream()``) waits until the first has ended, then sees its whole turn in memory. The turns belong to the
memory, not to the session: two sessions over one memory (a web app calling ``agent.session(store[id])`` per
request) take turns too, within one event loop. ``exclusive()`` takes a turn for your own code (editing or
saving the memory between runs), and ``rollback_on_failure`` puts a failed run's memory back inside its turn.
A session with a ``store`` keeps its conversation there too, loaded and saved at the boundaries of its turns
(``agentflow.agent.stored_turns``); sessions over one memory then share that too, so they must all name the
same store and ``session_id``. Sessions over different memories that name the same store and ``session_id``
(a session per request, two requests of one chat at once) take turns on that conversation as well, within one
event loop. Nothing here talks to a model; the session hands its memory and its turns to the agent's runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..result import OutputT
from .memory import Memory, check_memory
from .run_starter import RunStarter
from .stored_turns import StoredTurns, stored_turns_of
from .stores import SessionStore
from .turns import Turns, held_by_a_run, turns_of

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["Session"]

_EXCLUSIVE: set[tuple[object, asyncio.Task[Any]]] = set()
"""The turns held by ``Session.exclusive()`` blocks (a memory's ``Turns``, and a stored session's
``Conversation``), each with the task that holds it (entries leave with their block, so nothing here outlives
it)."""


class Session(RunStarter[OutputT]):
    """A conversation with ``agent`` whose ``memory`` persists across runs; concurrent runs wait their turn.

    Get one with ``agent.session()``; ``run``, ``stream`` and ``run_sync`` work as on the agent::

        chat = agent.session()
        await chat.run("My name is Ada.")
        result = await chat.run("What is my name?")   # the model sees the first turn

    A session keeps the conversation, not a run's ``deps``: pass them to each run (``chat.run(x,
    deps=...)``), as a web handler has them per request; they are never written to memory or a store.

    ``rollback_on_failure=True``: a run that fails (raises, ``RunFailed``) leaves memory as it found it, put
    back before the next run on the memory starts, so the same input can be sent again. Cancelled runs and
    runs that stop at a limit keep what they finished, as always. A memory whose methods are ``async`` is
    refused (``TypeError``): see ``Memory``.

    ``store`` (with ``session_id``, its key there): the conversation outlives the process. The session's first
    turn loads it into memory, and each run's items are appended as the run ends, before the next run starts
    (see ``SessionStore`` and ``agentflow.agent.stored_turns`` for what is stored when a run fails or is
    cancelled)::

        chat = agent.session(session_id="user-42", store=SQLiteStore("chats.db"))
        await chat.run("What did I ask yesterday?")   # the model sees the stored conversation

    A store that fails raises ``SessionStoreError``: before the run's model call when loading, as the run
    ends when saving (the run fails with it: ``RunFailed`` is its terminal event, and ``run_result`` its
    result; its items stay in memory and are saved with the next run's). Sessions over one memory share its
    stored conversation: a session naming another store or ``session_id`` than one already over the memory,
    or none (its runs would go unsaved), is refused with ``ValueError``. Sessions of the same store and
    ``session_id`` over other memories take turns with this one (in this event loop), each reading what the
    others saved; a writer no turn can see (another process) makes the later save a
    ``SessionConflictError``.
    """

    __slots__ = ("_stored", "_turns", "agent", "id", "memory", "rollback_on_failure", "store")

    def __init__(
        self,
        agent: Agent[OutputT],
        memory: Memory,
        session_id: str | None = None,
        *,
        rollback_on_failure: bool = False,
        store: SessionStore | None = None,
    ) -> None:
        check_memory(memory)
        self.agent = agent
        self.memory = memory
        """The conversation (shared by every run of the session)."""
        self.rollback_on_failure = bool(rollback_on_failure)
        """Whether a failed run's memory is put back as the run found it (before the next run starts)."""
        self.store = store
        """Where the conversation is kept between processes (``None``: in memory only)."""
        self._turns = turns_of(memory)
        self._stored: StoredTurns | None = None
        if store is not None:
            if isinstance(store, type) or not isinstance(store, SessionStore):
                what = f"the class {store.__name__}" if isinstance(store, type) else type(store).__name__
                raise TypeError(
                    f"store= takes a SessionStore instance (e.g. SQLiteStore('chats.db')), got {what}"
                )
            if not isinstance(session_id, str) or not session_id:
                raise TypeError(
                    "a session with a store needs session_id=..., the key of its conversation in the store "
                    "(e.g. the user's or the chat's id)"
                )
            self._stored = stored_turns_of(self._turns, store, session_id)
        else:
            self._check_unstored()
        self.id = session_id or f"session_{uuid.uuid4().hex}"

    def __repr__(self) -> str:
        stored = f", store={type(self.store).__name__}" if self.store is not None else ""
        return f"Session({self.id!r}, {len(self.memory.items)} items{stored})"

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

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[Memory]:
        """Hold the session's turn: the block waits for the run in progress on its memory, and no other run
        on it starts until the block ends (in this event loop). Yields the memory. A session with a ``store``
        holds its stored conversation's turn too: runs of sessions over other memories with the same store and
        ``session_id`` wait for the block as well.

        For code that reads or edits the memory between runs, such as saving it whole or undoing a turn::

            async with chat.exclusive() as memory:
                await db.save(conversation_id, dump_items(memory.items))

        A session with a ``store`` loads its conversation first, so the block sees it (``SessionStoreError``
        if that fails). Edits made in the block stay in memory: the store keeps what runs appended.

        A run of this session (or of one over the same stored conversation) started by the task inside the
        block would wait for the block to end, which waits for it: that is a ``RuntimeError`` at once instead.
        """
        async with self._turn():
            if self._stored is not None:
                await self._stored.load(self.memory)
            yield self.memory

    async def load(self) -> tuple[Any, ...]:
        """The conversation, read from the session's store first if no turn has read it yet (in the session's
        turn); e.g. to show a returning user their chat before they write. Runs load it themselves.

        ``SessionStoreError`` if the store fails. Without a store, the memory's items.
        """
        async with self.exclusive() as memory:
            return memory.items

    async def clear(self) -> None:
        """Forget the conversation, in the session's turn: the store's copy first (if the session has a
        store), then memory. ``SessionStoreError`` if the store fails; memory is then left as it was."""
        async with self._turn():
            if self._stored is not None:
                await self._stored.clear(self.memory)
            else:
                self.memory.clear()

    def _refuse_inside_its_run(self) -> None:
        """``RuntimeError`` when a run of this conversation (or memory) is in progress in this context: a tool
        of that run opening the same conversation again would wait for the run, which waits for the tool."""
        conversation = None if self._stored is None else self._stored.conversation
        if held_by_a_run(self._turns, conversation):
            raise RuntimeError(
                f"a run of this session's conversation ({self.id!r}) is in progress here, and this is one of "
                "its tools: a run, load(), clear() or exclusive() on the same memory or stored conversation "
                "would wait for that run, which waits for this tool; read what the tool needs before the "
                "run, or give the tool a session of its own (another session_id)"
            )

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """Hold the memory's turn in this task, and a stored session's conversation's (what ``exclusive()``,
        ``load()`` and ``clear()`` share)."""
        self._refuse_inside_its_run()
        lock = (self._stored if self._stored is not None else self._turns).lock()
        await lock.acquire()
        task = asyncio.current_task()
        assert task is not None  # a lock was acquired: we are in a task
        entries: list[tuple[object, asyncio.Task[Any]]] = [(self._turns, task)]
        if self._stored is not None:
            entries.append((self._stored.conversation, task))
        _EXCLUSIVE.update(entries)
        try:
            yield
        finally:
            _EXCLUSIVE.difference_update(entries)
            lock.release()

    def _check_unstored(self) -> None:
        """``ValueError`` for a session without a store over a memory whose conversation is kept in one: its
        runs would write to the conversation and never be saved (and the store's account would be wrong)."""
        stored = self._turns.stored_turns
        if stored is not None:
            raise ValueError(
                f"this memory's conversation is kept in a {type(stored.store).__name__} as session "
                f"{stored.session_id!r}: a session over it needs the same store and session_id, or its runs "
                "would go unsaved"
            )

    def _session_id(self) -> str | None:
        return self.id

    def _run_on(self) -> tuple[Agent[OutputT], Memory | None, Turns | None, bool]:
        if self._stored is None and self._turns.stored_turns is not None:
            self._check_unstored()  # built before a session with a store was, over the same memory
        if _EXCLUSIVE and _held_here(self._turns):
            raise RuntimeError(
                "this task holds the session's turn (session.exclusive()): a run started here would wait for "
                "the block, which waits for the run; start it after the block"
            )
        if _EXCLUSIVE and self._stored is not None and _held_here(self._stored.conversation):
            raise RuntimeError(
                f"this task holds the turn of conversation {self.id!r} (session.exclusive() of a session "
                "with the same store and session_id): a run started here would wait for the block, which "
                "waits for the run; start it after the block"
            )
        self._refuse_inside_its_run()
        # A stored session's runs take the same turns, with its loading and saving at their boundaries.
        turns = self._stored if self._stored is not None else self._turns
        return self.agent, self.memory, turns, self.rollback_on_failure


def _held_here(turns: object) -> bool:
    """Whether the current task holds ``turns`` (a memory's, or a stored conversation's) in a
    ``Session.exclusive()`` block."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop (``run_sync`` asks before it starts one)
        return False
    return (turns, task) in _EXCLUSIVE
