"""How many times in a row the model may get a tool wrong in one run (``@tool(max_retries=...)``,
``AgentOptions(max_tool_retries=...)``): a run's count of failed attempts per tool.

A **failed attempt** is a call whose failure goes back to the model for it to try again: invalid arguments,
an exception the tool raised (``RejectCall`` included, and whatever an ``on_error`` function turned into
text), a timeout, a call of a tool that does not exist. Not one: a call a person denied (``denied``), a call
the run itself cut or refused (``cancelled``: its limits, a cancel), a failure that ends the run anyway.

What is counted is **steps**, per tool: a tool's count is the number of steps in a row in which a call of it
failed. Several calls of it failing in one step (parallel calls) count once; a step that does not call it
leaves its count as it is; a step in which a call of it succeeded, and none failed, sets it back to zero.
The order in which a step's calls finish never matters. Calls of tools that do not exist share one count
for the run (a model trying name after name it made up is as stuck as one repeating a name), set back to
zero by a step in which any call succeeded.

The model gets ``limit`` retries: a failure when the count already stands at ``limit`` (the ``limit + 1``-th
failing step in a row) ends the run with the error the ``exceeded`` function makes of it. That is
pydantic-ai's rule (``Agent(retries=...)``, ``UnexpectedModelBehavior``), its steps and its reset alike.

Pure bookkeeping, no I/O: ``ToolExecutor`` reports each settled call, and builds this only when a call first
fails, so a run whose calls all succeed never has one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

from ..result import ToolResult

__all__ = ["COUNTED_FAILURES", "RetriesExceeded", "ToolRetries", "check_max_retries"]

COUNTED_FAILURES: Final = frozenset(("unknown_tool", "invalid_arguments", "exception", "timeout"))
"""The ``ToolResult.error_type`` of the failures that count as the model's failed attempts."""

RetriesExceeded = Callable[[str, int, ToolResult, bool], Exception]
"""``(name, limit, result, unknown) -> exception``: the error a run ends with when the model's calls of the
tool ``name`` failed more steps in a row than ``limit`` allows; ``result`` is the last failed call's,
``unknown`` says whether the calls were of tools that do not exist (``name`` is then the last one called)."""

_UNKNOWN = ""
"""The key of the count shared by calls of tools that do not exist (no tool is named ``""``)."""


def check_max_retries(value: object, where: str) -> float | None:
    """``value`` if it is a retry limit (an int >= 0, ``math.inf`` or ``None``), else a ``TypeError`` or
    ``ValueError`` saying what is.

    >>> check_max_retries(-1, "max_retries")
    Traceback (most recent call last):
    ...
    ValueError: max_retries must be an int >= 0 (retries after a failed call), math.inf or None, got -1
    """
    if value is None:
        return None
    if isinstance(value, float) and value == math.inf:
        return math.inf
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    kind = ValueError if isinstance(value, int | float) and not isinstance(value, bool) else TypeError
    raise kind(f"{where} must be an int >= 0 (retries after a failed call), math.inf or None, got {value!r}")


class _Count:
    """One tool's count: the failing steps in a row, the last step that failed, and the step in which a
    success set it back (it takes effect unless a call of the tool fails in that same step)."""

    __slots__ = ("cleared", "failed", "steps")

    def __init__(self) -> None:
        self.steps = 0
        self.failed = -1
        self.cleared = -1


class ToolRetries:
    """One run's counts of failed attempts, per tool (see the module doc).

    ``failed`` is told every call whose failure goes to the model, with the limit of its tool (``None`` or
    ``math.inf``: none), and returns the exception the run must end with, if it must; ``succeeded`` is told
    every call that succeeded once something has failed. ``exceeded`` builds that exception.
    """

    __slots__ = ("_counts", "_exceeded")

    def __init__(self, exceeded: RetriesExceeded) -> None:
        self._counts: dict[str, _Count] = {}
        self._exceeded = exceeded

    def failed(
        self, result: ToolResult, limit: float | None, step: int, *, unknown: bool
    ) -> Exception | None:
        """A call failed in ``step`` (``result``): the exception the run ends with, if its tool's count stood
        at ``limit`` already; ``None`` otherwise (the model gets the failure and may try again)."""
        if limit is None or limit == math.inf or result.error_type not in COUNTED_FAILURES:
            return None
        key = _UNKNOWN if unknown else result.name
        count = self._counts.get(key)
        if count is None:
            count = self._counts[key] = _Count()
        elif count.failed == step:
            return None  # this step is counted already: it is one attempt, however many calls failed
        if count.cleared > count.failed and count.cleared != step:
            # A call succeeded after the last failed step, in a step of its own (a step in which calls both
            # succeed and fail is a failed one, whichever came first).
            count.steps = 0
        count.failed = step
        if count.steps >= limit:
            # Once per step: another call of the tool failing in it does not end the run a second time.
            return self._exceeded(result.name, int(limit), result, unknown)
        count.steps += 1
        return None

    def succeeded(self, name: str, step: int) -> None:
        """A call of the tool ``name`` succeeded in ``step``: its count goes back to zero, and so does the
        count of calls of tools that do not exist, unless a call fails in that step too (before or after)."""
        for key in (name, _UNKNOWN):
            count = self._counts.get(key)
            if count is not None:
                count.cleared = step
