"""MCP tool definitions as agentflow ``Tool``\\ s: their names, schemas, and the functions calling the server.

Each tool keeps the server's schema (made ready by ``schema.tool_parameters``), so agentflow validates the
model's arguments against it before anything is sent; a schema its validator cannot compile (a regular
expression Python does not read, say) leaves the arguments to the server's own validation, with a warning.
The model-facing name is the server's, with the server's ``tool_prefix`` and ``_`` before it, and any
character a model API refuses in a name (``.``, ``/``…) replaced with ``_`` (and a hash of the server's name
added when that makes it another tool's: ``a.b`` beside ``a_b``); the call uses the server's own name. A
listing that finds a tool's definition unchanged reuses its ``Tool``. Progress the server reports during a
call becomes ``ToolProgress`` events, when anyone listens.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

import mcp_types
import orjson

from ..model.tools import ToolSpec
from ..tools.arguments import ArgumentParser
from ..tools.context import ToolContext
from ..tools.failures import ToolErrorPolicy
from ..tools.tool import Tool, ToolReturns
from .errors import MCPServerError
from .results import result_value, wrapped_result_schema
from .schema import tool_parameters

if TYPE_CHECKING:
    from mcp.shared.dispatcher import ProgressFnT

    from .server import MCPServerBase

__all__ = ["CONTEXT_PARAMETER", "ToolFilter", "build_tools", "tool_name"]

_log = logging.getLogger("agentflow.mcp")

ToolFilter = Callable[[mcp_types.Tool], bool]
"""Whether to offer one of the server's tools (given its MCP definition: name, description, annotations…)."""

CONTEXT_PARAMETER: Final = "agentflow_mcp_context"
"""The parameter of the tools' functions that receives the ``ToolContext``: a name no server should use for an
argument (one that does gets tools without progress forwarding)."""

_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME: Final = 64


def tool_name(name: str, prefix: str | None) -> str:
    """The name the model calls the server's tool ``name`` by.

    >>> tool_name("search", "docs"), tool_name("files.read", None)
    ('docs_search', 'files_read')
    >>> len(tool_name("x" * 80, None))
    64
    """
    full = name if prefix is None else f"{prefix}_{name}"
    safe = _INVALID.sub("_", full) or "_"
    if len(safe) <= _MAX_NAME:
        return safe
    # Cut, with a hash of the whole so that two long names sharing a start stay apart.
    return _hashed(safe, full)


def _hashed(safe: str, full: str) -> str:
    """``safe`` (cut to fit) with a hash of ``full``, the name as the server spells it, prefixed."""
    digest = hashlib.sha256(full.encode()).hexdigest()[:8]
    return f"{safe[: _MAX_NAME - 9]}_{digest}"


def build_tools(
    server: MCPServerBase,
    definitions: Iterable[mcp_types.Tool],
    *,
    prefix: str | None,
    structured: bool,
    timeout: float | None,
    on_error: ToolErrorPolicy | None,
    known: dict[bytes, Tool[..., Any]] | None = None,
) -> list[Tool[..., Any]]:
    """One agentflow ``Tool`` per definition; ``MCPServerError`` if two end up with the same name.

    Two names that differ only by characters replaced with ``_`` (``a.b`` and ``a_b``) stay apart: each one
    that was changed gets a hash of the server's name at its end (``a_b_1c2d3e4f``), the other keeps its own.
    ``known`` (updated in place) holds the tools of the last listing by their definitions: one unchanged since
    is reused, not built again.
    """
    definitions = list(definitions)
    names = [tool_name(d.name, prefix) for d in definitions]
    counts = Counter(names)
    if len(counts) < len(names):
        for i, (definition, name) in enumerate(zip(definitions, names, strict=True)):
            full = definition.name if prefix is None else f"{prefix}_{definition.name}"
            if counts[name] > 1 and name != full:
                names[i] = _hashed(name, full)
    tools: dict[str, Tool[..., Any]] = {}
    remote: dict[str, str] = {}
    built: dict[bytes, Tool[..., Any]] = {}
    for definition, name in zip(definitions, names, strict=True):
        if name in tools:
            raise MCPServerError(
                server.name,
                f"its tools {remote[name]!r} and {definition.name!r} would both be called {name!r}; "
                "leave one out with exclude=[...]",
            )
        remote[name] = definition.name
        key = _key(definition, name) if known is not None else None
        found = known.get(key) if known is not None and key is not None else None
        if found is None:
            found = _tool(server, definition, name, structured=structured, timeout=timeout, on_error=on_error)
        if key is not None:
            built[key] = found
        tools[name] = found
    if known is not None:
        known.clear()
        known.update(built)
    return list(tools.values())


def _key(definition: mcp_types.Tool, name: str) -> bytes | None:
    """What a built tool depends on of its definition, as bytes to look it up by (None: not JSON)."""
    try:
        return orjson.dumps(
            [
                name,
                definition.name,
                definition.title,
                definition.description,
                definition.input_schema,
                definition.output_schema,
            ]
        )
    except TypeError:  # orjson.JSONEncodeError: a schema holding something JSON has not
        return None


def _tool(
    server: MCPServerBase,
    definition: mcp_types.Tool,
    name: str,
    *,
    structured: bool,
    timeout: float | None,
    on_error: ToolErrorPolicy | None,
) -> Tool[..., Any]:
    parameters = tool_parameters(definition.input_schema)
    description = definition.description or definition.title or ""
    try:
        parser = ArgumentParser(name, parameters, None)
    except Exception as exc:  # a schema fastjsonschema cannot compile: anything at all may be the cause
        _log.warning(
            "MCP server %r: tool %r has a schema agentflow cannot validate against (%s: %s); its arguments "
            "are checked by the server only",
            server.name,
            definition.name,
            type(exc).__name__,
            exc,
        )
        parser = ArgumentParser(name, {"type": "object"}, None)
    returns = None
    wrapped = wrapped_result_schema(definition.output_schema)
    if structured and definition.output_schema is not None:
        returns = ToolReturns(schema=wrapped if wrapped is not None else dict(definition.output_schema))
    unwrap = wrapped is not None
    properties = parameters.get("properties")
    takes_context = not (isinstance(properties, dict) and CONTEXT_PARAMETER in properties)
    fn: Callable[..., Any] = (
        _ProgressCall(server, definition.name, structured, unwrap)
        if takes_context
        else _Call(server, definition.name, structured, unwrap)
    )
    return Tool(
        ToolSpec(name, description, parameters),
        fn,
        context_parameter=CONTEXT_PARAMETER if takes_context else None,
        timeout=timeout,
        on_error=on_error,
        returns=returns,
        parser=parser,
    )


class _Call:
    """The function of a tool: calls the server's tool ``remote`` with the validated arguments (``self`` is
    positional-only: a tool may have an argument named ``self``)."""

    __slots__ = ("_remote", "_server", "_structured", "_unwrap")

    def __init__(self, server: MCPServerBase, remote: str, structured: bool, unwrap: bool) -> None:
        self._server = server
        self._remote = remote
        self._structured = structured
        self._unwrap = unwrap

    async def __call__(self, /, **arguments: Any) -> Any:
        """Call the MCP server's tool."""
        result = await self._server.call_tool(self._remote, arguments)
        return result_value(result, structured=self._structured, unwrap=self._unwrap)

    def __repr__(self) -> str:
        return f"<MCP tool {self._remote!r} of {self._server.name!r}>"


class _ProgressCall(_Call):
    """``_Call`` that forwards the server's progress notifications to the run's events."""

    __slots__ = ()

    async def __call__(  # type: ignore[override]
        self, /, agentflow_mcp_context: ToolContext, **arguments: Any
    ) -> Any:
        """Call the MCP server's tool."""
        # Without a listener, no progress is asked for: the server sends none.
        progress = _forwarder(agentflow_mcp_context) if agentflow_mcp_context.has_listeners() else None
        result = await self._server.call_tool(self._remote, arguments, progress=progress)
        return result_value(result, structured=self._structured, unwrap=self._unwrap)


def _forwarder(context: ToolContext) -> ProgressFnT:
    async def forward(progress: float, total: float | None, message: str | None) -> None:
        if message is None:
            message = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        # RuntimeError: a notification that came after the call ended (timed out, cancelled); nobody waits.
        with contextlib.suppress(RuntimeError):
            await context.emit_progress(message, {"progress": progress, "total": total})

    return forward
