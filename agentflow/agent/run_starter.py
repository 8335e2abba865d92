"""``RunStarter``: what ``Agent`` and ``Session`` share — ``stream``, ``run`` and ``run_sync``.

One implementation for both, on the memory each of them names (or a fresh one holding ``history=``), each
with callbacks of its own (``on=``). A session's run that fails puts its memory back here, inside its turn,
when the session asks for it (``rollback_on_failure``). All three are generic in the run's output type, for
type checkers only (``Agent[City]``'s runs give ``AgentResult[City]``); most of this module is their
``@overload`` stacks. The handle a run gives back is ``AgentRun`` (``agentflow.agent.run``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, overload

import anyio

from ..bus import (
    EventTypes,
    Policy,
    check_subscription_options,
    normalise_event_types,
)
from ..result import AgentResult, OutputT
from ..runtimes.guardrails import check_guardrails
from ..runtimes.output import AGENT_DEFAULT, AgentDefault, OutputType, TypeForm
from .item_checks import check_items
from .item_shapes import to_items
from .options import explain_keywords
from .overrides import active_override
from .run import AgentRun

if TYPE_CHECKING:
    from ..tools.approval import ApprovalDecisions
    from .agent import Agent, AgentInput, GuardrailLike
    from .memory import Memory
    from .options import AgentOptions, ModelSettings
    from .turns import Turns

__all__ = ["RunListeners", "RunStarter", "run_sync"]

_T = TypeVar("_T")
_U = TypeVar("_U")


RunListeners: TypeAlias = Iterable[tuple[EventTypes, Callable[[Any], Any]]]
"""Callbacks for one run (``on=``): ``(event types, callback)`` pairs, what ``agent.on(types, callback)``
takes."""


class RunStarter(Generic[OutputT]):
    """Starts runs of an agent: ``stream`` (iterate the events) and ``run`` / ``run_sync`` (the result).

    ``Agent`` and ``Session`` both are one. A session's runs (and those of an agent built with a ``memory``
    instance) continue its conversation and wait for the earlier runs on it to end; an agent's other runs
    each get a fresh memory (holding ``history``, if given) and run at once.

    Every way of starting a run takes ``on=[(types, callback), …]``: callbacks for that run alone, as
    ``agent.on`` registers them for every run (see ``EventBus.on``), checked at the call (``TypeError``);
    ``settings=`` / ``options=``: that run's model settings (merged over the agent's) and limits (in
    place of the agent's); ``deps=``: that run's dependencies (see ``run``); and ``input_guardrails=`` /
    ``output_guardrails=``: that run's own guardrails, after the agent's (see ``run``). A keyword none of them
    takes is told where it belongs (``temperature=0``: ``settings=ModelSettings(temperature=0)``; see
    ``explain_keywords``).
    """

    __slots__ = ()

    def _run_on(self) -> tuple[Agent[OutputT], Memory | None, Turns | None, bool]:
        """The agent, the memory of the next run (``None``: a fresh one), the turns its runs take and whether
        a failed run's memory is rolled back."""
        raise NotImplementedError

    def _session_id(self) -> str | None:
        """The conversation the next run belongs to (``RunStarted.session_id``), if any."""
        raise NotImplementedError

    @overload
    def stream(
        self,
        input: AgentInput | None = ...,
        *,
        types: EventTypes = ...,
        buffer: int = ...,
        policy: Policy = ...,
        run_id: str | None = ...,
        output_type: AgentDefault = ...,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
        settings: ModelSettings | None = ...,
        options: AgentOptions | None = ...,
        deps: Any = ...,
        approvals: ApprovalDecisions | None = ...,
        input_guardrails: Iterable[GuardrailLike] | None = ...,
        output_guardrails: Iterable[GuardrailLike] | None = ...,
    ) -> AgentRun[OutputT]: ...

    @overload
    def stream(
        self,
        input: AgentInput | None = ...,
        *,
        types: EventTypes = ...,
        buffer: int = ...,
        policy: Policy = ...,
        run_id: str | None = ...,
        output_type: None,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
        settings: ModelSettings | None = ...,
        options: AgentOptions | None = ...,
        deps: Any = ...,
        approvals: ApprovalDecisions | None = ...,
        input_guardrails: Iterable[GuardrailLike] | None = ...,
        output_guardrails: Iterable[GuardrailLike] | None = ...,
    ) -> AgentRun[str]: ...

    @overload
    def stream(
        self,
        input: AgentInput | None = ...,
        *,
        types: EventTypes = ...,
        buffer: int = ...,
        policy: Policy = ...,
        run_id: str | None = ...,
        output_type: type[_T] | OutputType[_T],
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
        settings: ModelSettings | None = ...,
        options: AgentOptions | None = ...,
        deps: Any = ...,
        approvals: ApprovalDecisions | None = ...,
        input_guardrails: Iterable[GuardrailLike] | None = ...,
        output_guardrails: Iterable[GuardrailLike] | None = ...,
    ) -> AgentRun[_T]: ...

    @overload
    def stream(
        self,
        input: AgentInput | None = ...,
        *,
        types: EventTypes = ...,
        buffer: int = ...,
        policy: Policy = ...,
        run_id: str | None = ...,
        output_type: TypeForm,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
        settings: ModelSettings | None = ...,
        options: AgentOptions | None = ...,
        deps: Any = ...,
        approvals: ApprovalDecisions | None = ...,
        input_guardrails: Iterable[GuardrailLike] | None = ...,
        output_guardrails: Iterable[GuardrailLike] | None = ...,
    ) -> AgentRun[Any]: ...

    @explain_keywords("run")
    def stream(
        self,
        input: AgentInput | None = None,
        *,
        types: EventTypes = None,
        buffer: int = 256,
        policy: Policy = "backpressure",
        run_id: str | None = None,
        output_type: Any = AGENT_DEFAULT,
        history: Iterable[Any] | None = None,
        on: RunListeners | None = None,
        settings: ModelSettings | None = None,
        options: AgentOptions | None = None,
        deps: Any = None,
        approvals: ApprovalDecisions | None = None,
        input_guardrails: Iterable[GuardrailLike] | None = None,
        output_guardrails: Iterable[GuardrailLike] | None = None,
    ) -> AgentRun[Any]:
        """A run whose events you iterate: ``async with agent.stream(x) as run: async for event in run``.

        ``types`` limits the events delivered (a class, a union such as ``agentflow.events.TerminalEvent``,
        or a tuple of those), ``buffer``/``policy`` shape the subscription (see ``EventBus.subscribe``); all
        three are checked here, not when the block is entered. Model calls stream unless ``options.stream``
        is ``False``. ``output_type`` replaces the agent's for this run (``None``: the answer's text).
        ``history``, ``on``, ``settings``, ``options``, ``deps``, ``approvals``, ``input_guardrails`` and
        ``output_guardrails`` are as for ``run``.
        """
        kinds = normalise_event_types(types)
        check_subscription_options(buffer, policy)
        agent, memory, turns, rollback = self._run_on()
        return agent._new_run(
            input,
            memory=memory,
            turns=turns,
            rollback=rollback,
            subscribe=True,
            types=kinds,
            buffer=buffer,
            policy=policy,
            run_id=run_id,
            output_type=output_type,
            history=_history(history, memory),
            listeners=_listeners(on),
            settings=settings,
            options=options,
            session_id=self._session_id(),
            deps=deps,
            decisions=None if approvals is None else _decisions(approvals),
            input_guardrails=None
            if input_guardrails is None
            else check_guardrails("input", input_guardrails),
            output_guardrails=None
            if output_guardrails is None
            else check_guardrails("output", output_guardrails),
        )

    @overload
    async def run(
        self,
        input: AgentInput | None = ...,
        *,
        run_id: str | None = ...,
        output_type: AgentDefault = ...,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
        settings: ModelSettings | None = ...,
        options: AgentOptions | None = ...,
        deps: Any = ...,
        approvals: ApprovalDecisions | None = ...,
        input_guardrails: Iterable[GuardrailLike] | None = ...,
        output_guardrails: Iterable[GuardrailLike] | None = ...,
    ) -> AgentResult[OutputT]: ...

    @overload
    async def run(
        self,
        input: AgentInput | None = ...,
        *,
        run_id: str | None = ...,
        output_type: None,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
        settings: ModelSettings | None = ...,
        options: AgentOptions | None = ...,
        deps: Any = ...,
        approvals: ApprovalDecisions | None = ...,
        input_guardrails: Iterable[GuardrailLike] | None = ...,
        output_guardrails: Iterable[GuardrailLike] | None = ...,
    ) -> AgentResult[str]: ...

    @overload
    async def run(
        self,
        input: AgentInput | None = ...,
        *,
        run_id: str | None = ...,
        output_type: type[_T] | OutputType[_T],
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
        settings: ModelSettings | None = ...,
        options: AgentOptions | None = ...,
        deps: Any = ...,
        approvals: ApprovalDecisions | None = ...,
        input_guardrails: Iterable[GuardrailLike] | None = ...,
        output_guardrails: Iterable[GuardrailLike] | None = ...,
    ) -> AgentResult[_T]: ...

    @overload
    async def run(
        self,
        input: AgentInput | None = ...,
        *,
        run_id: str | None = ...,
        output_type: TypeForm,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
        settings: ModelSettings | None = ...,
        options: AgentOptions | None = ...,
        deps: Any = ...,
        approvals: ApprovalDecisions | None = ...,
        input_guardrails: Iterable[GuardrailLike] | None = ...,
        output_guardrails: Iterable[GuardrailLike] | None = ...,
    ) -> AgentResult[Any]: ...

    @explain_keywords("run")
    async def run(
        self,
        input: AgentInput | None = None,
        *,
        run_id: str | None = None,
        output_type: Any = AGENT_DEFAULT,
        history: Iterable[Any] | None = None,
        on: RunListeners | None = None,
        settings: ModelSettings | None = None,
        options: AgentOptions | None = None,
        deps: Any = None,
        approvals: ApprovalDecisions | None = None,
        input_guardrails: Iterable[GuardrailLike] | None = None,
        output_guardrails: Iterable[GuardrailLike] | None = None,
    ) -> AgentResult[Any]:
        """Run to the end and return the result.

        ``output_type`` replaces the agent's for this run (``None``: the answer's text; see ``OutputType``),
        e.g. one typed turn in a free-text session: ``await chat.run("Sum it up.", output_type=Summary)``.

        ``history``: the conversation so far (items, e.g. the ``new_items`` of earlier runs you stored, or an
        earlier result's ``all_items``), which this run continues in a fresh memory: the model sees it
        before ``input``, ``result.new_items`` lists only this run's items (its input and what followed),
        ready to append to your store, and ``result.all_items`` the whole conversation after the run. Checked
        here, once (``check_items``): an item no provider would take (an orphan tool output, an unknown item
        type or role…) raises ``HistoryError`` naming it before anything runs; a tool call left without its
        output is answered by the run instead. Not for a session's runs, which continue the session's memory
        (``TypeError``).

        ``on``: callbacks for this run alone, ``[(TextDelta, send), (ToolSucceeded, log)]``, as
        ``agent.on`` registers for every run (a web handler's callbacks on a shared agent go here).

        ``settings``: model parameters for this run, merged over the agent's: each field it sets wins, each
        it leaves ``None`` is the agent's, ``extra_body`` merges key by key (``merge_settings``), e.g.
        ``settings=ModelSettings(temperature=0)`` keeps the agent's model and ``max_output_tokens``.

        ``options``: this run's limits and loop behaviour, in place of the agent's ``AgentOptions`` (every
        field: an ``AgentOptions`` has no "unset", ``None`` means no limit). To change one limit and keep
        the others: ``options=attrs.evolve(agent.options, max_steps=3)``.

        ``deps``: this run's dependencies (pydantic-ai's ``deps``, the Agents SDK's ``context``): any object
        (a database pool, the user the request is for, an HTTP client), handed untouched, never copied,
        stored or published, to its tools (``ToolContext.deps``; ``ToolContext[MyDeps]`` types it), its
        output validators (``OutputContext.deps``), the agent's prompt functions (``PromptContext.deps``),
        its planner (``PlanContext.deps``) and the agents it calls as tools. ``None`` (default): none.

        ``approvals``: resume a run that paused for approval (``AgentOptions(tool_approval="defer")``,
        ``StopReason.APPROVAL_REQUIRED``), from its stored items (``history=result.all_items``, or a
        session's memory): ``{call_id: True}`` approves a call, ``False`` denies it, a ``str`` denies it and
        is what the model is told. Before anything else, the approved calls run and the denied ones get
        their ``denied`` result; then ``input`` (optional when resuming), then the model call. Every call
        the conversation left open needs a decision, and every decision an open call
        (``ApprovalDecisionError`` otherwise, before anything runs). See ``agentflow.runtimes.resume``.

        ``input_guardrails`` / ``output_guardrails``: this run's own guardrails (the Agents SDK's
        ``RunConfig(input_guardrails=...)``), checked here (``TypeError``, ``ValueError``) and run *in
        addition to* the agent's (or those of an ``agent.override`` in force), after them in order: the
        application's policy, then the request's checks (a per-tenant rule, a check for this endpoint). A run
        that trips one fails as one of the agent's would (``InputGuardrailTripped``…). ``None`` (default):
        the agent's alone.

        A failed run raises its exception (a ``ModelError``, ``MaxStepsExceeded``…); a run cut short by
        ``options.timeout`` returns its partial result (``StopReason.DEADLINE``); cancelling the calling task
        cancels the run cleanly and re-raises the cancellation.
        """
        agent, memory, turns, rollback = self._run_on()
        run = agent._new_run(
            input,
            memory=memory,
            turns=turns,
            rollback=rollback,
            subscribe=False,
            run_id=run_id,
            output_type=output_type,
            history=_history(history, memory),
            listeners=_listeners(on),
            settings=settings,
            options=options,
            session_id=self._session_id(),
            deps=deps,
            decisions=None if approvals is None else _decisions(approvals),
            input_guardrails=None
            if input_guardrails is None
            else check_guardrails("input", input_guardrails),
            output_guardrails=None
            if output_guardrails is None
            else check_guardrails("output", output_guardrails),
        )
        return await run._run_here()

    @overload
    def run_sync(
        self,
        input: AgentInput | None = ...,
        *,
        run_id: str | None = ...,
        output_type: AgentDefault = ...,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
        settings: ModelSettings | None = ...,
        options: AgentOptions | None = ...,
        deps: Any = ...,
        approvals: ApprovalDecisions | None = ...,
        input_guardrails: Iterable[GuardrailLike] | None = ...,
        output_guardrails: Iterable[GuardrailLike] | None = ...,
    ) -> AgentResult[OutputT]: ...

    @overload
    def run_sync(
        self,
        input: AgentInput | None = ...,
        *,
        run_id: str | None = ...,
        output_type: None,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
        settings: ModelSettings | None = ...,
        options: AgentOptions | None = ...,
        deps: Any = ...,
        approvals: ApprovalDecisions | None = ...,
        input_guardrails: Iterable[GuardrailLike] | None = ...,
        output_guardrails: Iterable[GuardrailLike] | None = ...,
    ) -> AgentResult[str]: ...

    @overload
    def run_sync(
        self,
        input: AgentInput | None = ...,
        *,
        run_id: str | None = ...,
        output_type: type[_T] | OutputType[_T],
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
        settings: ModelSettings | None = ...,
        options: AgentOptions | None = ...,
        deps: Any = ...,
        approvals: ApprovalDecisions | None = ...,
        input_guardrails: Iterable[GuardrailLike] | None = ...,
        output_guardrails: Iterable[GuardrailLike] | None = ...,
    ) -> AgentResult[_T]: ...

    @overload
    def run_sync(
        self,
        input: AgentInput | None = ...,
        *,
        run_id: str | None = ...,
        output_type: TypeForm,
        history: Iterable[Any] | None = ...,
        on: RunListeners | None = ...,
        settings: ModelSettings | None = ...,
        options: AgentOptions | None = ...,
        deps: Any = ...,
        approvals: ApprovalDecisions | None = ...,
        input_guardrails: Iterable[GuardrailLike] | None = ...,
        output_guardrails: Iterable[GuardrailLike] | None = ...,
    ) -> AgentResult[Any]: ...

    @explain_keywords("run")
    def run_sync(
        self,
        input: AgentInput | None = None,
        *,
        run_id: str | None = None,
        output_type: Any = AGENT_DEFAULT,
        history: Iterable[Any] | None = None,
        on: RunListeners | None = None,
        settings: ModelSettings | None = None,
        options: AgentOptions | None = None,
        deps: Any = None,
        approvals: ApprovalDecisions | None = None,
        input_guardrails: Iterable[GuardrailLike] | None = None,
        output_guardrails: Iterable[GuardrailLike] | None = None,
    ) -> AgentResult[Any]:
        """``run`` for scripts and notebooks without a running event loop (see ``agentflow.run_sync``)."""
        return run_sync(
            self,
            input,
            run_id=run_id,
            output_type=output_type,
            history=history,
            on=on,
            settings=settings,
            options=options,
            deps=deps,
            approvals=approvals,
            input_guardrails=input_guardrails,
            output_guardrails=output_guardrails,
        )


def _history(history: Iterable[Any] | None, memory: Memory | None) -> tuple[Any, ...] | None:
    """``history=`` checked: ``None``, or the items (``Message`` values as items, as a run stores them).

    Checked once, here (``check_items``: ``HistoryError`` naming the item, before anything runs), never in
    the run's loop."""
    if history is None:
        return None
    if memory is not None:
        raise TypeError(
            "history= is for runs that start from a fresh memory; this run continues a session's memory "
            "(agent.session() or Agent(memory=...)), which holds its history already. Load stored items "
            "into the session's memory instead: agent.session(InMemoryMemory(items))"
        )
    if isinstance(history, str | bytes | Mapping) or not isinstance(history, Iterable):
        raise TypeError(
            "history= takes a list of conversation items (dicts or Message values), "
            f"got {type(history).__name__}"
        )
    items = tuple(history)
    check_items(items)  # TypeError for what is not an item, HistoryError for what no provider takes
    return tuple(to_items(items))


def _decisions(approvals: ApprovalDecisions) -> dict[str, str | None]:
    """``approvals=`` checked now (``TypeError``, ``ValueError``): call id → ``None`` (approved) or the
    denial's text."""
    from ..tools.approval import check_decisions  # only for a run that resumes

    return check_decisions(approvals)


def _listeners(on: RunListeners | None) -> tuple[tuple[EventTypes, Callable[[Any], Any]], ...] | None:
    """``on=`` checked now (``TypeError``): a bad registration must not fail the run later."""
    if on is None:
        return None
    if isinstance(on, str | bytes | Mapping) or not isinstance(on, Iterable):
        raise TypeError(
            f"on= takes (event types, callback) pairs, e.g. on=[(TextDelta, send)], got {type(on).__name__}"
        )
    checked: list[tuple[EventTypes, Callable[[Any], Any]]] = []
    for entry in on:
        if not isinstance(entry, tuple) or len(entry) != 2:
            raise TypeError(
                f"on= takes (event types, callback) pairs, e.g. on=[(TextDelta, send)], got {entry!r}"
            )
        types, callback = entry
        kinds = normalise_event_types(types)
        if not callable(callback):
            raise TypeError(
                f"on=: callback must be callable (it is called with each event), got {callback!r}"
            )
        checked.append((kinds, callback))
    return tuple(checked)


@overload
def run_sync(
    target: RunStarter[_T],
    input: AgentInput | None = ...,
    *,
    run_id: str | None = ...,
    output_type: AgentDefault = ...,
    history: Iterable[Any] | None = ...,
    on: RunListeners | None = ...,
    settings: ModelSettings | None = ...,
    options: AgentOptions | None = ...,
    deps: Any = ...,
    approvals: ApprovalDecisions | None = ...,
    input_guardrails: Iterable[GuardrailLike] | None = ...,
    output_guardrails: Iterable[GuardrailLike] | None = ...,
) -> AgentResult[_T]: ...


@overload
def run_sync(
    target: RunStarter[_T],
    input: AgentInput | None = ...,
    *,
    run_id: str | None = ...,
    output_type: None,
    history: Iterable[Any] | None = ...,
    on: RunListeners | None = ...,
    settings: ModelSettings | None = ...,
    options: AgentOptions | None = ...,
    deps: Any = ...,
    approvals: ApprovalDecisions | None = ...,
    input_guardrails: Iterable[GuardrailLike] | None = ...,
    output_guardrails: Iterable[GuardrailLike] | None = ...,
) -> AgentResult[str]: ...


@overload
def run_sync(
    target: RunStarter[_T],
    input: AgentInput | None = ...,
    *,
    run_id: str | None = ...,
    output_type: type[_U] | OutputType[_U],
    history: Iterable[Any] | None = ...,
    on: RunListeners | None = ...,
    settings: ModelSettings | None = ...,
    options: AgentOptions | None = ...,
    deps: Any = ...,
    approvals: ApprovalDecisions | None = ...,
    input_guardrails: Iterable[GuardrailLike] | None = ...,
    output_guardrails: Iterable[GuardrailLike] | None = ...,
) -> AgentResult[_U]: ...


@overload
def run_sync(
    target: RunStarter[_T],
    input: AgentInput | None = ...,
    *,
    run_id: str | None = ...,
    output_type: TypeForm,
    history: Iterable[Any] | None = ...,
    on: RunListeners | None = ...,
    settings: ModelSettings | None = ...,
    options: AgentOptions | None = ...,
    deps: Any = ...,
    approvals: ApprovalDecisions | None = ...,
    input_guardrails: Iterable[GuardrailLike] | None = ...,
    output_guardrails: Iterable[GuardrailLike] | None = ...,
) -> AgentResult[Any]: ...


@explain_keywords("run", label="run_sync()")
def run_sync(
    target: RunStarter[Any],
    input: AgentInput | None = None,
    *,
    run_id: str | None = None,
    output_type: Any = AGENT_DEFAULT,
    history: Iterable[Any] | None = None,
    on: RunListeners | None = None,
    settings: ModelSettings | None = None,
    options: AgentOptions | None = None,
    deps: Any = None,
    approvals: ApprovalDecisions | None = None,
    input_guardrails: Iterable[GuardrailLike] | None = None,
    output_guardrails: Iterable[GuardrailLike] | None = None,
) -> AgentResult[Any]:
    """Run an agent (or a session's next turn) from synchronous code, in a fresh event loop.

    For scripts and notebooks without a running loop. The connections of the model the run used (the
    agent's, or an ``agent.override``'s) are closed before it returns, since they belong to that loop (the
    next call opens new ones). Inside async code, ``await agent.run(...)`` instead. ``run_id``,
    ``output_type``, ``history``, ``on``, ``settings``, ``options``, ``deps``, ``approvals``,
    ``input_guardrails`` and ``output_guardrails`` are as for ``agent.run``.
    """
    agent = target._run_on()[0]
    override = active_override(agent)
    model = override.model if override is not None and override.model is not None else agent.model_client

    async def main() -> AgentResult[Any]:
        try:
            # ``output_type`` is ``Any`` here, so every overload of ``run`` matches and mypy infers ``Any``.
            result: AgentResult[Any] = await target.run(
                input,
                run_id=run_id,
                output_type=output_type,
                history=history,
                on=on,
                settings=settings,
                options=options,
                deps=deps,
                approvals=approvals,
                input_guardrails=input_guardrails,
                output_guardrails=output_guardrails,
            )
            return result
        finally:
            with anyio.CancelScope(shield=True):
                await model.aclose()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(main)
    raise RuntimeError(
        "run_sync() cannot be used inside a running event loop; use 'await agent.run(...)' there"
    )
