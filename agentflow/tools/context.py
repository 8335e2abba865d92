"""``ToolContext``: what a running tool may know about its call, and how it reports progress and usage.

A tool asks for it by annotating a parameter with ``ToolContext`` (or ``ToolContext[MyDeps]``, typing the
run's ``deps``); the executor injects it (it is not part of the tool's JSON schema). Progress goes to the
run's event bus as ``ToolProgress`` events and never into memory or back to the model. Tokens a tool spends
on model calls of its own (a sub-agent's run) go to the run's usage through a ``UsageSink``, so the run's
token budget covers them. Only calls of tools that ask for a context build one: nothing here costs the
other tools anything.
"""

from __future__ import annotations

import asyncio
import typing
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, Protocol

import anyio.from_thread
import attrs

from ..events import ToolProgress
from ..model.events import Event
from ..model.response import TokenUsage

__all__ = ["DepsT", "ToolContext", "UsageSink"]

if TYPE_CHECKING:
    # A default for the type parameter (PEP 696), for type checkers only, as ``ModelCompleted``'s: a bare
    # ``ToolContext`` is a ``ToolContext[Any]``, and importing ``typing_extensions`` would slow the import.
    from typing_extensions import TypeVar

    DepsT = TypeVar("DepsT", default=Any)
else:
    DepsT = typing.TypeVar("DepsT")
"""The type of a run's ``deps`` (``agent.run(x, deps=...)``), for ``ToolContext[MyDeps]``; ``Any`` unless
given."""

_NO_HEADERS: Mapping[str, str] = MappingProxyType({})


class UsageSink(Protocol):
    """Where the usage a tool call reports goes: the run the call belongs to (``RunContext`` wires one into
    its ``ToolExecutor``).

    >>> class Meter:
    ...     def __init__(self):
    ...         self.total = 0
    ...     def add_usage(self, usage):
    ...         self.total += usage.total_tokens
    ...     def tokens_left(self):
    ...         return 1000 - self.total
    >>> import anyio
    >>> ctx = ToolContext(run_id="r1", step=0, call_id="c1", tool_name="t", emit=print, usage=Meter())
    >>> async def summarise():  # a tool's body, on the event loop
    ...     ctx.add_usage(TokenUsage(input_tokens=30, output_tokens=12, total_tokens=42))
    ...     return ctx.tokens_left
    >>> anyio.run(summarise)
    958
    """

    def add_usage(self, usage: TokenUsage) -> None:
        """Count ``usage`` toward the run (its ``usage``, the current step's, its token budget)."""

    def tokens_left(self) -> int | None:
        """The run's token budget left (0 when spent), ``None`` when it has none."""


@attrs.define
class _CallState:
    finished: bool = False
    queued: list[ToolProgress] | None = None
    """Progress an ``inline=True`` sync tool reported, published once it returns (it runs on the loop)."""


@attrs.frozen
class ToolContext(Generic[DepsT]):
    """The context of one tool call: run id, step, call id, tool name, the run's ``deps``; progress and usage
    reporting.

    ``deps`` is the object the run was started with (``agent.run(x, deps=...)``: a database pool, the user
    the request is for, an HTTP client), as it was passed (``None`` when the run got none). Annotate the
    parameter ``ToolContext[MyDeps]`` and a type checker knows its type; ``ToolContext`` alone is
    ``ToolContext[Any]``. ``extra_headers`` are the HTTP headers the run was given for its model calls (its
    own ``settings=ModelSettings(extra_headers=...)`` and those it inherited from the run that called it as a
    tool): what a tool calling a model on the run's behalf should send too (an agent used as a tool does).

    ``listening`` (whether anyone receives the run's events) and ``usage`` (a ``UsageSink``) are what the
    executor wires in; a context built without them (in a test) says it is listened to and counts usage
    nowhere.

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
    _listening: Callable[[], bool] | None = attrs.field(default=None, alias="listening", repr=False, eq=False)
    _usage: UsageSink | None = attrs.field(default=None, alias="usage", repr=False, eq=False)
    _inline: bool = attrs.field(default=False, alias="inline", repr=False, eq=False)
    deps: DepsT = attrs.field(default=None, repr=False, eq=False)
    """The run's dependencies (``agent.run(x, deps=...)``), untouched; ``None`` when it got none."""
    extra_headers: Mapping[str, str] = attrs.field(default=_NO_HEADERS, repr=False, eq=False)
    """The run's own HTTP headers for model calls (its ``settings=``, and those it inherited as a sub-agent's
    run); empty when it has none."""
    _state: _CallState = attrs.field(init=False, factory=_CallState, repr=False, eq=False)

    def emit_progress(self, message: str, data: Any = None) -> Coroutine[Any, Any, None]:
        """Publish a ``ToolProgress`` event (``data`` should be JSON-ready for event forwarding): await it.

        Raises ``RuntimeError`` once the call has finished (timed out, cancelled or returned), and when called
        from a sync tool's worker thread, where nothing could await it (``emit_progress_sync`` is for those).
        """
        # A plain method that checks before making the coroutine: a sync tool runs in a worker thread, where
        # nothing awaits it, and the progress would be lost without a word (Python's warning aside). (Whether
        # the tool is a plain function says nothing: one may return a coroutine, awaited on the loop.)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                f"emit_progress() of tool {self.tool_name!r} was called outside the event loop (a sync tool "
                "runs in a worker thread, where it cannot be awaited); call ctx.emit_progress_sync(...) there"
            ) from None
        return self._checked_progress(message, data)

    def _checked_progress(self, message: str, data: Any) -> Coroutine[Any, Any, None]:
        """The coroutine that publishes the progress, unless the call has finished."""
        return self._emit_progress(self._progress(message, data))

    def _progress(self, message: str, data: Any) -> ToolProgress:
        """The ``ToolProgress`` event of ``message``, unless the call has finished."""
        if self._state.finished:
            raise RuntimeError(
                f"tool call {self.call_id!r} ({self.tool_name}) has finished; "
                "it can no longer report progress"
            )
        return ToolProgress(
            call_id=self.call_id,
            tool=self.tool_name,
            message=message,
            data=data,
            run_id=self.run_id,
            step=self.step,
        )

    async def _emit_progress(self, progress: ToolProgress) -> None:
        await self._emit(progress)

    def emit_progress_sync(self, message: str, data: Any = None) -> None:
        """``emit_progress`` for sync tools. In a worker thread (the default for a sync tool) it blocks until
        the progress is published; in an ``inline=True`` tool, which runs on the event loop and must not
        block it, the progress is published as soon as the tool returns (before its result's event)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            if not self._inline:
                raise RuntimeError(
                    f"emit_progress_sync() of tool {self.tool_name!r} was called on the event loop: async "
                    "tools use 'await ctx.emit_progress(...)'"
                )
            state = self._state
            progress = self._progress(message, data)
            if state.queued is None:
                state.queued = []
            state.queued.append(progress)
            return
        try:
            anyio.from_thread.run(self._checked_progress, message, data)
        except anyio.NoEventLoopError:
            raise RuntimeError(
                "emit_progress_sync() works only in a sync tool run by a ToolExecutor (in a worker thread, "
                "or inline=True); async tools use 'await ctx.emit_progress(...)'"
            ) from None

    async def _publish_queued(self) -> None:
        """Publish the progress an ``inline=True`` tool reported while it ran, in order."""
        queued, self._state.queued = self._state.queued, None
        for progress in queued or ():
            await self._emit(progress)

    def has_listeners(self) -> bool:
        """Whether anyone receives this call's progress (a subscription or a callback that takes
        ``ToolProgress``), so that a tool can skip building progress nobody would see (an agent used as a tool
        forwards its run's events, and streams its model calls, only then).

        >>> ToolContext(run_id="r", step=0, call_id="c", tool_name="t", emit=print, listening=lambda: False
        ... ).has_listeners()
        False
        """
        return self._listening is None or self._listening()

    def add_usage(self, usage: TokenUsage) -> None:
        """Count tokens this call spent on model calls of its own (a sub-agent's run, a summary) toward the
        run: its ``usage`` (the result's, ``StepFinished``'s) and its ``max_tokens`` budget, which then stops
        the run before its next model call. Not a model call: no ``UsageReported`` event is published.

        Safe from a sync tool's worker thread too (the count is made on the event loop).

        >>> ToolContext(run_id="r", step=0, call_id="c", tool_name="t", emit=print).add_usage(TokenUsage())
        """
        sink = self._usage
        if sink is None:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            # A worker thread: the run's sums are only ever updated on the loop, so no update is lost.
            try:
                anyio.from_thread.run_sync(sink.add_usage, usage)
            except anyio.NoEventLoopError:
                raise RuntimeError(
                    "add_usage() is called on the event loop or from a sync tool's worker thread"
                ) from None
            return
        sink.add_usage(usage)

    @property
    def tokens_left(self) -> int | None:
        """The run's token budget (``AgentOptions.max_tokens``) left now, usage reported by tools included
        (0 when spent); ``None`` when the run has no budget. A tool that calls a model can stay within it.

        >>> print(ToolContext(run_id="r", step=0, call_id="c", tool_name="t", emit=print).tokens_left)
        None
        """
        sink = self._usage
        return None if sink is None else sink.tokens_left()

    def _finish(self) -> None:
        self._state.finished = True
