"""The MCP server the tests of ``agentflow.mcp`` talk to, built with the ``mcp`` package's ``MCPServer``.

Run as a script it serves over stdio (``python mcp_test_server.py``); ``build()`` gives the same server for
the Streamable HTTP tests to serve in-process. Its tools cover what a client must handle: arguments,
structured content, an ``isError`` result, images and resources, progress, a call that waits until it is
cancelled, a schema of the loose kind other generators write, and tools that appear at run time.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    EmbeddedResource,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

LOOSE_SCHEMA: dict[str, Any] = {
    # Draft-07 definitions, a reference to another property (as zod-to-json-schema writes one),
    # an unknown format and a remote reference that must never be fetched.
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "definitions": {"Tag": {"type": "string", "minLength": 1}},
    "properties": {
        "tags": {"type": "array", "items": {"$ref": "#/definitions/Tag"}},
        "more": {"$ref": "#/properties/tags"},
        "site": {"type": "string", "format": "hostname-ish"},
        "extra": {"$ref": "https://example.invalid/schema.json"},
    },
    "required": ["tags"],
    "additionalProperties": False,
}


class Forecast(BaseModel):
    """A weather forecast."""

    city: str
    temperature: float
    summary: str


def build() -> MCPServer:
    """A fresh server (each HTTP test module serves its own, so no state leaks between modules)."""
    server = MCPServer("agentflow-test", instructions="Test tools; call add to add numbers.")
    cancelled: list[str] = []
    # Set when a wait call's handler ends (cancelled); made again by each cancelled_calls that waits.
    ended: list[anyio.Event] = []

    @server.tool()
    def add(a: int, b: int = 1) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def forecast(city: str) -> Forecast:
        """The weather forecast for a city."""
        return Forecast(city=city, temperature=21.5, summary="sunny")

    @server.tool()
    def refuse(reason: str) -> str:
        """Always fails with the given reason."""
        raise ToolError(f"cannot do that: {reason}")

    @server.tool()
    def protocol_error() -> str:
        """Answers with an MCP protocol error (a JSON-RPC error), not a failed result."""
        raise MCPError(code=INVALID_PARAMS, message="this request is not acceptable")

    @server.tool()
    def picture() -> Image:
        """A tiny PNG image."""
        return Image(data=b"\x89PNG\r\n\x1a\n", format="png")

    @server.tool()
    def mixed() -> CallToolResult:
        """Text, an image, a text resource and a resource link."""
        return CallToolResult(
            content=[
                TextContent(text="report follows"),
                Image(data=b"\x89PNG\r\n\x1a\n", format="png").to_image_content(),
                EmbeddedResource(
                    resource=TextResourceContents(
                        uri="file:///notes.txt", mime_type="text/plain", text="a note"
                    )
                ),
                ResourceLink(name="data.csv", uri="file:///data.csv", mime_type="text/csv"),
            ]
        )

    @server.tool(name="files.read")
    def files_read(path: str) -> str:
        """A tool whose name has a dot."""
        return f"contents of {path}"

    @server.tool()
    async def wait(ctx: Context, label: str) -> str:
        """Reports progress, then waits until the call is cancelled."""
        await ctx.report_progress(1, 2, f"waiting: {label}")
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.append(label)
            for event in ended:
                event.set()
        return "never"

    @server.tool()
    async def cancelled_calls(at_least: int) -> list[str]:
        """The labels of the wait calls cancelled so far, once there are at least that many."""
        # The cancel notification and this request travel apart: wait (boundedly) for the first one to land.
        with anyio.fail_after(10):
            while len(cancelled) < at_least:
                ended[:] = [anyio.Event()]
                await ended[0].wait()
        return list(cancelled)

    @server.tool()
    def environment(name: str) -> str:
        """An environment variable of the server's process and its working directory."""
        return f"{os.environ.get(name)} in {os.getcwd()}"

    @server.tool()
    def exit_now() -> str:
        """Ends the server's process at once (a server that crashes)."""
        os._exit(3)

    @server.tool()
    def register(name: str) -> str:
        """Adds a tool named ``name`` at run time."""
        server.add_tool(lambda: f"I am {name}", name=name, description="Added at run time.")
        return "registered"

    @server.tool()
    async def register_announced(ctx: Context, name: str) -> str:
        """Adds a tool named ``name`` at run time and says so (``notifications/tools/list_changed``)."""
        server.add_tool(lambda: f"I am {name}", name=name, description="Added at run time.")
        await ctx.request_context.session.send_tool_list_changed()
        return "registered"

    @server.tool()
    def unregister(name: str) -> str:
        """Removes a tool added with register."""
        server.remove_tool(name)
        return "removed"

    @server.tool()
    def loose(tags: list[str], more: list[str] | None = None, site: str = "", extra: Any = None) -> str:
        """A tool whose schema is replaced with a loose, hand-written one below."""
        return f"tags={tags} more={more}"

    @server.tool()
    def introduce(self: str) -> str:
        """Says who it is: an argument named as a Python method's first parameter."""
        return f"I am {self}"

    @server.tool()
    def introduce_twice(self: str, agentflow_mcp_context: str) -> str:
        """An argument named as the parameter agentflow's tool functions take their context by."""
        return f"I am {self} ({agentflow_mcp_context})"

    @server.tool()
    def refuse_structured() -> CallToolResult:
        """An isError result whose only account of the error is its structured content."""
        return CallToolResult(content=[], structured_content={"error": "quota exceeded"}, is_error=True)

    @server.custom_route("/denied", methods=["GET", "POST", "DELETE"])
    async def denied(request: Request) -> Response:
        """An endpoint that wants a token the client does not have."""
        return PlainTextResponse("a bearer token is required", status_code=401)

    registered = server._tool_manager.get_tool("loose")
    assert registered is not None
    registered.parameters = LOOSE_SCHEMA
    return server


if __name__ == "__main__":
    print("agentflow MCP test server starting", file=sys.stderr)
    build().run()
