"""Each tool's parameters in order, so that code can call a tool with positional arguments.

A ``ToolInvoker`` is a plain callback: it says nothing about the tools behind it. ``ParameterizedInvoker``
wraps one together with each tool's parameter names, in the order of its JSON schema's ``properties`` (the
order CodeAct's tools guide lists them, ``get_weather(city, days=1)``); ``ProcessSandbox`` sends that order
to the child, where ``get_weather("Paris", 3)`` becomes ``{"city": "Paris", "days": 3}``. With an invoker
that has no ``parameters``, code passes keywords or one dict, as before.

Values only; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ..model.tools import ToolSpec
from ..result import ToolResult
from .executor import ToolInvoker

__all__ = ["ParameterizedInvoker", "parameter_order", "tool_parameters"]


def _frozen_order(value: Mapping[str, Iterable[str]]) -> Mapping[str, tuple[str, ...]]:
    return {str(name): tuple(str(p) for p in params) for name, params in value.items()}


@attrs.frozen
class ParameterizedInvoker:
    """A ``ToolInvoker`` (``invoke``) that also knows each tool's parameter names in order (``parameters``).

    >>> async def invoke(name: str, arguments: dict[str, Any]) -> ToolResult: ...
    >>> ParameterizedInvoker(invoke, {"get_weather": ["city", "days"]}).parameters
    {'get_weather': ('city', 'days')}
    """

    invoke: ToolInvoker
    parameters: Mapping[str, tuple[str, ...]] = attrs.field(converter=_frozen_order)

    async def __call__(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run the call through ``invoke``."""
        return await self.invoke(name, arguments)

    @classmethod
    def for_specs(cls, invoke: ToolInvoker, specs: Iterable[ToolSpec]) -> ParameterizedInvoker:
        """``invoke`` with the parameter order of these tool specs (see ``parameter_order``)."""
        return cls(invoke, {spec.name: parameter_order(spec) for spec in specs})


def parameter_order(spec: ToolSpec) -> tuple[str, ...]:
    """The tool's parameter names: the keys of its schema's ``properties``, in order.

    >>> parameter_order(ToolSpec("f", "", {"type": "object", "properties": {"b": {}, "a": {}}}))
    ('b', 'a')
    """
    schema = spec.parameters if isinstance(spec.parameters, Mapping) else {}
    properties = schema.get("properties")
    return tuple(str(name) for name in properties) if isinstance(properties, Mapping) else ()


def tool_parameters(tools: ToolInvoker) -> Mapping[str, tuple[str, ...]]:
    """The parameter order ``tools`` knows (a ``ParameterizedInvoker``'s ``parameters``), else nothing."""
    parameters = getattr(tools, "parameters", None)
    if not isinstance(parameters, Mapping):
        return {}
    return {
        name: tuple(params)
        for name, params in parameters.items()
        if isinstance(name, str)
        and isinstance(params, tuple | list)
        and all(isinstance(p, str) for p in params)
    }
