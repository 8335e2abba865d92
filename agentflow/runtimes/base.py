"""``AgentRuntime``: the base loop every runtime reuses (seed 002 §3.1, with DESIGN §4's decisions).

One run, step by step::

    RunStarted
    [a resumed run: the calls its conversation left open, run or denied (``resume``)]
    [user input → memory]
    repeat until a final answer or a limit:
        StepStarted
        build_prompt      system prompt + runtime instructions, the tools' specs, the items in memory
                          (an agent's prompt functions are evaluated just before, once per step)
        call_model        ModelRequest, then every model event as it arrives (streaming) or once (blocking);
                          streamed, a call to an eager tool starts once it is whole (``eager_calls``)
        handle_model_result
                          complete call ids / names → the assistant turn to memory (ids already final)
                          no calls → final answer; else ToolCallRequested per call, then
        act               run the calls concurrently (ToolStarted / ToolProgress / ToolSucceeded|ToolFailed
                          as they happen), results → memory in call order; a successful call to a
                          ``return_direct`` tool among them → final answer (``read_tool_answer``);
                          a call whose approval is deferred → the run pauses (``resume.pause``)
        StepFinished      (with this step's usage)
    exactly one of RunFinished(result) / RunFailed(error, partial) / RunCancelled(partial)

The step's events are built and published only while the run's bus has a listener (``EventBus.has_listeners``:
a subscription or a callback): nobody else could tell, and an unobserved ``agent.run()`` then pays nothing for
them. The terminal event is always published.

Where this does better than the reference: exhausting ``max_steps`` is never silent
(``StopReason.MAX_STEPS``, optionally a last tool-less "final answer" call, or ``MaxStepsExceeded``); limits
on tool calls, tokens and wall clock end the run with their own stop reason, the wall clock as a cancel scope
that interrupts a hanging model call; state lives in a per-run ``RunContext`` (not on the runtime), so one
runtime serves concurrent runs; and however a run is cut short, memory stays valid: every tool call in it
gets a result (a synthetic ``TOOL_ERROR`` ``cancelled`` one when needed), written under a shield. A run
that fails raises its own exception (a ``BadRequestError`` stays one) with the partial result attached
(``exc.run_result``); one cut mid-answer keeps the text streamed so far (``output_text``). A tool whose
failures must not reach the model (``@tool(on_error="raise")``) fails the run with its exception: its call
keeps its ``TOOL_ERROR`` result, the other calls of its step are cancelled and answered as any cut call is.

Subclasses override the hooks, not the loop: ``name``/``instructions``, ``start`` (what enters memory before
the first step), ``build_prompt``, ``call_model``, ``handle_model_result`` (how a model turn is read: CodeAct
parses a code message here and runs the code instead of tool calls), ``act`` / ``run_tool_calls`` (how tool
calls run), ``read_tool_answer`` (which result of a step's calls answers for the run), ``keep_turn`` /
``keep_cut_answer`` / ``settle_pending`` (how interrupted work is closed in memory) and ``run_step`` /
``run_loop``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Mapping, Sequence
from typing import Any, ClassVar

import anyio
import anyio.lowlevel

from ..agent.items import assistant_item, tool_call_ids, user_item
from ..agent.prompt import AgentModelResult, AgentPrompt
from ..events import (
    ModelRequest,
    OutputRejected,
    RunStarted,
    StepFinished,
    StepStarted,
    ToolCallRequested,
    ToolFailed,
)
from ..model.messages import ToolCall
from ..model.response import FinishReason
from ..model.tools import ToolChoice, ToolSpec
from ..result import AgentResult, StopReason, ToolResult
from ..tools.outcome import cancelled_result
from ..tools.registry import ToolRegistry
from .calls import calls_of, complete_tool_calls, patch_memory_items
from .context import NO_USAGE, RunContext
from .eager_calls import act_with_early, refuse_with_early, run_early_step, starts_early
from .errors import MaxStepsExceeded
from .guarded import guarded_run, hold_answer
from .handing_off import hand_over, resume_handoffs
from .model_calls import blocking_call, publish_turn, streamed_call
from .output import OutputType, OutputValidationError
from .output_validators import RejectOutput, validate
from .resume import last_user_text, pause, resume
from .run_ending import end_cancelled, end_finished, fail
from .tool_availability import choose_tools

__all__ = ["AgentRuntime", "answer_stop_reason", "blocking_call"]

_NO_DEADLINE = contextlib.nullcontext()  # reusable: entering it does nothing


def join_prompt(*parts: str | None) -> str | None:
    """The non-blank parts joined by a blank line (``None`` when all are blank).

    >>> join_prompt("You are terse.", None, "Use tools when necessary.")
    'You are terse.\\n\\nUse tools when necessary.'
    """
    kept = [p.strip() for p in parts if p and p.strip()]
    return "\n\n".join(kept) if kept else None


def answer_stop_reason(result: AgentModelResult) -> StopReason:
    """Why a model turn without tool calls ends the run: ``FINAL_ANSWER`` only for a whole answer.

    A refusal is ``REFUSAL``; an answer cut at the output-token limit ``TRUNCATED``, one stopped by the
    provider's content filter ``CONTENT_FILTER``.
    """
    if result.refusal:
        return StopReason.REFUSAL
    finish = result.finish_reason
    if finish is FinishReason.LENGTH:
        return StopReason.TRUNCATED
    if finish is FinishReason.CONTENT_FILTER:
        return StopReason.CONTENT_FILTER
    return StopReason.FINAL_ANSWER


def _response_format(
    spec: OutputType[Any] | None, setting: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """What a step's call sends as ``response_format``: the output type's (in ``mode="native"``), else the
    settings' own."""
    if spec is None:
        return setting
    return spec.response_format() if spec.mode == "native" else None


def _called_specs(tools: ToolRegistry, items: Sequence[Any]) -> tuple[ToolSpec, ...]:
    """The specs of ``tools`` that ``items`` hold calls to, in registration order."""
    called = {call.name for item in items if tool_call_ids(item) for call in calls_of(item)}
    return tuple(spec for spec in tools.specs if spec.name in called)


def _forces(tool_choice: object) -> bool:
    """Whether a ``tool_choice`` makes the model call a tool (``required``, one function, ``allowed_tools`` in
    mode ``required``)."""
    if isinstance(tool_choice, ToolChoice):
        return tool_choice.mode in ("required", "function")
    if isinstance(tool_choice, str):
        return tool_choice == "required"
    if not isinstance(tool_choice, Mapping):
        return False
    kind = tool_choice.get("type")
    if kind == "allowed_tools":
        # Responses puts the mode at the top of the choice, Chat Completions inside ``allowed_tools``.
        inner = tool_choice.get("allowed_tools")
        mode = inner.get("mode") if isinstance(inner, Mapping) else tool_choice.get("mode")
        return mode == "required"
    # Otherwise a function ({"type": "function", …}), {"type": "required"}, or a hosted tool on Responses,
    # which runs on the server inside the model call and never makes the loop go round.
    return kind in ("function", "required")


class AgentRuntime:
    """The base runtime: the loop of seed 002 §3.1 (``ReActRuntime`` adds a name and instructions).

    A runtime holds no per-run state, so one instance may serve many runs at once; ``execute(ctx)`` runs one.
    """

    name: ClassVar[str] = "base"
    """The runtime's name (``RunStarted.runtime``)."""
    instructions: ClassVar[str | None] = None
    """Text added to the system prompt of every model call (after the agent's own system prompt)."""
    structured_output: ClassVar[bool] = True
    """Whether the runtime reads its final answer into an agent's ``output_type`` (``read_output``)."""
    tool_errors_reach_code: ClassVar[bool] = False
    """Whether a tool call's exception goes to code that may catch it (CodeAct's model-written code): a run
    with tools then gets ``RunContext.abort_scope``, which a call that ends the run cancels. Elsewhere the
    exception ends the run by propagating, and the run has no scope to pay for."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    # -- the run ---------------------------------------------------------------------------------------------

    async def execute(self, ctx: RunContext) -> AgentResult:
        """Run to the end and publish exactly one terminal event; returns the result.

        Cancellation through ``ctx.cancel_scope`` (if the run has one) or the ``options.timeout`` deadline
        returns the partial result (``StopReason.CANCELLED`` / ``StopReason.DEADLINE``) after
        ``RunCancelled``. Cancellation from outside (the task running the run is cancelled) publishes
        ``RunCancelled`` and re-raises. An exception publishes ``RunFailed`` and is re-raised. A run whose
        memory cannot be completed as it ends (a custom ``Memory`` refusing the writes) ends with
        ``RunFailed`` for that error, which is raised in place of returning the partial result (a
        cancellation from outside still propagates as itself). A tool call that ends the run (its tool's
        ``on_error="raise"``, a ``ToolFatalError``) fails it the same way, with that call's exception, even
        when something on its way caught it (CodeAct's code calling the tool): it cancels ``ctx.abort_scope``
        (``tool_errors_reach_code``). ``ctx.before_terminal`` (a stored session's save) is awaited right
        before the terminal event, however the run ends; the exception it returns fails a run that finished
        or was cancelled, with ``RunFailed`` in place of its own terminal event (and is raised, as any
        failure).
        ``ctx.result`` / ``ctx.error`` hold the outcome.
        """
        result: AgentResult | None = None
        timeout = ctx.options.timeout
        # The clock starts now; without a time limit there is no scope at all (a cancel scope is not free).
        deadline_scope = None
        if timeout is not None:
            deadline_scope = anyio.CancelScope(deadline=anyio.current_time() + timeout)
        if self.tool_errors_reach_code and ctx.tools:
            # What a tool call that ends the run cancels (``RunContext.tool_failure``), since the code it was
            # called from may catch its exception; without tools, no call can.
            ctx.abort_scope = anyio.CancelScope()
        try:
            with (
                deadline_scope or _NO_DEADLINE,
                ctx.cancel_scope or _NO_DEADLINE,
                ctx.abort_scope or _NO_DEADLINE,
            ):
                if ctx.wait_turn is not None:
                    # A session's run: the runs ahead of it end first. Inside the run's scopes, so a cancel
                    # or the deadline while it waits ends it as any other (``RunCancelled``, no RunStarted).
                    await ctx.wait_turn()
                if ctx.decisions is not None and not ctx.input_items:
                    # A resumed run without input continues the conversation's last request: its
                    # ``RunStarted`` shows it, a planner plans for it.
                    ctx.input_text = last_user_text(ctx.memory.items)
                if ctx.bus.has_listeners():
                    await ctx.emit(
                        RunStarted(
                            input=ctx.input_text,
                            runtime=self.name,
                            session_id=ctx.session_id,
                            parent_run_id=ctx.parent_run_id,
                            parent_call_id=ctx.parent_call_id,
                        )
                    )
                guards = ctx.guardrails
                if guards is None:
                    await self.start(ctx)
                    result = await self.run_loop(ctx)
                else:  # ``Agent(input_guardrails=..., output_guardrails=...)``: around start and steps
                    result = await guarded_run(self, ctx, guards)
        except anyio.get_cancelled_exc_class():
            await end_cancelled(self, ctx, StopReason.CANCELLED)
            raise
        except GeneratorExit:
            raise
        except BaseException as exc:
            # Exceptions, and also a KeyboardInterrupt or SystemExit raised inside a tool: still one terminal.
            await fail(self, ctx, exc)
            raise
        if result is None:
            failure = ctx.tool_failure
            if failure is not None:
                # A tool call ended the run, and its exception was caught on the way (a CodeAct sandbox gives
                # it to the code): the scope it cancelled ended the run, which fails with it all the same.
                await fail(self, ctx, failure)
                raise failure
            # One of the run's own scopes caught a cancellation: the caller's, or the wall-clock deadline.
            deadline_reached = deadline_scope is not None and deadline_scope.cancelled_caught
            reason = StopReason.DEADLINE if deadline_reached else StopReason.CANCELLED
            broken = await end_cancelled(self, ctx, reason)
            if broken is not None:
                raise broken
            assert ctx.result is not None
            return ctx.result
        ctx.result = result
        late = await end_finished(ctx, result)
        if late is not None:
            raise late
        return result

    async def run_loop(self, ctx: RunContext) -> AgentResult:
        """Run steps until one returns a stop reason, or handle ``max_steps`` exhaustion.

        A step that hands the run over to another agent (``Agent(handoffs=...)``) makes the next steps that
        agent's, on its runtime (``agentflow.runtimes.handing_off``); the run's limits count on.
        """
        if ctx.answered is not None:  # a resumed run that its approved calls answered
            return ctx.result_for(ctx.answered)
        runtime = ctx.runtime or self  # a resumed run goes on with the agent it paused on (``handing_off``)
        max_steps = ctx.options.max_steps
        while max_steps is None or ctx.step < max_steps:
            if ctx.token_budget_reached:
                # Tokens spent outside the steps (a DeepResearch plan or re-plan) count against the budget
                # too: no model call once it is reached.
                return ctx.result_for(StopReason.MAX_TOKENS)
            stop = await runtime.run_step(ctx)
            if stop is not None:
                return ctx.result_for(stop)
            if ctx.handoff is not None:
                if (max_steps is not None and ctx.step >= max_steps) or ctx.token_budget_reached:
                    ctx.handoff = None  # the run ends at its limit: nobody is handed a run without a step
                else:
                    runtime = await hand_over(ctx)
        return await runtime.on_max_steps(ctx)

    async def on_max_steps(self, ctx: RunContext) -> AgentResult:
        """``max_steps`` used up: stop, make one last tool-less call, or raise (``options.on_max_steps``)."""
        policy = ctx.options.on_max_steps
        if policy == "final_answer":
            if ctx.token_budget_reached:
                return ctx.result_for(StopReason.MAX_TOKENS)  # no model call once the budget is spent
            await self.run_step(ctx, final=True)
        elif policy == "raise":
            raise MaxStepsExceeded(ctx.step, ctx.result_for(StopReason.MAX_STEPS))
        return ctx.result_for(StopReason.MAX_STEPS)

    async def run_step(self, ctx: RunContext, *, final: bool = False) -> StopReason | None:
        """One step: prompt, model call, then whatever the model asked for. Returns why to stop, or None.

        An agent's prompt functions (``Agent(instructions=fn)``) are evaluated first, for this step's prompt
        (``RunContext.refresh_prompts``: a runtime that replaces this method awaits it before building its
        prompt). ``final`` marks the extra "final answer" step after ``max_steps``: no tool may run in it.
        A streamed step of a run with eager tools makes its model call and handles the turn in
        ``run_early_step``, whose task group owns the calls that start before the turn is complete
        (``agentflow.runtimes.eager_calls``).
        """
        # A step that never waits (a fast model, no tools) must still notice a cancel requested meanwhile.
        await anyio.lowlevel.checkpoint_if_cancelled()
        ctx.bus.step = ctx.step
        ctx.step_usage = NO_USAGE
        if ctx.announced:
            # Per step: a server that numbers each turn's calls from call_0 again reuses last step's ids.
            ctx.announced.clear()
        if ctx.bus.has_listeners():
            await ctx.emit(StepStarted())
        calls_before = len(ctx.tool_calls)
        functions = ctx.prompt_functions
        if functions is not None:  # ``Agent(instructions=fn)``: this step's texts, before its prompt is built
            await functions.refresh(ctx)
        if ctx.all_tools is not None or ctx.tools.has_conditional:  # ``@tool(enabled=fn)``: this step's tools
            await choose_tools(ctx)
        prompt = self.build_prompt(ctx, final=final)
        if ctx.tools.has_eager and not final and ctx.input_guard is None and starts_early(ctx, prompt):
            # Calls to eager tools start as the stream delivers them, in a task group this step owns.
            stop = await run_early_step(self, ctx, prompt)
        else:
            result = await self.call_model(ctx, prompt)
            guard = ctx.input_guard
            if guard is not None:
                # Input guardrails still run beside this (first) step: nothing of its turn is acted on, no
                # tool starts, until they pass (a trip cancels this wait with the run; ``guarded``).
                await guard.passed.wait()
            ctx.unhandled = None  # handled from here on
            stop = await self.handle_model_result(ctx, result, final=final)
        if ctx.guardrails is not None:
            hold_answer(ctx, stop, final=final)  # before anything more can be cut: StepFinished may wait
        if ctx.bus.has_listeners():
            await ctx.emit(StepFinished(tool_calls=len(ctx.tool_calls) - calls_before, usage=ctx.step_usage))
        ctx.step += 1
        return stop

    # -- hooks -----------------------------------------------------------------------------------------------

    async def take_over(self, ctx: RunContext) -> None:
        """A handoff gave this runtime's agent the run (``Agent(handoffs=...)``), before its first step: the
        conversation and the run's input are in memory already. Nothing here; DeepResearch plans."""

    async def start(self, ctx: RunContext) -> None:
        """Before the first step: write the run's input to memory (``RunContext.remember_input``: a call
        the conversation holds without a result gets a synthetic one first). A run that resumes one paused
        for approval (``approvals=``) first answers the calls it left open with the decisions
        (``agentflow.runtimes.resume``), with the agent the paused run had handed over to, if any
        (``handing_off.resume_handoffs``)."""
        if ctx.decisions is not None:
            # The open calls are the tools of the agent the run paused on; a transfer their turn made takes
            # place once they are answered.
            turn_handoff = await resume_handoffs(ctx) if ctx.handoffs is not None else None
            ctx.answered = await resume(self, ctx)
            if turn_handoff is not None and ctx.answered is None:
                ctx.handoff, ctx.handoff_call = turn_handoff
                await hand_over(ctx, take_over=False)
        ctx.remember_input()
        if ctx.runtime is not None and ctx.answered is None:
            await ctx.runtime.take_over(ctx)  # resumed on a handoff's target: a DeepResearch one plans

    def system_prompt(self, ctx: RunContext) -> str | None:
        """The agent's system prompt followed by this runtime's ``instructions`` (and, for an ``output_type``
        in ``mode="prompted"``, its ``OutputType.instructions``)."""
        spec = ctx.output_type
        if spec is not None and spec.mode == "prompted":
            return join_prompt(ctx.system_prompt, self.instructions, spec.instructions)
        return join_prompt(ctx.system_prompt, self.instructions)

    def build_prompt(self, ctx: RunContext, *, final: bool = False) -> AgentPrompt:
        """The prompt of the next model call: system prompt, tools, memory items and model settings.

        For the ``final`` answer call the tools stay declared (the history refers to them) but
        ``tool_choice`` is ``none``, and a user turn asking for the answer is added to this prompt only.
        """
        s = ctx.settings
        items = ctx.memory.items
        view = ctx.item_view
        if view is not None:  # a handoff's ``input_filter``: what this agent is shown of the conversation
            items = (*view[0], *ctx.new_items[view[1] :])
        if ctx.output_retry is not None:
            items = (*items, ctx.output_retry)  # a rejected answer's retry prompt: in memory once answered
        tools = ctx.tools.specs
        tool_choice = s.tool_choice
        if not tools and ctx.all_tools is not None and not ctx.tools.hosted:
            # Every tool left out this step (``@tool(enabled=...)``): those the history called stay declared,
            # as in the final answer call (some servers refuse calls to undeclared tools); none is offered.
            # (A hosted tool still offered keeps the choice as it is.)
            tools = _called_specs(ctx.all_tools, items)
            if tools:
                tool_choice = ToolChoice.none()
        if (
            tool_choice is not None
            and len(ctx.tool_calls) > ctx.agent_calls_from  # the current agent's own calls (a handoff's)
            and ctx.options.reset_tool_choice
            and _forces(tool_choice)
        ):
            tool_choice = None  # forced once: from now on the model may answer
        if final:
            items = (*items, user_item(ctx.options.final_answer_prompt))
            tool_choice = ToolChoice.none() if tools else None
        return AgentPrompt(
            model=s.model,
            system_prompt=self.system_prompt(ctx),
            instructions=ctx.instructions,
            items=items,
            tools=tools,
            tool_choice=tool_choice,
            parallel_tool_calls=s.parallel_tool_calls if tools else None,
            temperature=s.temperature,
            top_p=s.top_p,
            max_output_tokens=s.max_output_tokens,
            reasoning=s.reasoning,
            store=s.store,
            user=s.user,
            extra_body=s.extra_body,
            extra_headers=s.extra_headers,
            stream=ctx.stream_model,
            cache=ctx.prompt_cache,
            response_format=_response_format(ctx.output_type, s.response_format),
            hosted_tools=ctx.tools.hosted,
        )

    async def call_model(self, ctx: RunContext, prompt: AgentPrompt) -> AgentModelResult:
        """``ModelRequest``, then the model call; every model event is published as it arrives.

        A blocking call publishes its reasoning and text once, as a ``ReasoningDelta`` and a ``TextDelta``,
        so subscribers see the same vocabulary either way (its retries too: ``ModelRetry`` events through
        ``retry_listener``); both paths end with ``ModelCompleted``. The call's
        usage counts the moment it completes (a cancel after that keeps it), or, for a stream cut short, as
        far as the server reported it. Leaving early (cancel, deadline) closes the stream and with it the
        HTTP response.
        """
        tools = prompt.tools
        # The run's own tools (the usual prompt) have their names listed already.
        names = ctx.tools.names if tools is ctx.tools.specs else tuple(t.name for t in tools)
        if ctx.bus.has_listeners():
            await ctx.emit(
                ModelRequest(
                    model=ctx.model_name(prompt.model), items=len(prompt.items), tools=names, prompt=prompt
                )
            )
        if not prompt.stream:
            result = await blocking_call(ctx, ctx.model.create, prompt)
            ctx.add_usage(result.usage)
            ctx.unhandled = result  # kept by the run's ending if a cancel lands while it is published
            if ctx.bus.has_listeners():
                await publish_turn(ctx, result, text=True, reasoning=True, refusal=True, calls=True)
            return result
        return await streamed_call(ctx, prompt)

    async def handle_model_result(
        self, ctx: RunContext, result: AgentModelResult, *, final: bool = False
    ) -> StopReason | None:
        """Read one model turn: store it, then answer (no calls) or act on its tool calls.

        Call ids and names are completed first, and the turn's memory items rewritten to match, so the
        assistant turn in memory and the tool outputs written later always pair up.
        """
        calls = self.store_turn(ctx, result)
        if not calls:
            # A refusal, or an answer cut short, must not pass for a final one.
            stop = answer_stop_reason(result)
            if stop is StopReason.FINAL_ANSWER:
                if ctx.output_type is not None:
                    return await self.read_output(ctx, result.output_text, final=final)
                ctx.output = result.output_text
            return stop
        if final:
            await self.refuse_calls(ctx, calls, "not run: the run reached its step limit")
            return None
        if ctx.token_budget_reached:
            await self.refuse_calls(
                ctx, calls, f"not run: the run reached its token budget ({ctx.options.max_tokens} tokens)"
            )
            return StopReason.MAX_TOKENS
        return await self.act(ctx, calls)

    async def read_output(self, ctx: RunContext, text: str, *, final: bool = False) -> StopReason | None:
        """Read a final answer into the agent's ``output_type``, through its validators (``ctx.output``), and
        end the run.

        An answer that does not match is sent back to the model with what is wrong and the schema
        (``OutputRejected``, then ``OutputType.retry_prompt`` as a user turn), one a validator rejects
        (``RejectOutput``) with the validator's message (``OutputType.rejected_prompt``), and the run goes on,
        up to ``output_type.retries`` times, while a step and tokens are left to answer with; after that, or
        in the ``final`` step after ``max_steps``, the run fails with ``OutputValidationError``. The retry
        prompt enters memory only with the model's answer to it (``RunContext.output_retry``): however the run
        ends, a session's memory never ends on an unanswered one.
        """
        spec = ctx.output_type
        assert spec is not None
        prompt = spec.retry_prompt
        try:
            value = spec.parse(text)
            if spec.validators:
                value = await validate(ctx, value, text)
        except RejectOutput as exc:
            reason, prompt = exc.message, spec.rejected_prompt
        except ValueError as exc:
            reason = str(exc)
        else:
            ctx.output = value
            return StopReason.FINAL_ANSWER
        max_steps = ctx.options.max_steps
        step_left = (
            max_steps is None or ctx.step + 1 < max_steps or ctx.options.on_max_steps == "final_answer"
        )
        retrying = (
            not final and step_left and not ctx.token_budget_reached and ctx.output_rejections < spec.retries
        )
        ctx.output_rejections += 1
        await ctx.emit(OutputRejected(error=reason, retrying=retrying))
        if not retrying:
            raise OutputValidationError(reason, text, ctx.result_for(StopReason.ERROR, error=reason))
        ctx.output_retry = user_item(prompt(reason))
        return None

    def store_turn(self, ctx: RunContext, result: AgentModelResult) -> tuple[ToolCall, ...]:
        """Write a model turn to memory (call ids and names completed first) and to the run; its calls."""
        raw = result.tool_calls
        calls = complete_tool_calls(raw, ctx.step, ctx.tools.normalize_name)
        items = patch_memory_items(result.memory_items, raw, calls, result.output_text)
        if ctx.output_retry is not None:
            items, ctx.output_retry = (ctx.output_retry, *items), None  # answered: both enter memory
        ctx.remember(items)
        ctx.output_text = result.output_text
        ctx.reasoning_text = result.reasoning_text
        ctx.refusal = result.refusal
        return calls

    def keep_turn(self, ctx: RunContext, result: AgentModelResult) -> None:
        """A model turn that completed but was cut short before it was handled (a cancel landed while its
        events were published): store it, its calls pending, so the ending gives them results.

        Called (by the run's ending) before ``settle_pending``; the partial result keeps the turn's text
        and calls, and memory pairs every call with a result.
        """
        calls = self.store_turn(ctx, result)
        if calls:
            ctx.tool_calls.extend(calls)
            ctx.pending = list(calls)  # not announced: ``settle_pending`` announces them before their results
            ctx.finished = {}

    def keep_cut_answer(self, ctx: RunContext, text: str) -> None:
        """A streamed answer cut short (the run was cancelled, timed out or failed while the model wrote it):
        the partial result's ``output_text`` is the text streamed so far.

        Called (by the run's ending) before ``settle_pending``. Memory gets it only with
        ``options.keep_partial_answer``: one text-only assistant item (after a pending output retry prompt,
        which it answers); a tool call the model had begun is never kept.
        """
        ctx.output_text = text
        ctx.reasoning_text = ctx.refusal = None  # the last whole turn's, not this answer's
        if not ctx.options.keep_partial_answer:
            return
        items: list[Any] = [assistant_item(text)]
        if ctx.output_retry is not None:
            items.insert(0, ctx.output_retry)
            ctx.output_retry = None
        ctx.remember(items)

    async def act(self, ctx: RunContext, calls: tuple[ToolCall, ...]) -> StopReason | None:
        """Run a step's tool calls (within the run's tool-call limit) and write every result to memory.

        Calls beyond ``options.max_tool_calls`` are not run; they get a ``TOOL_ERROR`` result and the run
        stops with ``StopReason.MAX_TOOL_CALLS`` after this step — unless a call to a ``return_direct`` tool
        succeeded in it (``read_tool_answer``): the run then has its answer and ends with
        ``StopReason.FINAL_ANSWER``. A step with a call whose approval is deferred (``tool_approval="defer"``)
        ends the run with ``StopReason.APPROVAL_REQUIRED`` instead, that call left open
        (``agentflow.runtimes.resume``).
        """
        early = ctx.early_calls
        if (early is not None and early.calls) or ctx.handoffs is not None:
            return await act_with_early(self, ctx, calls, early)
        limit = ctx.options.max_tool_calls
        allowed = calls
        if limit is not None:
            allowed = calls[: max(0, limit - len(ctx.tool_calls))]
        refused = calls[len(allowed) :]
        await self._announce(ctx, calls)
        results = list(await self.run_tool_calls(ctx, allowed)) if allowed else []
        if refused:
            reason = f"not run: the run reached its limit of {limit} tool calls"
            results.extend(await self._refused_results(ctx, refused, reason))
        approvals = ctx.approvals
        if approvals is not None and approvals.deferred:
            return pause(ctx, calls, results)  # ``tool_approval="defer"``: the run stops for a decision
        ctx.record_results(calls, results)
        # One attribute read per step for a run without such a tool.
        if ctx.tools.has_return_direct and await self.read_tool_answer(ctx, results):
            return StopReason.FINAL_ANSWER
        return StopReason.MAX_TOOL_CALLS if refused else None

    async def read_tool_answer(self, ctx: RunContext, results: Sequence[ToolResult]) -> bool:
        """Whether a step's results (in call order, already in memory) hold the run's answer: the first
        successful result of a ``return_direct`` tool. If so, ``ctx.output_text`` is its text and
        ``ctx.output`` that text, or, for an ``output_type``, the text read into it as a model's final answer
        is (``OutputType.parse``, then the validators); the caller ends the run with ``FINAL_ANSWER``.

        A text that does not match the ``output_type``, or that a validator rejects (``RejectOutput``), is no
        answer: ``False``, the results go to the model as any tool's and the run goes on (its answer then
        goes through ``read_output``). Nothing is published for it: no model wrote that text, so there is
        nothing to send back and no ``OutputRejected`` (nor a retry spent). A validator that raises anything
        else fails the run, as it does for a model's answer. Only the first such result is read: a later one
        is a result like any other. Called only for a registry with such a tool (``has_return_direct``).
        """
        tools = ctx.tools
        for result in results:
            # A successful result names its tool as registered; a failed or refused one never answers.
            found = tools.get(result.name) if result.ok else None
            if found is not None and found.return_direct:
                break
        else:
            return False
        text = result.output
        spec = ctx.output_type
        value: Any = text
        if spec is not None:
            try:
                value = spec.parse(text)
                if spec.validators:
                    value = await validate(ctx, value, text)
            except (RejectOutput, ValueError):
                return False
        ctx.output_text = text
        ctx.output = value
        return True

    async def _announce(
        self, ctx: RunContext, calls: tuple[ToolCall, ...], announced: Collection[int] = ()
    ) -> None:
        # The step's calls are pending from now on (memory holds them without outputs), each announced but
        # those at the ``announced`` indexes (eager calls: announced when they started).
        ctx.pending = list(calls)
        ctx.finished = {}
        ctx.tool_calls.extend(calls)
        for index, call in enumerate(calls):
            # Marked first: a publish a cancel cuts has reached the subscribers ahead of the one it waited
            # for, and announcing the call again at the run's end would repeat it for them.
            ctx.announced.add(call.id)
            if index not in announced and ctx.bus.has_listeners():
                await ctx.emit(ToolCallRequested(call=call))

    async def run_tool_calls(self, ctx: RunContext, calls: tuple[ToolCall, ...]) -> list[ToolResult]:
        """Execute calls with the run's ``ToolExecutor``, concurrently unless ``parallel_tool_calls=False``.

        Returns the results in call order; result events are published as each call completes.
        """
        parallel = ctx.settings.parallel_tool_calls is not False

        def finished(index: int, result: ToolResult) -> None:
            # Recorded as each call completes, so a cancel mid-batch keeps the results that exist.
            ctx.finished[calls[index].id] = result

        return await ctx.executor.run_calls(
            calls, run_id=ctx.run_id, step=ctx.step, parallel=parallel, on_result=finished
        )

    async def refuse_calls(self, ctx: RunContext, calls: tuple[ToolCall, ...], reason: str) -> None:
        """Answer calls without running them: ``ToolCallRequested`` then ``ToolFailed`` each, and memory.

        A call that started early (``agentflow.runtimes.eager_calls``) is cancelled instead if it is still
        running, and keeps its result if it has finished.
        """
        early = ctx.early_calls
        if early is not None and early.calls:
            await refuse_with_early(self, ctx, calls, reason, early)
            return
        await self._announce(ctx, calls)
        ctx.record_results(calls, await self._refused_results(ctx, calls, reason))

    async def _refused_results(
        self, ctx: RunContext, calls: tuple[ToolCall, ...], reason: str
    ) -> list[ToolResult]:
        results = [cancelled_result(call, reason) for call in calls]
        for call, result in zip(calls, results, strict=True):
            ctx.finished[call.id] = result
            await ctx.emit(ToolFailed(call=call, result=result))
        return results

    async def settle_pending(self, ctx: RunContext, reason: str) -> None:
        """Close interrupted work in memory: every pending call gets its result, or a synthetic cancelled one.

        Called (shielded) when a run is cancelled, times out or fails; memory writes come first so they
        happen even if publishing the synthetic ``ToolFailed`` events is cut short. A call the cut came too
        early for to be announced (``ToolCallRequested``) is announced before its result.
        """
        if not ctx.pending:
            return
        calls = tuple(ctx.pending)
        synthetic = [c for c in calls if c.id not in ctx.finished]
        results = [ctx.finished.get(c.id) or cancelled_result(c, reason) for c in calls]
        try:
            ctx.record_results(calls, results)
        finally:
            # Published even when memory refused the write: subscribers still see every call end.
            for call, result in zip(calls, results, strict=True):
                if call in synthetic:
                    if call.id not in ctx.announced:
                        await ctx.emit(ToolCallRequested(call=call))
                    await ctx.emit(ToolFailed(call=call, result=result))
