"""The tools as CodeAct's prompt describes them: for each tool a call line, its description, its parameters
and what it returns, read from its JSON schemas and written as Python-flavoured types.

A model writing code needs to know what a call takes and what comes back, in the words of the language it
writes: ``list of int``, ``"C" or "F"``, ``dict {name: str, children: list of Node}``. Schemas are read as
they are (no ``title`` or ``additionalProperties`` noise reaches the text); a recursive type is named once
and defined in a ``where`` line. A strict tool is described as code may call it: its optional parameters as
optional, with their defaults (``Tool.plain_parameters``; code's calls to it are completed by
``codeact_calls``). Pure text functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import orjson

from ..model.tools import ToolSpec
from ..sandbox.code_api import callable_by_name
from ..tools.tool import Tool
from .codeact_calls import allows_null

__all__ = ["NO_TOOLS", "tool_text", "tools_text", "type_text"]

NO_TOOLS: Final = "No tools are available: solve the task with Python alone."
"""What the prompt says instead of the tools when there are none."""

_PY_TYPES: Final = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
    "null": "None",
}
_IGNORED_FOR_IDENTITY: Final = frozenset({"description", "default", "title", "$defs"})
"""Keys a schema may add to a definition it is a copy of (its own description, its default; a return value's
schema carries the definitions at its root)."""


def tools_text(tools: Iterable[Tool[..., Any] | ToolSpec]) -> str:
    """The tools of a CodeAct prompt, one ``tool_text`` each, under a heading (or ``NO_TOOLS``)."""
    texts = [tool_text(t) for t in tools]
    return "Tools you can call from your code:\n" + "\n".join(texts) if texts else NO_TOOLS


def tool_text(tool: Tool[..., Any] | ToolSpec) -> str:
    """One tool as text: a call line, its description, a line per parameter, what it returns, and a
    ``where`` line per recursive type these mention.

    A ``ToolSpec`` has no return description; a ``Tool`` has one when its annotation or docstring says.

    >>> print(tool_text(ToolSpec("forecast", "Weather ahead.", {"type": "object", "properties": {
    ...     "city": {"type": "string"}, "days": {"type": "integer", "default": 3}}, "required": ["city"]})))
    - forecast(city, days=3)
      Weather ahead.
      city: str, required
      days: int, default 3
    """
    spec = tool.spec if isinstance(tool, Tool) else tool
    plain = tool.plain_parameters if isinstance(tool, Tool) else None
    schema: Mapping[str, Any] = plain if plain is not None else spec.parameters
    if not isinstance(schema, Mapping):
        schema = {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = [r for r in schema.get("required") or () if isinstance(r, str)]
    left_out: set[str] = set()
    if plain is None and spec.strict is True:
        # A hand-written strict schema: a nullable property is one code may leave out (it is sent as null).
        left_out = {name for name in required if allows_null(properties.get(name))}
        required = [name for name in required if name not in left_out]
    returns = tool.returns if isinstance(tool, Tool) else None
    definitions = _definitions(schema, returns.schema if returns is not None else None)
    types = _Types(definitions)

    lines = [f"- {_call_example(spec.name, properties, required, left_out)}"]
    if spec.description.strip():
        lines.extend(f"  {line}" for line in spec.description.strip().splitlines())
    for name, prop in properties.items():
        prop = prop if isinstance(prop, Mapping) else {}
        facts = [types.text(prop), "required" if name in required else "optional"]
        if name in left_out:
            facts[-1] = "optional"
        elif name not in required and "default" in prop:
            facts[-1] = f"default {_literal(prop['default'])}"
        lines.append(f"  {name}: {', '.join(facts)}{_sentence(prop.get('description'))}")
    if returns is not None:
        kind = types.text(returns.schema) if returns.schema is not None else "any"
        if kind != "any":
            lines.append(f"  returns: {kind}{_sentence(returns.description)}")
        elif returns.description.strip():
            lines.append(f"  returns: {' '.join(returns.description.split())}")
    for name, definition in definitions.items():
        lines.append(f"  where {name} is {types.text(definition, expand=True)}")
    return "\n".join(lines)


def type_text(schema: Mapping[str, Any]) -> str:
    """One JSON schema written as the tools guide writes a parameter's type, followed by a ``where`` line
    for each recursive type it names (from its ``$defs``): how CodeAct tells the model the type of its final
    answer.

    >>> type_text({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer",
    ...     "default": 3}}, "required": ["city"]})
    'dict {city: str, days: int = 3}'
    >>> print(type_text({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object", "properties": {
    ...     "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}}))
    Node
      where Node is dict {children: list of Node (optional)}
    """
    definitions = _definitions(schema)
    types = _Types(definitions)
    lines = [types.text(schema)]
    lines.extend(f"  where {name} is {types.text(d, expand=True)}" for name, d in definitions.items())
    return "\n".join(lines)


def _sentence(description: Any) -> str:
    """A description appended to a line: ``". The city."``, or nothing."""
    if isinstance(description, str) and description.strip():
        return f". {' '.join(description.split())}"
    return ""


def _definitions(*schemas: Any) -> dict[str, Any]:
    """The ``$defs`` of the parameters' and the return value's schemas, merged (one class, one name)."""
    merged: dict[str, Any] = {}
    for schema in schemas:
        found = schema.get("$defs") if isinstance(schema, Mapping) else None
        if isinstance(found, Mapping):
            for name, definition in found.items():
                merged.setdefault(name, definition)
    return merged


def _literal(value: Any) -> str:
    """A JSON value written as a Python literal (``true`` → ``True``…), for defaults and enums."""
    if value is None or isinstance(value, bool):
        return repr(value)
    return orjson.dumps(value, default=repr).decode()


def _call_example(
    name: str, properties: Mapping[str, Any], required: Sequence[str], left_out: set[str]
) -> str:
    if callable_by_name(name):
        parts = []
        for prop_name, schema in properties.items():
            if prop_name in required:
                parts.append(prop_name)
            elif prop_name in left_out:
                parts.append(f"{prop_name}=None")
            elif isinstance(schema, Mapping) and "default" in schema:
                parts.append(f"{prop_name}={_literal(schema['default'])}")
            else:
                parts.append(f"{prop_name}=...")
        return f"{name}({', '.join(parts)})"
    keys = ", ".join(f"{orjson.dumps(prop_name).decode()}: ..." for prop_name in properties)
    return f"call_tool({orjson.dumps(name).decode()}, {{{keys}}})"


class _Types:
    """Writes JSON schemas as short Python-flavoured types, naming the tool's recursive definitions."""

    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self._definitions = definitions
        self._identities = {name: _identity(d) for name, d in definitions.items()}

    def text(self, schema: Any, *, expand: bool = False) -> str:
        """``schema`` as a type: ``str``, ``list of int``, ``"C" or "F"``, ``dict {a: int, b: str = "x"}``;
        a copy of a definition as its name, unless ``expand`` (the definition's own ``where`` line)."""
        if not isinstance(schema, Mapping):
            return "any"
        if not expand and self._identities:
            identity = _identity(schema)
            for name, known in self._identities.items():
                if identity == known:
                    return name
        if "enum" in schema and isinstance(schema["enum"], list):
            return " or ".join(_literal(v) for v in schema["enum"]) or "any"
        if "const" in schema:
            return _literal(schema["const"])
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return ref.rsplit("/", 1)[-1]
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return " or ".join(dict.fromkeys(self.text(option) for option in options))
        kind = schema.get("type")
        if isinstance(kind, list):
            return " or ".join(self.text({**schema, "type": k}, expand=True) for k in kind) or "any"
        if kind == "array":
            items = schema.get("items")
            return f"list of {self.text(items)}" if isinstance(items, Mapping) and items else "list"
        if kind == "object" or (kind is None and isinstance(schema.get("properties"), Mapping)):
            return self._object(schema)
        if kind == "string" and isinstance(schema.get("format"), str):
            return f"str ({schema['format']})"
        return _PY_TYPES.get(kind, "any") if isinstance(kind, str) else "any"

    def _object(self, schema: Mapping[str, Any]) -> str:
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and properties:
            required = set(schema.get("required") or ())
            fields = []
            for name, prop in properties.items():
                field = f"{name}: {self.text(prop)}"
                notes = []
                if name not in required:
                    if isinstance(prop, Mapping) and "default" in prop:
                        field += f" = {_literal(prop['default'])}"
                    else:
                        notes.append("optional")
                description = prop.get("description") if isinstance(prop, Mapping) else None
                if isinstance(description, str) and description.strip():
                    notes.append(" ".join(description.split()))
                fields.append(f"{field} ({'; '.join(notes)})" if notes else field)
            return "dict {" + ", ".join(fields) + "}"
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return f"dict of {self.text(extra)}"
        return "dict"


def _identity(schema: Any) -> Any:
    """What makes a schema the same type as another: itself less descriptions, defaults and titles."""
    if not isinstance(schema, Mapping):
        return schema
    return {k: v for k, v in schema.items() if k not in _IGNORED_FOR_IDENTITY}
