"""The executor interface of CodeAct: ``CodeExecutor`` and the ``ToolInvoker`` callback it is given.

Interface only. ``ProcessSandbox`` is the default implementation; a container or remote sandbox can be
plugged in by implementing the same two methods.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from ..result import ToolResult
from .code_result import CodeResult
from .limits import ExecutionLimits

__all__ = ["CodeExecutor", "ToolInvoker"]

ToolInvoker = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]
"""Runs one tool call made by code, on the host: ``await tools(name, arguments) -> ToolResult``.

The executor hands ``ToolResult.value`` back to the code when ``ok``, and raises ``ToolError(output)`` in
the code otherwise. The invoker is where validation, events, limits and ``TOOL_ERROR`` formatting happen;
it should not raise (an exception it raises reaches the code as a ``ToolError`` naming the exception).
"""


@runtime_checkable
class CodeExecutor(Protocol):
    """Runs code steps for one agent run; variables may persist between the steps of that run."""

    async def execute(
        self, code: str, tools: ToolInvoker, tool_names: Sequence[str], limits: ExecutionLimits
    ) -> CodeResult:
        """Run one step. Bad code ends as ``CodeResult(ok=False)``; cancelling the call stops the code."""
        ...

    async def aclose(self) -> None:
        """Stop everything the executor started and delete its files. Idempotent."""
        ...
