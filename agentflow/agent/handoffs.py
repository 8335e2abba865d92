"""Handoffs: an agent gives the rest of its run to another agent (the Agents SDK's handoffs).

``Agent(handoffs=[billing, handoff(refunds, description=...)])`` offers the model one tool per target,
``transfer_to_<target's name>``, which takes no arguments (or an ``input_type``'s fields, for ``on_handoff``
to act on). When the model calls one, the step's other calls run as usual and every result goes to memory;
from the next step on, the run is the target's: its model, tools, runtime, prompts, model settings and
handoffs, on the same conversation, in the same run (its id, events, handle, step count, usage and limits
go on). ``HandedOff`` is published between the two steps, and
``AgentResult.agent_name`` names the agent the run ended with.

Decisions, and why:

- **The run stays the run.** Its ``options`` (limits: ``max_steps``, ``max_tokens``, ``timeout``,
  ``tool_approval``…), its ``output_type`` and its guardrails are the entry agent's (or the run's own): they
  are what the caller asked for, whichever agent writes the answer. A typed run stays typed, and a policy
  at the door (an output guardrail) checks every answer. The Agents SDK switches output type and output
  guardrails to the last agent, which leaves the caller's ``final_output`` untyped.
- **The target's own**: its model and settings (the run's own ``settings=`` merged over them, its HTTP
  headers kept), its tools (its toolsets listed at the handoff), its system prompt and instructions (prompt
  functions evaluated from its first step), its runtime's loop (a DeepResearch target plans for the run's
  goal first: ``AgentRuntime.take_over``) and its handoffs (a specialist may hand back to the triage).
- **Memory is the conversation.** The target sees everything, tool calls included, unless the handoff has
  an ``input_filter``: a function of the conversation (as a tuple of items, the transfer call and its output
  last) that returns what the target is shown instead (``without_tool_calls`` drops every tool call and
  result). The filter changes the prompts only: memory, a session and ``new_items`` keep every item.
- **One handoff per turn.** A turn that calls two transfer tools hands over to the first, in call order;
  the others are not run, and get a ``TOOL_ERROR`` result saying so. A turn that also ends the run (a
  ``return_direct`` answer, a limit) ends it: that handoff does not take place. A run that pauses for
  approval resumes on the agent it paused on (``handing_off.resume_handoffs``).
- Runtimes with a loop of their own (CodeAct's code steps) cannot hand over or be handed to: ``TypeError``
  when the agent is built.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ..model.tools import ToolSpec
from ..runtimes.base import AgentRuntime
from ..runtimes.calls import answer_unanswered_calls
from ..tools.availability import ToolEnabled
from ..tools.context import ToolContext
from ..tools.schema import shape_of
from ..tools.tool import Tool
from .agent_names import function_style
from .item_checks import check_items
from .item_shapes import is_tool_output_item, to_items
from .options import merge_settings
from .overrides import active_override

if TYPE_CHECKING:
    from ..runtimes.context import RunContext
    from .agent import Agent

__all__ = [
    "Handoff",
    "InputFilter",
    "OnHandoff",
    "handoff",
    "reachable_agents",
    "without_reasoning",
    "without_tool_calls",
]

InputFilter = Callable[[tuple[Any, ...]], Iterable[Any]]
"""A handoff's ``input_filter``: the conversation at the handoff (items) → what the target is shown of it."""

OnHandoff = Callable[..., Any]
"""A handoff's ``on_handoff``: ``fn(ctx: ToolContext)``, or ``fn(ctx, data)`` with an ``input_type``; sync or
async, its return value unused."""

_OTHER_TOOL_ITEMS = frozenset({"mcp_list_tools", "mcp_approval_request", "mcp_approval_response"})
"""Hosted tools' items whose type ends in neither ``_call`` nor ``_call_output``."""


def without_tool_calls(items: tuple[Any, ...]) -> tuple[Any, ...]:
    """An ``input_filter`` that shows the target the conversation without tool calls and their results
    (hosted tools' included): the user's turns and the agents' text; an assistant turn that made calls keeps
    its text, if it had any, and a Responses ``reasoning`` item goes with the call it led to. The Agents SDK's
    ``handoff_filters.remove_all_tools``.

    >>> from agentflow.agent.items import assistant_item, function_call_output_item, user_item
    >>> from agentflow.model.messages import ToolCall
    >>> turn = assistant_item("Let me check.", [ToolCall("c1", "f", "{}")])
    >>> kept = without_tool_calls((user_item("hi"), turn, function_call_output_item("c1", "42")))
    >>> [(item["role"], "tool_calls" in item) for item in kept]
    [('user', False), ('assistant', False)]
    """
    kept: list[Any] = []
    for item in items:
        if not isinstance(item, Mapping):
            kept.append(item)
            continue
        kind = item.get("type")
        dropped = (
            isinstance(kind, str) and (kind.endswith(("_call", "_call_output")) or kind in _OTHER_TOOL_ITEMS)
        ) or is_tool_output_item(item)  # ``function_call``, ``web_search_call``, a Chat tool message…
        if not dropped and item.get("tool_calls"):
            dropped = not item.get("content")  # an assistant turn of calls only
            item = {key: value for key, value in item.items() if key != "tool_calls"}
        if dropped:
            # A Responses ``reasoning`` item is refused without the item it led to: it goes with it.
            while kept and isinstance(kept[-1], Mapping) and kept[-1].get("type") == "reasoning":
                kept.pop()
            continue
        kept.append(item)
    return tuple(kept)


def without_reasoning(items: tuple[Any, ...]) -> tuple[Any, ...]:
    """An ``input_filter`` that drops the Responses API's ``reasoning`` items: what a target on a model
    without reasoning needs when the agent before it reasoned over the Responses API (it refuses reasoning
    items it did not make). Combine with another filter as functions: ``lambda items:
    without_reasoning(without_tool_calls(items))``.

    >>> reasoned = {"type": "reasoning", "id": "rs_1", "summary": []}
    >>> without_reasoning((reasoned, {"role": "user", "content": "hi"}))
    ({'role': 'user', 'content': 'hi'},)
    """
    return tuple(
        item for item in items if not (isinstance(item, Mapping) and item.get("type") == "reasoning")
    )


def _runs_base_loop(runtime: AgentRuntime) -> bool:
    # A runtime that replaces the loop (CodeAct) steps its own way: the shared loop is what hands a run over.
    return type(runtime).run_loop is AgentRuntime.run_loop


@attrs.frozen
class Handoff:
    """A target agent as one of an agent's handoffs: ``tool`` is what the model calls to hand over
    (``transfer_to_…``), ``input_filter`` what the target is shown of the conversation (``None``: all of it).
    Made by ``handoff()``; an ``Agent`` in ``handoffs=`` gets one with the defaults."""

    agent: Agent[Any]
    tool: Tool[..., Any] = attrs.field(repr=False)
    input_filter: InputFilter | None = attrs.field(default=None, repr=False)

    @property
    def tool_name(self) -> str:
        """The name of the tool the model calls to hand over."""
        return self.tool.name

    async def switch(self, ctx: RunContext, *, upto: int | None = None) -> AgentRuntime:
        """Give the run ``ctx`` to this handoff's agent (see the module docstring); its runtime, which runs
        the next steps. An ``agent.override`` in force for the target applies, as to a run of its own.

        ``upto``: for a handoff made again when a paused run resumes, the length of the conversation (memory's
        items) at the handoff: the ``input_filter`` is given those, and what came after is shown as it is."""
        agent = self.agent
        # Read together, before any await: ``agent.handoffs = ...`` meanwhile must not leave transfer tools
        # offered without their handoffs (or the other way round).
        model, tools, settings, handoffs = agent.model_client, agent.tools, agent.settings, agent._handoffs
        found = active_override(agent)
        if found is not None:
            if found.model is not None:
                model = found.model
            if found.tools is not None:
                tools = agent._with_handoff_tools(found.tools)
            if found.settings is not None:
                settings = merge_settings(settings, found.settings)
        if ctx.run_settings is not None:
            settings = merge_settings(settings, ctx.run_settings)
        if ctx.run_headers:
            # The run's own headers and those it inherited as a sub-agent's, under the agent's own; the run's
            # own ``settings=`` (merged just above) still win.
            settings = attrs.evolve(settings, extra_headers={**ctx.run_headers, **settings.extra_headers})
        registry = await tools.for_run()  # before anything changes: a toolset that fails leaves the run as is
        view = None
        chooser = self.input_filter
        if chooser is not None:
            items = tuple(ctx.memory.items)
            later: tuple[Any, ...] = ()
            if upto is not None:
                items, later = items[:upto], items[upto:]
            shown = tuple(to_items(tuple(chooser(items))))
            check_items(shown, source=f"the input_filter of the handoff to {agent.name!r}")
            # A call the filter kept without its output would be refused by both APIs: it gets the
            # synthetic one a stored conversation's open call gets.
            shown = (answer_unanswered_calls(shown) or shown) + later
            # Counted in the run's own items, not memory's: a memory that trims (``WindowedMemory``) would
            # move an index into its items.
            view = (shown, len(ctx.new_items))
        ctx.model = model
        ctx.refresh_model_name()
        ctx.tools = registry
        ctx.all_tools = None  # the target's tools offered in its steps are chosen from its own
        ctx.settings = settings
        ctx.reset_executor()
        ctx.system_prompt = agent._system_text
        ctx.instructions = agent._instructions_text
        ctx.prompt_functions = agent._prompt_functions
        ctx.prompts_step = -1
        ctx.tools_step = -1
        ctx.handoffs = handoffs
        ctx.agent_name = agent.name
        ctx.item_view = view
        ctx.runtime_state = None
        ctx.prompt_cache = {}  # what one model client kept for its next calls means nothing to another
        ctx.agent_calls_from = len(ctx.tool_calls)
        ctx.runtime = agent.runtime
        return agent.runtime


def handoff(
    agent: Agent[Any],
    *,
    tool_name: str | None = None,
    description: str | None = None,
    input_filter: InputFilter | None = None,
    enabled: ToolEnabled = True,
    input_type: type[Any] | None = None,
    on_handoff: OnHandoff | None = None,
) -> Handoff:
    """``agent`` as a handoff of another agent (``Agent(handoffs=[handoff(billing, ...)])``).

    - ``tool_name``: the tool the model calls to hand over; default ``transfer_to_<agent's name>`` in a
      function's style (an agent without a name of its own needs one, or ``Agent(name=...)``).
    - ``description``: when to hand over, for the model that chooses; default: "Hand the conversation over
      to the <name> agent, which answers the user from here." Say what the agent handles.
    - ``enabled``: when the transfer tool is offered, as ``@tool(enabled=...)``: ``True``, ``False`` or a
      function of the run (``run: PromptContext``) evaluated each step.
    - ``input_filter``: a function of the conversation at the handoff (a tuple of items, ending with the
      transfer call and its result) returning the items the target is shown instead, for the rest of the
      run; memory keeps them all. ``without_tool_calls`` drops the tool calls.
    - ``input_type``: what the model passes when it hands over (an attrs class, dataclass, ``TypedDict`` or
      pydantic model: its fields are the transfer tool's parameters, validated as a tool's arguments are).
      Without it the tool takes no arguments (any the model adds are ignored).
    - ``on_handoff``: a function (sync or async) called when the model hands over, before the target takes
      the run: ``on_handoff(ctx)`` with the call's ``ToolContext`` (``deps``, ``run_id``…), or
      ``on_handoff(ctx, data)`` with the ``input_type`` value. A sync one runs on the event loop, as
      ``enabled`` functions do: keep it quick, or make it async. One that raises is the transfer's
      ``TOOL_ERROR``: nothing is handed over, and the model is told why.

    >>> from agentflow import Agent
    >>> from agentflow.testing.fake import FakeModelClient
    >>> billing = Agent(FakeModelClient([]), name="Billing")
    >>> handoff(billing, description="Invoices, refunds and payment methods.").tool_name
    'transfer_to_billing'
    """
    from .agent import Agent

    if not isinstance(agent, Agent):
        raise TypeError(f"handoff() takes an Agent, got {type(agent).__name__}")
    if tool_name is None:
        tool_name = "transfer_to_" + function_style(
            agent, "handoff()", "tool_name=", "handoff(agent, tool_name='transfer_to_billing')"
        )
    if description is None:
        description = (
            f"Hand the conversation over to the {agent.name} agent, which answers the user from here."
        )
    elif not isinstance(description, str) or not description.strip():
        raise TypeError(f"handoff(description=...) must be a non-empty str, got {description!r}")
    if input_filter is not None and not callable(input_filter):
        raise TypeError(
            "handoff(input_filter=...) takes a function of the conversation's items that returns the items "
            f"the agent is shown (e.g. without_tool_calls), got {type(input_filter).__name__}"
        )
    if on_handoff is not None and not callable(on_handoff):
        raise TypeError(
            "handoff(on_handoff=...) takes a function of the call's ToolContext (and the input_type value, "
            f"with input_type=), got {type(on_handoff).__name__}"
        )
    if not _runs_base_loop(agent.runtime):
        raise TypeError(_no_handoffs(agent.runtime, "be handed a run"))
    done = f"Handed the conversation over to {agent.name}."
    # No parameters, but any object of arguments is taken and ignored: a model that adds a ``reason`` still
    # hands over, rather than spending a step on a retry.
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    read: Callable[[Any], Any] | None = None
    if input_type is not None:
        shape = shape_of(input_type, where="handoff(input_type=...)")
        if shape.schema.get("type") != "object" or shape.convert is None:
            raise TypeError(
                "handoff(input_type=...) takes a class with fields (attrs, dataclass, TypedDict or pydantic "
                f"model), got {input_type!r}"
            )
        parameters, read = shape.schema, shape.convert

    async def transfer(context: ToolContext[Any], **arguments: Any) -> str:
        if on_handoff is not None:
            answer = on_handoff(context) if read is None else on_handoff(context, read(arguments))
            if inspect.isawaitable(answer):
                await answer
        return done

    spec = ToolSpec(name=tool_name, description=description, parameters=parameters)
    return Handoff(agent, Tool.from_spec(spec, transfer, inline=True, enabled=enabled), input_filter)


def handoffs_of(owner: AgentRuntime, entries: Iterable[object]) -> tuple[Handoff, ...]:
    """An agent's ``handoffs=``, checked: each an ``Agent`` (a ``handoff()`` with the defaults) or a
    ``Handoff``; ``TypeError`` for anything else or for runtimes that cannot hand over, ``ValueError`` for
    two with one tool name."""
    if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Iterable):
        raise TypeError(
            f"handoffs must be a list of agents or handoff(...) values, got {type(entries).__name__}"
        )
    from .agent import Agent

    found: list[Handoff] = []
    for index, entry in enumerate(entries):
        if isinstance(entry, Agent):
            entry = handoff(entry)
        elif not isinstance(entry, Handoff):
            raise TypeError(
                f"handoffs[{index}] is a {type(entry).__name__}; give an Agent or handoff(agent, ...)"
            )
        if any(known.tool_name == entry.tool_name for known in found):
            raise ValueError(
                f"two handoffs have the tool name {entry.tool_name!r}; give one of them "
                "handoff(agent, tool_name=...)"
            )
        found.append(entry)
    if found and not _runs_base_loop(owner):
        raise TypeError(_no_handoffs(owner, "hand its run over"))
    return tuple(found)


def _no_handoffs(runtime: AgentRuntime, what: str) -> str:
    return (
        f"an agent on the {runtime.name} runtime cannot {what}: handoffs continue the run on the shared "
        "tool-calling loop (runtime='react', 'deep_research'), and this runtime runs its steps its own way; "
        "use agent.as_tool(...) to delegate to it instead"
    )


def reachable_agents(agent: Agent[Any]) -> list[Agent[Any]]:
    """The agents ``agent`` may hand a run to, directly or through others, each once, ``agent`` excluded."""
    seen = {id(agent)}
    found: list[Agent[Any]] = []
    queue = [agent]
    while queue:
        for entry in queue.pop(0).handoffs:
            target = entry.agent
            if id(target) not in seen:
                seen.add(id(target))
                found.append(target)
                queue.append(target)
    return found
