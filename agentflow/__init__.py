"""agentflow: an async-first agent framework for Python on asyncio.

>>> import agentflow
>>> agentflow.UserMessage("hi").text
'hi'
"""

from __future__ import annotations

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

# --- agent layer --------------------------------------------------------------------------

__all__ = [
    "AiMessage",
    "AuthenticationError",
    "BadRequestError",
    "ChatModel",
    "ChatParameters",
    "ChatRequest",
    "ChatResponse",
    "ContentFilterError",
    "DeveloperMessage",
    "Event",
    "FinishReason",
    "ImagePart",
    "IncompleteResponseError",
    "Message",
    "ModelCompleted",
    "ModelConnectionError",
    "ModelError",
    "ModelEvent",
    "ModelRetry",
    "ModelStream",
    "ModelTimeoutError",
    "NotFoundError",
    "ProtocolError",
    "RateLimitError",
    "ReasoningDelta",
    "RefusalDelta",
    "ServerError",
    "StreamCutOffError",
    "SystemMessage",
    "TextDelta",
    "TextPart",
    "TokenUsage",
    "ToolCall",
    "ToolCallArgumentsDelta",
    "ToolCallReady",
    "ToolCallStarted",
    "ToolChoice",
    "ToolResultMessage",
    "ToolSpec",
    "UsageReported",
    "UserMessage",
]
