"""Human approval of tool calls: which calls need it (``@tool(needs_approval=...)``) and who decides.

A tool marked ``needs_approval=True`` (or ``needs_approval=fn``, ``fn(arguments) -> bool`` deciding per call
from its validated arguments) does not run until its call is approved. The run's ``ToolApprovals`` (one per
run that has such a tool) decides each such call, after its arguments are valid and before it takes a
concurrency slot or starts its time limit:

- with a ``tool_approval`` function (``AgentOptions(tool_approval=fn)``), that function decides:
  ``fn(request) -> bool | str`` or an awaitable of it, ``request`` a ``ToolApprovalRequest``. ``True``
  approves; ``False`` denies with ``DEFAULT_DENIAL``; a ``str`` denies with that text, which is what the
  model is told. ``ToolApprovalRequested`` is published first, so a UI can show the call either way;
- without one, in a run that has a handle (``async with agent.stream(...) as run``), the call waits for
  ``run.approve(call_id)`` or ``run.deny(call_id, reason)``, after ``ToolApprovalRequested`` announced it;
- without either (``agent.run()``, where nobody could answer), the run fails with
  ``ApprovalRequiredError``, which says what to configure: never a silent denial, never a hang;
- with ``tool_approval="defer"`` (``DEFER``), nobody decides in the run: the call is *deferred*. The run
  publishes ``ToolApprovalRequested``, runs the step's other calls, and ends with
  ``StopReason.APPROVAL_REQUIRED``, the call left open in memory and listed in
  ``AgentResult.pending_approvals``; a later run, in any process, resumes from the stored items with the
  decisions (``agent.run(history=items, approvals={call_id: True | False | "why"})``, checked by
  ``check_decisions``; ``agentflow.runtimes.resume`` acts on them). A run that cannot pause (an agent's run
  as another's tool, CodeAct's code calling a tool) fails with ``ApprovalNotDeferrableError`` instead.

A run of an agent used as a tool (``agentflow.agent.as_tool``) whose agent has no ``tool_approval`` of its own
asks the calling run's ``ToolApprovals`` (``sub_run_approver``): the caller's function decides, or the
caller's handle, under the id ``<calling call id>/<sub-call id>``; a deferring caller cannot (as above).

A denied call does not run: it gets ``ToolStarted`` and ``ToolFailed`` like any failed call, its result a
``TOOL_ERROR`` of type ``denied`` carrying the reason, fed back to the model. A decision that cannot be made
(the approval function or the ``needs_approval`` predicate raises, or returns something else than it must)
ends the run with that error: a call is never run, nor denied, on a decision nobody made. The call still
gets its result in memory (``denied``, saying why), as a call that ends the run does
(``agentflow.tools.failures``).

Waiting holds nothing: no concurrency slot, no time limit of the tool's; the run's own ``timeout`` and its
cancellation bound it, and a cancelled wait leaves nothing behind. Calls of one step are decided
independently: each waits on its own, beside the others, and runs as soon as it is approved.

This module decides; the ``ToolExecutor`` asks it, and runs or refuses the call. Pure bookkeeping and one
awaited decision, no tool execution here.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Final, TypeAlias

import anyio
import attrs

from ..events import ToolApprovalRequested
from ..model.events import Event
from ..model.messages import ToolCall
from ..result import ToolApprovalRequest, ToolResult
from .failures import ToolFatalError
from .outcome import tool_error_text

__all__ = [
    "DEFAULT_DENIAL",
    "DEFER",
    "DEFERRED",
    "ApprovalDecisionError",
    "ApprovalDecisions",
    "ApprovalNotDeferrableError",
    "ApprovalNotPendingError",
    "ApprovalRequiredError",
    "NeedsApproval",
    "ToolApprovalRequest",
    "ToolApprovals",
    "ToolApprover",
    "asks_approval",
    "check_decisions",
    "check_needs_approval",
    "deferred_result",
    "denied_result",
]

DEFAULT_DENIAL: Final = "the call was not approved, so it did not run"
"""What the model is told of a call denied without a reason (an approval function's ``False``,
``run.deny(call_id)``)."""

DEFER: Final = "defer"
"""``AgentOptions(tool_approval=DEFER)``: a call that needs approval is not decided in the run; the run pauses
(``StopReason.APPROVAL_REQUIRED``) and a later run resumes it with the decisions (``approvals=``)."""

DEFERRED: Final = "deferred"
"""The ``ToolResult.error_type`` of a deferred call's placeholder result (``deferred_result``): what the
executor returns for a call left for a later run. Never written to memory nor published."""

NeedsApproval: TypeAlias = bool | Callable[[dict[str, Any]], bool]
"""Whether a tool's calls need approval: ``True`` / ``False``, or a plain function of a call's validated
arguments (as the tool function would get them, context left out) that says so for each call."""


ToolApprover: TypeAlias = Callable[[ToolApprovalRequest], "bool | str | Awaitable[bool | str]"]
"""``AgentOptions.tool_approval``: decides a call, ``True`` (approve), ``False`` (deny) or the text the model
is told of the denial; sync or async."""

ApprovalDecisions: TypeAlias = Mapping[str, "bool | str"]
"""``approvals=`` of a run that resumes a paused one: each open call's id with its decision, ``True``
(approve), ``False`` (deny) or the text the model is told of the denial."""


class ApprovalRequiredError(Exception):
    """A call needs approval and the run has no way to ask for it: no ``tool_approval`` function, and no
    handle anyone could approve through (``agent.run()``; a sub-agent's run whose calling run has neither).
    The run fails with it.

    ``call`` is the call, ``tool`` its tool's name, ``unheard`` whether the run had a handle but nobody
    received its ``ToolApprovalRequested`` events.
    """

    def __init__(self, call: ToolCall, tool: str, *, unheard: bool = False) -> None:
        if unheard:
            how = (
                "nobody receives the run's ToolApprovalRequested events (its stream's types= leave them "
                "out): pass AgentOptions(tool_approval=fn), or stream those events too and answer with "
                "run.approve(call_id) / run.deny(call_id, reason)"
            )
        else:
            how = (
                "pass AgentOptions(tool_approval=fn) (a function that decides, per agent or per run: "
                "agent.run(x, options=...)), or start the run with 'async with agent.stream(...) as run' and "
                "answer with run.approve(call_id) / run.deny(call_id, reason)"
            )
        super().__init__(
            f"tool {tool!r} needs approval for call {call.id!r}, and this run has no way to ask for it: {how}"
        )
        self.call = call
        self.tool = tool
        self.unheard = unheard

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable (multiprocessing, task queues): the constructor's arguments, then the attributes set
        # since (a failed run's ``run_result``, notes).
        return (partial(type(self), unheard=self.unheard), (self.call, self.tool), dict(self.__dict__))


class ApprovalNotDeferrableError(ApprovalRequiredError, ToolFatalError):
    """``tool_approval="defer"`` where a run cannot pause: in a run of an agent used as another agent's tool
    (the calling run could not resume it), or for a call that CodeAct's code makes (the code cannot stop
    half-way and go on in another process). The run fails with it, and so does the calling run of an agent
    used as a tool (it is a ``ToolFatalError``): never a silent denial, never a hang.

    ``call`` is the call, ``tool`` its tool's name, ``where`` the run that cannot pause (as the message
    names it).
    """

    def __init__(self, call: ToolCall, tool: str, where: str) -> None:
        Exception.__init__(
            self,
            f"tool {tool!r} needs approval for call {call.id!r}, and its approval is deferred "
            f"(tool_approval='defer'), but {where} cannot pause: give that agent a tool_approval function "
            "that decides, or (for an agent used as a tool) mark the tool that calls it "
            "as_tool(..., needs_approval=True), so the calling run defers the whole call",
        )
        self.call = call
        self.tool = tool
        self.where = where

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.call, self.tool, self.where), dict(self.__dict__))


class ApprovalDecisionError(ValueError):
    """A run's ``approvals=`` does not match the calls its conversation left open: a call without a decision
    (``undecided``), a decision for no open call (``unknown``), or open calls that are not the conversation's
    last turn. Raised before anything runs, before any model call; memory is left as it was.

    >>> error = ApprovalDecisionError(undecided=("c2",), unknown=("c9",))
    >>> str(error).split(": ", 1)[1]
    "no decision for 'c2'; no open call 'c9'"
    """

    def __init__(
        self, *, undecided: tuple[str, ...] = (), unknown: tuple[str, ...] = (), message: str | None = None
    ) -> None:
        if message is None:
            parts = []
            if undecided:
                parts.append("no decision for " + ", ".join(repr(i) for i in undecided))
            if unknown:
                parts.append("no open call " + ", ".join(repr(i) for i in unknown))
            message = (
                "approvals= must decide every tool call the conversation left open, and only those: "
                + "; ".join(parts)
            )
        super().__init__(message)
        self.undecided = undecided
        """The open calls' ids that have no decision."""
        self.unknown = unknown
        """The decided ids that match no open call."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable: the constructor takes keywords only, and the message as it was.
        rebuild = partial(type(self), undecided=self.undecided, unknown=self.unknown, message=str(self))
        return (rebuild, (), dict(self.__dict__))


class ApprovalNotPendingError(KeyError):
    """``run.approve`` / ``run.deny`` for a call id that waits for no decision: unknown to the run, already
    decided, or its wait is over (the run was cancelled or ended). ``call_id`` is the id given."""

    def __init__(self, call_id: str, message: str) -> None:
        super().__init__(message)
        self.call_id = call_id
        self.message = message

    def __str__(self) -> str:
        return self.message  # not KeyError's repr of its argument

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.call_id, self.message), dict(self.__dict__))


def check_needs_approval(value: object) -> NeedsApproval:
    """``value`` if it can be a tool's ``needs_approval``, else a ``TypeError`` saying what can.

    >>> check_needs_approval(lambda arguments: arguments["amount"] > 100)  # doctest: +ELLIPSIS
    <function <lambda> at ...>
    >>> check_needs_approval("yes")
    Traceback (most recent call last):
    ...
    TypeError: needs_approval must be True, False or a function (arguments: dict) -> bool, got 'yes'
    """
    if isinstance(value, bool):
        return value
    if not callable(value) or isinstance(value, type):
        raise TypeError(
            f"needs_approval must be True, False or a function (arguments: dict) -> bool, got {value!r}"
        )
    if inspect.iscoroutinefunction(value) or inspect.iscoroutinefunction(type(value).__call__):
        raise TypeError(
            "needs_approval must be a plain function (arguments: dict) -> bool, not an async one: it decides "
            "from the call's arguments alone, at once; decide asynchronously (ask a service, a person) in "
            "AgentOptions(tool_approval=...)"
        )
    return value


def check_decisions(approvals: object) -> dict[str, str | None]:
    """``approvals=`` (call id → ``True`` / ``False`` / denial text) as the run uses it: call id → ``None``
    (approved) or the text the model is told of the denial; a ``TypeError`` for anything else.

    >>> check_decisions({"c1": True, "c2": False, "c3": "over the limit"})
    {'c1': None, 'c2': 'the call was not approved, so it did not run', 'c3': 'over the limit'}
    """
    if not isinstance(approvals, Mapping):
        raise TypeError(
            "approvals= takes a mapping of tool call ids to decisions, e.g. {call_id: True} (approve), "
            f"False (deny) or 'why' (deny, telling the model why); got {type(approvals).__name__}"
        )
    if not approvals:
        raise ValueError("approvals= is empty: give a decision for each call the paused run left open")
    decisions: dict[str, str | None] = {}
    for call_id, verdict in approvals.items():
        if not isinstance(call_id, str) or not call_id:
            raise TypeError(f"approvals= keys are tool call ids (non-empty str), got {call_id!r}")
        if verdict is not True and verdict is not False and not isinstance(verdict, str):
            raise TypeError(
                f"approvals[{call_id!r}] must be True (approve), False (deny) or a str (deny, telling the "
                f"model why), got {verdict!r}"
            )
        decisions[call_id] = None if verdict is True else _verdict(verdict, ToolCall(call_id, ""))
    return decisions


def deferred_result(call: ToolCall, tool: str) -> ToolResult:
    """The placeholder the executor returns for a deferred call (``error_type`` ``deferred``): the runtime
    leaves the call open instead of writing it, and a later run decides it.

    >>> deferred_result(ToolCall("c1", "refund"), "refund").error_type
    'deferred'
    """
    return ToolResult(
        call_id=call.id,
        name=tool,
        output=tool_error_text(DEFERRED, _DEFERRED_TEXT, tool, call.id),
        ok=False,
        error_type=DEFERRED,
        error=_DEFERRED_TEXT,
    )


_DEFERRED_TEXT = "waiting for a decision: the run paused, and a later run resumes it with approvals="


def denied_result(call: ToolCall, tool: str, reason: str) -> ToolResult:
    """The result of a call that was not run for want of approval: a ``TOOL_ERROR`` of type ``denied``.

    >>> denied_result(ToolCall("c1", "refund"), "refund", "over the limit").output
    'TOOL_ERROR: {"errorType":"denied","error":"over the limit","tool":"refund","callId":"c1"}'
    """
    return ToolResult(
        call_id=call.id,
        name=tool,
        output=tool_error_text("denied", reason, tool, call.id),
        ok=False,
        error_type="denied",
        error=reason,
    )


def _verdict(verdict: object, call: ToolCall) -> str | None:
    """What an approval function's answer means: ``None`` (approved) or the denial text."""
    if verdict is True:
        return None
    if verdict is False:
        return DEFAULT_DENIAL
    if isinstance(verdict, str):
        return verdict if verdict.strip() else DEFAULT_DENIAL
    raise TypeError(
        f"the tool_approval function returned {type(verdict).__name__} for call {call.id!r}; it must return "
        "True (approve), False (deny) or a str (deny, telling the model why)"
    )


class _Waiting:
    """One call waiting for ``approve`` / ``deny``."""

    __slots__ = ("denial", "done", "request")

    def __init__(self, request: ToolApprovalRequest) -> None:
        self.request = request
        self.done = anyio.Event()
        self.denial: str | None = None


class ToolApprovals:
    """A run's approvals: decides each call that needs one (see the module doc), and holds the calls that wait
    for ``approve`` / ``deny``.

    ``approver`` is the ``tool_approval`` function, if any; ``emit`` publishes ``ToolApprovalRequested`` (the
    run's bus); ``waits`` says whether a call may wait for a decision from outside (the run has a handle
    someone can approve through). A run builds its own (``RunContext``) when its tools need one; a
    ``ToolExecutor`` used alone takes one as ``approvals=``.

    ``approve`` and ``deny`` are plain methods for the event loop the run runs in (another request of the
    same web app, say); from another thread, go through ``anyio.from_thread.run_sync``.
    """

    __slots__ = (
        "_approver",
        "_cannot_pause",
        "_decided",
        "_deferred",
        "_emit",
        "_heard",
        "_pending",
        "_waits",
    )

    def __init__(
        self,
        approver: ToolApprover | str | None,
        emit: Callable[[Event], Awaitable[Any]],
        *,
        waits: bool,
        heard: Callable[[], bool] | None = None,
        cannot_pause: str | None = None,
    ) -> None:
        self._approver = approver
        self._emit = emit
        self._waits = waits
        self._heard = heard
        """Whether anyone receives ``ToolApprovalRequested`` (the run's bus): a call nobody is told of would
        wait for a decision that never comes."""
        self._cannot_pause = cannot_pause
        """Why this run cannot pause for a deferred decision (``None``: it can): what
        ``ApprovalNotDeferrableError`` says."""
        self._pending: dict[str, _Waiting] = {}
        self._decided: dict[str, bool] = {}
        """Call ids decided from outside (approved: ``True``), for what a second decision is told."""
        self._deferred: list[ToolApprovalRequest] = []

    @property
    def defers(self) -> bool:
        """Whether calls are deferred (``tool_approval="defer"``): ``defer``, not ``decide``, takes them."""
        return isinstance(self._approver, str)

    @property
    def deferred(self) -> list[ToolApprovalRequest]:
        """The calls deferred so far (``defer``), in the order they were: the run pauses after their step."""
        return self._deferred

    async def defer(self, request: ToolApprovalRequest) -> None:
        """Leave ``request``'s call for a later run to decide: ``ToolApprovalRequested``, then it is listed in
        ``deferred``. ``ApprovalNotDeferrableError`` for a run that cannot pause."""
        if self._cannot_pause is not None:
            raise ApprovalNotDeferrableError(request.call, request.tool, self._cannot_pause)
        await self._emit(ToolApprovalRequested(call=request.call, tool=request.tool))
        self._deferred.append(request)

    @property
    def pending(self) -> tuple[ToolApprovalRequest, ...]:
        """The calls waiting for ``approve`` / ``deny`` right now, in the order they asked."""
        return tuple(waiting.request for waiting in self._pending.values())

    async def decide(self, request: ToolApprovalRequest) -> str | None:
        """Decide ``request``'s call: ``None`` to run it, else the denial text the model is told.

        Raises ``ApprovalRequiredError`` when nobody can decide, and whatever the approval function raises
        (or the ``TypeError`` for an answer it may not give): the run must end with it. Cancelled while it
        waits, it leaves nothing waiting.
        """
        return await self._decide(request, request)

    async def _decide(self, request: ToolApprovalRequest, asked: ToolApprovalRequest) -> str | None:
        """``decide``: ``request`` is what is announced and waits (under its call's id), ``asked`` what the
        approval function gets (the same, but for a sub-run's call: ``sub_run_approver``)."""
        approver = self._approver
        if approver is None:
            if not self._waits:
                raise ApprovalRequiredError(request.call, request.tool)
            if self._heard is not None and not self._heard():
                raise ApprovalRequiredError(request.call, request.tool, unheard=True)
            return await self._wait(request)
        assert not isinstance(approver, str)  # a deferring run's calls go to ``defer``
        await self._emit(ToolApprovalRequested(call=request.call, tool=request.tool))
        verdict = approver(asked)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        return _verdict(verdict, request.call)

    def sub_run_approver(self, call_id: str) -> ToolApprover:
        """The ``tool_approval`` of a sub-run this run's call ``call_id`` started (an agent used as a tool,
        whose agent has no ``tool_approval`` of its own): this run decides the sub-run's calls, as its own.

        An approval function gets the sub-run's ``ToolApprovalRequest`` as it is. What is announced here
        (``ToolApprovalRequested`` on this run's bus), listed in ``pending`` and answered by ``approve`` /
        ``deny`` is the call under the id ``<call_id>/<its own id>``: ids a model makes up (``call_1``) repeat
        across agents, and a parent's call and its sub-run's, or two sub-runs', must not take each other's
        decision. A deferring run (``"defer"``) cannot decide them: ``ApprovalNotDeferrableError``.
        """
        return _SubRunApprover(self, call_id)

    async def _wait(self, request: ToolApprovalRequest) -> str | None:
        call_id = request.call.id
        waiting = _Waiting(request)
        # Listed before the event is out: a consumer may answer while the publish is still delivering it.
        self._pending[call_id] = waiting
        self._decided.pop(call_id, None)  # an id a model reuses in a later step is a new call
        try:
            await self._emit(ToolApprovalRequested(call=request.call, tool=request.tool))
            await waiting.done.wait()
        finally:
            if self._pending.get(call_id) is waiting:
                del self._pending[call_id]
        return waiting.denial

    def approve(self, call_id: str) -> None:
        """Approve the waiting call ``call_id``: it runs (once it gets a concurrency slot).

        ``ApprovalNotPendingError`` if no call with that id waits for a decision.
        """
        self._settle(call_id, None)

    def deny(self, call_id: str, reason: str | None = None) -> None:
        """Deny the waiting call ``call_id``: it does not run, and the model is told ``reason``
        (``DEFAULT_DENIAL`` when ``None``).

        ``ApprovalNotPendingError`` if no call with that id waits for a decision.
        """
        if reason is not None and not isinstance(reason, str):
            raise TypeError(
                f"deny(reason=...) takes the text the model is told (a str) or None, got {reason!r}"
            )
        self._settle(call_id, reason if reason and reason.strip() else DEFAULT_DENIAL)

    def _settle(self, call_id: str, denial: str | None) -> None:
        waiting = self._pending.pop(call_id, None)
        if waiting is None:
            raise ApprovalNotPendingError(call_id, self._not_pending(call_id))
        self._decided[call_id] = denial is None
        waiting.denial = denial
        waiting.done.set()

    def _not_pending(self, call_id: str) -> str:
        decided = self._decided.get(call_id)
        if decided is not None:
            return f"tool call {call_id!r} was already {'approved' if decided else 'denied'}"
        if any(request.call_id == call_id for request in self._deferred):
            return (
                f"tool call {call_id!r} is deferred (tool_approval='defer'): this run does not wait for it; "
                "it pauses, and a later run decides the call with approvals={call_id: True | False | 'why'}"
            )
        waiting = ", ".join(repr(key) for key in self._pending) or "none"
        return (
            f"no tool call {call_id!r} waits for approval in this run (waiting: {waiting}); a call waits "
            "from its ToolApprovalRequested event until it is decided or the run ends"
        )


class _SubRunApprover:
    """``ToolApprovals.sub_run_approver``: a sub-run's calls, decided by its calling run's approvals."""

    __slots__ = ("_approvals", "_call_id")

    def __init__(self, approvals: ToolApprovals, call_id: str) -> None:
        self._approvals = approvals
        self._call_id = call_id

    async def __call__(self, request: ToolApprovalRequest) -> bool | str:
        approvals = self._approvals
        if approvals.defers:
            raise ApprovalNotDeferrableError(
                request.call, request.tool, "a run of an agent used as another agent's tool"
            )
        call = request.call
        shown = attrs.evolve(request, call=attrs.evolve(call, id=f"{self._call_id}/{call.id}"))
        denial = await approvals._decide(shown, request)
        return True if denial is None else denial


def asks_approval(needs: NeedsApproval, kwargs: Mapping[str, Any], tool: str) -> bool:
    """Whether a valid call of a tool whose ``needs_approval`` is set (``True`` or a predicate) needs
    approval; a predicate gets a copy of the call's validated arguments. Raises what the predicate raises,
    and a ``TypeError`` for an answer that is not a bool: the run must end with it.

    >>> asks_approval(lambda arguments: arguments["amount"] > 100, {"amount": 20}, "refund")
    False
    """
    if needs is True:
        return True
    asked = needs(dict(kwargs))  # type: ignore[operator]  # a predicate: ``False`` never gets here
    if asked is True or asked is False:
        return asked
    raise TypeError(
        f"the needs_approval function of tool {tool!r} returned {type(asked).__name__}; it must return True "
        "or False"
    )
