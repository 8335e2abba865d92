"""The pure parts of ``agentflow.mcp``: MCP input schemas as tool parameters, results as tool values, names,
and connection failures as errors. No server here."""

from __future__ import annotations

import base64
from typing import Any

import mcp_types
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)

from agentflow.agent.agent import Agent
from agentflow.mcp import MCPConnectionError, MCPRequestError, result_value, tool_parameters
from agentflow.mcp.errors import connection_error, request_error
from agentflow.mcp.tools import build_tools, tool_name
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import RejectCall
from agentflow.tools.arguments import ArgumentParser, ToolArgumentsError


def _errors(schema: dict[str, Any], arguments: str) -> str:
    with pytest.raises(ToolArgumentsError) as caught:
        ArgumentParser("t", tool_parameters(schema), None).parse(arguments)
    return str(caught.value)


def test_a_schema_without_type_or_properties_becomes_an_object_schema() -> None:
    assert tool_parameters({}) == {"type": "object", "properties": {}}
    assert tool_parameters(None) == {"type": "object", "properties": {}}
    assert tool_parameters({"type": "object"}) == {"type": "object", "properties": {}}


def test_the_server_s_schema_is_not_changed_in_place() -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "definitions": {"A": {}}}
    tool_parameters(schema)
    assert schema == {"$schema": "https://json-schema.org/draft/2020-12/schema", "definitions": {"A": {}}}


def test_every_local_reference_points_into_defs_and_is_validated() -> None:
    schema = {
        "type": "object",
        "definitions": {"Item": {"type": "object", "properties": {"qty": {"type": "integer"}}}},
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/definitions/Item"}},
            "first": {"$ref": "#/properties/items/items"},
            "again": {"$ref": "#/properties/items"},
            "tree": {"$ref": "#"},
        },
    }
    parameters = tool_parameters(schema)
    refs = {name: p.get("$ref") for name, p in parameters["properties"].items()}
    assert refs == {
        "items": None,
        "first": "#/$defs/properties.items.items",
        "again": "#/$defs/properties.items",
        "tree": "#/$defs/root",
    }
    assert set(parameters["$defs"]) == {"Item", "properties.items.items", "properties.items", "root"}
    assert (
        _errors(schema, '{"again": [{"qty": "x"}]}')
        == 'arguments.again[0].qty must be integer, got the string "x"'
    )
    assert _errors(schema, '{"tree": {"first": {"qty": 1.5}}}') == (
        "arguments.tree.first.qty must be integer, got the number 1.5"
    )


def test_a_remote_or_dangling_reference_is_dropped_and_never_fetched() -> None:
    schema = {
        "$id": "https://example.invalid/root.json",
        "type": "object",
        "properties": {
            "remote": {"$ref": "https://example.invalid/other.json", "type": "string"},
            "dangling": {"$ref": "#/$defs/Missing"},
        },
    }
    parameters = tool_parameters(schema)
    assert parameters == {
        "type": "object",
        "properties": {"remote": {"type": "string"}, "dangling": {}},
    }
    assert _errors(schema, '{"remote": 1}') == "arguments.remote must be string, got the number 1"


def test_a_definition_and_a_def_of_one_name_both_stay_and_data_keywords_are_left_alone() -> None:
    schema = {
        "type": "object",
        "definitions": {"A": {"type": "string"}, "B": {"type": "integer"}, "C": {"type": "null"}},
        "$defs": {"A": {"type": "boolean"}, "C": {"type": "null"}},
        "properties": {
            "a": {"$ref": "#/definitions/A", "default": {"$ref": "#/nowhere"}},
            "b": {"$ref": "#/$defs/A"},
            "c": {"$ref": "#/definitions/C"},
        },
    }
    parameters = tool_parameters(schema)
    assert parameters["$defs"] == {
        "A": {"type": "boolean"},
        "C": {"type": "null"},
        "definitions.A": {"type": "string"},
        "B": {"type": "integer"},
    }
    assert parameters["properties"] == {
        "a": {"$ref": "#/$defs/definitions.A", "default": {"$ref": "#/nowhere"}},
        "b": {"$ref": "#/$defs/A"},
        "c": {"$ref": "#/$defs/C"},  # the same schema in both: one is enough
    }
    assert _errors(schema, '{"a": true, "b": "x"}') == (
        'arguments.a must be string, got true; arguments.b must be boolean, got the string "x"'
    )


def test_a_definition_whose_name_needs_escaping_is_referred_to_by_an_escaped_pointer() -> None:
    schema = {
        "type": "object",
        "$defs": {"a/b": {"type": "integer"}, "c~d e": {"type": "boolean"}},
        "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/c~0d%20e"}, "z": {"$ref": "#z"}},
    }
    parameters = tool_parameters(schema)
    assert parameters["properties"] == {
        "x": {"$ref": "#/$defs/a~1b"},
        "y": {"$ref": "#/$defs/c~0d%20e"},
        "z": {},  # an anchor nothing defines: dropped, not taken for the root
    }
    assert _errors(schema, '{"x": "s", "y": 1}') == (
        'arguments.x must be integer, got the string "s"; arguments.y must be boolean, got the number 1'
    )


def test_properties_named_like_keywords_are_walked_and_kept() -> None:
    # The names in `properties` (and the other name -> schema maps) are the server's, not keywords.
    schema = {
        "type": "object",
        "definitions": {"V": {"type": "string"}},
        "properties": {
            **{
                name: {"$ref": "#/definitions/V"}
                for name in ("default", "enum", "example", "examples", "const")
            },
            "$id": {"type": "integer", "$id": "https://example.com/id"},
        },
        "patternProperties": {"^x-": {"properties": {"default": {"$ref": "#/definitions/V"}}}},
        "dependentSchemas": {"$id": {"properties": {"enum": {"$ref": "#/definitions/V"}}}},
        "required": ["$id"],
    }
    parameters = tool_parameters(schema)
    assert parameters["properties"] == {
        **{name: {"$ref": "#/$defs/V"} for name in ("default", "enum", "example", "examples", "const")},
        "$id": {"type": "integer"},
    }
    assert parameters["patternProperties"] == {"^x-": {"properties": {"default": {"$ref": "#/$defs/V"}}}}
    assert parameters["dependentSchemas"] == {"$id": {"properties": {"enum": {"$ref": "#/$defs/V"}}}}
    assert _errors(schema, '{"$id": 1, "default": "a", "enum": 2}') == (
        "arguments.enum must be string, got the number 2"
    )


def test_text_blocks_are_joined_and_other_blocks_described() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" * 4).decode()
    result = CallToolResult(
        content=[
            TextContent(text="line one"),
            ImageContent(data=png, mime_type="image/png"),
            AudioContent(data=base64.b64encode(b"RIFF1234").decode(), mime_type="audio/wav"),
            EmbeddedResource(
                resource=BlobResourceContents(uri="file:///a.pdf", mime_type="application/pdf", blob=png)
            ),
            ResourceLink(name="log", uri="file:///log.txt", description="the build log"),
            TextContent(text="line two"),
        ]
    )
    assert result_value(result).splitlines() == [
        "line one",
        "[image: image/png, 32 bytes, not shown]",
        "[audio: audio/wav, 8 bytes, not shown]",
        "[resource file:///a.pdf (application/pdf): 32 bytes of binary data, not shown]",
        "[resource link: log file:///log.txt (the build log)]",
        "line two",
    ]


def test_structured_content_with_other_blocks_keeps_their_descriptions() -> None:
    result = CallToolResult(
        content=[TextContent(text='{"n": 1}'), ImageContent(data="AAAA", mime_type="image/gif")],
        structured_content={"n": 1},
    )
    assert result_value(result) == '{"n":1}\n[image: image/gif, 3 bytes, not shown]'
    assert result_value(result, structured=False) == '{"n": 1}\n[image: image/gif, 3 bytes, not shown]'
    # Only a wrapper is unwrapped: an object with a "result" key and more is the value itself.
    both = CallToolResult(content=[], structured_content={"result": 1, "other": 2})
    assert result_value(both, unwrap=True) == {"result": 1, "other": 2}


def test_an_error_result_rejects_the_call_with_its_text() -> None:
    with pytest.raises(RejectCall) as caught:
        result_value(CallToolResult(content=[TextContent(text="quota exceeded")], is_error=True))
    assert caught.value.message == "quota exceeded"
    with pytest.raises(RejectCall, match="without a message"):
        result_value(CallToolResult(content=[], is_error=True))


def test_an_error_result_with_only_structured_content_rejects_the_call_with_that_content() -> None:
    result = CallToolResult(
        content=[ImageContent(data="AAAA", mime_type="image/gif")],
        structured_content={"error": "quota exceeded", "retry_after": 30},
        is_error=True,
    )
    with pytest.raises(RejectCall) as caught:
        result_value(result)
    assert caught.value.message == (
        '{"error":"quota exceeded","retry_after":30}\n[image: image/gif, 3 bytes, not shown]'
    )


class _Server:
    name = "fake"

    async def call_tool(self, name: str, arguments: Any = None, *, progress: Any = None) -> CallToolResult:
        return CallToolResult(content=[TextContent(text=f"{name} called")])


def _build(*definitions: mcp_types.Tool, known: dict[bytes, Any] | None = None) -> list[Any]:
    server: Any = _Server()
    return build_tools(
        server, definitions, prefix=None, structured=True, timeout=None, on_error=None, known=known
    )


async def test_names_that_clash_once_made_valid_get_a_hash_and_calls_use_the_server_s() -> None:
    dotted, plain, slashed = (mcp_types.Tool(name=n, input_schema={}) for n in ("a.b", "a_b", "a/b"))
    tools = _build(dotted, plain, slashed)
    names = [t.name for t in tools]
    assert names[1] == "a_b"  # its own name: left as it is
    assert [n[:4] for n in names] == ["a_b_", "a_b", "a_b_"]
    assert len(set(names)) == 3
    model = FakeModelClient([reply(tool_calls=[(n, {}) for n in names]), reply("done")])
    result = await Agent(model, tools=tools).run("go")
    assert [r.output for r in result.tool_results] == ["a.b called", "a_b called", "a/b called"]
    assert [t.name for t in _build(dotted)] == ["a_b"]  # no clash: no hash


def test_a_listing_reuses_the_tools_whose_definitions_are_unchanged() -> None:
    known: dict[bytes, Any] = {}
    add = mcp_types.Tool(
        name="add", description="Add.", input_schema={"properties": {"a": {"type": "integer"}}}
    )
    echo = mcp_types.Tool(name="echo", description="Echo.", input_schema={})
    first = _build(add, echo, known=known)
    changed = mcp_types.Tool(name="echo", description="Echo it.", input_schema={})
    second = _build(add, changed, known=known)
    assert second[0] is first[0]
    assert second[1] is not first[1]
    assert second[1].description == "Echo it."
    assert len(known) == 2  # only the last listing's tools are kept


def test_tool_names_are_made_valid_for_model_apis() -> None:
    assert tool_name("get_weather", "wx") == "wx_get_weather"
    assert tool_name("repo/list files", None) == "repo_list_files"
    long_a, long_b = tool_name("a" * 70 + "x", None), tool_name("a" * 70 + "y", None)
    assert len(long_a) == len(long_b) == 64
    assert long_a != long_b


def test_connection_failures_name_the_server_and_keep_their_cause() -> None:
    closed = MCPError(-32000, "Connection closed")
    error = connection_error("files", ExceptionGroup("tg", [ExceptionGroup("inner", [closed])]), command="x")
    assert isinstance(error, MCPConnectionError)
    assert error.server == "files"
    assert str(error).startswith("MCP server 'files': the connection closed during the MCP handshake")
    assert error.__cause__ is closed
    lost = request_error("files", "tools/call 'read'", closed)
    assert isinstance(lost, MCPConnectionError)
    assert str(lost) == "MCP server 'files': the connection was lost during tools/call 'read'"
    timed_out = request_error("files", "tools/list", MCPError(-32001, "Request timed out"))
    assert isinstance(timed_out, MCPRequestError)
    assert str(timed_out) == "MCP server 'files': tools/list timed out"
