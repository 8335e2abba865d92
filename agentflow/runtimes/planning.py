"""``Planning``: what a runtime does to plan a run, written once for every runtime that plans.

A runtime that plans (``DeepResearchRuntime`` always, ``CodeActRuntime`` when given a planner) holds one
``Planning`` and calls it from two of its hooks::

    start       the input → memory (the base hook), then ``planning.plan(ctx, state)``:
                    planner.plan(goal) → on_plan (may edit) → "Plan:\\n1. …\\n" item (plan_role) → memory
                    → PlanCreated(plan)
    run_step    the step (the base hook), then, when ``planning.replan_due(…)`` (every ``replan_every`` steps
                while the run goes on), ``planning.replan(ctx, state)``:
                    planner.plan(goal, progress) → on_plan → "Updated plan:\\n…" (when it changed) → memory
                    → PlanUpdated(plan)

A planner's model call, made through ``PlanContext.model_call`` (a model of the planner's own) or
``PlanContext.agent_model_call`` (the run's model client, for the run's model name: ``AgentModelPlanner``,
what ``planner="model"`` builds), is published as a step's blocking call is, but outside any step
(``ModelRequest(purpose="plan")`` [``ModelRetry``…] [``UsageReported``] ``ModelCompleted``, right before the
plan's event and with its step); its text and reasoning are not published as deltas (they are the plan, not
the agent's answer). Its usage counts the moment it completes, towards the run's usage and token budget; a
planner that calls its model some other way reports ``plan.usage``, which is counted instead.

Why a held object rather than a mixin class: the two runtimes that plan are built differently (DeepResearch
is ReAct with a plan; CodeAct overrides most hooks and keeps its own per-run state), and a mixin would have
to sit in both MROs, reach its per-run state through whichever state the runtime keeps, and make "no
planning" a branch inside every inherited hook. Held, ``planning`` is ``None`` when a runtime does not plan
(nothing runs, so CodeAct without a planner is exactly what it was), each runtime's ``start`` and
``run_step`` say in two lines where planning enters its loop, the runtime decides where the run's
``PlanState`` lives (DeepResearch: ``RunContext.runtime_state``; CodeAct: its own run state) and hands it
in, and the class hierarchies stay as they were.

The per-run state is a ``PlanState``, never kept on the runtime or on this object, so one runtime serves
concurrent runs. Nothing here knows how a runtime runs its steps: a runtime that runs code records each code
step on ``PlanState.code_actions`` for the re-plans to show (``planner.planning_input``).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol, TypeAlias, TypeVar

import attrs

from ..agent.chat_client import chat_result
from ..agent.items import NoteRole, check_note_role, is_runtime_note, message_item, to_chat_messages
from ..agent.prompt import AgentModelResult, AgentPrompt, ModelClient
from ..events import ModelRequest, PlanCreated, PlanUpdated
from ..model.events import ModelCompleted, UsageReported
from ..model.messages import AiMessage, UserMessage
from ..model.protocol import ChatModel
from ..model.request import ChatRequest, parameters_from
from ..model.response import ChatResponse, TokenUsage
from ..plan import Plan
from ..result import StopReason
from .context import RunContext
from .model_calls import blocking_call
from .planner import AgentModelPlanner, CodeAction, PlanContext, Planner, PlanningError, SimplePlanner
from .tool_availability import choose_tools

__all__ = [
    "UPDATED_PLAN_HEADER",
    "PlanHook",
    "PlanRole",
    "PlanState",
    "Planning",
    "TurnText",
    "planner_for",
]

UPDATED_PLAN_HEADER = "Updated plan:"
"""The first line of the item a re-plan writes (the first plan's is the reference's ``Plan:``; both are
among ``items.RUNTIME_NOTE_PREFIXES``)."""

PlanHook: TypeAlias = Callable[[Plan], Plan | Awaitable[Plan | None] | None]
"""``on_plan(plan)``: return ``None`` to keep the plan, or the plan to use instead; may be async."""

PlanRole: TypeAlias = NoteRole
"""The role of the message that carries the plan in memory (``plan_role=…``)."""

TurnText: TypeAlias = Callable[[str], str | None]
"""How a runtime's assistant turn reads as what the agent said to the user (CodeAct: a final message's
output, prose as it is); ``None`` leaves the turn out (code, which is no answer)."""


@attrs.define(eq=False)
class PlanState:
    """What planning keeps for one run (on the run's state, never on the runtime).

    ``plan`` is the current plan (``None`` until the first is made); ``tool_calls_seen`` how many of the run's
    tool calls had been made when it was planned (the planner saw those). ``code_actions`` is ``None`` for a
    runtime that makes native tool calls; a runtime that runs code starts it as a list and appends each code
    step with its outcome (``code_actions_seen`` of them had run when the plan was made).
    """

    plan: Plan | None = None
    tool_calls_seen: int = 0
    code_actions: list[CodeAction] | None = None
    code_actions_seen: int = 0

    def seen(self, ctx: RunContext, plan: Plan) -> None:
        """Make ``plan`` the current plan, made knowing the run's progress so far."""
        self.plan = plan
        self.tool_calls_seen = len(ctx.tool_calls)
        self.code_actions_seen = len(self.code_actions or ())


_CONVERSATION_TURNS = 6
"""How many of a session's earlier user and assistant messages the first plan of a run is told about."""


def _conversation(ctx: RunContext, turn_text: TurnText | None) -> tuple[tuple[str, str], ...]:
    """The user and assistant texts in memory before this run's items, the latest ``_CONVERSATION_TURNS``."""
    items = ctx.memory.items
    earlier = items[: max(0, len(items) - len(ctx.new_items))]
    if not earlier:
        return ()
    turns: list[tuple[str, str]] = []
    for message in to_chat_messages(earlier):
        if isinstance(message, UserMessage) and message.text:
            if is_runtime_note(message):
                continue  # an earlier run's plan (plan_role="user"), a retry prompt: not what the user said
            turns.append(("user", message.text))
        elif isinstance(message, AiMessage) and message.text:
            said = message.text if turn_text is None else turn_text(message.text)
            if said:
                turns.append(("assistant", said))
    return tuple(turns[-_CONVERSATION_TURNS:])


class _Billed(Protocol):
    """A model call's answer, whichever kind: what it spent is on it."""

    @property
    def usage(self) -> TokenUsage | None: ...


_R = TypeVar("_R", bound=_Billed)


class _PlanningCall:
    """``PlanContext.model_call`` and ``.agent_model_call`` for one planning of a run: the planner's model
    call, published and counted as a step's blocking call is (``AgentRuntime.call_model``), its text aside.

    ``agent`` sends through the run's model client (an ``agent.override``'s included), for the model name the
    run's settings give when the prompt names none: both are read from the run when its planning starts,
    never kept by the planner. ``made`` counts the calls that went through it (the run then has their usage
    already). Let go of the run when the planning ends: a planner may keep the context it was given, and
    through it the whole run; a call made after that is a plain ``model.chat`` (``client.create``).
    """

    __slots__ = ("client", "ctx", "made", "model_name")

    def __init__(self, ctx: RunContext) -> None:
        self.ctx: RunContext | None = ctx
        self.client: ModelClient = ctx.model
        self.model_name = ctx.settings.model
        self.made = 0

    async def __call__(self, model: ChatModel, request: ChatRequest, /, **overrides: Any) -> ChatResponse:
        ctx = self.ctx
        if ctx is None:
            return await model.chat(request, **overrides)
        # The model asked for: the call's own, else the request's, else the model's default (when it says).
        name = overrides.get("model") or request.parameters.model or getattr(model, "model", None)
        if not isinstance(name, str):
            name = None
        tools = tuple(t.name for t in request.parameters.tools or ())
        return await self._made(
            ctx,
            name,
            len(request.messages),
            tools,
            lambda: model.chat(request, **overrides),
            chat_result,
            lambda: _chat_prompt(name, request, overrides),
        )

    async def agent(self, prompt: AgentPrompt, /) -> AgentModelResult:
        """``PlanContext.agent_model_call``: ``prompt`` through the run's model client."""
        if prompt.model is None and self.model_name is not None:
            prompt = attrs.evolve(prompt, model=self.model_name)
        ctx = self.ctx
        if ctx is None:
            return await self.client.create(prompt)
        headers = ctx.settings.extra_headers
        if headers and not prompt.extra_headers:
            prompt = attrs.evolve(prompt, extra_headers=headers)  # the run's request id, gateway metadata…
        # Counted as the messages sent, as a ``ChatModel`` planner's are: the system prompt is one of them.
        messages = len(prompt.items) + sum(1 for text in (prompt.system_prompt, prompt.instructions) if text)
        tools = tuple(t.name for t in prompt.tools)
        return await self._made(
            ctx,
            ctx.model_name(prompt.model),
            messages,
            tools,
            lambda: self.client.create(prompt),
            _same,
            lambda: prompt,
        )

    async def _made(
        self,
        ctx: RunContext,
        name: str | None,
        messages: int,
        tools: tuple[str, ...],
        send: Callable[[], Awaitable[_R]],
        as_result: Callable[[_R], AgentModelResult],
        sent: Callable[[], AgentPrompt],
    ) -> _R:
        """The call ``send`` makes, published (its answer ``as_result``, as an agent's; what it sends as the
        prompt ``sent`` gives) and counted."""
        self.made += 1
        # As for a step's call: built only when someone listens, and then as a pair (request, completion).
        listened = ctx.bus.has_listeners()
        if listened:
            await ctx.emit(
                ModelRequest(model=name, items=messages, tools=tools, purpose="plan", prompt=sent())
            )
        response = await blocking_call(ctx, send)
        # Counted before anything is published: a cancel landing while it is keeps the tokens in the result.
        ctx.add_usage(response.usage)
        if not listened:
            return response
        if response.usage is not None:
            await ctx.emit(UsageReported(response.usage))
        # The plan's text is no part of the agent's answer: no TextDelta (a UI printing the deltas would show
        # the planner's JSON), and no memory items (the plan enters memory in its own form).
        await ctx.emit(ModelCompleted(attrs.evolve(as_result(response), memory_items=())))
        return response


def _same(result: AgentModelResult) -> AgentModelResult:
    return result


def _chat_prompt(name: str | None, request: ChatRequest, overrides: Mapping[str, Any]) -> AgentPrompt:
    """A ``ChatModel`` planner's request as the prompt its ``ModelRequest`` carries: its messages as items
    (the system message among them, as Chat sends it), its parameters (the call's overrides winning) as the
    prompt's fields, what has no field of its own (``seed``, ``stop``, provider fields) in ``extra_body``."""
    p = request.parameters
    if overrides:
        # Overrides the call refuses (it raises the error itself) leave the request as it stands.
        with contextlib.suppress(TypeError, ValueError):
            p = p.merged(parameters_from(overrides, "parameter override(s)"))
    extra: dict[str, Any] = dict(p.custom)
    if p.seed is not None:
        extra["seed"] = p.seed
    if p.stop is not None:
        extra["stop"] = list(p.stop)
    return AgentPrompt(
        model=name,
        items=request.messages,
        tools=p.tools or (),
        tool_choice=p.tool_choice,
        parallel_tool_calls=p.parallel_tool_calls,
        temperature=p.temperature,
        top_p=p.top_p,
        max_output_tokens=p.max_completion_tokens if p.max_completion_tokens is not None else p.max_tokens,
        reasoning=None if p.reasoning_effort is None else {"effort": p.reasoning_effort},
        user=p.user,
        extra_body=extra,
        response_format=p.response_format,
    )


def _check_replan_every(value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"replan_every must be a positive integer or None, got {value!r}")


class Planning:
    """How a runtime plans its runs: ``planner``, ``replan_every``, the ``on_plan`` hook and ``plan_role``.

    - ``planner``: a ``Planner`` (``Planner.simple()``, ``AgentModelPlanner()``, ``ModelPlanner(chat_model)``,
      your own). The goal is the run's input text.
    - ``replan_every``: re-plan after every N steps while the run goes on (``None``: never); the planner gets
      a ``PlanContext`` with the current plan and the progress so far, and the plan is published as
      ``PlanUpdated``.
    - ``on_plan``: called with every plan (the first, and each re-plan) before it is written to memory or
      published; it may return an edited ``Plan`` (sync or async) or ``None`` to keep it.
    - ``plan_role``: the role of the message that carries the plan in memory (``"system"``, ``"user"``,
      ``"developer"``).
    - ``turn_text``: how the runtime's earlier assistant turns read when the first plan of a session's run is
      told the conversation (``TurnText``; ``None``: their text as it is).

    Holds configuration only: a runtime builds one and hands each call the run's ``PlanState``.

    >>> Planning(Planner.simple(), replan_every=3)
    Planning(planner=SimplePlanner(), replan_every=3)
    """

    __slots__ = ("on_plan", "plan_role", "planner", "replan_every", "turn_text")

    def __init__(
        self,
        planner: Planner,
        *,
        replan_every: int | None = None,
        on_plan: PlanHook | None = None,
        plan_role: PlanRole = "system",
        turn_text: TurnText | None = None,
    ) -> None:
        if not isinstance(planner, Planner):
            raise TypeError(
                f"planner must be a Planner (Planner.simple(), ModelPlanner(model) or a subclass), "
                f"got {type(planner).__name__}"
            )
        _check_replan_every(replan_every)
        if on_plan is not None and not callable(on_plan):
            raise TypeError(f"on_plan must be callable, got {type(on_plan).__name__}")
        check_note_role("plan_role", plan_role)
        self.planner = planner
        self.replan_every = replan_every
        self.on_plan = on_plan
        self.plan_role: PlanRole = plan_role
        self.turn_text = turn_text

    def __repr__(self) -> str:
        return f"Planning({self.arguments()})"

    def arguments(self, default_role: PlanRole = "system") -> str:
        """The planning part of a runtime's repr: ``planner=…, replan_every=…``, then ``plan_role=…`` when it
        is not ``default_role``."""
        role = "" if self.plan_role == default_role else f", plan_role={self.plan_role!r}"
        return f"planner={self.planner!r}, replan_every={self.replan_every!r}{role}"

    def plan_item(self, plan: Plan, header: str = "Plan:") -> dict[str, Any]:
        """The memory item that carries ``plan``: its text form, as a ``plan_role`` message."""
        return message_item(self.plan_role, plan.to_text(header))

    # -- the run's plans -------------------------------------------------------------------------------------

    async def plan(self, ctx: RunContext, state: PlanState) -> Plan:
        """The run's first plan (call it once the input is in memory): made, reviewed, kept on ``state``,
        written to memory (a ``plan_role`` message, when it has steps), then ``PlanCreated``."""
        made = await self._ask_planner(ctx, state, None)
        plan = await self.review(attrs.evolve(made, revision=0), usage=made.usage)
        state.seen(ctx, plan)
        if plan.steps:
            ctx.remember((self.plan_item(plan),))
        await ctx.emit(PlanCreated(plan=plan))
        return plan

    def replan_due(self, ctx: RunContext, stop: StopReason | None, *, final: bool = False) -> bool:
        """Whether to re-plan after the step just run: every ``replan_every`` steps, while the run goes on
        (the step gave no stop reason, it was not the last call after ``max_steps``, a step is left, and the
        run's token budget is not spent: the loop makes no model call once it is, and a re-plan's would be
        one, for a plan no step would follow), and the step did not hand the run to another agent (its
        steps, not this plan's, come next)."""
        every = self.replan_every
        max_steps = ctx.options.max_steps
        return (
            stop is None
            and ctx.handoff is None
            and not final
            and every is not None
            and ctx.step % every == 0
            and (max_steps is None or ctx.step < max_steps)
            and not ctx.token_budget_reached
        )

    async def replan(self, ctx: RunContext, state: PlanState) -> Plan:
        """Ask the planner again with the progress so far; write the plan if it changed; ``PlanUpdated``."""
        current = state.plan
        if current is None:
            raise RuntimeError("replan() was called before the run's first plan was made")
        made = await self._ask_planner(ctx, state, current)
        plan = await self.review(attrs.evolve(made, revision=current.revision + 1), usage=made.usage)
        state.seen(ctx, plan)
        if plan.steps and (plan.steps != current.steps or plan.goal != current.goal):
            ctx.remember((self.plan_item(plan, UPDATED_PLAN_HEADER),))
        await ctx.emit(PlanUpdated(plan=plan))
        return plan

    def context(self, ctx: RunContext, state: PlanState, current: Plan | None) -> PlanContext:
        """What the planner is told: the tools the run offers now (``RunContext.tools``: in a planning, those
        of the step the plan comes before), the agent's system prompt and instructions, the run's ``deps``;
        for a first plan the conversation before the run; when re-planning, the plan and the progress (with
        how much of it the plan had seen)."""
        actions = state.code_actions
        return PlanContext(
            current=current,
            steps_run=ctx.step,
            tool_calls=tuple(ctx.tool_calls),
            tool_results=tuple(ctx.tool_results),
            latest_text=ctx.output_text,
            tools=ctx.tools.specs,
            conversation=_conversation(ctx, self.turn_text) if current is None else (),
            system_prompt=ctx.system_prompt,
            instructions=ctx.instructions,
            deps=ctx.deps,
            tool_calls_seen=state.tool_calls_seen,
            code_actions=None if actions is None else tuple(actions),
            code_actions_seen=state.code_actions_seen,
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

    async def _ask_planner(self, ctx: RunContext, state: PlanState, current: Plan | None) -> Plan:
        # The agent's prompt functions, for the step the plan comes before: the planner is told this step's
        # texts, which the step's own call then reuses (they are evaluated once per step).
        await ctx.refresh_prompts()
        if ctx.all_tools is not None or ctx.tools.has_conditional:
            # ``@tool(enabled=fn)``: the planner is told the tools that step offers, not those it leaves out
            # (the step itself keeps them: asked once per step).
            await choose_tools(ctx)
        call = _PlanningCall(ctx)
        context = attrs.evolve(
            self.context(ctx, state, current), model_call=call, agent_model_call=call.agent
        )
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
        if not call.made and made.usage is not None:
            # A planner that called its model some other way reports what it spent on the plan: a model call
            # of the run, its tokens count towards the usage and the budget.
            ctx.add_usage(made.usage)
        return made


def planner_for(choice: Planner | Literal["simple", "model"]) -> Planner:
    """The planner a shortcut's ``planner=`` names (``Agents.deep_research``, ``Agents.codeact``): a
    ``Planner`` as it is, ``"simple"`` (``Planner.simple()``), or ``"model"``: an ``AgentModelPlanner``, which
    plans with the agent's own model, whichever each run uses (an ``agent.override``'s included).

    >>> planner_for("simple"), planner_for("model")
    (SimplePlanner(), AgentModelPlanner(on_invalid='fallback'))
    """
    if isinstance(choice, Planner):
        return choice
    if choice == "simple":
        return SimplePlanner()
    if choice == "model":
        return AgentModelPlanner()
    if isinstance(choice, str):
        raise ValueError(f"planner must be 'simple', 'model' or a Planner, got {choice!r}")
    raise TypeError(
        f"planner must be a Planner (Planner.simple(), ModelPlanner(model) or a subclass), "
        f"'simple' or 'model', got {type(choice).__name__}"
    )
