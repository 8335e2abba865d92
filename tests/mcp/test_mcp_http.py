"""MCP tools over Streamable HTTP, against the test server served on 127.0.0.1 (see ``conftest.py``): listing,
names, filters, the cache, calls and their results, and whole agent runs."""

from __future__ import annotations

import socket
from typing import Any

import anyio
import orjson
import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.mcp import (
    MCPConnectionError,
    MCPRequestError,
    MCPServerBase,
    MCPServerStreamableHTTP,
)
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import TOOL_ERROR_PREFIX, tool


def _error(output: str) -> dict[str, Any]:
    assert output.startswith(TOOL_ERROR_PREFIX), output
    parsed: dict[str, Any] = orjson.loads(output[len(TOOL_ERROR_PREFIX) :])
    return parsed


async def _run(server: MCPServerBase, *calls: tuple[str, dict[str, Any]], **options: Any) -> Any:
    """Run an agent whose model calls each of ``calls`` in turn, then answers "done"."""
    model = FakeModelClient([*(reply(tool_calls=[c]) for c in calls), reply("done")])
    agent = Agent(model, tools=await server.tools(), options=AgentOptions(**options))
    return await agent.run("go")


async def test_tools_are_listed_with_the_server_s_names_descriptions_and_schemas(http_url: str) -> None:
    async with MCPServerStreamableHTTP(http_url) as server:
        tools = {t.name: t for t in await server.tools()}
        assert server.connected
        assert server.server_info is not None
        assert server.server_info.name == "agentflow-test"
        assert server.instructions == "Test tools; call add to add numbers."

    assert {"add", "echo", "forecast", "refuse", "files_read", "loose"} <= set(tools)
    add = tools["add"]
    assert add.description == "Add two numbers."
    assert add.spec.parameters["properties"]["a"]["type"] == "integer"
    assert add.spec.parameters["required"] == ["a"]
    assert add.spec.strict is None
    assert not server.connected


async def test_a_prefix_and_the_filters_choose_and_name_the_tools(http_url: str) -> None:
    async with (
        MCPServerStreamableHTTP(http_url, tool_prefix="calc", include=["add", "echo", "forecast"]) as calc,
        MCPServerStreamableHTTP(http_url, exclude=["add"], tool_filter=lambda t: t.name.startswith("e")) as e,
    ):
        assert sorted(t.name for t in await calc.tools()) == ["calc_add", "calc_echo", "calc_forecast"]
        assert sorted(t.name for t in await e.tools()) == ["echo", "environment", "exit_now"]
        # The two servers' tools live side by side in one agent: the prefix keeps their names apart.
        result = await _run(calc, ("calc_add", {"a": 2, "b": 5}))
    assert result.tool_results[0].output == "7"


async def test_include_naming_a_tool_the_server_lacks_is_logged(
    http_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with MCPServerStreamableHTTP(http_url, include=["add", "sub"]) as server:
        assert [t.name for t in await server.tools()] == ["add"]
    assert "has no tool named sub" in caplog.text


async def test_the_tool_list_is_cached_until_refreshed_or_invalidated(http_url: str) -> None:
    async with (
        MCPServerStreamableHTTP(http_url) as cached,
        MCPServerStreamableHTTP(http_url, cache_tools=False) as uncached,
    ):
        first = await cached.tools()
        assert [t.name for t in await cached.tools()] == [t.name for t in first]
        assert (await cached.tools())[0] is first[0]  # the same Tool objects, not listed again
        await cached.call_tool("register", {"name": "late_tool"})
        try:
            assert "late_tool" not in {t.name for t in await cached.tools()}
            assert "late_tool" in {t.name for t in await uncached.tools()}
            assert "late_tool" in {t.name for t in await cached.tools(refresh=True)}
            await cached.call_tool("unregister", {"name": "late_tool"})
            assert "late_tool" in {t.name for t in await cached.tools()}
            cached.invalidate_tools()
            assert "late_tool" not in {t.name for t in await cached.tools()}
        finally:
            await cached.call_tool("unregister", {"name": "late_tool"})  # the module's server is shared


async def test_an_agent_run_uses_mcp_tools_and_the_model_reads_their_results(http_url: str) -> None:
    def answer(prompt: Any) -> Any:
        last = prompt.items[-1]
        if last.get("type") == "function_call_output" or last.get("role") == "tool":
            return reply(f"The tool said: {last.get('output', last.get('content'))}")
        return reply(tool_calls=[("echo", {"text": "hello from MCP"})])

    async with MCPServerStreamableHTTP(http_url, include=["echo"]) as server:
        model = FakeModelClient(answer)
        agent = Agent(model, tools=await server.tools())
        result = await agent.run("Say hello")

    assert result.output_text == "The tool said: hello from MCP"
    assert result.tool_results[0].ok
    (offered,) = model.prompts[0].tools
    assert offered.name == "echo"
    assert offered.parameters["properties"]["text"]["type"] == "string"


async def test_mcp_tools_sit_beside_local_tools(http_url: str) -> None:
    @tool
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    async with MCPServerStreamableHTTP(http_url, include=["add"]) as server:
        model = FakeModelClient(
            [reply(tool_calls=[("add", {"a": 1, "b": 2}), ("shout", {"text": "hi"})]), reply("done")]
        )
        result = await Agent(model, tools=[*await server.tools(), shout]).run("go")
    assert [r.output for r in result.tool_results] == ["3", "HI"]


async def test_invalid_arguments_are_refused_before_they_reach_the_server(
    http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []
    call_tool = MCPServerBase.call_tool

    async def recording(self: MCPServerBase, name: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(name)
        return await call_tool(self, name, *args, **kwargs)

    monkeypatch.setattr(MCPServerBase, "call_tool", recording)
    async with MCPServerStreamableHTTP(http_url) as server:
        result = await _run(
            server,
            ("add", {"a": "two"}),
            ("loose", {"tags": ["ok", ""], "surprise": 1}),
            ("add", {"a": 2}),
        )

    wrong_type, loose, fine = result.tool_results
    assert _error(wrong_type.output)["errorType"] == "invalid_arguments"
    assert wrong_type.error == 'arguments.a must be integer, got the string "two"'
    # The loose schema (draft-07 definitions, a reference to another property) is enforced all the same.
    assert loose.error_type == "invalid_arguments"
    assert "arguments has unknown property 'surprise'" in (loose.error or "")
    assert "arguments.tags[1] must be longer than or equal to 1 characters" in (loose.error or "")
    assert fine.output == "3"
    assert sent == ["add"]  # only the valid call was sent


async def test_a_loose_schema_is_made_ready_for_the_model_and_its_valid_calls_go_through(
    http_url: str,
) -> None:
    async with MCPServerStreamableHTTP(http_url, include=["loose"]) as server:
        (loose,) = await server.tools()
        result = await _run(server, ("loose", {"tags": ["a"], "more": ["b"], "extra": {"any": "thing"}}))

    parameters = loose.spec.parameters
    assert "$schema" not in parameters
    assert "definitions" not in parameters
    assert parameters["properties"]["tags"]["items"] == {"$ref": "#/$defs/Tag"}
    assert parameters["properties"]["more"] == {"$ref": "#/$defs/properties.tags"}
    assert parameters["properties"]["extra"] == {}  # a remote reference is never followed
    assert result.tool_results[0].output == "tags=['a'] more=['b']"


async def test_an_is_error_result_fails_the_call_with_the_server_s_message(http_url: str) -> None:
    async with MCPServerStreamableHTTP(http_url, include=["refuse"], on_error="raise") as server:
        result = await _run(server, ("refuse", {"reason": "no such city"}))

    failed = result.tool_results[0]
    assert not failed.ok
    # A RejectCall: the model gets the message whatever on_error says, and the run goes on.
    assert failed.error == "Error executing tool refuse: cannot do that: no such city"
    assert _error(failed.output)["error"] == failed.error
    assert result.output_text == "done"


async def test_an_is_error_result_with_only_structured_content_gives_the_model_that_content(
    http_url: str,
) -> None:
    async with MCPServerStreamableHTTP(http_url, include=["refuse_structured"]) as server:
        result = await _run(server, ("refuse_structured", {}))
    assert result.tool_results[0].error == '{"error":"quota exceeded"}'


async def test_arguments_named_self_or_like_the_context_parameter_reach_the_server(http_url: str) -> None:
    async with MCPServerStreamableHTTP(http_url, include=["introduce", "introduce_twice"]) as server:
        result = await _run(
            server,
            ("introduce", {"self": "me"}),
            ("introduce_twice", {"self": "me", "agentflow_mcp_context": "again"}),
        )
    assert [r.output for r in result.tool_results] == ["I am me", "I am me (again)"]


async def test_a_listing_reuses_the_tools_whose_definitions_did_not_change(http_url: str) -> None:
    server = MCPServerStreamableHTTP(http_url, include=["add", "echo"], cache_tools=False)
    async with server:
        first, second = await server.tools(), await server.tools()
    assert [t.name for t in second] == ["add", "echo"]
    assert all(a is b for a, b in zip(first, second, strict=True))


async def test_structured_content_is_what_the_model_reads(http_url: str) -> None:
    async with (
        MCPServerStreamableHTTP(http_url, include=["forecast", "add"]) as structured,
        MCPServerStreamableHTTP(http_url, include=["forecast"], structured_content=False) as text,
    ):
        result = await _run(structured, ("forecast", {"city": "Oslo"}), ("add", {"a": 40, "b": 2}))
        as_text = await _run(text, ("forecast", {"city": "Oslo"}))
        forecast = {t.name: t for t in await structured.tools()}["forecast"]

    first, second = result.tool_results
    assert first.output == '{"city":"Oslo","temperature":21.5,"summary":"sunny"}'
    assert first.value == {"city": "Oslo", "temperature": 21.5, "summary": "sunny"}
    # A value the server wrapped as {"result": ...} because it is no object comes out unwrapped.
    assert second.output == "42"
    assert second.value == 42
    assert (
        orjson.loads(as_text.tool_results[0].output) == first.value
    )  # its text block, as the server wrote it
    assert forecast.returns is not None
    assert forecast.returns.schema is not None
    assert set(forecast.returns.schema["properties"]) == {"city", "temperature", "summary"}


async def test_images_and_resources_are_described_not_dropped(http_url: str) -> None:
    async with MCPServerStreamableHTTP(http_url, include=["picture", "mixed"]) as server:
        result = await _run(server, ("picture", {}), ("mixed", {}))
    picture, mixed = result.tool_results
    assert picture.output == "[image: image/png, 8 bytes, not shown]"
    assert mixed.output.splitlines() == [
        "report follows",
        "[image: image/png, 8 bytes, not shown]",
        "[resource file:///notes.txt (text/plain)]",
        "a note",
        "[resource link: data.csv file:///data.csv (text/csv)]",
    ]


async def test_a_name_a_model_api_refuses_is_rewritten_and_the_call_uses_the_server_s(http_url: str) -> None:
    async with MCPServerStreamableHTTP(http_url, include=["files.read"], tool_prefix="fs") as server:
        assert [t.name for t in await server.tools()] == ["fs_files_read"]
        result = await _run(server, ("fs_files_read", {"path": "/etc/hosts"}))
    assert result.tool_results[0].output == "contents of /etc/hosts"


async def test_a_call_past_its_timeout_is_cancelled_and_the_session_goes_on(http_url: str) -> None:
    async with MCPServerStreamableHTTP(
        http_url, include=["wait", "cancelled_calls", "add"], tool_timeout=0.2
    ) as s:
        result = await _run(s, ("wait", {"label": "http-timeout"}), ("add", {"a": 1}))
        # The server was told: its handler of the call was cancelled.
        cancelled = await s.call_tool("cancelled_calls", {"at_least": 1})
    timed_out, after = result.tool_results
    assert timed_out.error_type == "timeout"
    assert after.output == "2"
    assert "http-timeout" in cancelled.structured_content["result"]


async def test_progress_the_server_reports_becomes_tool_progress_events(http_url: str) -> None:
    from agentflow.events import ToolProgress, ToolStarted

    async with MCPServerStreamableHTTP(http_url, include=["wait"]) as server:
        model = FakeModelClient([reply(tool_calls=[("wait", {"label": "progress"})]), reply("done")])
        agent = Agent(model, tools=await server.tools())
        progress: list[ToolProgress] = []
        async with agent.stream("go") as run:
            async for event in run:
                if isinstance(event, ToolStarted):
                    continue
                if isinstance(event, ToolProgress):
                    progress.append(event)
                    await run.cancel()
    assert [(p.message, p.tool, p.data) for p in progress] == [
        ("waiting: progress", "wait", {"progress": 1.0, "total": 2.0})
    ]


async def test_a_protocol_error_is_a_request_error_naming_the_server(http_url: str) -> None:
    async with MCPServerStreamableHTTP(http_url, name="test-server", include=["protocol_error"]) as server:
        with pytest.raises(MCPRequestError) as caught:
            await server.call_tool("protocol_error", {})
        result = await _run(server, ("protocol_error", {}))
    assert str(caught.value) == (
        "MCP server 'test-server': tools/call 'protocol_error' failed: this request is not acceptable "
        "(code -32602)"
    )
    assert caught.value.code == -32602
    # In a run, the model is told (an exception of the tool), unless the tool's on_error says otherwise.
    assert result.tool_results[0].error_type == "exception"
    assert result.tool_results[0].error == f"MCPRequestError: {caught.value}"


async def test_using_a_server_outside_its_block_says_how_to_connect(http_url: str) -> None:
    server = MCPServerStreamableHTTP(http_url)
    with pytest.raises(MCPConnectionError, match="use it inside 'async with server:'"):
        await server.tools()
    async with server:
        tools = await server.tools()
    # A tool kept after the block fails as a tool does: the model is told, the run goes on.
    model = FakeModelClient([reply(tool_calls=[("add", {"a": 1})]), reply("done")])
    result = await Agent(model, tools=tools).run("go")
    assert result.tool_results[0].error_type == "exception"
    assert "MCPConnectionError" in result.tool_results[0].output
    async with server:  # and it connects again
        assert (await server.call_tool("add", {"a": 1})).structured_content == {"result": 2}


async def test_nested_blocks_share_one_connection(http_url: str) -> None:
    server = MCPServerStreamableHTTP(http_url)
    async with server:
        async with server:
            assert server.connected
        assert server.connected
        assert (await server.call_tool("add", {"a": 1})).structured_content == {"result": 2}
    assert not server.connected


async def test_an_error_in_the_block_comes_out_as_it_was(http_url: str) -> None:
    async def failing_block() -> None:
        async with MCPServerStreamableHTTP(http_url) as server:
            await server.tools()
            raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        await failing_block()


async def test_a_refused_connection_is_a_connection_error_naming_the_server() -> None:
    with socket.socket() as probe:  # a port nothing listens on: bound, then closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = MCPServerStreamableHTTP(
        f"http://127.0.0.1:{port}/mcp", headers={"Authorization": "Bearer s3cret"}
    )
    with pytest.raises(MCPConnectionError) as caught:
        async with server:
            pytest.fail("connected to nothing")
    message = str(caught.value)
    assert message.startswith(f"MCP server 'http://127.0.0.1:{port}/mcp': cannot connect: ConnectError")
    assert "s3cret" not in message
    assert caught.value.server == f"http://127.0.0.1:{port}/mcp"


async def test_an_http_error_is_a_connection_error_with_its_status(http_url: str) -> None:
    with pytest.raises(MCPConnectionError, match=r"/nothing-here': .* \(HTTP 404 Not Found\)$"):
        async with MCPServerStreamableHTTP(http_url.replace("/mcp", "/nothing-here")):
            pytest.fail("connected to a 404")
    with pytest.raises(MCPConnectionError, match=r"cannot connect: .* \(HTTP 401 Unauthorized\)$"):
        async with MCPServerStreamableHTTP(http_url.replace("/mcp", "/denied")):
            pytest.fail("connected without a token")


def test_bad_options_are_refused_when_the_server_is_made() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        MCPServerStreamableHTTP("ftp://example.com/mcp")
    with pytest.raises(ValueError, match="tool_prefix"):
        MCPServerStreamableHTTP("http://example.com/mcp", tool_prefix="my.prefix")
    with pytest.raises(TypeError, match=r"include=\['add'\]"):
        MCPServerStreamableHTTP("http://example.com/mcp", include="add")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        MCPServerStreamableHTTP("http://example.com/mcp", timeout=0)


async def test_a_server_cancelled_while_connecting_can_connect_later(http_url: str) -> None:
    server = MCPServerStreamableHTTP(http_url)
    with anyio.move_on_after(0) as scope:
        async with server:
            pytest.fail("connected within no time")
    assert scope.cancelled_caught
    assert not server.connected
    async with server:
        assert (await server.call_tool("add", {"a": 1})).structured_content == {"result": 2}
