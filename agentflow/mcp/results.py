"""An MCP ``CallToolResult`` as the value an agentflow tool returns (and so the text the model reads).

- ``isError``: the call fails with ``RejectCall`` carrying the result's text (its structured content as JSON
  when it has no text block), so the model gets the server's message as its ``TOOL_ERROR`` (what MCP means by
  it: an error the model may correct) whatever the tool's ``on_error``;
- structured content, when the result has some and ``structured`` is on (the default): that JSON value,
  which the model reads as compact JSON and CodeAct code gets as a Python value. The text blocks are left out:
  MCP asks servers to repeat the structured result there as text, for clients without structured content.
  A value the server wrapped as ``{"result": value}`` because it is no object (the ``mcp`` package's servers
  do that for a tool returning a number, a string or a list) is unwrapped when ``unwrap`` says so;
- otherwise the text blocks, joined with newlines;
- other blocks are described in one line each, in their place, since a tool result is text: an image or audio
  clip by its type and size (``[image: image/png, 12034 bytes, not shown]``), an embedded text resource by
  its URI followed by its text, a binary one by its URI, type and size, a resource link by its name and URI.
  Nothing is dropped without a word. (With structured content, these lines follow its JSON.)

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)

from ..tools.failures import RejectCall
from ..tools.outcome import output_text

__all__ = ["describe_block", "result_value", "wrapped_result_schema"]


def result_value(result: CallToolResult, *, structured: bool = True, unwrap: bool = False) -> Any:
    """The value a tool returns for ``result`` (see the module); raises ``RejectCall`` for an ``isError`` one.

    >>> from mcp_types import TextContent
    >>> result_value(CallToolResult(content=[TextContent(text="21 C"), TextContent(text="sunny")]))
    '21 C\\nsunny'
    >>> result_value(CallToolResult(content=[TextContent(text='{"t": 21}')], structured_content={"t": 21}))
    {'t': 21}
    >>> wrapped = CallToolResult(content=[TextContent(text="3")], structured_content={"result": 3})
    >>> result_value(wrapped, unwrap=True)
    3
    """
    if result.is_error:
        lines = _lines(result.content)
        if result.structured_content is not None and not any(
            isinstance(b, TextContent) for b in result.content
        ):
            lines.insert(0, output_text(result.structured_content))  # the only account of the error there is
        message = "\n".join(lines)
        raise RejectCall(message or "the MCP tool reported an error without a message")
    if structured and result.structured_content is not None:
        value = result.structured_content
        if unwrap and isinstance(value, dict) and len(value) == 1 and "result" in value:
            value = value["result"]
        others = [describe_block(b) for b in result.content if not isinstance(b, TextContent)]
        if not others:
            return value
        return "\n".join([output_text(value), *others])
    return "\n".join(_lines(result.content))


def wrapped_result_schema(output_schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The schema of the value inside an output schema that wraps it as ``{"result": value}`` (its only
    property; ``$defs`` kept), or None when ``output_schema`` is no such wrapper.

    >>> wrapped_result_schema({"type": "object", "properties": {"result": {"type": "integer"}},
    ...                        "required": ["result"]})
    {'type': 'integer'}
    >>> print(wrapped_result_schema({"type": "object", "properties": {"city": {"type": "string"}}}))
    None
    """
    if output_schema is None:
        return None
    properties = output_schema.get("properties")
    if not isinstance(properties, Mapping) or list(properties) != ["result"]:
        return None
    inner = properties["result"]
    if not isinstance(inner, Mapping):
        return None
    defs = output_schema.get("$defs")
    return {**inner, "$defs": defs} if isinstance(defs, Mapping) else dict(inner)


def _lines(content: list[ContentBlock]) -> list[str]:
    return [b.text if isinstance(b, TextContent) else describe_block(b) for b in content]


def describe_block(block: ContentBlock) -> str:
    """The text that stands for a content block in a tool result (a text block: its text).

    >>> from mcp_types import ImageContent
    >>> describe_block(ImageContent(data="iVBORw0KGgo=", mime_type="image/png"))
    '[image: image/png, 8 bytes, not shown]'
    """
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        return f"[{block.type}: {block.mime_type}, {_decoded_size(block.data)} bytes, not shown]"
    if isinstance(block, EmbeddedResource):
        contents = block.resource
        kind = f" ({contents.mime_type})" if contents.mime_type else ""
        if isinstance(contents, BlobResourceContents):
            size = _decoded_size(contents.blob)
            return f"[resource {contents.uri}{kind}: {size} bytes of binary data, not shown]"
        return f"[resource {contents.uri}{kind}]\n{contents.text}"
    if isinstance(block, ResourceLink):
        details = ", ".join(x for x in (block.mime_type, block.description) if x)
        return f"[resource link: {block.name} {block.uri}{f' ({details})' if details else ''}]"
    return f"[{getattr(block, 'type', type(block).__name__)} content, not shown]"  # a newer protocol's block


def _decoded_size(data: str) -> int:
    """The size of base64 ``data`` once decoded, without decoding it."""
    text = data.rstrip("=")
    return len(text) * 3 // 4
