"""A tool's progress (``ToolProgress``) as span events on its ``execute_tool`` span: their message and data
only when content is captured, at most ``MAX_PROGRESS_EVENTS`` of them, the rest counted."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tracing_support import attributes, one

from agentflow.agent.agent import Agent
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import ToolContext, tool
from agentflow.tracing import MAX_PROGRESS_EVENTS, instrument

SECRET = "hunter2"


@tool
async def fetch(pages: int, ctx: ToolContext) -> str:
    """Fetches pages, reporting each.

    Args:
        pages: How many.
    """
    for page in range(1, pages + 1):
        await ctx.emit_progress(f"page {page} of {pages} for {SECRET}", data={"page": page})
    return "fetched"


def _agent(pages: int) -> Agent[str]:
    return Agent(
        FakeModelClient([reply(tool_calls=[("fetch", {"pages": pages})]), reply("Done.")]), tools=[fetch]
    )


async def test_a_tool_s_progress_becomes_events_on_its_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = _agent(2)
    instrument(agent, tracer_provider=provider, capture_content=True)

    await agent.run("Fetch two pages.")

    span = one(exporter.get_finished_spans(), "execute_tool fetch")
    assert [(e.name, dict(e.attributes or {})) for e in span.events] == [
        (
            "agentflow.tool.progress",
            {
                "agentflow.tool.progress.message": f"page 1 of 2 for {SECRET}",
                "agentflow.tool.progress.data": '{"page":1}',
            },
        ),
        (
            "agentflow.tool.progress",
            {
                "agentflow.tool.progress.message": f"page 2 of 2 for {SECRET}",
                "agentflow.tool.progress.data": '{"page":2}',
            },
        ),
    ]
    assert "agentflow.tool.progress.dropped" not in attributes(span)


async def test_without_captured_content_progress_events_say_when_not_what(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = _agent(2)
    instrument(agent, tracer_provider=provider)

    await agent.run("Fetch two pages.")

    span = one(exporter.get_finished_spans(), "execute_tool fetch")
    assert [(e.name, dict(e.attributes or {})) for e in span.events] == [("agentflow.tool.progress", {})] * 2
    assert SECRET not in span.to_json()  # the message may quote arguments or results: content


async def test_a_chatty_tool_s_progress_is_capped_and_the_rest_counted(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = _agent(MAX_PROGRESS_EVENTS + 8)
    instrument(agent, tracer_provider=provider, capture_content=True)

    await agent.run("Fetch many pages.")

    span = one(exporter.get_finished_spans(), "execute_tool fetch")
    assert len(span.events) == MAX_PROGRESS_EVENTS
    last = dict(span.events[-1].attributes or {})
    assert last["agentflow.tool.progress.data"] == f'{{"page":{MAX_PROGRESS_EVENTS}}}'  # the first ones kept
    assert attributes(span)["agentflow.tool.progress.dropped"] == 8
