"""``StoredTurns``: the turns of a session whose conversation is kept in a ``SessionStore``.

A run reads and writes its memory synchronously, between model calls (``Memory``); the store's I/O happens at
the boundaries of the run's turn, while it holds the memory's lock, and never in between:

- **before**: the first turn of the session (a run, ``session.exclusive()``, ``session.load()``) reads the
  stored items into memory. A stored conversation replaces what memory held; for a session the store does not
  know, what memory holds (a seeded system message, say) is the start of the conversation and is saved with
  the first run. A load that fails fails the run before its model is called (``SessionStoreError``);
  memory is untouched and the next turn loads again. What a store loads is checked once, here
  (``check_items``): a stored conversation no provider would take (an orphan tool output, an unknown item
  type…) fails the load, the ``HistoryError`` naming the item as its cause, instead of the model call.
- **after**: the items the run wrote (its ``new_items``) are appended as the run ends, right before its
  terminal event (``RunContext.before_terminal``), so a save that fails is the run's failure for every
  consumer: ``RunFailed(SessionStoreError)`` in its events, a failed span, ``run()`` raising. By outcome:
  a finished run, its items; a cancelled run or one stopped at a limit, what memory kept (valid: every tool
  call answered, synthetic ``cancelled`` results included); a failed run, what memory kept, or nothing when
  ``rollback_on_failure`` put memory back.

Items the store did not take (its append failed, or was cut off) stay in memory and in ``unsaved``; the next
append sends them first, with the next run's, in one call: since an append is all or none, nothing is lost
while the memory lives, and nothing is written twice. (A memory dropped after a failed save, as a session per
request drops its own, takes them with it: the run said so by failing.) Every append says where it goes
(``start``: the number of items the session knows the store holds, and, from a store that keeps them, the
generation it read: a ``StorePosition``), so an append that succeeded although the session was told it failed
is not repeated, and a conversation another process wrote to (or cleared, even when written again since to
the same length) in the meantime is not appended to blindly: that save fails with ``SessionConflictError``
(the run's items in it), and the next turn reads the stored conversation again. A session's own ``clear()``
moves the stored conversation to a generation it cannot know, so its next turn reads the conversation again.
The save is shielded from cancellation (a run cancelled from outside is saved too, and a cancel never tears
an append in two), and capped at ``_SAVE_SECONDS``, as the run's own ending is. The cap cuts only an append
that can be cancelled (an async driver's): ``SQLiteStore`` works in a worker thread that is never abandoned
(its transaction must end, committed or rolled back, before anything else uses the connection), so its
append takes as long as SQLite does, and what bounds it is the store's ``timeout`` (SQLite's busy timeout:
how long a write waits for another connection's lock before it fails).

One ``StoredTurns`` serves every session over one memory (``stored_turns_of``): what the store holds and what
is unsaved are facts about the memory's conversation, not about one ``Session`` object, so two sessions over
one memory (a session per request over a shared memory) take turns on one account of them. A memory holds
one stored conversation: a session over it with another store or ``session_id`` is refused (``ValueError``).

Sessions over *different* memories may hold the same stored conversation: a web app building
``agent.session(session_id=chat_id, store=store)`` per request, and two requests of one chat at once (two
browser tabs, a double submit). Within one event loop they take turns as well: a stored session's turn is
the memory's lock, then the conversation's (``Conversation``: one per store object and ``session_id``, kept
while a session over it lives), held from the load to the save. So the second request loads what the first
saved instead of failing its save with a conflict after its model call was paid for. A long-lived session
whose conversation another session of this process saved to (or cleared) since it read it reads it again at
the start of its next turn, unless it holds unsaved items (those would be lost: its save finds the conflict
instead). What no lock of this process can see — another process, another event loop (``run_sync`` in
threads), another store object on the same database, code calling the store directly — is still caught by
``start`` and is a ``SessionConflictError``.

The store is an append-only log of the runs' items, so memory may hold less than it (a ``WindowedMemory``
trims; it reloads trimmed). Edits made to memory in ``session.exclusive()`` stay in memory;
``session.clear()`` clears both.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import Any, Self

import anyio
from anyio import LockStatistics

from .item_checks import HistoryError, check_items
from .item_shapes import to_items
from .memory import Memory
from .stores import (
    SessionConflictError,
    SessionStore,
    SessionStoreError,
    StoreConflict,
    StoredItems,
    StoreOperation,
    StorePosition,
)
from .turns import Turns

__all__ = ["Conversation", "StoredTurns", "conversation_of", "stored_turns_of"]

_SAVE_SECONDS = 10.0
"""How long an append or a clear may take. They are shielded from cancellation (a cancel must not tear one
in two), so this bounds how long a cancelled run's ending waits for a store whose calls can be cancelled, as
``runtimes.base`` bounds its own; past it, the items stay unsaved and the next append takes them. A store
working in a thread it never abandons (``SQLiteStore``) is bounded by its own timeout instead."""


_VERSIONS = itertools.count(1)
"""Stamps for ``Conversation.version`` (``next()`` on it is atomic: sessions in other threads write too)."""


class Conversation:
    """One stored conversation (a store object and a ``session_id``) as this process sees it: the turns the
    sessions over it take, whatever their memory, and the version of the last write one of them made.

    ``conversation_of`` gives every session of the same store and id the same one, while any of them lives.
    """

    __slots__ = ("__weakref__", "turns", "version")

    def __init__(self) -> None:
        self.turns = Turns()
        """The conversation's lock per event loop, taken after the memory's (``StoredTurns.lock``)."""
        self.version = 0
        """Changed by every append or clear a session of this process made: a session that read the
        conversation at another version reads it again before its next turn."""


_CONVERSATIONS: weakref.WeakKeyDictionary[object, weakref.WeakValueDictionary[str, Conversation]] = (
    weakref.WeakKeyDictionary()
)
_CONVERSATIONS_LOCK = threading.Lock()  # sessions are built in any thread (run_sync in a thread pool)


_KEYED_CONVERSATIONS: dict[object, weakref.WeakValueDictionary[str, Conversation]] = {}
"""The same, for stores that name what they reach (``conversation_key``): one entry per database, not per
store object."""


def conversation_of(store: SessionStore, session_id: str) -> Conversation:
    """The ``Conversation`` of ``session_id`` in ``store``, shared by every session over it in this process.

    A store with a ``conversation_key`` (``SQLiteStore``: its file and table) shares it with every store of
    the same key, so a store object per request takes turns as one store does. Otherwise weak both ways: an
    entry lives while a session (its ``StoredTurns``) holds it and the store lives, so a conversation per
    request does not pile up. A store that cannot be hashed or weakly referenced gets a new one per call: its
    sessions over different memories do not take turns (their saves still find a conflict rather than
    interleave).
    """
    key = getattr(store, "conversation_key", None)
    with _CONVERSATIONS_LOCK:
        try:
            if key is not None:
                by_id = _KEYED_CONVERSATIONS.get(key)
                if by_id is None:
                    by_id = _KEYED_CONVERSATIONS[key] = weakref.WeakValueDictionary()
            else:
                by_id = _CONVERSATIONS.get(store)
                if by_id is None:
                    by_id = _CONVERSATIONS[store] = weakref.WeakValueDictionary()
        except TypeError:
            return Conversation()
        conversation = by_id.get(session_id)
        if conversation is None:
            conversation = by_id[session_id] = Conversation()
        return conversation


class _TurnLock(anyio.Lock):
    """A stored session's turn: the memory's lock, then its conversation's (both of the running loop), and
    released the other way round. Always in that order, and a memory holds one conversation, so two turns
    never wait for each other's second lock."""

    __slots__ = ("_conversation", "_memory")

    def __new__(cls, memory: anyio.Lock, conversation: anyio.Lock) -> Self:
        return object.__new__(cls)

    def __init__(self, memory: anyio.Lock, conversation: anyio.Lock) -> None:
        self._memory = memory
        self._conversation = conversation

    async def acquire(self) -> None:
        """Take the memory's lock, then the conversation's (cancelled in between: neither is held)."""
        await self._memory.acquire()
        try:
            await self._conversation.acquire()
        except BaseException:
            self._memory.release()
            raise

    def acquire_nowait(self) -> None:
        """Take both locks now, or neither (``anyio.WouldBlock``)."""
        self._memory.acquire_nowait()
        try:
            self._conversation.acquire_nowait()
        except BaseException:
            self._memory.release()
            raise

    def release(self) -> None:
        """Release the conversation, then the memory."""
        try:
            self._conversation.release()
        finally:
            self._memory.release()

    def locked(self) -> bool:
        """Whether a turn of this memory, or of another memory over the same conversation, is held."""
        return self._memory.locked() or self._conversation.locked()

    def statistics(self) -> LockStatistics:
        """The memory lock's holder, and the tasks waiting for either lock."""
        memory, conversation = self._memory.statistics(), self._conversation.statistics()
        return LockStatistics(self.locked(), memory.owner, memory.tasks_waiting + conversation.tasks_waiting)


class StoredTurns(Turns):
    """A session's turns (the memory's own locks, shared with every session over it, then the stored
    conversation's: ``lock``) that also load the conversation from ``store`` at the start of a turn when it
    has not read it yet (or another session of this process wrote to it since) and append each run's items
    at its end."""

    __slots__ = (
        "_loaded",
        "_seen",
        "_stale",
        "conversation",
        "generation",
        "session_id",
        "store",
        "stored",
        "unsaved",
    )

    def __init__(self, shared: Turns, store: SessionStore, session_id: str) -> None:
        super().__init__()
        # The same per-loop locks: runs of other sessions over this memory still take turns with ours.
        self._locks = shared._locks
        self.store = store
        self.session_id = session_id
        self.conversation = conversation_of(store, session_id)
        """The conversation's turns, shared with sessions over other memories (see the module docstring)."""
        self._loaded = False
        self._stale = False  # memory diverged from the store (a conflict): the next load replaces it whole
        self._seen = 0  # the conversation's version this memory holds
        self.stored = 0
        """How many items the store holds for the session, as far as the session knows (``start``)."""
        self.generation: int | None = None
        """The session's generation in the store when it was read (``StoredItems``); ``None`` before that, or
        from a store that keeps none."""
        self.unsaved: list[Any] = []
        """Items in memory that the store has not taken yet (sent first by the next append)."""

    def lock(self) -> anyio.Lock:
        """The turn of the running event loop: the memory's lock, then the conversation's."""
        return _TurnLock(super().lock(), self.conversation.turns.lock())

    async def load(self, memory: Memory) -> None:
        """Read the stored conversation into ``memory`` if this memory has not read it yet, or another session
        of this process wrote to it since (the caller holds the turn).

        Raises ``SessionStoreError`` (memory untouched) if the store fails or gives back something that is
        not a list of items.
        """
        if self._loaded and self._seen != self.conversation.version and not self.unsaved:
            # Another session of this process (over another memory) saved to it or cleared it: appending
            # where this memory thinks the store ends would be a conflict, so read it again. Unsaved items
            # would be lost by that: then the save reports the conflict, and hands them back.
            self._loaded = False
            self._stale = True
        if self._loaded:
            return
        version = self.conversation.version  # read before the load: a write during it is seen next turn
        try:
            stored = await self.store.load(self.session_id)
        except Exception as exc:
            raise self._error("load", exc) from exc
        try:
            items = _checked_items(stored)
        except (TypeError, ValueError) as exc:  # not items at all, or a conversation no provider takes
            raise self._error("load", exc) from exc
        generation = stored.generation if isinstance(stored, StoredItems) else None
        if items or self._stale:
            try:
                memory.restore(items)
            except Exception as exc:  # a memory refusing the items: nothing was changed
                raise self._error("load", exc) from exc
            self.unsaved = []
        else:
            self.unsaved = to_items(memory.items)  # a new conversation starts from what memory holds
        self.stored = len(items)
        self.generation = generation
        self._loaded = True
        self._stale = False
        self._seen = version

    async def save(self, items: Iterable[Any]) -> SessionStoreError | None:
        """Append the items a run wrote, after any left unsaved; the error instead of raising it (the caller
        is a run's ending). Nothing happens before the conversation was loaded: a run that never got that
        far wrote nothing."""
        if not self._loaded:
            return None
        pending = [*self.unsaved, *to_items(items)]
        if not pending:
            return None
        self.unsaved = pending  # until the store has taken them all
        start = (
            self.stored if self.generation is None else StorePosition(self.stored, generation=self.generation)
        )
        with anyio.move_on_after(_SAVE_SECONDS, shield=True) as scope:
            try:
                await self.store.append(self.session_id, tuple(pending), start=start)
            except StoreConflict as exc:
                # Memory no longer matches the store: read it again next turn, and hand back what is lost.
                self._loaded = False
                self._stale = True
                self.unsaved = []
                return self._conflict(exc, pending)
            except Exception as exc:
                return self._error("append", exc, unsaved=len(pending))
        if scope.cancelled_caught:
            return self._error("append", _timed_out(), unsaved=len(pending))
        self.stored += len(pending)
        self.unsaved = []
        self._wrote()
        return None

    async def clear(self, memory: Memory) -> None:
        """Clear the stored conversation, then ``memory`` (the caller holds the turn). ``SessionStoreError``
        if the store fails: memory is left as it was."""
        with anyio.move_on_after(_SAVE_SECONDS, shield=True) as scope:
            try:
                await self.store.clear(self.session_id)
            except Exception as exc:
                raise self._error("clear", exc) from exc
        if scope.cancelled_caught:
            cause = _timed_out()
            raise self._error("clear", cause) from cause
        memory.clear()
        self.unsaved = []
        self.stored = 0
        # Both are empty, but the store may have moved the session to a new generation, which only a load
        # tells: appending with the old one would be a conflict, and with none (the count alone) would miss
        # another writer clearing and rewriting it before this session saves. So the next turn reads it again
        # (not stale: memory the caller fills before then is the start of the conversation, as for a new one).
        self._loaded = False
        self.generation = None
        self._wrote()

    def _wrote(self) -> None:
        """This memory wrote to the conversation: a new version, which it holds and other memories do not."""
        version = next(_VERSIONS)
        self.conversation.version = self._seen = version

    def _conflict(self, cause: StoreConflict, items: list[Any]) -> SessionConflictError:
        error = SessionConflictError(
            f"saving session {self.session_id!r} to its {type(self.store).__name__} failed: {cause}. Nothing "
            "was saved, since this run answered an outdated conversation. Send its input again: the "
            "session's next turn reads the stored conversation first. The run's result is this error's "
            f"run_result, and the {len(items)} unsaved item(s) are its items",
            session_id=self.session_id,
            operation="append",
            items=items,
        )
        error.__cause__ = cause
        return error

    def _error(
        self, operation: StoreOperation, cause: BaseException, *, unsaved: int = 0
    ) -> SessionStoreError:
        store = type(self.store).__name__
        what = {"load": "loading", "append": "saving", "clear": "clearing"}[operation]
        where = {"load": "from", "append": "to", "clear": "in"}[operation]
        message = (
            f"{what} session {self.session_id!r} {where} its {store} failed: {type(cause).__name__}: {cause}"
        )
        if isinstance(cause, HistoryError):
            # Loading again gives the same conversation: say what to do about it.
            message += (
                " (memory is unchanged; the stored conversation itself is invalid: fix that item in the "
                "store, or clear the session)"
            )
        elif operation == "load":
            message += " (memory is unchanged; the next turn loads again)"
        elif operation == "append":
            message += (
                f"; {unsaved} item(s) stay unsaved in the session's memory, to be saved with the next run's "
                "(the run itself ended: its result is this error's run_result)"
            )
        error = SessionStoreError(message, session_id=self.session_id, operation=operation)
        error.__cause__ = cause
        return error


def stored_turns_of(shared: Turns, store: SessionStore, session_id: str) -> StoredTurns:
    """The ``StoredTurns`` of a memory's conversation (``shared``: the memory's ``turns_of``), kept in
    ``store`` under ``session_id``: made by the first session over the memory, shared by the next ones
    (``Turns.stored_turns``).

    ``ValueError`` if the memory's conversation is kept under another store or id already: one memory
    holding two conversations would save each one's turns into the other. A memory that cannot be weakly
    referenced has a ``Turns`` of its own per session, and so a ``StoredTurns`` of its own.
    """
    stored = shared.stored_turns
    if stored is None:
        stored = shared.stored_turns = StoredTurns(shared, store, session_id)
    elif stored.store is not store or stored.session_id != session_id:
        if stored.store is not store:
            clash = f"is kept in another store (its {type(stored.store).__name__}, as {stored.session_id!r})"
        else:
            clash = f"is session {stored.session_id!r} of this store"
        raise ValueError(
            f"cannot use this memory for session {session_id!r}: its conversation {clash} already. A memory "
            "holds one stored conversation: give each its own memory (sessions over one memory name the same "
            "store and session_id)"
        )
    return stored


def _checked_items(stored: object) -> tuple[Any, ...]:
    """What ``SessionStore.load`` gave back, as items: ``TypeError`` if it is not a list of items,
    ``HistoryError`` for a conversation no provider would take (``check_items``; the one check a loaded
    conversation gets: ``decode_items`` leaves it to this)."""
    if isinstance(stored, str | bytes | Mapping) or not isinstance(stored, Iterable):
        raise TypeError(f"load() must return a list of items, got {type(stored).__name__}")
    items = tuple(stored)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TypeError(f"load() gave a {type(item).__name__} as item {index}; items are JSON objects")
    check_items(items, source="stored")
    return items


def _timed_out() -> TimeoutError:
    return TimeoutError(f"the store did not answer within {_SAVE_SECONDS:g} s")
