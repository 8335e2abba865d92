"""Run events: everything that happens in an agent run, as typed immutable values.

Model events (``TextDelta``, ``ToolCallReady``…) are defined in ``agentflow.model.events`` (re-exported here,
so every event of a run imports from one place) and are stamped with the run's ``run_id``/``step``/``seq``
when published; this module adds the events of the agent layer. Every run ends with exactly one terminal
event: ``RunFinished``, ``RunFailed`` or ``RunCancelled``. ``AgentEvent`` is the union of every concrete
event class, for an exhaustive ``match``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import attrs

from .model.events import (
    NOT_IN_JSON,
    Event,
    ModelCompleted,
    ModelEvent,
    ModelRetry,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
    to_jsonable,
)
from .model.messages import ToolCall
from .model.response import TokenUsage
from .plan import Plan
from .result import AgentResult, ToolResult

if TYPE_CHECKING:  # only named here: ``import agentflow.events`` (an SSE server's) stays light
    from .agent.prompt import AgentPrompt

__all__ = [
    "AgentEvent",
    "CodeExecuted",
    "CodeOutput",
    "CodeStarted",
    "Event",
    "GuardrailTripped",
    "HandedOff",
    "ModelCompleted",
    "ModelEvent",
    "ModelRequest",
    "ModelRetry",
    "OutputRejected",
    "PlanCreated",
    "PlanUpdated",
    "ReasoningDelta",
    "RefusalDelta",
    "RunCancelled",
    "RunEvent",
    "RunFailed",
    "RunFinished",
    "RunStarted",
    "StepFinished",
    "StepStarted",
    "TerminalEvent",
    "TextDelta",
    "ToolApprovalRequested",
    "ToolCallArgumentsDelta",
    "ToolCallReady",
    "ToolCallRequested",
    "ToolCallStarted",
    "ToolFailed",
    "ToolProgress",
    "ToolStarted",
    "ToolSucceeded",
    "UsageReported",
]


@attrs.frozen
class RunEvent(Event):
    """Base of the agent layer's own events."""


@attrs.frozen
class RunStarted(RunEvent):
    """A run began: its ``input`` and ``runtime``; ``session_id`` the conversation it belongs to (a
    session's ``id``, ``None`` for a one-off run); for an agent used as a tool (``as_tool``), the caller's
    run and tool call (``parent_run_id``, ``parent_call_id``), so that a sink watching the sub-agent can tie
    its runs to the calling ones."""

    input: str
    runtime: str
    session_id: str | None = None
    parent_run_id: str | None = None
    parent_call_id: str | None = None


@attrs.frozen
class StepStarted(RunEvent):
    """A step (one model call and the tools it asks for) began."""


@attrs.frozen
class ModelRequest(RunEvent):
    """The runtime is about to call the model.

    ``purpose`` is ``"step"`` for a step's call (its ``ModelCompleted`` is the agent's turn) and ``"plan"``
    for a planner's call in a run that plans (DeepResearch, CodeAct with a planner: its ``ModelCompleted``
    holds the plan, not an answer to show): every
    ``ModelCompleted`` belongs to the ``ModelRequest`` before it.

    ``prompt`` is the ``AgentPrompt`` the call sends (the runtime's own object, not a copy: do not mutate
    what it holds): system prompt, instructions, every item, tool specs and parameters. A planner's call
    through a ``ChatModel`` (``ModelPlanner``) has its request's messages as ``items`` and its parameters as
    fields. ``None`` for a ``ModelRequest`` built elsewhere. It is left out of ``to_dict()`` (and so of SSE
    frames): it holds the whole conversation, images and encrypted reasoning included; nor is it part of
    the event's ``repr`` or equality.
    """

    model: str | None
    items: int
    tools: tuple[str, ...] = ()
    purpose: str = "step"
    prompt: AgentPrompt | None = attrs.field(default=None, eq=False, repr=False, metadata=NOT_IN_JSON)

    def to_dict(self) -> dict[str, Any]:
        """As ``Event.to_dict``, without the fields marked ``NOT_IN_JSON`` (``prompt``)."""
        out: dict[str, Any] = {"type": self.type}
        for f in attrs.fields(type(self)):
            if f.metadata.get("json", True):
                out[f.name] = to_jsonable(getattr(self, f.name))
        return out


@attrs.frozen
class ToolCallRequested(RunEvent):
    """The model asked for a tool call (after call-id completion and name normalisation)."""

    call: ToolCall


@attrs.frozen
class ToolApprovalRequested(RunEvent):
    """A call to a tool that needs approval (``@tool(needs_approval=...)``) waits for a decision: ``call`` is
    the call (its ``arguments`` the JSON text the model wrote), ``tool`` the registered name of its tool.

    Published after the call's ``ToolCallRequested``, once its arguments are valid, before it runs. Without a
    ``tool_approval`` function the run waits for ``run.approve(call.id)`` or ``run.deny(call.id, reason)``
    (``agentflow.tools.approval``); with one, that function decides, and the event only tells. Either way the
    call then runs (``ToolStarted``…) or is denied (``ToolStarted``, ``ToolFailed`` of type ``denied``).
    """

    call: ToolCall
    tool: str


@attrs.frozen
class ToolStarted(RunEvent):
    """A tool call began executing."""

    call: ToolCall


@attrs.frozen
class ToolProgress(RunEvent):
    """Progress reported from inside a tool (``await ctx.emit_progress(…)``); never written to memory."""

    call_id: str
    tool: str
    message: str
    data: Any = None


@attrs.frozen
class ToolSucceeded(RunEvent):
    """A tool call returned; ``result.output`` is the text fed back to the model."""

    call: ToolCall
    result: ToolResult


@attrs.frozen
class ToolFailed(RunEvent):
    """A tool call failed; ``result.output`` is the ``TOOL_ERROR: {…}`` text fed back to the model."""

    call: ToolCall
    result: ToolResult


@attrs.frozen
class CodeStarted(RunEvent):
    """CodeAct is about to run a code step: ``code`` as it will run, in ``language``.

    Published only while the run has a listener, right before the executor starts; its ``CodeExecuted``
    follows (with ``CodeOutput`` and the code's tool calls in between), also when the run is cut short.
    """

    code: str
    language: str = "python"


@attrs.frozen
class CodeOutput(RunEvent):
    """A piece of what a running code step printed, as it comes: ``stream`` is ``"stdout"`` or ``"stderr"``.

    Published only while the run has a listener, between the step's ``CodeStarted`` and ``CodeExecuted``;
    small writes arrive together. A stream's pieces, joined, are what the code printed to it as
    ``CodeExecuted`` has it, up to where the sandbox's capture stops (``ExecutionLimits.max_output_bytes``);
    only ``CodeExecuted`` has bytes written straight to the file descriptors (C code, ``os.write``), the
    truncation marker, and the sandbox's note after a restart. An executor that does not stream (one without
    an ``on_output`` parameter) gives none.
    """

    stream: Literal["stdout", "stderr"]
    text: str


@attrs.frozen
class CodeExecuted(RunEvent):
    """CodeAct ran a code step; ``ok`` is false when the code raised or was killed.

    ``error_type`` says why a step failed (a ``CodeErrorType`` value: ``"timeout"``, ``"exception"``…),
    ``None`` when it succeeded or the executor did not say.
    """

    code: str
    ok: bool
    result: Any = None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None
    duration: float = 0.0
    error_type: str | None = None


@attrs.frozen
class PlanCreated(RunEvent):
    """A run that plans (DeepResearch, CodeAct with a planner) made its plan (after the user input, before
    the first step)."""

    plan: Plan


@attrs.frozen
class PlanUpdated(RunEvent):
    """A run that plans revised its plan between steps (``plan.revision`` counts the revisions)."""

    plan: Plan


@attrs.frozen
class HandedOff(RunEvent):
    """The run went over from the agent named ``source`` to the one named ``target``, whose call ``call_id``
    asked for it (``Agent(handoffs=...)``): published after the step of that call ends, before the target's
    first step (``StepStarted``), once the target has the run.
    """

    source: str
    target: str
    call_id: str


@attrs.frozen
class OutputRejected(RunEvent):
    """The model's final answer did not match the agent's ``output_type``; ``error`` says why.

    ``retrying``: the answer goes back to the model with the error, and the run goes on; otherwise the run
    fails with ``OutputValidationError``.
    """

    error: str
    retrying: bool


@attrs.frozen
class GuardrailTripped(RunEvent):
    """A guardrail stopped the run (``Agent(input_guardrails=..., output_guardrails=...)``): ``kind`` is
    ``"input"`` or ``"output"``, ``guardrail`` its name, ``reason`` and ``info`` what its ``Tripwire`` said.

    Published once, right before the run's ``RunFailed`` (whose ``error_type`` is ``InputGuardrailTripped`` or
    ``OutputGuardrailTripped``), after the work the trip cut short was ended; never for a guardrail that
    passed, nor for one that raised (that run fails with ``GuardrailError``).
    """

    kind: Literal["input", "output"]
    guardrail: str
    reason: str
    info: Any = None


@attrs.frozen
class StepFinished(RunEvent):
    """A step ended; ``usage`` is this step's model usage."""

    tool_calls: int = 0
    usage: TokenUsage | None = None


@attrs.frozen
class RunFinished(RunEvent):
    """Terminal: the run ended normally (final answer or a limit), with its result."""

    result: AgentResult


@attrs.frozen
class RunFailed(RunEvent):
    """Terminal: the run raised; ``partial`` keeps the finished work.

    For a model error (``ModelError``), ``status`` is its HTTP status (``None`` for a connection or protocol
    failure), ``retryable`` whether sending the run again may help (a rate limit, a 5xx, a dropped
    connection) and ``request_id`` the id the provider gave the failed request (for its support). Other
    errors that say whether a retry may help (``SessionConflictError``: yes) set ``retryable``; otherwise it
    is ``None``, as ``status`` and ``request_id`` are. A UI can offer "try again" from them without parsing
    ``error``.
    """

    error_type: str
    error: str
    partial: AgentResult | None = None
    status: int | None = None
    retryable: bool | None = None
    request_id: str | None = None


@attrs.frozen
class RunCancelled(RunEvent):
    """Terminal: the run was cancelled; ``partial`` keeps the finished work and usage."""

    partial: AgentResult


TerminalEvent: TypeAlias = RunFinished | RunFailed | RunCancelled
"""The three events one of which ends every run (``types=TerminalEvent`` selects them)."""

AgentEvent: TypeAlias = (
    RunStarted
    | StepStarted
    | ModelRequest
    | TextDelta
    | ReasoningDelta
    | RefusalDelta
    | ToolCallStarted
    | ToolCallArgumentsDelta
    | ToolCallReady
    | UsageReported
    | ModelRetry
    | ModelCompleted
    | ToolCallRequested
    | ToolApprovalRequested
    | ToolStarted
    | ToolProgress
    | ToolSucceeded
    | ToolFailed
    | CodeStarted
    | CodeOutput
    | CodeExecuted
    | PlanCreated
    | PlanUpdated
    | HandedOff
    | OutputRejected
    | GuardrailTripped
    | StepFinished
    | RunFinished
    | RunFailed
    | RunCancelled
)
"""Every event agentflow publishes in a run, as one union: annotate with it and a ``match`` over the classes
can end in ``assert_never`` (a type checker then reports an event class the ``match`` forgets).

A run's iteration yields ``Event``, since your own code may publish events of its own on a run's bus; narrow
with ``isinstance(event, AgentEvent)`` (a runtime check too) before such a ``match``.
"""
