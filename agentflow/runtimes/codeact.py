"""``CodeActRuntime``: the model acts by writing Python that calls the tools, run in a sandbox (seed 002 §5).

The base loop with different hooks, not a loop of its own. Each model turn is one JSON object (see
``codeact_protocol``): ``{"type": "code", …}`` runs the code, ``{"type": "final", …}`` ends the run::

    StepStarted
    build_prompt           system prompt + CodeAct instructions + the tools as text; no protocol tools
    call_model
    handle_model_result    the assistant turn → memory, then parse it:
        final              the run ends with its output
        prose              (no protocol object, no code) the final answer, as the reference has it; or
                           sent back with a PROTOCOL_ERROR (``correct_format=True``, at most twice in a row)
        unusable           protocol-shaped text that cannot be read, an empty answer, an answer cut at the
                           output-token limit: never the user's answer. Sent back (PROTOCOL_ERROR; cut code
                           gets a CODE_ERROR asking for shorter code) at most twice in a row; the third in a
                           row fails the run (``CodeActProtocolError``)
        code               (a code object, or fenced Python) run in the run's executor; every tool call the
                           code makes goes through the run's
                           ToolExecutor (ToolCallRequested, ToolStarted, ToolSucceeded|ToolFailed, limits,
                           TOOL_ERROR texts) and its value comes back to the code;
                           CODE_RESULT / CODE_ERROR → memory (a system item, or the role of
                           ``observation_role``), CodeExecuted;
                           ``react=False``: a successful step ends the run with its value;
                           ``react=True``: back to the model, which goes on or answers
    StepFinished           (``tool_calls`` counts the calls made from code)

One executor per run, created when the run first needs it and closed when the run ends, however it ends: a
cancelled run kills its sandbox process and writes a ``CODE_ERROR`` for the step it cut short, so memory stays
a sequence of code turns each followed by its outcome. Calls made from code are not written to memory as
tool calls (the code is), but they are on the result (``tool_calls`` / ``tool_results``) and count towards
``max_tool_calls``.

Where this departs from the reference on purpose: a failed step with ``react=False`` goes back to the model
(the reference ended the run with the error); with ``react=True`` the model may run more code after a
successful step (no "FINALIZE_MODE" refusal; ``max_steps`` bounds the run); the step limit, token budget,
tool-call limit, cancellation and deadline all hold as in ReAct; tool calls from code get the same
validation, events and ``TOOL_ERROR`` texts as native ones (a strict tool's optional arguments may be left
out, ``codeact_calls``); an answer that is not prose is never returned as the final answer (the reference
returned any text it could not parse, raw JSON included).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Final, Literal, TypeAlias

import anyio
import attrs
import orjson

from ..agent.items import message_item, user_item
from ..agent.prompt import AgentModelResult, AgentPrompt
from ..events import CodeExecuted, ToolCallRequested, ToolFailed
from ..exact_json import dumps as exact_dumps
from ..model.messages import ToolCall
from ..result import AgentResult, StopReason, ToolResult
from ..sandbox.code_api import code_api_text
from ..sandbox.code_result import CodeErrorType, CodeResult
from ..sandbox.executor import CodeExecutor, ToolInvoker
from ..sandbox.limits import ExecutionLimits
from ..sandbox.process_sandbox import ProcessSandbox
from ..sandbox.tool_parameters import ParameterizedInvoker
from ..tools.outcome import cancelled_result
from .base import AgentRuntime, answer_stop_reason, join_prompt
from .calls import complete_tool_calls, patch_memory_items
from .codeact_calls import complete_arguments
from .codeact_prompt import (
    CODEACT_INSTRUCTIONS,
    CUT_ANSWER,
    CUT_CODE,
    EMPTY_ANSWER,
    EMPTY_CUT_ANSWER,
    FINAL_STEP_REMINDER,
    correction_text,
    not_run_text,
    tools_guide,
    unsupported_language_text,
)
from .codeact_protocol import (
    CodeMessage,
    FinalMessage,
    NotProtocol,
    answer_text,
    code_error_text,
    parse_answer,
    step_text,
)
from .context import RunContext
from .errors import AgentRunError

__all__ = [
    "MAX_SEND_BACKS",
    "CodeActOptions",
    "CodeActProtocolError",
    "CodeActRuntime",
    "ExecutorFactory",
    "ObservationRole",
]

ExecutorFactory: TypeAlias = Callable[[], CodeExecutor]
"""Makes the executor of one run (called once per run; the runtime closes what it returns)."""

ObservationRole: TypeAlias = Literal["system", "user", "developer"]
"""The role of the messages CodeAct writes for the model (``CODE_RESULT``, ``CODE_ERROR``,
``PROTOCOL_ERROR``)."""

MAX_SEND_BACKS: Final = 2
"""How many answers in a row the runtime sends back because it cannot use them (see ``CodeActOptions``)."""

_OBSERVATION_ROLES: Final = ("system", "user", "developer")

_CLEANUP_SECONDS = 10.0
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


def _check_executor(
    _instance: object, _attribute: object, value: CodeExecutor | ExecutorFactory | None
) -> None:
    if value is not None and not isinstance(value, CodeExecutor) and not callable(value):
        raise TypeError(
            "CodeActOptions.executor must be a CodeExecutor, a zero-argument factory of one, or None "
            f"(a ProcessSandbox per run), got {type(value).__name__}"
        )


def _check_max_chars(_instance: object, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"CodeActOptions.{attribute.name} must be an int >= 1 or None, got {value!r}")


def _check_role(_instance: object, _attribute: object, value: str) -> None:
    if value not in _OBSERVATION_ROLES:
        raise ValueError(
            f"CodeActOptions.observation_role must be 'system', 'user' or 'developer', got {value!r}"
        )


class CodeActProtocolError(AgentRunError):
    """The model kept answering in a way CodeAct cannot use: after ``MAX_SEND_BACKS`` answers in a row were
    sent back (text shaped like a protocol object that could not be read, an empty answer, an answer or code
    cut at the output-token limit), the next one was no better.

    ``reason`` says what was wrong with the last answer, ``text`` is that answer; ``partial`` keeps the run's
    work. The model may not follow the protocol at all (a small model, a chat template that mangles it) or
    keep running out of output tokens (raise ``max_output_tokens``).
    """

    def __init__(self, reason: str, text: str, partial: AgentResult) -> None:
        super().__init__(
            f"the model's answer could not be used {MAX_SEND_BACKS + 1} times in a row; last: {reason}",
            partial,
        )
        self.reason = reason
        self.text = text

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.text, self.partial))


@attrs.frozen
class CodeActOptions:
    """How CodeAct runs code and when a run ends.

    - ``react``: ``False`` (default, as the reference): a code step that succeeds ends the run, its value
      (or, when it has none, what it printed) being the answer; a failed step goes back to the model.
      ``True``: every step goes back to the model, which runs more code or answers with a final message.
      Either way ``final_answer(x)`` in code ends the run at once with ``x``.
    - ``correct_format``: what happens to plain prose, an answer with no protocol object and no code in it.
      ``False`` (default, as the reference): it is the final answer. ``True``: it is sent back with a
      ``PROTOCOL_ERROR`` saying what was wrong, up to ``MAX_SEND_BACKS`` (2) times in a row; the next is the
      answer. Whatever it says, an answer that is not prose is never handed to the user: text shaped like a
      protocol object that could not be read (``{"type": "final", "output": "a "quoted" word"}`` is read;
      ``{"type": "final", "output": 4,}`` is not), an empty answer, or a final object cut at the output-token
      limit get a ``PROTOCOL_ERROR``, code cut there a ``CODE_ERROR`` asking for shorter code, and after
      ``MAX_SEND_BACKS`` such answers in a row the next fails the run with ``CodeActProtocolError``.
    - ``executor``: ``None`` gives each run a fresh ``ProcessSandbox``; a factory is called once per run
      and what it returns is closed when the run ends; an executor instance is used by every run as is
      (you own it and close it; its state is shared by those runs).
    - ``limits``: the ``ExecutionLimits`` of every code step (wall time, CPU, memory, output…).
    - ``max_result_chars``: how much of a step's value its ``CODE_RESULT`` shows the model (16,000
      characters, about 4,000 tokens); a longer value is cut, ending with a ``[... result truncated: N
      more characters not shown ...]`` marker. ``None``: no cut (``limits.max_result_bytes``, 1 MiB, still
      bounds the value). Only the model's view is cut: ``CodeExecuted.result`` and an answer taken from
      the step (``react=False``, ``final_answer(x)``) keep the whole value.
    - ``max_output_chars``: how much of a step's stdout, and of its stderr, its ``CODE_RESULT`` /
      ``CODE_ERROR`` shows the model (8,000 characters each, about 2,000 tokens); longer output keeps its
      start and its end, half each, around a ``[... N characters of output cut here ...]`` marker (the end is
      where a traceback or a summary is). ``None``: as the sandbox bounded it (``limits.max_output_bytes``,
      64 KiB). ``CodeExecuted.stdout`` / ``.stderr`` keep all of it.
    - ``observation_role``: the role of the messages the runtime writes for the model, ``CODE_RESULT``,
      ``CODE_ERROR`` and ``PROTOCOL_ERROR``: ``"system"`` (default, as the reference), ``"user"`` (as
      smolagents sends observations) or ``"developer"``. Change it for servers whose chat template refuses a
      system message after the first one or wants user and assistant turns to alternate (Mistral's and
      Gemma's templates on vLLM or TGI): such a server answers 400, or quietly moves the text into the system
      prompt. ``"user"`` suits them; ``"developer"`` is for OpenAI models that take it. (A run that ends
      right after a code step, ``react=False``, leaves a ``"user"`` observation last, so a session's next
      input follows it as a second user turn.)

    >>> CodeActOptions(react=True).limits.wall_time
    30.0
    """

    react: bool = False
    correct_format: bool = False
    executor: CodeExecutor | ExecutorFactory | None = attrs.field(default=None, validator=_check_executor)
    limits: ExecutionLimits = attrs.field(
        factory=ExecutionLimits, validator=attrs.validators.instance_of(ExecutionLimits)
    )
    max_result_chars: int | None = attrs.field(default=16_000, validator=_check_max_chars)
    max_output_chars: int | None = attrs.field(default=8_000, validator=_check_max_chars)
    observation_role: ObservationRole = attrs.field(default="system", validator=_check_role)


@attrs.define(eq=False)
class _CodeStep:
    """A code step in flight: its code, and the tool calls it made with the results that came back."""

    code: str
    calls: list[ToolCall] = attrs.field(factory=list)
    results: dict[str, ToolResult] = attrs.field(factory=dict)
    started: float = attrs.field(factory=anyio.current_time)


@attrs.define(eq=False)
class _RunState:
    """What CodeAct keeps per run (on ``RunContext.runtime_state``, never on the runtime)."""

    executor: CodeExecutor | None = None
    owned: bool = True
    guide: str | None = None
    step: _CodeStep | None = None
    send_backs: int = 0
    """How many answers in a row were sent back because they could not be used (``MAX_SEND_BACKS``)."""
    limit_reached: bool = False


def _state(ctx: RunContext) -> _RunState:
    state = ctx.runtime_state
    if not isinstance(state, _RunState):
        state = _RunState()
        ctx.runtime_state = state
    return state


def _api_text(executor: CodeExecutor, limits: ExecutionLimits, *, per_run: bool) -> str:
    """How code reaches tools, worded for what this executor says it allows (``ProcessSandbox`` and any
    executor with ``persistent`` / ``network`` / ``site_packages`` attributes; else: persistent, no network,
    standard library only) and what the step limits allow (threads only with ``max_processes`` above 0).
    ``per_run``: the executor serves this run only (the runtime made it), so its state does not reach the
    next request of a session although the model sees that request's code."""
    persistent = getattr(executor, "persistent", True)
    network = getattr(executor, "network", False)
    site_packages = getattr(executor, "site_packages", False)
    return code_api_text(
        persistent=persistent is not False,
        network=network is True,
        site_packages=site_packages is True,
        per_request=per_run,
        threads=limits.max_processes > 0,
    )


class CodeActRuntime(AgentRuntime):
    """The CodeAct runtime: name ``codeact``; ``options`` are its ``CodeActOptions``.

    One instance may serve any number of concurrent runs: each run gets its own executor.

    >>> CodeActRuntime(), CodeActRuntime(CodeActOptions(react=True))
    (CodeActRuntime(), CodeActRuntime(CodeActOptions(react=True, ...)))
    """

    name: ClassVar[str] = "codeact"
    instructions: ClassVar[str | None] = CODEACT_INSTRUCTIONS
    # Its final answer is a value from code or a protocol object, not a message a schema can shape.
    structured_output: ClassVar[bool] = False

    def __init__(self, options: CodeActOptions | None = None) -> None:
        if options is not None and not isinstance(options, CodeActOptions):
            raise TypeError(f"options must be a CodeActOptions, got {type(options).__name__}")
        self.options = options if options is not None else CodeActOptions()

    def __repr__(self) -> str:
        if self.options == CodeActOptions():
            return f"{type(self).__name__}()"
        changed = [
            f"{a.name}={getattr(self.options, a.name)!r}"
            for a in attrs.fields(CodeActOptions)
            if getattr(self.options, a.name) != getattr(CodeActOptions(), a.name)
        ]
        return f"{type(self).__name__}(CodeActOptions({', '.join(changed)}, ...))"

    # -- the executor of a run -------------------------------------------------------------------------------

    def executor_for(self, ctx: RunContext) -> CodeExecutor:
        """The run's code executor, created on first use (see ``CodeActOptions.executor``)."""
        state = _state(ctx)
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
            state = _state(ctx)
            executor, state.executor = state.executor, None
            if executor is not None and state.owned:
                with anyio.move_on_after(_CLEANUP_SECONDS, shield=True):
                    await executor.aclose()

    # -- the prompt ------------------------------------------------------------------------------------------

    def system_prompt(self, ctx: RunContext) -> str | None:
        """The agent's system prompt, the CodeAct instructions, then the tools as text."""
        state = _state(ctx)
        if state.guide is None:
            executor = self.executor_for(ctx)
            api = _api_text(executor, self.options.limits, per_run=state.owned)
            state.guide = tools_guide(ctx.tools, api, react=self.options.react)
        return join_prompt(ctx.system_prompt, self.instructions, state.guide)

    def build_prompt(self, ctx: RunContext, *, final: bool = False) -> AgentPrompt:
        """The base prompt without protocol tools (they are described in the system prompt).

        The ``final`` call after ``max_steps`` gets ``final_answer_prompt`` plus a reminder to answer with a
        final message.
        """
        prompt = super().build_prompt(ctx)
        items = prompt.items
        if final:
            items = (*items, user_item(f"{ctx.options.final_answer_prompt} {FINAL_STEP_REMINDER}"))
        return attrs.evolve(prompt, items=items, tools=(), tool_choice=None, parallel_tool_calls=None)

    # -- a model turn ----------------------------------------------------------------------------------------

    async def handle_model_result(
        self, ctx: RunContext, result: AgentModelResult, *, final: bool = False
    ) -> StopReason | None:
        """Store the turn, then act on its message: final answer, code step, or an answer sent back."""
        state = _state(ctx)
        ctx.reasoning_text = result.reasoning_text
        if result.tool_calls:
            await self._refuse_native_calls(ctx, result)
            return None
        answer = self._take_answer(ctx, result)
        if isinstance(answer, NotProtocol):
            return await self._not_protocol(ctx, result, answer, final=final)
        state.send_backs = 0
        if isinstance(answer, FinalMessage):
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
        outcome = await self.run_code(ctx, answer.code)
        if outcome.ok and outcome.is_final:
            ctx.output_text = answer_text(outcome.value)
            return StopReason.FINAL_ANSWER
        if outcome.ok and not self.options.react:
            # The step's answer ends the run even when it used up the tool calls: the code saw the refusals.
            value = answer_text(outcome.value)
            output = value if value.strip() else outcome.stdout.strip()
            if output:  # a step with neither value nor output (say, only assignments) goes back to the model
                ctx.output_text = output
                return StopReason.FINAL_ANSWER
        if state.limit_reached:
            return StopReason.MAX_TOOL_CALLS
        return None

    async def _not_protocol(
        self, ctx: RunContext, result: AgentModelResult, answer: NotProtocol, *, final: bool
    ) -> StopReason | None:
        """An answer with no protocol message: prose is the final answer (or sent back, ``correct_format``);
        anything else is never the user's answer, and goes back to the model a bounded number of times."""
        state = _state(ctx)
        stop = answer_stop_reason(result)
        if stop is StopReason.REFUSAL or stop is StopReason.CONTENT_FILTER:
            return stop  # not a format problem: asking again in the protocol would not help
        cut = stop is StopReason.TRUNCATED
        empty = not result.output_text.strip()
        if answer.attempt is None and not empty and not answer.cut_code:
            # Prose, whole or cut at the output-token limit (``TRUNCATED``, as in the base runtime).
            if (
                cut
                or not self.options.correct_format
                or final
                or ctx.token_budget_reached
                or state.send_backs >= MAX_SEND_BACKS
            ):
                return stop
            state.send_backs += 1
            ctx.output_text = ""
            ctx.remember([self._observation(correction_text(answer.reason))])
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

    async def run_code(self, ctx: RunContext, code: str) -> CodeResult:
        """Run one code step in the run's executor; its outcome goes to memory and ``CodeExecuted``."""
        state = _state(ctx)
        executor = self.executor_for(ctx)
        step = _CodeStep(code)
        state.step = step
        result = await executor.execute(code, self._invoker(ctx, step), ctx.tools.names, self.options.limits)
        ended = f"the code step ended ({result.error_type})" if result.error_type else "the code step ended"
        why = f"{ended} before this tool call finished"
        unanswered = self._record_calls(ctx, step, why)
        options = self.options
        ctx.remember(
            [self._observation(step_text(result, options.max_result_chars, options.max_output_chars))]
        )
        state.step = None  # memory is complete: a cancel from here on has nothing to settle
        for call, refused in unanswered:
            await ctx.emit(ToolFailed(call=call, result=refused))
        await self._publish_executed(ctx, code, result)
        return result

    def _invoker(self, ctx: RunContext, step: _CodeStep) -> ToolInvoker:
        """The ``ToolInvoker`` for one step: each call from the code is a tool call of the run."""
        limit = ctx.options.max_tool_calls
        state = _state(ctx)

        def arrived(_index: int, result: ToolResult) -> None:
            # Recorded before its completion event: a cancel during that event keeps the result.
            step.results[result.call_id] = result

        async def invoke(name: str, arguments: dict[str, object]) -> ToolResult:
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
            [result] = await ctx.executor.run_calls(
                (call,), run_id=ctx.run_id, step=ctx.step, on_result=arrived
            )
            return result

        # With each tool's parameter order, code may pass arguments by position: ``get_weather("Paris")``.
        return ParameterizedInvoker.for_specs(invoke, ctx.tools.specs)

    def _record_calls(
        self, ctx: RunContext, step: _CodeStep, reason: str
    ) -> list[tuple[ToolCall, ToolResult]]:
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

    async def _publish_executed(self, ctx: RunContext, code: str, result: CodeResult) -> None:
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

    async def _write_outcome(self, ctx: RunContext, code: str, result: CodeResult) -> None:
        """A step that did not run: its ``CODE_ERROR`` to memory, then ``CodeExecuted``."""
        ctx.remember([self._observation(step_text(result))])
        await self._publish_executed(ctx, code, result)

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
        ctx.remember(patch_memory_items(result.memory_items, result.tool_calls, calls, result.output_text))
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

    @staticmethod
    def _take_answer(ctx: RunContext, result: AgentModelResult) -> CodeMessage | FinalMessage | NotProtocol:
        """Store a model turn without native calls and read its protocol answer; the run's ``output_text`` is
        the final answer's output, the text of a prose answer, or nothing (code, or text shaped like a
        protocol object that could not be read)."""
        ctx.remember(result.memory_items)
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
        if not isinstance(state, _RunState) or state.step is None:
            return
        step, state.step = state.step, None
        unanswered = self._record_calls(ctx, step, reason)
        error = reason.replace("this tool call", "this code step")
        ctx.remember([self._observation(code_error_text(error))])
        for call, refused in unanswered:
            await ctx.emit(ToolFailed(call=call, result=refused))
        cut = CodeResult(
            ok=False,
            error=error,
            error_type=CodeErrorType.CANCELLED,
            duration=anyio.current_time() - step.started,
        )
        await self._publish_executed(ctx, step.code, cut)
