"""An agent as a tool of another agent (``Agent.as_tool``): delegation, as multi-agent setups compose.

The parent's model calls the tool with a task (``input``); the tool runs the agent on it as a nested run, in
the tool call's own task, and returns the run's output (a structured value for an agent with an
``output_type``, else its answer's text). Everything that bounds a tool call bounds the nested run: a cancel
of the parent, the parent's deadline, the call's timeout. The nested run's usage counts toward the parent's
(``ToolContext.add_usage``), and its token budget is capped by what the parent has left. Its events reach
the parent's listeners as ``ToolProgress`` only when the parent has some, so an unobserved parent's sub-runs
build no events either. It runs with the parent's ``deps`` (or what ``as_tool(deps=fn)`` makes of them) and
sends the parent run's own HTTP headers (``ToolContext.extra_headers``) under the sub-agent's own. Its tools'
calls that need approval go to the parent's decider when its agent has none (``agent_tool``).

This module builds the tool and runs the nested run; it must not reach into the parent's run beyond its
``ToolContext``, nor change how runs work: ``return_direct`` (the sub-agent's answer as the caller's) is
a flag on the tool, which the caller's runtime reads like any tool's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from ..events import ToolApprovalRequested
from ..model.events import Event
from ..model.tools import ToolSpec
from ..result import AgentResult, StopReason
from ..runtimes.context import RunContext
from ..runtimes.guardrails import ToolGuardrailTripped, TripwireError
from ..tools.approval import ApprovalNotDeferrableError, NeedsApproval, ToolApprovals
from ..tools.context import ToolContext
from ..tools.outcome import exception_message
from ..tools.schema import shape_of
from ..tools.tool import Tool, ToolReturns
from .agent_names import function_style

if TYPE_CHECKING:
    from .agent import Agent
    from .session import Session

__all__ = ["INPUT_DESCRIPTION", "AgentToolError", "agent_tool"]

INPUT_DESCRIPTION = (
    "The task for this agent, complete and self-contained: it sees nothing of the current conversation, "
    "only this text, so include every fact, name and constraint it needs and say what to answer with."
)
"""How the model is told to write the tool's one argument."""

_MAX_LAST_MESSAGE = 1_000
"""How much of a stopped sub-run's last text the parent's model is shown (the whole error is cut at 2,000)."""


class AgentToolError(Exception):
    """An agent called as a tool ended without an answer: it stopped at a limit, refused, or failed.

    The parent's model gets it as the call's ``TOOL_ERROR`` (``"AgentToolError: …"``, with what the agent
    wrote last), like any tool exception; ``result`` is the nested run's (partial) result, and a failure's
    own exception is the ``__cause__``.

    >>> str(AgentToolError("agent 'writer' refused: no."))
    "agent 'writer' refused: no."
    """

    def __init__(self, message: str, result: AgentResult | None = None) -> None:
        super().__init__(message)
        self.result = result
        """The nested run's result (partial for a failed one), if it got that far."""


def _tool_name(agent: Agent[Any], name: str | None) -> str:
    """The tool's name: ``name`` as given (checked as any tool name is), else the agent's own ``name`` in a
    function's style (``"Research assistant"`` → ``research_assistant``). An agent without a name of its own
    (its name is then its runtime's, ``react``) needs ``name=``.
    """
    if name is not None:
        return name  # ``Tool`` checks it, with the message every tool name gets
    return function_style(agent, "as_tool()", "name=", "as_tool(name='researcher', description=...)")


def agent_tool(
    agent: Agent[Any],
    name: str | None,
    description: str | None,
    *,
    timeout: float | None,
    forward_events: bool,
    session: Session[Any] | None,
    return_direct: bool = False,
    deps: Callable[[Any], Any] | None = None,
    needs_approval: NeedsApproval = False,
    max_retries: float | None = None,
) -> Tool[..., Any]:
    """The ``Tool`` that ``Agent.as_tool`` returns (see there). ``needs_approval`` is ``@tool``'s: each call
    (each nested run) waits for the calling run's decision before it starts; ``attrs.evolve(agent.as_tool(
    ...), needs_approval=True)`` sets it as well. A tool of the nested run that needs approval is decided by
    the nested agent's own ``AgentOptions.tool_approval``, else by the calling run's decider (its function,
    or ``approve`` on its handle under the id ``<call id>/<sub-call id>``:
    ``ToolApprovals.sub_run_approver``); a nested run cannot pause (``"defer"``, its own or its caller's:
    ``ApprovalNotDeferrableError`` fails the calling run too)."""
    tool_name = _tool_name(agent, name)
    if description is None:
        raise TypeError(
            "as_tool() needs a description: what this agent does and when to call it, written for the model "
            "that will choose it (its system prompt speaks to the agent itself, and may be long or private)"
        )
    if not isinstance(description, str) or not description.strip():
        raise TypeError(f"as_tool(description=...) must be a non-empty str, got {description!r}")
    if not isinstance(forward_events, bool):
        raise TypeError(f"as_tool(forward_events=...) must be a bool, got {forward_events!r}")
    if not isinstance(return_direct, bool):
        raise TypeError(f"as_tool(return_direct=...) must be a bool, got {return_direct!r}")
    if deps is not None and not callable(deps):
        raise TypeError(
            "as_tool(deps=...) takes a function of the calling run's deps that returns this agent's (lambda "
            f"deps: deps.search); for an object of its own, deps=lambda _: obj; got {type(deps).__name__}"
        )
    if session is not None and getattr(session, "agent", None) is not agent:
        raise ValueError(
            f"as_tool(session=...) takes a session of this agent (agent.session()), got {session!r}"
        )
    spec = ToolSpec(
        name=tool_name,
        description=description,
        parameters={
            "type": "object",
            "properties": {"input": {"type": "string", "description": INPUT_DESCRIPTION}},
            "required": ["input"],
            "additionalProperties": False,
        },
    )
    returns = ToolReturns(_answer_schema(agent), f"the {tool_name} agent's answer")
    call = _AgentCall(agent, session, tool_name, forward_events, deps)
    return Tool(
        spec,
        call,
        context_parameter="context",
        timeout=timeout,
        returns=returns,
        return_direct=return_direct,
        needs_approval=needs_approval,
        max_retries=max_retries,
    )


def _answer_schema(agent: Agent[Any]) -> dict[str, Any] | None:
    """The JSON schema of what the tool returns (CodeAct's code is told it): the output type's, bare (not
    wrapped as on the wire), or a string; ``None`` when it cannot be said."""
    output = agent.output_type
    if output is None:
        return {"type": "string"}
    try:
        return shape_of(output.type).schema
    except Exception:  # describing the answer must never keep the tool from being made
        return None


class _AgentCall:
    """The tool's function: one nested run of the agent per call."""

    __slots__ = ("_agent", "_deps", "_forward", "_name", "_session")

    def __init__(
        self,
        agent: Agent[Any],
        session: Session[Any] | None,
        name: str,
        forward_events: bool,
        deps: Callable[[Any], Any] | None = None,
    ) -> None:
        self._agent = agent
        self._session = session
        self._name = name
        self._forward = forward_events
        self._deps = deps

    def __repr__(self) -> str:
        return f"<agent {self._agent.name!r} as the tool {self._name!r}>"

    async def __call__(self, input: str, context: ToolContext | None = None) -> Any:
        """Run the agent on ``input`` and return its output (``AgentToolError`` when it has none)."""
        left = context.tokens_left if context is not None else None
        if left is not None and left <= 0:
            raise AgentToolError(f"agent {self._name!r} was not run: the run's token budget is spent")
        # The session's or the agent's own (``Agent(memory=...)``) conversation, else a fresh memory.
        target = self._session if self._session is not None else self._agent
        agent, memory, turns, rollback = target._run_on()
        listeners = None
        deps = headers = None
        if context is not None:
            if self._forward and context.has_listeners():
                listeners = ((None, _Forward(context)),)
            deps = context.deps if self._deps is None else self._deps(context.deps)
            headers = context.extra_headers
        run = agent._new_run(
            input,
            memory=memory,
            turns=turns,
            rollback=rollback,
            subscribe=False,
            listeners=listeners,
            session_id=target._session_id(),
            parent=None if context is None else (context.run_id, context.call_id),
            deps=deps,
            inherited_headers=headers,
        )
        ctx = run.ctx
        needs = ctx.tools.has_approval or ctx.handoffs is not None  # a handoff's target may have such tools
        if needs and context is not None and ctx.options.tool_approval is None:
            # Its agent has nobody to decide its calls: the calling run's decider does (its function, or
            # ``approve`` on its handle). Its own ``tool_approval`` wins; a run without such tools pays this
            # one check.
            caller = _caller_approvals(context)
            if caller is not None:
                ctx.options = attrs.evolve(
                    ctx.options, tool_approval=caller.sub_run_approver(context.call_id)
                )
        if listeners is not None and ctx.options.stream is None:  # the run's (an override's, say)
            # Someone watches: the sub-agent's text as it is written, as ``agent.stream()`` would give it.
            ctx.stream_model = True
        if left is not None and (ctx.options.max_tokens is None or left < ctx.options.max_tokens):
            # The parent's budget bounds the nested run too (delegating must not bypass it). Set on this
            # run's context alone: the agent's options are shared by all its runs.
            ctx.options = attrs.evolve(ctx.options, max_tokens=left)
        try:
            result = await run._run_here()
        except ApprovalNotDeferrableError:
            # Its approval is deferred, and a nested run cannot pause: the caller's run fails with it too (a
            # ``ToolFatalError``), not its model told of a failure it cannot fix.
            raise
        except TripwireError as exc:
            # Its guardrail stopped it: the calling model is told so, and may answer without it (a policy the
            # sub-agent enforces is the sub-agent's; the caller's own guardrails guard the caller's run).
            which = f"its {exc.kind} guardrail {exc.guardrail}"
            if isinstance(exc, ToolGuardrailTripped):
                which = f"the {exc.kind} guardrail {exc.guardrail} of its tool {exc.tool!r}"
            raise AgentToolError(
                f"agent {self._name!r} was stopped by {which}: {_clipped(exc.reason)}", exc.partial
            ) from exc
        except Exception as exc:
            partial = getattr(exc, "run_result", None)
            raise AgentToolError(
                f"agent {self._name!r} failed: {exception_message(exc, _MAX_LAST_MESSAGE)}",
                partial if isinstance(partial, AgentResult) else None,
            ) from exc
        finally:
            # However the run ended (a cancel or the call's timeout included), its tokens were spent.
            if context is not None:
                context.add_usage(ctx.usage)
        if result.output is None and result.stop_reason is not StopReason.FINAL_ANSWER:
            # A final answer of None is an answer (an ``output_type`` of ``X | None``); a run stopped by a
            # limit, a refusal or a filter has none.
            raise AgentToolError(_stopped(self._name, result), result)
        return result.output


def _caller_approvals(context: ToolContext) -> ToolApprovals | None:
    """The approvals of the run that made the call ``context`` is of, built now if its own tools need none;
    ``None`` when that run has nobody to decide (no ``tool_approval``, no handle: ``agent.run()``)."""
    # A ``ToolContext`` has no public link to its run; the usage sink the run wires into it holds the run
    # (weakly). Only a sub-run with tools that need approval and no decider of its own comes here.
    ref = getattr(context._usage, "_run", None)
    parent = ref() if callable(ref) else None
    if not isinstance(parent, RunContext):
        return None
    if parent.options.tool_approval is None and parent.cancel_scope is None:
        return None
    approvals = parent.approvals
    if approvals is None:
        # Its own tools need no approval, so it has none yet: the ones ``RunContext.executor`` would build,
        # which ``AgentRun.approve`` / ``deny`` / ``pending_approvals`` answer through.
        publish = parent.bus.publish
        approvals = parent.approvals = ToolApprovals(
            parent.options.tool_approval,
            functools.partial(publish, owned=True),
            waits=parent.cancel_scope is not None,
            heard=functools.partial(parent.bus.listens_to, ToolApprovalRequested),
        )
    return approvals


class _Forward:
    """The nested run's callback when the parent is observed: each event, as it is, in a ``ToolProgress``
    of the parent's call (``message`` is the event's ``type``)."""

    __slots__ = ("_context",)

    def __init__(self, context: ToolContext) -> None:
        self._context = context

    async def __call__(self, event: Event) -> None:
        await self._context.emit_progress(event.type, event)


_WHY = {
    StopReason.MAX_STEPS: "stopped at its step limit ({steps}) before a final answer",
    StopReason.MAX_TOOL_CALLS: "stopped at its limit of tool calls before a final answer",
    StopReason.MAX_TOKENS: "stopped at its token budget before a final answer",
    StopReason.DEADLINE: "ran out of time (its own timeout) before a final answer",
    StopReason.TRUNCATED: "had its answer cut at the model's output-token limit",
    StopReason.CONTENT_FILTER: "had its answer stopped by the provider's content filter",
    StopReason.CANCELLED: "was cancelled before a final answer",
}


def _clipped(text: str) -> str:
    return text if len(text) <= _MAX_LAST_MESSAGE else text[:_MAX_LAST_MESSAGE] + "…"


def _stopped(name: str, result: AgentResult) -> str:
    """Why a nested run has no output, and what it wrote last, for the parent's model."""
    if result.stop_reason is StopReason.REFUSAL:
        return f"agent {name!r} refused: {result.refusal or result.output_text}"
    why = _WHY.get(result.stop_reason, f"ended without an answer ({result.stop_reason.value})")
    steps = f"{result.steps} step" + ("" if result.steps == 1 else "s")
    message = f"agent {name!r} {why.format(steps=steps)}"
    text = result.output_text.strip()
    if not text:
        return message + "; it wrote nothing yet"
    if len(text) > _MAX_LAST_MESSAGE:
        text = text[:_MAX_LAST_MESSAGE] + "…"
    return f"{message}; its last message: {text}"
