"""The executor interface of CodeAct: ``CodeExecutor``, the ``ToolInvoker`` callback it is given, and the
optional ``OutputListener`` through which it streams what a step prints.

Interface only. ``ProcessSandbox`` is the default implementation; a container or remote sandbox can be
plugged in by implementing the same two methods. Streaming output is optional: an executor whose
``execute`` takes an ``on_output`` keyword (``StreamingCodeExecutor``) is handed a listener when someone
watches the run; one without it (the original protocol) still works, and its runs show a step's output only
once the step has ended.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Protocol, TypeAlias, TypeGuard, runtime_checkable

from ..result import ToolResult
from .code_result import CodeResult
from .limits import ExecutionLimits

__all__ = ["CodeExecutor", "OutputListener", "StreamingCodeExecutor", "ToolInvoker", "streams_output"]

ToolInvoker = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]
"""Runs one tool call made by code, on the host: ``await tools(name, arguments) -> ToolResult``.

The executor hands ``ToolResult.value`` back to the code when ``ok``, and raises ``ToolError(output)`` in
the code otherwise. The invoker is where validation, events, limits and ``TOOL_ERROR`` formatting happen;
it should not raise (an exception it raises reaches the code as a ``ToolError`` naming the exception).
"""

OutputListener: TypeAlias = Callable[[Literal["stdout", "stderr"], str], None]
"""Told each piece of output of a running step as it arrives: ``on_output(stream, text)``.

A plain function, not a coroutine: the executor calls it on the event loop and goes on at once, so it must
not block (the runtime's listener only appends to a bounded buffer that another task publishes from). That
is what keeps a slow event subscriber from slowing the code down or holding up its limits. Give it only what
the executor keeps of the step's output (bounded, as ``CodeResult.stdout`` / ``.stderr`` are).
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


@runtime_checkable
class StreamingCodeExecutor(CodeExecutor, Protocol):
    """A ``CodeExecutor`` that streams a step's output while it runs (``ProcessSandbox`` does).

    ``on_output``, when given, is called with each piece of output as it arrives (see ``OutputListener``);
    ``None`` (the default) asks for nothing live. The returned ``CodeResult`` holds all of it either way.
    """

    async def execute(
        self,
        code: str,
        tools: ToolInvoker,
        tool_names: Sequence[str],
        limits: ExecutionLimits,
        *,
        on_output: OutputListener | None = None,
    ) -> CodeResult:
        """Run one step, telling ``on_output`` what it prints as it prints it."""
        ...


def streams_output(executor: CodeExecutor) -> TypeGuard[StreamingCodeExecutor]:
    """Whether ``executor.execute`` takes an ``on_output`` keyword (``isinstance`` cannot tell: a runtime
    protocol check sees only that the method exists).

    >>> from agentflow.sandbox import ProcessSandbox
    >>> streams_output(ProcessSandbox())
    True
    """
    try:
        parameters = inspect.signature(executor.execute).parameters
    except (TypeError, ValueError):  # no signature to read: call it the way the protocol always has
        return False
    parameter = parameters.get("on_output")
    return parameter is not None and parameter.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )
