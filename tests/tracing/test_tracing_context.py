"""Where a run's spans hang: under the span current where the run was started (``run``, ``stream``,
``run_sync``), an agent used as a tool under the calling tool's span; and the instrumentation's own life
(``instrument`` once, its remover, ``traced``, a provider that records nothing)."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tracing_support import EndCounter, add, attributes, one, parent_of, tool_loop_script, tree

from agentflow.agent.agent import Agent
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool
from agentflow.tracing import TRACED_EVENTS, instrument, tool_span_context, traced
from agentflow.tracing._recorder import RunRecorder


async def test_the_run_span_of_agent_run_is_a_child_of_the_caller_s_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient([reply("Hi.")]), name="Greeter")
    instrument(agent, tracer_provider=provider)

    with provider.get_tracer("app").start_as_current_span("request"):
        await agent.run("Hello")

    assert tree(exporter.get_finished_spans()) == ["request", "  invoke_agent Greeter", "    chat"]


async def test_the_run_span_of_agent_stream_is_a_child_of_the_span_current_where_it_was_entered(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient(tool_loop_script()), tools=[add], name="Calculator")
    instrument(agent, tracer_provider=provider)

    with provider.get_tracer("app").start_as_current_span("request"):
        async with agent.stream("Add.") as run:
            await run.wait()

    assert tree(exporter.get_finished_spans()) == [
        "request",
        "  invoke_agent Calculator",
        "    chat",
        "    execute_tool add",
        "    execute_tool add",
        "    chat",
    ]


def test_the_run_span_of_run_sync_is_a_child_of_the_caller_s_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient([reply("Hi.")]), name="Greeter")
    instrument(agent, tracer_provider=provider)

    with provider.get_tracer("app").start_as_current_span("script"):
        agent.run_sync("Hello")

    assert tree(exporter.get_finished_spans()) == ["script", "  invoke_agent Greeter", "    chat"]


async def test_spans_made_current_by_the_tracer_never_leak_into_the_caller(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient(tool_loop_script()), tools=[add])
    instrument(agent, tracer_provider=provider)
    tracer = provider.get_tracer("app")

    with tracer.start_as_current_span("request") as request:
        await agent.run("Add.")
        assert trace.get_current_span() is request
        with tracer.start_as_current_span("after"):
            pass

    assert parent_of(one(exporter.get_finished_spans(), "after"), exporter.get_finished_spans()).name == (
        "request"
    )


async def test_an_agent_used_as_a_tool_nests_under_the_calling_tool_s_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    researcher = Agent(FakeModelClient([reply("Paris.")]), name="Researcher")
    ask = researcher.as_tool(description="Answers a question.")
    script = [reply(tool_calls=[("researcher", {"input": "Capital of France?"})]), reply("It is Paris.")]
    assistant = Agent(FakeModelClient(script), tools=[ask], name="Assistant")
    instrument(researcher, tracer_provider=provider)
    instrument(assistant, tracer_provider=provider)

    with provider.get_tracer("app").start_as_current_span("request"):
        await assistant.run("What is the capital of France?")

    assert tree(exporter.get_finished_spans()) == [
        "request",
        "  invoke_agent Assistant",
        "    chat",
        "    execute_tool researcher",
        "      invoke_agent Researcher",
        "        chat",
        "    chat",
    ]
    ends.assert_all_ended_once()
    # Its span names the run and the call that started it, for a backend that joins traces by them.
    spans = exporter.get_finished_spans()
    caller, call = (
        attributes(one(spans, "invoke_agent Assistant")),
        attributes(one(spans, "execute_tool researcher")),
    )
    nested = attributes(one(spans, "invoke_agent Researcher"))
    assert nested["agentflow.run.parent_run_id"] == caller["agentflow.run.id"]
    assert nested["agentflow.run.parent_call_id"] == call["gen_ai.tool.call.id"]
    assert "agentflow.run.parent_run_id" not in caller


async def test_a_span_a_tool_starts_in_tool_span_context_nests_under_the_tool_call(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tracer = provider.get_tracer("app")
    researcher = Agent(FakeModelClient([reply("Paris.")]), name="Researcher")
    instrument(researcher, tracer_provider=provider)

    @tool
    async def look_up(question: str) -> str:
        """Looks a question up."""
        with tracer.start_as_current_span("search index", context=tool_span_context()):
            result = await researcher.run(question)  # under the span the tool made current
        return result.output_text

    script = [reply(tool_calls=[("look_up", {"question": "Capital?"})]), reply("Paris.")]
    assistant = Agent(FakeModelClient(script), tools=[look_up], name="Assistant")
    instrument(assistant, tracer_provider=provider)

    await assistant.run("Capital of France?")

    assert tool_span_context() is None  # outside a traced tool call
    assert tree(exporter.get_finished_spans()) == [
        "invoke_agent Assistant",
        "  chat",
        "  execute_tool look_up",
        "    search index",
        "      invoke_agent Researcher",
        "        chat",
        "  chat",
    ]


async def test_a_sync_tool_in_a_worker_thread_sees_its_tool_span_context(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tracer = provider.get_tracer("app")

    @tool
    def lookup(key: str) -> str:
        """A blocking lookup."""
        with tracer.start_as_current_span("database"):  # no context given: not under the tool call
            pass
        with tracer.start_as_current_span("cache", context=tool_span_context()):
            return key.upper()

    agent = Agent(
        FakeModelClient([reply(tool_calls=[("lookup", {"key": "k"})]), reply("K.")]), tools=[lookup]
    )
    instrument(agent, tracer_provider=provider)

    await agent.run("Look k up.")

    spans = exporter.get_finished_spans()
    assert parent_of(one(spans, "cache"), spans).name == "execute_tool lookup"
    assert one(spans, "database").parent is None  # no span was current where the run started


async def test_the_remover_stops_tracing_the_runs_started_afterwards(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient([reply("One."), reply("Two."), reply("Three.")]), name="Echo")
    remove = instrument(agent, tracer_provider=provider)

    await agent.run("1")
    remove()
    remove()  # twice is harmless
    await agent.run("2")
    instrument(agent, tracer_provider=provider)  # and it can be instrumented again
    await agent.run("3")

    assert [s.name for s in exporter.get_finished_spans()].count("invoke_agent Echo") == 2


async def test_instrumenting_an_agent_twice_is_refused() -> None:
    agent = Agent(FakeModelClient([]))
    instrument(agent)
    with pytest.raises(ValueError, match="instrumented already"):
        instrument(agent)


def test_bad_arguments_are_refused_when_instrumenting() -> None:
    agent = Agent(FakeModelClient([]))
    with pytest.raises(TypeError, match="takes an Agent"):
        instrument(agent.model_client)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"pass its agent: instrument\(chat.agent\)"):
        instrument(agent.session())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="content_limit"):
        instrument(agent, content_limit=0)
    with pytest.raises(TypeError, match="capture_content"):
        traced(agent, capture_content="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="TracerProvider"):
        traced(agent, tracer_provider=object())  # type: ignore[arg-type]


class _CountingNoOpProvider(trace.NoOpTracerProvider):
    """What OpenTelemetry's default provider does (nothing), counting the spans it is asked for."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        started = self.started

        class Counting(trace.NoOpTracer):
            def start_span(self, name: str, *args: Any, **kwargs: Any) -> trace.Span:
                started.append(name)
                return super().start_span(name, *args, **kwargs)

        return Counting()


async def test_with_a_provider_that_records_nothing_only_the_run_span_is_asked_for() -> None:
    provider = _CountingNoOpProvider()
    agent = Agent(FakeModelClient(tool_loop_script()), tools=[add])
    ((types, recorder),) = traced(agent, tracer_provider=provider)
    assert types == TRACED_EVENTS

    result = await agent.run("Add.", on=[(types, recorder)])

    assert result.output_text == "3 and 7."
    assert provider.started == ["invoke_agent"]  # its children would record nothing either
    assert isinstance(recorder, RunRecorder)
    assert recorder.open_runs == 0
