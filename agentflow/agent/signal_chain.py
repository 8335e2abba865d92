"""Putting a callback in front of the process's signal handlers for the length of a block.

A web server owns SIGINT and SIGTERM. uvicorn installs its handlers with ``signal.signal`` before it starts
the app's lifespan (``Server.capture_signals``), and puts back the ones it found when it stops; asyncio's
``loop.add_signal_handler`` installs a no-op Python handler and learns of the signal through
``signal.set_wakeup_fd``. ``chained_signal_handlers`` installs a handler in front of whichever one is there.
On the signal it schedules a callback in the event loop, then calls the previous handler as the signal would
have. The callback never runs inside the handler itself: a signal interrupts the main thread between any two
bytecodes, possibly inside the loop's own bookkeeping. Leaving the block puts the previous handlers back.

What it must not do: swallow a signal, change what the previous handler does with it, or outlive its block.
A ``loop.add_signal_handler`` handler keeps working behind it: the loop's wakeup file descriptor is written
for any signal that has a Python handler, and this one is a Python handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import Any

__all__ = ["chained_signal_handlers"]

_Handler = Callable[[int, FrameType | None], Any]


@contextlib.contextmanager
def chained_signal_handlers(signals: Iterable[int], callback: Callable[[], object]) -> Iterator[None]:
    """For the block, a signal in ``signals`` first schedules ``callback()`` in the running event loop
    (``loop.call_soon_threadsafe``), then goes to the handler that was installed before, as it would have
    without this one. On leaving, that handler is put back.

    - A Python handler (uvicorn's, asyncio's no-op, ``signal.default_int_handler``) is called as it was:
      ``default_int_handler`` still raises ``KeyboardInterrupt``, and the callback was scheduled first.
    - ``SIG_DFL`` still does the default action at once: SIGINT and SIGTERM end the process before the loop
      runs the callback. Signals whose default is to be ignored come back, and the chain stays in place.
    - A signal that is ignored (``SIG_IGN``) is left alone: ignored, it stops nothing, so it should not
      trigger the callback either.
    - If another handler was installed over this one while the block was open, it is left in place on exit.
      This handler then only passes the signal on, if the newer handler still calls it.

    Enter it in the event loop's thread, which must be the main thread: Python runs signal handlers there
    only, and only that thread may install them. Anywhere else it raises ``RuntimeError``, as it does with no
    running event loop, or for a signal whose handler was installed outside Python. An empty ``signals``, or
    a number that is not a signal, raises ``ValueError``.
    """
    wanted = _signals(signals)
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError(
            "signal handlers can only be installed from the main thread (Python runs them there only): "
            "enter this in the app's lifespan startup, in the event loop's thread, not in a worker thread"
        )
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "no running event loop: enter this in async code running in the server's loop, e.g. in the "
            "app's lifespan startup (with runs.cancel_on_signals(): yield)"
        ) from None
    chain = _Chain(loop, callback)
    chain.install(wanted)
    try:
        yield
    finally:
        chain.restore()


def _signals(signals: Iterable[int]) -> list[signal.Signals]:
    if isinstance(signals, int):
        raise TypeError(f"signals must be a collection of signal numbers, e.g. ({signals!r},)")
    wanted: list[signal.Signals] = []
    for value in signals:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"signals must be signal numbers (signal.SIGTERM…), got {type(value).__name__}")
        try:
            number = signal.Signals(value)
        except ValueError:
            raise ValueError(f"{value} is not a signal number on this platform") from None
        if number not in wanted:
            wanted.append(number)
    if not wanted:
        raise ValueError("signals is empty: name at least one, e.g. (signal.SIGINT, signal.SIGTERM)")
    return wanted


class _Chain:
    """One block's handler and the handlers it was installed in front of."""

    __slots__ = ("_active", "_callback", "_handler", "_loop", "_previous")

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
        self._loop = loop
        self._callback = callback
        self._previous: dict[int, _Handler | int] = {}
        self._active = True
        # One bound method, kept: ``restore`` recognises its own handler by identity.
        self._handler: _Handler = self._on_signal

    def install(self, signals: list[signal.Signals]) -> None:
        try:
            for number in signals:
                previous = signal.getsignal(number)
                if previous is None:
                    raise RuntimeError(
                        f"{number.name} has a handler that was not installed from Python: it can be neither "
                        "chained nor put back"
                    )
                if previous is signal.SIG_IGN:
                    continue
                # Known before the handler is in place: the signal may arrive as soon as it is.
                self._previous[number] = previous
                signal.signal(number, self._handler)
        except BaseException:
            self.restore()
            raise

    def restore(self) -> None:
        self._active = False
        for number, previous in self._previous.items():
            if signal.getsignal(number) is self._handler:
                signal.signal(number, previous)
        # ``_previous`` stays: a handler installed over this one may still pass the signal on to it.

    def _on_signal(self, number: int, frame: FrameType | None) -> None:
        if self._active:
            # A closed loop (the server has stopped) has nothing left to call the callback for.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._callback)
        previous = self._previous[number]
        if previous is signal.SIG_DFL:
            self._default_action(number)
        elif callable(previous):
            previous(number, frame)

    def _default_action(self, number: int) -> None:
        signal.signal(number, signal.SIG_DFL)
        try:
            signal.raise_signal(number)  # ends the process, for SIGINT and SIGTERM
        finally:
            if self._active and signal.getsignal(number) is signal.SIG_DFL:
                signal.signal(number, self._handler)
