"""Toolsets: sources of tools that a run lists when it starts, rather than tools fixed when an agent is made.

An MCP server is one (``agentflow.mcp``): ``Agent(model, tools=[server, my_tool])`` keeps the server itself,
and each run asks it for its tools (``await server.tools()``, cached by the server), so the agent can be
built before anything is connected and sees a server's tool list change. Anything with an ``async def
tools(self) -> Sequence[Tool]`` is a ``Toolset``; ``ToolRegistry`` keeps toolsets apart from its tools
(``registry.toolsets``), and ``ToolRegistry.for_run`` gives the registry of one run: the registry's own
tools, then each toolset's, in order.

A run whose tools include no toolset pays nothing for any of this (one check when it is created).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any, Protocol, TypeGuard, runtime_checkable

from .tool import Tool

__all__ = [
    "ToolNameConflictError",
    "Toolset",
    "ToolsetBlocks",
    "describe_toolset",
    "enter_toolsets",
    "is_toolset",
]


@runtime_checkable
class Toolset(Protocol):
    """A source of tools listed per run: ``async def tools(self) -> Sequence[Tool]``.

    ``MCPServerStdio`` and ``MCPServerStreamableHTTP`` are toolsets. Each run of an agent given one awaits
    its ``tools()`` before its first model call, so ``tools()`` should be cheap once it has listed them
    (cache them). A toolset that is an async context manager (an MCP server) is entered by ``async with
    agent:``. A ``name`` attribute, if it has one, names it in errors.

    >>> from agentflow.tools import tool
    >>> @tool
    ... def ping() -> str:
    ...     '''Answer pong.'''
    ...     return "pong"
    >>> class Pinger:
    ...     name = "pinger"
    ...     async def tools(self) -> list[Tool[..., Any]]:
    ...         return [ping]
    >>> is_toolset(Pinger()), describe_toolset(Pinger())
    (True, "Pinger 'pinger'")
    """

    async def tools(self) -> Sequence[Tool[..., Any]]:
        """The tools to offer a run starting now."""
        ...


class ToolNameConflictError(ValueError):
    """Two tools of a run have one name: two toolsets offer it, or a toolset and the agent's own tools.

    Raised when a run starts (it fails before its first model call), naming both sources: ``name`` is the
    tool's name, ``first`` and ``second`` say where each came from.
    """

    def __init__(self, name: str, first: str, second: str) -> None:
        self.name = name
        self.first = first
        self.second = second
        super().__init__(
            f"two tools are named {name!r}: one from {first}, one from {second}; tool names must be unique: "
            f"give a toolset a prefix (an MCP server's tool_prefix='docs' makes it 'docs_{name}'), or leave "
            f"the tool out of one (an MCP server's exclude=[{name!r}])"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable (multiprocessing, task queues): the constructor's arguments, then the attributes set
        # since (a failed run's ``run_result``, notes).
        return (type(self), (self.name, self.first, self.second), dict(self.__dict__))


def is_toolset(item: object) -> TypeGuard[Toolset]:
    """Whether ``item`` is a toolset: an object (not a class, not a ``Tool``) whose ``tools`` is callable.

    An ``Agent`` is none (its ``tools`` is its registry): ``ToolRegistry`` tells the user to pass
    ``agent.as_tool(...)`` instead.
    """
    return not isinstance(item, type | Tool) and callable(getattr(item, "tools", None))


def describe_toolset(toolset: object) -> str:
    """How errors name ``toolset``: its type and ``name`` (``MCPServerStdio 'files'``), else its repr."""
    name = getattr(toolset, "name", None)
    if isinstance(name, str) and name:
        return f"{type(toolset).__name__} {name!r}"
    return f"{toolset!r:.80}"


async def list_tools(toolsets: Iterable[Toolset]) -> list[tuple[Tool[..., Any], Toolset]]:
    """Every tool the toolsets offer now, each with its toolset, in order; ``TypeError`` for a toolset that
    gives something else than ``Tool`` values. A toolset's own failure (``MCPConnectionError``) propagates
    as it is."""
    found: list[tuple[Tool[..., Any], Toolset]] = []
    for toolset in toolsets:
        listed = await toolset.tools()
        if isinstance(listed, str | bytes) or not isinstance(listed, Sequence):
            raise TypeError(
                f"{describe_toolset(toolset)}: tools() must return a list of Tool values, "
                f"got {type(listed).__name__}"
            )
        for item in listed:
            if not isinstance(item, Tool):
                raise TypeError(
                    f"{describe_toolset(toolset)}: tools() gave {item!r:.80} ({type(item).__name__}); a "
                    "toolset gives Tool values (decorate a function with @tool, once: not on every call)"
                )
            found.append((item, toolset))
    return found


async def enter_toolsets(toolsets: Iterable[object]) -> AsyncExitStack:
    """Enter every toolset that is an async context manager (an MCP server: it connects), in order; the
    stack returned leaves them in reverse order. If one fails to enter, those entered are left again and
    its error propagates.

    A toolset entered this way while it is entered already (by ``async with server:``, or by another agent
    sharing it) is only entered once more: an MCP server closes its connection when its outermost block
    ends, so an agent leaving its block never closes a server under another.
    """
    stack = AsyncExitStack()
    async with AsyncExitStack() as undo:
        undo.push_async_callback(stack.aclose)
        for toolset in toolsets:
            if isinstance(toolset, AbstractAsyncContextManager):  # has __aenter__ and __aexit__
                await stack.enter_async_context(toolset)
        undo.pop_all()
    return stack


class ToolsetBlocks:
    """The toolsets each open ``async with agent:`` block entered, kept per task: blocks of one agent in
    different tasks (the requests of a web service) overlap in any order, and each block must leave what it
    entered, not what the last block to enter did (an ``agent.override(tools=...)`` makes them differ).

    A block left in another task than the one it entered (an application's start-up and shutdown hooks) is
    found when it is the only one open; among several, which one it was cannot be told: ``RuntimeError``.
    """

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: dict[asyncio.Task[Any] | None, list[AsyncExitStack]] = {}

    def push(self, stack: AsyncExitStack) -> None:
        """Note a block that entered the toolsets ``stack`` will leave."""
        self._open.setdefault(asyncio.current_task(), []).append(stack)

    def pop(self) -> AsyncExitStack | None:
        """The stack of the block leaving now (this task's innermost), or None if no block entered any."""
        task = asyncio.current_task()
        stacks = self._open.get(task)
        if stacks is None:
            if not self._open:
                return None
            if len(self._open) > 1 or sum(map(len, self._open.values())) > 1:
                raise RuntimeError(
                    "an 'async with agent:' block was left in another task than the one that entered it, "
                    "while blocks of other tasks are open: which toolsets to leave cannot be told (enter and "
                    "leave each block in one task)"
                )
            task, stacks = next(iter(self._open.items()))
        stack = stacks.pop()
        if not stacks:
            del self._open[task]
        return stack
