"""A CodeAct run's bookkeeping of its code steps: what the runtime keeps per run, the step in flight, and the
``ToolInvoker`` through which the calls the code makes become tool calls of the run.

Each call from code goes through the run's ``ToolExecutor`` exactly as a native call would (validation,
``ToolCallRequested`` / ``ToolStarted`` / ``ToolSucceeded`` | ``ToolFailed``, ``tool_timeout``,
``max_tool_calls``); its result is recorded on the step the moment it arrives, so a cancel that lands later
still finds it. ``record_calls`` puts a step's results on the run in call order, and gives the calls still
unanswered a cancelled result.

Nothing here writes memory or decides how the run goes on: ``codeact.CodeActRuntime`` does both.
"""

from __future__ import annotations

import anyio
import attrs
import orjson

from ..events import CodeExecuted, ToolCallRequested, ToolFailed
from ..exact_json import dumps as exact_dumps
from ..model.messages import ToolCall
from ..result import ToolResult
from ..sandbox.code_result import CodeResult
from ..sandbox.executor import CodeExecutor, ToolInvoker
from ..sandbox.tool_parameters import ParameterizedInvoker
from ..tools.outcome import cancelled_result
from ..tools.registry import ToolRegistry
from .codeact_calls import complete_arguments
from .codeact_live import LiveOutput
from .context import RunContext
from .planning import PlanState

__all__ = ["CodeStep", "RanStep", "RunState", "code_invoker", "publish_executed", "record_calls", "run_state"]


@attrs.define(eq=False)
class CodeStep:
    """A code step in flight: its code, and the tool calls it made with the results that came back; ``live``
    carries its output to ``CodeOutput`` events while someone listens."""

    code: str
    calls: list[ToolCall] = attrs.field(factory=list)
    results: dict[str, ToolResult] = attrs.field(factory=dict)
    started: float = attrs.field(factory=anyio.current_time)
    live: LiveOutput | None = None


@attrs.frozen
class RanStep:
    """A code step that ran, whose outcome is not in memory yet (its answer is being checked); ``note``: what
    its outcome adds for the model (code of the same answer that did not run), if anything."""

    code: str
    result: CodeResult
    unanswered: list[tuple[ToolCall, ToolResult]]
    live: LiveOutput | None
    note: str = ""


@attrs.define(eq=False)
class RunState:
    """What CodeAct keeps per run (on ``RunContext.runtime_state``, never on the runtime)."""

    executor: CodeExecutor | None = None
    owned: bool = True
    guides: dict[ToolRegistry, str] = attrs.field(factory=dict)
    """The tools part of the system prompt, per registry a step offered (``RunContext.tools``: a registry
    hashes by identity, and one per set of tools left out is kept, ``ToolRegistry.without``), so a step
    whose tools are those of an earlier step does not write the text again."""
    step: CodeStep | None = None
    ran: RanStep | None = None
    """A step that ran, its outcome to be written once its answer is checked (or by the run's ending)."""
    streams: bool | None = None
    """Whether the executor takes an ``on_output`` listener (asked once per run)."""
    send_backs: int = 0
    """How many answers in a row were sent back, prose (``correct_format``) and unusable ones together
    (``MAX_SEND_BACKS``)."""
    limit_reached: bool = False
    planning: PlanState | None = None
    """The run's plan and the code steps a re-plan is told of, when the runtime plans (``planner=…``)."""


def run_state(ctx: RunContext) -> RunState:
    """The run's ``RunState``, made on first use."""
    state = ctx.runtime_state
    if not isinstance(state, RunState):
        state = RunState()
        ctx.runtime_state = state
    return state


def code_invoker(ctx: RunContext, step: CodeStep) -> ToolInvoker:
    """The ``ToolInvoker`` for one step: each call from the code is a tool call of the run."""
    limit = ctx.options.max_tool_calls
    state = run_state(ctx)

    def arrived(_index: int, result: ToolResult) -> None:
        # Recorded before its completion event: a cancel during that event keeps the result.
        step.results[result.call_id] = result

    async def invoke(name: str, arguments: dict[str, object]) -> ToolResult:
        if step.live is not None:
            await step.live.flush()  # what the code printed before the call comes before the call
        tool = ctx.tools.resolve(name)
        if tool is not None:
            # A strict schema requires every property; code leaves the optional ones out.
            arguments = complete_arguments(tool, arguments)
        call = ToolCall(
            f"code_{ctx.step}_{len(step.calls)}",
            name,
            exact_dumps(arguments, default=repr, option=orjson.OPT_NON_STR_KEYS).decode(),
        )
        step.calls.append(call)
        ctx.tool_calls.append(call)
        await ctx.emit(ToolCallRequested(call=call))
        if limit is not None and len(ctx.tool_calls) > limit:
            state.limit_reached = True
            refused = cancelled_result(call, f"not run: the run reached its limit of {limit} tool calls")
            step.results[call.id] = refused
            await ctx.emit(ToolFailed(call=call, result=refused))
            return refused
        [result] = await ctx.executor.run_calls((call,), run_id=ctx.run_id, step=ctx.step, on_result=arrived)
        return result

    # With each tool's parameter order, code may pass arguments by position: ``get_weather("Paris")``.
    return ParameterizedInvoker.for_specs(invoke, ctx.tools.specs)


def record_calls(ctx: RunContext, step: CodeStep, reason: str) -> list[tuple[ToolCall, ToolResult]]:
    """Put the step's tool results on the run in call order; calls left without one get a cancelled one.

    Returns those (call, synthetic result) pairs, whose ``ToolFailed`` is still to be published.
    """
    unanswered = []
    for call in step.calls:
        if call.id not in step.results:
            step.results[call.id] = cancelled_result(call, reason)
            unanswered.append((call, step.results[call.id]))
    ctx.tool_results.extend(step.results[call.id] for call in step.calls)
    return unanswered


async def publish_executed(ctx: RunContext, code: str, result: CodeResult) -> None:
    """Publish a step's ``CodeExecuted`` (whether it ran or not)."""
    await ctx.emit(
        CodeExecuted(
            code=code,
            ok=result.ok,
            result=result.value,
            stdout=result.stdout,
            stderr=result.stderr,
            error=result.error,
            duration=result.duration,
            error_type=None if result.error_type is None else str(result.error_type),
        )
    )
