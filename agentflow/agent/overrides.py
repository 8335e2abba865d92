"""``Agent.override()``: runs of an agent with another model, tools, settings, options or guardrails in a
block (tests).

An application builds its agents once (often at import); its tests want the same agents over a
``FakeModelClient`` or a ``ScriptedServer`` without a way in. ``with agent.override(model=fake):`` gives
every run of ``agent`` started inside the block (``run``, ``stream``, ``run_sync``, its sessions, its use
as another agent's tool) the values given, and leaves the agent itself untouched.

The overrides live in a ``ContextVar``: they apply to the task that entered the block and to the tasks it
starts from inside it (which copy its context), never to other tasks, so concurrent tests, or requests served
meanwhile, are not affected. Blocks nest; the innermost value of each field wins. Only what is given is
replaced: ``input_guardrails=`` and ``output_guardrails=`` each replace the agent's of that kind (``[]``
switches them off; a fake stands in for a classifier that calls a model), and a run's own guardrails
(``agent.run(x, input_guardrails=[...])``) still come on top. The cost to a run outside any block is one
``ContextVar.get``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import attrs

from ..runtimes.guardrails import Guardrail, GuardrailFunction, check_guardrails
from ..tools.registry import ToolLike, ToolRegistry
from .options import AgentOptions, ModelSettings

if TYPE_CHECKING:
    from .agent import Agent, ModelLike
    from .prompt import ModelClient

__all__ = ["Override", "active_override", "override"]


@attrs.frozen
class Override:
    """What runs of one agent use instead of its own (``None``: the agent's own value)."""

    model: ModelClient | None = None
    tools: ToolRegistry | None = None
    settings: ModelSettings | None = None
    options: AgentOptions | None = None
    input_guardrails: tuple[Guardrail, ...] | None = None
    output_guardrails: tuple[Guardrail, ...] | None = None


_ACTIVE: ContextVar[dict[int, tuple[Agent[Any], Override]] | None] = ContextVar(
    "agentflow_agent_overrides", default=None
)
"""The overrides in force in this context, by ``id`` of their agent (the agent is kept beside its override:
an id is only unique while its object lives)."""


def active_override(agent: Agent[Any]) -> Override | None:
    """The override in force for ``agent``'s runs started now, if any."""
    active = _ACTIVE.get()
    if active is None:
        return None
    found = active.get(id(agent))
    return found[1] if found is not None and found[0] is agent else None


@contextlib.contextmanager
def override(
    agent: Agent[Any],
    *,
    model: ModelLike | None = None,
    tools: Iterable[ToolLike] | ToolRegistry | None = None,
    settings: ModelSettings | None = None,
    options: AgentOptions | None = None,
    input_guardrails: Iterable[GuardrailFunction | Guardrail] | None = None,
    output_guardrails: Iterable[GuardrailFunction | Guardrail] | None = None,
) -> Iterator[None]:
    """``Agent.override``: see the module docstring."""
    from .agent import _checked, as_model_client, check_hosted_tools  # the agent module imports this one

    settings = None if settings is None else _checked(settings, ModelSettings)
    options = None if options is None else _checked(options, AgentOptions)
    inputs = None if input_guardrails is None else check_guardrails("input", input_guardrails)
    outputs = None if output_guardrails is None else check_guardrails("output", output_guardrails)
    active = _ACTIVE.get() or {}
    outer = active.get(id(agent))
    base = outer[1] if outer is not None and outer[0] is agent else Override()
    client = as_model_client(model) if model is not None else base.model
    registry = base.tools
    if tools is not None:
        registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
    if registry is not None or client is not None:  # either may be the one that cannot take the other
        check_hosted_tools(registry if registry is not None else agent.tools, client or agent.model_client)
    chosen = Override(
        model=client,
        tools=registry,
        settings=settings if settings is not None else base.settings,
        options=options if options is not None else base.options,
        input_guardrails=inputs if inputs is not None else base.input_guardrails,
        output_guardrails=outputs if outputs is not None else base.output_guardrails,
    )
    token = _ACTIVE.set({**active, id(agent): (agent, chosen)})
    try:
        yield
    finally:
        _ACTIVE.reset(token)
