"""Which tools a step offers: ``@tool(enabled=...)``, a tool offered only when a function of the run says so.

``enabled`` is ``True`` (the default: always), ``False`` (never: the tool stays registered, for a flag to turn
on later) or a function of the run, ``fn(run: PromptContext) -> bool`` (or ``async``), called once per step
before the step's prompt is built, with what a prompt function gets (the run's ``deps``, step, input,
usage). A tool it disables is not offered to the model in that step, is not in CodeAct's tool list, and a
call to it (a model repeating an earlier one) is an unknown tool's ``TOOL_ERROR``. The Agents SDK's
``is_enabled``; pydantic-ai's ``prepare`` returning ``None``.

The evaluation is ``agentflow.runtimes.tool_availability``: a run whose tools have no such function never
calls it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

__all__ = ["EnabledFunction", "ToolEnabled", "check_enabled", "never"]

EnabledFunction: TypeAlias = Callable[[Any], "bool | Awaitable[bool]"]
"""A function of the run (a ``agentflow.runtimes.prompt_functions.PromptContext``: named loosely here, so that
the tools layer does not import the runtimes) saying whether a tool is offered in the step about to call
the model."""

ToolEnabled: TypeAlias = "bool | EnabledFunction"
"""``@tool(enabled=...)``: ``True``, ``False`` or a function of the run (``EnabledFunction``)."""


def never(run: Any) -> bool:
    """``enabled=False``: the tool is never offered.

    >>> never(None)
    False
    """
    return False


def check_enabled(value: object) -> EnabledFunction | None:
    """``enabled`` as a ``Tool`` keeps it: ``None`` for always (``True``), ``never`` for ``False``, a function
    as it is; ``TypeError`` for anything else.

    >>> check_enabled(True) is None, check_enabled(False) is never
    (True, True)
    """
    if value is None or value is True:
        return None
    if value is False:
        return never
    if callable(value) and not isinstance(value, type):
        return value
    raise TypeError(
        f"enabled must be True, False or a function of the run (run: PromptContext) -> bool, got {value!r}"
    )
