"""The plan of a run that plans (DeepResearch; CodeAct given a planner): ``Plan``, ``PlanStep`` and
``StepStatus``, as plain immutable values.

They sit below the agent layer (the ``PlanCreated`` / ``PlanUpdated`` events carry them, as run events carry
``AgentResult``), so this module holds values and their text form only: no planning, no I/O. Planners live in
``agentflow.runtimes.planner``, the planning the runtimes share in ``agentflow.runtimes.planning``.

>>> plan = Plan.of("Compare two circles", ["Area of r=3", "Area of r=5", "Compare"])
>>> print(plan.to_text(), end="")
Plan:
1. Area of r=3
2. Area of r=5
3. Compare
>>> print(plan.mark(0, StepStatus.DONE).to_text(), end="")
Plan:
1. Area of r=3 (done)
2. Area of r=5
3. Compare
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

import attrs

from .model.response import TokenUsage

__all__ = ["Plan", "PlanStep", "StepStatus"]


class StepStatus(enum.Enum):
    """Where a plan step stands. A fresh plan's steps are all ``PENDING``."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    SKIPPED = "skipped"

    @property
    def label(self) -> str:
        """The words used in the plan's text form (``"in progress"``); empty for ``PENDING``."""
        return "" if self is StepStatus.PENDING else self.value.replace("_", " ")


def _step_text(value: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a plan step's text must be a string, got {type(value).__name__}")
    text = " ".join(value.split())
    if not text:
        raise ValueError("a plan step's text must not be blank")
    return text


def _status(value: StepStatus | str) -> StepStatus:
    if isinstance(value, StepStatus):
        return value
    try:
        return StepStatus(value)
    except ValueError:
        known = ", ".join(s.value for s in StepStatus)
        raise ValueError(f"unknown plan step status {value!r}; expected one of: {known}") from None


@attrs.frozen
class PlanStep:
    """One step of a plan: what to do (one line of text; whitespace is collapsed) and its status.

    >>> PlanStep("Find the  population\\nof Paris")
    PlanStep(text='Find the population of Paris', status=<StepStatus.PENDING: 'pending'>)
    """

    text: str = attrs.field(converter=_step_text)
    status: StepStatus = attrs.field(default=StepStatus.PENDING, converter=_status)

    def to_dict(self) -> dict[str, str]:
        """``{"text": …, "status": …}``, JSON-ready."""
        return {"text": self.text, "status": self.status.value}


def _to_steps(value: Iterable[PlanStep | str]) -> tuple[PlanStep, ...]:
    if isinstance(value, str):
        raise TypeError("a plan's steps must be a sequence of steps, not one string")
    return tuple(s if isinstance(s, PlanStep) else PlanStep(s) for s in value)


@attrs.frozen
class Plan:
    """The goal of a run and the steps planned to reach it.

    ``revision`` counts re-plans (0 for the first plan of a run); ``usage`` is what making this plan cost
    when a model made it (``None`` otherwise). Steps may be given as strings (pending) or ``PlanStep`` values.
    A plan may have no steps (the goal was blank): nothing is then written to memory.

    ``fallback_reason`` is set when the planner could not make the plan it was asked for and this is a
    stand-in (``ModelPlanner`` with ``on_invalid="fallback"``: the goal as the only step, or the current
    plan unchanged when re-planning): why, e.g. the model's answer was not a plan. ``None`` for a real plan.
    """

    goal: str
    steps: tuple[PlanStep, ...] = attrs.field(default=(), converter=_to_steps)
    revision: int = 0
    usage: TokenUsage | None = attrs.field(default=None, eq=False)
    fallback_reason: str | None = None

    @property
    def is_fallback(self) -> bool:
        """Whether this plan stands in for one the planner failed to make (see ``fallback_reason``)."""
        return self.fallback_reason is not None

    @classmethod
    def of(cls, goal: str, steps: Iterable[PlanStep | str]) -> Plan:
        """A plan for ``goal`` with these steps (strings are pending steps)."""
        return cls(goal, tuple(steps))

    @property
    def texts(self) -> tuple[str, ...]:
        """The steps' texts, in order."""
        return tuple(s.text for s in self.steps)

    @property
    def current(self) -> PlanStep | None:
        """The step being worked on: the first ``IN_PROGRESS`` one, else the first ``PENDING`` one."""
        for wanted in (StepStatus.IN_PROGRESS, StepStatus.PENDING):
            for step in self.steps:
                if step.status is wanted:
                    return step
        return None

    @property
    def finished(self) -> bool:
        """Whether every step is ``DONE`` or ``SKIPPED``."""
        return all(s.status in (StepStatus.DONE, StepStatus.SKIPPED) for s in self.steps)

    def mark(self, index: int, status: StepStatus | str) -> Plan:
        """This plan with step ``index`` (0-based) set to ``status``."""
        if not 0 <= index < len(self.steps):
            raise IndexError(f"the plan has {len(self.steps)} steps; there is no step {index}")
        steps = list(self.steps)
        steps[index] = attrs.evolve(steps[index], status=_status(status))
        return attrs.evolve(self, steps=tuple(steps))

    def to_text(self, header: str = "Plan:") -> str:
        """The plan as it is written to memory: the header, then ``1. step`` lines, each ending in a newline.

        A step that is not pending says so in brackets, e.g. ``2. Compare (done)``; a fresh plan is exactly
        the reference's ``"Plan:\\n1. …\\n2. …\\n"``.
        """
        lines = [header]
        for number, step in enumerate(self.steps, start=1):
            label = step.status.label
            lines.append(f"{number}. {step.text} ({label})" if label else f"{number}. {step.text}")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping: goal, steps (text and status), revision, usage and fallback reason."""
        return {
            "goal": self.goal,
            "steps": [s.to_dict() for s in self.steps],
            "revision": self.revision,
            "usage": None if self.usage is None else self.usage.to_dict(),
            "fallback_reason": self.fallback_reason,
        }
