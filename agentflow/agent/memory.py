"""Conversation memory: the ``Memory`` protocol, ``InMemoryMemory`` (the default) and ``WindowedMemory``.

A memory holds conversation items (see ``agentflow.agent.items``) in order. Trimming is pair-aware: a tool
call is never separated from its outputs, so the conversation a memory hands to a model is always one a
provider accepts. Memories are plain in-process state and do no I/O; they are not locked (a session
serialises the runs that share one). ``check_memory`` refuses a lookalike with ``async`` methods.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from ..model.messages import AiMessage, DeveloperMessage, SystemMessage, ToolResultMessage, UserMessage
from .items import (
    MAPPINGS,
    is_model_output_item,
    is_runtime_note,
    is_system_item,
    is_user_item,
    tool_call_ids,
    tool_output_call_id,
)

__all__ = ["InMemoryMemory", "Memory", "WindowedMemory", "check_memory"]

_ITEM_TYPES = (*MAPPINGS, SystemMessage, DeveloperMessage, UserMessage, AiMessage, ToolResultMessage)


def _checked(item: Any) -> Any:
    if isinstance(item, _ITEM_TYPES):
        return item
    raise TypeError(
        f"memory items are item dicts or Message values, got {type(item).__name__} "
        "(build one with agentflow.agent.items, e.g. user_item(text))"
    )


@runtime_checkable
class Memory(Protocol):
    """Where a conversation is kept between model calls and runs.

    Every member is synchronous: a run reads and writes its memory between model calls and never awaits it
    (an agent or a session refuses a memory with ``async`` members). A store that does I/O loads the items
    before a run and saves them after it (``agentflow.dump_items`` / ``load_items``).

    ``items`` is a snapshot (a tuple: later writes do not change it). ``snapshot()``/``restore()`` save and
    put back the whole state (``agent.session(memory, rollback_on_failure=True)`` uses them to roll a failed
    run back).
    """

    @property
    def items(self) -> tuple[Any, ...]:
        """The conversation, oldest first."""
        ...

    def add(self, item: Any) -> None:
        """Append one item."""
        ...

    def extend(self, items: Iterable[Any]) -> None:
        """Append items in order."""
        ...

    def clear(self) -> None:
        """Forget everything."""
        ...

    def snapshot(self) -> tuple[Any, ...]:
        """The whole state, for ``restore``."""
        ...

    def restore(self, snapshot: Iterable[Any]) -> None:
        """Replace the state with one from ``snapshot``."""
        ...


_MEMORY_METHODS = ("items", "add", "extend", "clear", "snapshot", "restore")


def check_memory(memory: object) -> None:
    """Refuse (``TypeError``) a memory, or a memory class, whose ``Memory`` members are ``async``.

    ``Memory`` is synchronous: a run reads and writes it between model calls and never awaits it, so an
    ``async def extend`` would hand back a coroutine nobody awaits: the run would look fine while the model
    saw nothing and nothing was stored. ``isinstance(m, Memory)`` cannot tell (it checks names only), hence
    this check where a memory is given to an agent or a session.
    """
    if type(memory) is InMemoryMemory or type(memory) is WindowedMemory:  # ours: sync, nothing to look at
        return
    cls = memory if isinstance(memory, type) else type(memory)
    found: list[str] = []
    for name in _MEMORY_METHODS:
        member = inspect.getattr_static(memory, name, None)
        if isinstance(member, property):
            member = member.fget
        elif isinstance(member, staticmethod | classmethod):
            member = member.__func__
        if inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member):
            found.append(name)
    if found:
        names = ", ".join(found)
        raise TypeError(
            f"{cls.__name__} has async Memory methods ({names}), but a run uses its memory synchronously "
            "and never awaits it (nothing would be read or stored). Keep the conversation in an "
            "InMemoryMemory and persist it around the runs with your async client: load the stored items "
            "into agent.session(InMemoryMemory(load_items(data))), and save result.new_items (or "
            "dump_items(session.items)) after each run; see 'Conversations' in docs/getting-started.md"
        )


class InMemoryMemory:
    """The default memory: every item, in a list, for the life of the object.

    >>> from agentflow.agent.items import user_item
    >>> memory = InMemoryMemory()
    >>> memory.add(user_item("hi"))
    >>> len(memory), memory.items[0]["role"]
    (1, 'user')

    Item dicts are stored as given; do not mutate one after adding it.
    """

    __slots__ = ("__weakref__", "_items")  # weakly referenced: sessions find the memory's lock by it

    def __init__(self, items: Iterable[Any] = ()) -> None:
        self._items: list[Any] = []
        self.extend(items)

    @property
    def items(self) -> tuple[Any, ...]:
        """The conversation, oldest first (a snapshot)."""
        return tuple(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._items)} items)"

    def add(self, item: Any) -> None:
        """Append one item (an item dict or a ``Message``; anything else is a ``TypeError``)."""
        self._items.append(_checked(item))
        self._trim()

    def extend(self, items: Iterable[Any]) -> None:
        """Append items in order; all are checked before any is added."""
        checked = [_checked(item) for item in items]
        self._items.extend(checked)
        self._trim()

    def clear(self) -> None:
        """Forget everything."""
        self._items.clear()

    def snapshot(self) -> tuple[Any, ...]:
        """The whole state, for ``restore``."""
        return tuple(self._items)

    def restore(self, snapshot: Iterable[Any]) -> None:
        """Replace the state with ``snapshot`` (trimmed as any write would be)."""
        checked = [_checked(item) for item in snapshot]
        self._items[:] = checked
        self._trim()

    def _trim(self) -> None:
        """Subclasses bound the conversation here; the default keeps everything."""


class WindowedMemory(InMemoryMemory):
    """A memory that keeps the leading system items, the latest user message and about the last
    ``max_items`` items.

    Trimming drops the oldest items, but only at a cut that keeps the conversation valid:
    - a tool call (an assistant item with tool calls, a ``function_call`` item) keeps all its outputs, and an
      output never loses its call; a call still waiting for its output is never cut off either;
    - the window never starts with a tool output;
    - the items of one model turn (``reasoning``, assistant message, calls) are never split;
    - the system (and developer) items at the very start — written before anything else — are always kept
      and do not count. A system item written later (a DeepResearch plan, a CodeAct ``CODE_RESULT``) is
      part of the conversation and is trimmed like any other item;
    - the latest user message — the question the model is working on — is kept ahead of the window (and
      counts in it) when the cut would drop it, so a long tool loop never loses what it was asked. The
      older steps of that loop go; a newer user message replaces it. A note a runtime wrote as a user
      message (a plan with ``plan_role="user"``, a ``CODE_RESULT`` with ``observation_role="user"``, an
      output retry prompt: ``items.is_runtime_note``) is no question: it is trimmed like any other item.

    The window holds at most ``max_items`` items whenever such a cut exists; when one indivisible group is
    longer than that, the window keeps the group whole (so it may briefly exceed ``max_items``).

    >>> from agentflow.agent import items
    >>> memory = WindowedMemory(max_items=3)
    >>> memory.extend([items.system_item("sys"), items.user_item("q"),
    ...                items.function_call_item("c1", "f", "{}"),
    ...                items.function_call_output_item("c1", "42"),
    ...                items.function_call_item("c2", "f", "{}"),
    ...                items.function_call_output_item("c2", "43")])
    >>> [item.get("role") or item.get("call_id") for item in memory.items]
    ['system', 'user', 'c2', 'c2']
    """

    __slots__ = ("_pinned", "max_items")

    def __init__(self, max_items: int, items: Iterable[Any] = ()) -> None:
        if not isinstance(max_items, int) or isinstance(max_items, bool) or max_items <= 0:
            raise ValueError(f"max_items must be a positive integer, got {max_items!r}")
        self.max_items = max_items
        self._pinned: int | None = None
        super().__init__(items)

    def __repr__(self) -> str:
        return f"WindowedMemory(max_items={self.max_items}, {len(self._items)} items)"

    def clear(self) -> None:
        """Forget everything (the next system items at the start are pinned again)."""
        super().clear()
        self._pinned = None

    def restore(self, snapshot: Iterable[Any]) -> None:
        """Replace the state with ``snapshot``; its leading system items are the pinned ones."""
        self._pinned = None
        super().restore(snapshot)

    def _pinned_count(self) -> int:
        # Settled when the first other item arrives: counting the system items at the head again after a
        # trim would pin a later one (a plan, a code result) that the cut brought to the front, for good.
        pinned = self._pinned
        if pinned is None:
            items = self._items
            pinned = 0
            while pinned < len(items) and is_system_item(items[pinned]):
                pinned += 1
            if pinned < len(items):
                self._pinned = pinned
        return pinned

    def _trim(self) -> None:
        items = self._items
        pinned = self._pinned_count()
        tail = items[pinned:]
        if len(tail) <= self.max_items:
            return
        wanted = len(tail) - self.max_items
        cut = _choose_cut(tail, wanted)
        if not cut:
            return
        question = _latest_user_index(tail)
        if question is None or question >= cut:
            del items[pinned : pinned + cut]
            return
        # The question stays ahead of the window and takes one of its places.
        cut = max(cut, _choose_cut(tail, wanted + 1))
        del items[pinned + question + 1 : pinned + cut]
        del items[pinned : pinned + question]


def _latest_user_index(tail: list[Any]) -> int | None:
    """Where the latest user message that a person wrote is (not a runtime's note), if any."""
    for index in range(len(tail) - 1, -1, -1):
        item = tail[index]
        if is_user_item(item) and not is_runtime_note(item):
            return index
    return None


def _valid_cuts(tail: list[Any]) -> list[bool]:
    """``valid[i]``: may the window start at ``tail[i]``? (``i == 0`` means "keep everything")."""
    n = len(tail)
    # Each call is keyed by (index of the item making it, call id); its end is the index of its last output,
    # or n while it awaits one. An output pairs with the latest earlier call of its id, since some servers
    # reuse ids such as "call_0" from one response to the next.
    call_end: dict[tuple[int, str], int] = {}
    latest: dict[str, int] = {}
    for index, item in enumerate(tail):
        for call_id in tool_call_ids(item):
            latest[call_id] = index
            call_end[(index, call_id)] = n
        answered = tool_output_call_id(item)
        if answered is not None and answered in latest:
            call_end[(latest[answered], answered)] = index
    needs = [-1] * n  # needs[i]: the last index that must stay with the calls tail[i] makes
    for (caller, _), end in call_end.items():
        needs[caller] = max(needs[caller], end)
    valid = [True] + [False] * (n - 1)
    reach = -1  # the furthest index that an item before the current cut still needs
    for index in range(1, n):
        reach = max(reach, needs[index - 1])
        item = tail[index]
        valid[index] = (
            reach < index
            and tool_output_call_id(item) is None
            and not (is_model_output_item(tail[index - 1]) and is_model_output_item(item))
        )
    return valid


def _choose_cut(tail: list[Any], wanted: int) -> int:
    """The first valid cut at or after ``wanted``; failing that, the last valid one before it."""
    valid = _valid_cuts(tail)
    for index in range(wanted, len(tail)):
        if valid[index]:
            return index
    for index in range(min(wanted, len(tail)) - 1, 0, -1):
        if valid[index]:
            return index
    return 0
