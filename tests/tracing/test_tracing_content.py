"""What a span holds of a run's content: nothing by default; with ``capture_content=True`` the run's input and
answer, each model call's answer and tool calls, each tool call's arguments and result, cut to
``content_limit``."""

from __future__ import annotations

import orjson
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from tracing_support import CONTENT_KEYS, attributes, named, one

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.runtimes.planner import ModelPlanner
from agentflow.testing.fake import FakeChatModel, FakeModelClient, chat_reply, reply
from agentflow.tools import tool
from agentflow.tracing import instrument

SECRET = "hunter2"


@tool
def vault(name: str) -> str:
    """Reads a secret from the vault."""
    if name == "missing":
        raise KeyError(f"no secret for {name} beside {SECRET}")
    return f"the secret of {name} is {SECRET}"


def _script() -> list[object]:
    return [
        reply(
            f"Let me look ({SECRET}).",
            tool_calls=[("vault", {"name": "alice"}), ("vault", {"name": "missing"})],
            reasoning=f"thinking about {SECRET}",
        ),
        reply(f"Alice's secret is {SECRET}."),
    ]


async def test_no_content_is_recorded_by_default(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient(_script()), tools=[vault])
    instrument(agent, tracer_provider=provider)

    await agent.run(f"What is Alice's secret? Mine is {SECRET}.")

    spans = exporter.get_finished_spans()
    assert len(spans) == 5
    for span in spans:
        assert not CONTENT_KEYS & set(attributes(span)), span.name
        assert SECRET not in span.to_json(), span.name  # nowhere: attributes, events, status


async def test_with_capture_content_the_spans_hold_the_run_s_content(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient(_script()), tools=[vault], name="Keeper")
    instrument(agent, tracer_provider=provider, capture_content=True)

    result = await agent.run("What is Alice's secret?")

    spans = exporter.get_finished_spans()
    run = attributes(one(spans, "invoke_agent Keeper"))
    assert orjson.loads(run["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "What is Alice's secret?"}]}
    ]
    assert orjson.loads(run["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": f"Alice's secret is {SECRET}."}]}
    ]
    first = attributes(named(spans, "chat")[0])
    alice, missing = result.tool_calls
    assert orjson.loads(first["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": f"thinking about {SECRET}"},
                {"type": "text", "content": f"Let me look ({SECRET})."},
                # The arguments as a JSON value, as the conventions ask (the text when not valid JSON).
                {"type": "tool_call", "id": alice.id, "name": "vault", "arguments": {"name": "alice"}},
                {"type": "tool_call", "id": missing.id, "name": "vault", "arguments": {"name": "missing"}},
            ],
            "finish_reason": "tool_call",
        }
    ]
    found, failed = named(spans, "execute_tool vault")
    assert orjson.loads(attributes(found)["gen_ai.tool.call.arguments"]) == {"name": "alice"}
    assert attributes(found)["gen_ai.tool.call.result"] == f"the secret of alice is {SECRET}"
    assert "gen_ai.tool.call.result" not in attributes(failed)  # a result only of a call that succeeded
    assert failed.status.status_code is StatusCode.ERROR
    assert SECRET in (failed.status.description or "")  # the failure's message, with content captured


async def test_captured_content_is_cut_to_the_limit_and_stays_json(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    long_answer = "word " * 100
    script = [reply(tool_calls=[("vault", {"name": "x" * 50})]), reply(long_answer)]
    agent = Agent(FakeModelClient(script), tools=[vault])
    instrument(agent, tracer_provider=provider, capture_content=True, content_limit=20)

    await agent.run("q" * 100)

    spans = exporter.get_finished_spans()
    run = attributes(one(spans, "invoke_agent"))
    (message,) = orjson.loads(run["gen_ai.input.messages"])
    assert message["parts"][0]["content"] == "q" * 19 + "…"
    (answer,) = orjson.loads(run["gen_ai.output.messages"])
    assert answer["parts"][0]["content"] == long_answer[:19] + "…"
    call = attributes(one(spans, "execute_tool vault"))
    assert len(str(call["gen_ai.tool.call.arguments"])) == 20  # the model's own JSON, cut as it is
    assert len(str(call["gen_ai.tool.call.result"])) == 20


async def test_a_plan_s_text_is_content_too(provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    plan = f'{{"steps": ["Find {SECRET}", "Answer"]}}'
    for capture in (False, True):
        exporter.clear()
        planner = ModelPlanner(FakeChatModel([chat_reply(plan, usage=(30, 10))]))
        agent = Agents.deep_research(FakeModelClient([reply("Done.")]), planner=planner)
        instrument(agent, tracer_provider=provider, capture_content=capture)

        await agent.run("Research.")

        planned = attributes(one(exporter.get_finished_spans(), "plan"))
        assert ("agentflow.plan.text" in planned) is capture
        assert all(
            (SECRET in s.to_json()) is capture for s in exporter.get_finished_spans() if s.name == "plan"
        )
