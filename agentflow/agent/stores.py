"""Where a session's conversation outlives the process: the ``SessionStore`` protocol, ``InMemoryStore`` (its
reference implementation) and ``SessionStoreError``.

A store keeps, per session id, an append-only log of conversation items. Three operations, all async:

- ``load(session_id)``: every item of the session, oldest first (``[]`` for a session it does not know);
- ``append(session_id, items)``: add items at the end, **all or none** — a failure or a cancellation must not
  leave some of them written;
- ``clear(session_id)``: forget the session.

Why these three and no more. They are what every store does in one cheap, atomic statement: an ordered range
read, a multi-row insert in one transaction, a delete (SQLite and Postgres: ``SELECT … ORDER BY seq``,
``INSERT`` in a transaction, ``DELETE``; Redis: ``LRANGE 0 -1``, one ``RPUSH`` of many values, ``DEL``). The
session needs nothing else, because it appends only at the end of a run's turn (see
``agentflow.agent.stored_turns``): a run that fails with ``rollback_on_failure`` is undone in memory before
anything reaches the store, a cancelled run has completed its memory (every call answered) before it is
appended, and a run that never got to the end of its turn appended nothing. There is no "replace", "pop" or
"update": rewriting history in place is what a crash half-way through would corrupt. Items the store could not
take stay in the session's memory and go with the next append, so an ``append`` that fails cleanly (all or
none) loses nothing and writes nothing twice.

Items are the memory's JSON-ready dicts. A store keeps each one in the form ``dump_items`` writes
(``encode_item``) and reads them back as ``load_items`` does (``decode_items``), so a conversation comes back
exactly: call ids, raw argument strings, reasoning fields, integers of any size. A store raises whatever its
driver raises; the session wraps it in ``SessionStoreError``.

This module does no I/O of its own and imports no database driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import anyio.lowlevel

from .item_json import dump_items, load_items

if TYPE_CHECKING:
    from ..result import AgentResult

__all__ = ["InMemoryStore", "SessionStore", "SessionStoreError", "decode_items", "encode_item"]

StoreOperation = Literal["load", "append", "clear"]


@runtime_checkable
class SessionStore(Protocol):
    """Keeps sessions' conversations: ``agent.session(session_id="user-42", store=SQLiteStore("chats.db"))``.

    The session loads the stored items into its memory before its first run (or ``session.load()``) and
    appends each run's items at the end of the run's turn. Implement the three methods to keep conversations
    anywhere (see the module docstring for what each must guarantee); ``InMemoryStore`` is the reference.
    """

    async def load(self, session_id: str) -> Sequence[Mapping[str, Any]]:
        """Every item stored for ``session_id``, oldest first; empty for an unknown session."""
        ...

    async def append(self, session_id: str, items: Sequence[Mapping[str, Any]]) -> None:
        """Add ``items`` after the session's last ones, all of them or none (even when cancelled)."""
        ...

    async def clear(self, session_id: str) -> None:
        """Forget every item of ``session_id``."""
        ...


class SessionStoreError(Exception):
    """A session's store failed to load, save or clear its conversation; the store's own error is the cause.

    - ``operation="load"``: the run failed before its model was called (``run_result`` is its empty partial
      result); memory is untouched and the next run loads again.
    - ``operation="append"``: the run itself ended (finished, cancelled, stopped at a limit) and
      ``run_result`` is its result; its items stay in the session's memory and are saved with the next run's.
    - ``operation="clear"``: nothing was cleared in memory.

    >>> err = SessionStoreError("the store is down", session_id="user-42", operation="append")
    >>> err.session_id, err.operation, err.run_result
    ('user-42', 'append', None)
    """

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


def encode_item(item: Any) -> bytes:
    """One item as JSON bytes, exactly as ``dump_items`` writes it inside its array (a row of a store).

    >>> encode_item({"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a":1}'})
    b'{"type":"function_call","call_id":"c1","name":"add","arguments":"{\\\\"a\\\\":1}"}'
    """
    # dump_items writes compact JSON: its array of one item is "[", the item, "]".
    return dump_items((item,))[1:-1]


def decode_items(rows: Iterable[bytes]) -> list[dict[str, Any]]:
    """The items of ``encode_item`` rows, in order (one parse for all of them; ``ValueError`` for a bad row).

    >>> decode_items([b'{"type":"function_call_output","call_id":"c1","output":"42"}'])
    [{'type': 'function_call_output', 'call_id': 'c1', 'output': '42'}]
    """
    return load_items(b"[" + b",".join(rows) + b"]")


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

    __slots__ = ("_sessions",)

    def __init__(self) -> None:
        self._sessions: dict[str, list[bytes]] = {}

    def __repr__(self) -> str:
        return f"InMemoryStore({len(self._sessions)} sessions)"

    async def load(self, session_id: str) -> list[dict[str, Any]]:
        """Every item of ``session_id``, oldest first (``[]`` for an unknown session)."""
        await anyio.lowlevel.checkpoint()
        return decode_items(self._sessions.get(session_id, ()))

    async def append(self, session_id: str, items: Sequence[Mapping[str, Any]]) -> None:
        """Add ``items`` at the end of ``session_id``: every item is encoded before any is kept."""
        await anyio.lowlevel.checkpoint()
        rows = [encode_item(item) for item in items]
        if rows:
            self._sessions.setdefault(session_id, []).extend(rows)

    async def clear(self, session_id: str) -> None:
        """Forget ``session_id``."""
        await anyio.lowlevel.checkpoint()
        self._sessions.pop(session_id, None)
