"""``CodeActRuntime``: the model acts by writing Python that calls the tools, run in a sandbox (seed 002 §5).

The base loop with different hooks, not a loop of its own. Each model turn is one JSON object (see
``codeact_protocol``): ``{"type": "code", …}`` runs the code, ``{"type": "final", …}`` ends the run::

    StepStarted
    build_prompt           system prompt + CodeAct instructions + the tools as text; no protocol tools
    call_model
    handle_model_result    the assistant turn → memory, then parse it:
        final              the run ends with its output
        prose              (no protocol object, no code) the final answer, as the reference has it; or
                           sent back with a PROTOCOL_ERROR (``correct_format=True``, at most twice in a row);
                           prose whose only code is a fence in another language (```` ```bash ````) is sent
                           back with an ``unsupported_language`` CODE_ERROR whatever ``correct_format`` says
                           (at most twice in a row, then it is the answer)
        unusable           protocol-shaped text that cannot be read, an empty answer, an answer cut at the
                           output-token limit: never the user's answer. Sent back (PROTOCOL_ERROR; cut code
                           gets a CODE_ERROR asking for shorter code) at most twice in a row, prose sent back
                           counted too; one more fails the run (``CodeActProtocolError``)
        code               (a code object, or fenced Python) run in the run's executor (CodeStarted, then
                           what it prints as CodeOutput events while it runs: both only while someone
                           listens); every tool call the code makes goes through the run's
                           ToolExecutor (ToolCallRequested, ToolStarted, ToolSucceeded|ToolFailed, limits,
                           TOOL_ERROR texts; ``codeact_steps``) and its value comes back to the code;
                           CODE_RESULT / CODE_ERROR → memory (a system item, or the role of
                           ``observation_role``), CodeExecuted;
                           (code of the same answer in another language did not run: the outcome has a
                           ``note`` saying so);
                           ``react=False``: a successful step ends the run with its value (unless such code
                           was left out: the model then sees the note);
                           ``react=True``: back to the model, which goes on or answers
    StepFinished           (``tool_calls`` counts the calls made from code)

One executor per run, created when the run first needs it and closed when the run ends, however it ends: a
cancelled run kills its sandbox process and writes a ``CODE_ERROR`` for the step it cut short, so memory stays
a sequence of code turns each followed by its outcome; an answer cut while it streams is kept (as the partial
result's text, and with ``keep_partial_answer`` in memory) only when it is prose or a whole final object.
Calls made from code are not written to memory as tool calls (the code is), but they are on the result
(``tool_calls`` / ``tool_results``) and count towards ``max_tool_calls``.

With an ``output_type`` the answer (``final_answer(x)``'s value, a final message's output, the value of a
step that ends the run, prose) is read into it as a value (``codeact_output``) and passed through its
validators before the run ends with it; one that does not match, or that a validator rejects, goes back to
the model (a code step's in its ``CODE_ERROR``, a final message's as an ``OUTPUT_ERROR``), counted against
``OutputType.retries`` as ``read_output`` counts a ReAct answer (``OutputRejected``; then
``OutputValidationError``). The prompt names the type; no ``response_format`` is sent, in either ``mode``.

With a ``planner`` (``CodeActRuntime(planner=AgentModelPlanner(), replan_every=3)``, smolagents'
``planning_interval``: the agent's own model plans) the run plans as DeepResearch does
(``agentflow.runtimes.planning``): after the input, the plan goes into memory (a ``plan_role`` message) and
``PlanCreated`` is published before the first step; every ``replan_every`` steps while the run goes on, the
planner gets the progress (the code steps since the plan, each with its outcome, and the tool calls the code
made) and ``PlanUpdated`` follows. Without a planner nothing of it runs: prompts and events are what they
were.

Where this departs from the reference on purpose: a failed step with ``react=False`` goes back to the model
(the reference ended the run with the error); with ``react=True`` the model may run more code after a
successful step (no "FINALIZE_MODE" refusal; ``max_steps`` bounds the run); the step limit, token budget,
tool-call limit, cancellation and deadline all hold as in ReAct; tool calls from code get the same
validation, events and ``TOOL_ERROR`` texts as native ones (a strict tool's optional arguments may be left
out, ``codeact_calls``); an answer that is not prose is never returned as the final answer (the reference
returned any text it could not parse, raw JSON included).
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from typing import Any, ClassVar, cast

import anyio
import attrs

from ..agent.items import message_item, user_item
from ..agent.prompt import AgentModelResult, AgentPrompt
from ..events import CodeStarted, OutputRejected, ToolFailed
from ..plan import Plan
from ..result import AgentResult, StopReason
from ..sandbox.code_api import code_api_text
from ..sandbox.code_result import CodeErrorType, CodeResult
from ..sandbox.executor import CodeExecutor, StreamingCodeExecutor, streams_output
from ..sandbox.limits import ExecutionLimits
from ..sandbox.process_sandbox import ProcessSandbox
from .base import AgentRuntime, answer_stop_reason, join_prompt
from .calls import complete_tool_calls, patch_memory_items
from .codeact_live import LiveOutput, stream_step
from .codeact_options import (
    MAX_SEND_BACKS,
    CodeActOptions,
    CodeActProtocolError,
    ExecutorFactory,
    ObservationRole,
)
from .codeact_output import Accepted, Rejected, check_answer, may_retry
from .codeact_prompt import (
    CODEACT_INSTRUCTIONS,
    CUT_ANSWER,
    CUT_CODE,
    EMPTY_ANSWER,
    EMPTY_CUT_ANSWER,
    FINAL_STEP_REMINDER,
    OUTPUT_ERROR_PREFIX,
    correction_text,
    not_run_text,
    output_note,
    skipped_code_text,
    tools_guide,
    unsupported_language_text,
)
from .codeact_protocol import (
    CodeMessage,
    FinalMessage,
    NotProtocol,
    answer_body,
    answer_text,
    code_error_text,
    output_preview,
    parse_answer,
    step_text,
)
from .codeact_steps import (
    CodeStep,
    RanStep,
    RunState,
    code_invoker,
    publish_executed,
    record_calls,
    run_state,
)
from .context import RunContext
from .output import OutputValidationError
from .planner import AgentModelPlanner, CodeAction, Planner
from .planning import PlanHook, Planning, PlanRole, PlanState
from .run_ending import CLEANUP_SECONDS

__all__ = [
    "MAX_SEND_BACKS",
    "CodeActOptions",
    "CodeActProtocolError",
    "CodeActRuntime",
    "ExecutorFactory",
    "ObservationRole",
]

_NATIVE_CALLS_REFUSED = " ".join(
    (
        "not run: CodeAct takes no native tool calls;",
        'call the tools from Python code in a {"type": "code"} answer',
    )
)
_NATIVE_AND_CODE = (
    "the same answer also made native tool calls, which CodeAct does not take; send the code alone, and "
    "call the tools from it"
)


@attrs.frozen
class _StepAnswer:
    """What a code step gives as the final answer: ``value``, its ``text``; ``from_text``: only the text (what
    the step printed, having no value)."""

    value: Any
    text: str
    from_text: bool = False


def _with_output_retry(ctx: RunContext, items: Iterable[Any]) -> tuple[Any, ...]:
    """A model turn's items after the ``OUTPUT_ERROR`` they answer (in ``ctx.output_retry`` until now)."""
    if ctx.output_retry is None:
        return tuple(items)
    retry, ctx.output_retry = ctx.output_retry, None
    return (retry, *items)


def _said(text: str) -> str | None:
    """What an earlier CodeAct turn said to the user, for a plan told the conversation (``TurnText``): a final
    message's output, or prose; ``None`` for code and for text that could not be read (no answer)."""
    answer = parse_answer(text)
    if isinstance(answer, FinalMessage):
        return answer.output
    if isinstance(answer, NotProtocol) and answer.attempt is None:
        return answer_body(text)
    return None


def _api_text(executor: CodeExecutor, limits: ExecutionLimits, *, per_run: bool) -> str:
    """How code reaches tools, worded for what this executor says it allows (``ProcessSandbox`` and any
    executor with ``persistent`` / ``network`` / ``site_packages`` / ``python_version`` attributes; else:
    persistent, no network, standard library only, no version named) and what the step limits allow
    (threads only with ``max_processes`` above 0). ``per_run``: the executor serves this run only (the
    runtime made it), so its state does not reach the next request of a session although the model sees
    that request's code."""
    persistent = getattr(executor, "persistent", True)
    network = getattr(executor, "network", False)
    site_packages = getattr(executor, "site_packages", False)
    version = getattr(executor, "python_version", None)
    return code_api_text(
        persistent=persistent is not False,
        network=network is True,
        site_packages=site_packages is True,
        per_request=per_run,
        threads=limits.max_processes > 0,
        python_version=version if isinstance(version, str) else None,
    )


class CodeActRuntime(AgentRuntime):
    """The CodeAct runtime: name ``codeact``; ``options`` are its ``CodeActOptions``.

    Planning (smolagents' ``planning_interval``), off unless a ``planner`` is given:

    - ``planner``: a ``Planner``, e.g. ``AgentModelPlanner()`` (the agent's own model plans, as smolagents'
      does), ``ModelPlanner(chat_model)`` (another model) or ``Planner.simple()``. The run plans after its
      input: the plan goes into memory and ``PlanCreated`` is published before the first step, as in
      DeepResearch.
    - ``replan_every``: re-plan after every N steps (``None``: never), told the code steps since the plan
      with their outcomes and the tool calls the code made; published as ``PlanUpdated``. Alone, it plans
      with the agent's own model (``AgentModelPlanner()``), as smolagents' ``planning_interval`` does.
    - ``on_plan``: sees (and may edit) every plan before it is used, as in DeepResearch.
    - ``plan_role``: the role of the plan's message; ``None`` (default): ``options.observation_role``, so a
      chat template that needs user observations gets a user plan too.

    ``planning`` is the resulting ``Planning`` (``None`` without a planner). One instance may serve any
    number of concurrent runs: each run gets its own executor and plan.

    >>> CodeActRuntime(), CodeActRuntime(CodeActOptions(react=True))
    (CodeActRuntime(), CodeActRuntime(CodeActOptions(react=True, ...)))
    >>> CodeActRuntime(planner=Planner.simple(), replan_every=3)
    CodeActRuntime(planner=SimplePlanner(), replan_every=3)
    """

    name: ClassVar[str] = "codeact"
    instructions: ClassVar[str | None] = CODEACT_INSTRUCTIONS
    # Read its own way: the answer is a value (``final_answer(x)``, a final message's output), not a message a
    # ``response_format`` could shape, so none is sent and the prompt names the type instead.
    structured_output: ClassVar[bool] = True
    # The code catches what its tool calls raise (a ``ToolError``): a call that ends the run cancels a scope.
    tool_errors_reach_code: ClassVar[bool] = True

    def __init__(
        self,
        options: CodeActOptions | None = None,
        *,
        planner: Planner | None = None,
        replan_every: int | None = None,
        on_plan: PlanHook | None = None,
        plan_role: PlanRole | None = None,
    ) -> None:
        if options is not None and not isinstance(options, CodeActOptions):
            raise TypeError(f"options must be a CodeActOptions, got {type(options).__name__}")
        self.options = options if options is not None else CodeActOptions()
        self.planning: Planning | None = None
        if planner is None and replan_every is not None:
            planner = AgentModelPlanner()  # smolagents' planning_interval: the agent's own model plans
        if planner is not None:
            role = self.options.observation_role if plan_role is None else plan_role
            self.planning = Planning(
                planner, replan_every=replan_every, on_plan=on_plan, plan_role=role, turn_text=_said
            )
            return
        given = (("on_plan", on_plan), ("plan_role", plan_role))
        unused = [name for name, value in given if value is not None]
        if unused:
            verb = "needs" if len(unused) == 1 else "need"
            raise TypeError(
                f"{' and '.join(unused)} {verb} a planner: pass planner=AgentModelPlanner() (or "
                "replan_every=N) to plan with the agent's own model, as smolagents' planning_interval does, "
                "ModelPlanner(chat_model) to plan with another model, or Planner.simple()"
            )

    def __repr__(self) -> str:
        parts = []
        if self.options != CodeActOptions():
            changed = [
                f"{a.name}={getattr(self.options, a.name)!r}"
                for a in attrs.fields(CodeActOptions)
                if getattr(self.options, a.name) != getattr(CodeActOptions(), a.name)
            ]
            parts.append(f"CodeActOptions({', '.join(changed)}, ...)")
        if self.planning is not None:
            parts.append(self.planning.arguments(default_role=self.options.observation_role))
        return f"{type(self).__name__}({', '.join(parts)})"

    # -- planning --------------------------------------------------------------------------------------------

    @staticmethod
    def plan_of(ctx: RunContext) -> Plan | None:
        """The current plan of the run ``ctx`` (``None`` before it is made, or without a planner)."""
        state = ctx.runtime_state
        planning = state.planning if isinstance(state, RunState) else None
        return planning.plan if planning is not None else None

    async def start(self, ctx: RunContext) -> None:
        """The user input → memory; with a planner, then the plan → memory and ``PlanCreated``."""
        await super().start(ctx)
        if self.planning is not None and ctx.answered is None:  # not a resumed run its calls answered
            state = run_state(ctx).planning = PlanState(code_actions=[])
            await self.planning.plan(ctx, state)

    async def run_step(self, ctx: RunContext, *, final: bool = False) -> StopReason | None:
        """One step of the base loop; with ``replan_every``, then a re-plan every N steps while the run goes
        on."""
        stop = await super().run_step(ctx, final=final)
        planning = self.planning
        if planning is not None and planning.replan_due(ctx, stop, final=final):
            state = run_state(ctx).planning
            assert state is not None  # made by ``start``
            await planning.replan(ctx, state)
        return stop

    def _remember_outcome(self, ctx: RunContext, code: str, text: str) -> None:
        """A code step's outcome → memory; when the run plans, also on the code steps a re-plan is told of."""
        ctx.remember([self._observation(text)])
        state = ctx.runtime_state
        planning = state.planning if isinstance(state, RunState) else None
        if planning is not None and planning.code_actions is not None:
            planning.code_actions.append(CodeAction(ctx.step, code, text))

    # -- the executor of a run -------------------------------------------------------------------------------

    def executor_for(self, ctx: RunContext) -> CodeExecutor:
        """The run's code executor, created on first use (see ``CodeActOptions.executor``)."""
        state = run_state(ctx)
        if state.executor is None:
            choice = self.options.executor
            if choice is None:
                state.executor = ProcessSandbox()
            elif isinstance(choice, CodeExecutor) and not isinstance(choice, type):
                # (A class passes the protocol check too; it is a factory: ``executor=ProcessSandbox``.)
                state.executor, state.owned = choice, False
            else:
                made = choice()
                if not isinstance(made, CodeExecutor):
                    raise TypeError(
                        f"the CodeActOptions.executor factory returned {type(made).__name__}, "
                        "not a CodeExecutor"
                    )
                state.executor = made
        return state.executor

    async def run_loop(self, ctx: RunContext) -> AgentResult:
        """The base loop; whatever ends it, the run's executor is closed before the terminal event."""
        try:
            return await super().run_loop(ctx)
        finally:
            state = run_state(ctx)
            executor, state.executor = state.executor, None
            if executor is not None and state.owned:
                with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                    await executor.aclose()

    # -- the prompt ------------------------------------------------------------------------------------------

    def system_prompt(self, ctx: RunContext) -> str | None:
        """The agent's system prompt, the CodeAct instructions, then the tools as text (and the type of the
        final answer, for an ``output_type``, in either ``mode``).

        The tools are those the step offers (``@tool(enabled=...)``, evaluated before its prompt is built);
        their text is written once per registry of offered tools the run sees (``RunState.guides``)."""
        state = run_state(ctx)
        tools = ctx.tools
        guide = state.guides.get(tools)
        if guide is None:
            executor = self.executor_for(ctx)
            api = _api_text(executor, self.options.limits, per_run=state.owned)
            spec = ctx.output_type
            output = output_note(spec.value_schema) if spec is not None else None
            guide = state.guides[tools] = tools_guide(tools, api, react=self.options.react, output=output)
        return join_prompt(ctx.system_prompt, self.instructions, guide)

    def build_prompt(self, ctx: RunContext, *, final: bool = False) -> AgentPrompt:
        """The base prompt without protocol tools (they are described in the system prompt), and without an
        output type's ``response_format``: the model writes protocol objects and code, not the answer's JSON.

        The ``final`` call after ``max_steps`` gets ``final_answer_prompt`` plus a reminder to answer with a
        final message.
        """
        prompt = super().build_prompt(ctx)
        items = prompt.items
        if final:
            items = (*items, user_item(f"{ctx.options.final_answer_prompt} {FINAL_STEP_REMINDER}"))
        response_format = None if ctx.output_type is not None else prompt.response_format
        return attrs.evolve(
            prompt,
            items=items,
            tools=(),
            tool_choice=None,
            parallel_tool_calls=None,
            response_format=response_format,
        )

    # -- a model turn ----------------------------------------------------------------------------------------

    async def handle_model_result(
        self, ctx: RunContext, result: AgentModelResult, *, final: bool = False
    ) -> StopReason | None:
        """Store the turn, then act on its message: final answer, code step, or an answer sent back."""
        state = run_state(ctx)
        ctx.reasoning_text = result.reasoning_text
        if result.tool_calls:
            await self._refuse_native_calls(ctx, result)
            return None
        answer = self._take_answer(ctx, result)
        if isinstance(answer, NotProtocol):
            return await self._not_protocol(ctx, result, answer, final=final)
        state.send_backs = 0
        if isinstance(answer, FinalMessage):
            if ctx.output_type is not None:
                return await self._final_answer(ctx, answer.value, answer.output, final=final)
            return StopReason.FINAL_ANSWER
        if final:
            await self._not_run(ctx, answer, "the run reached its step limit")
            return None
        if ctx.token_budget_reached:
            await self._not_run(
                ctx, answer, f"the run reached its token budget ({ctx.options.max_tokens} tokens)"
            )
            return StopReason.MAX_TOKENS
        if not answer.is_python:
            error = unsupported_language_text(answer.language)
            unsupported = CodeResult(ok=False, error=error, error_type=CodeErrorType.UNSUPPORTED_LANGUAGE)
            await self._write_outcome(ctx, answer.code, unsupported)
            return None
        return await self._code_step(ctx, answer)

    async def _code_step(self, ctx: RunContext, message: CodeMessage) -> StopReason | None:
        """Run the code; its value (``final_answer(x)``; with ``react=False`` any value, else what it printed)
        may end the run, once read into the ``output_type`` if there is one. A step with neither value nor
        output (say, only assignments) goes back to the model, and so does one whose answer also held code in
        another language (``skipped``): its value is not the whole of what the model meant to do, and its
        outcome's note tells the model what did not run."""
        state = run_state(ctx)
        note = skipped_code_text(message.skipped) if message.skipped else ""
        result = await self.run_code(ctx, message.code, note=note)
        answer = self._step_answer(result, whole=not message.skipped)
        verdict: Accepted | Rejected | None = None
        if answer is not None and ctx.output_type is not None:
            verdict = await check_answer(ctx, answer.value, answer.text, from_text=answer.from_text)
        rejected = verdict if isinstance(verdict, Rejected) else None
        await self._close_step(ctx, rejected.feedback if rejected is not None else None)
        if answer is not None and rejected is not None:
            # Sent back in the step's CODE_ERROR; a run out of tool calls cannot take another answer.
            await self._reject(ctx, rejected, answer.text, final=state.limit_reached)
        elif answer is not None:
            # The step's answer ends the run even when it used up the tool calls: the code saw the refusals.
            ctx.output_text = answer.text
            if isinstance(verdict, Accepted):
                ctx.output = verdict.value
            return StopReason.FINAL_ANSWER
        return StopReason.MAX_TOOL_CALLS if state.limit_reached else None

    def _step_answer(self, result: CodeResult, *, whole: bool = True) -> _StepAnswer | None:
        """The final answer a step gives, if it ends the run (see ``CodeActOptions.react``); ``whole``: the
        step ran all the code of its answer (else only ``final_answer(x)`` ends the run)."""
        if not result.ok:
            return None
        if result.is_final:
            return _StepAnswer(result.value, answer_text(result.value))
        if self.options.react or not whole:
            return None
        text = answer_text(result.value)
        if text.strip():
            return _StepAnswer(result.value, text)
        printed = result.stdout.strip()
        return _StepAnswer(None, printed, from_text=True) if printed else None

    async def _final_answer(
        self, ctx: RunContext, value: Any, text: str, *, from_text: bool = False, final: bool = False
    ) -> StopReason | None:
        """A final message or prose read into the ``output_type``: the run ends with it, or it goes back to
        the model with an ``OUTPUT_ERROR`` (which, like ``read_output``'s retry prompt, enters memory only
        with the model's next answer), or the run fails."""
        verdict = await check_answer(ctx, value, text, from_text=from_text)
        if isinstance(verdict, Accepted):
            ctx.output = verdict.value
            return StopReason.FINAL_ANSWER
        await self._reject(ctx, verdict, text, final=final)
        ctx.output_retry = self._observation(OUTPUT_ERROR_PREFIX + verdict.feedback)
        return None

    async def _reject(self, ctx: RunContext, rejected: Rejected, text: str, *, final: bool) -> None:
        """Count a rejected answer and publish ``OutputRejected``; raise ``OutputValidationError`` when it may
        not go back to the model (``final``: the run cannot go on anyway)."""
        retrying = may_retry(ctx, final=final)
        ctx.output_rejections += 1
        await ctx.emit(OutputRejected(error=rejected.reason, retrying=retrying))
        if not retrying:
            partial = ctx.result_for(StopReason.ERROR, error=rejected.reason)
            raise OutputValidationError(rejected.reason, text, partial)

    async def _not_protocol(
        self, ctx: RunContext, result: AgentModelResult, answer: NotProtocol, *, final: bool
    ) -> StopReason | None:
        """An answer with no protocol message: prose is the final answer (or sent back, ``correct_format``);
        anything else is never the user's answer, and goes back to the model a bounded number of times."""
        state = run_state(ctx)
        stop = answer_stop_reason(result)
        if stop is StopReason.REFUSAL or stop is StopReason.CONTENT_FILTER:
            return stop  # not a format problem: asking again in the protocol would not help
        cut = stop is StopReason.TRUNCATED
        empty = not answer_body(result.output_text).strip()  # a reasoning block alone is no answer either
        if answer.attempt is None and not empty and not answer.cut_code:
            # Prose, whole or cut at the output-token limit (``TRUNCATED``, as in the base runtime).
            foreign = answer.other_code
            if (
                cut
                or (foreign is None and not self.options.correct_format)
                or final
                or ctx.token_budget_reached
                or state.send_backs >= MAX_SEND_BACKS
            ):
                if stop is StopReason.FINAL_ANSWER and ctx.output_type is not None:
                    text = result.output_text
                    return await self._final_answer(ctx, text, text, from_text=True, final=final)
                return stop
            state.send_backs += 1
            ctx.output_text = ""
            if foreign is None:
                ctx.remember([self._observation(correction_text(answer.reason))])
            else:
                # A ```bash block is code the model meant to run as often as an example in its answer: asking
                # costs one call, taking it for the answer would hand the user a command nobody ran. Counted
                # with the send-backs, so prose that only shows such code is the answer on the third try.
                error = unsupported_language_text(foreign.language, fenced=True)
                unsupported = CodeResult(ok=False, error=error, error_type=CodeErrorType.UNSUPPORTED_LANGUAGE)
                await self._write_outcome(ctx, foreign.code, unsupported)
            return None
        ctx.output_text = ""  # raw protocol text, or nothing: not an answer for the user
        if final:
            return None  # the last call after max_steps: nothing can be sent back, the run ends without one
        if ctx.token_budget_reached:
            return StopReason.MAX_TOKENS
        code_cut = answer.cut_code or (cut and answer.attempt == "code")
        if code_cut:
            why = answer.reason if answer.cut_code else CUT_CODE
        elif empty:
            why = EMPTY_CUT_ANSWER if cut else EMPTY_ANSWER
        else:
            why = CUT_ANSWER if cut else answer.reason
        if state.send_backs >= MAX_SEND_BACKS:
            raise CodeActProtocolError(why, result.output_text, ctx.result_for(StopReason.ERROR, error=why))
        state.send_backs += 1
        if code_cut:
            # Code too long to write or to read whole is not an answer: the model gets to shorten it.
            await self._not_run(ctx, CodeMessage(""), why)
        else:
            ctx.remember([self._observation(correction_text(why))])
        return None

    def _observation(self, text: str) -> dict[str, Any]:
        """A message the runtime writes for the model, in ``CodeActOptions.observation_role``."""
        return message_item(self.options.observation_role, text)

    async def run_code(self, ctx: RunContext, code: str, *, note: str = "") -> CodeResult:
        """Run one code step in the run's executor: ``CodeStarted``, then its output as ``CodeOutput`` events
        while it runs (only while the run has a listener, and the executor streams), and its tool calls.

        Its outcome is not written yet: ``_close_step`` writes it to memory (ending with ``note``, if given)
        and publishes ``CodeExecuted``, once the step's answer is checked (the run's ending does, if it comes
        first).
        """
        state = run_state(ctx)
        executor = self.executor_for(ctx)
        step = CodeStep(code)
        state.step = step
        invoker = code_invoker(ctx, step)
        names, limits = ctx.tools.names, self.options.limits
        if not ctx.bus.has_listeners():
            result = await executor.execute(code, invoker, names, limits)  # nobody to tell: no events
        else:
            await ctx.emit(CodeStarted(code=code))
            if state.streams is None:
                state.streams = streams_output(executor)
            if not state.streams:
                result = await executor.execute(code, invoker, names, limits)
            else:
                streaming = cast(StreamingCodeExecutor, executor)
                live = step.live = LiveOutput(ctx.emit, limits.max_output_bytes)

                def execute() -> Awaitable[CodeResult]:
                    return streaming.execute(code, invoker, names, limits, on_output=live.take)

                result = await stream_step(live, execute)
        ended = f"the code step ended ({result.error_type})" if result.error_type else "the code step ended"
        unanswered = record_calls(ctx, step, f"{ended} before this tool call finished")
        # From here the step is settled: a cancel writes this outcome (``settle_pending``), not a cut step's.
        state.ran, state.step = RanStep(code, result, unanswered, step.live, note), None
        return result

    async def _close_step(self, ctx: RunContext, feedback: str | None = None) -> None:
        """Write the outcome of the step that ran (``CODE_RESULT`` / ``CODE_ERROR``, or a ``CODE_ERROR`` with
        ``feedback`` for an answer that was rejected), then publish the rest of its output, the results of its
        calls left unanswered, and ``CodeExecuted``."""
        state = run_state(ctx)
        ran, state.ran = state.ran, None
        if ran is None:
            return
        result, options = ran.result, self.options
        if feedback is None:
            text = step_text(result, options.max_result_chars, options.max_output_chars, ran.note)
        else:
            stdout = output_preview(result.stdout, options.max_output_chars)
            stderr = output_preview(result.stderr, options.max_output_chars)
            text = code_error_text(feedback, stdout, stderr, ran.note)
        # Memory is complete: a cancel from here on has nothing to settle.
        self._remember_outcome(ctx, ran.code, text)
        if ran.live is not None:
            await ran.live.flush()
        for call, refused in ran.unanswered:
            await ctx.emit(ToolFailed(call=call, result=refused))
        await publish_executed(ctx, ran.code, result)

    async def _write_outcome(self, ctx: RunContext, code: str, result: CodeResult) -> None:
        """A step that did not run: its ``CODE_ERROR`` to memory, then ``CodeExecuted``."""
        self._remember_outcome(ctx, code, step_text(result))
        await publish_executed(ctx, code, result)

    async def _not_run(
        self,
        ctx: RunContext,
        message: CodeMessage,
        why: str,
        *,
        error_type: CodeErrorType = CodeErrorType.NOT_RUN,
    ) -> None:
        result = CodeResult(ok=False, error=not_run_text(why), error_type=error_type)
        await self._write_outcome(ctx, message.code, result)

    async def _refuse_native_calls(self, ctx: RunContext, result: AgentModelResult) -> None:
        """Native tool calls (a custom model client can send them): answered with a ``TOOL_ERROR``, unrun."""
        calls = complete_tool_calls(result.tool_calls, ctx.step, ctx.tools.normalize_name)
        items = patch_memory_items(result.memory_items, result.tool_calls, calls, result.output_text)
        ctx.remember(_with_output_retry(ctx, items))
        ctx.output_text = ""
        await self.refuse_calls(ctx, calls, _NATIVE_CALLS_REFUSED)
        answer = parse_answer(result.output_text)
        if isinstance(answer, CodeMessage):
            # Otherwise the model would wait for a CODE_RESULT that never comes.
            await self._not_run(ctx, answer, _NATIVE_AND_CODE)

    # -- interrupted runs ------------------------------------------------------------------------------------

    def keep_turn(self, ctx: RunContext, result: AgentModelResult) -> None:
        """A turn that completed but was cut short before it was handled, stored as this runtime reads it: a
        code turn gets its ``CODE_ERROR`` (the code never ran), a final answer gives its output."""
        if result.tool_calls:
            super().keep_turn(ctx, result)  # native calls: kept pending, settled as ReAct's are
            return
        ctx.reasoning_text = result.reasoning_text
        answer = self._take_answer(ctx, result)
        if isinstance(answer, CodeMessage):
            ctx.remember([self._observation(code_error_text(not_run_text("the run ended before it ran")))])

    def keep_cut_answer(self, ctx: RunContext, text: str) -> None:
        """A streamed answer cut short, as this runtime reads it: prose is kept as the base runtime keeps it
        (the partial result's ``output_text``; memory too, with ``keep_partial_answer``); a final object
        already whole gives its output, and is kept as the turn it is.

        Anything else (the start of a code or final object, a fence of code, an object keyed like the
        protocol's) is kept nowhere: the partial result's ``output_text`` is empty, as it is for a whole
        answer that is not prose, and memory stays as it was before the answer began. Storing it would leave
        a code turn without the outcome every code turn gets; a "not run" outcome after it would fix that,
        but then teach the model, in the session's next turn, to answer with half an object.
        """
        answer = parse_answer(text)
        if isinstance(answer, NotProtocol) and answer.attempt is None:
            super().keep_cut_answer(ctx, text)
            return
        if isinstance(answer, FinalMessage):
            super().keep_cut_answer(ctx, text)
            ctx.output_text = answer.output
            return
        ctx.output_text = ""
        ctx.reasoning_text = ctx.refusal = None  # the last whole turn's, not this answer's

    @staticmethod
    def _take_answer(ctx: RunContext, result: AgentModelResult) -> CodeMessage | FinalMessage | NotProtocol:
        """Store a model turn without native calls and read its protocol answer; the run's ``output_text`` is
        the final answer's output, the text of a prose answer, or nothing (code, or text shaped like a
        protocol object that could not be read)."""
        ctx.remember(_with_output_retry(ctx, result.memory_items))
        ctx.refusal = result.refusal
        answer = parse_answer(result.output_text)
        if isinstance(answer, FinalMessage):
            ctx.output_text = answer.output
        elif isinstance(answer, NotProtocol) and answer.attempt is None:
            ctx.output_text = result.output_text
        else:
            ctx.output_text = ""
        return answer

    async def settle_pending(self, ctx: RunContext, reason: str) -> None:
        """Also close a code step cut short: a ``CODE_ERROR`` in memory, cancelled results for its calls.

        By now the executor is closed (its process killed); memory is written before any event.
        """
        await super().settle_pending(ctx, reason)
        state = ctx.runtime_state
        if not isinstance(state, RunState):
            return
        if state.ran is not None:
            await self._close_step(ctx)  # it ran; the run ended while its answer was being checked
            return
        if state.step is None:
            return
        step, state.step = state.step, None
        unanswered = record_calls(ctx, step, reason)
        error = reason.replace("this tool call", "this code step")
        ctx.remember([self._observation(code_error_text(error))])
        if step.live is not None:
            await step.live.flush()  # what it printed before the cut
        for call, refused in unanswered:
            await ctx.emit(ToolFailed(call=call, result=refused))
        cut = CodeResult(
            ok=False,
            error=error,
            error_type=CodeErrorType.CANCELLED,
            duration=anyio.current_time() - step.started,
        )
        await publish_executed(ctx, step.code, cut)
