"""The name a tool made of an agent gets (``agent.as_tool()``, a handoff's ``transfer_to_…``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["function_style"]

_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def function_style(agent: Agent[Any], call: str, keyword: str, example: str) -> str:
    """The agent's own ``name`` in a function's style (``"Research assistant"`` → ``research_assistant``), for
    the name of a tool made of it. ``TypeError`` for an agent without a name of its own (it is then its
    runtime's, ``react``), or one without a letter or digit a tool name may hold: ``call`` (``"as_tool()"``)
    needs ``keyword`` (``"name="``), shown in ``example``."""
    own = agent.name
    if own == agent.runtime.name:
        raise TypeError(
            f"{call} needs {keyword}: this agent has no name of its own ({own!r}), and the model tells its "
            f"tools apart by name; pass {example} or Agent(name=...)"
        )
    derived = _NOT_NAME.sub("_", own).strip("_").lower()[:64]
    if not derived:
        raise TypeError(
            f"{call} needs {keyword}: the agent's name {own!r} has no letters or digits a tool name may hold "
            f"(ASCII letters, digits, _ and -); pass {example}"
        )
    return derived
