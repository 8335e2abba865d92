"""Each tool's parameters in order, so that code can call a tool with positional arguments.

A ``ToolInvoker`` is a plain callback: it says nothing about the tools behind it. ``ParameterizedInvoker``
wraps one together with each tool's parameter names, in the order of its JSON schema's ``properties`` (the
order CodeAct's tools guide lists them, ``get_weather(city, days=1)``); ``ProcessSandbox`` sends that order
to the child, where ``get_weather("Paris", 3)`` becomes ``{"city": "Paris", "days": 3}``. With an invoker
that has no ``parameters``, code passes keywords or one dict, as before.

The names also say whether the first parameter takes an object (``ParameterNames.first_takes_object``):
then a dict passed alone, ``save({"a": 1})``, is that parameter's value, never the arguments themselves.

Values only; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ..model.tools import ToolSpec
from ..result import ToolResult
from .executor import ToolInvoker

__all__ = [
    "ParameterNames",
    "ParameterizedInvoker",
    "first_takes_object",
    "parameter_order",
    "tool_parameters",
]

_MAX_REF_DEPTH = 8
"""How many ``$ref`` hops ``first_takes_object`` follows (a recursive type points at itself)."""


class ParameterNames(tuple[str, ...]):
    """A tool's parameter names in order (a tuple, equal to the plain one) and ``first_takes_object``: whether
    its first parameter's schema admits an object.

    A tuple, so that every reader of the order reads it as before (``exec_frame`` sends both to the child).

    >>> names = ParameterNames(["record", "overwrite"], first_takes_object=True)
    >>> names == ("record", "overwrite"), names.first_takes_object
    (True, True)
    """

    first_takes_object: bool

    def __new__(cls, names: Iterable[str] = (), *, first_takes_object: bool = False) -> ParameterNames:
        """The names, in order, and whether the first takes an object."""
        self = super().__new__(cls, (str(name) for name in names))
        self.first_takes_object = first_takes_object and len(self) > 0
        return self


def _frozen_order(value: Mapping[str, Iterable[str]]) -> Mapping[str, ParameterNames]:
    return {
        str(name): ParameterNames(params, first_takes_object=getattr(params, "first_takes_object", False))
        for name, params in value.items()
    }


@attrs.frozen
class ParameterizedInvoker:
    """A ``ToolInvoker`` (``invoke``) that also knows each tool's parameter names in order (``parameters``).

    >>> async def invoke(name: str, arguments: dict[str, Any]) -> ToolResult: ...
    >>> ParameterizedInvoker(invoke, {"get_weather": ["city", "days"]}).parameters
    {'get_weather': ('city', 'days')}
    """

    invoke: ToolInvoker
    parameters: Mapping[str, ParameterNames] = attrs.field(converter=_frozen_order)

    async def __call__(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run the call through ``invoke``."""
        return await self.invoke(name, arguments)

    @classmethod
    def for_specs(cls, invoke: ToolInvoker, specs: Iterable[ToolSpec]) -> ParameterizedInvoker:
        """``invoke`` with the parameter order of these tool specs (see ``parameter_order``), each noting
        whether its first parameter takes an object (``first_takes_object``)."""
        return cls(
            invoke,
            {
                spec.name: ParameterNames(parameter_order(spec), first_takes_object=first_takes_object(spec))
                for spec in specs
            },
        )


def parameter_order(spec: ToolSpec) -> tuple[str, ...]:
    """The tool's parameter names: the keys of its schema's ``properties``, in order.

    >>> parameter_order(ToolSpec("f", "", {"type": "object", "properties": {"b": {}, "a": {}}}))
    ('b', 'a')
    """
    schema = spec.parameters if isinstance(spec.parameters, Mapping) else {}
    properties = schema.get("properties")
    return tuple(str(name) for name in properties) if isinstance(properties, Mapping) else ()


def first_takes_object(spec: ToolSpec) -> bool:
    """Whether the first parameter's schema admits a JSON object (also through ``anyOf``, a type list or a
    ``$ref`` into the schema's ``$defs``): then code's lone dict is that parameter's value.

    >>> def spec(first: dict[str, Any]) -> ToolSpec:
    ...     return ToolSpec("f", "", {"type": "object", "properties": {"p": first}})
    >>> first_takes_object(spec({"type": "object"})), first_takes_object(spec({"type": "string"}))
    (True, False)
    """
    schema = spec.parameters if isinstance(spec.parameters, Mapping) else {}
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return False
    definitions = schema.get("$defs")
    return _admits_object(
        next(iter(properties.values())), definitions if isinstance(definitions, Mapping) else {}, 0
    )


def _admits_object(schema: Any, definitions: Mapping[str, Any], depth: int) -> bool:
    if not isinstance(schema, Mapping) or depth > _MAX_REF_DEPTH:
        return False
    kind = schema.get("type")
    if kind == "object" or (isinstance(kind, list) and "object" in kind):
        return True
    ref = schema.get("$ref")
    if (
        isinstance(ref, str)
        and ref.startswith("#/$defs/")
        and _admits_object(definitions.get(ref.removeprefix("#/$defs/")), definitions, depth + 1)
    ):
        return True
    return any(
        isinstance(members, list) and any(_admits_object(m, definitions, depth + 1) for m in members)
        for members in (schema.get("anyOf"), schema.get("oneOf"), schema.get("allOf"))
    )


def tool_parameters(tools: ToolInvoker) -> Mapping[str, ParameterNames]:
    """The parameter order ``tools`` knows (a ``ParameterizedInvoker``'s ``parameters``), else nothing."""
    parameters = getattr(tools, "parameters", None)
    if not isinstance(parameters, Mapping):
        return {}
    return {
        name: ParameterNames(params, first_takes_object=getattr(params, "first_takes_object", False))
        for name, params in parameters.items()
        if isinstance(name, str)
        and isinstance(params, tuple | list)
        and all(isinstance(p, str) for p in params)
    }
