"""A handoff on the run's span: an ``agentflow.handed_off`` event naming both agents and the call; the run
stays one span, and the target's model calls are ``chat`` spans of its own model."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tracing_support import EndCounter, attributes, one

from agentflow import ModelSettings
from agentflow.agent.agent import Agent
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tracing import instrument


async def test_a_handoff_is_an_event_on_the_run_s_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    billing = Agent(
        FakeModelClient([reply("refunded")]), name="Billing", settings=ModelSettings(model="billing-m")
    )
    triage = Agent(
        FakeModelClient([reply(tool_calls=[("c1", "transfer_to_billing", {})])]),
        name="Triage",
        settings=ModelSettings(model="triage-m"),
        handoffs=[billing],
    )
    instrument(triage, tracer_provider=provider)
    assert (await triage.run("refund me")).output == "refunded"
    spans = exporter.get_finished_spans()
    run = one(spans, "invoke_agent Triage")
    (handed,) = [e for e in run.events if e.name == "agentflow.handed_off"]
    assert dict(handed.attributes or {}) == {
        "agentflow.handoff.source": "Triage",
        "agentflow.handoff.target": "Billing",
        "agentflow.handoff.call_id": "c1",
    }
    chats = sorted(s.name for s in spans if s.name.startswith("chat"))
    assert chats == ["chat billing-m", "chat triage-m"]
    assert attributes(one(spans, "chat billing-m"))["gen_ai.request.model"] == "billing-m"
    ends.assert_all_ended_once()
