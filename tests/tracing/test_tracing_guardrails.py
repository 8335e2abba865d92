"""A tripped guardrail on the run's span: an ``agentflow.guardrail_tripped`` event (its kind and name; the
reason only with content capture), before the failed run's exception event; every span ended once."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from tracing_support import EndCounter, attributes, one

from agentflow import GuardrailContext, OutputGuardrailTripped, Tripwire
from agentflow.agent.agent import Agent
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tracing import instrument


def too_short(ctx: GuardrailContext[None], answer: str) -> Tripwire | None:
    return Tripwire("the answer is one word") if " " not in answer else None


@pytest.mark.parametrize("capture", [False, True])
async def test_a_trip_is_an_event_on_the_failed_run_s_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter, capture: bool
) -> None:
    agent = Agent(FakeModelClient([reply("Yes")]), name="Checked", output_guardrails=[too_short])
    instrument(agent, tracer_provider=provider, capture_content=capture)
    with pytest.raises(OutputGuardrailTripped):
        await agent.run("Hello")
    run = one(exporter.get_finished_spans(), "invoke_agent Checked")
    assert run.status.status_code is StatusCode.ERROR
    assert attributes(run)["error.type"] == "OutputGuardrailTripped"
    tripped, failed = run.events
    assert (tripped.name, failed.name) == ("agentflow.guardrail_tripped", "exception")
    expected = {"agentflow.guardrail.kind": "output", "agentflow.guardrail.name": "too_short"}
    if capture:
        expected["agentflow.guardrail.reason"] = "the answer is one word"
    assert dict(tripped.attributes or {}) == expected
    ends.assert_all_ended_once()
