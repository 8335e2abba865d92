"""The annotations of what a run gives back, its result and its events, resolve at run time
(``typing.get_type_hints``, ``attrs.resolve_types``): what pydantic, cattrs, FastAPI and documentation tools
do with them. A name imported for type checkers only would make them fail with ``NameError``."""

from __future__ import annotations

import typing

import attrs
import pytest

from agentflow.agent.prompt import AgentPrompt
from agentflow.events import AgentEvent, ModelRequest
from agentflow.result import AgentResult, ToolApprovalRequest, ToolResult
from agentflow.tools.tool_guardrails import Rejection, ToolGuardrailContext

_RESOLVED = [AgentResult, ToolResult, ToolApprovalRequest, *typing.get_args(AgentEvent)]


@pytest.mark.parametrize("cls", _RESOLVED, ids=lambda cls: cls.__name__)
def test_the_annotations_of_results_and_events_resolve(cls: type) -> None:
    if cls is ModelRequest:
        # Its ``prompt`` is an ``AgentPrompt``, which ``agentflow.events`` names for type checkers only, so
        # that an SSE relay importing the events does not load the agent layer: given the name, it resolves.
        typing.get_type_hints(cls, localns={"AgentPrompt": AgentPrompt})
        return
    typing.get_type_hints(cls)
    attrs.resolve_types(cls)


def test_the_annotations_of_a_tool_guardrail_s_context_resolve() -> None:
    # What a guardrail is given (a ``ToolContext`` with the call's arguments and result text): documentation
    # tools and dependency-injection code read it as they read ``ToolContext``.
    for cls in (ToolGuardrailContext, Rejection):
        typing.get_type_hints(cls)
        attrs.resolve_types(cls)
