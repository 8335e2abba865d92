"""Tools: plain functions the model can call, their schemas, and their concurrent execution.

``@tool`` turns a function into a ``Tool`` (JSON schema from type hints and docstring);
``ToolRegistry`` holds an agent's tools; ``ToolExecutor`` runs a step's calls with a concurrency limit,
timeouts and events; ``ToolContext`` lets a tool report progress; ``on_error`` (``failures``) says whether a
tool's failure goes to the model or ends the run; ``needs_approval`` (``approval``) holds a call until it is
approved. ``fastjsonschema`` and
``docstring-parser`` are imported only when the first tool is built.
"""

from __future__ import annotations

from .approval import (
    ApprovalNotPendingError,
    ApprovalRequiredError,
    NeedsApproval,
    ToolApprovalRequest,
    ToolApprover,
)
from .arguments import ToolArgumentsError
from .context import ToolContext
from .executor import ToolExecutor, sync_tool_limiter
from .failures import RejectCall, ToolErrorFormatter, ToolErrorPolicy, ToolFatalError
from .outcome import (
    TOOL_ERROR_PREFIX,
    ToolErrorType,
    cancelled_result,
    failed_result,
    output_text,
    tool_error_text,
)
from .registry import ToolRegistry
from .schema import Param
from .tool import Tool, ToolReturns, tool
from .tool_guardrails import Rejection, ToolGuardrailContext

__all__ = [
    "TOOL_ERROR_PREFIX",
    "ApprovalNotPendingError",
    "ApprovalRequiredError",
    "NeedsApproval",
    "Param",
    "RejectCall",
    "Rejection",
    "Tool",
    "ToolApprovalRequest",
    "ToolApprover",
    "ToolArgumentsError",
    "ToolContext",
    "ToolErrorFormatter",
    "ToolErrorPolicy",
    "ToolErrorType",
    "ToolExecutor",
    "ToolFatalError",
    "ToolGuardrailContext",
    "ToolRegistry",
    "ToolReturns",
    "cancelled_result",
    "failed_result",
    "output_text",
    "sync_tool_limiter",
    "tool",
    "tool_error_text",
]
