"""Testing tools for agentflow users and for agentflow's own tests.

``ScriptedServer`` is a local OpenAI-compatible server (Chat Completions and Responses, JSON and SSE)
that answers from a script of ``Reply`` and ``Fault`` turns, or from a callable::

    from agentflow.testing import Fault, Reply, ScriptedServer

    async with ScriptedServer([
        Fault.status(429, headers={"retry-after-ms": "10"}),
        Reply(text="Hello world", chunk_size=5),
        Reply(tool_calls=[("get_weather", {"city": "Paris"})]),
        lambda request: Reply(text=f"{len(request['messages'])} messages"),
    ]) as server:
        ...  # point a client at server.base_url; inspect server.requests afterwards

``python -m agentflow.testing.server`` runs one standalone (see ``agentflow.testing.server``).

In-process fakes: ``FakeModelClient`` / ``FakeChatModel`` answer from a script (``agentflow.testing.fake``);
``AutoModelClient`` needs none: it calls every tool with arguments made up from its schema, then answers
(``agentflow.testing.auto``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..http.request_guard import ModelRequestBlocked, block_model_requests
from .script import (
    Fault,
    FaultKind,
    Hold,
    Reply,
    Responder,
    ScriptedToolCall,
    ScriptError,
    Turn,
    load_script,
)
from .scripted_server import RecordedRequest, ScriptedServer
from .tracking import TrackedResponse, TrackingTransport

# The fakes build on the agent layer; load them only when asked for, so that the server alone stays light.
_LAZY = {
    name: "agentflow.testing.fake"
    for name in (
        "FakeModelClient",
        "FakeChatModel",
        "reply",
        "chat_reply",
        "stream_events",
        "ScriptExhaustedError",
    )
}
_LAZY["AutoModelClient"] = "agentflow.testing.auto"
_LAZY["schema_value"] = _LAZY["SchemaValueError"] = "agentflow.testing.schema_values"


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentflow.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from .auto import AutoModelClient
    from .fake import FakeChatModel, FakeModelClient, ScriptExhaustedError, chat_reply, reply, stream_events
    from .schema_values import SchemaValueError, schema_value

__all__ = [
    "AutoModelClient",
    "FakeChatModel",
    "FakeModelClient",
    "Fault",
    "FaultKind",
    "Hold",
    "ModelRequestBlocked",
    "RecordedRequest",
    "Reply",
    "Responder",
    "SchemaValueError",
    "ScriptError",
    "ScriptExhaustedError",
    "ScriptedServer",
    "ScriptedToolCall",
    "TrackedResponse",
    "TrackingTransport",
    "Turn",
    "block_model_requests",
    "chat_reply",
    "load_script",
    "reply",
    "schema_value",
    "stream_events",
]
