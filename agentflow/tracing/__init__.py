"""OpenTelemetry tracing of agent runs, opt-in: ``instrument(agent)`` for its runs, ``traced(agent)`` for one.

::

    from agentflow.tracing import instrument

    remove = instrument(agent)              # spans for every run of ``agent`` started from now on
    await agent.run("Weather in Paris?")    # invoke_agent → chat gpt-4.1 / execute_tool get_weather …
    remove()                                # runs started afterwards are not traced

    await agent.run("Once", on=traced(agent))   # or one run only

The spans follow the OpenTelemetry GenAI semantic conventions: ``invoke_agent {agent}`` for a run, with
``chat {model}`` for each model call, ``execute_tool {tool}`` for each tool call (its ``ToolProgress`` as
span events), ``plan {agent}`` for a plan (its model call inside) and ``execute_code`` for a CodeAct code
step as its children. They are built from the run's events (an ``agent.on`` callback for the non-delta
events: the run does not stream because of it), so a run that is not instrumented pays nothing.

Nothing leaves the process unless you configure it to: this module uses the OpenTelemetry **API** only,
and spans go to the ``TracerProvider`` you pass, or the global one, which records nothing until your
application installs the SDK and an exporter. Prompts, answers, tool arguments and results are recorded
only with ``capture_content=True`` (or, when it is left out, with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``), each cut at ``content_limit`` characters.
``opentelemetry-api`` is needed (``pip install 'agentflow[otel]'``); ``import agentflow`` never loads it,
only ``import agentflow.tracing`` does.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from ..agent.agent import Agent
from ..bus import EventTypes
from ._capture import capture_content as _capture_content
from ._otel import TracerProvider  # without opentelemetry-api: the error that says what to install
from ._recorder import MAX_PROGRESS_EVENTS, TRACED_EVENTS, RunRecorder
from ._tool_context import tool_span_context

__all__ = [
    "DEFAULT_CONTENT_LIMIT",
    "DEFAULT_MESSAGES_LIMIT",
    "MAX_PROGRESS_EVENTS",
    "TRACED_EVENTS",
    "instrument",
    "tool_span_context",
    "traced",
]

DEFAULT_CONTENT_LIMIT = 4096
"""How many characters of each piece of content (a prompt, an answer, a tool's arguments or result, one
message part, a tool's description or schema) a span keeps when content is captured; the rest is cut and
marked with ``…``."""

DEFAULT_MESSAGES_LIMIT = 32768
"""How many characters of JSON a model call's ``gen_ai.input.messages`` holds at most when content is
captured: the newest messages that fit (always the newest one), the older ones counted in
``agentflow.input.dropped_messages``."""

# The instrumented agents, each with a token of its instrumentation (not the recorder: a value that refers to
# its key would keep the agent alive).
_instrumented: weakref.WeakKeyDictionary[Agent[Any], object] = weakref.WeakKeyDictionary()


def instrument(
    agent: Agent[Any],
    *,
    tracer_provider: TracerProvider | None = None,
    capture_content: bool | None = None,
    content_limit: int = DEFAULT_CONTENT_LIMIT,
    messages_limit: int = DEFAULT_MESSAGES_LIMIT,
) -> Callable[[], None]:
    """Trace every run of ``agent`` started from now on; returns a function that stops it (as ``agent.on``).

    - ``tracer_provider``: where the spans go; ``None``: OpenTelemetry's global provider (which records
      nothing until the application installs the SDK, and picks up one installed later).
    - ``capture_content``: also record the run's input and answer, each model call's prompt (its messages,
      system prompt and instructions, tool definitions) and answer, each tool call's arguments, result and
      progress messages, code and plans (off by default: they may hold personal data). A model call's
      parameters (temperature, maximum tokens…) are recorded either way. ``None`` (the default): what
      ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says when ``instrument`` is called (``true``,
      ``SPAN_ONLY`` or ``SPAN_AND_EVENT``: on; unset or anything else: off).
    - ``content_limit``: the characters kept of each piece of content (at least 1).
    - ``messages_limit``: the characters of JSON a model call's ``gen_ai.input.messages`` holds at most.

    A run is a span ``invoke_agent {agent name}``, a child of the span current where the run was started
    (``agent.run()``, ``agent.stream()``, ``run_sync``, a session's runs); its model calls, tool calls, plans
    and code steps are its children. An agent called as a tool (``Agent.as_tool``) of an instrumented agent
    nests under the calling tool's span when it is instrumented too. Runs in flight when the returned
    function is called finish their spans. Instrumenting an agent twice is a ``ValueError``; for one run of
    an agent that is not instrumented, pass ``on=traced(agent)`` instead.

    >>> from opentelemetry.sdk.trace import TracerProvider
    >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    >>> from agentflow.testing.fake import FakeModelClient, reply
    >>> exporter = InMemorySpanExporter()
    >>> provider = TracerProvider()
    >>> provider.add_span_processor(SimpleSpanProcessor(exporter))
    >>> agent = Agent(FakeModelClient([reply("Hi!")]), name="Greeter")
    >>> remove = instrument(agent, tracer_provider=provider)
    >>> agent.run_sync("Hello").output_text
    'Hi!'
    >>> [span.name for span in exporter.get_finished_spans()]
    ['chat', 'invoke_agent Greeter']
    >>> remove()
    """
    _check_agent("instrument", agent)
    if agent in _instrumented:
        raise ValueError(
            f"{agent!r} is instrumented already; call the function the first instrument() returned before "
            "instrumenting it again (several exporters go on one TracerProvider)"
        )
    recorder = RunRecorder(
        agent,
        tracer_provider=tracer_provider,
        capture_content=_capture_content(capture_content),
        content_limit=content_limit,
        messages_limit=messages_limit,
    )
    remove_callback = agent.on(TRACED_EVENTS, recorder)
    token = _instrumented[agent] = object()

    def uninstrument() -> None:
        remove_callback()
        if _instrumented.get(agent) is token:
            del _instrumented[agent]

    return uninstrument


def traced(
    agent: Agent[Any],
    *,
    tracer_provider: TracerProvider | None = None,
    capture_content: bool | None = None,
    content_limit: int = DEFAULT_CONTENT_LIMIT,
    messages_limit: int = DEFAULT_MESSAGES_LIMIT,
) -> tuple[tuple[EventTypes, Callable[[Any], Any]], ...]:
    """Callbacks that trace one run of ``agent``, for ``on=``: ``await agent.run(x, on=traced(agent))``.

    The same spans and options as ``instrument``, for that run alone (join it with callbacks of your own:
    ``on=[*traced(agent), (TextDelta, send)]``). Not for an agent that is instrumented already: its runs
    would be traced twice.
    """
    _check_agent("traced", agent)
    recorder = RunRecorder(
        agent,
        tracer_provider=tracer_provider,
        capture_content=_capture_content(capture_content),
        content_limit=content_limit,
        messages_limit=messages_limit,
    )
    return ((TRACED_EVENTS, recorder),)


def _check_agent(function: str, agent: object) -> None:
    if isinstance(agent, Agent):
        return
    if isinstance(getattr(agent, "agent", None), Agent):  # a Session: its runs are its agent's
        raise TypeError(
            f"{function}() takes an Agent; for a session's runs, pass its agent: {function}(chat.agent)"
        )
    raise TypeError(f"{function}() takes an Agent, got {type(agent).__name__}")
