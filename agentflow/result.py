"""What a run produces: ``AgentResult``, ``ToolResult`` and ``StopReason``.

These sit below the agent layer (the run events carry them), so they are plain values with no behaviour.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from .model.messages import ToolCall
from .model.response import TokenUsage

__all__ = ["AgentResult", "StopReason", "ToolResult"]


class StopReason(enum.Enum):
    """Why a run ended."""

    FINAL_ANSWER = "final_answer"
    TRUNCATED = "truncated"
    """The model's last answer was cut at its output-token limit (``finish_reason`` ``length``), so it is
    not a whole final answer; ``output_text`` holds what it wrote."""
    CONTENT_FILTER = "content_filter"
    """The provider's content filter stopped the model's last answer (``finish_reason``
    ``content_filter``); ``output_text`` holds what it wrote before, often nothing."""
    REFUSAL = "refusal"
    """The model refused to answer; ``AgentResult.refusal`` holds its refusal message."""
    MAX_STEPS = "max_steps"
    MAX_TOOL_CALLS = "max_tool_calls"
    MAX_TOKENS = "max_tokens"
    DEADLINE = "deadline"
    CANCELLED = "cancelled"
    ERROR = "error"


@attrs.frozen
class ToolResult:
    """The outcome of one tool call: the text fed back to the model and whether it failed.

    On failure ``output`` is the ``TOOL_ERROR: {…}`` text and ``error_type`` names the failure
    (``unknown_tool``, ``invalid_arguments``, ``timeout``, ``exception``, ``cancelled``).
    """

    call_id: str
    name: str
    output: str
    ok: bool = True
    error_type: str | None = None
    error: str | None = None
    duration: float = 0.0
    value: Any = attrs.field(default=None, eq=False, repr=False)
    """The tool's return value before it became ``output`` text (CodeAct hands it back to code)."""


@attrs.frozen
class AgentResult:
    """The result of one agent run.

    ``new_items`` are the memory items the run appended (its part of the conversation), ``usage`` the sum
    over every model call of the run. ``refusal`` is the model's refusal message when its last answer was
    one (``StopReason.REFUSAL``). ``output`` is the final answer read into the agent's ``output_type``
    (``None`` without one, or when the run ended without a final answer).
    """

    run_id: str
    output_text: str
    stop_reason: StopReason
    steps: int = 0
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    usage: TokenUsage = attrs.field(factory=TokenUsage)
    new_items: tuple[Any, ...] = attrs.field(default=(), repr=False)
    error: str | None = None
    reasoning_text: str | None = None
    refusal: str | None = None
    output: Any = None
