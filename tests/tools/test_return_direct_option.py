"""``return_direct`` on a tool: every way of making one takes it, checked where it is written, and the
registry's flag that lets a run without such a tool skip looking for an answer in its results."""

from __future__ import annotations

from typing import Any

import pytest

from agentflow.agent.agent import Agent
from agentflow.model.tools import ToolSpec
from agentflow.testing.fake import FakeModelClient
from agentflow.tools import Tool, ToolRegistry, tool


async def status(order: str) -> str:
    """An order's status."""
    return f"{order}: shipped"


SPEC = ToolSpec(
    name="status",
    description="An order's status.",
    parameters={"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
)


def test_every_form_of_tool_takes_the_option() -> None:
    assert tool(return_direct=True)(status).return_direct
    assert tool(eager=True, inline=False, return_direct=True)(status).return_direct
    assert Tool.from_spec(SPEC, status, return_direct=True).return_direct
    assert Tool(SPEC, status, return_direct=True).return_direct
    assert not tool(status).return_direct  # off by default
    assert not Tool.from_spec(SPEC, status).return_direct
    agent = Agent(FakeModelClient([]), name="Support")
    assert agent.as_tool(description="Answers support questions.", return_direct=True).return_direct
    assert not agent.as_tool(description="Answers support questions.").return_direct


def test_the_option_leaves_the_spec_the_model_sees_as_it_was() -> None:
    assert tool(return_direct=True)(status).spec == tool(status).spec
    assert "return_direct" not in repr(tool(return_direct=True)(status))


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_a_value_that_is_not_a_bool_is_refused_where_it_is_written(value: Any) -> None:
    with pytest.raises(TypeError, match="return_direct must be True or False"):
        tool(return_direct=value)
    with pytest.raises(TypeError, match="return_direct must be True or False"):
        Tool.from_spec(SPEC, status, return_direct=value)
    with pytest.raises(TypeError, match=r"as_tool\(return_direct=...\) must be a bool"):
        Agent(FakeModelClient([]), name="Support").as_tool(description="Answers.", return_direct=value)


def test_the_registry_says_whether_any_tool_answers_for_the_run() -> None:
    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    assert not ToolRegistry([ping, status]).has_return_direct
    assert ToolRegistry([ping, tool(return_direct=True)(status)]).has_return_direct
    assert not ToolRegistry().has_return_direct
