"""Guardrails: your own policy checks that stop a run, on its input (beside the first model call) or on its
final answer. ``Agent(model, input_guardrails=[fn], output_guardrails=[fn])``; a run adds its own after the
agent's (``agent.run(x, input_guardrails=[fn])``), and ``agent.override(input_guardrails=[])`` replaces the
agent's in a test.

A guardrail is a plain function, sync or async, of a ``GuardrailContext`` and the value it checks (the run's
input text for an input guardrail, the final answer for an output one: the ``output_type`` value, else the
text; for a run that ended otherwise with text, such as an answer forced after ``max_steps``, that text).
It returns ``None`` to let the run go on, or a ``Tripwire`` to stop it::

    async def no_homework(ctx: GuardrailContext[Deps], text: str) -> Tripwire | None:
        verdict = await classifier.run(text, deps=ctx.deps)  # another agent: cancelled with the run
        if verdict.output.is_homework:
            return Tripwire("asks us to do math homework", info=verdict.output)
        return None

    agent = Agent(model, input_guardrails=[no_homework])

Why a returned ``Tripwire`` and not a ``bool``: ``return is_safe(text)`` and ``return is_bad(text)`` would
both type-check and mean opposite things; ``Tripwire | None`` cannot be misread, carries the reason and
what the check found (``info``, the Agents SDK's ``output_info``), and is what a type checker sees.
Why not raised, as ``RejectOutput`` is: a trip is the expected outcome of a check, not a failure of it; what
a guardrail raises is a bug or an outage (``GuardrailError``), and the two must not be confused.

A tripped guardrail fails the run: ``InputGuardrailTripped`` / ``OutputGuardrailTripped`` (both
``TripwireError``), after a ``GuardrailTripped`` event, with ``RunFailed`` as its one terminal event. How the
run is driven around them (concurrently with the first model call, the first step's tools waiting for them,
memory left as the run found it) is ``agentflow.runtimes.guarded``; this module holds the values.

A tool's own guardrails (``@tool(input_guardrails=[fn], output_guardrails=[fn])``, on one call's arguments
and result) are ``agentflow.tools.tool_guardrails``; the errors they end a run with, ``ToolGuardrailTripped``
and ``ToolGuardrailError``, are here beside the run's.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeAlias, overload

import attrs

from ..model.response import TokenUsage
from ..result import AgentResult, StopReason
from .errors import AgentRunError

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    # For type checkers only (PEP 696), as ``ToolContext``'s: a bare ``GuardrailContext`` is ``[Any]``.
    DepsT = TypeVar("DepsT", default=Any)
else:
    DepsT = typing.TypeVar("DepsT")

__all__ = [
    "Guardrail",
    "GuardrailContext",
    "GuardrailError",
    "GuardrailFunction",
    "GuardrailKind",
    "Guardrails",
    "InputGuardrailTripped",
    "OutputGuardrailTripped",
    "ToolGuardrailError",
    "ToolGuardrailTripped",
    "Tripwire",
    "TripwireError",
    "check_guardrails",
    "guardrail",
]

GuardrailKind = Literal["input", "output"]


@attrs.frozen
class Tripwire:
    """What a guardrail returns to stop the run: ``reason`` (why, for people: logs, a UI) and ``info``
    (anything the check found, such as a classifier's verdict; kept on the error and the event).

    >>> Tripwire("asks for medical advice", info={"score": 0.97}).reason
    'asks for medical advice'
    """

    reason: str = attrs.field(validator=attrs.validators.instance_of(str))
    info: Any = None


@attrs.frozen
class GuardrailContext(Generic[DepsT]):
    """What a guardrail is called with before the value it checks: a read-only view of the run.

    ``deps`` is the run's (``agent.run(x, deps=...)``, ``None`` without), typed by annotating the parameter
    ``GuardrailContext[MyDeps]``; ``run_id``, ``agent_name`` and ``session_id`` (a session's run) say which
    run it is (``agent_name``: the agent whose turn it is, after a handoff the one that wrote the answer);
    ``input_text`` is the run's input as text and ``input_items`` its items as they enter memory (an image
    part included); ``kind`` is ``"input"`` or ``"output"``; ``output_text`` is the final answer as
    the model wrote it (``None`` for an input guardrail); ``usage`` the run's tokens so far; ``stop_reason``,
    for an output guardrail, why the run ended: ``FINAL_ANSWER``, or, for a run that ended otherwise with
    text to show (an answer forced after ``max_steps``, one cut at the token limit…), its reason, the value
    checked then being its text (or its ``output_type`` value, when it has one). ``None`` for an input one.

    >>> ctx = GuardrailContext(deps=None, run_id="run_1", agent_name="support", kind="input", input_text="hi")
    >>> ctx.kind, ctx.output_text
    ('input', None)
    """

    deps: DepsT
    run_id: str
    agent_name: str
    kind: GuardrailKind
    input_text: str
    input_items: tuple[Any, ...] = attrs.field(default=(), repr=False)
    session_id: str | None = None
    output_text: str | None = None
    usage: TokenUsage = attrs.field(factory=TokenUsage)
    stop_reason: StopReason | None = None


GuardrailFunction: TypeAlias = Callable[
    [GuardrailContext[Any], Any], "Tripwire | Awaitable[Tripwire | None] | None"
]
"""A guardrail: ``fn(ctx: GuardrailContext, value) -> Tripwire | None``, or an ``async`` one."""


def _name(function: object) -> str:
    """How events and errors name a guardrail by default: its qualified name, without the ``<locals>`` of a
    function defined in another (``Checks.no_pii``, ``no_pii``)."""
    name = str(getattr(function, "__qualname__", None) or getattr(function, "__name__", None) or function)
    return name.rpartition("<locals>.")[2]


def _check_function(function: object) -> None:
    if not callable(function):
        raise TypeError(f"a guardrail must be a function (ctx, value) -> Tripwire | None, got {function!r}")
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # no signature to read (some builtins): calling it will tell
        return
    try:
        signature.bind(None, None)
    except TypeError:
        raise TypeError(
            f"guardrail {_name(function)} must take two positional arguments, a GuardrailContext and the "
            f"value it checks; its signature is {signature}"
        ) from None


@attrs.frozen
class Guardrail:
    """A guardrail function with its ``name`` (errors and events name it; default: the function's qualified
    name) and, for an input guardrail, ``blocking``: run it *before* the first model call instead of beside
    it (the Agents SDK's ``run_in_parallel=False``): nothing is sent to the model, nor streamed, until it
    passes. ``guardrail(fn, blocking=True)`` or ``@guardrail(blocking=True)`` makes one; a plain function in
    ``input_guardrails=`` / ``output_guardrails=`` is wrapped as ``guardrail(fn)``. Calling it calls the
    function (for your unit tests).

    >>> def short(ctx, text):
    ...     return Tripwire("too long") if len(text) > 5 else None
    >>> g = guardrail(short, blocking=True)
    >>> g.name, g.blocking, g(None, "hello world").reason
    ('short', True, 'too long')
    """

    function: GuardrailFunction = attrs.field(repr=False)
    name: str
    blocking: bool = False

    def __call__(
        self, ctx: GuardrailContext[Any], value: Any
    ) -> Tripwire | Awaitable[Tripwire | None] | None:
        """Call the guardrail's function."""
        return self.function(ctx, value)


@overload
def guardrail(
    function: GuardrailFunction, /, *, name: str | None = None, blocking: bool = False
) -> Guardrail: ...


@overload
def guardrail(
    function: None = None, /, *, name: str | None = None, blocking: bool = False
) -> Callable[[GuardrailFunction], Guardrail]: ...


def guardrail(
    function: GuardrailFunction | None = None, /, *, name: str | None = None, blocking: bool = False
) -> Guardrail | Callable[[GuardrailFunction], Guardrail]:
    """A ``Guardrail`` of ``function``: ``guardrail(fn, name=..., blocking=...)``, or as a decorator, bare
    (``@guardrail``) or with options (``@guardrail(blocking=True)``).

    ``TypeError`` for a function that cannot take ``(ctx, value)``, a ``name`` that is not a non-empty text or
    a ``blocking`` that is not a bool.
    """
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise TypeError(f"guardrail(name=...) must be a non-empty str or None, got {name!r}")
    if not isinstance(blocking, bool):
        raise TypeError(f"guardrail(blocking=...) must be a bool, got {blocking!r}")

    def make(fn: GuardrailFunction) -> Guardrail:
        if isinstance(fn, Guardrail):
            return attrs.evolve(fn, name=name or fn.name, blocking=blocking or fn.blocking)
        _check_function(fn)
        return Guardrail(fn, name or _name(fn), blocking)

    return make if function is None else make(function)


class TripwireError(AgentRunError):
    """A guardrail of the run tripped (returned a ``Tripwire``): the run fails with this error.

    ``kind`` is ``"input"`` or ``"output"``, ``guardrail`` the guardrail's name, ``reason`` and ``info`` the
    ``Tripwire``'s; ``partial`` keeps the run's work (an output guardrail's: the answer it stopped, in
    ``output`` / ``output_text``, for your logs), although memory kept none of it. Catch
    ``InputGuardrailTripped`` / ``OutputGuardrailTripped`` for one kind.
    """

    kind: ClassVar[GuardrailKind]
    """``"input"`` or ``"output"``: which of the two subclasses it is (the base itself is never raised); for a
    ``ToolGuardrailTripped``, which of the tool's guardrails tripped (on the call's arguments, or its
    result)."""

    def __init__(
        self, guardrail: str, reason: str, info: Any = None, partial: AgentResult | None = None
    ) -> None:
        super().__init__(
            f"{self.kind} guardrail {guardrail} tripped: {reason}",
            partial if partial is not None else AgentResult("", "", StopReason.ERROR),
        )
        self.guardrail = guardrail
        self.reason = reason
        self.info = info

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.guardrail, self.reason, self.info, self.partial))


class InputGuardrailTripped(TripwireError):
    """An input guardrail tripped: the run stopped before any tool ran (see ``TripwireError``).

    >>> print(InputGuardrailTripped("no_homework", "asks us to do math homework"))
    input guardrail no_homework tripped: asks us to do math homework
    """

    kind: ClassVar[GuardrailKind] = "input"


class OutputGuardrailTripped(TripwireError):
    """An output guardrail tripped on the final answer (see ``TripwireError``)."""

    kind: ClassVar[GuardrailKind] = "output"


class ToolGuardrailTripped(TripwireError):
    """A tool's guardrail (``@tool(input_guardrails=..., output_guardrails=...)``) returned a ``Tripwire``
    for one call: the run fails with this error (see ``agentflow.tools.tool_guardrails``).

    ``kind`` is ``"input"`` (the call's arguments: the tool did not run) or ``"output"`` (its result: the tool
    ran, and the model was not shown what it returned); ``tool`` and ``call_id`` say which call,
    ``guardrail``, ``reason`` and ``info`` as for the run's own guardrails. Raised by the call once its
    result (a ``rejected`` one) and ``ToolFailed`` are out; ``partial`` is the run's result as it ended, its
    memory valid (every call answered), as for ``ToolFatalError``.

    >>> print(ToolGuardrailTripped("refund", "c1", "input", "refund_cap", "over the limit"))
    input guardrail refund_cap of tool 'refund' tripped on call c1: over the limit
    """

    partial_at_end: ClassVar[bool] = True

    def __init__(
        self,
        tool: str,
        call_id: str,
        kind: GuardrailKind,
        guardrail: str,
        reason: str,
        info: Any = None,
        partial: AgentResult | None = None,
    ) -> None:
        message = f"{kind} guardrail {guardrail} of tool {tool!r} tripped on call {call_id}: {reason}"
        # Not ``TripwireError.__init__``: its message says nothing of the call.
        AgentRunError.__init__(
            self, message, partial if partial is not None else AgentResult("", "", StopReason.ERROR)
        )
        self.tool = tool
        self.call_id = call_id
        # Per error, where the run's own trips have it per class: one class serves both of a tool's lists.
        self.kind = kind  # type: ignore[misc]
        self.guardrail = guardrail
        self.reason = reason
        self.info = info

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            type(self),
            (self.tool, self.call_id, self.kind, self.guardrail, self.reason, self.info, self.partial),
        )


class GuardrailError(AgentRunError):
    """A guardrail raised (or returned something other than ``None`` or a ``Tripwire``): the run fails with
    this error, as a tripped guardrail fails it, since its input or answer could not be checked. A
    ``CancelledError`` it raised while nothing cancelled the run (one its code raised, or got from a shared
    task someone else cancelled) is one too: it gave no verdict. A cancellation of the run itself ends the run
    as cancelled; a ``KeyboardInterrupt`` or ``SystemExit`` propagates as itself.

    ``kind`` and ``guardrail`` say which, ``error`` what it raised (the exception itself is ``__cause__``);
    ``partial`` keeps the run's work.

    >>> print(GuardrailError("input", "pii", "TimeoutError"))
    input guardrail pii raised TimeoutError; return Tripwire('why') from it to stop the run on purpose
    """

    def __init__(
        self, kind: GuardrailKind, guardrail: str, error: str, partial: AgentResult | None = None
    ) -> None:
        # ``error`` says what went wrong: what it raised, or (from "returned") a value it may not return.
        what = error if error.startswith("returned ") else f"raised {error}"
        super().__init__(
            f"{kind} guardrail {guardrail} {what}; return Tripwire('why') from it to stop the run on purpose",
            partial if partial is not None else AgentResult("", "", StopReason.ERROR),
        )
        self.kind = kind
        self.guardrail = guardrail
        self.error = error

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.kind, self.guardrail, self.error, self.partial))


class ToolGuardrailError(GuardrailError):
    """A tool's guardrail raised (or returned something other than ``None``, a ``Rejection`` or a
    ``Tripwire``) on one call: the run fails with this error, as it fails with a ``GuardrailError`` for one of
    its own guardrails: the call could not be checked, so it is not run (an input guardrail) or its result
    is not shown to the model (an output one). ``except GuardrailError`` catches both.

    ``kind``, ``guardrail`` and ``error`` as for ``GuardrailError`` (what it raised is ``__cause__``),
    ``tool`` and ``call_id`` say which call; ``partial`` is the run's result as it ended, its memory valid.

    >>> print(ToolGuardrailError("lookup", "c2", "output", "no_pii", "TimeoutError"))
    ... # doctest: +NORMALIZE_WHITESPACE
    output guardrail no_pii of tool 'lookup' raised TimeoutError on call c2; return Rejection('why') from it
    to reject the call, or Tripwire('why') to stop the run on purpose
    """

    partial_at_end: ClassVar[bool] = True

    def __init__(
        self,
        tool: str,
        call_id: str,
        kind: GuardrailKind,
        guardrail: str,
        error: str,
        partial: AgentResult | None = None,
    ) -> None:
        what = error if error.startswith("returned ") else f"raised {error}"
        message = (
            f"{kind} guardrail {guardrail} of tool {tool!r} {what} on call {call_id}; return "
            "Rejection('why') from it to reject the call, or Tripwire('why') to stop the run on purpose"
        )
        # Not ``GuardrailError.__init__``: its message says nothing of the call.
        AgentRunError.__init__(
            self, message, partial if partial is not None else AgentResult("", "", StopReason.ERROR)
        )
        self.tool = tool
        self.call_id = call_id
        self.kind = kind
        self.guardrail = guardrail
        self.error = error

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.tool, self.call_id, self.kind, self.guardrail, self.error, self.partial))


def check_guardrails(
    kind: GuardrailKind, values: Iterable[GuardrailFunction | Guardrail]
) -> tuple[Guardrail, ...]:
    """``input_guardrails=`` / ``output_guardrails=`` (``kind``) as ``Guardrail`` values, checked when they
    are given (the agent's, a run's, an ``agent.override``'s): ``TypeError`` for what is not a list of
    guardrail functions, ``ValueError`` for a ``blocking`` output guardrail.

    >>> [g.name for g in check_guardrails("input", [lambda ctx, text: None])]
    ['<lambda>']
    """
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise TypeError(
            f"{kind}_guardrails must be a list of guardrail functions, got {type(values).__name__}"
        )
    made = tuple(value if isinstance(value, Guardrail) else guardrail(value) for value in values)
    if kind == "output":
        blocking = [g.name for g in made if g.blocking]
        if blocking:
            raise ValueError(
                f"output guardrails run on the final answer, so blocking=True means nothing for them: "
                f"{', '.join(blocking)}"
            )
    return made


@attrs.frozen
class Guardrails:
    """An agent's guardrails (``Agent(input_guardrails=..., output_guardrails=...)``), checked; what its runs
    get as ``RunContext.guardrails``. ``of`` gives ``None`` for an agent without any: its runs pay nothing.
    A run that gives guardrails of its own, or runs in an ``agent.override`` that does, gets a value made for
    it (``added``); any other run gets the agent's, built once."""

    agent: str
    input: tuple[Guardrail, ...] = ()
    output: tuple[Guardrail, ...] = ()

    @staticmethod
    def of(
        agent: str,
        input: Iterable[GuardrailFunction | Guardrail],
        output: Iterable[GuardrailFunction | Guardrail],
    ) -> Guardrails | None:
        """The agent's guardrails, or ``None`` when it has none (``TypeError`` / ``ValueError`` for bad ones).

        >>> Guardrails.of("a", [], ()) is None
        True
        """
        inputs, outputs = check_guardrails("input", input), check_guardrails("output", output)
        return Guardrails(agent, inputs, outputs) if inputs or outputs else None

    @staticmethod
    def added(
        agent: str,
        base: Guardrails | None,
        input: tuple[Guardrail, ...] | None,
        output: tuple[Guardrail, ...] | None,
    ) -> Guardrails | None:
        """``base`` (the agent's, or an ``agent.override``'s; ``None``: none) with a run's own checked
        guardrails after its own (``agent.run(x, input_guardrails=[...])``): the agent's policy, then the
        request's checks. ``base`` itself when the run adds none; ``None`` when there are none at all.

        >>> g = check_guardrails("input", [lambda ctx, text: None])
        >>> Guardrails.added("a", None, g, None).input == g, Guardrails.added("a", None, (), None)
        (True, None)
        """
        if not input and not output:
            return base
        inputs, outputs = input or (), output or ()
        if base is not None:
            inputs, outputs = base.input + inputs, base.output + outputs
        return Guardrails(agent, inputs, outputs)
