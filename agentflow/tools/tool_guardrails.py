"""Tool guardrails: your own policy checks of one tool call, on its arguments before it runs and on its result
before the model sees it (``@tool(input_guardrails=[fn], output_guardrails=[fn])``): the Agents SDK's tool
input and output guardrails.

A tool guardrail is a plain function, sync or async, ``fn(ctx: ToolGuardrailContext[Deps], value)``. An
input guardrail gets the call's validated arguments (a ``dict``, as the tool function gets them, its context
left out), once they passed the tool's schema; an output guardrail gets what the tool returned, once it
returned successfully (the text the model would be sent is ``ctx.output_text``). A tool's guardrails of one
kind run one after another, in order, and the first that does not return ``None`` decides:

- ``None``: the call goes on (the next guardrail, then the tool, or its result to the model);
- ``Rejection("message")``: the call is not run (input) or its result is replaced (output); the model gets
  the message as the call's ``TOOL_ERROR`` (``errorType`` ``"rejected"``), ``ToolFailed`` ends the call, and
  the run goes on: the model may try another way;
- ``Tripwire(reason, info=...)``: the run stops. The call gets a ``rejected`` result (memory stays valid),
  then its ``ToolFailed``, and the run fails with ``ToolGuardrailTripped`` (``RunFailed``, its one terminal
  event; the other calls of the step in flight are cancelled and answered, as for a ``ToolFatalError``).

A guardrail that raises, or returns anything else, fails the run with ``ToolGuardrailError`` (a
``GuardrailError``), as a run's own guardrail does: the call could not be checked, so it is not run (or its
result is withheld), and the run does not go on as if it had been. A ``CancelledError`` it raised while
nothing cancelled the run is one too; the run's own cancellation cancels the guardrail with the call.

Decisions, and why:

- **Before approval.** A call of a tool that ``needs_approval`` is checked first, then asked about: nobody
  is asked to approve a call the policy rejects. A resumed run's approved calls (``approvals=``) are checked
  again when they run: the person decided whether the call may run, the policy is checked when it does.
- **Not the tool's time.** The guardrails run outside the call's time limit (``timeout``) and hold no
  concurrency slot, as an approval does not; a batch with a guarded call has no shared deadline. A run's
  ``timeout`` and cancellation cut them as anything else.
- **Not a failed attempt.** A rejected call does not count against the tool's ``max_retries``: the model's
  call was valid, the policy said no (as a person's denial is not counted).
- **A returned value, not an exception.** As for the run's own guardrails (``Tripwire``): rejecting is the
  check's expected outcome, while what it raises is a bug or an outage, and the two must not be confused.
- **Calls from everywhere.** Every call goes through ``ToolExecutor``: ReAct's, DeepResearch's, eager calls,
  CodeAct's calls from code (a rejection is the code's ``ToolError``), an agent used as a tool, MCP tools
  (``attrs.evolve(tool, input_guardrails=[...])``), a resumed run's approved calls.
- **Free when unused.** A tool's ``Tool`` knows whether it has guardrails: a call of a tool without any
  pays one attribute check.

``Tripwire`` and the errors live in ``agentflow.runtimes.guardrails``, with the run's own; the tools layer
does not import the runtimes at import time, so this module imports them on the rare path that needs them
(a verdict other than ``None`` or a ``Rejection``, a guardrail that raised).
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import attrs

from ..cancellation import cancel_requested
from ..model.messages import ToolCall
from ..result import ToolResult
from .context import DepsT, ToolContext
from .failures import RejectCall
from .outcome import failed_result
from .suspension import noting_waits

if TYPE_CHECKING:
    from ..runtimes.guardrails import Tripwire

__all__ = [
    "Rejection",
    "ToolGuardrailContext",
    "ToolGuardrailFunction",
    "ToolGuardrailKind",
    "check_call",
    "check_tool_guardrails",
    "guardrail_name",
]

ToolGuardrailKind: TypeAlias = Literal["input", "output"]
"""Which of a tool's guardrails: ``"input"`` (the call's arguments) or ``"output"`` (its result)."""


@attrs.frozen
class Rejection:
    """What a tool guardrail returns to reject one call and let the run go on: the model gets ``message`` as
    the call's ``TOOL_ERROR`` (``errorType`` ``"rejected"``) instead of running the tool (an input guardrail)
    or instead of its result (an output one). Write it for the model: what it may do instead.

    Why this name: ``RejectCall`` is the exception a *tool* raises from inside to say the same to the model;
    a guardrail *returns* its verdict, as it returns a ``Tripwire`` to stop the run, and a value named as a
    verdict (a noun, like ``Tripwire``) cannot be mistaken for something to raise. ``None`` lets the call
    go on.

    >>> Rejection("refunds over 500 need a manager; offer to escalate").message
    'refunds over 500 need a manager; offer to escalate'
    """

    message: str = attrs.field(validator=attrs.validators.instance_of(str))


@attrs.frozen
class ToolGuardrailContext(ToolContext[DepsT]):
    """What a tool guardrail is called with before the value it checks: the call's ``ToolContext`` (its
    ``run_id``, ``step``, ``call_id``, ``tool_name``, the run's ``deps`` and ``extra_headers``;
    ``add_usage`` counts the tokens a guardrail that calls a model spends toward the run, and
    ``await ctx.emit_progress(...)`` reports progress, as a tool does), and what is checked.

    ``kind`` is ``"input"`` or ``"output"``; ``arguments`` the call's validated arguments, read-only (the
    tool's context left out), for both kinds; ``output_text``, for an output guardrail, the text the model
    would be sent for the result (``None`` for an input one). Annotate the parameter
    ``ToolGuardrailContext[MyDeps]`` to type ``ctx.deps``.

    >>> ctx = ToolGuardrailContext(run_id="r1", step=0, call_id="c1", tool_name="refund", emit=print,
    ...                            kind="input", arguments={"amount": 700})
    >>> ctx.kind, ctx.arguments["amount"], ctx.output_text
    ('input', 700, None)
    """

    kind: ToolGuardrailKind = attrs.field(kw_only=True)
    arguments: Mapping[str, Any] = attrs.field(kw_only=True, repr=False)
    output_text: str | None = attrs.field(default=None, kw_only=True, repr=False)


ToolGuardrailFunction: TypeAlias = Callable[
    [ToolGuardrailContext[Any], Any],
    "Rejection | Tripwire | Awaitable[Rejection | Tripwire | None] | None",
]
"""A tool guardrail: ``fn(ctx: ToolGuardrailContext, value) -> Rejection | Tripwire | None``, or an ``async``
one (``value``: the call's arguments for an input guardrail, the tool's return value for an output one)."""


def check_tool_guardrails(values: object, keyword: str) -> tuple[ToolGuardrailFunction, ...]:
    """``values`` (``@tool(input_guardrails=...)``, ``keyword`` naming the option) as a tuple of guardrail
    functions, checked where they are given: ``TypeError`` for what is not a list of functions that can take
    ``(ctx, value)``.

    >>> check_tool_guardrails([lambda ctx, arguments: None], "input_guardrails")[0].__name__
    '<lambda>'
    >>> check_tool_guardrails(["no_pii"], "input_guardrails")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: input_guardrails takes guardrail functions fn(ctx: ..., value) -> ..., got 'no_pii'
    """
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise TypeError(
            f"{keyword} must be a list of guardrail functions fn(ctx: ToolGuardrailContext, value) -> "
            f"Rejection | Tripwire | None, got {values!r}"
        )
    found = tuple(values)
    for function in found:
        if not callable(function) or isinstance(function, type):
            raise TypeError(
                f"{keyword} takes guardrail functions fn(ctx: ToolGuardrailContext, value) -> "
                f"Rejection | Tripwire | None, got {function!r}"
            )
        if inspect.isasyncgenfunction(function) or inspect.isgeneratorfunction(function):
            raise TypeError(
                f"{keyword}: {guardrail_name(function)} is a generator; a guardrail returns one verdict"
            )
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):  # no signature to read (some builtins): calling it will tell
            continue
        try:
            signature.bind(None, None)
        except TypeError:
            raise TypeError(
                f"{keyword}: guardrail {guardrail_name(function)} must take two positional arguments, a "
                f"ToolGuardrailContext and the value it checks; its signature is {signature}"
            ) from None
    return found


def guardrail_name(function: object) -> str:
    """How errors and results name a tool guardrail: a ``guardrail(fn, name=...)`` value's ``name``, else the
    function's qualified name without the ``<locals>`` of a function defined in another.

    >>> def outer():
    ...     def no_pii(ctx, value):
    ...         return None
    ...     return no_pii
    >>> guardrail_name(outer())
    'no_pii'
    """
    name = getattr(function, "name", None)
    if isinstance(name, str) and name and not inspect.isroutine(function):
        return name
    qualified = getattr(function, "__qualname__", None) or getattr(function, "__name__", None)
    return str(qualified or type(function).__qualname__).rpartition("<locals>.")[2]


async def check_call(
    guardrails: tuple[ToolGuardrailFunction, ...],
    ctx: ToolGuardrailContext[Any],
    value: Any,
    call: ToolCall,
    on_wait: Callable[[], object] | None,
    duration: float = 0.0,
) -> tuple[ToolResult, Exception | None] | None:
    """Run ``guardrails`` on ``value``, one after another; ``None`` when every one let the call go on, else
    the call's result (a ``rejected`` one) and the exception the run ends with (``None`` for a
    ``Rejection``).

    ``on_wait`` is called whenever an async guardrail is about to suspend (a batch starts its next call
    beside it: ``noting_waits``); ``duration`` goes on the result (the call's, for an output guardrail). A
    cancellation of the run propagates; ``KeyboardInterrupt`` and the like too.
    """
    try:
        for function in guardrails:
            try:
                # In a context of its own, as a tool call: a ContextVar it sets (sync or async) stays its own.
                context = contextvars.copy_context()
                # Each input guardrail gets its own copy: one that changes the arguments changes neither the
                # call nor what the next one checks.
                checked = _copied(value) if ctx.kind == "input" else value
                verdict = context.run(function, ctx, checked)
                if inspect.isawaitable(verdict):
                    verdict = await noting_waits(verdict, on_wait, context)
            except Exception as exc:
                text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                return _failed(ctx, function, call, text, duration, exc)
            except asyncio.CancelledError as exc:  # agentflow runs on asyncio: anyio's cancel class
                if cancel_requested():
                    raise
                text = f"{type(exc).__name__} while nothing cancelled the run (it gave no verdict)"
                return _failed(ctx, function, call, text, duration, exc)
            if verdict is None:
                continue
            if isinstance(verdict, Rejection):
                message = verdict.message
                if ctx.kind == "output":
                    # The model must know the call did run (a payment made): it must not simply call again.
                    message = f"the call ran, but its result is withheld: {message}"
                return failed_result(call, "rejected", message, tool=ctx.tool_name, duration=duration), None
            return _stopped(ctx, function, call, verdict, duration)
        return None
    finally:
        ctx._finish()


def _copied(arguments: Any) -> Any:
    """A deep copy of a call's arguments, or a shallow one of what cannot be copied deeply."""
    try:
        return copy.deepcopy(arguments)
    except Exception:
        return dict(arguments)


def _withheld(
    ctx: ToolGuardrailContext[Any], function: object, call: ToolCall, what: str, duration: float
) -> ToolResult:
    """The result of a call a guardrail stopped the run at: what memory (and a session's next turn) keeps."""
    name = guardrail_name(function)
    if ctx.kind == "input":
        text = f"not run: its input guardrail {name} {what}"
    else:
        text = f"result withheld: its output guardrail {name} {what}"
    return failed_result(call, "rejected", text, tool=ctx.tool_name, duration=duration)


def _stopped(
    ctx: ToolGuardrailContext[Any], function: object, call: ToolCall, verdict: object, duration: float
) -> tuple[ToolResult, Exception]:
    """A verdict other than ``None`` or a ``Rejection``: a ``Tripwire`` trips, anything else is an error."""
    from ..runtimes.guardrails import ToolGuardrailError, ToolGuardrailTripped, Tripwire  # see module doc

    name = guardrail_name(function)
    if isinstance(verdict, Tripwire):
        tripped = ToolGuardrailTripped(ctx.tool_name, call.id, ctx.kind, name, verdict.reason, verdict.info)
        return _withheld(ctx, function, call, "stopped the run", duration), tripped
    # A ``RejectCall`` is what a tool raises to say the same: the likeliest slip of all.
    hint = " (RejectCall is what a tool raises; a guardrail returns Rejection('why'))"
    hint = hint if isinstance(verdict, RejectCall) else ""
    error = ToolGuardrailError(
        ctx.tool_name,
        call.id,
        ctx.kind,
        name,
        f"returned a {type(verdict).__name__}, which gives no verdict{hint}",
    )
    return _withheld(ctx, function, call, "failed", duration), error


def _failed(
    ctx: ToolGuardrailContext[Any],
    function: object,
    call: ToolCall,
    text: str,
    duration: float,
    cause: BaseException,
) -> tuple[ToolResult, Exception]:
    """A guardrail that raised: the run fails with a ``ToolGuardrailError`` (``cause``: its ``__cause__``)."""
    from ..runtimes.guardrails import ToolGuardrailError  # see module doc

    error = ToolGuardrailError(ctx.tool_name, call.id, ctx.kind, guardrail_name(function), text)
    error.__cause__ = cause
    return _withheld(ctx, function, call, "failed", duration), error
