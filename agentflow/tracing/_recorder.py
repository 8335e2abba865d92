"""``RunRecorder``: the event callback that turns an agent's runs into OpenTelemetry spans.

One recorder serves every run of one agent (``instrument``) or one run (``traced``), keyed by ``run_id``. A
span starts when the event that begins its operation is published and ends at the event that ends it:

    RunStarted → invoke_agent {agent}                        ends at RunFinished / RunFailed / RunCancelled
      ModelRequest → chat {model}                            ends at ModelCompleted
      ModelRequest(purpose="plan") → plan {agent} ⊃ chat     ends at PlanCreated / PlanUpdated
      ToolStarted → execute_tool {tool}                      ends at ToolSucceeded / ToolFailed
        ToolProgress → a span event on it (the first ``MAX_PROGRESS_EVENTS``)
      CodeStarted → execute_code ⊃ its tool calls            ends at CodeExecuted
      HandedOff, OutputRejected, GuardrailTripped → span events on the run's span

Rules it keeps, whatever order the events come in:

- **Explicit parents.** Callbacks run in whichever task publishes, and a step's tools run concurrently, so
  no span is ever made "current": each child is started with its run's (or plan's, or code step's) context
  as its parent. The run span's own parent is the context current where the run's task began, which is the
  caller's (``agent.run()`` runs in the caller's task; ``agent.stream()`` and ``run_sync`` start theirs
  from the caller's context).
- **Every span ends exactly once.** The terminal event ends whatever its run still has open (a model call
  cut short, a tool the cancel interrupted), marked ``agentflow.interrupted``; a result event with no
  started span (a call refused at a limit, or cancelled before it started) is a span of no duration.
- **Nested agents.** An instrumented agent whose run starts inside a traced tool call (``Agent.as_tool``)
  takes the tool's span as its parent (``_tool_context``), unless the tool made a span of its own current
  (then that one is the parent, as for any run).
- **Nothing is built that is not recorded:** content only when captured. A model call's parameters, and
  with content its messages, system instructions and tool definitions, are read from the prompt its
  ``ModelRequest`` carries (``_prompt``): exactly what the call sent, a session's earlier turns, a plan or a
  retry prompt included. A ``ModelRequest`` without one (built elsewhere) gives none of them. The time to a
  streamed call's first chunk comes with its ``ModelCompleted`` (``time_to_first_chunk``, which the runtime
  measures): the recorder takes no deltas, which would make a traced ``agent.run()`` stream.

It does no I/O and never raises into the run (the bus would log it, but nothing here should fail).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from ..agent.agent import Agent
from ..agent.overrides import active_override
from ..events import (
    CodeExecuted,
    CodeStarted,
    GuardrailTripped,
    HandedOff,
    ModelRequest,
    OutputRejected,
    PlanCreated,
    PlanUpdated,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunStarted,
    ToolFailed,
    ToolProgress,
    ToolStarted,
    ToolSucceeded,
)
from ..model.events import Event, ModelCompleted, ModelRetry
from ..result import AgentResult
from . import _names as attr
from ._content import capped, finish_reason, input_messages, json_text, output_messages
from ._facts import OTHER, ModelFacts, response_facts, run_usage_attributes, usage_attributes
from ._otel import (
    AttributeValue,
    Context,
    Span,
    SpanKind,
    Status,
    StatusCode,
    Tracer,
    TracerProvider,
    otel_context,
    trace,
)
from ._prompt import ItemCache, PromptContent, request_attributes
from ._tool_context import CALLING_TOOL, ToolSpan

__all__ = ["MAX_PROGRESS_EVENTS", "TRACED_EVENTS", "RunRecorder"]

TRACED_EVENTS: tuple[type[Event], ...] = (
    RunStarted,
    ModelRequest,
    ModelRetry,
    ModelCompleted,
    ToolStarted,
    ToolProgress,
    ToolSucceeded,
    ToolFailed,
    PlanCreated,
    PlanUpdated,
    CodeStarted,
    CodeExecuted,
    OutputRejected,
    GuardrailTripped,
    HandedOff,
    RunFinished,
    RunFailed,
    RunCancelled,
)
"""The events a tracer listens to: no delta among them, so a traced ``agent.run()`` does not stream."""

MAX_PROGRESS_EVENTS = 32
"""How many ``ToolProgress`` events of one tool call become span events on its span; the rest are counted
in ``agentflow.tool.progress.dropped``, so a chatty tool cannot grow a span without bound."""

_MAX_ERROR_CHARS = 1000
"""How much of a failed run's error message its span keeps (an error message is not content: recorded
always, as OpenTelemetry instrumentations record exceptions)."""


class _RunSpans:
    """One run's spans: its own and those of its children still in flight."""

    __slots__ = (
        "ambient",
        "code",
        "code_context",
        "context",
        "conversation",
        "facts",
        "items",
        "live",
        "model",
        "plan",
        "plan_context",
        "span",
        "tools",
    )

    def __init__(self, span: Span, context: Context, ambient: Span, facts: ModelFacts) -> None:
        self.span = span
        self.context = context
        self.ambient = ambient
        self.facts = facts
        # A span from a provider that records nothing (OpenTelemetry's default, before the application sets
        # one up) has no valid context: the run's children are not even started then.
        self.live = span.get_span_context().is_valid
        self.conversation: str | None = None
        self.model: Span | None = None
        self.plan: Span | None = None
        self.plan_context: Context | None = None
        self.code: Span | None = None
        self.code_context: Context | None = None
        self.tools: dict[str, ToolSpan] = {}
        self.items: ItemCache = {}  # the items its calls were sent, converted (when content is captured)


def _agentflow_version() -> str:
    import agentflow

    return str(agentflow.__version__)


def _check_limit(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1 (characters), got {value!r}")
    return value


class RunRecorder:
    """The callback ``instrument`` and ``traced`` register: spans for the runs of ``agent`` (see the module
    docstring). Call it with each event of ``TRACED_EVENTS``; other events are ignored."""

    __slots__ = ("_agent", "_capture", "_content", "_facts", "_handlers", "_limit", "_runs", "_tracer")

    def __init__(
        self,
        agent: Agent[Any],
        *,
        tracer_provider: TracerProvider | None,
        capture_content: bool,
        content_limit: int,
        messages_limit: int,
    ) -> None:
        if not isinstance(capture_content, bool):
            raise TypeError(f"capture_content must be True or False, got {capture_content!r}")
        if tracer_provider is not None and not isinstance(tracer_provider, TracerProvider):
            raise TypeError(
                "tracer_provider must be an opentelemetry TracerProvider (opentelemetry.sdk.trace."
                f"TracerProvider), got {type(tracer_provider).__name__}"
            )
        self._agent = agent
        self._capture = capture_content
        self._limit = _check_limit("content_limit", content_limit)
        messages_limit = _check_limit("messages_limit", messages_limit)
        self._content = PromptContent(self._limit, messages_limit) if capture_content else None
        self._tracer: Tracer = trace.get_tracer(
            "agentflow.tracing", _agentflow_version(), tracer_provider=tracer_provider
        )
        self._runs: dict[str, _RunSpans] = {}
        self._facts: tuple[object, str | None, ModelFacts] | None = None
        self._handlers: dict[type[Event], Callable[[Any], None]] = {
            RunStarted: self._run_started,
            ModelRequest: self._model_request,
            ModelRetry: self._model_retry,
            ModelCompleted: self._model_completed,
            ToolStarted: self._tool_started,
            ToolProgress: self._tool_progress,
            ToolSucceeded: self._tool_ended,
            ToolFailed: self._tool_ended,
            PlanCreated: self._planned,
            PlanUpdated: self._planned,
            CodeStarted: self._code_started,
            CodeExecuted: self._code_executed,
            OutputRejected: self._output_rejected,
            GuardrailTripped: self._guardrail_tripped,
            HandedOff: self._handed_off,
            RunFinished: self._run_ended,
            RunFailed: self._run_ended,
            RunCancelled: self._run_ended,
        }

    def __repr__(self) -> str:
        return f"<agentflow.tracing of {self._agent.name!r}>"

    def __call__(self, event: Event) -> None:
        """Record ``event`` on its run's spans."""
        handler = self._handlers.get(type(event))
        if handler is None:
            handler = self._handler_for(type(event))
        handler(event)

    def _handler_for(self, cls: type[Event]) -> Callable[[Any], None]:
        # A subclass of a traced event (``agent.on`` matches with isinstance): its base's handler, found once.
        for base in cls.__mro__[1:]:
            found = self._handlers.get(base)
            if found is not None:
                self._handlers[cls] = found
                return found
        self._handlers[cls] = _ignore
        return _ignore

    @property
    def capture_content(self) -> bool:
        """Whether the spans hold content (prompts, answers, tool arguments and results…)."""
        return self._capture

    @property
    def open_runs(self) -> int:
        """How many runs have spans in flight (their terminal event not seen yet)."""
        return len(self._runs)

    # -- runs ------------------------------------------------------------------------------------------------

    def _run_facts(self, agent: Agent[Any] | None = None) -> ModelFacts:
        """The model facts of a run of the recorded agent, or of ``agent`` (one a handoff gave the run to)."""
        if agent is None:
            agent = self._agent
        override = active_override(agent)
        client: object = agent.model_client
        settings_model = agent.settings.model
        if override is not None:
            if override.model is not None:
                client = override.model
            if override.settings is not None and override.settings.model is not None:
                settings_model = override.settings.model
        cached = self._facts
        if cached is not None and cached[0] is client and cached[1] == settings_model:
            return cached[2]
        facts = ModelFacts(client, settings_model)
        self._facts = (client, settings_model, facts)
        return facts

    def _parent(self) -> tuple[Context, Span]:
        """The run span's parent context, and the span current where the run started."""
        current = otel_context.get_current()
        ambient = trace.get_current_span(current)
        ref = CALLING_TOOL.get()
        caller = ref() if ref is not None else None
        # Inside a traced tool call, the current context is still the one the calling run started in (the
        # recorder never makes its spans current): then the tool's span is the parent. A span the tool made
        # current itself wins, as it would for any run.
        if caller is not None and caller.open and ambient is caller.ambient:
            return caller.context, ambient
        return current, ambient

    def _open_run(self, event: Event, started: RunStarted | None) -> _RunSpans:
        parent, ambient = self._parent()
        facts = self._run_facts()
        agent = self._agent
        attributes: dict[str, AttributeValue] = {
            attr.OPERATION: "invoke_agent",
            attr.PROVIDER: facts.provider,
            attr.RUN_ID: event.run_id,
        }
        name = "invoke_agent"
        if agent.name != agent.runtime.name:  # a name of its own, not its runtime's
            attributes[attr.AGENT_NAME] = agent.name
            name = f"invoke_agent {agent.name}"
        if facts.model is not None:
            attributes[attr.REQUEST_MODEL] = facts.model
        if started is not None:
            attributes[attr.RUNTIME] = started.runtime
            if started.session_id is not None:
                attributes[attr.CONVERSATION_ID] = started.session_id  # conditionally required: the session's
            if started.parent_run_id is not None:  # an agent used as a tool: the run and call that started it
                attributes[attr.PARENT_RUN_ID] = started.parent_run_id
            if started.parent_call_id is not None:
                attributes[attr.PARENT_CALL_ID] = started.parent_call_id
            if self._capture:
                attributes[attr.INPUT_MESSAGES] = input_messages(started.input, self._limit)
        span = self._tracer.start_span(name, context=parent, kind=SpanKind.INTERNAL, attributes=attributes)
        run = _RunSpans(span, trace.set_span_in_context(span, parent), ambient, facts)
        if started is not None:
            run.conversation = started.session_id
        return run

    def _run_of(self, event: Event) -> _RunSpans | None:
        """The run of ``event``, if its spans are recorded."""
        run = self._runs.get(event.run_id)
        if run is None:
            # A run whose RunStarted this recorder did not see: its spans hang from one opened now.
            run = self._runs[event.run_id] = self._open_run(event, None)
        return run if run.live else None

    def _run_started(self, event: RunStarted) -> None:
        earlier = self._runs.pop(event.run_id, None)
        if earlier is not None:  # a run id reused while a run with it is still open: that one ends here
            self._end_children(earlier, None)
            earlier.span.set_attribute(attr.INTERRUPTED, True)
            earlier.span.end()
        self._runs[event.run_id] = self._open_run(event, event)

    def _run_ended(self, event: RunFinished | RunFailed | RunCancelled) -> None:
        run = self._runs.pop(event.run_id, None)
        if run is None:  # ended before it started (cancelled waiting for its session's turn, say)
            run = self._open_run(event, None)
        failed = event if isinstance(event, RunFailed) else None
        self._end_children(run, failed.error_type if failed is not None else None)
        result: AgentResult[Any] | None = event.result if isinstance(event, RunFinished) else event.partial
        span = run.span
        if result is not None:
            # Its total, sub-agents' included, under names of its own: ``gen_ai.usage.*`` here would count
            # every model call twice for backends that add usage up over a trace.
            attributes = run_usage_attributes(result.usage)
            attributes[attr.STOP_REASON] = result.stop_reason.value
            attributes[attr.STEPS] = result.steps
            attributes[attr.TOOL_CALLS] = len(result.tool_calls)
            if self._capture and result.output_text:
                attributes[attr.OUTPUT_MESSAGES] = output_messages(result.output_text, self._limit)
            span.set_attributes(attributes)
        if failed is not None:
            message = capped(failed.error, _MAX_ERROR_CHARS)
            span.set_attribute(attr.ERROR_TYPE, failed.error_type)
            span.add_event(
                attr.EXCEPTION, {attr.EXCEPTION_TYPE: failed.error_type, attr.EXCEPTION_MESSAGE: message}
            )
            span.set_status(Status(StatusCode.ERROR, f"{failed.error_type}: {message}"))
        span.end()

    def _end_children(self, run: _RunSpans, error_type: str | None) -> None:
        """End what ``run`` still has open, as its terminal event arrives (a cancel, a failure)."""
        if run.model is not None:
            # An answer that never came: the conventions' finish reason for a generation cut short.
            run.model.set_attribute(attr.FINISH_REASONS, ("error",))
        for span in (run.model, run.plan):
            # A run that fails with a model call or a plan in flight failed there.
            if span is not None:
                _interrupt(span, error_type)
        if run.code is not None:
            _interrupt(run.code, None)
        for tool in run.tools.values():
            tool.open = False
            _interrupt(tool.span, None)
        run.model = run.plan = run.code = None
        run.plan_context = run.code_context = None
        run.tools.clear()

    def _output_rejected(self, event: OutputRejected) -> None:
        attributes: dict[str, AttributeValue] = {"agentflow.output.retrying": event.retrying}
        if self._capture:
            attributes["agentflow.output.error"] = capped(event.error, self._limit)
        run = self._run_of(event)
        if run is not None:
            run.span.add_event(attr.OUTPUT_REJECTED, attributes)

    def _guardrail_tripped(self, event: GuardrailTripped) -> None:
        # The reason is the application's text about the input or answer: content, recorded only with it.
        attributes: dict[str, AttributeValue] = {
            attr.GUARDRAIL_KIND: event.kind,
            attr.GUARDRAIL_NAME: event.guardrail,
        }
        if self._capture:
            attributes[attr.GUARDRAIL_REASON] = capped(event.reason, self._limit)
        run = self._run_of(event)
        if run is not None:
            run.span.add_event(attr.GUARDRAIL_TRIPPED, attributes)

    def _handed_off(self, event: HandedOff) -> None:
        # Agent names and a call id: no content. The run's span stays one: the run goes on, its next model
        # calls the target's (its model's facts, when the target is found among the handoffs).
        run = self._run_of(event)
        if run is not None:
            target = _handoff_target(self._agent, event.target)
            if target is not None:
                run.facts = self._run_facts(target)
            run.span.add_event(
                attr.HANDED_OFF,
                {
                    attr.HANDOFF_SOURCE: event.source,
                    attr.HANDOFF_TARGET: event.target,
                    attr.HANDOFF_CALL_ID: event.call_id,
                },
            )

    # -- model calls and plans -------------------------------------------------------------------------------

    def _model_request(self, event: ModelRequest) -> None:
        run = self._run_of(event)
        if run is None:
            return
        if run.model is not None:  # never expected: a call always completes or ends the run
            _interrupt(run.model, None)
        facts = run.facts
        parent = run.context
        if event.purpose == "plan":
            if run.plan is None:
                run.plan = self._start_plan(run, event.step)
                run.plan_context = trace.set_span_in_context(run.plan, run.context)
            assert run.plan_context is not None
            parent = run.plan_context
        attributes: dict[str, AttributeValue] = {
            attr.OPERATION: "chat",
            attr.PROVIDER: facts.provider,
            attr.STEP: event.step,
            attr.PURPOSE: event.purpose,
            attr.ITEMS: event.items,
        }
        if event.model:
            attributes[attr.REQUEST_MODEL] = event.model
            if event.purpose == "step" and event.model != facts.model:
                # The model the run really asks for (its own settings, an override): the run span says so.
                run.span.set_attribute(attr.REQUEST_MODEL, event.model)
        if facts.host is not None:
            attributes[attr.SERVER_ADDRESS] = facts.host
            if facts.port is not None:
                attributes[attr.SERVER_PORT] = facts.port
        if run.conversation is not None:
            attributes[attr.CONVERSATION_ID] = run.conversation
        prompt = event.prompt
        if prompt is not None:
            attributes.update(request_attributes(prompt))
            if self._content is not None:
                attributes.update(self._content.attributes(prompt, run.items))
        name = f"chat {event.model}" if event.model else "chat"
        run.model = self._tracer.start_span(name, context=parent, kind=SpanKind.CLIENT, attributes=attributes)

    def _model_retry(self, event: ModelRetry) -> None:
        run = self._runs.get(event.run_id)
        if run is None or run.model is None:
            return
        run.model.add_event(
            attr.MODEL_RETRY,
            {
                "agentflow.retry.attempt": event.attempt,
                "agentflow.retry.max_attempts": event.max_attempts,
                "agentflow.retry.delay": event.delay,
                "agentflow.retry.reason": capped(event.reason, _MAX_ERROR_CHARS),
            },
        )

    def _model_completed(self, event: ModelCompleted[Any]) -> None:
        run = self._runs.get(event.run_id)
        span = run.model if run is not None else None
        if run is None or span is None:
            return
        run.model = None
        response = event.response
        attributes = usage_attributes(getattr(response, "usage", None))
        attributes.update(response_facts(getattr(response, "raw", None)))
        finish = finish_reason(getattr(response, "finish_reason", None))
        if finish is not None:
            attributes[attr.FINISH_REASONS] = (finish,)
        first_chunk = event.time_to_first_chunk
        if first_chunk is not None:
            # Only a streamed call has one (seconds from sending the request to its first chunk).
            attributes[attr.TIME_TO_FIRST_CHUNK] = first_chunk
            attributes[attr.REQUEST_STREAM] = True  # said at the start too, by a request with its prompt
        if self._capture:
            text = getattr(response, "output_text", None)
            reasoning = getattr(response, "reasoning_text", None)
            attributes[attr.OUTPUT_MESSAGES] = output_messages(
                text if isinstance(text, str) else None,
                self._limit,
                reasoning=reasoning if isinstance(reasoning, str) else None,
                calls=getattr(response, "tool_calls", ()),
                finish=finish,
            )
        span.set_attributes(attributes)
        span.end()

    def _start_plan(self, run: _RunSpans, step: int) -> Span:
        agent = self._agent
        attributes: dict[str, AttributeValue] = {attr.OPERATION: "plan", attr.STEP: step}
        name = "plan"
        if agent.name != agent.runtime.name:
            attributes[attr.AGENT_NAME] = agent.name
            name = f"plan {agent.name}"
        return self._tracer.start_span(
            name, context=run.context, kind=SpanKind.INTERNAL, attributes=attributes
        )

    def _planned(self, event: PlanCreated | PlanUpdated) -> None:
        run = self._run_of(event)
        if run is None:
            return
        # A planner that made no model call through the run (``Planner.simple()``) has no span open yet.
        span = run.plan if run.plan is not None else self._start_plan(run, event.step)
        run.plan = run.plan_context = None
        plan = event.plan
        attributes: dict[str, AttributeValue] = {
            attr.PLAN_REVISION: plan.revision,
            attr.PLAN_STEPS: len(plan.steps),
        }
        if plan.fallback_reason is not None:
            attributes[attr.PLAN_FALLBACK] = True
        if self._capture:
            attributes[attr.PLAN_TEXT] = capped(plan.to_text(), self._limit)
        span.set_attributes(attributes)
        span.end()

    # -- tools and code --------------------------------------------------------------------------------------

    def _tool_span(
        self, run: _RunSpans, event: ToolStarted | ToolSucceeded | ToolFailed
    ) -> tuple[Span, Context]:
        call = event.call
        parent = run.code_context or run.context
        attributes: dict[str, AttributeValue] = {
            attr.OPERATION: "execute_tool",
            attr.TOOL_NAME: call.name,
            attr.TOOL_CALL_ID: call.id,
            attr.TOOL_TYPE: "function",
            attr.STEP: event.step,
        }
        if self._capture:
            attributes[attr.TOOL_ARGUMENTS] = capped(call.arguments, self._limit)
        span = self._tracer.start_span(
            f"execute_tool {call.name}", context=parent, kind=SpanKind.INTERNAL, attributes=attributes
        )
        return span, parent

    def _tool_started(self, event: ToolStarted) -> None:
        run = self._run_of(event)
        if run is None:
            return
        earlier = run.tools.pop(event.call.id, None)
        if earlier is not None:  # never expected: a call id is started once
            earlier.open = False
            _interrupt(earlier.span, None)
        span, parent = self._tool_span(run, event)
        tool = ToolSpan(span, trace.set_span_in_context(span, parent), run.ambient)
        run.tools[event.call.id] = tool
        # Read by a run that starts inside this tool call, which runs in this task (``_tool_context``).
        CALLING_TOOL.set(weakref.ref(tool))

    def _tool_progress(self, event: ToolProgress) -> None:
        run = self._runs.get(event.run_id)
        tool = run.tools.get(event.call_id) if run is not None else None
        if tool is None:  # a call this recorder has no open span for
            return
        tool.progress += 1
        if tool.progress > MAX_PROGRESS_EVENTS:
            return  # counted: the span says how many were left out when it ends
        attributes: dict[str, AttributeValue] = {}
        if self._capture:
            # What a tool reports may quote its arguments or results: content.
            attributes[attr.PROGRESS_MESSAGE] = capped(event.message, self._limit)
            if event.data is not None:
                attributes[attr.PROGRESS_DATA] = json_text(event.data, self._limit)
        tool.span.add_event(attr.TOOL_PROGRESS, attributes)

    def _tool_ended(self, event: ToolSucceeded | ToolFailed) -> None:
        run = self._run_of(event)
        if run is None:
            return
        tool = run.tools.pop(event.call.id, None)
        if tool is not None:
            tool.open = False
            span = tool.span
            ref = CALLING_TOOL.get()
            if ref is not None and ref() is tool:
                CALLING_TOOL.set(None)
            if tool.progress > MAX_PROGRESS_EVENTS:
                span.set_attribute(attr.PROGRESS_DROPPED, tool.progress - MAX_PROGRESS_EVENTS)
        else:
            # Announced, never started: refused at a limit, or cut before it began. It still ended.
            span, _ = self._tool_span(run, event)
            span.set_attribute(attr.TOOL_STARTED, False)
        result = event.result
        if isinstance(event, ToolSucceeded):
            if self._capture:
                span.set_attribute(attr.TOOL_RESULT, capped(result.output, self._limit))
        else:
            error_type = result.error_type or OTHER
            span.set_attribute(attr.ERROR_TYPE, error_type)
            # The message often quotes the call's arguments: content.
            why = capped(result.error or result.output, self._limit) if self._capture else error_type
            span.set_status(Status(StatusCode.ERROR, why))
        span.end()

    def _code_started(self, event: CodeStarted) -> None:
        run = self._run_of(event)
        if run is None:
            return
        if run.code is not None:  # never expected: a code step ends before the next starts
            _interrupt(run.code, None)
        run.code = self._start_code(run, event.step, event.language, event.code)
        run.code_context = trace.set_span_in_context(run.code, run.context)

    def _start_code(self, run: _RunSpans, step: int, language: str | None, code: str) -> Span:
        attributes: dict[str, AttributeValue] = {attr.OPERATION: "execute_code", attr.STEP: step}
        if language is not None:
            attributes[attr.CODE_LANGUAGE] = language
        if self._capture:
            attributes[attr.CODE_SOURCE] = capped(code, self._limit)
        return self._tracer.start_span(
            "execute_code", context=run.context, kind=SpanKind.INTERNAL, attributes=attributes
        )

    def _code_executed(self, event: CodeExecuted) -> None:
        run = self._run_of(event)
        if run is None:
            return
        # A step that never started (not run, an unsupported language) has no span open yet.
        span = run.code if run.code is not None else self._start_code(run, event.step, None, event.code)
        run.code = run.code_context = None
        attributes: dict[str, AttributeValue] = {attr.CODE_OK: event.ok}
        if self._capture:
            if event.stdout:
                attributes[attr.CODE_STDOUT] = capped(event.stdout, self._limit)
            if event.stderr:
                attributes[attr.CODE_STDERR] = capped(event.stderr, self._limit)
        span.set_attributes(attributes)
        if not event.ok:
            error_type = event.error_type or OTHER
            span.set_attribute(attr.ERROR_TYPE, error_type)
            why = capped(event.error, self._limit) if self._capture and event.error else error_type
            span.set_status(Status(StatusCode.ERROR, why))
        span.end()


def _interrupt(span: Span, error_type: str | None) -> None:
    """End a span its run's end cut short; ``error_type``: the run failed, and this is where."""
    span.set_attribute(attr.INTERRUPTED, True)
    if error_type is not None:
        span.set_attribute(attr.ERROR_TYPE, error_type)
        span.set_status(Status(StatusCode.ERROR, error_type))
    span.end()


def _ignore(event: Event) -> None:
    pass


def _handoff_target(agent: Agent[Any], name: str) -> Agent[Any] | None:
    """The agent named ``name`` among those ``agent`` hands over to, directly or through others (the first
    found: two of one name cannot be told apart by the event)."""
    from ..agent.handoffs import reachable_agents

    return next((found for found in reachable_agents(agent) if found.name == name), None)
