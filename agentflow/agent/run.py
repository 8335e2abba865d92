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

``run.stream_output()`` reads the run's events instead, for its output as the answer streams::

    async with agent.stream("A day in Paris?") as run:   # an Agent(..., output_type=Itinerary)
        async for itinerary in run.stream_output():   # Itinerary(city='Par', stops=[]), …, run.result.output
            print(itinerary)

The methods that start runs (``stream``, ``run`` and ``run_sync`` of ``Agent`` and ``Session``) are
``RunStarter``'s (``agentflow.agent.run_starter``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic

import anyio
from anyio.abc import TaskGroup

from ..bus import (
    EventBus,
    EventTypes,
    Policy,
    Subscription,
)
from ..model.events import Event
from ..result import AgentResult, OutputT, StopReason
from ..runtimes.base import AgentRuntime
from ..runtimes.context import RestorePoint, RunContext
from ..tools.approval import ApprovalNotPendingError, ToolApprovalRequest, ToolApprovals
from .stored_turns import StoredTurns
from .stores import SessionConflictError, SessionStoreError
from .turns import holding

if TYPE_CHECKING:
    from .output_stream import OutputReader
    from .turns import Turns

__all__ = ["AgentRun"]

_log = logging.getLogger("agentflow")


class AgentRun(Generic[OutputT]):
    """One run of an agent, started when the ``async with`` block is entered.

    - ``async for event in run`` yields the run's events (those of ``types``, if given) in order and stops
      after the terminal event (``RunFinished``, ``RunFailed`` or ``RunCancelled``).
    - ``run.result`` is the ``AgentResult`` once the run has ended (the partial result for a cancelled run);
      for a failed run it raises the run's exception (also in ``run.error``).
    - ``await run.wait()`` waits for the end (discarding unread events) and returns ``run.result``.
    - ``await run.cancel()`` asks the run to stop; it ends with ``RunCancelled``, which the iteration yields.
    - ``run.approve(call_id)`` / ``run.deny(call_id, reason)`` decide a call waiting for approval (a tool
      with ``needs_approval``, when the run has no ``tool_approval`` function: ``ToolApprovalRequested``
      announced it); ``run.pending_approvals`` lists the calls waiting.
    - ``run.stream_output()`` reads the events itself and yields the output as the answer streams, then
      ``run.result.output``; ``run.stream_json()`` the answer's JSON so far (see there).
    - ``run.dropped`` counts the deltas a ``policy="drop_deltas"`` iteration skipped; ``run.coalesced`` the
      deltas a ``policy="coalesce_deltas"`` iteration got merged into others (none of their text is lost).
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
        # ``rollback_on_failure``: the memory as the run found it, taken once it holds its turn
        # (``RunContext.restore_point``; a resumed run's moves past the calls it decided).
        self._rollback = rollback and turns is not None
        if turns is not None:
            # Taken by the run itself, inside its scopes (``RunContext.wait_turn``); ``_release`` drops the
            # references again, so the context and this handle do not keep each other alive.
            ctx.wait_turn = self._wait_turn
            if self._rollback or isinstance(turns, StoredTurns):
                # Rolled back and saved before the terminal event, so whoever sees the run end (events,
                # SSE, tracing) sees a save that failed as the run's failure.
                ctx.before_terminal = self._end_turn
        if ctx.tools.toolsets:
            # Tools listed per run (MCP servers): listed where a session's run waits for its turn, inside
            # the run's scopes and before its first model call, so a toolset that cannot list fails the run
            # there (``RunFailed``, as a session store that cannot load does).
            ctx.wait_turn = self._list_tools
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
        """How many delta events the iteration skipped because its buffer was full (with
        ``policy="drop_deltas"``, or ``ToolProgress`` with ``policy="coalesce_deltas"``; boundaries and the
        terminal event are never dropped). A UI can tell the user some text was skipped; ``ModelCompleted``
        still carries all of it."""
        return self._subscription.dropped if self._subscription is not None else 0

    @property
    def coalesced(self) -> int:
        """How many delta events the iteration got merged into the one before them in their stream because
        its buffer was full (only ever with ``policy="coalesce_deltas"``): the text is all there, in fewer
        events, and a merged event's ``seq`` is its last piece's. ``ToolProgress`` does not merge: it is
        dropped and counted in ``dropped``."""
        return self._subscription.coalesced if self._subscription is not None else 0

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
        if isinstance(self._turns, StoredTurns):
            # The session's stored conversation, read on its first turn, before the run touches memory; a
            # failure fails the run here (``SessionStoreError``), before its model is called.
            await self._turns.load(self.ctx.memory)
        if self._rollback:
            self.ctx.restore_point = RestorePoint(self.ctx.memory.snapshot())

    async def _list_tools(self) -> None:
        """``RunContext.wait_turn`` of a run whose tools include toolsets: its turn first (a session's run),
        then its registry, with the tools its toolsets list now (``ToolRegistry.for_run``)."""
        if self._turns is not None:
            await self._wait_turn()
        else:
            self.ctx.wait_turn = None  # this handle and the context no longer refer to each other
        self.ctx.tools = await self.ctx.tools.for_run()

    def _release(self) -> None:
        self.ctx.wait_turn = None
        self.ctx.before_terminal = None
        if self._held is not None:
            self._held.release()
            self._held = None

    async def _drive(self) -> None:
        try:
            if self._turns is None:
                await self._runtime.execute(self.ctx)
            else:
                # Its tools see the turns it holds: a session on them opened there must not wait for it.
                with holding(self._turns):
                    await self._runtime.execute(self.ctx)
        except Exception as exc:
            # Already published as RunFailed; the caller gets it from run.result / run.wait().
            if self.ctx.error is None:
                self.ctx.error = exc
        finally:
            if self._turns is not None:
                try:
                    hook = self.ctx.before_terminal
                    if hook is not None:
                        # A runtime whose own ``execute`` skipped it: the turn still ends (after the terminal
                        # event, then), so memory is rolled back and the conversation saved all the same.
                        self.ctx.before_terminal = None
                        late = await hook()
                        if late is not None and self.ctx.error is None:
                            self.ctx.error = late
                finally:
                    self._release()  # in the task that took the session's lock, the one that must release it
            self._ended = True
            if self._done is not None:
                self._done.set()

    async def _end_turn(self) -> Exception | None:
        """``RunContext.before_terminal`` of a session's run: a failed run's memory put back
        (``rollback_on_failure``), then a stored session's save; the ``SessionStoreError`` that fails the run
        if the save fails."""
        if self._rollback:
            self._roll_back()
        if self._held is None or not isinstance(self._turns, StoredTurns):
            return None  # no turn taken (cancelled while waiting for it), or nothing to save
        return await self._save(self._turns, self.ctx.new_items)

    def _roll_back(self) -> None:
        """A failed run of a ``rollback_on_failure`` session: memory as the run found it, before the turn
        passes on (a run queued behind this one must not start on the failed turn, nor lose its own input
        to a rollback done later), and ``new_items`` cut to match, so nothing taken back is saved. For a
        resumed run, as it was once its decided calls had their results: those stay, and are saved."""
        error = self.ctx.error
        if error is None:  # finished or cancelled: the run's work stays
            return
        try:
            self.ctx.roll_back()  # nothing without a restore point (no turn taken, or a resume cut short)
        except Exception as exc:  # the run has failed already: say so on its error, raise nothing new
            error.add_note(f"Rolling the session's memory back failed as well: {type(exc).__name__}: {exc}")

    async def _save(self, turns: StoredTurns, items: Sequence[Any]) -> SessionStoreError | None:
        """The end of a stored session's turn: append what the run wrote. Never raises (this is the run's
        ending, maybe under a cancellation): a failure is logged, and is either the error that fails the run
        (``SessionStoreError`` carrying the run's result as ``run_result``) or, for a run that failed anyway,
        a note on its error."""
        error = await turns.save(items)
        if error is None:
            return None
        # Logged in every case: a web handler may drop the run's error, and an operator needs the store's. A
        # conflict is no fault of the store's: expected where processes share a database, and retryable.
        if isinstance(error, SessionConflictError):
            _log.warning("run %s: %s", self.run_id, error)
        else:
            _log.error("run %s: %s", self.run_id, error, exc_info=error)
        if self.ctx.error is not None:
            cause = error.__cause__
            self.ctx.error.add_note(
                f"Saving the session's conversation failed as well ({type(cause).__name__}: {cause}); what "
                "the run wrote stays in the session's memory, to be saved with the next run's"
            )
            return None
        error.run_result = self.ctx.result
        return error

    # -- events ----------------------------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[Event]:
        # ``async for`` reads the subscription itself: one call less per event on the hot path. A session's
        # turn ends before the terminal event (``_end_turn``), so nothing of the run is left after the loop.
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

    # -- output as it streams --------------------------------------------------------------------------------

    def stream_output(self, *, debounce: float | None = 0.1) -> AsyncIterator[OutputT]:
        """The run's output while its answer streams: values of the output type, each one the answer so far
        read into it, then the final output (``run.result.output``, validated) last.

        A partial value is what the answer so far reads as with the type's plain schema: a string being
        written is cut where the text stops (``city='Par'``), a number or ``true`` being written is
        left out until it is whole, and a field with a default may be missing; a required field may not,
        so parts that do not read yet (a half-written list item, a field not begun) are left out, innermost
        first, until it reads (``list[City]`` grows city by city). An attrs class whose fields are all
        required reads only once its last field has begun: ``stream_json()`` shows it sooner, as a dict.
        A value is yielded when it differs from the one before, at most once per ``debounce`` seconds
        (``None``: as often as it changes; reading decodes the whole answer so far, so keep one for long
        answers). Validators run on the final output only. For a run without an output type, each value is
        the answer's text so far.

        Partial values come from the text of a step that may be the answer (on both protocols, with
        ``mode="prompted"`` too, past prose, a Markdown fence or a leading ``<think>`` block): they stop for
        a step once it calls a tool or refuses, and start again with the next answer, as after an answer
        the output type rejected (``OutputRejected``). So only the last value is sure to be the output.
        A run whose runtime answers otherwise (CodeAct), or whose events were subscribed to with ``types``
        that leave out ``TextDelta``, ``StepStarted`` or ``ToolCallStarted``, or with
        ``policy="drop_deltas"``, yields its final output alone.

        It reads the run's events as ``async for event in run`` does, so use one or the other (a loop that
        stopped early can be followed by this, which goes on from there: a step already begun gives no partial
        values), and a loop slow to come back slows the run, as for the events. To do both, iterate the run
        and feed each event to ``output_reader()``. Ends with the run: raises the run's error if it failed (as
        ``result`` does), and yields no final output when the run ended without one (cancelled, a refusal, a
        limit: see ``result``). Breaking out of the loop only stops reading, as it does for the events.

        For type checkers it yields the run's output type: ``AgentRun[City]`` gives ``City``.
        """
        return self._outputs(self._output_events(), _seconds(debounce), json=False)

    def stream_json(self, *, debounce: float | None = 0.1) -> AsyncIterator[Any]:
        """The run's answer as JSON while it streams: dicts, lists and scalars, as ``orjson.loads`` gives
        them, of what the answer holds so far (a wrapped type's value unwrapped from ``{"result": …}``),
        then the final output's JSON form (``run.result.output`` as ``to_dict()`` writes it) last.

        For a type that cannot be built from part of an answer (an attrs class whose fields are all
        required): its fields show as the model writes them (``{"name": "Par"}``, then ``{"name": "Paris",
        "population": 2102650}``). Each value is a prefix of the answer's whole JSON: a string may still
        grow, a container gain members; a number, a key or a literal shows only once it is whole (see
        ``agentflow.runtimes.partial_json``). Otherwise as ``stream_output``: the same steps, debounce,
        ending and exclusivity. ``TypeError`` for a run without an output type (``stream_output()``
        yields its text).
        """
        if self.ctx.output_type is None:
            raise TypeError("this run has no output type: its answer is text, which stream_output() yields")
        return self._outputs(self._output_events(), _seconds(debounce), json=True)

    def output_reader(self) -> OutputReader[OutputT]:
        """A reader of this run's output from its events, for a loop that iterates the run itself::

            reader = run.output_reader()
            async for event in run:
                ...  # every event, as usual
                if reader.feed(event) and (partial := reader.partial()) is not None:
                    show(partial)  # the answer so far, as stream_output() yields it

        See ``agentflow.agent.output_stream.OutputReader``. Feed it every event of the run from the
        start (a reader that missed a step's start waits for the next step).
        """
        from .output_stream import OutputReader, streams_answer

        return OutputReader(self.ctx.output_type, partials=streams_answer(self._runtime))

    def _output_events(self) -> Subscription[Event]:
        if not self._entered:
            raise RuntimeError("enter the run first: 'async with agent.stream(...) as run'")
        if self._subscription is None:
            raise RuntimeError("this run was started without an event subscription")
        return self._subscription

    async def _outputs(
        self, events: Subscription[Event], debounce: float | None, *, json: bool
    ) -> AsyncIterator[Any]:
        from ..events import StepStarted
        from ..model.events import TextDelta, ToolCallStarted, to_jsonable
        from .output_stream import partial_values

        reader = self.output_reader()
        kinds = events.types
        if self._policy != "drop_deltas" and (
            kinds is None or all(issubclass(k, kinds) for k in (TextDelta, StepStarted, ToolCallStarted))
        ):
            # Closed with this generator, not left to the garbage collector, when the consumer stops early.
            async with contextlib.aclosing(
                partial_values(events, reader, debounce=debounce, json=json)
            ) as values:
                async for value in values:
                    yield value
        else:
            with contextlib.suppress(StopAsyncIteration):  # partial values would miss text: read to the end
                while True:
                    await events.__anext__()  # not ``async for``, which closes the subscription when left
        if self._done is not None:
            await self._done.wait()
        if self.ctx.error is not None:
            raise self.ctx.error
        result = self.ctx.result
        if result is not None and (
            result.output is not None or result.stop_reason is StopReason.FINAL_ANSWER
        ):
            yield to_jsonable(result.output) if json else result.output

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

    # -- approvals -------------------------------------------------------------------------------------------

    def approve(self, call_id: str) -> None:
        """Approve the tool call ``call_id``, which waits for a decision (its ``ToolApprovalRequested`` was
        published): it runs as soon as it gets a concurrency slot.

        ``ApprovalNotPendingError`` (a ``KeyError``) if no call of this run with that id waits: an unknown
        id, a call already decided, or one whose run has ended. Call it in the event loop the run runs in
        (another request handler of the same app, say). See ``agentflow.tools.approval``.
        """
        self._approvals(call_id).approve(call_id)

    def deny(self, call_id: str, reason: str | None = None) -> None:
        """Deny the tool call ``call_id``, which waits for a decision: it does not run, and the model gets a
        ``TOOL_ERROR`` of type ``denied`` saying ``reason`` (a default text when ``None``), as the call's
        result. Errors as ``approve``'s."""
        self._approvals(call_id).deny(call_id, reason)

    @property
    def pending_approvals(self) -> tuple[ToolApprovalRequest, ...]:
        """The tool calls of this run waiting for ``approve`` / ``deny`` now, in the order they asked (empty
        for a run whose tools need no approval): what a page reconnecting to the run shows again."""
        approvals = self.ctx.approvals
        return () if approvals is None else approvals.pending

    def _approvals(self, call_id: str) -> ToolApprovals:
        approvals = self.ctx.approvals
        if approvals is None:
            raise ApprovalNotPendingError(
                call_id,
                f"no tool call {call_id!r} waits for approval: no call of this run has asked for one (its "
                "tools need approval only with @tool(needs_approval=...))",
            )
        return approvals

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


def _seconds(debounce: float | None) -> float | None:
    if debounce is None:
        return None
    if isinstance(debounce, bool) or not isinstance(debounce, int | float) or not debounce >= 0:
        raise ValueError(f"debounce must be a number of seconds >= 0, or None, got {debounce!r}")
    return float(debounce)
