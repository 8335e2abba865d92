"""``DeepResearchRuntime``: plan first, then the ReAct loop (seed 002 §6, DESIGN §4).

One run::

    RunStarted
    [user input → memory]
    planner.plan(goal)  → on_plan hook (may edit) → "Plan:\\n1. …\\n2. …\\n" item (plan_role) → memory
        (in plan(), a model planner's call: ModelRequest [ModelRetry…] [UsageReported] ModelCompleted)
    PlanCreated(plan)
    the base loop (ReAct: text + native tool calls), and with ``replan_every=N``, after every N-th step:
        planner.plan(goal, progress so far) → on_plan → "Updated plan:\\n…" → memory → PlanUpdated(plan)
        (its model call published as the first plan's)
    exactly one terminal event

A planner's model call (made through ``PlanContext.model_call``) is published as a step's blocking call is,
but outside any step (between ``RunStarted`` or a ``StepFinished`` and the plan's event), with the step of
the plan event it leads to; its text and reasoning are not published as deltas (they are the plan, not the
agent's answer: ``ModelCompleted`` carries them). Its usage counts the moment it completes.

Where this does better than the reference: the plan goes after the user input, once per run (also in a
session, and for streamed runs); the planner may be model-backed (``ModelPlanner``) and may re-plan with the
progress so far; the caller can inspect or edit every plan before it is used; and the plan is typed, with a
status per step, and published as events. Planning tokens count towards the run's usage and budget.

This module holds the runtime's hooks only; planners live in ``agentflow.runtimes.planner`` and the plan's
values in ``agentflow.plan``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeAlias

import attrs

from ..agent.chat_client import chat_result
from ..agent.items import NoteRole, check_note_role, is_runtime_note, message_item, to_chat_messages
from ..events import ModelRequest, PlanCreated, PlanUpdated
from ..model.events import ModelCompleted, UsageReported
from ..model.messages import AiMessage, UserMessage
from ..model.protocol import ChatModel
from ..model.request import ChatRequest
from ..model.response import ChatResponse, TokenUsage
from ..plan import Plan
from ..result import StopReason
from .context import RunContext
from .model_calls import blocking_call
from .planner import PlanContext, Planner, PlanningError, SimplePlanner
from .react import ReActRuntime

__all__ = ["DEEP_RESEARCH_INSTRUCTIONS", "DeepResearchRuntime", "PlanHook", "PlanRole"]

DEEP_RESEARCH_INSTRUCTIONS = (
    "Break down tasks into steps and call tools for evidence. Provide a structured final summary."
)
"""The reference's DeepResearch instructions, verbatim."""

UPDATED_PLAN_HEADER = "Updated plan:"
"""The first line of the item a re-plan writes (the first plan's is the reference's ``Plan:``; both are
among ``items.RUNTIME_NOTE_PREFIXES``)."""

PlanHook: TypeAlias = Callable[[Plan], Plan | Awaitable[Plan | None] | None]
"""``on_plan(plan)``: return ``None`` to keep the plan, or the plan to use instead; may be async."""

PlanRole: TypeAlias = NoteRole
"""The role of the message that carries the plan in memory (``DeepResearchRuntime(plan_role=…)``)."""


@attrs.define(eq=False)
class _Research:
    """What DeepResearch keeps per run (on ``RunContext.runtime_state``): the current plan, and how many of
    the run's tool calls had been made when it was planned (the planner saw those)."""

    plan: Plan
    tool_calls_seen: int = 0


_CONVERSATION_TURNS = 6
"""How many of a session's earlier user and assistant messages the first plan of a run is told about."""


def _conversation(ctx: RunContext) -> tuple[tuple[str, str], ...]:
    """The user and assistant texts in memory before this run's items, the latest ``_CONVERSATION_TURNS``."""
    items = ctx.memory.items
    earlier = items[: max(0, len(items) - len(ctx.new_items))]
    if not earlier:
        return ()
    turns: list[tuple[str, str]] = []
    for message in to_chat_messages(earlier):
        if isinstance(message, UserMessage | AiMessage) and message.text:
            if isinstance(message, UserMessage) and is_runtime_note(message):
                continue  # an earlier run's plan (plan_role="user"), a retry prompt: not what the user said
            turns.append(("user" if isinstance(message, UserMessage) else "assistant", message.text))
    return tuple(turns[-_CONVERSATION_TURNS:])


class _PlanningCall:
    """``PlanContext.model_call`` for one planning of a run: the planner's model call, published and counted
    as a step's blocking call is (``AgentRuntime.call_model``), its text aside.

    ``made`` counts the calls that went through it (the run then has their usage already). Emptied when the
    planning ends: a planner may keep the context it was given, and through it the whole run; a call made
    after that is a plain ``model.chat``.
    """

    __slots__ = ("ctx", "made")

    def __init__(self, ctx: RunContext) -> None:
        self.ctx: RunContext | None = ctx
        self.made = 0

    async def __call__(self, model: ChatModel, request: ChatRequest, /, **overrides: Any) -> ChatResponse:
        ctx = self.ctx
        if ctx is None:
            return await model.chat(request, **overrides)
        self.made += 1
        # The model asked for: the call's own, else the request's, else the model's default (when it says).
        name = overrides.get("model") or request.parameters.model or getattr(model, "model", None)
        if not isinstance(name, str):
            name = None
        tools = tuple(t.name for t in request.parameters.tools or ())
        # As for a step's call: built only when someone listens, and then as a pair (request, completion).
        listened = ctx.bus.has_listeners()
        if listened:
            await ctx.emit(ModelRequest(model=name, items=len(request.messages), tools=tools, purpose="plan"))
        response = await blocking_call(ctx, model.chat, request, **overrides)
        # Counted before anything is published: a cancel landing while it is keeps the tokens in the result.
        ctx.add_usage(response.usage)
        if not listened:
            return response
        if response.usage is not None:
            await ctx.emit(UsageReported(response.usage))
        # The plan's text is no part of the agent's answer: no TextDelta (a UI printing the deltas would show
        # the planner's JSON), and no memory items (the plan enters memory in its own form).
        await ctx.emit(ModelCompleted(attrs.evolve(chat_result(response), memory_items=())))
        return response


class DeepResearchRuntime(ReActRuntime):
    """Planning-enhanced ReAct: name ``deep_research``.

    - ``planner``: a ``Planner`` (default ``Planner.simple()``: the goal is the only step), e.g.
      ``ModelPlanner(chat_model)``. The goal is the run's input text.
    - ``replan_every``: re-plan after every N steps (``None``: never); the planner gets a ``PlanContext``
      with the current plan and the progress so far, and the result is published as ``PlanUpdated``.
    - ``on_plan``: called with every plan (the first, and each re-plan) before it is written to memory or
      published; it may return an edited ``Plan`` (sync or async) or ``None`` to keep it.
    - ``plan_role``: the role of the message that carries the plan in memory: ``"system"`` (default, as the
      reference), or ``"user"`` / ``"developer"`` for models whose chat template refuses a system message
      after the conversation has begun.

    One runtime instance serves concurrent runs: each run's plan is kept on its ``RunContext``.

    >>> DeepResearchRuntime().name
    'deep_research'
    >>> DeepResearchRuntime.instructions
    'Break down tasks into steps and call tools for evidence. Provide a structured final summary.'
    """

    name: ClassVar[str] = "deep_research"
    instructions: ClassVar[str | None] = DEEP_RESEARCH_INSTRUCTIONS

    def __init__(
        self,
        planner: Planner | None = None,
        *,
        replan_every: int | None = None,
        on_plan: PlanHook | None = None,
        plan_role: PlanRole = "system",
    ) -> None:
        if planner is None:
            planner = SimplePlanner()
        if not isinstance(planner, Planner):
            raise TypeError(
                f"planner must be a Planner (Planner.simple(), ModelPlanner(model) or a subclass), "
                f"got {type(planner).__name__}"
            )
        if replan_every is not None and (
            isinstance(replan_every, bool) or not isinstance(replan_every, int) or replan_every < 1
        ):
            raise ValueError(f"replan_every must be a positive integer or None, got {replan_every!r}")
        if on_plan is not None and not callable(on_plan):
            raise TypeError(f"on_plan must be callable, got {type(on_plan).__name__}")
        check_note_role("plan_role", plan_role)
        self.planner = planner
        self.replan_every = replan_every
        self.on_plan = on_plan
        self.plan_role: PlanRole = plan_role

    def __repr__(self) -> str:
        role = "" if self.plan_role == "system" else f", plan_role={self.plan_role!r}"
        return f"DeepResearchRuntime(planner={self.planner!r}, replan_every={self.replan_every!r}{role})"

    @staticmethod
    def plan_of(ctx: RunContext) -> Plan | None:
        """The current plan of the run ``ctx`` (``None`` before it is made); kept on ``ctx.runtime_state``."""
        state = ctx.runtime_state
        return state.plan if isinstance(state, _Research) else None

    def plan_item(self, plan: Plan, header: str = "Plan:") -> dict[str, Any]:
        """The memory item that carries ``plan``: its text form, as a ``plan_role`` message."""
        return message_item(self.plan_role, plan.to_text(header))

    # -- hooks -----------------------------------------------------------------------------------------------

    async def start(self, ctx: RunContext) -> None:
        """The user input, then the plan (a ``plan_role`` message) → memory, then ``PlanCreated``."""
        await super().start(ctx)
        made = await self._ask_planner(ctx, None)
        plan = await self.review(attrs.evolve(made, revision=0), usage=made.usage)
        ctx.runtime_state = _Research(plan, len(ctx.tool_calls))
        if plan.steps:
            ctx.remember((self.plan_item(plan),))
        await ctx.emit(PlanCreated(plan=plan))

    async def run_step(self, ctx: RunContext, *, final: bool = False) -> StopReason | None:
        """One step of the base loop; then, every ``replan_every`` steps while the run goes on, a re-plan."""
        stop = await super().run_step(ctx, final=final)
        every = self.replan_every
        max_steps = ctx.options.max_steps
        if (
            stop is None
            and not final
            and every is not None
            and ctx.step % every == 0
            and (max_steps is None or ctx.step < max_steps)
        ):
            await self.replan(ctx)
        return stop

    async def replan(self, ctx: RunContext) -> Plan:
        """Ask the planner again with the progress so far; write the plan if it changed; ``PlanUpdated``."""
        current = self.plan_of(ctx)
        if current is None:
            raise RuntimeError("replan() was called before the run's first plan was made")
        made = await self._ask_planner(ctx, current)
        plan = await self.review(attrs.evolve(made, revision=current.revision + 1), usage=made.usage)
        ctx.runtime_state = _Research(plan, len(ctx.tool_calls))
        if plan.steps and (plan.steps != current.steps or plan.goal != current.goal):
            ctx.remember((self.plan_item(plan, UPDATED_PLAN_HEADER),))
        await ctx.emit(PlanUpdated(plan=plan))
        return plan

    async def _ask_planner(self, ctx: RunContext, current: Plan | None) -> Plan:
        call = _PlanningCall(ctx)
        context = attrs.evolve(self.planning_context(ctx, current), model_call=call)
        try:
            made = await self.planner.plan(ctx.input_text, context)
        except PlanningError as exc:
            # A planning call that failed on its answer spent tokens too: the failed run's result counts them
            # (those made through ``model_call`` were counted as they completed).
            if exc.usage is not None and not call.made:
                ctx.add_usage(exc.usage)
            raise
        finally:
            call.ctx = None
        if not call.made:
            # A planner that called its model some other way reports what it spent on the plan.
            self._count_usage(ctx, made)
        return made

    def planning_context(self, ctx: RunContext, current: Plan | None) -> PlanContext:
        """What the planner is told: the agent's tools, system prompt and instructions and, when re-planning,
        the plan and the progress (with how many tool calls the plan had seen)."""
        state = ctx.runtime_state
        return PlanContext(
            current=current,
            steps_run=ctx.step,
            tool_calls=tuple(ctx.tool_calls),
            tool_results=tuple(ctx.tool_results),
            latest_text=ctx.output_text,
            tools=ctx.tools.specs,
            conversation=_conversation(ctx) if current is None else (),
            system_prompt=ctx.system_prompt,
            instructions=ctx.instructions,
            tool_calls_seen=state.tool_calls_seen if isinstance(state, _Research) else 0,
        )

    async def review(self, plan: Plan, *, usage: TokenUsage | None = None) -> Plan:
        """``on_plan(plan)``: the plan it returns (``plan`` itself when it returns ``None`` or is not set),
        keeping ``plan``'s revision and carrying ``usage`` (what the planner spent)."""
        chosen = plan
        if self.on_plan is not None:
            edited = self.on_plan(plan)
            if inspect.isawaitable(edited):
                edited = await edited
            if edited is not None:
                if not isinstance(edited, Plan):
                    raise TypeError(f"on_plan must return a Plan or None, got {type(edited).__name__}")
                chosen = edited
        return attrs.evolve(chosen, revision=plan.revision, usage=usage)

    @staticmethod
    def _count_usage(ctx: RunContext, plan: Plan) -> None:
        # The planning call is a model call of the run: its tokens count towards the usage and the budget.
        if plan.usage is not None:
            ctx.add_usage(plan.usage)
