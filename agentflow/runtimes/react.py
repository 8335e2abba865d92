"""``ReActRuntime``: the base loop with the ReAct name and instructions (seed 002 §4).

Reason and act with native tool calls: the model answers with text and tool calls, the tools run, their
results go back to the model, until it answers without calling a tool. The rest is ``AgentRuntime``'s loop.
"""

from __future__ import annotations

from typing import ClassVar

from .base import AgentRuntime

__all__ = ["REACT_INSTRUCTIONS", "ReActRuntime"]

REACT_INSTRUCTIONS = "Use tools when necessary. Return concise final answers."
"""The reference's ReAct instructions, verbatim."""


class ReActRuntime(AgentRuntime):
    """The ReAct runtime: name ``react``; its instructions are added to the system prompt.

    >>> ReActRuntime.name, ReActRuntime.instructions
    ('react', 'Use tools when necessary. Return concise final answers.')
    """

    name: ClassVar[str] = "react"
    instructions: ClassVar[str | None] = REACT_INSTRUCTIONS
