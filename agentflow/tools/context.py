"""``ToolContext``: what a running tool may know about its call and how it reports progress.

A tool asks for it by annotating a parameter with ``ToolContext``; the executor injects it (it is not part
of the tool's JSON schema). Progress goes to the run's event bus as ``ToolProgress`` events and never
into memory or back to the model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio.from_thread
import attrs

from ..events import ToolProgress
from ..model.events import Event

__all__ = ["ToolContext"]


@attrs.define
class _CallState:
    finished: bool = False


@attrs.frozen
class ToolContext:
    """The context of one tool call: run id, step, call id, tool name, and progress reporting.

    >>> import anyio
    >>> seen = []
    >>> async def emit(event):
    ...     seen.append(event)
    >>> ctx = ToolContext(run_id="r1", step=2, call_id="call_1", tool_name="search", emit=emit)
    >>> anyio.run(ctx.emit_progress, "page 1 of 3")
    >>> seen[0].message, seen[0].call_id, seen[0].step
    ('page 1 of 3', 'call_1', 2)
    """

    run_id: str
    step: int
    call_id: str
    tool_name: str
    _emit: Callable[[Event], Awaitable[Any]] = attrs.field(alias="emit", repr=False, eq=False)
    _state: _CallState = attrs.field(init=False, factory=_CallState, repr=False, eq=False)

    async def emit_progress(self, message: str, data: Any = None) -> None:
        """Publish a ``ToolProgress`` event (``data`` should be JSON-ready for event forwarding).

        Raises ``RuntimeError`` once the call has finished (timed out, cancelled or returned).
        """
        if self._state.finished:
            raise RuntimeError(
                f"tool call {self.call_id!r} ({self.tool_name}) has finished; "
                "it can no longer report progress"
            )
        await self._emit(
            ToolProgress(
                call_id=self.call_id,
                tool=self.tool_name,
                message=message,
                data=data,
                run_id=self.run_id,
                step=self.step,
            )
        )

    def emit_progress_sync(self, message: str, data: Any = None) -> None:
        """``emit_progress`` for sync tools, which run in a worker thread; blocks until it is published."""
        try:
            anyio.from_thread.run(self.emit_progress, message, data)
        except anyio.NoEventLoopError:
            raise RuntimeError(
                "emit_progress_sync() works only in a sync tool running in a worker thread "
                "(not inline=True); async tools use 'await ctx.emit_progress(...)'"
            ) from None

    def _finish(self) -> None:
        self._state.finished = True
