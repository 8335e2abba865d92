"""Tools from MCP servers (Model Context Protocol), for agentflow agents.

``MCPServerStdio`` (a server run as a subprocess) and ``MCPServerStreamableHTTP`` (a server at an URL) connect
in ``async with`` and turn the server's tools into agentflow ``Tool``\\ s. An agent given the server lists
them at each run (the server is a toolset: ``agentflow.tools.toolsets``)::

    from agentflow.mcp import MCPServerStdio

    time_server = MCPServerStdio("uvx", ["mcp-server-time"], tool_prefix="time")
    agent = Agent(model, tools=[time_server, my_tool])
    async with agent:  # connects the server for the block (or: async with time_server:)
        result = await agent.run("What time is it in Tokyo?")

Built on the official ``mcp`` package (``pip install 'agentflow[mcp]'``), which ``import agentflow`` never
loads: only importing ``agentflow.mcp`` does.
"""

from __future__ import annotations

try:
    from mcp import Client as _Client  # noqa: F401 (the mcp 2 API this package is built on)
except ImportError as exc:  # not installed, or mcp 1.x
    raise ImportError(
        "agentflow.mcp needs the 'mcp' package (version 2.3 or later): pip install 'agentflow[mcp]'"
    ) from exc

from .errors import MCPConnectionError, MCPRequestError, MCPServerError
from .results import describe_block, result_value
from .schema import tool_parameters
from .server import MCPServerBase, MCPServerOptions
from .stdio import MCPServerStdio
from .streamable_http import MCPServerStreamableHTTP
from .tools import ToolFilter

__all__ = [
    "MCPConnectionError",
    "MCPRequestError",
    "MCPServerBase",
    "MCPServerError",
    "MCPServerOptions",
    "MCPServerStdio",
    "MCPServerStreamableHTTP",
    "ToolFilter",
    "describe_block",
    "result_value",
    "tool_parameters",
]
