"""What a run produces: ``AgentResult``, ``ToolResult`` and ``StopReason``.

These sit below the agent layer (the run events carry them), so they are plain values with no behaviour.
``AgentResult`` is generic in its ``output`` (``AgentResult[City]``), for type checkers only: the parameter
costs nothing at run time.
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic

import attrs

from .model.events import to_jsonable
from .model.messages import ToolCall
from .model.response import NOT_IN_JSON, TokenUsage

__all__ = ["AgentResult", "OutputT", "StopReason", "ToolApprovalRequest", "ToolResult"]

if TYPE_CHECKING:
    # A default for the type parameter (PEP 696; ``typing`` has it from 3.13), for type checkers only: at
    # run time it changes nothing, and ``typing_extensions`` need not be imported.
    from typing_extensions import TypeVar

    OutputT = TypeVar("OutputT", default=Any)
else:
    OutputT = typing.TypeVar("OutputT")
"""The type of a run's ``output``: ``str`` for an agent without ``output_type``, else that type. Its default
(``Any``) is what a bare ``AgentResult`` or ``Agent`` annotation means."""


class StopReason(enum.Enum):
    """Why a run ended."""

    FINAL_ANSWER = "final_answer"
    TRUNCATED = "truncated"
    """The model's last answer was cut at its output-token limit (``finish_reason`` ``length``), so it is
    not a whole final answer; ``output_text`` holds what it wrote."""
    CONTENT_FILTER = "content_filter"
    """The provider's content filter stopped the model's last answer (``finish_reason``
    ``content_filter``); ``output_text`` holds what it wrote before, often nothing."""
    REFUSAL = "refusal"
    """The model refused to answer; ``AgentResult.refusal`` holds its refusal message."""
    MAX_STEPS = "max_steps"
    MAX_TOOL_CALLS = "max_tool_calls"
    MAX_TOKENS = "max_tokens"
    DEADLINE = "deadline"
    CANCELLED = "cancelled"
    ERROR = "error"
    APPROVAL_REQUIRED = "approval_required"
    """The run paused for human approval (``AgentOptions(tool_approval="defer")``): calls of its last step
    wait for a decision, listed in ``AgentResult.pending_approvals`` and left open in ``all_items``; a later
    run resumes it, ``agent.run(history=result.all_items, approvals={call_id: True | False | "why"})``."""


@attrs.frozen
class ToolResult:
    """The outcome of one tool call: the text fed back to the model and whether it failed.

    On failure ``output`` is the ``TOOL_ERROR: {…}`` text (or the text the tool's ``on_error`` function gave
    the model instead), ``error`` the failure's own message and ``error_type`` names the failure
    (``unknown_tool``, ``invalid_arguments``, ``timeout``, ``exception``, ``cancelled``, ``denied``,
    ``rejected``: a tool guardrail's ``Rejection``).
    """

    call_id: str
    name: str
    output: str
    ok: bool = True
    error_type: str | None = None
    error: str | None = None
    duration: float = 0.0
    value: Any = attrs.field(default=None, eq=False, repr=False)
    """The tool's return value before it became ``output`` text (CodeAct hands it back to code)."""


def _read_only(arguments: Mapping[str, Any]) -> Mapping[str, Any]:
    # A copy: the executor adds the context argument to the call's own dict afterwards.
    return MappingProxyType(dict(arguments))


@attrs.frozen
class ToolApprovalRequest:
    """One tool call waiting for a decision: what an approval function (``AgentOptions.tool_approval``) is
    given, and what ``AgentRun.pending_approvals`` lists (and ``AgentResult.pending_approvals``, for a run
    that paused, its ``deps`` left out).

    ``call`` is the call as the model made it (its ``arguments`` the JSON text); ``tool`` the registered name
    of the tool it calls; ``arguments`` its validated arguments, read-only, as the tool function would get
    them (context left out); ``deps`` the run's dependencies (``agent.run(x, deps=...)``: the user a request
    is for, to decide by), never published.

    >>> request = ToolApprovalRequest("run_1", 0, ToolCall("c1", "refund", '{"amount":250}'), "refund",
    ...                               {"amount": 250})
    >>> request.call_id, request.arguments["amount"]
    ('c1', 250)
    """

    run_id: str
    step: int
    call: ToolCall
    tool: str
    arguments: Mapping[str, Any] = attrs.field(factory=dict, converter=_read_only)
    deps: Any = attrs.field(default=None, repr=False, metadata={"json": False})

    @property
    def call_id(self) -> str:
        """The call's id: what ``run.approve`` and ``run.deny`` take."""
        return self.call.id


@attrs.frozen
class AgentResult(Generic[OutputT]):
    """The result of one agent run.

    ``new_items`` are the memory items the run appended (its part of the conversation), ``history`` the
    conversation it continued, and ``all_items`` both: the whole conversation, to continue or store (see
    there). ``usage`` is the sum over every model call of the run. ``refusal`` is the model's refusal message
    when its last answer was one (``StopReason.REFUSAL``). ``output`` is the final answer: read into the
    run's ``output_type`` (and passed through its validators), or its text (``output_text``) for a run
    without one; ``None`` when the run ended without a final answer (a refusal, a limit, a cancel: see
    ``stop_reason``).

    Type checkers see the output's type: ``await Agent(model, output_type=City).run(x)`` is an
    ``AgentResult[City]``, a plain agent's run an ``AgentResult[str]``.

    Its JSON form (``to_dict()``, what the terminal run events carry to a browser) leaves out ``new_items``
    and ``history`` (hence ``all_items``), and an ``output`` that is just ``output_text`` again.
    """

    run_id: str
    output_text: str
    stop_reason: StopReason
    steps: int = 0
    """The steps the run finished. A step cut short (cancelled, or the one a failure ended) is not counted,
    though its model call counts in ``usage``: a run that failed on its first answer has ``steps == 0``."""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    usage: TokenUsage = attrs.field(factory=TokenUsage)
    new_items: tuple[Any, ...] = attrs.field(default=(), repr=False, metadata=NOT_IN_JSON)
    """Memory items, in the protocol's own shape: persist them (a session does); not for a browser (an input
    image is there whole, reasoning as ``encrypted_content``), so ``to_dict()`` leaves them out."""
    error: str | None = None
    reasoning_text: str | None = None
    refusal: str | None = None
    output: OutputT | None = None
    pending_approvals: tuple[ToolApprovalRequest, ...] = attrs.field(default=(), kw_only=True)
    """For a run that paused for approval (``StopReason.APPROVAL_REQUIRED``): the calls waiting for a
    decision, in call order (each a ``ToolApprovalRequest``: ``call_id``, ``tool``, ``call``, validated
    ``arguments``; its ``deps`` left out). ``all_items`` ends with their turn, the calls without outputs
    (the step's other calls have theirs): store it, and resume with ``approvals=`` (see
    ``agentflow.runtimes.resume``). Empty for every other run."""
    agent_name: str | None = attrs.field(default=None, kw_only=True)
    """The name of the agent the run ended with: its own agent's, or the one a handoff gave the run to
    (``Agent(handoffs=...)``); ``None`` for a result not made by an agent's run."""
    history: tuple[Any, ...] = attrs.field(default=(), kw_only=True, repr=False, metadata=NOT_IN_JSON)
    """The conversation the run continued: its memory's items before it wrote its input — ``history=`` (as
    checked and converted), a session's memory (after its store's load), ``()`` for a run from empty
    memory. The snapshot the run took anyway, shared, never copied. Left out of ``to_dict()``, as
    ``new_items``.

    When the run answered a tool call its memory held without output before the last turn (the synthetic
    ``cancelled`` result goes right after the call's turn, so memory was rewritten), it is the rewritten
    memory, which holds that result and the run's input already: ``all_items`` allows for that."""

    @property
    def all_items(self) -> tuple[Any, ...]:
        """The whole conversation after the run: ``history``, then ``new_items`` — what a next run continues
        (``agent.run(x, history=result.all_items)``), or what to store in place of the old conversation
        (``dump_items(result.all_items)``). pydantic-ai's ``all_messages()``, as ``new_items`` is its
        ``new_messages()``.

        A new tuple at each read: the run keeps the two parts, not their sum, so a long conversation is not
        copied for runs that never ask. It holds no system prompt (the agent's, not an item). For a
        session's run it is the conversation the run saw and wrote, which is its memory after the run unless
        the memory trims (a ``WindowedMemory`` may have dropped old items since: ``session.items`` is what it
        keeps) or the run failed and was rolled back (``rollback_on_failure``: memory is as before the run).

        >>> from agentflow.agent.items import user_item, assistant_item
        >>> result = AgentResult("run_1", "Ada.", StopReason.FINAL_ANSWER,
        ...                      history=(user_item("I am Ada."), assistant_item("Hi Ada.")),
        ...                      new_items=(user_item("Who am I?"), assistant_item("Ada.")))
        >>> [item["role"] for item in result.all_items]
        ['user', 'assistant', 'user', 'assistant']
        >>> result.all_items[0] is result.history[0]  # the items themselves, not copies
        True
        """
        history, new = self.history, self.new_items
        if not history or not new:
            return history or new
        kept = {id(item) for item in history}
        if any(id(item) in kept for item in new):
            # A run that rewrote its memory to answer a call left without output: ``history`` is that memory,
            # and holds the new items the run wrote before (the synthetic results, its input), in place.
            new = tuple(item for item in new if id(item) not in kept)
        return history + new

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping of the result: every field but ``new_items`` and ``history`` (see there), and
        ``output`` only when it is not the answer's text itself (a plain agent's output is ``output_text``:
        read that).

        >>> plain = AgentResult("run_1", "Hi.", StopReason.FINAL_ANSWER, output="Hi.", new_items=({},),
        ...                     history=({},))
        >>> data = plain.to_dict()
        >>> data["output_text"], "output" in data, "new_items" in data, "history" in data
        ('Hi.', False, False, False)
        >>> AgentResult("run_1", '{"n": 1}', StopReason.FINAL_ANSWER, output={"n": 1}).to_dict()["output"]
        {'n': 1}
        """
        out: dict[str, Any] = {}
        for field in _JSON_FIELDS:
            value = getattr(self, field)
            if field == "output" and isinstance(value, str) and value == self.output_text:
                continue
            out[field] = to_jsonable(value)
        return out


_JSON_FIELDS = tuple(f.name for f in attrs.fields(AgentResult) if f.metadata.get("json", True))
