"""What a tool's failure becomes: text the model gets, or the end of the run (``@tool(on_error=...)``).

By default every failure of a call becomes the ``TOOL_ERROR: {…}`` text the model gets as the call's result
(the reference's behaviour, and the right one for most tools: the model reads the error and tries another
way). A tool's ``on_error`` changes that for the exceptions it raises and its timeouts:

- ``"feed"``: the ``TOOL_ERROR`` text goes to the model (the default);
- ``"raise"``: the exception ends the run, which fails with it (``RunFailed``); the call still gets its
  ``TOOL_ERROR`` result in memory, so the conversation stays valid;
- a function ``(exc, call) -> str | None``: the text the model gets instead (to hide internals, or to say
  what to do next); ``None`` keeps the standard ``TOOL_ERROR`` text. A function that raises ends the run
  with its exception, and one that returns anything else with a ``TypeError``: its job may have been to
  keep the standard text (the exception's message) from the model, so it never falls back to it (the
  call's answer in memory names the exception's type alone).

Whatever the policy, two exceptions a tool may raise say what they mean: ``ToolFatalError`` always ends the
run, ``RejectCall`` always sends its message to the model. Invalid arguments and unknown tools are always
fed back (the model can fix them), and so is a ``CancelledError`` that was no cancel of the run: raised
again, it would pass for one. How many failures fed back in a row the model is allowed before the run ends
is the tool's retry limit (``@tool(max_retries=...)``: ``agentflow.tools.retries``). Pure decisions, no I/O:
``ToolExecutor`` applies them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Literal, TypeAlias, cast

import attrs

from ..model.messages import ToolCall
from ..result import ToolResult
from .outcome import ToolErrorType, failed_result

__all__ = [
    "RejectCall",
    "ToolErrorFormatter",
    "ToolErrorPolicy",
    "ToolFatalError",
    "check_policy",
    "noting_others",
    "settle_failure",
]

ToolErrorFormatter: TypeAlias = Callable[[Exception, ToolCall], "str | None"]
"""``(exc, call) -> text``: the text the model gets for a call that raised ``exc`` (a ``TimeoutError`` for a
call that ran out of time); ``None`` for the standard ``TOOL_ERROR`` text. A plain function: it runs on the
event loop, outside the call's time limit, so it must return at once (do async work in the tool itself)."""

ToolErrorPolicy: TypeAlias = Literal["feed", "raise"] | ToolErrorFormatter
"""What a tool's failure becomes: ``"feed"`` (the ``TOOL_ERROR`` text to the model), ``"raise"`` (the run
fails with the exception) or a ``ToolErrorFormatter`` (the text the model gets instead)."""


class ToolFatalError(Exception):
    """Raised by a tool: end the run now, whatever the tool's ``on_error``. The run fails with this exception
    (``RunFailed``; ``agent.run()`` raises it), its call gets its ``TOOL_ERROR`` result in memory, and the
    other calls still running in its step are cancelled. Subclass it for your own run-ending errors.

    >>> from agentflow.tools import tool
    >>> @tool
    ... def charge(amount: int) -> str:
    ...     '''Charge the customer's card.'''
    ...     raise ToolFatalError("the payment provider refused our API key; fix the key before going on")
    """


class RejectCall(Exception):
    """Raised by a tool: this call cannot be done, for the reason in ``message``, which the model gets as the
    call's ``TOOL_ERROR`` (``"error"`` is the message alone) whatever the tool's ``on_error``: a
    ``"raise"`` tool still tells the model what it can fix, and a formatter is not asked (the message is
    written for the model already). Like pydantic-ai's ``ModelRetry``, or ``RejectOutput`` for final
    answers; and like them it counts against a retry limit: the tool's ``max_retries``.

    >>> from agentflow.tools import tool
    >>> @tool(on_error="raise")  # an unexpected failure ends the run...
    ... def find_city(name: str) -> str:
    ...     '''Find a city by name.'''
    ...     raise RejectCall(f"no city is named {name!r}; check the spelling or ask the user")  # ...not this
    """

    def __init__(self, message: str) -> None:
        if not isinstance(message, str):
            raise TypeError(f"RejectCall takes the message for the model (a str), got {message!r}")
        super().__init__(message)
        self.message = message


def check_policy(value: object, where: str) -> ToolErrorPolicy:
    """``value`` if it is a ``ToolErrorPolicy``, else a ``TypeError`` or ``ValueError`` saying what is.

    >>> check_policy("ignore", "on_error")
    Traceback (most recent call last):
    ...
    ValueError: on_error must be "feed", "raise" or a function (exc, call) -> str | None, got 'ignore'
    """
    if isinstance(value, str) and value in ("feed", "raise"):
        return cast(ToolErrorPolicy, value)
    if isinstance(value, str) or not callable(value):
        kind = ValueError if isinstance(value, str) else TypeError
        raise kind(f'{where} must be "feed", "raise" or a function (exc, call) -> str | None, got {value!r}')
    if inspect.iscoroutinefunction(value) or inspect.iscoroutinefunction(type(value).__call__):
        raise TypeError(
            f"{where} must be a plain function returning the text for the model, not an async one: it runs "
            "on the event loop when the call fails; do async work (logging to a service…) in the tool itself"
        )
    return cast(ToolErrorPolicy, value)


def settle_failure(
    policy: ToolErrorPolicy,
    exc: Exception,
    call: ToolCall,
    error_type: ToolErrorType,
    error: str,
    *,
    tool: str,
    duration: float,
) -> tuple[ToolResult, Exception | None]:
    """The result of a call of ``tool`` that failed with ``exc`` under ``policy``, and the exception the run
    must end with (``None``: the result goes to the model and the run goes on).

    ``error`` is the failure's message (``ToolResult.error``, and the standard ``TOOL_ERROR`` text's). A run
    that ends still gets the result, with the standard text: it is the call's answer in memory (with only
    the exception's type when the formatter failed). Called while ``exc`` is handled, so an exception the
    formatter raises has ``exc`` as its context.
    """
    if isinstance(exc, RejectCall):
        return failed_result(call, error_type, exc.message, tool=tool, duration=duration), None
    standard = failed_result(call, error_type, error, tool=tool, duration=duration)
    if isinstance(exc, ToolFatalError):
        return standard, exc
    if isinstance(policy, str):
        return standard, exc if policy == "raise" else None
    try:
        text = policy(exc, call)
    except Exception as formatter_error:
        return _withheld(standard, exc, call, error_type, tool), formatter_error
    if text is None:
        return standard, None
    if not isinstance(text, str):
        if inspect.iscoroutine(text):
            text.close()  # no "never awaited" warning on top of the error
        problem = TypeError(
            f"the on_error function of tool {tool!r} returned {type(text).__name__}; it must return the text "
            "for the model (a str), or None for the standard TOOL_ERROR text"
        )
        problem.__cause__ = exc
        return _withheld(standard, exc, call, error_type, tool), problem
    return attrs.evolve(standard, output=text), None


def noting_others(first: Exception, others: Sequence[BaseException]) -> Exception:
    """``first``, the exception the first of several calls ending the run at the same instant ended it with,
    noted with the others' (their calls have their results in memory all the same): the run raises it
    alone, not an ``ExceptionGroup`` that ``except PaymentDeclined`` would not catch."""
    first.add_note(
        f"{len(others)} more call(s) of the same step ended the run at the same time: "
        + ", ".join(repr(error) for error in others)
    )
    return first


def _withheld(
    standard: ToolResult, exc: Exception, call: ToolCall, error_type: ToolErrorType, tool: str
) -> ToolResult:
    """The result of a call whose formatter failed: the run ends, and memory (which a session's next run
    shows the model) gets the exception's type alone, not the message the formatter was there to hide."""
    shown = failed_result(call, error_type, type(exc).__name__, tool=tool)
    return attrs.evolve(standard, output=shown.output)
