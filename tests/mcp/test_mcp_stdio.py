"""MCP tools over stdio: the test server started as a subprocess (``mcp_test_server.py``), commands that
are no MCP server, and what a cancelled run or a crashed server leaves behind (nothing)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import HERE, child_processes, stdio_command

from agentflow.agent.agent import Agent
from agentflow.events import RunCancelled, ToolFailed, ToolProgress
from agentflow.mcp import MCPConnectionError, MCPServerStdio
from agentflow.result import StopReason
from agentflow.testing.fake import FakeModelClient, reply


async def test_a_stdio_server_s_tools_run_in_an_agent_and_its_process_ends_with_the_block(
    tmp_path: Path,
) -> None:
    before = child_processes()
    command, args = stdio_command()
    server = MCPServerStdio(command, args, env={"AGENTFLOW_MCP_TEST": "passed on"}, cwd=tmp_path)
    async with server:
        assert child_processes() - before  # the server runs as our child
        tools = {t.name: t for t in await server.tools()}
        model = FakeModelClient(
            [
                reply(
                    tool_calls=[("add", {"a": 2, "b": 3}), ("environment", {"name": "AGENTFLOW_MCP_TEST"})]
                ),
                reply("done"),
            ]
        )
        result = await Agent(model, tools=tools.values()).run("go")

    assert [r.output for r in result.tool_results] == ["5", f"passed on in {tmp_path}"]
    assert tools["add"].description == "Add two numbers."
    assert child_processes() == before


async def test_a_run_cancelled_mid_call_cancels_the_mcp_request_and_the_session_goes_on() -> None:
    before = child_processes()
    async with MCPServerStdio(*stdio_command(), include=["wait", "cancelled_calls", "add"]) as server:
        model = FakeModelClient([reply(tool_calls=[("wait", {"label": "stdio-cancel"})])])
        agent = Agent(model, tools=await server.tools())
        seen: list[object] = []
        async with agent.stream("go") as run:
            async for event in run:
                if isinstance(event, ToolProgress):  # the server is inside the call: cancel the run
                    await run.cancel()
                if isinstance(event, ToolFailed | RunCancelled):
                    seen.append(event)
        assert run.result.stop_reason is StopReason.CANCELLED
        failed = next(e for e in seen if isinstance(e, ToolFailed))
        assert failed.result.error_type == "cancelled"

        # The server was told to cancel the request, and the same session serves the next calls.
        cancelled = await server.call_tool("cancelled_calls", {"at_least": 1})
        assert cancelled.structured_content == {"result": ["stdio-cancel"]}
        model = FakeModelClient([reply(tool_calls=[("add", {"a": 1})]), reply("done")])
        result = await Agent(model, tools=await server.tools()).run("go")
        assert result.tool_results[0].output == "2"
    assert child_processes() == before


async def test_a_server_that_dies_fails_the_calls_after_it_not_the_block() -> None:
    async with MCPServerStdio(*stdio_command(), name="crashy", include=["exit_now", "add"]) as server:
        model = FakeModelClient(
            [reply(tool_calls=[("exit_now", {})]), reply(tool_calls=[("add", {"a": 1})]), reply("done")]
        )
        result = await Agent(model, tools=await server.tools()).run("go")
        # The call that killed it and the ones after it failed; the model was told, the block goes on.
        died, after = result.tool_results
        assert died.error_type == after.error_type == "exception"
        assert "MCPConnectionError: MCP server 'crashy'" in (after.error or "")
        assert not server.connected
        with pytest.raises(MCPConnectionError, match="connection was lost"):
            await server.tools(refresh=True)


async def test_a_command_that_does_not_exist_is_a_connection_error() -> None:
    with pytest.raises(MCPConnectionError) as caught:
        async with MCPServerStdio("/nonexistent/mcp-server", ["--stdio"]):
            pytest.fail("started a command that does not exist")
    assert str(caught.value) == (
        "MCP server 'mcp-server --stdio': cannot start it: "
        "the command '/nonexistent/mcp-server' was not found"
    )
    assert isinstance(caught.value.__cause__, FileNotFoundError)


async def test_a_command_that_is_no_mcp_server_is_a_connection_error_and_leaves_no_process() -> None:
    before = child_processes()
    with pytest.raises(MCPConnectionError, match="the connection closed during the MCP handshake"):
        async with MCPServerStdio(sys.executable, ["-c", "print('not an MCP server')"], name="plain"):
            pytest.fail("a plain script passed for an MCP server")
    # One that starts and never answers: the handshake times out.
    silent = MCPServerStdio(sys.executable, ["-c", "import sys; sys.stdin.read()"], timeout=0.5)
    with pytest.raises(MCPConnectionError, match="the MCP handshake did not complete in time"):
        async with silent:
            pytest.fail("a silent script passed for an MCP server")
    assert child_processes() == before


def test_the_test_server_script_exists() -> None:
    assert (HERE / "mcp_test_server.py").is_file()
