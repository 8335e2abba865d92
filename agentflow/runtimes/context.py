"""``RunContext``: everything one run of an agent works with, and the state it accumulates.

The agent builds one per run (``Agent.stream``/``Agent.run``) and hands it to its runtime; the runtime's hooks
read the configuration (model client, tools, memory, options) and update the state (step, tool calls and
results, usage, the items the run added to memory, the calls still waiting for a result). Keeping that state
here, not on the runtime, is what lets one runtime instance serve any number of concurrent runs.

No loop logic here: ``agentflow.runtimes.base`` drives the run.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from ..agent.items import function_call_output_item, to_items
from ..agent.memory import Memory
from ..agent.options import AgentOptions, ModelSettings
from ..agent.prompt import AgentModelResult, ModelClient
from ..bus import EventBus
from ..events import ToolApprovalRequested, ToolProgress
from ..model.events import Event
from ..model.messages import ToolCall
from ..model.response import TokenUsage
from ..result import AgentResult, StopReason, ToolResult
from ..tools.approval import ToolApprovalRequest, ToolApprovals
from ..tools.executor import ToolExecutor
from ..tools.registry import ToolRegistry
from .calls import answer_unanswered_calls
from .errors import ToolRetriesExceeded
from .output import OutputType

if TYPE_CHECKING:
    from ..agent.handoffs import Handoff
    from .base import AgentRuntime
    from .eager_calls import EarlyCalls
    from .guarded import InputCheck
    from .guardrails import Guardrails
    from .prompt_functions import PromptFunctions

__all__ = ["NO_USAGE", "RestorePoint", "RunContext", "usage_total"]

NO_USAGE = TokenUsage()
"""Zero usage, shared (``TokenUsage`` is immutable): where the run's and each step's sums start."""

_NO_HEADERS: Mapping[str, str] = MappingProxyType({})


def usage_total(usage: TokenUsage) -> int:
    """The tokens a usage counts against a budget: ``total_tokens``, or input + output when it is missing."""
    return usage.total_tokens or usage.input_tokens + usage.output_tokens


class _ToolUsage:
    """The run's ``UsageSink``: usage a tool reports (``ToolContext.add_usage``: a sub-agent's run) counts
    toward the run's and the step's usage, and so its token budget, but is no model call of its own.

    It holds the run weakly: the run holds the executor that holds this, and a cycle would leave every run's
    state to the garbage collector.
    """

    __slots__ = ("_run",)

    def __init__(self, run: RunContext) -> None:
        self._run = weakref.ref(run)

    def add_usage(self, usage: TokenUsage) -> None:
        run = self._run()
        if run is not None:
            run.usage = run.usage + usage
            run.step_usage = run.step_usage + usage

    def tokens_left(self) -> int | None:
        run = self._run()
        return None if run is None else run.tokens_left


class _RunEnder:
    """The run's ``ToolExecutor.on_fatal``: a tool call that ends the run records its exception on the run
    and cancels the run's ``abort_scope``, so the run ends even where that exception is caught on its way
    (CodeAct's sandbox hands it to the code as a ``ToolError``). Holds the run weakly, as ``_ToolUsage``
    does."""

    __slots__ = ("_run",)

    def __init__(self, run: RunContext) -> None:
        self._run = weakref.ref(run)

    def __call__(self, error: Exception) -> None:
        run = self._run()
        if run is None or run.tool_failure is not None:
            return  # the first call to end the run is the one it fails with
        run.tool_failure = error
        if run.abort_scope is not None:
            run.abort_scope.cancel()


@attrs.frozen
class RestorePoint:
    """Where a run that must not keep its work puts memory back (``RunContext.roll_back``): ``memory`` (a
    ``Memory.snapshot``) and how many of the run's ``new_items`` it holds (``kept``): none, but for a resumed
    run the results of the calls it decided, which ran and so are never taken back
    (``agentflow.runtimes.resume``)."""

    memory: tuple[Any, ...] = attrs.field(repr=False)
    kept: int = 0


def _retries_exceeded(name: str, limit: int, result: ToolResult, unknown: bool) -> Exception:
    """The run's ``ToolExecutor.retries_exceeded``: what a call failing once too often ends the run with."""
    return ToolRetriesExceeded(name, limit, result.error or "", result.error_type or "", unknown=unknown)


@attrs.define(eq=False)
class RunContext:
    """One run: its configuration (read-only by convention) and its state (updated by the runtime).

    ``input_items`` are written to memory when the run starts; ``input_text`` is what ``RunStarted`` shows.
    ``deps`` is what the run was started with (``agent.run(x, deps=...)``), passed to its tools
    (``ToolContext.deps``), output validators, prompt functions and planners untouched, never stored or
    published. ``system_prompt`` / ``instructions`` are the texts of the current step: an agent's prompt
    functions (``prompt_functions``) set them before each step's model call.
    ``cancel_scope`` is the scope ``AgentRun.cancel()`` cancels: a run started with ``agent.stream()`` has
    one; one awaited with ``agent.run()`` has none (nothing holds its ``AgentRun``: cancelling the awaiting
    task cancels it), which spares it a scope around every step. ``pending`` are the tool calls of the
    current step that memory holds without outputs yet, and ``finished`` the results that arrived for them:
    if the run is cut short, ``settle_pending`` completes memory with them and synthetic results.
    """

    run_id: str
    bus: EventBus
    memory: Memory
    model: ModelClient
    tools: ToolRegistry
    """The run's tools. With toolsets (``tools.toolsets``: MCP servers) until the run starts, which then
    sets its own registry, toolsets' tools included (``wait_turn``): what its model is offered, its executor
    runs and CodeAct code calls."""
    options: AgentOptions = attrs.field(factory=AgentOptions)
    settings: ModelSettings = attrs.field(factory=ModelSettings)
    system_prompt: str | None = None
    instructions: str | None = None
    input_text: str = ""
    input_items: tuple[Any, ...] = ()
    stream_model: bool = False
    cancel_scope: anyio.CancelScope | None = None
    wait_turn: Callable[[], Awaitable[None]] | None = attrs.field(default=None, repr=False)
    """Awaited inside the run's scopes before anything else: a session's run waits there for the runs ahead
    of it on the same memory (``AgentRun`` holds the lock), and a run whose ``tools`` have toolsets (MCP
    servers) lists their tools there, replacing ``tools`` with its own registry (``ToolRegistry.for_run``)
    before its first model call and before its executor is built."""
    before_terminal: Callable[[], Awaitable[Exception | None]] | None = attrs.field(default=None, repr=False)
    """Awaited once by the run's ending (shielded and capped, as the rest of the ending) right before its
    terminal event, with the outcome on this context (``result``; ``error`` for a failed run): a stored
    session's run rolls back and saves its conversation there (``AgentRun``). The exception it returns fails
    a run that finished or was cancelled (``RunFailed`` for it, its partial result the run's own); on a run
    that failed anyway it becomes a note on the run's error."""
    output_type: OutputType[Any] | None = None
    """What the final answer is read into (``Agent(output_type=…)``); ``None``: its text is the answer."""
    session_id: str | None = None
    """The conversation the run belongs to (a session's ``id``), if any: ``RunStarted`` says it."""
    parent_run_id: str | None = None
    """For a run of an agent used as a tool (``as_tool``): the run that called it, and the call."""
    parent_call_id: str | None = None
    deps: Any = attrs.field(default=None, repr=False)
    """The run's dependencies (``agent.run(x, deps=...)``), as given; ``None`` when it got none."""
    run_headers: Mapping[str, str] = attrs.field(default=_NO_HEADERS, repr=False)
    """The HTTP headers this run was given for its model calls, apart from its agent's: those of its own
    ``settings=`` and those it inherited as a sub-agent's run (already in ``settings.extra_headers``). What it
    passes on to the runs of agents it calls as tools (``ToolContext.extra_headers``)."""
    prompt_functions: PromptFunctions | None = attrs.field(default=None, repr=False)
    """The agent's prompt functions (``Agent(instructions=fn)``), evaluated before each step's model call
    (``PromptFunctions.refresh``); ``None`` for an agent whose prompts are static (nothing to evaluate)."""
    guardrails: Guardrails | None = attrs.field(default=None, repr=False)
    """The agent's input and output guardrails (``agentflow.runtimes.guarded``); ``None`` without any."""
    input_guard: InputCheck | None = attrs.field(default=None, init=False, repr=False)
    """The input guardrails running beside the run's first step, until they pass: the step waits for them
    before it acts on its model turn (``AgentRuntime.run_step``)."""
    unchecked: bool = attrs.field(default=False, init=False, repr=False)
    """A guardrail's verdict on the run is pending (its input guardrails have not all passed, or its output
    guardrails are checking its answer): a run that ends meanwhile (cancelled, timed out, failed) keeps
    nothing of its own, as a tripped one (``run_ending.settle``, ``roll_back``). Fail closed."""
    restore_point: RestorePoint | None = attrs.field(default=None, init=False, repr=False)
    """Memory as the run found it, for a run that may have to put it back: a guarded run's, a
    ``rollback_on_failure`` session's (taken once it has its turn); after a resumed run's decided calls
    have their results (``resume``), memory with them. ``None`` for other runs (nothing taken)."""

    step: int = 0
    """The index of the current step (after the run: the number of steps run)."""
    tool_calls: list[ToolCall] = attrs.field(factory=list)
    tool_results: list[ToolResult] = attrs.field(factory=list)
    usage: TokenUsage = NO_USAGE
    step_usage: TokenUsage = NO_USAGE
    model_calls: int = 0
    new_items: list[Any] = attrs.field(factory=list)
    history_items: tuple[Any, ...] = attrs.field(default=(), repr=False)
    """The conversation the run continued (``AgentResult.history``): memory's items as ``remember_input``
    found them, or, when it rewrote memory to answer a call left without output, the rewritten memory."""
    output_text: str = ""
    reasoning_text: str | None = None
    refusal: str | None = None
    output: Any = None
    """The final answer: read into ``output_type`` (and through its validators), else its text."""
    output_rejections: int = 0
    """How many final answers did not match ``output_type`` or were rejected by its validators."""
    output_retry: Any = attrs.field(default=None, repr=False)
    """The user turn sending a rejected final answer back, while the model has not answered it: the next
    prompt ends with it, and it enters memory only together with that answer (``AgentRuntime.store_turn``),
    so a run cut short before the answer leaves no unanswered retry prompt in a session's memory."""
    pending: list[ToolCall] = attrs.field(factory=list)
    finished: dict[str, ToolResult] = attrs.field(factory=dict)
    announced: set[str] = attrs.field(factory=set, repr=False)
    """The ids of the step's calls whose ``ToolCallRequested`` was published."""
    result: AgentResult | None = None
    """The outcome once the run has ended (the partial result for a failed or cancelled run)."""
    error: BaseException | None = None
    """The exception a failed run raised."""
    unhandled: AgentModelResult | None = attrs.field(default=None, repr=False)
    """A model turn that completed but is not handled yet: if the run ends before it is, the ending stores
    it (``AgentRuntime.keep_turn``), so a cancel that lands while its events are published loses nothing; or
    the text of a streamed answer cut short (``CutAnswer``), which the ending hands to ``keep_cut_answer``."""
    prompt_cache: dict[str, Any] = attrs.field(factory=dict, repr=False)
    """The ``AgentPrompt.cache`` of every model call of this run: what its model client reuses later."""
    early_calls: EarlyCalls | None = attrs.field(default=None, init=False, repr=False)
    """The current step's calls that started while its model call streamed
    (``agentflow.runtimes.eager_calls``): set only by a step in which calls to eager tools may start early;
    the run's ending settles them if that step is cut short."""
    tool_failure: Exception | None = attrs.field(default=None, init=False, repr=False)
    """The exception a tool call ended the run with (its tool's ``on_error="raise"``, a ``ToolFatalError``…),
    set before that exception propagates: the run fails with it even if something on the way caught it."""
    abort_scope: anyio.CancelScope | None = attrs.field(default=None, init=False, repr=False)
    """The scope around the run's steps that a tool call ending the run cancels (``AgentRuntime.execute`` sets
    it for a run with tools whose runtime hands tool errors to code: ``tool_errors_reach_code``)."""
    runtime_state: object = attrs.field(default=None, repr=False)
    """Anything else a runtime keeps for this run (CodeAct: its code executor and the code step in flight)."""
    agent_name: str | None = None
    """The name of the agent whose turn it is: the run's own, then the one a handoff gave the run to
    (``AgentResult.agent_name``)."""
    handoffs: Mapping[str, Handoff] | None = attrs.field(default=None, repr=False)
    """The current agent's handoffs by their tool's name (``Agent(handoffs=...)``); ``None`` for an agent
    without any, whose steps never look for one (``agentflow.runtimes.handing_off``)."""
    handoff: Handoff | None = attrs.field(default=None, init=False, repr=False)
    """The handoff a step's call asked for and got (its result is in memory): the loop hands the run over
    before the next step."""
    answered: StopReason | None = attrs.field(default=None, init=False, repr=False)
    """Why the run ends before its first step, if it does: a resumed run whose approved ``return_direct``
    call gave the answer (``agentflow.runtimes.resume``)."""
    all_tools: ToolRegistry | None = attrs.field(default=None, init=False, repr=False)
    """For a run with tools offered only when a function of the run says so (``@tool(enabled=...)``): all
    of its tools, of which each step offers those enabled (``tools``); ``None`` until the first such step."""
    agent_calls_from: int = attrs.field(default=0, init=False, repr=False)
    """How many of ``tool_calls`` came before the current agent had the run (a handoff's target): a forced
    ``tool_choice`` is reset once the current agent made a call of its own."""
    runtime: AgentRuntime | None = attrs.field(default=None, init=False, repr=False)
    """The runtime whose steps the run goes on with after a handoff (its target's); ``None``: its own."""
    handoff_call: str | None = attrs.field(default=None, init=False, repr=False)
    """The id of the call that asked for ``handoff`` (``HandedOff.call_id``)."""
    run_settings: ModelSettings | None = attrs.field(default=None, repr=False)
    """The run's own ``settings=`` (``agent.run(x, settings=...)``), kept for a handoff: merged over the next
    agent's, as they were over the first one's. ``None`` when the run brought none."""
    item_view: tuple[tuple[Any, ...], int] | None = attrs.field(default=None, init=False, repr=False)
    """What the model is shown of memory after a handoff with an ``input_filter``: its items (the filtered
    conversation), then the run's ``new_items`` from that index on (what it added since). ``None``: memory as
    it is."""
    decisions: Mapping[str, str | None] | None = attrs.field(default=None, repr=False)
    """A resumed run's decisions on the calls its conversation left open (``approvals=``, checked:
    ``check_decisions``): call id → ``None`` (approved) or the denial's text. ``None`` for any other run,
    whose open calls get a synthetic ``cancelled`` result (``remember_input``). See
    ``agentflow.runtimes.resume``."""
    prompts_step: int = attrs.field(default=-1, init=False, repr=False)
    """The step ``prompt_functions`` were last evaluated for (-1: not yet)."""
    tools_step: int = attrs.field(default=-1, init=False, repr=False)
    """The step the tools' ``enabled`` functions were last asked for (-1: not yet; ``choose_tools``)."""
    approvals: ToolApprovals | None = attrs.field(default=None, init=False, repr=False)
    """The run's tool approvals (``agentflow.tools.approval``), built with its executor when a tool of the run
    ``needs_approval``; ``None`` otherwise. ``AgentRun.approve`` / ``deny`` answer through it."""
    _executor: ToolExecutor | None = attrs.field(default=None, init=False, repr=False)
    _model_name: str | None = attrs.field(default=None, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self.refresh_model_name()

    def refresh_model_name(self) -> None:
        """Read the default model name of ``model`` again (after a handoff gave the run another client)."""
        # Any model client may say which model it asks for by default (``ProtocolClient.model_name``).
        name = getattr(self.model, "model_name", None)
        self._model_name = name if isinstance(name, str) else None

    def model_name(self, prompt_model: str | None) -> str | None:
        """The model a call asks for: the prompt's own, else the model client's default (``ModelRequest``)."""
        return prompt_model or self._model_name

    # -- events ----------------------------------------------------------------------------------------------

    def publish(self, event: Event) -> Awaitable[Event]:
        """Publish on the run's bus (stamped with the run id, the current step and the next seq); await it.

        The bus's own coroutine, not a wrapper around it: one call less per event.
        """
        return self.bus.publish(event)

    def emit(self, event: Event) -> Awaitable[Event]:
        """``publish`` for an event created for this call (``await ctx.emit(StepStarted())``): the bus
        stamps it in place instead of copying it (``EventBus.publish(owned=True)``). Runtimes publish their
        own events this way (the tool executor the same, straight to the bus); an event you keep or publish
        twice goes to ``publish``.
        """
        return self.bus.publish(event, owned=True)

    @property
    def executor(self) -> ToolExecutor:
        """The run's tool executor (built on first use), publishing its events on the run's bus."""
        if self._executor is None:
            # A step offering some tools only (``all_tools``): approvals for any tool the run may offer.
            if (self.all_tools or self.tools).has_approval:
                self.approvals = ToolApprovals(
                    self.options.tool_approval,
                    functools.partial(self.bus.publish, owned=True),
                    # Only a run with a handle (``agent.stream()``: it has a cancel scope) can be answered.
                    waits=self.cancel_scope is not None,
                    heard=functools.partial(self.bus.listens_to, ToolApprovalRequested),
                    cannot_pause=self._cannot_pause(),
                )
            self._executor = ToolExecutor(
                self.tools,
                max_concurrency=self.options.max_tool_concurrency,
                default_timeout=self.options.tool_timeout,
                default_on_error=self.options.on_tool_error,
                # The bus's own publish, not ``self.emit``: an executor holding this context would make a
                # reference cycle, and every run's state would then wait for the garbage collector.
                emit=functools.partial(self.bus.publish, owned=True),
                emit_may_wait=self.bus.has_listeners,
                listening=self.bus.has_listeners,
                progress_listening=functools.partial(self.bus.listens_to, ToolProgress),
                usage=_ToolUsage(self),
                on_fatal=_RunEnder(self),
                deps=self.deps,
                extra_headers=self.run_headers,
                approvals=self.approvals,
                max_retries=self.options.max_tool_retries,
                # A runtime that hands tool errors to code (CodeAct: ``abort_scope`` is set) counts none: the
                # code, not the model, gets them, and may well catch them and go on.
                retries_exceeded=_retries_exceeded if self.abort_scope is None else None,
            )
        return self._executor

    def use_tools(self, tools: ToolRegistry) -> None:
        """Make ``tools`` (some of ``all_tools``) what the next step offers and its calls run with."""
        self.tools = tools
        if self._executor is not None:
            self._executor.use(tools)

    def reset_executor(self) -> None:
        """Drop the run's tool executor and approvals, to be built again for new ``tools`` (a handoff's): only
        between steps, when no call is running or waiting for a decision."""
        self._executor = None
        self.approvals = None

    def _cannot_pause(self) -> str | None:
        """Why this run cannot pause for a deferred approval (``ApprovalNotDeferrableError``), or ``None``."""
        if self.parent_run_id is not None:
            return "a run of an agent used as another agent's tool"
        if self.abort_scope is not None:
            # A runtime whose tool calls come from code (CodeAct): the code cannot stop and go on later.
            return "a tool call made by the model's code (CodeAct)"
        return None

    # -- memory ----------------------------------------------------------------------------------------------

    def remember(self, items: Iterable[Any]) -> None:
        """Append items to memory and to the run's ``new_items``."""
        items = tuple(items)
        if items:
            self.memory.extend(items)
            self.new_items.extend(items)

    def remember_input(self) -> None:
        """Write ``input_items`` to memory, answering first every function call the conversation holds
        without an output (``answer_unanswered_calls``).

        Such a call is what a process that died in the middle of a tool call leaves in a stored conversation
        (a run that is cancelled or fails completes its own calls); both APIs refuse a conversation holding
        one. Each gets a synthetic ``cancelled`` ``TOOL_ERROR`` output right after its turn. When only the
        input needs them, or they go after everything memory holds (the usual case: the call was the stored
        conversation's last item), they are appended like the input; otherwise memory is rewritten with
        ``Memory.restore``. Either way ``new_items`` lists them with the input.

        ``Message`` values in the input (``chat.run(UserMessage(...))``) are written as their items
        (``message_to_item``: the same requests, on either protocol), so memory holds JSON-ready items only;
        ``input_items`` is updated to match.
        """
        existing = self.memory.items
        if self.decisions is None:
            self.history_items = existing
        # else: a resumed run set it before it answered the open calls (``agentflow.runtimes.resume``)
        inputs = self.input_items
        for item in inputs:
            if type(item) is not dict:  # a Message value (rare): the usual input costs a type check per item
                inputs = self.input_items = tuple(to_items(inputs))
                break
        fixed = answer_unanswered_calls((*existing, *inputs) if existing else inputs)
        if fixed is None:
            self.remember(inputs)
            return
        kept = len(existing)
        if all(a is b for a, b in zip(fixed[:kept], existing, strict=True)):
            self.remember(fixed[kept:])
            return
        self.memory.restore(fixed)
        self.history_items = fixed
        old = {id(item) for item in existing}
        self.new_items.extend(item for item in fixed if id(item) not in old)

    def record_results(self, calls: Iterable[ToolCall], results: Iterable[ToolResult]) -> None:
        """Write tool results to memory in call order (``function_call_output`` items) and to the run's state.

        The calls stop being pending. The run's own record comes first: if memory refuses the write, the
        results still reach the run's (partial) result.
        """
        calls = tuple(calls)
        results = tuple(results)
        if len(calls) != len(results):
            raise ValueError(f"{len(calls)} tool calls but {len(results)} results")
        self.tool_results.extend(results)
        done = {c.id for c in calls}
        self.pending = [c for c in self.pending if c.id not in done]
        for call_id in done:
            self.finished.pop(call_id, None)
        self.remember(function_call_output_item(c.id, r.output) for c, r in zip(calls, results, strict=True))

    def roll_back(self) -> None:
        """Put memory back at ``restore_point`` (if the run took one) and drop the run's ``new_items`` it does
        not hold, so a stored session saves none of them; what ``Memory.restore`` raises propagates (the
        items are dropped all the same)."""
        point = self.restore_point
        if point is None:
            return
        del self.new_items[point.kept :]
        self.memory.restore(point.memory)

    # -- usage -----------------------------------------------------------------------------------------------

    def add_usage(self, usage: TokenUsage | None) -> None:
        """Count one model call's usage towards the step and the run."""
        self.model_calls += 1
        if usage is not None:
            self.usage = self.usage + usage
            self.step_usage = self.step_usage + usage

    @property
    def tokens_left(self) -> int | None:
        """What ``options.max_tokens`` has left of the run's budget (0 when spent); ``None`` without one."""
        budget = self.options.max_tokens
        return None if budget is None else max(0, budget - usage_total(self.usage))

    async def refresh_prompts(self) -> None:
        """Evaluate the agent's prompt functions for the current step (once per step), if it has any: what a
        runtime awaits before building a model call's prompt, and a planner's context."""
        functions = self.prompt_functions
        if functions is not None:
            await functions.refresh(self)

    @property
    def token_budget_reached(self) -> bool:
        """Whether ``options.max_tokens`` is set and the run's usage has reached it."""
        budget = self.options.max_tokens
        return budget is not None and usage_total(self.usage) >= budget

    # -- result ----------------------------------------------------------------------------------------------

    def result_for(self, stop_reason: StopReason, error: str | None = None) -> AgentResult:
        """The run's result so far, ending for ``stop_reason``."""
        output = self.output
        if output is None and stop_reason is StopReason.FINAL_ANSWER and self.output_type is None:
            # A runtime that reads its final answer its own way (CodeAct) leaves the text as the output.
            output = self.output_text
        pending: tuple[ToolApprovalRequest, ...] = ()
        if stop_reason is StopReason.APPROVAL_REQUIRED and self.approvals is not None:
            # The run's deps stay out of its result: it is published (``RunFinished``) and may be stored.
            pending = tuple(attrs.evolve(request, deps=None) for request in self.approvals.deferred)
        return AgentResult(
            pending_approvals=pending,
            agent_name=self.agent_name,
            run_id=self.run_id,
            output_text=self.output_text,
            stop_reason=stop_reason,
            steps=self.step,
            tool_calls=tuple(self.tool_calls),
            tool_results=tuple(self.tool_results),
            usage=self.usage,
            new_items=tuple(self.new_items),
            history=self.history_items,
            error=error,
            reasoning_text=self.reasoning_text,
            refusal=self.refusal,
            output=output,
        )
