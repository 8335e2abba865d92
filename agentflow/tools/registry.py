"""``ToolRegistry``: the tools of an agent, looked up by name, and the specs offered to the model.

Models sometimes decorate tool names: surrounding whitespace, a ``functions.`` prefix (the namespace
OpenAI uses internally), or a leaked chat-template marker such as ``get_weather<|channel|>commentary``.
``resolve`` and ``normalize_name`` undo these only when that yields a registered tool, so an exact name
always wins. Pure lookup, no execution.

Hosted tools (``{"type": "web_search"}``…: tools the provider runs inside the model call) are kept apart in
``hosted``: they are sent with the request but never looked up or run here, so ``specs`` and everything the
executor reads stay function tools only.

Toolsets (an MCP server: anything with ``async def tools()``, ``agentflow.tools.toolsets``) are kept apart
too, in ``toolsets``: they are listed when a run starts, and ``for_run`` gives that run's registry, this
one's tools and theirs. A registry without toolsets is its runs' registry as it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, TypeAlias

from ..model.tools import ToolSpec
from .tool import Tool, tool
from .toolsets import ToolNameConflictError, Toolset, describe_toolset, is_toolset, list_tools

__all__ = ["ToolLike", "ToolRegistry"]

_PREFIXES = ("functions.", "function.", "tools.")

ToolLike: TypeAlias = Tool[..., Any] | Callable[..., Any] | Mapping[str, Any] | Toolset
"""A ``@tool``, a plain function (wrapped with ``@tool``), a hosted tool mapping such as
``{"type": "web_search"}``, or a ``Toolset`` (an MCP server) whose tools each run lists."""

_SUBSETS_KEPT = 32
"""How many registries ``without`` keeps (one per set of tools left out), the oldest dropped first: a
long-lived agent whose ``enabled`` functions vary over many tools would otherwise keep every set it met."""

_CLIENT_SIDE = frozenset({"custom", "computer_use_preview", "local_shell", "apply_patch"})
"""Tool types whose calls the client must run and answer (``custom_tool_call``, ``computer_call``…): not
hosted, and an agent runs function tools only, so it could never answer them."""


def _hosted_tool(item: Mapping[str, Any]) -> Mapping[str, Any]:
    """A hosted tool mapping, checked, as a read-only copy (the registry is immutable)."""
    kind = item.get("type")
    if kind == "function":
        raise TypeError(
            "a function tool given as a mapping has no Python function to run; decorate the function with "
            "@tool, or pass Tool.from_spec(ToolSpec.coerce(mapping), fn)"
        )
    if not isinstance(kind, str) or not kind:
        raise TypeError(
            "a tool mapping must name a hosted tool in a string 'type', such as {'type': 'web_search'}; "
            f"got {dict(item)!r:.120}"
        )
    if kind in _CLIENT_SIDE:
        raise TypeError(
            f"a {kind!r} tool is run by the client, not the provider, and agents run function tools only; "
            "write it as a @tool function"
        )
    return MappingProxyType(dict(item))


def _not_a_tool(index: int, item: object) -> str:
    expected = (
        "a tool is a @tool function, a plain function, a hosted tool mapping such as {'type': 'web_search'} "
        "or a toolset (an MCP server)"
    )
    if item is None:
        # Usually a tool left out of a conditional list, or a factory that returned nothing.
        return (
            f"tools[{index}] is None; {expected}: leave out a tool you do not want rather than passing None"
        )
    if callable(getattr(item, "as_tool", None)):
        # An agent given as another's tool: the model needs a name and a description to choose it by.
        return (
            f"tools[{index}] is an agent ({item!r:.80}); to let another agent call it, pass "
            "agent.as_tool(description='what it does and when to call it')"
        )
    return f"tools[{index}] is {item!r:.80} ({type(item).__name__}), which cannot be called; {expected}"


class ToolRegistry:
    """An immutable set of tools with unique names. Plain functions are wrapped with ``@tool``.

    Anything else (``None``, a number) is refused with a ``TypeError`` naming its place in the list.

    A mapping whose ``type`` is not ``"function"`` is a hosted tool (``{"type": "web_search"}``), kept in
    ``hosted``, in order; the Responses API runs it (Chat Completions has none). A function tool mapping is
    refused: it has no function to run.

    A toolset (an object with ``async def tools()``: an MCP server) is kept in ``toolsets``, in order: its
    tools are listed by each run (``for_run``), and are not among ``specs``, ``names`` or the lookups here.

    >>> def ping() -> str:
    ...     '''Answer pong.'''
    ...     return "pong"
    >>> registry = ToolRegistry([ping, {"type": "web_search"}])
    >>> registry.normalize_name(" functions.ping "), [s.name for s in registry.specs], registry.hosted
    ('ping', ['ping'], (mappingproxy({'type': 'web_search'}),))
    """

    __slots__ = (
        "_has_approval",
        "_has_conditional",
        "_has_eager",
        "_has_guardrails",
        "_has_return_direct",
        "_hosted",
        "_listed",
        "_names",
        "_specs",
        "_subsets",
        "_tools",
        "_toolsets",
    )

    def __init__(self, tools: Iterable[ToolLike] = ()) -> None:
        if not isinstance(tools, Iterable) or isinstance(tools, str | bytes | Mapping):
            raise TypeError(f"tools must be a list of tools or functions, got {type(tools).__name__}")
        self._tools: dict[str, Tool[..., Any]] = {}
        hosted: list[Mapping[str, Any]] = []
        toolsets: list[Toolset] = []
        for index, item in enumerate(tools):
            if is_toolset(item):
                if any(item is known for known in toolsets):
                    raise ValueError(f"the toolset {describe_toolset(item)} is given twice")
                toolsets.append(item)
                continue
            if isinstance(item, Mapping):
                entry = _hosted_tool(item)
                if entry in hosted:  # the API refuses a tool given twice
                    raise ValueError(f"the hosted tool {dict(item)!r} is given twice")
                hosted.append(entry)
                continue
            if not isinstance(item, Tool) and not callable(item):
                raise TypeError(_not_a_tool(index, item))
            if isinstance(item, type) and callable(getattr(item, "tools", None)):
                raise TypeError(
                    f"tools[{index}] is the class {item.__name__}, a toolset's class: pass a toolset, an "
                    f"instance of it ({item.__name__}(...))"
                )
            t = item if isinstance(item, Tool) else tool(item)
            if t.name in self._tools:
                raise ValueError(f"two tools are named {t.name!r}; tool names must be unique")
            self._tools[t.name] = t
        self._specs = tuple(t.spec for t in self._tools.values())
        self._names = tuple(self._tools)
        self._hosted = tuple(hosted)
        self._toolsets = tuple(toolsets)
        self._listed: tuple[tuple[Tool[..., Any], ...], ToolRegistry] | None = None
        self._has_eager = any(t.eager for t in self._tools.values())
        self._has_return_direct = any(t.return_direct for t in self._tools.values())
        self._has_approval = any(t.needs_approval is not False for t in self._tools.values())
        self._has_guardrails = any(t._guarded for t in self._tools.values())
        self._has_conditional = any(t.enabled is not None for t in self._tools.values())
        self._subsets: dict[frozenset[str], ToolRegistry] = {}

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """The tool specs, in registration order, for the model request."""
        return self._specs

    @property
    def hosted(self) -> tuple[Mapping[str, Any], ...]:
        """The hosted tools (``{"type": "web_search"}``…), read-only, in registration order: sent after the
        function tools on Responses, never run here."""
        return self._hosted

    @property
    def toolsets(self) -> tuple[Toolset, ...]:
        """The toolsets (MCP servers…) whose tools each run lists when it starts, in order; ``()`` for most
        registries (a run then uses this registry as it is)."""
        return self._toolsets

    async def for_run(self) -> ToolRegistry:
        """The registry of a run starting now: this one without toolsets; with toolsets, this one's tools
        then every toolset's (awaiting each one's ``tools()``, which caches), in a registry of their own.

        That registry is kept while the toolsets give the same ``Tool`` objects, so runs on an unchanged
        tool list share it. ``ToolNameConflictError`` when two of the tools have one name; a toolset's own
        error (``MCPConnectionError``: not connected) propagates as it is.
        """
        if not self._toolsets:
            return self
        found = await list_tools(self._toolsets)
        listed = tuple(t for t, _ in found)
        known = self._listed
        if known is not None and len(known[0]) == len(listed) and all(map(_same, known[0], listed)):
            return known[1]
        sources: dict[str, str] = dict.fromkeys(self._tools, "the agent's own tools")
        for t, toolset in found:
            first = sources.get(t.name)
            source = describe_toolset(toolset)
            if first is not None:
                raise ToolNameConflictError(t.name, first, source)
            sources[t.name] = source
        registry = ToolRegistry((*self._tools.values(), *self._hosted, *listed))
        self._listed = (listed, registry)
        return registry

    def with_tools(self, tools: Iterable[Tool[..., Any]]) -> ToolRegistry:
        """A registry of this one's tools, hosted tools and toolsets, then ``tools`` (an agent's handoff
        tools); ``ValueError`` when two of them share a name, as for any registry.

        >>> from agentflow.tools.tool import tool
        >>> ToolRegistry([tool(lambda: 1, name="one")]).with_tools([tool(lambda: 2, name="two")]).names
        ('one', 'two')
        """
        return ToolRegistry((*self._tools.values(), *self._hosted, *self._toolsets, *tools))

    def __bool__(self) -> bool:
        """Whether a run may have tools: some of this registry's own, or toolsets (which a run lists)."""
        return bool(self._tools) or bool(self._toolsets)

    @property
    def has_eager(self) -> bool:
        """Whether any tool is ``eager`` (may start while the model streams): read once per step, so a run
        without one never looks at a single streamed event for it."""
        return self._has_eager

    @property
    def has_return_direct(self) -> bool:
        """Whether any tool is ``return_direct`` (its result may be the run's answer): read once per step
        that ran calls, so a run without one never looks at a result for it."""
        return self._has_return_direct

    @property
    def has_conditional(self) -> bool:
        """Whether any tool is offered only when a function of the run says so (``@tool(enabled=...)``): a
        run whose registry has none evaluates nothing per step (``agentflow.runtimes.tool_availability``)."""
        return self._has_conditional

    def without(self, names: frozenset[str]) -> ToolRegistry:
        """This registry less the tools named ``names`` (the hosted tools kept), kept for the next step that
        leaves out the same ones (the latest 32 sets left out: an older one is built again, the same tools in
        a new registry); this one itself when ``names`` is empty.

        >>> from agentflow.tools.tool import tool
        >>> both = ToolRegistry([tool(lambda: 1, name="one"), tool(lambda: 2, name="two")])
        >>> both.without(frozenset({"one"})).names, both.without(frozenset()) is both
        (('two',), True)
        """
        if not names:
            return self
        subsets = self._subsets
        found = subsets.get(names)
        if found is None:
            kept = [t for name, t in self._tools.items() if name not in names]
            found = ToolRegistry((*kept, *self._hosted, *self._toolsets))
            if len(subsets) >= _SUBSETS_KEPT:
                # The oldest set left out (a dict keeps insertion order). Runs in other threads may change the
                # dict meanwhile: the cache is only a cache, and a step must not fail for it.
                with contextlib.suppress(RuntimeError, StopIteration):
                    subsets.pop(next(iter(subsets)), None)
            subsets[names] = found
        return found

    @property
    def has_guardrails(self) -> bool:
        """Whether any tool checks its calls (``@tool(input_guardrails=..., output_guardrails=...)``)."""
        return self._has_guardrails

    @property
    def has_approval(self) -> bool:
        """Whether any tool ``needs_approval`` (``True`` or a function): a run whose registry has none builds
        no ``ToolApprovals``, and its tool batches never look for one."""
        return self._has_approval

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
        extra = ""
        if self._hosted:
            extra += f", hosted={[entry.get('type') for entry in self._hosted]!r}"
        if self._toolsets:
            extra += f", toolsets=[{', '.join(map(describe_toolset, self._toolsets))}]"
        return f"ToolRegistry({list(self._tools)!r}{extra})"


def _same(a: object, b: object) -> bool:
    return a is b
