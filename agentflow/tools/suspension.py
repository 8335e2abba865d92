"""Awaiting a coroutine in a context of its own, noticing each time it waits: what lets a tool batch start
tasks only as needed, and keeps each tool call's context variables to itself.

``await noting_waits(coro, on_wait, context)`` is ``await coro``, except that the coroutine runs in
``context`` (``contextvars.copy_context()``: what a task of its own would get, so a tool's ``ContextVar.set``
— a tenant id, structlog's ``bind_contextvars`` — reaches neither its caller nor the calls after it,
whichever of them happened to wait) and that ``on_wait()`` (if given) runs every time the coroutine is about
to suspend (yield to the event loop). A coroutine that finishes without ever waiting costs one ``send``; one
that waits is driven step by step, in the same task — so its cancel scopes and cancellation behave exactly as
if it were awaited directly.

>>> import asyncio, contextvars
>>> waits = []
>>> async def quick():
...     return 1
>>> async def slow():
...     await asyncio.sleep(0)
...     return 2
>>> async def demo():
...     return [await noting_waits(quick(), lambda: waits.append("q"), contextvars.copy_context()),
...             await noting_waits(slow(), lambda: waits.append("s"), contextvars.copy_context())]
>>> asyncio.run(demo()), waits
([1, 2], ['s'])
"""

from __future__ import annotations

import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from contextvars import Context
from typing import Any, TypeVar

__all__ = ["noting_waits"]

T = TypeVar("T")


async def noting_waits(awaitable: Awaitable[T], on_wait: Callable[[], object] | None, context: Context) -> T:
    """Await ``awaitable`` in ``context``, calling ``on_wait()`` whenever it is about to suspend (see the
    module doc).

    Anything but a native coroutine is awaited as it is (it runs in its own way): ``on_wait()`` runs once,
    first, since it may wait.
    """
    if type(awaitable) is not types.CoroutineType:
        if on_wait is not None:
            on_wait()
        return await awaitable
    coro: Coroutine[Any, Any, T] = awaitable
    try:
        signal = context.run(coro.send, None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    return await _resume(coro, signal, on_wait, context)


@types.coroutine
def _resume(
    coro: Coroutine[Any, Any, T], signal: Any, on_wait: Callable[[], object] | None, context: Context
) -> Generator[Any, Any, T]:
    """``yield from coro`` for a coroutine already past its first step, each step run in ``context``, calling
    ``on_wait`` at each yield (in the caller's context: a task it starts copies the caller's, not the
    coroutine's)."""
    while True:
        if on_wait is not None:
            on_wait()
        thrown: BaseException | None = None
        sent: Any = None
        try:
            sent = yield signal
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            thrown = exc  # a cancellation, or whatever the task throws in: the coroutine's to handle
        try:
            # Outside the ``except`` block, so what the coroutine raises is not chained to what was thrown in.
            signal = context.run(coro.send, sent) if thrown is None else context.run(coro.throw, thrown)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:
            thrown = None  # no reference cycle through the traceback
