"""``OpenRuns``: the runs a service is streaming, so that shutting down can cancel them.

Neither aiohttp nor uvicorn ends an event stream in time when it shuts down: each waits for open responses
(a while, or forever), then cuts the connection, and the browser's ``EventSource`` reconnects to whatever
answers next. A service that holds its streamed runs here cancels them as shutdown begins: each ends with
``RunCancelled``, its client gets the terminal frame, and its response ends, so the server's wait is over
as soon as the frames are out (see docs/web.md, "Shutting down with streams open"). What it must not do:
own the runs (they end on their own; a run leaves when its block does) or wait for them.

Shutdown begins with a signal under ``uvicorn app:app`` and gunicorn's ``UvicornWorker``, which run the app's
lifespan shutdown only after their wait: ``cancel_on_signals`` cancels the runs on the signal itself
(``agentflow.agent.signal_chain`` puts its handler in front of the server's).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from .signal_chain import chained_signal_handlers

if TYPE_CHECKING:
    from .run import AgentRun

__all__ = ["OpenRuns", "RunIdInUseError"]


class RunIdInUseError(ValueError):
    """``OpenRuns.track`` was given a run whose id another run it holds has: ids chosen by the caller (a
    request id, an idempotency key) repeat when a client retries or submits twice. ``run_id`` is the id; a
    service answers such a request with ``409 Conflict``."""

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"a run with id {run_id!r} is already open here: give each run its own id (a client's retry or "
            "double submit repeats a request id), or find the open one with runs.get(run_id)"
        )
        self.run_id = run_id

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable: ``args`` hold the message, not the constructor's ``run_id``.
        return (type(self), (self.run_id,), dict(self.__dict__))


class OpenRuns:
    """The runs a service is streaming: ``async with runs.track(run):`` around each stream, and
    ``await runs.cancel_all()`` when shutdown begins (aiohttp's ``on_shutdown``), or ``with
    runs.cancel_on_signals(): yield`` in the app's lifespan (uvicorn, gunicorn's ``UvicornWorker``). A run
    opened once shutdown has begun is cancelled at once. ``runs.get(run_id)``
    finds a run another request is streaming (to approve a tool call, or to cancel it: a "stop" button).

    >>> import anyio
    >>> from agentflow import Agent
    >>> from agentflow.testing.fake import FakeModelClient, reply
    >>> async def main():
    ...     runs = OpenRuns()
    ...     agent = Agent(FakeModelClient([reply("never sent")]))
    ...     await runs.cancel_all()  # shutdown has begun
    ...     async with agent.stream("late") as run, runs.track(run):
    ...         return [type(event).__name__ async for event in run][-1], len(runs)
    >>> anyio.run(main)
    ('RunCancelled', 1)
    """

    __slots__ = ("_closing", "_runs", "_signalled")

    def __init__(self) -> None:
        self._runs: dict[str, AgentRun[Any]] = {}
        self._closing = False
        self._signalled: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        """How many runs are held now."""
        return len(self._runs)

    def get(self, run_id: str) -> AgentRun[Any] | None:
        """The run with that id while it is held (its ``track`` block is open), else ``None``."""
        return self._runs.get(run_id)

    @property
    def closing(self) -> bool:
        """Whether ``cancel_all`` was called: runs tracked from now on are cancelled at once."""
        return self._closing

    @contextlib.asynccontextmanager
    async def track(self, run: AgentRun[Any]) -> AsyncIterator[AgentRun[Any]]:
        """Hold ``run`` for the block (cancelled at once if shutdown has begun); yields it.

        Raises ``RunIdInUseError`` if a run with the same id is held: holding both under one id would hide
        the first from ``cancel_all`` and ``get``. Leaving ``agent.stream``'s block then cancels the new run.
        """
        if run.run_id in self._runs:
            raise RunIdInUseError(run.run_id)
        self._runs[run.run_id] = run
        try:
            if self._closing:
                await run.cancel()
            yield run
        finally:
            del self._runs[run.run_id]

    async def cancel_all(self) -> None:
        """Cancel every run held, and every one tracked from now on. Asks, does not wait: each stream ends on
        its own (with ``RunCancelled``), concurrently."""
        self._closing = True
        for run in list(self._runs.values()):
            await run.cancel()

    def cancel_on_signals(
        self, signals: Iterable[int] = (signal.SIGINT, signal.SIGTERM)
    ) -> AbstractContextManager[None]:
        """For the block, each of ``signals`` first does what ``cancel_all`` does (in the event loop, soon
        after the signal), then goes to the handler that was installed before (the server's), which begins
        its shutdown as it always did. Leaving the block puts that handler back.

        Enter it in the app's lifespan startup, where the server has installed its own handlers already::

            @asynccontextmanager
            async def lifespan(app: FastAPI) -> AsyncIterator[None]:
                with runs.cancel_on_signals():
                    yield

        That is the point of it: uvicorn (``uvicorn app:app``, ``uvicorn.run``, its ``--workers`` and
        ``--reload`` children, gunicorn's ``UvicornWorker``) waits for open responses before it runs the
        lifespan shutdown, and an event stream ends only when its run does. Cancelled on the signal, each run
        sends its ``run_cancelled`` frame and its response ends, so the server's wait is short.

        Raises ``RuntimeError`` outside the main thread (only it may install signal handlers) or with no
        running event loop. A signal the process ignores (``SIG_IGN``) is left alone; with no handler before
        (``SIG_DFL``), SIGINT and SIGTERM still end the process at once. See
        ``agentflow.agent.signal_chain.chained_signal_handlers``.
        """
        return chained_signal_handlers(signals, self._cancel_all_soon)

    def _cancel_all_soon(self) -> None:
        # Called by the event loop after a signal. ``cancel_all`` only asks each run to stop (a cancel scope's
        # ``cancel``), so its task ends within its first step; it is held until then, as asyncio holds its
        # tasks weakly.
        self._closing = True
        task = asyncio.get_running_loop().create_task(self.cancel_all())
        self._signalled.add(task)
        task.add_done_callback(self._signalled.discard)
