"""Sandboxed code execution for CodeAct: run model-written Python in a separate, isolated process.

``ProcessSandbox`` (alias ``SubprocessExecutor``) is the default ``CodeExecutor``. The code it runs calls
tools by name (``get_weather(city="Paris")``) or with ``call_tool("name", {...})``; each call travels to the
host, which runs it through the ``ToolInvoker`` it was given. ``parallel(...)``, ``map_tool(...)`` and
``await acall_tool(...)`` make several calls at once. A step's value is its last expression, a top-level
``return`` or ``final_answer(x)``.

What is isolated depends on the platform: see ``SandboxIsolation`` and docs/sandbox-security.md.
"""

from __future__ import annotations

from .code_api import callable_by_name, code_api_text
from .code_result import CodeErrorType, CodeResult
from .errors import SandboxClosedError, SandboxError, SandboxStartError, SandboxUnavailableError
from .executor import CodeExecutor, ToolInvoker
from .launch import SandboxIsolation
from .limits import ExecutionLimits
from .process_sandbox import ProcessSandbox, SubprocessExecutor

__all__ = [
    "CodeErrorType",
    "CodeExecutor",
    "CodeResult",
    "ExecutionLimits",
    "ProcessSandbox",
    "SandboxClosedError",
    "SandboxError",
    "SandboxIsolation",
    "SandboxStartError",
    "SandboxUnavailableError",
    "SubprocessExecutor",
    "ToolInvoker",
    "callable_by_name",
    "code_api_text",
]
