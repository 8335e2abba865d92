"""``ToolRegistry``: the tools of an agent, looked up by name, and the specs offered to the model.

Models sometimes decorate tool names: surrounding whitespace, a ``functions.`` prefix (the namespace
OpenAI uses internally), or a leaked chat-template marker such as ``get_weather<|channel|>commentary``.
``resolve`` and ``normalize_name`` undo these only when that yields a registered tool, so an exact name
always wins. Pure lookup, no execution.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..model.tools import ToolSpec
from .tool import Tool, tool

__all__ = ["ToolRegistry"]

_PREFIXES = ("functions.", "function.", "tools.")


class ToolRegistry:
    """An immutable set of tools with unique names. Plain functions are wrapped with ``@tool``.

    >>> def ping() -> str:
    ...     '''Answer pong.'''
    ...     return "pong"
    >>> registry = ToolRegistry([ping])
    >>> registry.normalize_name(" functions.ping "), [s.name for s in registry.specs]
    ('ping', ['ping'])
    """

    __slots__ = ("_names", "_specs", "_tools")

    def __init__(self, tools: Iterable[Tool[..., Any] | Callable[..., Any]] = ()) -> None:
        if not isinstance(tools, Iterable) or isinstance(tools, str | bytes):
            raise TypeError(f"tools must be a list of tools or functions, got {type(tools).__name__}")
        self._tools: dict[str, Tool[..., Any]] = {}
        for item in tools:
            t = item if isinstance(item, Tool) else tool(item)
            if t.name in self._tools:
                raise ValueError(f"two tools are named {t.name!r}; tool names must be unique")
            self._tools[t.name] = t
        self._specs = tuple(t.spec for t in self._tools.values())
        self._names = tuple(self._tools)

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """The tool specs, in registration order, for the model request."""
        return self._specs

    @property
    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return self._names

    def get(self, name: str) -> Tool[..., Any] | None:
        """The tool with exactly this name, or None."""
        return self._tools.get(name)

    def resolve(self, name: str) -> Tool[..., Any] | None:
        """The tool the model meant by ``name`` (exact, then normalised as described above), or None."""
        found = self._tools.get(name)
        if found is not None:
            return found
        return self._tools.get(self._candidate(name))

    def normalize_name(self, name: str) -> str:
        """The registered name ``name`` refers to; otherwise ``name`` without surrounding whitespace."""
        if name in self._tools:  # the usual case, once per tool call: the exact registered name
            return name
        found = self.resolve(name)
        return found.name if found is not None else name.strip()

    def _candidate(self, name: str) -> str:
        candidate = name.strip().split("<|", 1)[0].strip()
        if candidate in self._tools:
            return candidate
        for prefix in _PREFIXES:
            if candidate.startswith(prefix) and candidate[len(prefix) :] in self._tools:
                return candidate[len(prefix) :]
        return candidate

    def __getitem__(self, name: str) -> Tool[..., Any]:
        return self._tools[name]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool[..., Any]]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._tools)!r})"
