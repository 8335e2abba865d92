"""Fixtures of the sandbox tests: a sandbox per test and a scriptable host-side tool invoker."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from agentflow.result import ToolResult
from agentflow.sandbox import ExecutionLimits, ProcessSandbox

ToolBody = Callable[[dict[str, Any]], Awaitable[Any]]

# Short enough that the tests that hit it stay quick, long enough for a loaded CI machine.
SHORT_WALL = 1.0


class HostTools:
    """A ``ToolInvoker`` made of async functions; records every call it serves."""

    def __init__(self, **bodies: ToolBody) -> None:
        self.bodies = dict(bodies)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @property
    def names(self) -> list[str]:
        return list(self.bodies)

    async def __call__(self, name: str, args: dict[str, Any]) -> ToolResult:
        self.calls.append((name, args))
        body = self.bodies.get(name)
        if body is None:
            output = f'TOOL_ERROR: {{"errorType":"unknown_tool","tool":"{name}"}}'
            return ToolResult("c", name, output, ok=False, error_type="unknown_tool")
        try:
            value = await body(args)
        except Exception as exc:
            output = f'TOOL_ERROR: {{"errorType":"exception","error":"{exc}","tool":"{name}"}}'
            return ToolResult("c", name, output, ok=False, error_type="exception", error=str(exc))
        return ToolResult("c", name, str(value), value=value)


async def echo(args: dict[str, Any]) -> Any:
    return args


@pytest.fixture
async def sandbox() -> AsyncIterator[ProcessSandbox]:
    async with ProcessSandbox() as box:
        yield box


@pytest.fixture
def tools() -> HostTools:
    return HostTools(echo=echo)


def short_limits(**changes: Any) -> ExecutionLimits:
    return ExecutionLimits(wall_time=SHORT_WALL, **changes)


def gone(pid: int) -> bool:
    """Whether ``pid`` no longer exists at all (a zombie still has a /proc entry)."""
    return not os.path.exists(f"/proc/{pid}")
