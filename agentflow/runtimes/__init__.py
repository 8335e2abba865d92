"""Runtimes: how one agent run advances. ``AgentRuntime`` is the base loop; ``ReActRuntime`` reuses it whole.

An ``Agent`` takes a runtime instance or a name (``"react"``, ``"codeact"``, ``"deep_research"``); names
resolve through a small registry that ``register_runtime`` extends. Runtimes of other modules are imported
only when their name is first resolved (at agent construction, never during a run).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from .base import AgentRuntime
from .context import RunContext
from .errors import AgentRunError, MaxStepsExceeded, ToolRetriesExceeded
from .react import REACT_INSTRUCTIONS, ReActRuntime

__all__ = [
    "REACT_INSTRUCTIONS",
    "AgentRunError",
    "AgentRuntime",
    "MaxStepsExceeded",
    "ReActRuntime",
    "RunContext",
    "ToolRetriesExceeded",
    "register_runtime",
    "resolve_runtime",
]

_FACTORIES: dict[str, Callable[[], AgentRuntime]] = {"react": ReActRuntime}
# Built-in runtimes that live in their own modules, imported on first use: "module:attribute".
_LAZY: dict[str, str] = {
    "codeact": "agentflow.runtimes.codeact:CodeActRuntime",
    "deep_research": "agentflow.runtimes.deep_research:DeepResearchRuntime",
    "deepresearch": "agentflow.runtimes.deep_research:DeepResearchRuntime",
}


def register_runtime(name: str, factory: Callable[[], AgentRuntime]) -> None:
    """Make ``Agent(runtime=name)`` build its runtime with ``factory()`` (a runtime class works).

    >>> class Terse(ReActRuntime):
    ...     name = "terse"
    >>> register_runtime("terse", Terse)
    >>> resolve_runtime("terse")
    Terse()
    """
    if not name or not isinstance(name, str):
        raise ValueError(f"a runtime name must be a non-empty string, got {name!r}")
    if not callable(factory):
        raise TypeError(f"the runtime factory must be callable, got {factory!r}")
    _FACTORIES[name] = factory


def resolve_runtime(runtime: str | AgentRuntime) -> AgentRuntime:
    """The runtime for ``runtime``: an instance as is, a registered name built fresh.

    >>> resolve_runtime("react")
    ReActRuntime()
    """
    if isinstance(runtime, AgentRuntime):
        return runtime
    if not isinstance(runtime, str):
        raise TypeError(f"runtime must be a runtime name or an AgentRuntime, got {type(runtime).__name__}")
    key = runtime.strip().lower().replace("-", "_")
    factory = _FACTORIES.get(key)
    if factory is None and key in _LAZY:
        module_name, _, attribute = _LAZY[key].partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"runtime {runtime!r} is not available: {exc}") from exc
    if factory is None:
        known = ", ".join(sorted({*_FACTORIES, *_LAZY}))
        raise ValueError(f"unknown runtime {runtime!r}; known runtimes: {known} (or pass an AgentRuntime)")
    made = factory()
    if not isinstance(made, AgentRuntime):
        raise TypeError(
            f"the factory for runtime {runtime!r} returned {type(made).__name__}, not an AgentRuntime"
        )
    return made
