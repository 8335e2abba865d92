"""Dynamic system prompts and instructions: ``Agent(instructions=fn)``, ``Agent(system_prompt=fn)``.

A prompt function takes one argument, a ``PromptContext`` (a read-only view of the run: its ``deps``, ids,
step, input and usage so far), and returns the text, sync or async::

    def instructions(run: PromptContext[Deps]) -> str:
        return f"The user is {run.deps.user.name}; it is {datetime.now():%H:%M}."

    agent = Agent(model, instructions=instructions)
    await agent.run("What is on my calendar?", deps=Deps(user=me))

When: once per step, right before the step's model call (as pydantic-ai re-evaluates instructions for each
request and the Agents SDK per turn), so a clock, a remaining budget or what the run found so far stays
current; a plan made at that point (DeepResearch's first plan, a re-plan) is told the same text as that
step's call. The text lands exactly where a static one does: ``RunContext.system_prompt`` /
``instructions`` are set to it, and every runtime, planner and model client reads them from there. An agent
whose prompts are both static strings has no ``PromptFunctions`` at all: its runs pay nothing for this.

A function that raises fails the run with ``PromptFunctionError`` (the exception is its ``__cause__``); one
that returns something other than a ``str`` fails it with a ``TypeError`` naming the agent. An empty string
sends nothing, as a static empty prompt does.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias

import attrs

from ..model.response import TokenUsage
from ..result import AgentResult, StopReason
from .errors import AgentRunError

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    from .context import RunContext

    # For type checkers only (PEP 696), as ``ToolContext``'s: a bare ``PromptContext`` is ``[Any]``.
    DepsT = TypeVar("DepsT", default=Any)
else:
    DepsT = typing.TypeVar("DepsT")

__all__ = ["PromptContext", "PromptFunction", "PromptFunctionError", "PromptFunctions", "check_prompt"]

PromptKind = Literal["system_prompt", "instructions"]


@attrs.frozen
class PromptContext(Generic[DepsT]):
    """What a prompt function (``Agent(instructions=fn)``, ``Agent(system_prompt=fn)``) is called with: a
    read-only view of the run, as it is before the model call the text is for.

    ``deps`` is the run's (``agent.run(x, deps=...)``, ``None`` without), typed by annotating the parameter
    ``PromptContext[MyDeps]``; ``step`` the index of the step about to call the model (0 for the first);
    ``input_text`` the run's input as text; ``session_id`` the conversation's id for a session's run;
    ``agent_name`` the agent's ``name``; ``usage`` the tokens the run has spent so far and ``tokens_left``
    what its budget (``AgentOptions.max_tokens``) has left, ``None`` without one.

    >>> run = PromptContext(deps={"user": "Ada"}, run_id="run_1", step=0, input_text="hi")
    >>> f"You help {run.deps['user']}." if run.step == 0 else "Go on."
    'You help Ada.'
    """

    deps: DepsT
    run_id: str
    step: int
    input_text: str
    session_id: str | None = None
    agent_name: str = ""
    usage: TokenUsage = attrs.field(factory=TokenUsage)
    tokens_left: int | None = None


def run_view(ctx: RunContext, agent_name: str) -> PromptContext[Any]:
    """The ``PromptContext`` of the run ``ctx`` as it is now, for the agent named ``agent_name``."""
    return PromptContext(
        deps=ctx.deps,
        run_id=ctx.run_id,
        step=ctx.step,
        input_text=ctx.input_text,
        session_id=ctx.session_id,
        agent_name=agent_name,
        usage=ctx.usage,
        tokens_left=ctx.tokens_left,
    )


PromptFunction: TypeAlias = Callable[[PromptContext[Any]], str | Awaitable[str]]
"""A dynamic system prompt or instructions: ``fn(run: PromptContext) -> str``, or an ``async`` one."""


class PromptFunctionError(AgentRunError):
    """A prompt function (``Agent(instructions=fn)``, ``Agent(system_prompt=fn)``) raised: the run fails
    with this error, before the model call the text was for.

    ``agent`` names the agent, ``prompt`` says which prompt (``"system_prompt"`` or ``"instructions"``),
    ``function`` names the function and ``error`` is what it raised (the exception itself is ``__cause__``);
    ``partial`` keeps the run's work.

    >>> err = PromptFunctionError("support", "instructions", "greet", "KeyError: 'user'",
    ...                           AgentResult("run_1", "", StopReason.ERROR))
    >>> str(err)
    "the instructions function greet of agent 'support' raised KeyError: 'user'"
    """

    def __init__(self, agent: str, prompt: str, function: str, error: str, partial: AgentResult) -> None:
        super().__init__(f"the {prompt} function {function} of agent {agent!r} raised {error}", partial)
        self.agent = agent
        self.prompt = prompt
        self.function = function
        self.error = error

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.agent, self.prompt, self.function, self.error, self.partial))


def _name(function: object) -> str:
    return str(getattr(function, "__qualname__", None) or getattr(function, "__name__", None) or function)


def check_prompt(kind: PromptKind, value: object) -> str | PromptFunction | None:
    """``value`` as ``Agent(system_prompt=...)`` / ``Agent(instructions=...)`` takes it: ``None``, a ``str``,
    or a function called with one argument (a ``PromptContext``); ``TypeError`` for anything else.

    >>> check_prompt("instructions", "Be brief."), check_prompt("system_prompt", None)
    ('Be brief.', None)
    >>> check_prompt("instructions", lambda: "no argument")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: instructions must be a str, None, or a function taking one argument (a PromptContext)...
    """
    if value is None or isinstance(value, str):
        return value
    wanted = f"{kind} must be a str, None, or a function taking one argument (a PromptContext)"
    if not callable(value):
        raise TypeError(f"{wanted}, got {type(value).__name__}")
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):  # no signature to read (some builtins): calling it will tell
        return typing.cast(PromptFunction, value)
    try:
        signature.bind(None)
    except TypeError:
        raise TypeError(f"{wanted}; {_name(value)} has the signature {signature}") from None
    return typing.cast(PromptFunction, value)


class PromptFunctions:
    """An agent's system prompt and instructions when at least one is a function: what its runs evaluate
    (``refresh``), once per step. The other one, if a string, is used as it is."""

    __slots__ = ("agent", "instructions", "system_prompt")

    def __init__(
        self,
        agent: str,
        system_prompt: str | PromptFunction | None,
        instructions: str | PromptFunction | None,
    ) -> None:
        self.agent = agent
        self.system_prompt = system_prompt
        self.instructions = instructions

    def __repr__(self) -> str:
        return f"PromptFunctions({self.agent!r})"

    @staticmethod
    def of(
        agent: str, system_prompt: str | PromptFunction | None, instructions: str | PromptFunction | None
    ) -> PromptFunctions | None:
        """The functions to evaluate, or ``None`` when both prompts are static (the usual agent)."""
        if callable(system_prompt) or callable(instructions):
            return PromptFunctions(agent, system_prompt, instructions)
        return None

    def static(self, kind: PromptKind) -> str | None:
        """The prompt of ``kind`` when it is a string (``None`` for a function: the run sets it)."""
        value = self.system_prompt if kind == "system_prompt" else self.instructions
        return value if isinstance(value, str) else None

    async def refresh(self, ctx: RunContext) -> None:
        """Set the run's ``system_prompt`` / ``instructions`` to what the functions return for its current
        step; nothing if they were evaluated for this step already (a plan made before the step's call)."""
        if ctx.prompts_step == ctx.step:
            return
        view = run_view(ctx, self.agent)
        if callable(self.system_prompt):
            ctx.system_prompt = await self._evaluate(ctx, "system_prompt", self.system_prompt, view)
        if callable(self.instructions):
            ctx.instructions = await self._evaluate(ctx, "instructions", self.instructions, view)
        ctx.prompts_step = ctx.step

    async def _evaluate(
        self, ctx: RunContext, kind: PromptKind, function: PromptFunction, view: PromptContext[Any]
    ) -> str:
        try:
            text = function(view)
            if inspect.isawaitable(text):
                text = await text
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            name = _name(function)
            partial = ctx.result_for(
                StopReason.ERROR, error=f"the {kind} function {name} of agent {self.agent!r} raised {error}"
            )
            raise PromptFunctionError(self.agent, kind, name, error, partial) from exc
        if not isinstance(text, str):
            raise TypeError(
                f"the {kind} function {_name(function)} of agent {self.agent!r} returned a "
                f"{type(text).__name__}, not a str (return '' for none)"
            )
        return text
