"""Tool specifications and tool choice, as the model sees them (no execution here).

Both types also read the wire shapes users tend to pass instead (``"auto"``, a Chat or Responses function
tool mapping) through ``coerce``: the one place where those shorthands become typed values, shared by
``ChatParameters`` and the agent's Chat client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

__all__ = ["ToolChoice", "ToolSpec"]

_FUNCTION_TOOL = "{'type': 'function', 'function': {'name': …, 'parameters': {…}}}"


def _empty_object_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


@attrs.frozen
class ToolSpec:
    """A function tool offered to the model: name, description and a JSON schema for its arguments.

    >>> ToolSpec("get_weather", "Weather for a city",
    ...          {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    ... # doctest: +ELLIPSIS
    ToolSpec(name='get_weather', ...)
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = attrs.field(factory=_empty_object_schema)
    strict: bool | None = None

    @classmethod
    def coerce(cls, value: ToolSpec | Mapping[str, Any]) -> ToolSpec:
        """A ``ToolSpec``, or one read from a function tool mapping in the Chat Completions shape
        (``{"type": "function", "function": {name, description, parameters, strict}}``) or the flat
        Responses shape (``{"type": "function", name, …}``).

        Raises ``TypeError`` for anything else (hosted tools such as ``{"type": "web_search"}`` have no
        ``ToolSpec`` form) and ``ValueError`` for a function tool without a name.

        >>> ToolSpec.coerce({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}})
        ToolSpec(name='f', description='', parameters={'type': 'object'}, strict=None)
        """
        if isinstance(value, ToolSpec):
            return value
        if not isinstance(value, Mapping) or value.get("type", "function") != "function":
            raise TypeError(
                f"a tool must be a ToolSpec or a function tool mapping such as {_FUNCTION_TOOL}, "
                f"not {value!r}"
            )
        function = value.get("function")
        fields = function if isinstance(function, Mapping) else value
        name = fields.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"a function tool needs a name, got {dict(value)!r}")
        description = fields.get("description")
        parameters = fields.get("parameters")
        strict = fields.get("strict")
        return cls(
            name,
            description if isinstance(description, str) else "",
            dict(parameters) if isinstance(parameters, Mapping) else _empty_object_schema(),
            strict if isinstance(strict, bool) else None,
        )


# "auto", "none" and "required" as shared values (frozen, so one of each serves every caller); filled in
# below the class.
_BY_MODE: dict[str, ToolChoice] = {}


@attrs.frozen
class ToolChoice:
    """How the model may use tools: ``auto``, ``none``, ``required``, or one specific function.

    >>> ToolChoice.function("get_weather")
    ToolChoice(mode='function', name='get_weather')
    """

    mode: Literal["auto", "none", "required", "function"]
    name: str | None = None

    def __attrs_post_init__(self) -> None:
        if (self.mode == "function") != bool(self.name):
            raise ValueError("ToolChoice needs a function name exactly when mode is 'function'")

    @classmethod
    def auto(cls) -> ToolChoice:
        """The model decides whether to call tools."""
        return cls("auto")

    @classmethod
    def none(cls) -> ToolChoice:
        """The model must not call tools."""
        return cls("none")

    @classmethod
    def required(cls) -> ToolChoice:
        """The model must call at least one tool."""
        return cls("required")

    @classmethod
    def function(cls, name: str) -> ToolChoice:
        """The model must call the named function."""
        return cls("function", name)

    @classmethod
    def coerce(cls, value: ToolChoice | str | Mapping[str, Any]) -> ToolChoice:
        """A ``ToolChoice``, or one read from ``"auto"`` / ``"none"`` / ``"required"`` or a mapping that
        ``from_mapping`` understands.

        Raises ``ValueError`` for another string or a mapping with no ``ToolChoice`` form (such as
        ``allowed_tools``), ``TypeError`` for another type.

        >>> ToolChoice.coerce("required"), ToolChoice.coerce({"type": "function", "name": "f"})
        (ToolChoice(mode='required', name=None), ToolChoice(mode='function', name='f'))
        """
        if isinstance(value, ToolChoice):
            return value
        if isinstance(value, str):
            choice = _BY_MODE.get(value)
            if choice is not None:
                return choice
            raise ValueError(
                f"tool_choice must be 'auto', 'none', 'required' or a function choice, not {value!r}"
            )
        if isinstance(value, Mapping):
            choice = cls.from_mapping(value)
            if choice is None:
                raise ValueError(
                    f"tool_choice {dict(value)!r} has no ToolChoice form; send it as a custom parameter "
                    "(custom={'tool_choice': …}) or with OpenAIResponsesModel.create"
                )
            return choice
        raise TypeError(
            f"tool_choice must be a ToolChoice, a string or a mapping, not {type(value).__name__}"
        )

    @classmethod
    def from_mapping(cls, value: Mapping[str, Any]) -> ToolChoice | None:
        """The ``ToolChoice`` of a wire mapping: a function choice in the Chat shape
        (``{"type": "function", "function": {"name": …}}``) or the flat Responses one (``{"type": "function",
        "name": …}``), or ``{"type": "auto"}`` and the like; ``None`` for other forms (``allowed_tools``,
        hosted tools), which have no ``ToolChoice`` equivalent. A function choice without a name raises
        ``ValueError``.
        """
        kind = value.get("type")
        if kind == "function":
            function = value.get("function")
            name = function.get("name") if isinstance(function, Mapping) else value.get("name")
            if not isinstance(name, str) or not name:
                raise ValueError(f"a function tool_choice needs a function name, got {dict(value)!r}")
            return cls.function(name)
        if isinstance(kind, str) and kind in _BY_MODE and len(value) == 1:
            return _BY_MODE[kind]
        return None


_BY_MODE.update(auto=ToolChoice.auto(), none=ToolChoice.none(), required=ToolChoice.required())
