"""Output validators: your own checks on a run's final answer, after it was read into the output type.

``OutputType(City, validators=[check])`` calls ``check(city)`` (or ``check(city, context)``: it gets an
``OutputContext`` when it takes a second argument) on every final answer that matches the schema, in order,
each on what the one before returned. A validator returns the value to use (``None``: the value as it is),
sync or async; raising ``RejectOutput("why")`` sends the answer back to the model with that message, as an
answer that does not match the schema is (``OutputRejected``, the same ``retries``); any other exception is a
bug or an outage, not a bad answer: the run fails with ``ValidatorError``.

>>> from agentflow.runtimes.output import OutputType
>>> def positive(n: int) -> None:
...     if n <= 0:
...         raise RejectOutput("the number must be positive")
>>> OutputType(int, validators=[positive, lambda n, context: n * 2]).validator_context
(False, True)

Nothing here decides what happens after a rejection; ``AgentRuntime.read_output`` does.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

import attrs

from ..model.response import TokenUsage
from ..result import AgentResult, StopReason
from .errors import AgentRunError

if TYPE_CHECKING:
    import typing_extensions

    from .context import RunContext

    # For type checkers only (PEP 696), as ``ToolContext``'s: a bare ``OutputContext`` is ``[Any]``.
    DepsT = typing_extensions.TypeVar("DepsT", default=Any)
else:
    DepsT = typing.TypeVar("DepsT")

__all__ = [
    "OutputContext",
    "OutputValidator",
    "RejectOutput",
    "ValidatorError",
    "takes_context",
    "validate",
]

T = TypeVar("T")

OutputValidator: TypeAlias = (
    Callable[[T], T | Awaitable[T | None] | None]
    | Callable[[T, "OutputContext[Any]"], T | Awaitable[T | None] | None]
)
"""A check on a final answer of type ``T``: ``fn(value)`` or ``fn(value, context)``, sync or async, returning
the value to use (``None``: unchanged) or raising ``RejectOutput``."""


class RejectOutput(Exception):
    """Raised by an output validator: the final answer is not acceptable, for the reason in ``message``.

    The model gets the message (``OUTPUT_REJECTED_PROMPT``) and answers again, while the output type's
    ``retries`` last; then the run fails with ``OutputValidationError`` whose ``reason`` is the message.

    >>> def in_europe(city):
    ...     if city.country not in ("France", "Italy"):
    ...         raise RejectOutput(f"{city.name} is not in Europe; name a European city")
    """

    def __init__(self, message: str) -> None:
        if not isinstance(message, str):
            raise TypeError(f"RejectOutput takes the message for the model (a str), got {message!r}")
        super().__init__(message)
        self.message = message


@attrs.frozen
class OutputContext(Generic[DepsT]):
    """What an output validator that takes a second argument learns about the run.

    ``step`` is the step of the answer, ``usage`` the run's usage so far, ``rejections`` how many of the
    run's final answers were rejected before this one (0 for the first), ``text`` the answer as the model
    wrote it, ``deps`` the run's dependencies (``agent.run(x, deps=...)``, ``None`` without): annotate the
    parameter ``OutputContext[MyDeps]`` to type them.
    """

    run_id: str
    step: int
    usage: TokenUsage
    rejections: int
    text: str
    deps: DepsT = attrs.field(default=None, repr=False, eq=False)


class ValidatorError(AgentRunError):
    """An output validator raised something other than ``RejectOutput``: the run fails with this error.

    ``validator`` names the validator; the exception it raised is ``__cause__``; ``partial`` keeps the run's
    work. (To send an answer back to the model instead, raise ``RejectOutput``.)
    """

    def __init__(self, validator: str, error: str, partial: AgentResult) -> None:
        super().__init__(
            f"output validator {validator} raised {error}; raise RejectOutput('...') in it to send the "
            "answer back to the model instead",
            partial,
        )
        self.validator = validator
        self.error = error

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.validator, self.error, self.partial))


def takes_context(validator: object) -> bool:
    """Whether ``validator`` is called with an ``OutputContext`` after the value (it takes two positional
    arguments); ``TypeError`` if it is not callable with one or two.

    >>> takes_context(lambda value: value), takes_context(lambda value, context: value)
    (False, True)
    """
    if not callable(validator):
        raise TypeError(f"an output validator must be callable, got {validator!r}")
    try:
        signature = inspect.signature(validator)
    except (TypeError, ValueError):  # no signature to read (some builtins): called with the value alone
        return False
    for arguments in ((None, None), (None,)):
        try:
            signature.bind(*arguments)
        except TypeError:
            continue
        return len(arguments) == 2
    raise TypeError(
        f"output validator {validator_name(validator)} must take the value, or the value and an "
        f"OutputContext, as positional arguments; its signature is {signature}"
    )


def validator_name(validator: object) -> str:
    """How errors name a validator: its qualified name."""
    return str(getattr(validator, "__qualname__", None) or getattr(validator, "__name__", None) or validator)


async def validate(ctx: RunContext, value: Any, text: str) -> Any:
    """``value`` (the final answer ``text`` read into ``ctx.output_type``) passed through the output type's
    validators, in order; the value to use.

    ``RejectOutput`` propagates; any other exception becomes ``ValidatorError``. The ``OutputContext`` is
    made once, if a validator takes it. A sync validator runs on the event loop: it should be quick (do I/O
    in an async one).
    """
    spec = ctx.output_type
    assert spec is not None
    context: OutputContext | None = None
    validators: tuple[Callable[..., Any], ...] = spec.validators
    for validator, with_context in zip(validators, spec.validator_context, strict=True):
        try:
            if with_context:
                if context is None:
                    context = OutputContext(
                        ctx.run_id, ctx.step, ctx.usage, ctx.output_rejections, text, ctx.deps
                    )
                checked = validator(value, context)
            else:
                checked = validator(value)
            if inspect.isawaitable(checked):
                checked = await checked
        except RejectOutput:
            raise
        except Exception as exc:
            name = validator_name(validator)
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            partial = ctx.result_for(StopReason.ERROR, error=f"output validator {name} raised {error}")
            raise ValidatorError(name, error, partial) from exc
        if checked is not None:
            value = checked
    return value
