"""A tool call made from CodeAct code, completed before it is validated: strict tools' omitted arguments.

A strict tool's schema (OpenAI strict mode) lists every property as required and makes the optional ones
nullable: a ``null`` there means "the default" (see ``tools.schema_shapes.object_shape``). That rule is for
the provider, which checks native tool calls against the schema; code calls a tool as a Python function,
``find(query="x")``, and leaves out what it does not need. ``complete_arguments`` fills in what the code left
out, so that the run's ``ToolExecutor`` validates the call as it validates a native one:

- a top-level parameter the function does not need (optional in ``Tool.plain_parameters``) gets the
  plain schema's default, or ``null`` when it shows none;
- any other omitted property whose strict schema allows ``null``, at any depth, gets ``null`` (for a tool
  made by ``@tool`` a ``null`` there is dropped before the function is called, so the default applies; for
  a hand-written strict schema, ``null`` is how strict mode spells "not given").

Nothing else is touched, and a tool that is not strict is left alone: its schema's ``required`` list
already says what may be left out. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..tools.schema_shapes import allows_null
from ..tools.tool import Tool

__all__ = ["allows_null", "complete_arguments"]

_MAX_DEPTH: Final = 32
"""How deep into the arguments omitted properties are filled (recursive types can nest without end)."""


def complete_arguments(tool: Tool[..., Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` of a call to ``tool`` from code, with a strict tool's omitted properties filled in (see
    the module docstring); the same dict when there is nothing to fill.

    >>> from agentflow.tools import tool
    >>> @tool(strict=True)
    ... def find(query: str, limit: int | None = 10, lang: str = "en") -> list[str]:
    ...     '''Find things.'''
    ...     return []
    >>> complete_arguments(find, {"query": "x"})
    {'query': 'x', 'limit': 10, 'lang': 'en'}
    """
    schema = tool.spec.parameters
    if tool.spec.strict is not True or not isinstance(schema, Mapping):
        return arguments
    definitions = schema.get("$defs")
    filler = _Filler(definitions if isinstance(definitions, Mapping) else {})
    filled = dict(arguments)
    plain = tool.plain_parameters
    if isinstance(plain, Mapping):
        optional = _optional_defaults(plain)
        for name, default in optional.items():
            if name not in filled:
                filled[name] = default
    filler.fill(filled, schema, 0)
    return filled


def _optional_defaults(plain: Mapping[str, Any]) -> dict[str, Any]:
    """The optional properties of a plain object schema, each with its default (``None`` without one)."""
    properties = plain.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    required = set(plain.get("required") or ())
    return {
        name: prop.get("default") if isinstance(prop, Mapping) else None
        for name, prop in properties.items()
        if name not in required
    }


class _Filler:
    """Walks arguments along their strict schema, filling omitted nullable properties with ``None``."""

    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self._definitions = definitions

    def _resolved(self, schema: Any) -> Any:
        ref = schema.get("$ref") if isinstance(schema, Mapping) else None
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return self._definitions.get(ref.removeprefix("#/$defs/"), schema)
        return schema

    def fill(self, value: Any, schema: Any, depth: int) -> None:
        if depth > _MAX_DEPTH:
            return
        schema = self._resolved(schema)
        if not isinstance(schema, Mapping):
            return
        if isinstance(value, dict):
            properties = schema.get("properties")
            if isinstance(properties, Mapping):
                for name in schema.get("required") or ():
                    if name not in value and allows_null(properties.get(name)):
                        value[name] = None
                for name, item in value.items():
                    self.fill(item, properties.get(name), depth + 1)
                return
        elif isinstance(value, list) and "items" in schema:
            for item in value:
                self.fill(item, schema["items"], depth + 1)
            return
        for key in ("anyOf", "oneOf"):
            members = schema.get(key)
            if isinstance(members, list):
                # The member a value is meant for: the only one of its kind (``X | None``: the X).
                kind = "object" if isinstance(value, dict) else "array" if isinstance(value, list) else None
                fitting = [m for m in members if kind is not None and self._kind(m) == kind]
                if len(fitting) == 1:
                    self.fill(value, fitting[0], depth + 1)

    def _kind(self, schema: Any) -> str | None:
        schema = self._resolved(schema)
        if not isinstance(schema, Mapping):
            return None
        kind = schema.get("type")
        if isinstance(kind, str):
            return kind
        return "object" if "properties" in schema else None
