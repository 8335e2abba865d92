"""Telling a real cancellation from a ``CancelledError`` that only passed through.

A ``CancelledError`` reaches a task in two ways: the task was asked to stop (a cancel scope, a deadline,
``task.cancel()``), or it awaited a task or future that *something else* cancelled — a tool waiting on a
shared refresh task that the application superseded, an event callback writing to a connection that went
away. Only the first means "stop this run"; the second is an error like any other, and treating it as a
cancel would end a run nobody cancelled (and, caught as one, would confuse the cancel scopes around it).
"""

from __future__ import annotations

import asyncio

__all__ = ["cancel_requested"]


def cancel_requested() -> bool:
    """Whether the current task has been asked to cancel (and has not taken the request back).

    anyio's cancel scopes and deadlines deliver through ``task.cancel()``, which counts in
    ``Task.cancelling()``; a ``CancelledError`` that came out of an awaited task or future leaves it at 0.
    Outside a task (no running loop task) there is nothing to tell apart: ``True``, so callers re-raise.

    >>> async def main():
    ...     future = asyncio.get_running_loop().create_future()
    ...     future.cancel()
    ...     try:
    ...         await future
    ...     except asyncio.CancelledError:
    ...         return cancel_requested()
    >>> asyncio.run(main())
    False
    """
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return True
    return task is None or task.cancelling() > 0
