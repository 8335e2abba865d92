"""Typed errors a run can raise on purpose (as opposed to model or tool failures it passes on)."""

from __future__ import annotations

from typing import Any

from ..result import AgentResult

__all__ = ["AgentRunError", "MaxStepsExceeded"]


class AgentRunError(Exception):
    """Base of the errors a runtime raises itself; ``partial`` keeps the run's finished work and usage."""

    def __init__(self, message: str, partial: AgentResult) -> None:
        super().__init__(message)
        self.partial = partial

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
