"""Awaiting a coroutine while noticing each time it waits: what lets a tool batch start tasks only as needed.

``await noting_waits(coro, on_wait)`` is ``await coro``, except that ``on_wait()`` runs every time the
coroutine is about to suspend (yield to the event loop). A coroutine that finishes without ever waiting costs
one extra ``send``; one that waits is driven step by step, in the same task — so its cancel scopes, context
variables and cancellation behave exactly as if it were awaited directly.

>>> import asyncio
>>> waits = []
>>> async def quick():
...     return 1
>>> async def slow():
...     await asyncio.sleep(0)
...     return 2
>>> async def demo():
...     return [await noting_waits(quick(), lambda: waits.append("q")),
...             await noting_waits(slow(), lambda: waits.append("s"))]
>>> asyncio.run(demo()), waits
([1, 2], ['s'])
"""

from __future__ import annotations

import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["noting_waits"]

T = TypeVar("T")


async def noting_waits(awaitable: Awaitable[T], on_wait: Callable[[], object]) -> T:
    """Await ``awaitable``, calling ``on_wait()`` whenever it is about to suspend (see the module doc).

    Anything but a native coroutine is taken as one that may wait: ``on_wait()`` runs once, first.
    """
    if type(awaitable) is not types.CoroutineType:
        on_wait()
        return await awaitable
    coro: Coroutine[Any, Any, T] = awaitable
    try:
        signal = coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    return await _resume(coro, signal, on_wait)


@types.coroutine
def _resume(
    coro: Coroutine[Any, Any, T], signal: Any, on_wait: Callable[[], object]
) -> Generator[Any, Any, T]:
    """``yield from coro`` for a coroutine already past its first step, calling ``on_wait`` at each yield."""
    while True:
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
            signal = coro.send(sent) if thrown is None else coro.throw(thrown)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:
            thrown = None  # no reference cycle through the traceback
