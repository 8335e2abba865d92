"""Which of a run's tools a step offers (``@tool(enabled=fn)``; the values: ``agentflow.tools.availability``).

Before each step's prompt is built (after the agent's prompt functions, with the same ``PromptContext``),
every tool with an ``enabled`` function is asked; the step offers the others and those that said ``True``
(``RunContext.tools``, a registry kept per set of tools left out), and its calls run with them, so a call to a
tool left out is an unknown tool's ``TOOL_ERROR`` (CodeAct's code's calls too, and its prompt lists the
step's tools). The run's whole registry stays ``RunContext.all_tools``. A planning (DeepResearch, CodeAct with
a planner) asks them first, for the step the plan comes before, and tells the planner the tools that step
offers; a resumed run (``approvals=``), for its decided calls and its first step. Each function is asked
once per step (``RunContext.tools_step``), or once more after a handoff. A function that raises, or returns
anything but a ``bool``, fails the run (``ToolAvailabilityError``).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from ..result import AgentResult, StopReason
from .errors import AgentRunError
from .prompt_functions import run_view

if TYPE_CHECKING:
    from .context import RunContext

__all__ = ["ToolAvailabilityError", "choose_tools"]


class ToolAvailabilityError(AgentRunError):
    """A tool's ``enabled`` function raised, or returned something other than a ``bool``: the run fails with
    this error, before the model call of the step it was asked for. ``tool`` names the tool, ``error`` says
    what went wrong (an exception raised is the ``__cause__``); ``partial`` keeps the run's work.

    >>> partial = AgentResult("run_1", "", StopReason.ERROR)
    >>> err = ToolAvailabilityError("delete_user", "KeyError: 'role'", partial)
    >>> str(err)
    "the enabled function of tool 'delete_user' failed: KeyError: 'role'"
    """

    def __init__(self, tool: str, error: str, partial: AgentResult) -> None:
        super().__init__(f"the enabled function of tool {tool!r} failed: {error}", partial)
        self.tool = tool
        self.error = error

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.tool, self.error, self.partial))


async def choose_tools(ctx: RunContext) -> None:
    """Offer, for the run's current step, the tools whose ``enabled`` function says so (module docstring)."""
    if ctx.tools_step == ctx.step:
        return  # asked for this step already (before its plan, or its resumed calls)
    ctx.tools_step = ctx.step
    every = ctx.all_tools
    if every is None:
        every = ctx.all_tools = ctx.tools
    view = None
    left_out: set[str] = set()
    for name in every.names:
        found = every.get(name)
        if found is None or found.enabled is None:
            continue
        if view is None:
            view = run_view(ctx, ctx.agent_name or "")
        try:
            answer = found.enabled(view)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise ToolAvailabilityError(name, error, _partial(ctx, name, error)) from exc
        if not isinstance(answer, bool):
            error = f"it returned a {type(answer).__name__}, not a bool"
            raise ToolAvailabilityError(name, error, _partial(ctx, name, error))
        if not answer:
            left_out.add(name)
    chosen = every.without(frozenset(left_out))
    if chosen is not ctx.tools:
        ctx.use_tools(chosen)


def _partial(ctx: RunContext, name: str, error: str) -> AgentResult:
    return ctx.result_for(StopReason.ERROR, error=f"the enabled function of tool {name!r} failed: {error}")
