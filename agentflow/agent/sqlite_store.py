"""``SQLiteStore``: sessions' conversations in an SQLite file, with the standard library's ``sqlite3``.

Two tables, created on first use. The items (``agentflow_session_items`` unless named otherwise):
``(session_id, seq, item)``, the primary key ``(session_id, seq)``, ``item`` the item's JSON bytes
(``encode_item``: orjson, as ``dump_items`` writes it). The generations (that name with ``_generations``
after it): ``(session_id, generation)``, a row for each session ``clear`` has forgotten items of, never
deleted, so a generation never comes back; a session without one is at generation 0 (see
``agentflow.agent.stores`` for why a store keeps them). A database made before the second table existed
gets it on first use, with every session at 0, and works on. How it stays correct under concurrency:

- every call runs in a worker thread (``anyio.to_thread``), never on the event loop, on a thread limiter of
  the store's own (one token per event loop; see ``_limiter``), never anyio's default one: sync tools and
  other libraries share that one, and forty slow sync tools elsewhere in the process must not make every
  chat's load and save wait for them;
- one connection per store, opened on first use, used by one thread at a time (a ``threading.Lock``): a
  store may serve many sessions of one event loop, and ``run_sync`` calls in other threads with loops of
  their own;
- the WAL journal, so a reader never waits for a writer; a load reads the generation and the items in one
  read transaction, so they are of one moment;
- an append is one ``BEGIN IMMEDIATE`` transaction: its ``seq`` numbers follow the session's last, and a
  second process appending to the same file waits for it (up to ``timeout``) instead of interleaving
  rows or failing half-way; a failure rolls the whole append back. The ``start`` check (``check_append``,
  with the session's generation) is made inside the transaction, so no other writer can come in between;
  a clear is one too (deleting the items and moving the generation on happen together);
- worker threads are never abandoned on cancellation (anyio's default): a cancelled call finishes, or
  rolls back, in its thread before the cancellation goes on, so no transaction is left open and no lock held.
  So a session's save cap cannot cut an append either: what bounds one is ``timeout``, SQLite's busy timeout
  (a write waiting for another connection's lock fails after it), and the disk.

``sqlite3`` is imported when the first connection opens, not when this module is: ``import agentflow``
stays light.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import anyio.to_thread

from .stores import StoredItems, check_append, decode_items, encode_item

if TYPE_CHECKING:
    import sqlite3

__all__ = ["SQLiteStore"]

_T = TypeVar("_T")
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class SQLiteStore:
    """A ``SessionStore`` in an SQLite database file (``":memory:"``: in the connection, for tests).

    >>> from agentflow.testing.fake import FakeModelClient, reply
    >>> from agentflow import Agent
    >>> import anyio
    >>> store = SQLiteStore(":memory:")
    >>> async def chat_twice():
    ...     agent = Agent(FakeModelClient([reply("Hi Ada."), reply("Ada.")]))
    ...     await agent.session(session_id="user-42", store=store).run("I am Ada.")
    ...     later = agent.session(session_id="user-42", store=store)  # another request, same chat
    ...     return (await later.run("Who am I?")).output_text, len(await store.load("user-42"))
    >>> anyio.run(chat_twice)
    ('Ada.', 4)
    >>> store.close()

    - ``path``: the database file (created if missing), or ``":memory:"``.
    - ``table``: the items table's name, for a database shared with other data (the generations table is
      named after it, with ``_generations`` added).
    - ``timeout``: how long a call waits for another connection's write lock, in seconds (SQLite's busy
      timeout), before it fails with ``sqlite3.OperationalError`` ("database is locked").

    ``close()`` (or ``async with store:``) closes the connection; a later call opens a new one (of a
    ``":memory:"`` database, an empty one).
    """

    # __weakref__: sessions of one store take turns per conversation, in a registry that must not keep the
    # store alive (``agentflow.agent.stored_turns.conversation_of``).
    __slots__ = (
        "__weakref__",
        "_connection",
        "_limiters",
        "_lock",
        "_no_generations",
        "path",
        "table",
        "timeout",
    )

    def __init__(
        self, path: str | os.PathLike[str], *, table: str = "agentflow_session_items", timeout: float = 5.0
    ) -> None:
        if not isinstance(table, str) or not _TABLE_NAME.match(table):
            raise ValueError(f"table must be a plain SQL name (letters, digits, _), got {table!r}")
        self.path = os.fspath(path)
        """The database file."""
        self.table = table
        """The table holding the items."""
        self.timeout = float(timeout)
        """SQLite's busy timeout, in seconds."""
        self._connection: sqlite3.Connection | None = None
        self._no_generations = False
        """A read-only database of an earlier version: it has no generations table, and cannot get one."""
        self._lock = threading.Lock()
        self._limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    @property
    def conversation_key(self) -> tuple[str, str, str] | None:
        """What every ``SQLiteStore`` over the same table of the same file shares: sessions built with
        separate store objects (a store per request) still take turns on a conversation (see
        ``SessionStore``). ``None`` for a private database (``":memory:"``, ``""``), which no other store
        object can reach."""
        if self.path in ("", ":memory:"):
            return None
        return ("sqlite", os.path.realpath(self.path), self.table)

    # -- SessionStore ----------------------------------------------------------------------------------------

    async def load(self, session_id: str) -> StoredItems:
        """Every item of ``session_id``, oldest first (``[]`` for an unknown session), with its generation."""
        return await self._in_thread(self._load, session_id)

    async def append(
        self, session_id: str, items: Sequence[Mapping[str, Any]], *, start: int | None = None
    ) -> None:
        """Add ``items`` after the session's last ones, in one transaction (all of them or none); with
        ``start``, only where the session holds ``start`` items, of ``start``'s generation if it has one
        (``StoreConflict`` else, see ``check_append``)."""
        items = tuple(items)  # the caller's list may change while the thread works
        if items:
            await self._in_thread(self._append, session_id, items, start)

    async def clear(self, session_id: str) -> None:
        """Delete every item of ``session_id``, moving it to a new generation if it had any."""
        await self._in_thread(self._clear, session_id)

    # -- administration --------------------------------------------------------------------------------------

    async def delete(self, session_id: str) -> None:
        """Erase ``session_id`` whole: its items and the row of its generation, which ``clear`` keeps (a
        session id is often a user's id or address, and erasing a user leaves nothing of theirs).

        Meant for a conversation no session uses any more: a session that read it before at generation 0
        could save onto a new conversation of the same id written to the same length since. (One that read
        it at a later generation cannot: the new conversation starts again at 0.)
        """
        await self._in_thread(self._delete, session_id)

    async def session_ids(self) -> list[str]:
        """The ids of the sessions that hold items, sorted."""
        return await self._in_thread(self._session_ids)

    # -- connection ------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (waiting for a call in progress); a later call opens a new one."""
        with self._lock:
            connection, self._connection = self._connection, None
            if connection is not None:
                connection.close()

    async def aclose(self) -> None:
        """``close()`` in a worker thread, so the event loop does not wait for a call in progress."""
        await self._in_thread(self.close)

    async def __aenter__(self) -> SQLiteStore:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def _in_thread(self, function: Callable[..., _T], *args: Any) -> _T:
        # Not abandoned on cancellation: the thread's transaction ends (commit or rollback) first.
        return await anyio.to_thread.run_sync(function, *args, limiter=self._limiter())

    def _limiter(self) -> anyio.CapacityLimiter:
        """The store's thread limiter in the running event loop (made on first use), one token.

        One token, because the store's calls take turns on its connection anyway (``_lock``): a second
        thread would only wait for the lock, so calls wait here, on the loop, instead. One per loop, because
        an anyio limiter wakes its waiters with the loop's own primitives: a store shared by ``run_sync``
        calls in several threads (each with its loop) must not share one. Calls from other loops still take
        turns on ``_lock``, in their threads.
        """
        loop = asyncio.get_running_loop()
        limiter = self._limiters.get(loop)
        if limiter is None:
            limiter = self._limiters[loop] = anyio.CapacityLimiter(1)
        return limiter

    def _connect(self) -> sqlite3.Connection:
        """The connection (opened and the table created on first use); the caller holds ``_lock``."""
        if self._connection is None:
            import sqlite3  # here, not at import: most programs never open a store

            # isolation_level=None: no implicit transactions; ``_append`` opens its own, IMMEDIATE.
            connection = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(
                    f"CREATE TABLE IF NOT EXISTS {self.table} ("
                    "session_id TEXT NOT NULL, seq INTEGER NOT NULL, item BLOB NOT NULL, "
                    "PRIMARY KEY (session_id, seq))"
                )
                # Also how a database of an earlier version, with the items table alone, gets it: no
                # session there has a row, so each is at generation 0, which is all its readers can know.
                try:
                    connection.execute(
                        f"CREATE TABLE IF NOT EXISTS {self._generations} ("
                        "session_id TEXT NOT NULL PRIMARY KEY, generation INTEGER NOT NULL)"
                    )
                except sqlite3.OperationalError as exc:
                    if "readonly" not in str(exc):
                        raise
                    # Such a database opened read-only (a replica that shows history): it still loads, each
                    # session at generation 0; writing to it fails as any write to it would.
                    self._no_generations = True
            except BaseException:
                connection.close()
                raise
            self._connection = connection
        return self._connection

    # -- in the worker thread --------------------------------------------------------------------------------

    @property
    def _generations(self) -> str:
        """The generations table's name."""
        return f"{self.table}_generations"

    @contextmanager
    def _transaction(self, kind: Literal["DEFERRED", "IMMEDIATE"]) -> Iterator[sqlite3.Connection]:
        """The connection, in a transaction committed at the end of the block (rolled back if it raises); the
        caller holds ``_lock``. ``DEFERRED`` for reads (one snapshot in WAL mode), ``IMMEDIATE`` for writes
        (the write lock at once, so the checks made in the block still hold when it commits)."""
        connection = self._connect()
        connection.execute(f"BEGIN {kind}")
        try:
            yield connection
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    def _generation(self, connection: sqlite3.Connection, session_id: str) -> int:
        if self._no_generations:
            return 0
        row = connection.execute(
            f"SELECT generation FROM {self._generations} WHERE session_id = ?", (session_id,)
        ).fetchone()
        return 0 if row is None else int(row[0])

    def _load(self, session_id: str) -> StoredItems:
        with self._lock, self._transaction("DEFERRED") as connection:
            generation = self._generation(connection, session_id)
            rows = connection.execute(
                f"SELECT item FROM {self.table} WHERE session_id = ? ORDER BY seq", (session_id,)
            )
            data = [row[0] for row in rows]
        return StoredItems(decode_items(data), generation=generation)

    def _append(self, session_id: str, items: tuple[Mapping[str, Any], ...], start: int | None) -> None:
        rows = [encode_item(item) for item in items]  # every item, before the transaction starts
        with self._lock, self._transaction("IMMEDIATE") as connection:
            (found, last) = connection.execute(
                f"SELECT COUNT(*), COALESCE(MAX(seq), -1) FROM {self.table} WHERE session_id = ?",
                (session_id,),
            ).fetchone()

            def tail() -> list[bytes]:
                stored = connection.execute(
                    f"SELECT item FROM {self.table} WHERE session_id = ? ORDER BY seq LIMIT -1 OFFSET ?",
                    (session_id, int(start or 0)),
                )
                return [row[0] for row in stored]

            generation = self._generation(connection, session_id)
            have = check_append(session_id, rows, start, found, tail, generation=generation)
            connection.executemany(
                f"INSERT INTO {self.table} (session_id, seq, item) VALUES (?, ?, ?)",
                [(session_id, last + 1 + index, row) for index, row in enumerate(rows[have:])],
            )

    def _delete(self, session_id: str) -> None:
        with self._lock, self._transaction("IMMEDIATE") as connection:
            connection.execute(f"DELETE FROM {self.table} WHERE session_id = ?", (session_id,))
            if not self._no_generations:
                connection.execute(f"DELETE FROM {self._generations} WHERE session_id = ?", (session_id,))

    def _session_ids(self) -> list[str]:
        with self._lock, self._transaction("DEFERRED") as connection:
            rows = connection.execute(f"SELECT DISTINCT session_id FROM {self.table} ORDER BY session_id")
            return [row[0] for row in rows]

    def _clear(self, session_id: str) -> None:
        with self._lock, self._transaction("IMMEDIATE") as connection:
            deleted = connection.execute(f"DELETE FROM {self.table} WHERE session_id = ?", (session_id,))
            # Clearing an empty session changes nothing a reader could have seen: it keeps its generation,
            # so a session that read it empty still saves there. (``seq`` restarts after a clear, so it
            # cannot tell the generations apart: this row does.)
            if deleted.rowcount > 0:
                connection.execute(
                    f"INSERT INTO {self._generations} (session_id, generation) VALUES (?, 1) "
                    "ON CONFLICT (session_id) DO UPDATE SET generation = generation + 1",
                    (session_id,),
                )
