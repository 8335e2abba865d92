"""What the agent benchmarks ask and what the agent server answers: prompts, the tool, the scripted replies.

Shared by the server (``benchmarks.agent_server``) and every contender (``benchmarks.agent_contenders``).
Plain constants and one tool function; it imports no framework and no HTTP library, so a contender's
subprocess that imports it pays only for its own framework (the peak RSS of ``agent_many`` stays its own).

The tool loop: the model answers the first call with ``CALLS`` (three parallel calls to ``add``) and the
second, which ends with the tools' results, with ``FINAL_TEXT``. The streamed answer: a request that streams
and declares no tools gets ``stream_deltas`` text deltas of ``DELTA`` each.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "API_KEY",
    "CALLS",
    "DELTA",
    "FINAL_TEXT",
    "INSTRUCTIONS",
    "MODEL",
    "STORY_PROMPT",
    "TOOL_NAME",
    "TOOL_PROMPT",
    "TOOL_SCHEMA",
    "add",
    "add_sync",
]

API_KEY = "sk-bench"
MODEL = "bench-model"
INSTRUCTIONS = "Use tools when necessary. Return concise final answers."
"""The system prompt of every contender (agentflow's ReAct runtime sends this text by itself)."""

TOOL_NAME = "add"
CALLS: tuple[dict[str, int], ...] = ({"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6})
"""The arguments of the three parallel tool calls of the model's first answer."""
FINAL_TEXT = "The sums are 3, 7 and 11."
TOOL_PROMPT = "What are 1 + 2, 3 + 4 and 5 + 6? Use the tool."

STORY_PROMPT = "Tell a long story."
DELTA = " word"
"""The text of each delta of the streamed answer."""

TOOL_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}
"""``add`` as a Chat Completions tool (what the floor sends; the frameworks derive it from ``add``)."""


async def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first addend.
        b: the second addend.
    """
    return a + b


def add_sync(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first addend.
        b: the second addend.
    """
    return a + b
