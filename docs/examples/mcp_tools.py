"""Tools from MCP servers: one started as a subprocess (stdio), the same one over Streamable HTTP, options.

Run with ``--serve``, this file is the weather MCP server itself (over stdio), which ``main`` starts.
"""

from __future__ import annotations

import socket
import sys

import anyio
import uvicorn

# --8<-- [start:server]
from mcp.server.mcpserver import MCPServer

weather = MCPServer("weather")


@weather.tool()
def forecast(city: str, days: int = 1) -> str:
    """The weather forecast for a city, for 1 to 7 days."""
    return f"{city}: sunny for {days} day(s)"


# --8<-- [end:server]

from agentflow import Agent  # noqa: E402
from agentflow.mcp import MCPServerStdio, MCPServerStreamableHTTP  # noqa: E402
from agentflow.providers.openai.chat_model import OpenAIChatModel  # noqa: E402
from agentflow.testing import Reply, ScriptedServer  # noqa: E402
from agentflow.tools import tool  # noqa: E402


@tool
def packing_list(weather: str) -> str:
    """What to pack for the given weather."""
    return "sunglasses" if "sunny" in weather else "an umbrella"


async def stdio_example(model: OpenAIChatModel) -> None:
    # --8<-- [start:stdio]
    server = MCPServerStdio(sys.executable, [__file__, "--serve"], tool_prefix="weather")
    agent = Agent(model, tools=[server, packing_list])  # may be built at import: nothing starts yet
    async with server:  # starts the process and connects; leaving the block stops it
        result = await agent.run("What should I pack for Oslo this weekend?")  # the run lists its tools
        tools = await server.tools()  # agentflow Tools: the server's names, descriptions and schemas
    print([t.name for t in tools])  # ['weather_forecast']
    print(result.tool_results[0].output)  # Oslo: sunny for 2 day(s)
    print(result.output_text)  # Sunny in Oslo: bring sunglasses.
    # --8<-- [end:stdio]
    assert [t.name for t in tools] == ["weather_forecast"]
    assert [r.output for r in result.tool_results] == ["Oslo: sunny for 2 day(s)", "sunglasses"]


async def http_example(model: OpenAIChatModel, url: str) -> None:
    # --8<-- [start:http]
    server = MCPServerStreamableHTTP(
        url,  # e.g. "https://mcp.example.com/mcp"
        headers={"Authorization": "Bearer <token>"},
        include=["forecast"],  # offer only these tools (exclude=[...] leaves some out)
        tool_timeout=20,  # each call's limit, as @tool(timeout=...)
    )
    async with server:
        # The server's own advice on its tools is known once it is connected.
        agent = Agent(model, tools=[server], instructions=server.instructions)
        result = await agent.run("Will it be sunny in Oslo tomorrow?")
    print(result.output_text)  # Yes: sunny in Oslo tomorrow.
    # --8<-- [end:http]
    assert result.tool_results[0].output == "Oslo: sunny for 1 day(s)"
    assert result.tool_results[0].name == "forecast"


async def main() -> None:
    script = [
        Reply(tool_calls=[("weather_forecast", {"city": "Oslo", "days": 2})]),
        Reply(tool_calls=[("packing_list", {"weather": "sunny"})]),
        Reply(text="Sunny in Oslo: bring sunglasses."),
        Reply(tool_calls=[("forecast", {"city": "Oslo"})]),
        Reply(text="Yes: sunny in Oslo tomorrow."),
    ]
    async with ScriptedServer(script) as llm:
        model = OpenAIChatModel(base_url=llm.base_url, model="gpt-4.1")
        await stdio_example(model)
        # The same server over Streamable HTTP, served here on 127.0.0.1 (uvicorn, an ephemeral port).
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            config = uvicorn.Config(weather.streamable_http_app(), log_level="warning", lifespan="on")
            http = uvicorn.Server(config)
            async with anyio.create_task_group() as tg:
                tg.start_soon(http.serve, [sock])
                while not http.started:  # noqa: ASYNC110 (uvicorn says so with a flag, not an event)
                    await anyio.sleep(0.01)
                await http_example(model, f"http://127.0.0.1:{sock.getsockname()[1]}/mcp")
                http.should_exit = True


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        weather.run()  # the MCP server, over stdio
    else:
        anyio.run(main)
