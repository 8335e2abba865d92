"""agentflow: an async-first agent framework for Python on asyncio.

>>> import agentflow
>>> agentflow.UserMessage("hi").text
'hi'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .http.retry import RetryPolicy
from .http.timeouts import Timeout
from .http.transport import AiohttpTransport, HttpTransport

# --- model layer: unified types -------------------------------------------------------------
from .model.errors import (
    AuthenticationError,
    BadRequestError,
    ContentFilterError,
    IncompleteResponseError,
    ModelConnectionError,
    ModelError,
    ModelTimeoutError,
    NotFoundError,
    ProtocolError,
    RateLimitError,
    RedirectError,
    ResponseNotFinishedError,
    ServerError,
    StreamCutOffError,
)
from .model.events import (
    Event,
    ModelCompleted,
    ModelEvent,
    ModelRetry,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
)
from .model.messages import (
    AiMessage,
    DeveloperMessage,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from .model.protocol import ChatModel
from .model.request import ChatParameters, ChatRequest
from .model.response import ChatResponse, FinishReason, TokenUsage
from .model.stream import ModelStream
from .model.tools import ToolChoice, ToolSpec

# --- providers ----------------------------------------------------------------------------
from .providers.openai.chat_model import OpenAIChatModel

# --- agent layer: imported on first use (PEP 562), so `import agentflow` stays light ------
# name -> module that defines it. Everything here is also importable from its module directly.
_LAZY: dict[str, str] = {
    # run results
    "AgentResult": "agentflow.result",
    "StopReason": "agentflow.result",
    "ToolResult": "agentflow.result",
    # Responses provider
    "OpenAIResponsesModel": "agentflow.providers.openai.responses_model",
    "ResponsesRequest": "agentflow.providers.openai.responses_types",
    "ResponsesResponse": "agentflow.providers.openai.responses_types",
    # events and the bus
    "RunStarted": "agentflow.events",
    "StepStarted": "agentflow.events",
    "ModelRequest": "agentflow.events",
    "OutputRejected": "agentflow.events",
    "GuardrailTripped": "agentflow.events",
    "HandedOff": "agentflow.events",
    "ToolCallRequested": "agentflow.events",
    "ToolApprovalRequested": "agentflow.events",
    "ToolStarted": "agentflow.events",
    "ToolProgress": "agentflow.events",
    "ToolSucceeded": "agentflow.events",
    "ToolFailed": "agentflow.events",
    "CodeExecuted": "agentflow.events",
    "CodeStarted": "agentflow.events",
    "CodeOutput": "agentflow.events",
    "StepFinished": "agentflow.events",
    "RunFinished": "agentflow.events",
    "RunFailed": "agentflow.events",
    "RunCancelled": "agentflow.events",
    "RunEvent": "agentflow.events",
    "AgentEvent": "agentflow.events",
    "EventBus": "agentflow.bus",
    "Subscription": "agentflow.bus",
    "BusClosedError": "agentflow.bus",
    # tools
    "tool": "agentflow.tools",
    "Tool": "agentflow.tools",
    "ToolContext": "agentflow.tools",
    "ToolFatalError": "agentflow.tools",
    "RejectCall": "agentflow.tools",
    "Rejection": "agentflow.tools.tool_guardrails",
    "ToolGuardrailContext": "agentflow.tools.tool_guardrails",
    "ToolErrorPolicy": "agentflow.tools",
    "ToolRegistry": "agentflow.tools",
    "Toolset": "agentflow.tools.toolsets",
    "ToolNameConflictError": "agentflow.tools.toolsets",
    "ToolExecutor": "agentflow.tools",
    "ToolArgumentsError": "agentflow.tools",
    "Param": "agentflow.tools",
    "ToolApprovalRequest": "agentflow.tools.approval",
    "ApprovalRequiredError": "agentflow.tools.approval",
    "ApprovalNotPendingError": "agentflow.tools.approval",
    "ApprovalDecisionError": "agentflow.tools.approval",
    "ApprovalNotDeferrableError": "agentflow.tools.approval",
    # agent
    "AgentPrompt": "agentflow.agent.prompt",
    "AgentModelResult": "agentflow.agent.prompt",
    "ModelClient": "agentflow.agent.prompt",
    "ChatModelClient": "agentflow.agent.chat_client",
    "ResponsesModelClient": "agentflow.agent.responses_client",
    "FallbackModelClient": "agentflow.agent.fallback_client",
    "FallbackChatModel": "agentflow.model.fallback",
    "AllModelsFailedError": "agentflow.model.fallback",
    "may_succeed_elsewhere": "agentflow.model.fallback",
    "Memory": "agentflow.agent.memory",
    "InMemoryMemory": "agentflow.agent.memory",
    "WindowedMemory": "agentflow.agent.memory",
    "dump_items": "agentflow.agent.item_json",
    "load_items": "agentflow.agent.item_json",
    "HistoryError": "agentflow.agent.item_checks",
    "check_items": "agentflow.agent.item_checks",
    "Agent": "agentflow.agent.agent",
    "Agents": "agentflow.agent.agents",
    "Handoff": "agentflow.agent.handoffs",
    "ToolAvailabilityError": "agentflow.runtimes.tool_availability",
    "handoff": "agentflow.agent.handoffs",
    "without_reasoning": "agentflow.agent.handoffs",
    "without_tool_calls": "agentflow.agent.handoffs",
    "run_sync": "agentflow.agent.agent",
    "AgentOptions": "agentflow.agent.options",
    "ModelSettings": "agentflow.agent.options",
    "AgentRun": "agentflow.agent.run",
    "OutputReader": "agentflow.agent.output_stream",
    "Session": "agentflow.agent.session",
    "SessionStore": "agentflow.agent.stores",
    "SessionStoreError": "agentflow.agent.stores",
    "SessionConflictError": "agentflow.agent.stores",
    "StoreConflict": "agentflow.agent.stores",
    "OpenRuns": "agentflow.agent.open_runs",
    "RunIdInUseError": "agentflow.agent.open_runs",
    "StoredItems": "agentflow.agent.stores",
    "StorePosition": "agentflow.agent.stores",
    "InMemoryStore": "agentflow.agent.stores",
    "SQLiteStore": "agentflow.agent.sqlite_store",
    "AgentToolError": "agentflow.agent.as_tool",
    # runtimes
    "AgentRuntime": "agentflow.runtimes",
    "ReActRuntime": "agentflow.runtimes",
    "RunContext": "agentflow.runtimes",
    "MaxStepsExceeded": "agentflow.runtimes",
    "AgentRunError": "agentflow.runtimes",
    "run_result": "agentflow.runtimes.errors",
    "ToolRetriesExceeded": "agentflow.runtimes.errors",
    "open_tool_calls": "agentflow.runtimes.calls",
    "register_runtime": "agentflow.runtimes",
    "OutputType": "agentflow.runtimes.output",
    "OutputValidationError": "agentflow.runtimes.output",
    "PartialJson": "agentflow.runtimes.partial_json",
    "OutputContext": "agentflow.runtimes.output_validators",
    "RejectOutput": "agentflow.runtimes.output_validators",
    "ValidatorError": "agentflow.runtimes.output_validators",
    "PromptContext": "agentflow.runtimes.prompt_functions",
    "PromptFunctionError": "agentflow.runtimes.prompt_functions",
    "Guardrail": "agentflow.runtimes.guardrails",
    "GuardrailContext": "agentflow.runtimes.guardrails",
    "GuardrailError": "agentflow.runtimes.guardrails",
    "InputGuardrailTripped": "agentflow.runtimes.guardrails",
    "OutputGuardrailTripped": "agentflow.runtimes.guardrails",
    "ToolGuardrailError": "agentflow.runtimes.guardrails",
    "ToolGuardrailTripped": "agentflow.runtimes.guardrails",
    "Tripwire": "agentflow.runtimes.guardrails",
    "TripwireError": "agentflow.runtimes.guardrails",
    "guardrail": "agentflow.runtimes.guardrails",
    "CodeActRuntime": "agentflow.runtimes.codeact",
    "CodeActProtocolError": "agentflow.runtimes.codeact",
    "PlanCreated": "agentflow.events",
    "PlanUpdated": "agentflow.events",
    "Plan": "agentflow.plan",
    "PlanStep": "agentflow.plan",
    "StepStatus": "agentflow.plan",
    "DeepResearchRuntime": "agentflow.runtimes.deep_research",
    "Planner": "agentflow.runtimes.planner",
    "SimplePlanner": "agentflow.runtimes.planner",
    "ModelPlanner": "agentflow.runtimes.planner",
    "PlanContext": "agentflow.runtimes.planner",
    "AgentModelPlanner": "agentflow.runtimes.planner",
    "CodeAction": "agentflow.runtimes.planner",
    "PlanningError": "agentflow.runtimes.planner",
    "PlanParseError": "agentflow.runtimes.planner",
    "CodeActOptions": "agentflow.runtimes.codeact",
    # CodeAct sandbox
    "CodeExecutor": "agentflow.sandbox",
    "CodeResult": "agentflow.sandbox",
    "CodeErrorType": "agentflow.sandbox",
    "ExecutionLimits": "agentflow.sandbox",
    "ProcessSandbox": "agentflow.sandbox",
    "SubprocessExecutor": "agentflow.sandbox",
    "SandboxIsolation": "agentflow.sandbox",
    "SandboxError": "agentflow.sandbox",
    "SandboxStartError": "agentflow.sandbox",
    "SandboxUnavailableError": "agentflow.sandbox",
    "SandboxClosedError": "agentflow.sandbox",
    "ToolInvoker": "agentflow.sandbox",
    # web embedding
    "sse_stream": "agentflow.sse",
    "encode_sse": "agentflow.sse",
    "public_event": "agentflow.sse",
    "SSE_HEADERS": "agentflow.sse",
}


def _read_version() -> str:
    """This copy's version (``agentflow.__version__``).

    In a source checkout (an editable install, or the checkout on ``sys.path``) the ``pyproject.toml`` beside
    the package says it: installed metadata there can be stale (an editable install keeps the version it was
    installed with) or another project's (PyPI's unrelated ``agentflow`` installed alongside). Otherwise the
    installed distribution's metadata; ``"0+unknown"`` when there is neither.
    """
    from pathlib import Path

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if pyproject.is_file():
        import tomllib

        try:
            project = tomllib.loads(pyproject.read_text("utf-8")).get("project", {})
        except (OSError, ValueError):  # unreadable, or not TOML: not our checkout's
            project = {}
        if project.get("name") == "agentflow" and isinstance(project.get("version"), str):
            return str(project["version"])
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentflow")
    except PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _read_version()  # on first use: importlib.metadata alone costs ~25 ms to import
    else:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'agentflow' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})


if TYPE_CHECKING:  # the lazy names, for type checkers and IDEs
    __version__: str
    """This copy's version: its ``pyproject.toml``'s in a source checkout, else its installed metadata's."""
    from .agent.agent import Agent, run_sync
    from .agent.agents import Agents
    from .agent.as_tool import AgentToolError
    from .agent.chat_client import ChatModelClient
    from .agent.fallback_client import FallbackModelClient
    from .agent.handoffs import Handoff, handoff, without_reasoning, without_tool_calls
    from .agent.item_checks import HistoryError, check_items
    from .agent.item_json import dump_items, load_items
    from .agent.memory import InMemoryMemory, Memory, WindowedMemory
    from .agent.open_runs import OpenRuns, RunIdInUseError
    from .agent.options import AgentOptions, ModelSettings
    from .agent.output_stream import OutputReader
    from .agent.prompt import AgentModelResult, AgentPrompt, ModelClient
    from .agent.responses_client import ResponsesModelClient
    from .agent.run import AgentRun
    from .agent.session import Session
    from .agent.sqlite_store import SQLiteStore
    from .agent.stores import (
        InMemoryStore,
        SessionConflictError,
        SessionStore,
        SessionStoreError,
        StoreConflict,
        StoredItems,
        StorePosition,
    )
    from .bus import BusClosedError, EventBus, Subscription
    from .events import (
        AgentEvent,
        CodeExecuted,
        CodeOutput,
        CodeStarted,
        GuardrailTripped,
        HandedOff,
        ModelRequest,
        OutputRejected,
        PlanCreated,
        PlanUpdated,
        RunCancelled,
        RunEvent,
        RunFailed,
        RunFinished,
        RunStarted,
        StepFinished,
        StepStarted,
        ToolApprovalRequested,
        ToolCallRequested,
        ToolFailed,
        ToolProgress,
        ToolStarted,
        ToolSucceeded,
    )
    from .model.fallback import AllModelsFailedError, FallbackChatModel, may_succeed_elsewhere
    from .plan import Plan, PlanStep, StepStatus
    from .providers.openai.responses_model import OpenAIResponsesModel
    from .providers.openai.responses_types import ResponsesRequest, ResponsesResponse
    from .result import AgentResult, StopReason, ToolResult
    from .runtimes import (
        AgentRunError,
        AgentRuntime,
        MaxStepsExceeded,
        ReActRuntime,
        RunContext,
        register_runtime,
    )
    from .runtimes.calls import open_tool_calls
    from .runtimes.codeact import CodeActOptions, CodeActProtocolError, CodeActRuntime
    from .runtimes.deep_research import DeepResearchRuntime
    from .runtimes.errors import ToolRetriesExceeded, run_result
    from .runtimes.guardrails import (
        Guardrail,
        GuardrailContext,
        GuardrailError,
        InputGuardrailTripped,
        OutputGuardrailTripped,
        ToolGuardrailError,
        ToolGuardrailTripped,
        Tripwire,
        TripwireError,
        guardrail,
    )
    from .runtimes.output import OutputType, OutputValidationError
    from .runtimes.output_validators import OutputContext, RejectOutput, ValidatorError
    from .runtimes.partial_json import PartialJson
    from .runtimes.planner import (
        AgentModelPlanner,
        CodeAction,
        ModelPlanner,
        PlanContext,
        Planner,
        PlanningError,
        PlanParseError,
        SimplePlanner,
    )
    from .runtimes.prompt_functions import PromptContext, PromptFunctionError
    from .runtimes.tool_availability import ToolAvailabilityError
    from .sandbox import (
        CodeErrorType,
        CodeExecutor,
        CodeResult,
        ExecutionLimits,
        ProcessSandbox,
        SandboxClosedError,
        SandboxError,
        SandboxIsolation,
        SandboxStartError,
        SandboxUnavailableError,
        SubprocessExecutor,
        ToolInvoker,
    )
    from .sse import SSE_HEADERS, encode_sse, public_event, sse_stream
    from .tools import (
        Param,
        RejectCall,
        Tool,
        ToolArgumentsError,
        ToolContext,
        ToolErrorPolicy,
        ToolExecutor,
        ToolFatalError,
        ToolRegistry,
        tool,
    )
    from .tools.approval import (
        ApprovalDecisionError,
        ApprovalNotDeferrableError,
        ApprovalNotPendingError,
        ApprovalRequiredError,
        ToolApprovalRequest,
    )
    from .tools.tool_guardrails import Rejection, ToolGuardrailContext
    from .tools.toolsets import ToolNameConflictError, Toolset

__all__ = [
    "SSE_HEADERS",
    "Agent",
    "AgentEvent",
    "AgentModelPlanner",
    "AgentModelResult",
    "AgentOptions",
    "AgentPrompt",
    "AgentResult",
    "AgentRun",
    "AgentRunError",
    "AgentRuntime",
    "AgentToolError",
    "Agents",
    "AiMessage",
    "AiohttpTransport",
    "AllModelsFailedError",
    "ApprovalDecisionError",
    "ApprovalNotDeferrableError",
    "ApprovalNotPendingError",
    "ApprovalRequiredError",
    "AuthenticationError",
    "BadRequestError",
    "BusClosedError",
    "ChatModel",
    "ChatModelClient",
    "ChatParameters",
    "ChatRequest",
    "ChatResponse",
    "CodeActOptions",
    "CodeActProtocolError",
    "CodeActRuntime",
    "CodeAction",
    "CodeErrorType",
    "CodeExecuted",
    "CodeExecutor",
    "CodeOutput",
    "CodeResult",
    "CodeStarted",
    "ContentFilterError",
    "DeepResearchRuntime",
    "DeveloperMessage",
    "Event",
    "EventBus",
    "ExecutionLimits",
    "FallbackChatModel",
    "FallbackModelClient",
    "FinishReason",
    "Guardrail",
    "GuardrailContext",
    "GuardrailError",
    "GuardrailTripped",
    "HandedOff",
    "Handoff",
    "HistoryError",
    "HttpTransport",
    "ImagePart",
    "InMemoryMemory",
    "InMemoryStore",
    "IncompleteResponseError",
    "InputGuardrailTripped",
    "MaxStepsExceeded",
    "Memory",
    "Message",
    "ModelClient",
    "ModelCompleted",
    "ModelConnectionError",
    "ModelError",
    "ModelEvent",
    "ModelPlanner",
    "ModelRequest",
    "ModelRetry",
    "ModelSettings",
    "ModelStream",
    "ModelTimeoutError",
    "NotFoundError",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "OpenRuns",
    "OutputContext",
    "OutputGuardrailTripped",
    "OutputReader",
    "OutputRejected",
    "OutputType",
    "OutputValidationError",
    "Param",
    "PartialJson",
    "Plan",
    "PlanContext",
    "PlanCreated",
    "PlanParseError",
    "PlanStep",
    "PlanUpdated",
    "Planner",
    "PlanningError",
    "ProcessSandbox",
    "PromptContext",
    "PromptFunctionError",
    "ProtocolError",
    "RateLimitError",
    "ReActRuntime",
    "ReasoningDelta",
    "RedirectError",
    "RefusalDelta",
    "RejectCall",
    "RejectOutput",
    "Rejection",
    "ResponseNotFinishedError",
    "ResponsesModelClient",
    "ResponsesRequest",
    "ResponsesResponse",
    "RetryPolicy",
    "RunCancelled",
    "RunContext",
    "RunEvent",
    "RunFailed",
    "RunFinished",
    "RunIdInUseError",
    "RunStarted",
    "SQLiteStore",
    "SandboxClosedError",
    "SandboxError",
    "SandboxIsolation",
    "SandboxStartError",
    "SandboxUnavailableError",
    "ServerError",
    "Session",
    "SessionConflictError",
    "SessionStore",
    "SessionStoreError",
    "SimplePlanner",
    "StepFinished",
    "StepStarted",
    "StepStatus",
    "StopReason",
    "StoreConflict",
    "StorePosition",
    "StoredItems",
    "StreamCutOffError",
    "SubprocessExecutor",
    "Subscription",
    "SystemMessage",
    "TextDelta",
    "TextPart",
    "Timeout",
    "TokenUsage",
    "Tool",
    "ToolApprovalRequest",
    "ToolApprovalRequested",
    "ToolArgumentsError",
    "ToolAvailabilityError",
    "ToolCall",
    "ToolCallArgumentsDelta",
    "ToolCallReady",
    "ToolCallRequested",
    "ToolCallStarted",
    "ToolChoice",
    "ToolContext",
    "ToolErrorPolicy",
    "ToolExecutor",
    "ToolFailed",
    "ToolFatalError",
    "ToolGuardrailContext",
    "ToolGuardrailError",
    "ToolGuardrailTripped",
    "ToolInvoker",
    "ToolNameConflictError",
    "ToolProgress",
    "ToolRegistry",
    "ToolResult",
    "ToolResultMessage",
    "ToolRetriesExceeded",
    "ToolSpec",
    "ToolStarted",
    "ToolSucceeded",
    "Toolset",
    "Tripwire",
    "TripwireError",
    "UsageReported",
    "UserMessage",
    "ValidatorError",
    "WindowedMemory",
    "check_items",
    "dump_items",
    "encode_sse",
    "guardrail",
    "handoff",
    "load_items",
    "may_succeed_elsewhere",
    "open_tool_calls",
    "public_event",
    "register_runtime",
    "run_result",
    "run_sync",
    "sse_stream",
    "tool",
    "without_reasoning",
    "without_tool_calls",
]
