"""The ``async with`` blocks of an MCP server (and of agents given one): blocks that overlap in different
tasks share one connection, a connection belongs to its event loop, a lost one is not used again, and an
``agent.override(tools=[server])`` is connected by ``async with agent:``."""

from __future__ import annotations

import threading

import anyio
import anyio.to_thread
import pytest
from conftest import child_processes, stdio_command

from agentflow.agent.agent import Agent
from agentflow.events import RunFailed
from agentflow.mcp import MCPConnectionError, MCPServerStdio, MCPServerStreamableHTTP
from agentflow.testing.fake import FakeModelClient, reply


async def test_blocks_in_different_tasks_share_one_process_whichever_leaves_first() -> None:
    # A web service's requests, each in ``async with agent:``: the first to enter leaves first.
    before = child_processes()
    server = MCPServerStdio(*stdio_command(), include=["add"])
    agent = Agent(FakeModelClient([reply(tool_calls=[("add", {"a": 1})]), reply("2")]), tools=[server])
    first_in, second_in, first_out = anyio.Event(), anyio.Event(), anyio.Event()
    seen: list[object] = []

    async def first_request() -> None:
        async with agent:
            first_in.set()
            await second_in.wait()
            seen.append(len(child_processes() - before))
        first_out.set()

    async def second_request() -> None:
        await first_in.wait()
        async with agent:
            second_in.set()
            await first_out.wait()
            assert server.connected  # the block that opened the connection is gone; it is not
            seen.append((await agent.run("1 + 1?")).tool_results[0].output)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(first_request)
        tasks.start_soon(second_request)
    assert seen == [1, "2"]
    assert not server.connected
    assert child_processes() == before


async def test_tasks_entering_at_once_start_one_process() -> None:
    before = child_processes()
    server = MCPServerStdio(*stdio_command())
    inside: list[int] = []
    both_in = anyio.Event()

    async def block() -> None:
        async with server:
            inside.append(len(child_processes() - before))
            if len(inside) == 2:
                both_in.set()
            await both_in.wait()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(block)
        tasks.start_soon(block)
    assert inside == [1, 1]
    assert child_processes() == before


async def test_a_block_may_be_left_in_another_task_than_the_one_that_entered_it(http_url: str) -> None:
    # An application's start-up and shutdown hooks, say.
    server = MCPServerStreamableHTTP(http_url)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.__aenter__)
    assert (await server.call_tool("add", {"a": 1})).structured_content == {"result": 2}
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.__aexit__, None, None, None)
    assert not server.connected


async def test_a_server_connected_in_another_event_loop_fails_at_once_there(http_url: str) -> None:
    server = MCPServerStreamableHTTP(http_url, include=["add"])
    connected, stop = threading.Event(), threading.Event()

    async def other_loop() -> None:
        async with server:
            await server.tools()
            connected.set()
            await anyio.to_thread.run_sync(stop.wait)

    thread = threading.Thread(target=anyio.run, args=(other_loop,))
    thread.start()
    try:
        assert await anyio.to_thread.run_sync(connected.wait, 20)
        model = FakeModelClient([reply(tool_calls=[("add", {"a": 1})]), reply("2")])
        with anyio.fail_after(10):  # it used to hang
            with pytest.raises(MCPConnectionError, match="connected in another event loop"):
                await server.tools()
            with pytest.raises(MCPConnectionError, match="connected in another event loop"):
                await server.call_tool("add", {"a": 1})
            async with Agent(model, tools=[server]).stream("go") as run:
                events = [e async for e in run]
        assert [type(e) for e in events] == [RunFailed]
        assert model.prompts == []
    finally:
        stop.set()
        thread.join(20)

    # A loop that ended without leaving its block left nothing usable: this loop connects anew.
    async def left_open() -> None:
        await server.__aenter__()

    await anyio.to_thread.run_sync(anyio.run, left_open)
    async with server:
        assert (await server.call_tool("add", {"a": 1})).structured_content == {"result": 2}
    assert not server.connected


async def test_a_lost_connection_fails_the_next_run_and_the_next_block_connects_again() -> None:
    before = child_processes()
    server = MCPServerStdio(*stdio_command(), name="crashy", include=["exit_now", "add"])
    model = FakeModelClient([reply(tool_calls=[("exit_now", {})]), reply("it died"), reply("never")])
    agent = Agent(model, tools=[server])
    async with agent:
        await agent.run("crash it")
        assert not server.connected
        with pytest.raises(MCPConnectionError, match="the connection was lost"):
            await server.tools()  # not the cached tools of a dead connection
        async with agent.stream("again") as run:
            events = [e async for e in run]
        assert [type(e) for e in events] == [RunFailed]  # before its model call
        assert len(model.prompts) == 2
        async with server:  # entering again connects again, for the outer block too
            assert server.connected
        assert (await server.call_tool("add", {"a": 1})).structured_content == {"result": 2}
    assert child_processes() == before


async def test_async_with_agent_connects_the_servers_of_the_override_in_force(http_url: str) -> None:
    server = MCPServerStreamableHTTP(http_url, include=["add"])
    agent = Agent(FakeModelClient([reply("the agent's own model")]))
    fake = FakeModelClient([reply(tool_calls=[("add", {"a": 1})]), reply("2")])
    with agent.override(model=fake, tools=[server]):
        async with agent:
            assert server.connected
            result = await agent.run("1 + 1?")
    assert result.tool_results[0].output == "2"
    assert not server.connected
