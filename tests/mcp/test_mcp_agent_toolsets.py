"""MCP servers given to an agent as toolsets (``Agent(model, tools=[server])``): each run lists the server's
tools, so the agent may be built before the server is connected and sees its tool list change."""

from __future__ import annotations

import functools
from typing import Any

import anyio
import orjson
import pytest
from conftest import child_processes, stdio_command

from agentflow.agent.agent import Agent
from agentflow.events import RunFailed, RunFinished, RunStarted, ToolSucceeded
from agentflow.mcp import MCPConnectionError, MCPServerBase, MCPServerStdio, MCPServerStreamableHTTP
from agentflow.mcp import server as server_module
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools.toolsets import ToolNameConflictError


def offered(model: FakeModelClient, call: int = -1) -> list[str]:
    """The names of the tools the model was offered in one call."""
    return [spec.name for spec in model.prompts[call].tools]


# Built at import time, as an application would: nothing is started or connected yet.
SERVER = MCPServerStdio(*stdio_command(), include=["add", "echo"], name="calc")
MODEL = FakeModelClient([reply(tool_calls=[("add", {"a": 2, "b": 3})]), reply("5")])
AGENT = Agent(MODEL, tools=[SERVER])


async def test_an_agent_built_before_its_server_connects_runs_inside_async_with_server() -> None:
    before = child_processes()
    async with SERVER:
        result = await AGENT.run("2 + 3?")
    assert [r.output for r in result.tool_results] == ["5"]
    assert offered(MODEL) == ["add", "echo"]
    assert child_processes() == before


async def test_a_run_of_a_server_not_connected_fails_before_its_model_call_with_one_terminal_event() -> None:
    model = FakeModelClient([reply("never")])
    agent = Agent(model, tools=[MCPServerStdio(*stdio_command(), name="calc")])
    async with agent.stream("go") as run:
        events = [e async for e in run]
    assert [type(e) for e in events] == [RunFailed]
    assert isinstance(run.error, MCPConnectionError)
    assert "not connected" in str(run.error)
    assert "'async with agent:'" in str(run.error)
    assert model.prompts == []


async def test_async_with_agent_connects_its_servers_and_leaves_a_shared_one_to_its_outer_block() -> None:
    before = child_processes()
    server = MCPServerStdio(*stdio_command(), include=["add"])
    model = FakeModelClient([reply(tool_calls=[("add", {"a": 1})]), reply("2")] * 2)
    agent = Agent(model, tools=[server])
    async with agent:
        assert server.connected
        assert (await agent.run("1 + 1?")).tool_results[0].output == "2"
    assert not server.connected
    assert child_processes() == before

    async with server:
        async with Agent(model, tools=[server]) as other:
            assert (await other.run("1 + 1?")).tool_results[0].output == "2"
        assert server.connected  # the agent's block did not close it under the outer one
    assert child_processes() == before


async def test_a_changed_tool_list_reaches_the_next_run_uncached_at_once_cached_once_invalidated(
    http_url: str,
) -> None:
    cached = MCPServerStreamableHTTP(http_url, include=["echo", "late_tool"], name="cached")
    uncached = MCPServerStreamableHTTP(http_url, cache_tools=False, tool_prefix="u", include=["late_tool"])
    model = FakeModelClient([reply("one"), reply("two"), reply("three")])
    agent = Agent(model, tools=[cached, uncached])
    async with agent:
        await agent.run("one")
        assert offered(model) == ["echo"]
        await cached.call_tool("register", {"name": "late_tool"})
        try:
            await agent.run("two")
            assert offered(model) == ["echo", "u_late_tool"]  # listed again by this run
            cached.invalidate_tools()
            await agent.run("three")
            assert offered(model) == ["echo", "late_tool", "u_late_tool"]
        finally:
            await cached.call_tool("unregister", {"name": "late_tool"})  # the module's server is shared


async def test_two_servers_offering_one_name_fail_the_run_naming_both(http_url: str) -> None:
    model = FakeModelClient([reply("never")])
    first = MCPServerStreamableHTTP(http_url, include=["add"], name="first")
    second = MCPServerStreamableHTTP(http_url, include=["add", "echo"], name="second")
    async with first, second:
        with pytest.raises(ToolNameConflictError) as caught:
            await Agent(model, tools=[first, second]).run("go")
        assert (caught.value.name, caught.value.first) == ("add", "MCPServerStreamableHTTP 'first'")
        assert caught.value.second == "MCPServerStreamableHTTP 'second'"
        assert "tool_prefix='docs'" in str(caught.value)
    assert model.prompts == []


async def test_a_streamed_run_and_a_session_call_the_server_s_tools(http_url: str) -> None:
    server = MCPServerStreamableHTTP(http_url, include=["add", "wait", "echo"])
    model = FakeModelClient(
        [
            reply(tool_calls=[("echo", {"text": "streamed"})]),
            reply("done"),
            reply(tool_calls=[("add", {"a": 40, "b": 2})]),
            reply("42"),
            reply("still 42"),
        ]
    )
    agent = Agent(model, tools=[server])
    async with agent:
        async with agent.stream("go") as run:
            kinds = [type(e) async for e in run if isinstance(e, RunStarted | ToolSucceeded | RunFinished)]
        assert kinds == [RunStarted, ToolSucceeded, RunFinished]
        assert run.result.tool_results[0].output == "streamed"

        chat = agent.session()
        assert (await chat.run("40 + 2?")).tool_results[0].output == "42"
        assert (await chat.run("and now?")).output_text == "still 42"
    assert offered(model) == ["add", "echo", "wait"]  # the server's order


async def test_codeact_code_calls_the_server_s_tools(http_url: str) -> None:
    code = "add(a=2, b=3) * 10"
    model = FakeModelClient(
        [reply(orjson.dumps({"type": "code", "language": "python", "code": code}).decode())]
    )
    server = MCPServerStreamableHTTP(http_url, include=["add"])
    agent = Agent(model, runtime=CodeActRuntime(CodeActOptions()), tools=[server])
    async with agent:
        result = await agent.run("2 + 3, times ten?")
    assert orjson.loads(result.output_text) == 50
    assert "add(" in (model.prompts[0].system_prompt or "")  # the tools the code may call, described


async def test_a_handshake_era_server_s_tools_list_changed_reaches_the_next_run(
    http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The test server speaks 2026-07-28, where the notification needs a listen stream: talk the older way.
    monkeypatch.setattr(server_module, "Client", functools.partial(server_module.Client, mode="legacy"))
    heard = anyio.Event()
    on_message = MCPServerBase._on_message

    async def listening(self: MCPServerBase, message: Any) -> None:
        await on_message(self, message)
        if self._tools is None:
            heard.set()

    monkeypatch.setattr(MCPServerBase, "_on_message", listening)
    server = MCPServerStreamableHTTP(http_url, include=["register_announced", "announced_tool"])
    model = FakeModelClient(
        [
            reply(tool_calls=[("register_announced", {"name": "announced_tool"})]),
            reply("added"),
            reply("seen"),
        ]
    )
    agent = Agent(model, tools=[server])
    async with agent:
        assert server._connection is not None
        assert server._connection.client is not None
        assert server._connection.client.protocol_version < "2026"
        try:
            await agent.run("add a tool")
            assert offered(model) == ["register_announced"]
            with anyio.fail_after(10):  # the notification travels apart from the call's answer
                await heard.wait()
            await agent.run("again")
            assert offered(model) == ["register_announced", "announced_tool"]
        finally:
            await server.call_tool("unregister", {"name": "announced_tool"})  # the module's server is shared
