"""``Tool`` and the ``@tool`` decorator: a Python function plus the ``ToolSpec`` the model sees.

``@tool`` reads the function's signature, type hints and docstring once, at decoration time, and builds
the JSON schema, the argument validator and the converters. A parameter annotated ``ToolContext`` is
injected at call time and left out of the schema. Calling the ``Tool`` object calls the function as is.
Nothing here executes tools for a run: that is ``ToolExecutor``'s job.
"""

from __future__ import annotations

import functools
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Generic, ParamSpec, TypeVar, overload

import attrs

from ..model.tools import ToolSpec
from .approval import NeedsApproval, check_needs_approval
from .arguments import ArgumentParser
from .availability import EnabledFunction, ToolEnabled, check_enabled
from .context import ToolContext
from .defaults import MISSING
from .docstrings import DocInfo, parse_docstring
from .failures import ToolErrorPolicy, check_policy
from .retries import check_max_retries
from .schema import Prop, object_shape, shape_of, unresolved_note
from .strict import strict_schema_problems
from .tool_guardrails import ToolGuardrailFunction, check_tool_guardrails

__all__ = ["Tool", "ToolReturns", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class _NoFunction:
    """The type of ``tool()``'s default: no function given (``@tool(...)``), which ``None`` must not mean."""


_NO_FUNCTION = _NoFunction()


def _check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(
            f"tool name {name!r} is not valid: use 1-64 letters, digits, '_' or '-' (what model APIs accept)"
        )
    return name


def _check_on_error(on_error: object) -> ToolErrorPolicy | None:
    return None if on_error is None else check_policy(on_error, "on_error")


def _check_return_direct(return_direct: object) -> bool:
    # A truthy string or number would otherwise end runs that were never meant to end at this tool.
    if not isinstance(return_direct, bool):
        raise TypeError(f"return_direct must be True or False, got {return_direct!r}")
    return return_direct


def _check_max_retries(max_retries: object) -> float | None:
    return check_max_retries(max_retries, "max_retries")


def _check_input_guardrails(values: object) -> tuple[ToolGuardrailFunction, ...]:
    return check_tool_guardrails(values, "input_guardrails")


def _check_output_guardrails(values: object) -> tuple[ToolGuardrailFunction, ...]:
    return check_tool_guardrails(values, "output_guardrails")


def _check_timeout(timeout: float | None) -> float | None:
    if timeout is not None and (isinstance(timeout, bool) or not timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds (or math.inf), got {timeout!r}")
    return timeout


@attrs.frozen
class ToolReturns:
    """What a tool returns, for a reader of its results who needs to know their shape (CodeAct's code gets
    them as Python values): the JSON schema of the return annotation (``None`` when the annotation has none
    JSON can describe) and the docstring's ``Returns`` text (``""`` when it has none).

    Never part of the ``ToolSpec``: a model making native tool calls is sent exactly what it was before.
    """

    schema: dict[str, Any] | None = None
    description: str = ""


@attrs.frozen
class Tool(Generic[P, R]):
    """A function the model can call: its ``spec`` (name, description, JSON schema) and the callable.

    ``timeout`` is this tool's limit in seconds (``None``: the executor's default; ``math.inf``: none).
    ``context_parameter`` names the parameter that receives the ``ToolContext``, if any. ``inline`` sync
    tools run on the event loop instead of a worker thread (for quick, non-blocking functions). ``eager``
    tools (no side effects: lookups, reads) may start while the model is still streaming the turn that calls
    them (see ``agentflow.runtimes.eager_calls``); it never changes what the model is sent. ``on_error`` is
    what this tool's failures become (``"feed"``, ``"raise"`` or a function: ``agentflow.tools.failures``;
    ``None``: the executor's default, ``"feed"`` unless set otherwise). A ``return_direct`` tool's
    successful result is the run's final answer: the run ends after the step that called it, without a
    model call to repeat the result (see ``AgentRuntime.read_tool_answer``); it never changes what the model
    is sent either. A tool that ``needs_approval`` (``True``, or a function of a call's validated arguments
    saying whether that call does) runs a call only once it is approved (see ``agentflow.tools.approval``);
    that is never sent to the model either. ``max_retries`` is how many steps in a row the model may get this
    tool wrong after a first failed call before the run fails (``ToolRetriesExceeded``); ``None``: the run's
    ``AgentOptions.max_tool_retries``; ``math.inf``: no limit (see ``agentflow.tools.retries``).
    ``input_guardrails`` and ``output_guardrails`` are policy checks of each call, on its validated arguments
    before it runs (and before it is asked to be approved) and on its result before the model sees it: each
    lets the call go on, rejects it (the model is told why) or stops the run (see
    ``agentflow.tools.tool_guardrails``); never sent to the model either.

    ``returns`` describes the return value (``None``: nothing is known of it). ``plain_parameters``, for a
    strict tool made by ``@tool``, is its parameters' schema as a plain (non-strict) one: optional parameters
    not required and with their defaults, where the strict ``spec`` lists every property as required (the
    optional ones nullable). A caller that may leave optional arguments out (code calling the tool) is told,
    and has its calls completed, from it. Neither is sent to a model as the tool's spec.

    >>> @tool
    ... def add(a: int, b: int = 1) -> int:
    ...     '''Add two numbers.'''
    ...     return a + b
    >>> add.spec.parameters["required"], add(2, 3)
    (['a'], 5)
    """

    spec: ToolSpec
    fn: Callable[P, R] = attrs.field(repr=False)
    is_async: bool = attrs.field(
        default=attrs.Factory(lambda self: _is_async(self.fn), takes_self=True), repr=False
    )
    context_parameter: str | None = attrs.field(default=None, repr=False)
    timeout: float | None = attrs.field(default=None, converter=_check_timeout)
    inline: bool = attrs.field(default=False, repr=False)
    eager: bool = attrs.field(default=False, repr=False)
    on_error: ToolErrorPolicy | None = attrs.field(default=None, converter=_check_on_error, repr=False)
    # Keyword-only: the fields after it keep their places for a caller passing them by position.
    return_direct: bool = attrs.field(default=False, converter=_check_return_direct, kw_only=True, repr=False)
    needs_approval: NeedsApproval = attrs.field(
        default=False, converter=check_needs_approval, kw_only=True, repr=False
    )
    max_retries: float | None = attrs.field(
        default=None, converter=_check_max_retries, kw_only=True, repr=False
    )
    enabled: EnabledFunction | None = attrs.field(
        default=None, converter=check_enabled, kw_only=True, repr=False, eq=False
    )
    """When the tool is offered (``@tool(enabled=...)``): ``None``, always; else a function of the run
    evaluated each step (``agentflow.tools.availability``)."""
    input_guardrails: tuple[ToolGuardrailFunction, ...] = attrs.field(
        default=(), converter=_check_input_guardrails, kw_only=True, repr=False
    )
    """Checks of each call's validated arguments, in order, before it runs (``@tool(input_guardrails=...)``;
    ``agentflow.tools.tool_guardrails``)."""
    output_guardrails: tuple[ToolGuardrailFunction, ...] = attrs.field(
        default=(), converter=_check_output_guardrails, kw_only=True, repr=False
    )
    """Checks of each call's successful result, in order, before the model sees it
    (``@tool(output_guardrails=...)``)."""
    returns: ToolReturns | None = attrs.field(default=None, repr=False, eq=False)
    plain_parameters: dict[str, Any] | None = attrs.field(default=None, repr=False, eq=False)
    _parser: ArgumentParser | None = attrs.field(default=None, alias="parser", eq=False, repr=False)
    _guarded: bool = attrs.field(init=False, default=False, eq=False, repr=False)
    """Whether the tool has guardrails of either kind: the one attribute a call of a tool without any reads
    (``ToolExecutor``)."""

    def __attrs_post_init__(self) -> None:
        _check_name(self.spec.name)
        if self.spec.strict and (problems := strict_schema_problems(self.spec.parameters)):
            # Found here rather than as the provider's 400 on the first request that offers the tool.
            raise ValueError(
                f"tool {self.spec.name!r} is strict, but its schema is not a strict-mode one: "
                + "; ".join(problems[:5])
                + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else "")
                + "; fix the schema (an optional property is required and nullable) or set strict=False"
            )
        if self._parser is None:
            object.__setattr__(self, "_parser", ArgumentParser(self.spec.name, self.spec.parameters, None))
        if self.input_guardrails or self.output_guardrails:
            object.__setattr__(self, "_guarded", True)

    @property
    def name(self) -> str:
        """The name the model calls this tool by."""
        return self.spec.name

    @property
    def description(self) -> str:
        """The description the model sees."""
        return self.spec.description

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the function directly (no validation, no context injection): handy in tests."""
        return self.fn(*args, **kwargs)

    def parse_arguments(self, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
        """Validate and convert the model's arguments (JSON text, ``""`` meaning ``{}``) to keyword arguments.

        Raises ``ToolArgumentsError`` with the path and reason of the first problem.
        """
        assert self._parser is not None
        return self._parser.parse(arguments)

    @classmethod
    def from_spec(
        cls,
        spec: ToolSpec,
        fn: Callable[..., Any],
        *,
        timeout: float | None = None,
        inline: bool = False,
        eager: bool = False,
        on_error: ToolErrorPolicy | None = None,
        return_direct: bool = False,
        needs_approval: NeedsApproval = False,
        max_retries: float | None = None,
        enabled: ToolEnabled = True,
        input_guardrails: Iterable[ToolGuardrailFunction] = (),
        output_guardrails: Iterable[ToolGuardrailFunction] = (),
    ) -> Tool[..., Any]:
        """A tool whose schema is given as is: ``fn`` gets the validated JSON object as keyword arguments.

        A parameter of ``fn`` annotated ``ToolContext`` still receives the context. A strict spec
        (``strict=True``) must have a strict-mode schema (every object closed, every property required):
        ``ValueError`` otherwise. ``eager``, ``on_error``, ``return_direct``, ``needs_approval``,
        ``max_retries``, ``enabled``, ``input_guardrails`` and ``output_guardrails`` are ``@tool``'s.
        """
        hints = _hints(fn, strict_resolution=False)
        context = next((n for n, h in hints.items() if n != "return" and _is_context(h)), None)
        returns = _returns(hints, _docs(_unwrap_partial(fn)[0]).returns)
        return cls(
            spec,
            fn,
            context_parameter=context,
            timeout=timeout,
            inline=inline,
            eager=eager,
            on_error=on_error,
            return_direct=return_direct,
            needs_approval=needs_approval,
            max_retries=max_retries,
            enabled=enabled,
            input_guardrails=input_guardrails,
            output_guardrails=output_guardrails,
            returns=returns,
        )


@overload
def tool(fn: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    strict: bool | None = None,
    inline: bool = False,
    eager: bool = False,
    on_error: ToolErrorPolicy | None = None,
    return_direct: bool = False,
    needs_approval: NeedsApproval = False,
    max_retries: float | None = None,
    enabled: ToolEnabled = True,
    input_guardrails: Iterable[ToolGuardrailFunction] = (),
    output_guardrails: Iterable[ToolGuardrailFunction] = (),
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    fn: Callable[P, R] | _NoFunction | None = _NO_FUNCTION,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    strict: bool | None = None,
    inline: bool = False,
    eager: bool = False,
    on_error: ToolErrorPolicy | None = None,
    return_direct: bool = False,
    needs_approval: NeedsApproval = False,
    max_retries: float | None = None,
    enabled: ToolEnabled = True,
    input_guardrails: Iterable[ToolGuardrailFunction] = (),
    output_guardrails: Iterable[ToolGuardrailFunction] = (),
    **unexpected: object,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Turn a sync or async function into a ``Tool``; usable bare (``@tool``) or with options.

    The JSON schema comes from the type hints; the description and parameter descriptions from the
    docstring (Google, NumPy or reST) or ``Annotated[T, "description"]``. A parameter with a default is
    optional and its default is shown in the schema. ``strict=True`` makes an OpenAI strict-mode schema
    (every property required, optional ones nullable, closed objects). Unsupported annotations raise
    ``TypeError`` here, not when the model calls the tool. A ``functools.partial`` is described by the
    function it wraps, less the arguments it binds (the model cannot set those).

    ``timeout`` (seconds) overrides the executor's default; ``math.inf`` disables it. ``inline=True`` runs a
    sync function on the event loop instead of a worker thread (only for quick, non-blocking code: no
    timeout can interrupt it).

    ``eager=True`` marks a tool without side effects (a lookup, a read): in a streamed step, a call to it
    starts as soon as the model has finished writing it (``ToolCallReady``), while the rest of the answer
    streams, instead of after the whole answer (see ``agentflow.runtimes.eager_calls``).

    ``on_error`` says what the tool's failures (an exception it raises, its timeout) become: ``"feed"``, the
    ``TOOL_ERROR`` text to the model; ``"raise"``, the end of the run, which fails with the exception; or a
    function ``(exc, call) -> str | None`` giving the text the model gets instead. Unset (``None``), the
    agent's default applies (``"feed"``). See ``agentflow.tools.failures``.

    ``return_direct=True`` makes the tool's result the run's answer: once a step's calls have all run, the
    first of them (in call order) to a ``return_direct`` tool that succeeded ends the run (``FINAL_ANSWER``),
    its result's text as ``output_text`` (and ``output``, read into the agent's ``output_type`` if it has
    one), with no model call to repeat it. A failed call does not end the run. See
    ``AgentRuntime.read_tool_answer``.

    >>> @tool(return_direct=True)
    ... def order_status(order: str) -> str:
    ...     '''The status of an order, told to the user as is.'''
    ...     return f"{order}: shipped"
    >>> order_status.return_direct
    True

    ``needs_approval=True`` makes every call wait for a decision before it runs; a plain function
    ``(arguments: dict) -> bool`` of a call's validated arguments decides which calls need one. Who decides
    is the run's: ``AgentOptions(tool_approval=fn)``, or ``run.approve(call_id)`` / ``run.deny(call_id)`` on a
    streamed run. A denied call does not run; the model gets a ``TOOL_ERROR`` of type ``denied`` with the
    reason. See ``agentflow.tools.approval``.

    >>> @tool(needs_approval=lambda arguments: arguments["amount"] > 100)
    ... def refund(order: str, amount: int) -> str:
    ...     '''Refund part of an order.'''
    ...     return f"refunded {amount} on {order}"
    >>> refund.needs_approval({"order": "A1", "amount": 250})
    True

    ``max_retries`` bounds the model's failed attempts at this tool. A call whose failure goes back to the
    model (invalid arguments, ``RejectCall``, any other exception it gets as a ``TOOL_ERROR``, a timeout) is
    one; once calls of the tool have failed in ``max_retries + 1`` steps in a row (a step in which one
    succeeded starts the count again), the run fails with ``ToolRetriesExceeded`` instead of asking the model
    once more. Unset (``None``), the agent's ``AgentOptions.max_tool_retries`` applies (default 3); ``0``
    ends the run at the first failure; ``math.inf`` never does. See ``agentflow.tools.retries``.

    >>> from agentflow.tools import RejectCall
    >>> @tool(max_retries=1)
    ... def find_city(name: str) -> str:
    ...     '''Find a city by name.'''
    ...     raise RejectCall(f"no city is named {name!r}; check the spelling")
    >>> find_city.max_retries
    1

    ``enabled`` says when the tool is offered: ``True`` (always), ``False`` (never, for a flag to turn on), or
    a function of the run, ``fn(run: PromptContext) -> bool`` (or ``async``), evaluated before each step's
    model call with the run's ``deps``, step and usage: the tool is offered in the steps it says so. A
    call to a tool not offered is an unknown tool's ``TOOL_ERROR``. See ``agentflow.tools.availability``.

    >>> @tool(enabled=lambda run: run.deps.is_admin)
    ... def delete_user(user_id: str) -> str:
    ...     '''Delete a user's account.'''
    ...     return "deleted"
    >>> delete_user.enabled is not None
    True

    ``input_guardrails`` and ``output_guardrails`` are your policy checks of each call: functions
    ``fn(ctx: ToolGuardrailContext, value)``, sync or async, of the call's validated arguments (before it
    runs, and before it is asked to be approved) or of the tool's result (before the model sees it), in order.
    Each returns ``None`` (the call goes on), ``Rejection("message")`` (the call is not run, or its result
    replaced: the model gets the message as a ``TOOL_ERROR`` of type ``rejected``, and the run goes on) or
    ``Tripwire(reason)`` (the run fails with ``ToolGuardrailTripped``). One that raises fails the run with
    ``ToolGuardrailError``. See ``agentflow.tools.tool_guardrails``.

    >>> from agentflow.tools.tool_guardrails import Rejection
    >>> def at_most_500(ctx, arguments):
    ...     return Rejection("refunds over 500 need a manager") if arguments["amount"] > 500 else None
    >>> @tool(input_guardrails=[at_most_500])
    ... def refund_order(order: str, amount: int) -> str:
    ...     '''Refund part of an order.'''
    ...     return f"refunded {amount} on {order}"
    >>> refund_order.input_guardrails == (at_most_500,)
    True
    """

    if unexpected:
        raise TypeError(_unexpected_message(unexpected))

    def build(func: Callable[P, R]) -> Tool[P, R]:
        return _build(
            func,
            name=name,
            description=description,
            timeout=timeout,
            strict=strict,
            inline=inline,
            eager=eager,
            on_error=on_error,
            return_direct=return_direct,
            needs_approval=needs_approval,
            max_retries=max_retries,
            enabled=enabled,
            input_guardrails=input_guardrails,
            output_guardrails=output_guardrails,
        )

    if fn is None:
        # ``tool(None)``: a function that was expected is missing; returning the decorator would only fail
        # later, far from here, with an AttributeError.
        raise TypeError("tool() got None instead of a function; pass the function to make a tool of")
    if not isinstance(fn, _NoFunction):
        return build(fn)
    # The options alone are checked now, where they are written, not when the decorator is applied.
    if name is not None:
        _check_name(name)
    _check_timeout(timeout)
    _check_on_error(on_error)
    _check_return_direct(return_direct)
    check_needs_approval(needs_approval)
    _check_max_retries(max_retries)
    check_enabled(enabled)
    # Made tuples now (an iterator given once is not spent twice) and checked, naming the keyword.
    input_guardrails = _check_input_guardrails(input_guardrails)
    output_guardrails = _check_output_guardrails(output_guardrails)
    return build


# Options of the peers' tool decorators (pydantic-ai's ``@agent.tool``, the Agents SDK's ``@function_tool``)
# that have another name here: a typed caller is told by the overloads, everyone else by this.
_PEER_OPTIONS: Final = {
    "retries": "max_retries=",
    "requires_approval": "needs_approval=",
    "name_override": "name=",
    "description_override": "description=",
    "strict_mode": "strict=",
    "failure_error_function": "on_error=",
    "timeout_seconds": "timeout=",
    "is_enabled": "enabled=",
    "prepare": "enabled=",
    "tool_input_guardrails": "input_guardrails=",
    "tool_output_guardrails": "output_guardrails=",
}


def _unexpected_message(unexpected: Mapping[str, object]) -> str:
    import difflib  # the error path only

    accepted = [p for p in inspect.signature(tool).parameters if p not in ("fn", "unexpected")]
    hints = []
    for keyword in unexpected:
        close = _PEER_OPTIONS.get(keyword) or next(
            (f"{guess}=" for guess in difflib.get_close_matches(keyword, accepted, n=1)), None
        )
        hints.append(f"{keyword!r} (did you mean {close}?)" if close else repr(keyword))
    return (
        f"tool() got unexpected keyword argument{'s' if len(hints) > 1 else ''} {', '.join(hints)}; "
        f"it takes {', '.join(accepted)}"
    )


def _build(
    fn: Callable[P, R],
    *,
    name: str | None,
    description: str | None,
    timeout: float | None,
    strict: bool | None,
    inline: bool,
    eager: bool,
    on_error: ToolErrorPolicy | None,
    return_direct: bool,
    needs_approval: NeedsApproval,
    max_retries: float | None,
    enabled: ToolEnabled = True,
    input_guardrails: Iterable[ToolGuardrailFunction] = (),
    output_guardrails: Iterable[ToolGuardrailFunction] = (),
) -> Tool[P, R]:
    if isinstance(fn, Tool):
        raise TypeError("this function is already a Tool")
    if not callable(fn):
        raise TypeError(f"@tool needs a function, got {fn!r}")
    if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
        raise TypeError(
            f"{fn.__name__} is a generator; a tool returns one value (report partial results with "
            "'await ctx.emit_progress(...)')"
        )
    # A partial describes the function it wraps: its name, its docstring, its parameters less those bound.
    wrapped, bound = _unwrap_partial(fn)
    tool_name = _check_name(name or getattr(wrapped, "__name__", "") or type(wrapped).__name__)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"tool {tool_name!r}: cannot read the signature of {fn!r}: {exc}") from exc
    _check_not_unbound_method(wrapped, signature, bound, tool_name)
    hints = _hints(fn, strict_resolution=True, where=f"tool {tool_name!r}")
    doc = _docs(wrapped)
    context_parameter: str | None = None
    props: list[Prop] = []
    prop_hints: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.name in bound:
            # The signature keeps a keyword the partial bound (as its default); the model must not set it.
            continue
        where = f"parameter {parameter.name!r} of tool {tool_name!r}"
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{where}: *args/**kwargs cannot be described to the model; name every parameter")
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise TypeError(
                f"{where}: positional-only parameters are not supported (arguments arrive by name)"
            )
        if parameter.name not in hints:
            raise TypeError(f"{where}: add a type annotation (typing.Any accepts any JSON value)")
        hint = hints[parameter.name]
        if _is_context(hint):
            if context_parameter is not None:
                raise TypeError(f"{where}: only one parameter may take the ToolContext")
            context_parameter = parameter.name
            continue
        shape = shape_of(hint, strict=bool(strict), where=where)
        prop_hints[parameter.name] = hint
        has_default = parameter.default is not parameter.empty
        props.append(
            Prop(
                parameter.name,
                shape,
                required=not has_default,
                default=parameter.default if has_default else MISSING,
                description=doc.params.get(parameter.name),
            )
        )
    shape = object_shape(props, strict=bool(strict))
    spec = ToolSpec(
        name=tool_name,
        description=description if description is not None else doc.description,
        parameters=shape.schema,
        strict=strict,
    )
    return Tool(
        spec,
        fn,
        context_parameter=context_parameter,
        timeout=timeout,
        inline=inline,
        eager=eager,
        on_error=on_error,
        return_direct=return_direct,
        needs_approval=needs_approval,
        max_retries=max_retries,
        enabled=enabled,
        input_guardrails=input_guardrails,
        output_guardrails=output_guardrails,
        returns=_returns(hints, doc.returns),
        plain_parameters=_plain_parameters(props, prop_hints) if strict else None,
        parser=ArgumentParser(tool_name, shape.schema, shape.convert),
    )


def _returns(hints: Mapping[str, Any], description: str) -> ToolReturns | None:
    """What the return annotation and the docstring's ``Returns`` text say, or ``None`` when neither says
    anything. An annotation JSON cannot describe leaves the schema out: it is never an error here."""
    schema: dict[str, Any] | None = None
    if "return" in hints:
        try:
            schema = shape_of(hints["return"]).schema
        except Exception:  # any failure at all: a tool must never fail to decorate over its return type
            schema = None
    if schema is None and not description:
        return None
    return ToolReturns(schema, description)


def _plain_parameters(props: list[Prop], hints: Mapping[str, Any]) -> dict[str, Any] | None:
    """A strict tool's parameters as a plain schema (see ``Tool.plain_parameters``); ``None`` if a type has no
    plain schema (every type with a strict one has)."""
    try:
        plain = [attrs.evolve(p, shape=shape_of(hints[p.name])) for p in props]
        return object_shape(plain).schema
    except TypeError:
        return None


def _docs(fn: Callable[..., Any]) -> DocInfo:
    """The description and parameter docs of ``fn``; for a callable object, those of its ``__call__``.

    A callable object's class docstring documents the class (its ``Args`` are ``__init__``'s), so it is only
    the fallback for the description, never a source of parameter docs.
    """
    if inspect.isroutine(fn) or isinstance(fn, type):
        return parse_docstring(inspect.getdoc(fn))
    call = parse_docstring(inspect.getdoc(type(fn).__call__))
    if call.description:
        return call
    return DocInfo(parse_docstring(inspect.getdoc(fn)).description, call.params)


def _is_context(hint: Any) -> bool:
    """``ToolContext`` or ``ToolContext | None`` (either possibly ``Annotated``, as dependency-injection code
    writes it, or ``ToolContext[MyDeps]``): the parameter that receives the call's context."""
    hint = _bare(hint)
    if hint is ToolContext:
        return True
    is_union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    return is_union and {_bare(a) for a in typing.get_args(hint)} == {ToolContext, type(None)}


def _bare(hint: Any) -> Any:
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    # ``ToolContext[MyDeps]``: the class itself, whatever the run's deps are typed as.
    return ToolContext if typing.get_origin(hint) is ToolContext else hint


def _check_not_unbound_method(
    fn: Callable[..., Any], signature: inspect.Signature, bound: frozenset[str], tool_name: str
) -> None:
    """``@tool`` on a method in its class body sees a plain function whose first parameter is ``self``."""
    first = next(iter(signature.parameters.values()), None)
    # A function defined in a class body has the class in its qualified name (``Weather.lookup``); a plain
    # function may well call its first parameter ``cls`` (a class label) or ``self``.
    in_class_body = "." in getattr(fn, "__qualname__", "").rsplit("<locals>.", 1)[-1]
    if (
        first is None
        or first.name not in ("self", "cls")
        or first.name in bound
        or not inspect.isfunction(fn)
        or not in_class_body
    ):
        return
    raise TypeError(
        f"tool {tool_name!r}: {fn.__qualname__} takes {first.name!r}, so it looks like a method decorated "
        f"in its class body, where it is not bound yet; make the tool from the bound method instead, "
        f"e.g. tool(instance.{fn.__name__}) (the model cannot supply {first.name!r})"
    )


def _unwrap_partial(fn: Callable[..., Any]) -> tuple[Callable[..., Any], frozenset[str]]:
    """The function under any ``functools.partial`` layers, and the keywords those layers bind.

    Positional arguments a partial binds already vanish from its signature; its keywords do not.
    """
    bound: set[str] = set()
    while isinstance(fn, functools.partial):
        bound.update(fn.keywords)
        fn = fn.func
    return fn, frozenset(bound)


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    if isinstance(fn, functools.partial):
        return _is_async(fn.func)
    # A callable object with an ``async def __call__``.
    return not (inspect.isfunction(fn) or inspect.ismethod(fn)) and inspect.iscoroutinefunction(
        type(fn).__call__
    )


def _hints(fn: Callable[..., Any], *, strict_resolution: bool, where: str = "") -> dict[str, Any]:
    target: Any = _unwrap_partial(fn)[0]
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        target = type(target).__call__  # a callable object: its __call__ carries the annotations
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as exc:
        # The return annotation only describes the result (``Tool.returns``): one that cannot be resolved
        # leaves it undescribed rather than failing the tool.
        hints = _hints_without_return(target)
        if hints is not None:
            return hints
        if not strict_resolution:
            return {}
        raise TypeError(
            f"{where}: cannot resolve the type hints of {fn!r}: {exc}{unresolved_note(exc)}"
        ) from exc


def _hints_without_return(target: Any) -> dict[str, Any] | None:
    """The parameters' type hints of ``target`` when they resolve without its return annotation, else
    ``None`` (there is none, or a parameter's does not resolve either)."""
    annotations = getattr(target, "__annotations__", None)
    if not isinstance(annotations, dict) or "return" not in annotations:
        return None
    # ``get_type_hints`` reads any object with ``__annotations__`` and ``__globals__``.
    shim = types.SimpleNamespace(
        __annotations__={k: v for k, v in annotations.items() if k != "return"},
        __globals__=getattr(inspect.unwrap(target), "__globals__", {}),
    )
    try:
        return typing.get_type_hints(shim, include_extras=True)
    except Exception:
        return None
