"""Typed errors a run can raise on purpose (as opposed to model or tool failures it passes on), and how any
exception a failed run raises carries the run's partial result (``run_result``)."""

from __future__ import annotations

import contextlib
from typing import Any

from ..result import AgentResult

__all__ = ["RUN_RESULT_NOTE", "AgentRunError", "MaxStepsExceeded", "attach_run_result", "run_result"]

RUN_RESULT_NOTE = (
    "agentflow: run {run_id} failed after {steps} finished step(s); its partial result (usage, tool results, "
    "new_items) is this exception's run_result attribute (agentflow.runtimes.errors.run_result(exc))"
)
"""The note (``add_note``) a failed run's exception gets, so a traceback says where the partial result is."""

_NOTE_START = RUN_RESULT_NOTE.partition("{")[0]


class AgentRunError(Exception):
    """Base of the errors a runtime raises itself; ``partial`` keeps the run's finished work and usage."""

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


def attach_run_result(exc: BaseException, result: AgentResult) -> None:
    """Make a failed run's partial result reachable from the exception it raises: ``exc.run_result``.

    The exception keeps its type (``except BadRequestError`` still catches a model's 400), and gets a note
    saying where the result is. An ``AgentRunError`` has it already (``partial``). An exception that refuses
    new attributes is raised as it is. The same exception object failing a later run points at that run.
    """
    if isinstance(exc, AgentRunError):
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
