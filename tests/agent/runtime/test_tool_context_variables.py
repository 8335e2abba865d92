"""A tool call runs in a copy of its caller's context, as it would in a task of its own (what the Agents SDK
and pydantic-ai users get from their task per call): a tool sees the context variables set around the run
(a request id, a tenant), and what it sets (``ContextVar.set``, structlog's ``bind_contextvars``) reaches
neither the code that ran the agent, nor the next run in the same task, nor the other calls of its step,
whichever of them waited (calls that never wait run in the calling task, without a task)."""

from __future__ import annotations

from contextvars import ContextVar

import anyio
import anyio.lowlevel
import pytest

from agentflow.agent.agent import Agent
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

TENANT: ContextVar[str] = ContextVar("tenant", default="none")


@tool
async def switch_tenant(name: str) -> str:
    """Act for another tenant."""
    TENANT.set(name)
    return f"acting for {name}"


@tool
async def slow() -> str:
    """Something that waits."""
    await anyio.lowlevel.checkpoint()
    return "ok"


@tool
async def whoami() -> str:
    """The tenant this call acts for."""
    await anyio.lowlevel.checkpoint()
    return TENANT.get()


@tool(inline=True)
def whoami_now() -> str:
    """The tenant, from a sync tool run on the loop."""
    TENANT.set("inline")
    return TENANT.get()


@tool
def whoami_in_a_thread() -> str:
    """The tenant, from a sync tool run in a worker thread."""
    return TENANT.get()


def agent(*calls: tuple[str, dict[str, str]]) -> Agent:
    tools = [switch_tenant, slow, whoami, whoami_now, whoami_in_a_thread]
    return Agent(FakeModelClient([reply(tool_calls=list(calls)), reply("done")]), tools=tools)


async def test_a_tool_s_context_variables_do_not_leak_into_the_caller_or_the_next_run() -> None:
    TENANT.set("request-1")
    await agent(("switch_tenant", {"name": "acme"})).run("Act for acme.")
    assert TENANT.get() == "request-1"
    result = await agent(("whoami", {})).run("Who am I?")
    assert result.tool_results[0].output == "request-1"


@pytest.mark.parametrize(
    "order",
    [["switch_tenant", "slow", "whoami"], ["slow", "switch_tenant", "whoami"]],
    ids=["first", "after"],
)
async def test_the_calls_of_a_step_do_not_see_each_other_s_changes_whatever_waited(order: list[str]) -> None:
    TENANT.set("request-2")
    calls = [(name, {"name": "globex"} if name == "switch_tenant" else {}) for name in order]
    result = await agent(*calls).run("go")
    assert result.tool_results[-1].output == "request-2"
    assert TENANT.get() == "request-2"


async def test_sync_tools_inline_and_in_threads_see_the_caller_s_values() -> None:
    TENANT.set("request-3")
    result = await agent(("whoami_in_a_thread", {}), ("whoami_now", {})).run("go")
    assert [r.output for r in result.tool_results] == ["request-3", "inline"]
    assert TENANT.get() == "request-3"
