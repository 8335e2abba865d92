"""Errors a run fails with (or a service answers) survive ``pickle`` (multiprocessing, task queues) with
their message, their attributes, and what a failed run attached to them (``run_result``, notes)."""

from __future__ import annotations

import pickle

import pytest

from agentflow.agent.open_runs import RunIdInUseError
from agentflow.mcp.errors import MCPConnectionError, MCPRequestError
from agentflow.model.messages import ToolCall
from agentflow.result import AgentResult, StopReason
from agentflow.runtimes.errors import attach_run_result, run_result
from agentflow.runtimes.guardrails import ToolGuardrailError, ToolGuardrailTripped
from agentflow.tools.approval import (
    ApprovalDecisionError,
    ApprovalNotDeferrableError,
    ApprovalNotPendingError,
    ApprovalRequiredError,
)
from agentflow.tools.toolsets import ToolNameConflictError

ERRORS: list[Exception] = [
    ApprovalRequiredError(ToolCall("c0", "f"), "f", unheard=True),
    ApprovalNotDeferrableError(ToolCall("c1", "f"), "f", "a run of an agent used as a tool"),
    ApprovalDecisionError(undecided=("c2",), unknown=("c9",)),
    ApprovalDecisionError(message="open calls before the last turn"),
    ApprovalNotPendingError("c3", "no tool call 'c3' waits for approval"),
    ToolNameConflictError("search", "toolset 'a'", "toolset 'b'"),
    RunIdInUseError("r1"),
    MCPConnectionError("srv", "the connection was lost during tools/list"),
    MCPRequestError("srv", "tools/call 'read' failed: Unknown tool (code -32602)", -32602),
    MCPRequestError("srv", "tools/list timed out"),
    ToolGuardrailTripped("refund", "c4", "input", "refund_cap", "over the daily limit", {"amount": 9000}),
    ToolGuardrailTripped("read", "c5", "output", "no_secrets", "a secret in the result"),
    ToolGuardrailError("refund", "c6", "input", "classify", "TimeoutError"),
    ToolGuardrailError("read", "c7", "output", "classify", "returned a bool, which gives no verdict"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_an_error_survives_pickle(error: Exception) -> None:
    attach_run_result(error, AgentResult("run_1", "", StopReason.ERROR, steps=2))
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert copy.args == error.args
    assert vars(copy) == vars(error)  # every attribute, the run's result and its note included
    restored = run_result(copy)
    assert restored is not None
    assert restored.steps == 2
