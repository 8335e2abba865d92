"""Where a session's conversation outlives the process: the ``SessionStore`` protocol, ``InMemoryStore`` (its
reference implementation) and ``SessionStoreError``.

A store keeps, per session id, an append-only log of conversation items. Three operations, all async:

- ``load(session_id)``: every item of the session, oldest first (``[]`` for a session it does not know);
- ``append(session_id, items, start=n)``: add items at the end, **all or none** — a failure or a
  cancellation must not leave some of them written. ``start`` is how many items the caller believes the
  store holds (``None``: no check), and, from a caller that read a generation, which generation it counted
  them in (a ``StorePosition``). The store appends when it holds exactly ``start`` items of that generation;
  when what it holds after ``start`` is the first of these very items, an earlier append of them went
  through although the caller heard of a failure (a dropped reply, a timeout after the commit), and it
  writes only the rest; otherwise the conversation changed since the caller read it (another writer saved
  to it, or cleared it) and it raises ``StoreConflict``, writing nothing (``check_append`` decides, for
  every store);
- ``clear(session_id)``: forget the session, and move it to a new generation (if it had items).

Why generations. A count alone cannot tell the conversation a caller read from one cleared and written
again since to the same length (another tab pressed "new chat" and said as much): appending there would
put the caller's turn after someone else's conversation. So a store keeps, per session, a ``generation``: a
number that ``clear`` changes whenever it forgets items and that never comes back (a cleared session's
number is kept, not deleted). ``load`` returns the items as ``StoredItems`` (a list that also carries their
``generation``), the session hands it back with its next append (``StorePosition``: an int that also
carries it), and ``check_append`` refuses a ``start`` of another generation. Within a generation the log
only grows, so the generation and the count name what the caller read exactly. Both are plain values to
code that does not know them (a list, an int), so a store that keeps no generations (its ``load`` returns a
plain list, its ``append`` passes no ``generation`` to ``check_append``) works as before, with the count
check alone, and so does a wrapper that hands ``load``'s answer and ``start`` on.

Why these three and no more. They are what every store does in one cheap, atomic statement: an ordered range
read, a multi-row insert in one transaction, a delete (SQLite and Postgres: ``SELECT … ORDER BY seq``,
``INSERT`` in a transaction, ``DELETE``; Redis: ``LRANGE 0 -1``, one ``RPUSH`` of many values, ``DEL``). The
session needs nothing else, because it appends only at the end of a run's turn (see
``agentflow.agent.stored_turns``): a run that fails with ``rollback_on_failure`` is undone in memory before
anything reaches the store, a cancelled run has completed its memory (every call answered) before it is
appended, and a run that never got to the end of its turn appended nothing. There is no "replace", "pop" or
"update": rewriting history in place is what a crash half-way through would corrupt. Items the store could not
take stay in the session's memory and go with the next append, so an ``append`` that fails cleanly (all or
none) loses nothing, and ``start`` makes one that succeeded unbeknown to the session harmless to repeat:
nothing is written twice. ``start`` (with its generation) is also optimistic versioning: two writers running
one conversation at once cannot interleave their turns, the second to save gets a conflict instead. Within one
process and event loop, sessions of the same store object and ``session_id`` take turns instead, from load to
save, so they never conflict with each other (``agentflow.agent.stored_turns``); that needs a store that can
be hashed and weakly referenced, as a plain class is. Other processes, event loops and store objects are other
writers.

Items are the memory's JSON-ready dicts. A store keeps each one in the form ``dump_items`` writes
(``encode_item``) and reads them back as ``load_items`` does (``decode_items``), so a conversation comes back
exactly: call ids, raw argument strings, reasoning fields, integers of any size. A store raises whatever its
driver raises; the session wraps it in ``SessionStoreError``. The session checks what a store loads
(``agentflow.agent.item_checks.check_items``: a stored conversation no provider would take fails the load,
naming the item), so a store need not.

This module does no I/O of its own and imports no database driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, runtime_checkable

import anyio.lowlevel

from .. import exact_json
from .item_checks import HistoryError
from .item_json import dump_items, load_items

if TYPE_CHECKING:
    from ..result import AgentResult

__all__ = [
    "InMemoryStore",
    "SessionConflictError",
    "SessionStore",
    "SessionStoreError",
    "StoreConflict",
    "StorePosition",
    "StoredItems",
    "check_append",
    "decode_items",
    "encode_item",
]

StoreOperation = Literal["load", "append", "clear"]


@runtime_checkable
class SessionStore(Protocol):
    """Keeps sessions' conversations: ``agent.session(session_id="user-42", store=SQLiteStore("chats.db"))``.

    The session loads the stored items into its memory before its first run (or ``session.load()``) and
    appends each run's items at the end of the run's turn. Implement the three methods to keep conversations
    anywhere (see the module docstring for what each must guarantee); ``InMemoryStore`` is the reference.

    A store of your own should keep a generation per session, as ``InMemoryStore`` does: ``clear`` gives a
    session it forgets items of a new number (one it never had: keep the cleared session's counter), ``load``
    returns ``StoredItems(items, generation=...)``, and ``append`` passes the session's generation to
    ``check_append``, inside its transaction. A store that does not still works, but a conversation cleared
    and written again to the same length by another writer is then appended to as if it were the one the
    session read.

    Sessions of one event loop over the same stored conversation take turns (the second loads what the
    first saved) when they use the same store object. A store whose separate objects reach the same
    conversations (a database file) may say so with a ``conversation_key`` attribute: a hashable value equal
    for all of them (``SQLiteStore``: its file's real path and its table), so that a store built per request
    takes turns too, instead of failing the second save with ``SessionConflictError``.
    """

    async def load(self, session_id: str) -> Sequence[Mapping[str, Any]]:
        """Every item stored for ``session_id``, oldest first; empty for an unknown session. As
        ``StoredItems`` from a store that keeps generations."""
        ...

    async def append(
        self, session_id: str, items: Sequence[Mapping[str, Any]], *, start: int | None = None
    ) -> None:
        """Add ``items`` after the session's last ones, all of them or none (even when cancelled). With
        ``start``, only where the session holds ``start`` items, of ``start``'s generation if it is a
        ``StorePosition`` (``check_append``: ``StoreConflict`` else)."""
        ...

    async def clear(self, session_id: str) -> None:
        """Forget every item of ``session_id`` (and move it to a new generation, if it had any)."""
        ...


class StoredItems(list[dict[str, Any]]):
    """What ``SessionStore.load`` gives back from a store that keeps generations: the items, and the
    ``generation`` of the session they belong to (see the module docstring). Equal to a list of the same
    items, whatever the generation.

    >>> items = StoredItems([{"type": "message", "role": "user", "content": "hi"}], generation=2)
    >>> items, items.generation
    ([{'type': 'message', 'role': 'user', 'content': 'hi'}], 2)
    """

    # A list rather than a pair: every caller of ``load`` keeps working, and a store wrapping another one
    # that hands its answer on passes the generation along without knowing of it.
    __slots__ = ("generation",)

    def __init__(self, items: Iterable[dict[str, Any]] = (), *, generation: int) -> None:
        super().__init__(items)
        self.generation = generation
        """The session's generation in the store when these items were read."""


class StorePosition(int):
    """``start`` for ``SessionStore.append`` from a session that read a generation: how many items it
    believes the store holds (the int itself), and in which ``generation`` (``StoredItems.generation``).

    >>> start = StorePosition(4, generation=2)
    >>> start == 4, start.generation, start
    (True, 2, StorePosition(4, generation=2))
    """

    # An int rather than a pair: a store that keeps no generations reads it as the count it always had, and
    # a store wrapping another one hands it on unchanged. (An int subclass cannot have ``__slots__``.)
    generation: int

    def __new__(cls, count: int, *, generation: int) -> Self:
        position = super().__new__(cls, count)
        position.generation = generation
        return position

    def __repr__(self) -> str:
        return f"StorePosition({int(self)}, generation={self.generation})"

    def __str__(self) -> str:
        # int's own str would be the repr above; messages and SQL parameters want the number.
        return int.__repr__(self)


class SessionStoreError(Exception):
    """A session's store failed to load, save or clear its conversation; the store's own error is the cause.

    - ``operation="load"``: the run failed before its model was called (``run_result`` is its empty partial
      result); memory is untouched and the next run loads again.
    - ``operation="append"``: the run itself ended (finished, cancelled, stopped at a limit), then failed
      with this error as the save came before its terminal event (``RunFailed``); ``run_result`` is the
      run's own result, and its items stay in the session's memory, saved with the next run's.
    - ``operation="clear"``: nothing was cleared in memory.

    >>> err = SessionStoreError("the store is down", session_id="user-42", operation="append")
    >>> err.session_id, err.operation, err.run_result
    ('user-42', 'append', None)
    """

    retryable: bool | None = None
    """Whether sending the run's input again can succeed: ``None`` (it depends on the store's failure, and
    after a failed save a session that lives on still holds the run's items); ``True`` for a conflict."""

    def __init__(
        self,
        message: str,
        *,
        session_id: str | None = None,
        operation: StoreOperation | None = None,
        run_result: AgentResult | None = None,
    ) -> None:
        super().__init__(message)
        self.session_id = session_id
        """The session whose conversation it was."""
        self.operation = operation
        """What failed: ``"load"``, ``"append"`` or ``"clear"``."""
        self.run_result = run_result
        """The result of the run whose conversation was being loaded or saved, if any."""


class SessionConflictError(SessionStoreError):
    """A session's save found the stored conversation changed since the session read it: another writer saved
    to it (another process, a session in another event loop or over another store object on the same
    database, code calling the store itself; sessions of one store object in one event loop take turns
    instead). Nothing was saved, and the run fails with this error: it answered a conversation that is no
    longer the stored one.

    ``run_result`` is the run's result, and ``items`` what could not be saved (that run's items, and any left
    unsaved before); the session reads the stored conversation again on its next turn, so its memory no
    longer holds them. To recover, send the run's input again (``retryable`` is true): the model then
    answers the conversation as it is now. Appending ``items`` yourself would put a turn answered without
    the other writer's turn after it.
    """

    retryable = True
    """Sending the run's input again can succeed: the next turn reads the stored conversation first."""

    def __init__(self, message: str, *, items: Sequence[Any] = (), **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.items = tuple(items)
        """The items that were not saved."""


class StoreConflict(Exception):
    """Raised by ``SessionStore.append`` when the session holds ``found`` items, not the ``expected``
    ``start`` (nor the same items appended already), or is ``cleared``: of another generation than
    ``start``'s. Nothing was written."""

    def __init__(self, session_id: str, *, expected: int, found: int, cleared: bool = False) -> None:
        if cleared:
            message = (
                f"session {session_id!r} was cleared in the store since it was read (it holds {found} "
                f"item(s) of a new generation, where {expected} of the old one were expected): another "
                "writer cleared the conversation, and may have written it again (another process, event loop "
                "or store object, or code calling the store)"
            )
        else:
            message = (
                f"session {session_id!r} holds {found} item(s) in the store where {expected} were expected: "
                "the conversation changed since it was read (another writer saved to it: another process, "
                "event loop or store object, or code calling the store)"
            )
        super().__init__(message)
        self.session_id = session_id
        self.expected = expected
        self.found = found
        self.cleared = cleared
        """Whether the session was cleared since it was read (its generation changed)."""


def check_append(
    session_id: str,
    rows: Sequence[bytes],
    start: int | None,
    found: int,
    tail: Callable[[], Sequence[bytes]],
    *,
    generation: int | None = None,
) -> int:
    """How many of ``rows`` (``encode_item`` bytes, to go at ``start``) a session holding ``found`` items has
    already: write the rest. ``0`` when it holds exactly ``start`` (or ``start`` is ``None``); more when an
    earlier append of the same items went through unbeknown to the caller (``tail()`` gives the stored rows
    from ``start`` on, and they must be the first of ``rows``); ``StoreConflict`` otherwise. For stores to
    call inside their transaction.

    ``generation`` is the session's generation in a store that keeps them: a ``StorePosition`` ``start`` of
    another one is a conflict, however many items the session holds (it was cleared since the caller read
    it). A plain int ``start`` (a caller that read no generation) is checked by its count alone.

    >>> check_append("s", [b"{}"], 2, 2, lambda: [])
    0
    >>> check_append("s", [b'{"a":1}', b'{"b":2}'], 2, 3, lambda: [b'{"a":1}'])
    1
    >>> check_append("s", [b"{}"], StorePosition(2, generation=0), 2, lambda: [], generation=1)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    agentflow.agent.stores.StoreConflict: session 's' was cleared in the store since it was read ...
    """
    if start is None:
        return 0
    if isinstance(start, StorePosition) and generation is not None and start.generation != generation:
        raise StoreConflict(session_id, expected=int(start), found=found, cleared=True)
    if found == start:
        return 0
    have = found - start
    if 0 < have <= len(rows) and list(tail()) == list(rows[:have]):
        return have
    raise StoreConflict(session_id, expected=int(start), found=found)


def encode_item(item: Any) -> bytes:
    """One item as JSON bytes, exactly as ``dump_items`` writes it inside its array (a row of a store).

    >>> encode_item({"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a":1}'})
    b'{"type":"function_call","call_id":"c1","name":"add","arguments":"{\\\\"a\\\\":1}"}'
    """
    # dump_items writes compact JSON: its array of one item is "[", the item, "]".
    return dump_items((item,))[1:-1]


def decode_items(rows: Iterable[bytes]) -> list[dict[str, Any]]:
    """The items of ``encode_item`` rows, in order (one parse for all of them).

    A row that is not a JSON object (a corrupted or hand-edited one) is a ``HistoryError`` naming it, as an
    item no provider would take is: loading again cannot mend it. The conversation is not checked here: the
    session checks what any store's ``load`` gives back (``check_items``), once.

    >>> decode_items([b'{"type":"function_call_output","call_id":"c1","output":"42"}'])
    [{'type': 'function_call_output', 'call_id': 'c1', 'output': '42'}]
    >>> decode_items([b'{"type":"message","role":"user","content":"hi"}', b'{"type":'])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    agentflow.agent.item_checks.HistoryError: stored item 1: is not valid JSON: ...
    """
    rows = list(rows)
    try:
        return load_items(b"[" + b",".join(rows) + b"]", check=False)
    except ValueError:
        pass
    items: list[dict[str, Any]] = []
    for index, row in enumerate(rows):  # the failure path: find the row to name
        try:
            value = exact_json.loads(row)
        except ValueError as exc:
            raise HistoryError(index, f"is not valid JSON: {exc}", source="stored") from None
        if not isinstance(value, dict):
            raise HistoryError(index, f"is not a JSON object: {row!r:.80}", source="stored")
        try:
            # The array adds a level: a row nested to the parser's limit reads alone, not in it. No
            # provider takes such an item anyway (orjson writes no JSON deeper than 254 levels).
            exact_json.loads(b"[" + row + b"]")
        except ValueError as exc:
            raise HistoryError(index, f"nests too deeply: {exc}", source="stored") from None
        items.append(value)
    return items  # not expected: every way the array fails is a row's, found above


class InMemoryStore:
    """A ``SessionStore`` in a dict, for the life of the object: for tests, and the reference implementation.

    It keeps the JSON bytes a database would (``encode_item``), so what a test sees is what ``SQLiteStore``
    gives back: copies, never the memory's own dicts, and a ``TypeError`` for an item JSON cannot hold.

    >>> import anyio
    >>> store = InMemoryStore()
    >>> async def demo():
    ...     await store.append("user-42", [{"type": "message", "role": "user", "content": "hi"}])
    ...     return await store.load("user-42")
    >>> anyio.run(demo)
    [{'type': 'message', 'role': 'user', 'content': 'hi'}]
    """

    # __weakref__: sessions of one store take turns per conversation, in a registry that must not keep the
    # store alive (``agentflow.agent.stored_turns.conversation_of``).
    __slots__ = ("__weakref__", "_generations", "_sessions")

    def __init__(self) -> None:
        self._sessions: dict[str, list[bytes]] = {}
        # Only sessions cleared at least once (the others are at 0), kept once their items are gone: a
        # generation must never come back.
        self._generations: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"InMemoryStore({len(self._sessions)} sessions)"

    async def load(self, session_id: str) -> StoredItems:
        """Every item of ``session_id``, oldest first (``[]`` for an unknown session), with its generation."""
        await anyio.lowlevel.checkpoint()
        items = decode_items(self._sessions.get(session_id, ()))
        return StoredItems(items, generation=self._generations.get(session_id, 0))

    async def append(
        self, session_id: str, items: Sequence[Mapping[str, Any]], *, start: int | None = None
    ) -> None:
        """Add ``items`` at the end of ``session_id`` (at ``start``: see ``check_append``); every item is
        encoded before any is kept."""
        await anyio.lowlevel.checkpoint()
        rows = [encode_item(item) for item in items]
        stored = self._sessions.get(session_id, [])
        generation = self._generations.get(session_id, 0)
        have = check_append(
            session_id, rows, start, len(stored), lambda: stored[start or 0 :], generation=generation
        )
        if len(rows) > have:
            self._sessions.setdefault(session_id, []).extend(rows[have:])

    async def clear(self, session_id: str) -> None:
        """Forget ``session_id``, moving it to a new generation if it had items."""
        await anyio.lowlevel.checkpoint()
        # Clearing an empty session changes nothing a reader could have seen: it keeps its generation, so a
        # session that read it empty still saves there.
        if self._sessions.pop(session_id, None):
            self._generations[session_id] = self._generations.get(session_id, 0) + 1

    async def delete(self, session_id: str) -> None:
        """Erase ``session_id`` whole, its generation too (see ``SQLiteStore.delete``)."""
        await anyio.lowlevel.checkpoint()
        self._sessions.pop(session_id, None)
        self._generations.pop(session_id, None)

    async def session_ids(self) -> list[str]:
        """The ids of the sessions that hold items, sorted."""
        await anyio.lowlevel.checkpoint()
        return sorted(self._sessions)
