"""``AgentRun``: the handle on one run — its events, its result, and how to stop it.

::

    async with agent.stream("What is the weather in Paris?") as run:
        async for event in run:          # every event, as it happens; ends after the terminal event
            ...
        print(run.result.output_text)

The run's task lives in a task group owned by the ``async with`` block (no detached task). Events reach the
consumer through a bounded subscription on the run's ``EventBus``, subscribed before the run starts, so none
is missed; a slow consumer slows the run (backpressure). Leaving the block before the run has ended — by
``break``, an exception, or the task being cancelled — cancels the run and waits until it has closed cleanly:
model stream and tools stopped, memory completed, ``RunCancelled`` published. ``agent.run()`` is this same
handle without a subscription, driven in the calling task (nothing runs beside it, so it needs no task).

``RunStarter`` is what ``Agent`` and ``Session`` share: ``stream``, ``run`` and ``run_sync``, one
implementation for both, on the memory each of them names (or a fresh one holding ``history=``), each with
callbacks of its own (``on=``). A session's run that fails puts its memory back here, inside its turn, when
the session asks for it (``rollback_on_failure``). All three are generic in the run's output type,
for type checkers only (``Agent[City]``'s runs give ``AgentResult[City]``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, overload

import anyio
from anyio.abc import TaskGroup

from ..bus import (
    EventBus,
    EventTypes,
    Policy,
    Subscription,
    check_subscription_options,
    normalise_event_types,
)
from ..model.events import Event
from ..model.messages import Message
from ..result import AgentResult, OutputT
from ..runtimes.base import AgentRuntime
from ..runtimes.context import RunContext
from ..runtimes.output import AGENT_DEFAULT, AgentDefault, OutputType, TypeForm
from .item_shapes import to_items

if TYPE_CHECKING:
    from .agent import Agent, AgentInput
    from .memory import Memory
    from .turns import Turns

__all__ = ["AgentRun", "RunListeners", "RunStarter", "run_sync"]

_T = TypeVar("_T")
_U = TypeVar("_U")


RunListeners: TypeAlias = Iterable[tuple[EventTypes, Callable[[Any], Any]]]
"""Callbacks for one run (``on=``): ``(event types, callback)`` pairs, what ``agent.on(types, callback)``
takes."""


class RunStarter(Generic[OutputT]):
    """Starts runs of an agent: ``stream`` (iterate the events) and ``run`` / ``run_sync`` (the result).

    ``Agent`` and ``Session`` both are one. A session's runs (and those of an agent built with a ``memory``
    instance) continue its conversation and wait for the earlier runs on it to end; an agent's other runs
    each get a fresh memory (holding ``history``, if given) and run at once.

    Every way of starting a run takes ``on=[(types, callback), …]``: callbacks for that run alone, as
    ``agent.on`` registers them for every run (see ``EventBus.on``), checked at the call (``TypeError``).
    """

    __slots__ = ()

    def _run_on(self) -> tuple[Agent[OutputT], Memory | None, Turns | None, bool]:
        """The agent, the memory of the next run (``None``: a fresh one), the turns its runs take and whether
        a failed run's memory is rolled back."""
        raise NotImplementedError

    @overload
    def stream(
        self,
        input: AgentInput,
        *,
        types: EventTypes = ...,
        buffer: int = ...,
        policy: Policy = ...,
        run_id: str | None = ...,
        output_type: AgentDefault = ...,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
    ) -> AgentRun[OutputT]: ...

    @overload
    def stream(
        self,
        input: AgentInput,
        *,
        types: EventTypes = ...,
        buffer: int = ...,
        policy: Policy = ...,
        run_id: str | None = ...,
        output_type: None,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
    ) -> AgentRun[str]: ...

    @overload
    def stream(
        self,
        input: AgentInput,
        *,
        types: EventTypes = ...,
        buffer: int = ...,
        policy: Policy = ...,
        run_id: str | None = ...,
        output_type: type[_T] | OutputType[_T],
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
    ) -> AgentRun[_T]: ...

    @overload
    def stream(
        self,
        input: AgentInput,
        *,
        types: EventTypes = ...,
        buffer: int = ...,
        policy: Policy = ...,
        run_id: str | None = ...,
        output_type: TypeForm,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
    ) -> AgentRun[Any]: ...

    def stream(
        self,
        input: AgentInput,
        *,
        types: EventTypes = None,
        buffer: int = 256,
        policy: Policy = "backpressure",
        run_id: str | None = None,
        output_type: Any = AGENT_DEFAULT,
        history: Iterable[Any] | None = None,
        on: RunListeners | None = None,
    ) -> AgentRun[Any]:
        """A run whose events you iterate: ``async with agent.stream(x) as run: async for event in run``.

        ``types`` limits the events delivered (a class, a union such as ``agentflow.events.TerminalEvent``,
        or a tuple of those), ``buffer``/``policy`` shape the subscription (see ``EventBus.subscribe``); all
        three are checked here, not when the block is entered. Model calls stream unless ``options.stream``
        is ``False``. ``output_type`` replaces the agent's for this run (``None``: the answer's text).
        ``history`` and ``on`` are as for ``run``.
        """
        kinds = normalise_event_types(types)
        check_subscription_options(buffer, policy)
        agent, memory, turns, rollback = self._run_on()
        return agent._new_run(
            input,
            memory=memory,
            turns=turns,
            rollback=rollback,
            subscribe=True,
            types=kinds,
            buffer=buffer,
            policy=policy,
            run_id=run_id,
            output_type=output_type,
            history=_history(history, memory),
            listeners=_listeners(on),
        )

    @overload
    async def run(
        self,
        input: AgentInput,
        *,
        run_id: str | None = ...,
        output_type: AgentDefault = ...,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
    ) -> AgentResult[OutputT]: ...

    @overload
    async def run(
        self,
        input: AgentInput,
        *,
        run_id: str | None = ...,
        output_type: None,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
    ) -> AgentResult[str]: ...

    @overload
    async def run(
        self,
        input: AgentInput,
        *,
        run_id: str | None = ...,
        output_type: type[_T] | OutputType[_T],
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
    ) -> AgentResult[_T]: ...

    @overload
    async def run(
        self,
        input: AgentInput,
        *,
        run_id: str | None = ...,
        output_type: TypeForm,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
    ) -> AgentResult[Any]: ...

    async def run(
        self,
        input: AgentInput,
        *,
        run_id: str | None = None,
        output_type: Any = AGENT_DEFAULT,
        history: Iterable[Any] | None = None,
        on: RunListeners | None = None,
    ) -> AgentResult[Any]:
        """Run to the end and return the result.

        ``output_type`` replaces the agent's for this run (``None``: the answer's text; see ``OutputType``),
        e.g. one typed turn in a free-text session: ``await chat.run("Sum it up.", output_type=Summary)``.

        ``history``: the conversation so far (items, e.g. the ``new_items`` of earlier runs you stored), which
        this run continues in a fresh memory: the model sees it before ``input``, and ``result.new_items``
        lists only this run's items (its input and what followed), ready to append to your store. Not for a
        session's runs, which continue the session's memory (``TypeError``).

        ``on``: callbacks for this run alone, ``[(TextDelta, send), (ToolSucceeded, log)]``, as
        ``agent.on`` registers for every run (a web handler's callbacks on a shared agent go here).

        A failed run raises its exception (a ``ModelError``, ``MaxStepsExceeded``…); a run cut short by
        ``options.timeout`` returns its partial result (``StopReason.DEADLINE``); cancelling the calling task
        cancels the run cleanly and re-raises the cancellation.
        """
        agent, memory, turns, rollback = self._run_on()
        run = agent._new_run(
            input,
            memory=memory,
            turns=turns,
            rollback=rollback,
            subscribe=False,
            run_id=run_id,
            output_type=output_type,
            history=_history(history, memory),
            listeners=_listeners(on),
        )
        return await run._run_here()

    @overload
    def run_sync(
        self,
        input: AgentInput,
        *,
        run_id: str | None = ...,
        output_type: AgentDefault = ...,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
    ) -> AgentResult[OutputT]: ...

    @overload
    def run_sync(
        self,
        input: AgentInput,
        *,
        run_id: str | None = ...,
        output_type: None,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
    ) -> AgentResult[str]: ...

    @overload
    def run_sync(
        self,
        input: AgentInput,
        *,
        run_id: str | None = ...,
        output_type: type[_T] | OutputType[_T],
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
    ) -> AgentResult[_T]: ...

    @overload
    def run_sync(
        self,
        input: AgentInput,
        *,
        run_id: str | None = ...,
        output_type: TypeForm,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
    ) -> AgentResult[Any]: ...

    def run_sync(
        self,
        input: AgentInput,
        *,
        run_id: str | None = None,
        output_type: Any = AGENT_DEFAULT,
        history: Iterable[Any] | None = None,
        on: RunListeners | None = None,
    ) -> AgentResult[Any]:
        """``run`` for scripts and notebooks without a running event loop (see ``agentflow.run_sync``)."""
        return run_sync(self, input, run_id=run_id, output_type=output_type, history=history, on=on)


def _history(history: Iterable[Any] | None, memory: Memory | None) -> tuple[Any, ...] | None:
    """``history=`` checked: ``None``, or the items (``Message`` values as items, as a run stores them)."""
    if history is None:
        return None
    if memory is not None:
        raise TypeError(
            "history= is for runs that start from a fresh memory; this run continues a session's memory "
            "(agent.session() or Agent(memory=...)), which holds its history already. Load stored items "
            "into the session's memory instead: agent.session(InMemoryMemory(items))"
        )
    if isinstance(history, str | bytes | Mapping) or not isinstance(history, Iterable):
        raise TypeError(
            "history= takes a list of conversation items (dicts or Message values), "
            f"got {type(history).__name__}"
        )
    items = tuple(history)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping | Message):
            raise TypeError(
                f"history item {index} is a {type(item).__name__}; items are dicts or Message values"
            )
    return tuple(to_items(items))


def _listeners(on: RunListeners | None) -> tuple[tuple[EventTypes, Callable[[Any], Any]], ...] | None:
    """``on=`` checked now (``TypeError``): a bad registration must not fail the run later."""
    if on is None:
        return None
    if isinstance(on, str | bytes | Mapping) or not isinstance(on, Iterable):
        raise TypeError(
            f"on= takes (event types, callback) pairs, e.g. on=[(TextDelta, send)], got {type(on).__name__}"
        )
    checked: list[tuple[EventTypes, Callable[[Any], Any]]] = []
    for entry in on:
        if not isinstance(entry, tuple) or len(entry) != 2:
            raise TypeError(
                f"on= takes (event types, callback) pairs, e.g. on=[(TextDelta, send)], got {entry!r}"
            )
        types, callback = entry
        kinds = normalise_event_types(types)
        if not callable(callback):
            raise TypeError(
                f"on=: callback must be callable (it is called with each event), got {callback!r}"
            )
        checked.append((kinds, callback))
    return tuple(checked)


@overload
def run_sync(
    target: RunStarter[_T],
    input: AgentInput,
    *,
    run_id: str | None = ...,
    output_type: AgentDefault = ...,
    history: Iterable[Any] | None = ...,
    on: RunListeners | None = ...,
) -> AgentResult[_T]: ...


@overload
def run_sync(
    target: RunStarter[_T],
    input: AgentInput,
    *,
    run_id: str | None = ...,
    output_type: None,
    history: Iterable[Any] | None = ...,
    on: RunListeners | None = ...,
) -> AgentResult[str]: ...


@overload
def run_sync(
    target: RunStarter[_T],
    input: AgentInput,
    *,
    run_id: str | None = ...,
    output_type: type[_U] | OutputType[_U],
    history: Iterable[Any] | None = ...,
    on: RunListeners | None = ...,
) -> AgentResult[_U]: ...


@overload
def run_sync(
    target: RunStarter[_T],
    input: AgentInput,
    *,
    run_id: str | None = ...,
    output_type: TypeForm,
    history: Iterable[Any] | None = ...,
    on: RunListeners | None = ...,
) -> AgentResult[Any]: ...


def run_sync(
    target: RunStarter[Any],
    input: AgentInput,
    *,
    run_id: str | None = None,
    output_type: Any = AGENT_DEFAULT,
    history: Iterable[Any] | None = None,
    on: RunListeners | None = None,
) -> AgentResult[Any]:
    """Run an agent (or a session's next turn) from synchronous code, in a fresh event loop.

    For scripts and notebooks without a running loop. The agent's model connections are closed before it
    returns, since they belong to that loop (the next call opens new ones). Inside async code, ``await
    agent.run(...)`` instead. ``run_id``, ``output_type``, ``history`` and ``on`` are as for ``agent.run``.
    """
    agent = target._run_on()[0]

    async def main() -> AgentResult[Any]:
        try:
            # ``output_type`` is ``Any`` here, so every overload of ``run`` matches and mypy infers ``Any``.
            result: AgentResult[Any] = await target.run(
                input, run_id=run_id, output_type=output_type, history=history, on=on
            )
            return result
        finally:
            with anyio.CancelScope(shield=True):
                await agent.aclose()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(main)
    raise RuntimeError(
        "run_sync() cannot be used inside a running event loop; use 'await agent.run(...)' there"
    )


class AgentRun(Generic[OutputT]):
    """One run of an agent, started when the ``async with`` block is entered.

    - ``async for event in run`` yields the run's events (those of ``types``, if given) in order and stops
      after the terminal event (``RunFinished``, ``RunFailed`` or ``RunCancelled``).
    - ``run.result`` is the ``AgentResult`` once the run has ended (the partial result for a cancelled run);
      for a failed run it raises the run's exception (also in ``run.error``).
    - ``await run.wait()`` waits for the end (discarding unread events) and returns ``run.result``.
    - ``await run.cancel()`` asks the run to stop; it ends with ``RunCancelled``, which the iteration yields.
    - ``run.dropped`` counts the deltas a ``policy="drop_deltas"`` iteration skipped.
    - ``break`` only stops reading: the run goes on while its buffer has room, then waits for the reader
      (backpressure); leaving the block cancels it if it has not ended (``await run.wait()`` first lets it
      finish). Iterating again resumes where the loop stopped.
    An ``AgentRun`` can be entered once.
    """

    __slots__ = (
        "_buffer",
        "_done",
        "_ended",
        "_entered",
        "_held",
        "_policy",
        "_rollback",
        "_runtime",
        "_snapshot",
        "_subscribe",
        "_subscription",
        "_task_group",
        "_turns",
        "_types",
        "ctx",
    )

    def __init__(
        self,
        runtime: AgentRuntime,
        ctx: RunContext,
        *,
        subscribe: bool = True,
        types: EventTypes = None,
        buffer: int = 256,
        policy: Policy = "backpressure",
        turns: Turns | None = None,
        rollback: bool = False,
    ) -> None:
        self._runtime = runtime
        self.ctx = ctx
        """The run's context: configuration and live state (step, usage, tool calls…)."""
        self._subscribe = subscribe
        # Copied (a list could change under the run); a string is left for the bus to refuse whole.
        self._types = tuple(types) if isinstance(types, Sequence) and not isinstance(types, str) else types
        self._buffer = buffer
        self._policy: Policy = policy
        self._turns = turns
        self._held: anyio.Lock | None = None
        # ``rollback_on_failure``: the memory as the run found it, taken once it holds its turn.
        self._rollback = rollback and turns is not None
        self._snapshot: tuple[Any, ...] | None = None
        if turns is not None:
            # Taken by the run itself, inside its scopes (``RunContext.wait_turn``); ``_release`` drops the
            # reference again, so the context and this handle do not keep each other alive.
            ctx.wait_turn = self._wait_turn
        self._subscription: Subscription[Event] | None = None
        self._task_group: TaskGroup | None = None
        # Set when the run has ended; the Event exists only for a run driven in its own task (``async with``).
        self._ended = False
        self._done: anyio.Event | None = None
        self._entered = False

    def __repr__(self) -> str:
        state = "ended" if self._ended else ("running" if self._entered else "not started")
        return f"AgentRun({self.run_id!r}, {state})"

    @property
    def run_id(self) -> str:
        """The run's id (every event of the run carries it)."""
        return self.ctx.run_id

    @property
    def bus(self) -> EventBus:
        """The run's event bus: add callbacks or subscriptions here before entering the block."""
        return self.ctx.bus

    @property
    def done(self) -> bool:
        """Whether the run has ended."""
        return self._ended

    @property
    def dropped(self) -> int:
        """How many delta events the iteration skipped because its buffer was full (only ever with
        ``policy="drop_deltas"``; boundaries and the terminal event are never dropped). A UI can tell the user
        some text was skipped; ``ModelCompleted`` still carries all of it."""
        return self._subscription.dropped if self._subscription is not None else 0

    # -- lifecycle -------------------------------------------------------------------------------------------

    async def __aenter__(self) -> AgentRun[OutputT]:
        if self._entered:
            raise RuntimeError("this AgentRun was already started; call agent.stream() again for a new run")
        self._entered = True
        try:
            if self._subscribe:
                self._subscription = self.ctx.bus.subscribe(
                    self._types, buffer=self._buffer, policy=self._policy
                )
            self._done = anyio.Event()
            task_group = anyio.create_task_group()
            await task_group.__aenter__()
        except BaseException:
            self._release()
            raise
        self._task_group = task_group
        task_group.start_soon(self._drive, name=f"agentflow run {self.run_id}")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if not self._ended and self.ctx.cancel_scope is not None:
                # Leaving early (break, exception, cancellation) cancels the run; it still closes cleanly.
                self.ctx.cancel_scope.cancel()
            if self._subscription is not None:
                # Nobody reads any more: unblock a run waiting on this subscriber's full buffer.
                self._subscription.close()
            assert self._task_group is not None
            # The block's own exception is not handed to the task group (it would come back wrapped in an
            # ExceptionGroup); it propagates unchanged once the run has ended.
            try:
                await self._task_group.__aexit__(None, None, None)
            except BaseExceptionGroup as group:
                # ``_drive`` keeps Exceptions; what escapes is a BaseException such as SystemExit raised in a
                # tool (the run has published RunFailed already): re-raise it as itself, not in a group.
                if len(group.exceptions) == 1:
                    raise group.exceptions[0] from None
                raise
        finally:
            self._release()

    async def _run_here(self) -> AgentResult[OutputT]:
        """Run to the end in the calling task and return ``result`` (what ``agent.run()`` does).

        With no subscriber nothing has to run beside the run, so it needs no task of its own: cancelling the
        calling task cancels the run (``RunCancelled``, then the cancellation propagates), as it would
        cancel the task of a run started with ``async with``.
        """
        if self._entered:
            raise RuntimeError("this AgentRun was already started; call agent.run() again for a new run")
        self._entered = True
        await self._drive()
        return self.result

    async def _wait_turn(self) -> None:
        # A session's runs share memory: one at a time, in the order they start (in this event loop).
        assert self._turns is not None
        lock = self._turns.lock()
        await lock.acquire()
        self._held = lock
        if self._rollback:
            self._snapshot = self.ctx.memory.snapshot()

    def _release(self) -> None:
        self.ctx.wait_turn = None
        if self._held is not None:
            self._held.release()
            self._held = None

    async def _drive(self) -> None:
        try:
            await self._runtime.execute(self.ctx)
        except Exception as exc:
            # Already published as RunFailed; the caller gets it from run.result / run.wait().
            if self.ctx.error is None:
                self.ctx.error = exc
        finally:
            if self._turns is not None:
                if self._snapshot is not None:
                    self._roll_back()
                self._release()  # in the task that took the session's lock, the one that must release it
            self._ended = True
            if self._done is not None:
                self._done.set()

    def _roll_back(self) -> None:
        """A failed run of a ``rollback_on_failure`` session: memory as the run found it, before the turn
        passes on (a run queued behind this one must not start on the failed turn, nor lose its own input
        to a rollback done later)."""
        snapshot, self._snapshot = self._snapshot, None
        error = self.ctx.error
        if snapshot is None or error is None:  # finished or cancelled: the run's work stays
            return
        try:
            self.ctx.memory.restore(snapshot)
        except Exception as exc:  # the run has failed already: say so on its error, raise nothing new
            error.add_note(f"Rolling the session's memory back failed as well: {type(exc).__name__}: {exc}")

    # -- events ----------------------------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[Event]:
        # ``async for`` reads the subscription itself: one call less per event on the hot path.
        if self._subscription is not None:
            return self._subscription
        return self  # whose __anext__ explains what is missing

    async def __anext__(self) -> Event:
        if self._subscription is None:
            if not self._entered:
                raise RuntimeError(
                    "enter the run first: 'async with agent.stream(...) as run: async for e in run'"
                )
            raise RuntimeError("this run was started without an event subscription")
        return await self._subscription.__anext__()

    # -- outcome ---------------------------------------------------------------------------------------------

    async def wait(self) -> AgentResult[OutputT]:
        """Wait until the run has ended (unread events are discarded) and return ``result``."""
        if not self._entered:
            raise RuntimeError("enter the run first: 'async with agent.stream(...) as run'")
        if self._subscription is not None:
            async for _ in self._subscription:
                pass
        if self._done is not None:
            await self._done.wait()
        return self.result

    async def cancel(self) -> None:
        """Ask the run to stop. It ends with ``RunCancelled`` (memory completed, usage kept); iterate or
        ``await run.wait()`` to see it. Cancelling an ended run does nothing."""
        if self.ctx.cancel_scope is not None:
            self.ctx.cancel_scope.cancel()

    @property
    def result(self) -> AgentResult[OutputT]:
        """The run's result; raises the run's exception if it failed, ``RuntimeError`` if it has not ended."""
        if not self._ended:
            raise RuntimeError("the run has not ended yet; iterate it to the end or 'await run.wait()'")
        if self.ctx.error is not None:
            raise self.ctx.error
        if self.ctx.result is None:
            raise RuntimeError("the run ended without a result (it was cancelled before it started)")
        return self.ctx.result

    @property
    def error(self) -> BaseException | None:
        """The exception of a failed run, else ``None``."""
        return self.ctx.error

    @property
    def partial(self) -> AgentResult[OutputT] | None:
        """The run's result so far: set when it ended in any way (for a failed run, its partial result)."""
        return self.ctx.result
