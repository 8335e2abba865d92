"""Typed errors a run can raise on purpose (as opposed to model or tool failures it passes on), and how any
exception a failed run raises carries the run's partial result (``run_result``)."""

from __future__ import annotations

import contextlib
from typing import Any, ClassVar

from ..result import AgentResult, StopReason

__all__ = [
    "RUN_RESULT_NOTE",
    "AgentRunError",
    "MaxStepsExceeded",
    "ToolRetriesExceeded",
    "attach_run_result",
    "own_result",
    "run_result",
]

RUN_RESULT_NOTE = (
    "agentflow: run {run_id} failed after {steps} finished step(s); its partial result (usage, tool results, "
    "new_items) is this exception's run_result attribute (agentflow.runtimes.errors.run_result(exc))"
)
"""The note (``add_note``) a failed run's exception gets, so a traceback says where the partial result is."""

_NOTE_START = RUN_RESULT_NOTE.partition("{")[0]


class AgentRunError(Exception):
    """Base of the errors a runtime raises itself; ``partial`` keeps the run's finished work and usage."""

    partial_at_end: ClassVar[bool] = False
    """Whether the error is raised before its run has a result to give it (mid-step, by a tool call): the
    run's ending then gives it the run's partial result (``attach_run_result``), in place of the one it
    was made with."""

    def __init__(self, message: str, partial: AgentResult) -> None:
        super().__init__(message)
        self.partial = partial

    @property
    def run_result(self) -> AgentResult:
        """``partial``, under the name every exception of a failed run has (see ``run_result``)."""
        return self.partial

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable (multiprocessing, task queues): each subclass's own ``__init__`` arguments.
        return (type(self), (str(self), self.partial))


class MaxStepsExceeded(AgentRunError):
    """The run used all ``max_steps`` without a final answer (raised when ``on_max_steps="raise"``).

    >>> from agentflow.result import StopReason
    >>> err = MaxStepsExceeded(3, AgentResult("run_1", "", StopReason.MAX_STEPS, steps=3))
    >>> str(err), err.partial.steps
    ('the run reached max_steps=3 without a final answer', 3)
    """

    def __init__(self, max_steps: int, partial: AgentResult) -> None:
        super().__init__(f"the run reached max_steps={max_steps} without a final answer", partial)
        self.max_steps = max_steps

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.max_steps, self.partial))


class ToolRetriesExceeded(AgentRunError):
    """The model's calls of one tool failed in more steps in a row than the tool's retry limit allows
    (``@tool(max_retries=...)``, else ``AgentOptions.max_tool_retries``; see ``agentflow.tools.retries``).

    ``tool`` is the tool's name (for calls of tools that do not exist, ``unknown`` is true and ``tool`` the
    last name the model made up), ``max_retries`` the limit, ``error`` the last failure's message and
    ``error_type`` its kind (``invalid_arguments``, ``exception``, ``timeout``, ``unknown_tool``). Raised by
    the tool call that failed once too often, after its result and ``ToolFailed``; the run fails with it as
    with any error (``RunFailed``), and ``partial`` is the run's result as it ended (every call answered).

    >>> err = ToolRetriesExceeded("find_city", 1, "no city is named 'Pariss'", "exception")
    >>> print(err)  # doctest: +NORMALIZE_WHITESPACE
    the model's calls of tool 'find_city' failed in 2 steps in a row, more than its max_retries=1 allows;
    the last error: no city is named 'Pariss'
    """

    partial_at_end: ClassVar[bool] = True

    def __init__(
        self,
        tool: str,
        max_retries: int,
        error: str,
        error_type: str,
        partial: AgentResult | None = None,
        unknown: bool = False,
    ) -> None:
        steps = "1 step" if max_retries == 0 else f"{max_retries + 1} steps in a row"
        if unknown:
            message = (
                f"the model called tools that do not exist in {steps}, more than "
                f"max_tool_retries={max_retries} allows; the last one: {error}"
            )
        else:
            message = (
                f"the model's calls of tool {tool!r} failed in {steps}, more than its "
                f"max_retries={max_retries} allows; the last error: {error}"
            )
        if partial is None:
            partial = AgentResult("", "", StopReason.ERROR, error=message)  # replaced as the run ends
        super().__init__(message, partial)
        self.tool = tool
        self.max_retries = max_retries
        self.error = error
        self.error_type = error_type
        self.unknown = unknown

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            type(self),
            (self.tool, self.max_retries, self.error, self.error_type, self.partial, self.unknown),
        )


def own_result(exc: BaseException) -> AgentResult | None:
    """The partial result ``exc`` brought with it: an ``AgentRunError``'s own, unless it was raised before
    its run had one (``partial_at_end``); ``None`` for those and any other exception (the run's ending makes
    it)."""
    if isinstance(exc, AgentRunError) and not exc.partial_at_end:
        return exc.partial
    return None


def attach_run_result(exc: BaseException, result: AgentResult) -> None:
    """Make a failed run's partial result reachable from the exception it raises: ``exc.run_result``.

    The exception keeps its type (``except BadRequestError`` still catches a model's 400), and gets a note
    saying where the result is. An ``AgentRunError`` has it already (``partial``), unless it was raised
    before its run had one (``partial_at_end``): ``result`` becomes its ``partial``. An exception that refuses
    new attributes is raised as it is. The same exception object failing a later run points at that run.
    """
    if isinstance(exc, AgentRunError):
        if exc.partial_at_end:
            exc.partial = result
        return
    with contextlib.suppress(AttributeError, TypeError):
        exc.run_result = result  # type: ignore[attr-defined]
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        # One note per exception: a stale one (this object failed an earlier run) is replaced.
        notes[:] = [n for n in notes if not (isinstance(n, str) and n.startswith(_NOTE_START))]
    with contextlib.suppress(AttributeError, TypeError):  # no attributes at all; odd ``__notes__``
        exc.add_note(RUN_RESULT_NOTE.format(run_id=result.run_id, steps=result.steps))


def run_result(exc: BaseException) -> AgentResult | None:
    """The partial result of the run that failed with ``exc`` (typed access to ``exc.run_result``), or
    ``None`` for an exception no run raised.

    ``agent.run()``, ``run.result`` and ``run.wait()`` raise a failed run's own exception (a ``ModelError``
    such as ``BadRequestError``, a memory's error…) with the run's partial result attached: its steps, tool
    results, ``new_items`` and billed usage, as the ``RunFailed`` event holds them.

    >>> from agentflow.result import StopReason
    >>> partial = AgentResult("run_1", "", StopReason.ERROR, steps=1)
    >>> err = ValueError("boom")
    >>> attach_run_result(err, partial)
    >>> run_result(err) is partial, run_result(ValueError("other"))
    (True, None)
    """
    result = getattr(exc, "run_result", None)
    return result if isinstance(result, AgentResult) else None
