"""``ToolRegistry.without``: the registries it keeps per set of tools left out are bounded, the oldest
dropped first, and what it returns is right whether it was kept or built again."""

from __future__ import annotations

import itertools
from typing import Any

from agentflow import ToolRegistry, tool
from agentflow.tools.registry import _SUBSETS_KEPT


def _registry(count: int) -> ToolRegistry:
    tools: list[Any] = [tool(name=f"t{n}")(lambda: "x") for n in range(count)]
    return ToolRegistry([*tools, {"type": "web_search"}])


def test_the_registries_kept_are_bounded_and_the_oldest_is_dropped_first() -> None:
    registry = _registry(10)
    sets = [frozenset(pair) for pair in itertools.combinations(registry.names, 2)]
    assert len(sets) > _SUBSETS_KEPT
    first = registry.without(sets[0])
    made = [registry.without(left_out) for left_out in sets[1:]]
    assert len(registry._subsets) == _SUBSETS_KEPT
    # The latest sets are kept, the earliest built again: the same tools, in a new registry.
    assert registry.without(sets[-1]) is made[-1]
    again = registry.without(sets[0])
    assert again is not first
    assert again.names == first.names
    assert len(registry._subsets) == _SUBSETS_KEPT


def test_every_registry_it_returns_leaves_out_exactly_the_tools_named() -> None:
    registry = _registry(10)
    sets = [frozenset(pair) for pair in itertools.combinations(registry.names, 2)]
    for left_out in [*sets, *sets]:
        subset = registry.without(left_out)
        assert subset.names == tuple(name for name in registry.names if name not in left_out)
        assert subset.hosted == registry.hosted
    assert len(registry._subsets) <= _SUBSETS_KEPT
