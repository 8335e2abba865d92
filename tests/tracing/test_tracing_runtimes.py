"""The spans of the runtimes that do more than call tools: DeepResearch's plans (a ``plan`` span over the
planner's model call) and CodeAct's code steps (an ``execute_code`` span over the code's tool calls)."""

from __future__ import annotations

import orjson
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from tracing_support import EndCounter, add, attributes, named, one, parent_of, tree

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.runtimes.codeact import CodeActRuntime
from agentflow.runtimes.planner import ModelPlanner
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeChatModel, FakeModelClient, chat_reply, reply
from agentflow.tracing import instrument

PLAN = '{"steps": ["Add the numbers", "Answer"]}'
REPLAN = (
    '{"steps": [{"step": "Add the numbers", "status": "done"}, {"step": "Answer", "status": "in_progress"}]}'
)


async def test_a_plan_is_a_span_over_the_planner_s_model_call(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    planner = ModelPlanner(
        FakeChatModel([chat_reply(PLAN, usage=(40, 12)), chat_reply(REPLAN, usage=(70, 20))])
    )
    script = [reply(tool_calls=[("add", {"a": 1, "b": 2})]), reply("It is 3.")]
    agent = Agents.deep_research(
        FakeModelClient(script), planner=planner, replan_every=1, tools=[add], name="Researcher"
    )
    instrument(agent, tracer_provider=provider)

    await agent.run("What is 1 + 2?")

    spans = exporter.get_finished_spans()
    assert tree(spans) == [
        "invoke_agent Researcher",
        "  plan Researcher",
        "    chat",
        "  chat",
        "  execute_tool add",
        "  plan Researcher",
        "    chat",
        "  chat",
    ]
    first, second = named(spans, "plan Researcher")
    assert attributes(first) == {
        "gen_ai.operation.name": "plan",
        "gen_ai.agent.name": "Researcher",
        "agentflow.step": 0,
        "agentflow.plan.revision": 0,
        "agentflow.plan.steps": 2,
    }
    assert attributes(second)["agentflow.plan.revision"] == 1
    planning_call = [s for s in named(spans, "chat") if parent_of(s, spans) is first]
    (call,) = planning_call
    assert attributes(call)["agentflow.model.purpose"] == "plan"
    assert attributes(call)["gen_ai.usage.input_tokens"] == 40
    assert attributes(call)["gen_ai.usage.output_tokens"] == 12
    ends.assert_all_ended_once()


async def test_a_plan_made_without_a_model_call_is_a_span_too(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agents.deep_research(FakeModelClient([reply("Done.")]), planner="simple")
    instrument(agent, tracer_provider=provider)

    await agent.run("Do it.")

    assert tree(exporter.get_finished_spans()) == ["invoke_agent", "  plan", "  chat"]
    assert attributes(one(exporter.get_finished_spans(), "plan"))["agentflow.plan.steps"] == 1


async def test_a_failed_planning_call_is_where_the_run_failed(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    planner = ModelPlanner(FakeChatModel([RuntimeError("planner down")]))
    agent = Agents.deep_research(FakeModelClient([]), planner=planner)
    instrument(agent, tracer_provider=provider)

    with pytest.raises(RuntimeError, match="planner down"):
        await agent.run("Do it.")

    spans = exporter.get_finished_spans()
    assert tree(spans) == ["invoke_agent", "  plan", "    chat"]
    for name in ("invoke_agent", "plan", "chat"):
        assert one(spans, name).status.status_code is StatusCode.ERROR, name
        assert attributes(one(spans, name))["error.type"] == "RuntimeError"
    ends.assert_all_ended_once()


def _code(source: str) -> str:
    return orjson.dumps({"type": "code", "language": "python", "code": source}).decode()


async def test_a_code_step_is_a_span_over_the_tool_calls_its_code_makes(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    # A step that fails goes back to the model; one that succeeds ends the run with its value.
    turns = [Reply(text=_code("1 / 0")), Reply(text=_code("add(a=1, b=2) + add(a=3, b=4)"))]
    async with (
        ScriptedServer(turns) as server,
        OpenAIChatModel(base_url=server.base_url, model="gpt-test") as model,
    ):
        agent = Agent(model, runtime=CodeActRuntime(), tools=[add], name="Coder")
        instrument(agent, tracer_provider=provider)
        result = await agent.run("Add 1, 2, 3 and 4.")

    assert result.output_text == "10"
    spans = exporter.get_finished_spans()
    assert tree(spans) == [
        "invoke_agent Coder",
        "  chat gpt-test",
        "  execute_code",
        "  chat gpt-test",
        "  execute_code",
        "    execute_tool add",
        "    execute_tool add",
    ]
    failed, ok = named(spans, "execute_code")
    assert attributes(ok) == {
        "gen_ai.operation.name": "execute_code",
        "agentflow.step": 1,
        "agentflow.code.language": "python",
        "agentflow.code.ok": True,
    }
    assert failed.status.status_code is StatusCode.ERROR
    assert attributes(failed)["error.type"] == "exception"
    ends.assert_all_ended_once()
