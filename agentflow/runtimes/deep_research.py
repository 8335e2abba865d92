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
session, and for streamed runs); the planner may be model-backed (``AgentModelPlanner``, ``ModelPlanner``)
and may re-plan with the progress so far; the caller can inspect or edit every plan before it is used; and
the plan is typed, with a status per step, and published as events. Planning tokens count towards the run's
usage and budget.

The planning itself (the hooks' work, the planner's published model call, the plan in memory and in events)
is ``agentflow.runtimes.planning.Planning``, shared with CodeAct; this module holds the runtime's two hooks
that call it. Planners live in ``agentflow.runtimes.planner``, the plan's values in ``agentflow.plan``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..plan import Plan
from ..result import StopReason
from .context import RunContext
from .planner import Planner, SimplePlanner
from .planning import UPDATED_PLAN_HEADER, PlanHook, Planning, PlanRole, PlanState
from .react import ReActRuntime

__all__ = ["DEEP_RESEARCH_INSTRUCTIONS", "UPDATED_PLAN_HEADER", "DeepResearchRuntime", "PlanHook", "PlanRole"]

DEEP_RESEARCH_INSTRUCTIONS = (
    "Break down tasks into steps and call tools for evidence. Provide a structured final summary."
)
"""The reference's DeepResearch instructions, verbatim."""


class DeepResearchRuntime(ReActRuntime):
    """Planning-enhanced ReAct: name ``deep_research``.

    - ``planner``: a ``Planner`` (default ``Planner.simple()``: the goal is the only step), e.g.
      ``AgentModelPlanner()`` (the agent's own model plans, each run's) or ``ModelPlanner(chat_model)``
      (that model plans). The goal is the run's input text.
    - ``replan_every``: re-plan after every N steps (``None``: never); the planner gets a ``PlanContext``
      with the current plan and the progress so far, and the result is published as ``PlanUpdated``.
    - ``on_plan``: called with every plan (the first, and each re-plan) before it is written to memory or
      published; it may return an edited ``Plan`` (sync or async) or ``None`` to keep it.
    - ``plan_role``: the role of the message that carries the plan in memory: ``"system"`` (default, as the
      reference), or ``"user"`` / ``"developer"`` for models whose chat template refuses a system message
      after the conversation has begun.

    They make the runtime's ``planning`` (``Planning``), whose options are also read here (``planner``,
    ``replan_every``, ``on_plan``, ``plan_role``). One runtime instance serves concurrent runs: each run's
    plan is kept on its ``RunContext``.

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
        self.planning = Planning(
            SimplePlanner() if planner is None else planner,
            replan_every=replan_every,
            on_plan=on_plan,
            plan_role=plan_role,
        )

    def __repr__(self) -> str:
        return f"DeepResearchRuntime({self.planning.arguments()})"

    @property
    def planner(self) -> Planner:
        """The runtime's planner."""
        return self.planning.planner

    @property
    def replan_every(self) -> int | None:
        """Re-plan after every this many steps (``None``: never)."""
        return self.planning.replan_every

    @property
    def on_plan(self) -> PlanHook | None:
        """The hook every plan goes through before it is used."""
        return self.planning.on_plan

    @property
    def plan_role(self) -> PlanRole:
        """The role of the message that carries the plan in memory."""
        return self.planning.plan_role

    @staticmethod
    def plan_of(ctx: RunContext) -> Plan | None:
        """The current plan of the run ``ctx`` (``None`` before it is made); kept on ``ctx.runtime_state``."""
        state = ctx.runtime_state
        return state.plan if isinstance(state, PlanState) else None

    def plan_item(self, plan: Plan, header: str = "Plan:") -> dict[str, Any]:
        """The memory item that carries ``plan``: its text form, as a ``plan_role`` message."""
        return self.planning.plan_item(plan, header)

    # -- hooks -----------------------------------------------------------------------------------------------

    async def start(self, ctx: RunContext) -> None:
        """The user input, then the plan (a ``plan_role`` message) → memory, then ``PlanCreated``."""
        await super().start(ctx)
        if ctx.answered is not None or ctx.runtime is not None:
            # A resumed run its approved calls answered: nothing to plan for; or one that goes on with a
            # handoff's target, which planned if it plans (``take_over``).
            return
        state = PlanState()
        ctx.runtime_state = state
        await self.planning.plan(ctx, state)

    async def take_over(self, ctx: RunContext) -> None:
        """A handoff gave this runtime's agent the run: it plans for the run's goal (its input) first, with
        the conversation so far in memory, as ``start`` does (``PlanCreated``)."""
        state = PlanState()
        ctx.runtime_state = state
        await self.planning.plan(ctx, state)

    async def run_step(self, ctx: RunContext, *, final: bool = False) -> StopReason | None:
        """One step of the base loop; then, every ``replan_every`` steps while the run goes on, a re-plan."""
        stop = await super().run_step(ctx, final=final)
        if self.planning.replan_due(ctx, stop, final=final):
            await self.replan(ctx)
        return stop

    async def replan(self, ctx: RunContext) -> Plan:
        """Ask the planner again with the progress so far; write the plan if it changed; ``PlanUpdated``."""
        state = ctx.runtime_state
        if not isinstance(state, PlanState) or state.plan is None:
            raise RuntimeError("replan() was called before the run's first plan was made")
        return await self.planning.replan(ctx, state)
