"""Planners: ``Planner`` (the interface), ``SimplePlanner``, ``ModelPlanner`` and ``AgentModelPlanner``, for
any runtime that plans (DeepResearch always, CodeAct when given a planner; ``agentflow.runtimes.planning``).

A planner turns a goal into a ``Plan`` (``agentflow.plan``); when the runtime re-plans, it also gets the
progress so far (``PlanContext``): tool calls and their results, and for CodeAct the code steps with the
outcome each was shown (``CodeAction``). ``Planner.simple()`` does what the reference's planner does: the
goal is the only step. ``ModelPlanner`` asks a ``ChatModel`` of its own for a JSON list of steps;
``AgentModelPlanner`` asks the agent's own model, whatever each run uses (an ``agent.override``'s in a test).
Both read the answer tolerantly (code fences, prose around the JSON, ``{"steps": [...]}``, step objects with
a status, or a numbered list); an answer that is not a plan raises ``PlanParseError`` or falls back to the
simple plan.

``parse_plan_steps`` and ``planning_input`` are pure (text in, values out). The one I/O here is the model
planners' call, made through ``PlanContext.model_call`` (``ModelPlanner``) or ``PlanContext.agent_model_call``
(``AgentModelPlanner``). Nothing here knows about runs, memory or events: the runtime's ``Planning``
(``agentflow.runtimes.planning``) does that, and the calls it passes are how a planner's model calls reach
the run's model, events and usage.
"""

from __future__ import annotations

import abc
import bisect
import logging
import re
from collections.abc import Awaitable, Mapping
from typing import Any, Literal, Protocol

import attrs

from ..agent.prompt import AgentModelResult, AgentPrompt
from ..model.messages import SystemMessage, ToolCall, UserMessage
from ..model.protocol import ChatModel
from ..model.request import ChatRequest
from ..model.response import ChatResponse, TokenUsage
from ..model.tools import ToolSpec
from ..plan import Plan, PlanStep, StepStatus
from ..result import ToolResult
from .json_text import MAX_SCANNED_CHARS, json_spans

__all__ = [
    "MAX_PLANNED_CALLS",
    "MAX_PLANNED_CODE_STEPS",
    "PLANNER_PROMPT",
    "REPLANNER_PROMPT",
    "AgentModelCall",
    "AgentModelPlanner",
    "CodeAction",
    "ModelCall",
    "ModelPlanner",
    "OnInvalidPlan",
    "PlanContext",
    "PlanParseError",
    "Planner",
    "PlanningError",
    "SimplePlanner",
    "parse_plan_steps",
    "planning_input",
]

_log = logging.getLogger("agentflow")

OnInvalidPlan = Literal["fallback", "raise"]
"""What ``ModelPlanner`` does with an answer that is not a plan: use the simple plan, or raise."""

PLANNER_PROMPT = (
    "You are the planner of a research agent. Break the goal into at most {max_steps} short, concrete steps; "
    "each step gathers evidence with the agent's tools or works out part of the answer, and keeps to the "
    "agent's instructions when you are given them. "
    'Reply with JSON only, no other text: {{"steps": ["first step", "second step"]}}'
)
"""The planner's system prompt for a run's first plan (``{max_steps}`` is filled in)."""

REPLANNER_PROMPT = (
    "You are the planner of a research agent. You get the goal, the current plan and the progress so far "
    "(and the agent's instructions, which every step must keep to). Revise the plan: mark finished steps "
    "done, the step being worked on in_progress and steps no longer needed skipped; reword or add the steps "
    "still to do (at most {max_steps} steps in all). "
    'Reply with JSON only, no other text: {{"steps": [{{"step": "...", "status": '
    '"done|in_progress|pending|skipped"}}]}}'
)
"""The planner's system prompt when the runtime re-plans (``{max_steps}`` is filled in)."""

_MAX_JSON_SPANS = 256  # bracketed spans tried in it (prose may hold many: "[1]", "[draft]"…)
_EXCERPT = 200
_RESULT_CHARS = 500
_INSTRUCTION_CHARS = 8000
_NOTES_CHARS = 4000
MAX_PLANNED_CALLS = 20
"""The most tool calls a re-planning request shows (the latest since the current plan; others are counted)."""
MAX_PLANNED_CODE_STEPS = 5
"""The most CodeAct code steps a re-planning request shows (the latest since the current plan; others are
counted). Each shows at most 1,500 characters of its code and 800 of its outcome."""
_CODE_CHARS = 1500
_OUTCOME_CHARS = 800


class PlanningError(Exception):
    """Planning failed (the base of the planners' own errors).

    ``usage`` is what the failed planning call spent, when it got an answer (the run counts it).
    """

    usage: TokenUsage | None = None


class PlanParseError(PlanningError):
    """A model's answer is not a plan; ``text`` is the answer.

    >>> parse_plan_steps("I cannot help with that.")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentflow.runtimes.planner.PlanParseError: the model's answer is not a plan ...: 'I cannot help...'
    """

    def __init__(self, message: str, text: str) -> None:
        super().__init__(message)
        self.text = text


class ModelCall(Protocol):
    """How a planner calls a model in a run: ``await call(model, request, **overrides)``, as ``model.chat``.

    A planning runtime (``agentflow.runtimes.planning``) passes one on ``PlanContext.model_call``. It makes
    the call with ``model.chat`` and publishes it on the run's bus as the run's own model calls are
    (``ModelRequest``, its retries, ``ModelCompleted``), and counts its usage towards the run's: a planner
    that calls its model through it needs to do nothing else for its tokens to be seen and counted.
    """

    def __call__(
        self, model: ChatModel, request: ChatRequest, /, **overrides: Any
    ) -> Awaitable[ChatResponse]:
        """Send ``request`` to ``model`` (``overrides`` as for ``ChatModel.chat``); the whole response."""
        ...


class AgentModelCall(Protocol):
    """How a planner asks the agent's own model in a run: ``await call(prompt)``, as ``ModelClient.create``.

    A planning runtime passes one on ``PlanContext.agent_model_call``. It sends ``prompt`` through the run's
    model client (the agent's, or an ``agent.override``'s), for the model the run's settings name when the
    prompt names none, and publishes and counts the call as ``ModelCall`` does.
    """

    def __call__(self, prompt: AgentPrompt, /) -> Awaitable[AgentModelResult]:
        """Send ``prompt`` through the run's model client; the whole result."""
        ...


@attrs.frozen
class CodeAction:
    """One code step of a CodeAct run, as a re-plan is told of it: the run's step it ran in (0-based), its
    code, and the outcome the model was shown (the ``CODE_RESULT: …`` / ``CODE_ERROR: …`` text).

    A step whose code did not run (a limit was reached, the code was cut at the output-token limit) is one
    too: its outcome says why.
    """

    step: int
    code: str
    outcome: str


@attrs.frozen
class PlanContext:
    """What a planner knows besides the goal.

    ``tools`` are the agent's tools, ``system_prompt`` and ``instructions`` what the agent is told (so the
    plan keeps to its rules: "use the internal wiki only"; an agent's prompt functions' texts for the step
    the plan comes before), ``deps`` the run's dependencies (``agent.run(x, deps=...)``), and
    ``conversation`` the ``(role, text)`` of the user and assistant messages before this run's input (a
    session's earlier turns, the latest last), so a follow-up ("and how does it compare to B?") can be
    planned. When the runtime re-plans, ``current`` is the
    plan so far and the rest is the progress: the steps run, every tool call and its result, and the agent's
    latest text; ``tool_calls_seen`` of those calls had been made when ``current`` was planned (the planner
    saw them then), so a planner may show only the calls since (``planning_input`` does).

    ``code_actions`` is set by a runtime that acts by running code (CodeAct; ``None`` for one that makes
    native tool calls): every code step of the run with its outcome, of which ``code_actions_seen`` had run
    when ``current`` was planned. The calls that code made are in ``tool_calls`` as native ones are.

    ``model_call`` (set by the runtime for a run, ``None`` elsewhere) is how a planner that asks a model
    of its own should make the call (``ModelCall``), so the run publishes it and counts its tokens;
    ``agent_model_call`` (the same) is how a planner asks the agent's own model: the run's model client,
    for the run's model name (``AgentModelCall``). When a planning made any call through either, the run has
    counted those calls, and the plan's ``usage`` (or a ``PlanningError``'s) is not added to the run's usage
    again; otherwise it is.
    """

    current: Plan | None = None
    steps_run: int = 0
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    latest_text: str = ""
    tools: tuple[ToolSpec, ...] = ()
    conversation: tuple[tuple[str, str], ...] = ()
    system_prompt: str | None = None
    instructions: str | None = None
    tool_calls_seen: int = 0
    code_actions: tuple[CodeAction, ...] | None = None
    code_actions_seen: int = 0
    model_call: ModelCall | None = attrs.field(default=None, eq=False, repr=False)
    agent_model_call: AgentModelCall | None = attrs.field(default=None, eq=False, repr=False)
    deps: Any = attrs.field(default=None, eq=False, repr=False)
    """The run's dependencies (``agent.run(x, deps=...)``), as given; ``None`` when it got none."""

    @property
    def replanning(self) -> bool:
        """Whether this is a re-plan (there is a current plan)."""
        return self.current is not None


class Planner(abc.ABC):
    """Turns a goal into a ``Plan``. Subclass it and implement ``plan``, or use a built-in one.

    A planner that asks a model should make the call through ``context.model_call`` (or, to ask the agent's
    own model, ``context.agent_model_call``) when the context has one (see ``PlanContext``): a run then
    publishes the call and counts its tokens.

    >>> import anyio
    >>> anyio.run(Planner.simple().plan, "Why is the sky blue?").texts
    ('Why is the sky blue?',)
    """

    @abc.abstractmethod
    async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
        """The plan for ``goal``; ``context`` carries the tools and, when re-planning, the progress so far."""

    @staticmethod
    def simple() -> SimplePlanner:
        """The reference's planner: the goal is the plan's only step."""
        return SimplePlanner()

    @staticmethod
    def from_model(model: ChatModel, **options: Any) -> ModelPlanner:
        """A ``ModelPlanner`` asking ``model`` for the steps (``options`` as for ``ModelPlanner``)."""
        return ModelPlanner(model, **options)


class SimplePlanner(Planner):
    """The goal as the only step (no step for a blank goal); a re-plan keeps the current plan as it is."""

    def __repr__(self) -> str:
        return "SimplePlanner()"

    async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
        """``[goal]``, or the current plan unchanged when re-planning."""
        if context is not None and context.current is not None:
            return context.current
        return Plan(goal, (goal,) if goal.strip() else ())


def _on_invalid(_inst: object, _attr: object, value: str) -> None:
    if value not in ("fallback", "raise"):
        raise ValueError(f"on_invalid must be 'fallback' or 'raise', got {value!r}")


class _PromptedPlanner(Planner):
    """What the two model planners share: their options, the planning messages and reading the answer.

    Only where the call goes differs (a model of the planner's own, or the agent's), so only that is left to
    each.
    """

    def __init__(
        self,
        *,
        on_invalid: OnInvalidPlan = "fallback",
        max_steps: int = 6,
        prompt: str = PLANNER_PROMPT,
        replan_prompt: str = REPLANNER_PROMPT,
    ) -> None:
        _on_invalid(None, None, on_invalid)
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
        self.on_invalid: OnInvalidPlan = on_invalid
        self.max_steps = max_steps
        self.prompt = prompt
        self.replan_prompt = replan_prompt

    def _system_text(self, context: PlanContext | None) -> str:
        replanning = context is not None and context.replanning
        return (self.replan_prompt if replanning else self.prompt).format(max_steps=self.max_steps)

    async def _read(
        self, goal: str, context: PlanContext | None, text: str, usage: TokenUsage | None
    ) -> Plan:
        """The plan in the model's answer ``text``; for one that is not a plan, see ``on_invalid``."""
        try:
            steps = parse_plan_steps(text)
        except PlanParseError as exc:
            if self.on_invalid == "raise":
                exc.usage = usage
                raise
            _log.warning("%s: %s; using the simple plan instead", type(self).__name__, exc)
            fallback = await SimplePlanner().plan(goal, context)
            return attrs.evolve(fallback, usage=usage, fallback_reason=str(exc))
        return Plan(goal, steps, usage=usage)


class ModelPlanner(_PromptedPlanner):
    """Asks a ``ChatModel`` for the plan: a system prompt, then the goal (and when re-planning, the progress).

    - ``on_invalid``: ``"fallback"`` (default) uses ``SimplePlanner``'s plan when the answer is not a plan
      (and logs a warning on the ``agentflow`` logger); ``"raise"`` raises ``PlanParseError``. Model errors
      (``ModelError``) always propagate.
    - ``max_steps``: the most steps the prompt asks for (the answer is not cut).
    - ``prompt`` / ``replan_prompt``: the system prompts (``{max_steps}`` is filled in).
    - ``parameters``: ``ChatParameters`` fields for the planning call, e.g. ``{"temperature": 0}``.
    The call goes through ``context.model_call`` when there is one (in a run: published, and counted there),
    else straight to ``model.chat``. The plan's ``usage`` is the planning call's usage.

    The planner keeps ``model`` whatever the agent's runs use: to plan with the agent's own model (and an
    ``agent.override``'s in tests), use ``AgentModelPlanner``.

    >>> from agentflow.testing.fake import FakeChatModel, chat_reply
    >>> import anyio
    >>> planner = ModelPlanner(FakeChatModel([chat_reply('```json\\n{"steps": ["Find A", "Find B"]}\\n```')]))
    >>> anyio.run(planner.plan, "Compare A and B").texts
    ('Find A', 'Find B')
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        on_invalid: OnInvalidPlan = "fallback",
        max_steps: int = 6,
        prompt: str = PLANNER_PROMPT,
        replan_prompt: str = REPLANNER_PROMPT,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(model, ChatModel):
            raise TypeError(
                f"ModelPlanner needs a ChatModel (e.g. OpenAIChatModel), got {type(model).__name__}; "
                "AgentModelPlanner() plans with the agent's own model, whatever it is"
            )
        super().__init__(
            on_invalid=on_invalid, max_steps=max_steps, prompt=prompt, replan_prompt=replan_prompt
        )
        self.model = model
        self.parameters: dict[str, Any] = dict(parameters or {})

    def __repr__(self) -> str:
        return f"ModelPlanner({self.model!r}, on_invalid={self.on_invalid!r})"

    def request(self, goal: str, context: PlanContext | None = None) -> ChatRequest:
        """The planning request for ``goal`` (pure: what ``plan`` sends)."""
        return ChatRequest(
            [SystemMessage(self._system_text(context)), UserMessage(planning_input(goal, context))]
        )

    async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
        """Ask the model; parse its answer into a plan (see the class docstring for invalid answers)."""
        if not goal.strip():
            return Plan(goal)
        request = self.request(goal, context)
        call = context.model_call if context is not None else None
        if call is None:
            response = await self.model.chat(request, **self.parameters)
        else:
            response = await call(self.model, request, **self.parameters)
        return await self._read(goal, context, response.text, response.usage)


class AgentModelPlanner(_PromptedPlanner):
    """Asks the agent's own model for the plan, as ``ModelPlanner`` asks its model: what ``planner="model"``
    builds (``Agents.deep_research``, and ``Agents.codeact`` with ``replan_every`` alone).

    The model is the run's, found when the run plans (``PlanContext.agent_model_call``), never kept: its model
    client (the agent's, or an ``agent.override(model=...)``'s, so a test's plans come from its fake too) and
    the model name its settings ask for (the agent's, an override's or the run's own ``settings=``). The
    request is the agent's kind of prompt (``request``: the planner's system prompt and one user message, no
    tools), so any model client plans: a ``ChatModel``'s sends what ``ModelPlanner(chat_model)`` would; the
    run's other settings (temperature, output format…) are for its steps, not the plan. ``on_invalid``,
    ``max_steps``, ``prompt`` and ``replan_prompt`` are ``ModelPlanner``'s.

    It plans in a run only: called without the run's model (``plan(goal)`` alone) it raises ``RuntimeError``.

    >>> AgentModelPlanner().request("Compare A and B").system_prompt.startswith("You are the planner")
    True
    """

    def __repr__(self) -> str:
        return f"AgentModelPlanner(on_invalid={self.on_invalid!r})"

    def request(self, goal: str, context: PlanContext | None = None) -> AgentPrompt:
        """The planning prompt for ``goal`` (pure: what ``plan`` sends; the run fills in its model name)."""
        return AgentPrompt(
            system_prompt=self._system_text(context), items=(UserMessage(planning_input(goal, context)),)
        )

    async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
        """Ask the run's model; parse its answer into a plan (invalid answers as for ``ModelPlanner``)."""
        if not goal.strip():
            return Plan(goal)
        call = context.agent_model_call if context is not None else None
        if call is None:
            raise RuntimeError(
                "AgentModelPlanner plans with the agent's own model, in a run only "
                "(PlanContext.agent_model_call is not set); use ModelPlanner(chat_model) to plan with a "
                "model of its own"
            )
        result = await call(self.request(goal, context))
        return await self._read(goal, context, result.output_text, result.usage)


# --- the planning request -----------------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _clip_block(text: str, limit: int) -> str:
    """``text`` without its outer blank space, its lines kept, cut at ``limit`` characters (and saying so)."""
    text = text.strip()
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more characters]"


def planning_input(goal: str, context: PlanContext | None = None) -> str:
    """The planner's user message: the agent's instructions, the goal, the tools, and (when re-planning) the
    plan and the progress since it was made.

    The progress lists the tool calls made since the current plan (``PlanContext.tool_calls_seen`` on), at
    most the latest ``MAX_PLANNED_CALLS`` of them, and counts the others; for a runtime that runs code
    (``PlanContext.code_actions``) it lists first the code steps since the current plan, at most the latest
    ``MAX_PLANNED_CODE_STEPS``, each with its code and outcome cut to a fixed size. So the message stays the
    same size however long the run.

    >>> print(planning_input("Compare A and B"))
    Goal: Compare A and B
    >>> print(planning_input("Compare A and B", PlanContext(system_prompt="Use the internal wiki only.")))
    The agent's instructions (every step must keep to them):
    Use the internal wiki only.
    <BLANKLINE>
    Goal: Compare A and B
    """
    parts = [f"Goal: {goal.strip()}"]
    if context is None:
        return parts[0]
    if context.conversation:
        turns = [f"- {role}: {_clip(text, _RESULT_CHARS)}" for role, text in context.conversation]
        parts.insert(0, "Conversation so far:\n" + "\n".join(turns))
    rules = [text for text in (context.system_prompt, context.instructions) if text and text.strip()]
    if rules:
        told = _clip_block("\n\n".join(t.strip() for t in rules), _INSTRUCTION_CHARS)
        parts.insert(0, "The agent's instructions (every step must keep to them):\n" + told)
    if context.tools:
        lines = [f"- {t.name}: {t.description}" if t.description else f"- {t.name}" for t in context.tools]
        parts.append("Tools the agent can use:\n" + "\n".join(lines))
    if context.current is not None:
        parts.append(context.current.to_text("Current plan:").rstrip("\n"))
        parts.append(_progress(context))
        if context.latest_text.strip():
            parts.append("The agent's latest notes:\n" + _clip_block(context.latest_text, _NOTES_CHARS))
    return "\n\n".join(parts)


def _clip_ends(text: str, limit: int) -> str:
    """``text`` on one line, its start and its end kept (half each) when it is longer than ``limit``: a code
    step's outcome begins with its value and ends with its traceback or its last output."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return f"{text[:head]}… [{len(text) - limit} characters cut] …{text[-tail:]}"


def _first_shown(count: int, seen: int, shown: int) -> int:
    """Of ``count`` things (calls, code steps), the first ``seen`` known to the current plan: the index of the
    first one to show, showing at most the latest ``shown``. Those before it are counted, not shown."""
    return max(min(max(seen, 0), count), count - shown)


def _progress(context: PlanContext) -> str:
    """The progress since the current plan was made; the earlier part counted, not shown.

    For a runtime that makes native tool calls: those calls, each with its result. For one that runs code
    (``PlanContext.code_actions``): the code steps, each with its outcome, then the tool calls the code made.
    """
    head = f"Progress so far ({context.steps_run} steps run):"
    calls = _call_lines(context)
    if context.code_actions is None:
        return "\n".join((head, *calls))
    return "\n".join(
        (
            head,
            "Code run since the current plan:",
            *_code_lines(context),
            "Tool calls made from the code:",
            *calls,
        )
    )


def _call_lines(context: PlanContext) -> list[str]:
    """The tool calls since the current plan was made, each with its result; the earlier ones counted."""
    earlier = _first_shown(len(context.tool_calls), context.tool_calls_seen, MAX_PLANNED_CALLS)
    recent = context.tool_calls[earlier:]
    results = {r.call_id: r for r in context.tool_results}
    lines = []
    for call in recent:
        result = results.get(call.id)
        outcome = _clip(result.output, _RESULT_CHARS) if result is not None else "(no result)"
        lines.append(f"- {call.name}({_clip(call.arguments or '{}', _RESULT_CHARS)}) -> {outcome}")
    if earlier:
        lines.insert(0, f"- ({earlier} earlier tool calls not shown)")
    if not recent:
        lines.append(
            "- no tool calls since the current plan" if context.tool_calls else "- no tool calls yet"
        )
    return lines


def _code_lines(context: PlanContext) -> list[str]:
    """The code steps since the current plan was made: each step's code (indented, cut at ``_CODE_CHARS``)
    and its outcome (cut in the middle at ``_OUTCOME_CHARS``); the earlier steps counted."""
    actions = context.code_actions or ()
    earlier = _first_shown(len(actions), context.code_actions_seen, MAX_PLANNED_CODE_STEPS)
    lines = [f"- ({earlier} earlier code steps not shown)"] if earlier else []
    for action in actions[earlier:]:
        lines.append(f"- step {action.step + 1}:")
        code = _clip_block(action.code, _CODE_CHARS)
        # Indented rather than fenced: the code may hold a fence of its own.
        lines.extend(f"    {line}".rstrip() for line in code.splitlines() or ["(no code)"])
        lines.append(f"  {_clip_ends(action.outcome, _OUTCOME_CHARS)}")
    if earlier == len(actions):
        lines.append("- no code run since the current plan" if actions else "- no code run yet")
    return lines


# --- reading an answer --------------------------------------------------------------------------------------

_STATUS_WORDS: dict[str, StepStatus] = {
    "pending": StepStatus.PENDING,
    "todo": StepStatus.PENDING,
    "to_do": StepStatus.PENDING,
    "not_started": StepStatus.PENDING,
    "open": StepStatus.PENDING,
    "in_progress": StepStatus.IN_PROGRESS,
    "inprogress": StepStatus.IN_PROGRESS,
    "doing": StepStatus.IN_PROGRESS,
    "active": StepStatus.IN_PROGRESS,
    "current": StepStatus.IN_PROGRESS,
    "started": StepStatus.IN_PROGRESS,
    "done": StepStatus.DONE,
    "complete": StepStatus.DONE,
    "completed": StepStatus.DONE,
    "finished": StepStatus.DONE,
    "skipped": StepStatus.SKIPPED,
    "skip": StepStatus.SKIPPED,
    "dropped": StepStatus.SKIPPED,
    "cancelled": StepStatus.SKIPPED,
    "canceled": StepStatus.SKIPPED,
    "not_needed": StepStatus.SKIPPED,
}
_MARKER_STATUSES: dict[str, StepStatus] = {
    "pending": StepStatus.PENDING,
    "in_progress": StepStatus.IN_PROGRESS,
    "done": StepStatus.DONE,
    "skipped": StepStatus.SKIPPED,
}
"""The statuses read from a bracketed word ending a step's text: only the words a plan's own text form writes
(``Plan.to_text``: ``(done)``, ``(in progress)``, ``(skipped)``) and ``pending``, so that a model echoing
the current plan is read right, while ordinary words in brackets (``(open)``, ``(current)``) stay text."""
_BARE_LIST = 3
"""The rank of a JSON list outside any fence: below a numbered or bulleted list (see ``parse_plan_steps``)."""
_TEXT_KEYS = ("step", "text", "title", "description", "task", "name", "action")
_LIST_KEYS = ("steps", "plan", "tasks")
_NUMBERED = re.compile(r"^\s*(?:\d+[.)]|step\s+\d+[:.)])\s+(?P<text>\S.*)$", re.I)
_BULLET = re.compile(r"^\s*[-*•]\s+(?P<text>\S.*)$")
_FENCE = re.compile(r"^[ \t]*+```(?P<info>[^`\n]*+)$", re.M)
_JSON_FENCES = frozenset({"", "json", "json5", "jsonc"})
_CLOSING_BRACKETS = {")": "(", "]": "["}


class _NotAPlan(Exception):
    """A JSON value that is not a plan (the reason is in the message)."""


def _status_key(word: str) -> str:
    return re.sub(r"[\s_-]+", "_", word.strip().lower())


def _status_of(value: Any) -> StepStatus:
    """A step object's status: a known word, else (missing, unknown such as "blocked", not a string) pending.

    An odd status says nothing about the step being finished, so the step is kept, still to do, rather than
    the whole plan being thrown away.
    """
    if not isinstance(value, str):
        return StepStatus.PENDING
    return _STATUS_WORDS.get(_status_key(value), StepStatus.PENDING)


def _step_of(value: Any) -> PlanStep | None:
    """The step in one item of a steps list; ``None`` for an item to skip (``null``, a blank text)."""
    if value is None:
        return None
    if isinstance(value, str):
        return _step_with_trailing_status(value) if value.strip() else None
    if isinstance(value, Mapping):
        lowered = {str(k).lower(): v for k, v in value.items()}
        texts = [lowered[key] for key in _TEXT_KEYS if key in lowered]
        for text in texts:
            if isinstance(text, str) and text.strip():
                return PlanStep(text, _status_of(lowered.get("status", lowered.get("state"))))
        if texts and all(text is None or (isinstance(text, str) and not text.strip()) for text in texts):
            return None
        raise _NotAPlan(f"a step object needs a text field ({', '.join(_TEXT_KEYS)}), got {value!r}")
    raise _NotAPlan(f"a step must be a string or an object, got {value!r}")


def _step_with_trailing_status(text: str) -> PlanStep:
    """``text`` as a step; a bracketed status word at its end (``Find B (done)``) is read as its status.

    Only when the marker is one of ``_MARKER_STATUSES``, follows a space and leaves some text before it:
    ``List the shops that are (open)`` keeps its words. Found with ``rfind``, not a regex, so a long text
    full of spaces costs one pass.
    """
    body = text.rstrip()
    opener = _CLOSING_BRACKETS.get(body[-1:])
    if opener is not None:
        start = body.rfind(opener)
        if start > 0 and body[start - 1].isspace() and body[:start].strip():
            status = _MARKER_STATUSES.get(_status_key(body[start + 1 : -1]))
            if status is not None:
                return PlanStep(body[:start], status)
    return PlanStep(text)


def _steps_of(value: Any) -> tuple[PlanStep, ...]:
    if isinstance(value, Mapping):
        lowered = {str(k).lower(): v for k, v in value.items()}
        for key in _LIST_KEYS:
            if key in lowered:
                return _steps_of(lowered[key])
        raise _NotAPlan(f"an object without a steps list ({', '.join(_LIST_KEYS)})")
    if isinstance(value, list):
        if not value:
            raise _NotAPlan("an empty list of steps")
        steps = tuple(step for step in map(_step_of, value) if step is not None)
        if not steps:
            raise _NotAPlan("a list of steps that are all blank or null")
        return steps
    raise _NotAPlan(f"a JSON {type(value).__name__}")


def _json_fences(text: str) -> list[tuple[int, int]]:
    """Where the Markdown code fences marked JSON (or unmarked) hold their contents: (start, end) pairs, in
    order.

    A fence opens with a line of three backticks and an optional info word, and closes at the next line of
    bare backticks (or at the end of the text, for a cut-off answer).
    """
    blocks: list[tuple[int, int]] = []
    opened: re.Match[str] | None = None
    for fence in _FENCE.finditer(text):
        if opened is None:
            opened = fence
        elif not fence["info"].strip():
            if opened["info"].strip().lower() in _JSON_FENCES:
                blocks.append((opened.end(), fence.start()))
            opened = None
    if opened is not None and opened["info"].strip().lower() in _JSON_FENCES:
        blocks.append((opened.end(), len(text)))
    return blocks


def _listed_steps(text: str) -> tuple[PlanStep, ...]:
    lines = text.splitlines()
    numbered = [m["text"] for m in map(_NUMBERED.match, lines) if m]
    if numbered:
        return tuple(_step_with_trailing_status(t) for t in numbered)
    bullets = [m["text"] for m in map(_BULLET.match, lines) if m]
    if len(bullets) >= 2:
        return tuple(_step_with_trailing_status(t) for t in bullets)
    return ()


def parse_plan_steps(text: str) -> tuple[PlanStep, ...]:
    """The steps of a plan in a model's answer, read tolerantly; ``PlanParseError`` when there is none.

    The answer's JSON values (inside code fences or prose, in the first 200,000 characters) that are plans:
    a list of steps, or an object with a ``steps`` (``plan``, ``tasks``) list. When there are several, the
    first of the best kind wins: in a fenced block marked ``json`` (or unmarked), an object before a list;
    then an object anywhere; then a numbered list (``1. …``) or a bulleted list of two or more lines; then a
    bare JSON list in the prose. So an explicit ``{"steps": [...]}`` or a numbered list beats a list the
    prose happens to hold (``I will use ["search", "calculator"]``).

    A step is a string, or an object with a text (``step``, ``text``, ``title``…) and an optional
    ``status`` (or ``state``): ``done``, ``in progress``, ``skipped``, ``pending`` and synonyms such as
    ``completed`` or ``todo``; any other status (``blocked``) keeps the step pending. ``null`` items and
    blank texts are skipped. A string step (or list line) ending in a bracketed ``(done)``,
    ``(in progress)``, ``(skipped)`` or ``(pending)`` (as a plan's own text writes them) gets that status;
    any other bracketed word is part of the text.

    >>> [s.text for s in parse_plan_steps('Sure! Here it is: ["Find A", "Find B"]. Good luck.')]
    ['Find A', 'Find B']
    >>> [s.text for s in parse_plan_steps('Tools: ["search"]. Plan: {"steps": ["Find A", "Find B"]}')]
    ['Find A', 'Find B']
    >>> [s.text for s in parse_plan_steps('I will use ["search"].\\n1. Find A\\n2. Find B')]
    ['Find A', 'Find B']
    >>> parse_plan_steps('{"steps": [{"step": "Find A", "status": "done"}, null]}')
    (PlanStep(text='Find A', status=<StepStatus.DONE: 'done'>),)
    >>> [(s.text, s.status.value) for s in parse_plan_steps("1. Find A (open)\\n2. Find B (in progress)")]
    [('Find A (open)', 'pending'), ('Find B', 'in_progress')]
    """
    if not isinstance(text, str):
        raise TypeError(f"expected the model's answer as text, got {type(text).__name__}")
    scanned = text[:MAX_SCANNED_CHARS]
    fences = _json_fences(scanned)
    fence_starts = [start for start, _end in fences]
    reasons: list[str] = []
    best: tuple[int, tuple[PlanStep, ...]] | None = None
    for span in json_spans(scanned, max_spans=_MAX_JSON_SPANS):
        if span.error is not None:
            continue
        try:
            steps = _steps_of(span.value)
        except _NotAPlan as exc:
            reasons.append(str(exc))
            continue
        fence = bisect.bisect_right(fence_starts, span.start) - 1
        fenced = fence >= 0 and span.start < fences[fence][1]
        rank = (0 if fenced else 2) + (0 if isinstance(span.value, Mapping) else 1)
        if best is None or rank < best[0]:
            best = (rank, steps)
            if rank == 0:
                break
    if best is not None and best[0] < _BARE_LIST:
        return best[1]
    # A list in the prose ("I will use the ["search", "calculator"] tools.") is a weaker sign of a plan than
    # a numbered or bulleted list of steps.
    listed = _listed_steps(scanned)
    if listed:
        return listed
    if best is not None:
        return best[1]
    why = f" ({'; '.join(reasons[:3])})" if reasons else ""
    excerpt = text.strip()
    if len(excerpt) > _EXCERPT:
        excerpt = excerpt[:_EXCERPT] + "…"
    raise PlanParseError(
        'the model\'s answer is not a plan (expected a JSON list of steps or {"steps": [...]})'
        f"{why}: {excerpt!r}",
        text,
    )
