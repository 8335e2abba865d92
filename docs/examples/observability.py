"""Observability: metrics from events, and OpenTelemetry traces of runs (``agentflow.tracing``), offline."""

from __future__ import annotations

from collections import Counter

import anyio
import orjson
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentflow.agent.agent import Agent
from agentflow.events import ModelCompleted, RunFailed, TerminalEvent, ToolFailed
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import ToolContext, tool
from agentflow.tracing import instrument, tool_span_context, traced


# --8<-- [start:tool]
@tool
async def get_weather(city: str, ctx: ToolContext) -> str:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    tracer = PROVIDER.get_tracer("weather-service")
    # Nested under the tool call's span (by default a span of yours would hang from the caller's).
    with tracer.start_as_current_span("weather API", context=tool_span_context()):
        await ctx.emit_progress("asking the weather service")  # an event on the tool call's span
        return f"Sunny in {city}, 24 °C."


# --8<-- [end:tool]


# --8<-- [start:setup]
def tracer_provider(exporter: SpanExporter) -> TracerProvider:
    """Spans of this service, batched to ``exporter`` (an OTLP exporter, in production)."""
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-bot"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


# --8<-- [end:setup]

EXPORTER = InMemorySpanExporter()  # keeps the spans in memory, for this example to check them
PROVIDER = tracer_provider(EXPORTER)


# --8<-- [start:metrics]
class Meter:
    """Counts model calls, tokens and failures from the events of every run (no deltas: runs stay blocking).

    In a service, feed your metrics library (OpenTelemetry metrics, Prometheus) from here instead.
    """

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def __call__(self, event: ModelCompleted | ToolFailed | TerminalEvent) -> None:
        if isinstance(event, ModelCompleted):
            self.counts["model calls"] += 1
            if event.response.usage is not None:
                self.counts["tokens"] += event.response.usage.total_tokens
        elif isinstance(event, ToolFailed):
            self.counts[f"tool failed: {event.result.error_type}"] += 1
        elif isinstance(event, RunFailed):
            self.counts[f"run failed: {event.error_type}"] += 1


# --8<-- [end:metrics]


async def main() -> None:
    script = [
        Reply(tool_calls=[("get_weather", {"city": "Paris"})], usage=(120, 15), model="gpt-4.1-2025-04-14"),
        Reply(text="It is sunny in Paris.", usage=(160, 8), model="gpt-4.1-2025-04-14"),
        Reply(text="Hello!", usage=(20, 3), model="gpt-4.1-2025-04-14"),
    ]
    async with ScriptedServer(script) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4.1")
        # --8<-- [start:instrument]
        agent = Agent(model, tools=[get_weather], name="Weather bot")
        meter = Meter()
        agent.on((ModelCompleted, ToolFailed, TerminalEvent), meter)  # metrics: events, no deltas
        remove = instrument(agent, tracer_provider=PROVIDER)  # traces: every run from now on

        tracer = PROVIDER.get_tracer("web")
        with tracer.start_as_current_span("POST /chat"):  # your request's span: the run nests under it
            await agent.run("Weather in Paris?")
        remove()
        # --8<-- [end:instrument]
        # --8<-- [start:one-run]
        plain = Agent(model, name="Greeter", system_prompt="Greet briefly.")  # not instrumented: one run
        await plain.run("Hi!", on=traced(plain, tracer_provider=PROVIDER, capture_content=True))
        # --8<-- [end:one-run]
        await model.aclose()

    PROVIDER.shutdown()  # at exit: exports what is still batched
    names = sorted(span.name for span in EXPORTER.get_finished_spans())
    assert names == [
        "POST /chat",
        "chat gpt-4.1",
        "chat gpt-4.1",
        "chat gpt-4.1",
        "execute_tool get_weather",
        "invoke_agent Greeter",
        "invoke_agent Weather bot",
        "weather API",
    ], names
    assert meter.counts == Counter({"model calls": 2, "tokens": 303})
    spans = {span.name: span for span in EXPORTER.get_finished_spans()}
    assert [event.name for event in spans["execute_tool get_weather"].events] == ["agentflow.tool.progress"]
    # Content was captured for the one traced run: its model call shows the prompt it sent.
    greeter_call = dict(
        [s for s in EXPORTER.get_finished_spans() if s.name == "chat gpt-4.1"][-1].attributes or {}
    )
    sent = orjson.loads(str(greeter_call["gen_ai.input.messages"]))
    assert sent == [{"role": "user", "parts": [{"type": "text", "content": "Hi!"}]}], sent
    system = orjson.loads(str(greeter_call["gen_ai.system_instructions"]))
    assert system[0]["content"].startswith("Greet briefly."), system  # then the runtime's own (ReAct's)


if __name__ == "__main__":
    anyio.run(main)
