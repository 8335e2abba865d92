"""Tool specifications and tool choice, as the model sees them (no execution here)."""

from __future__ import annotations

from typing import Any, Literal

import attrs

__all__ = ["ToolChoice", "ToolSpec"]


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
