"""Each model call's messages when content is captured: ``gen_ai.input.messages`` on its ``chat`` span, read
from the prompt the call sent (a session's earlier turns, a trimmed memory and a planner's own prompt
included; tool results in call order), the newest within ``messages_limit``; switched on by
``capture_content=True`` or the standard ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import orjson
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tracing_support import add, attributes, named, tool_loop_script

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.agent.memory import WindowedMemory
from agentflow.runtimes.planner import AgentModelPlanner, ModelPlanner
from agentflow.testing.fake import FakeChatModel, FakeModelClient, chat_reply, reply
from agentflow.tools import tool
from agentflow.tracing import instrument, traced

ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def _messages(span_attributes: dict[str, Any]) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = orjson.loads(span_attributes["gen_ai.input.messages"])
    return loaded


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def _result(call_id: str, output: str) -> dict[str, Any]:
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": output}]}


async def test_each_model_call_carries_the_messages_it_was_sent(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient(tool_loop_script()), tools=[add])
    instrument(agent, tracer_provider=provider, capture_content=True)

    result = await agent.run("Add 1 and 2, and 3 and 4.")

    first, second = (attributes(s) for s in named(exporter.get_finished_spans(), "chat"))
    assert _messages(first) == [_user("Add 1 and 2, and 3 and 4.")]
    one_two, three_four = result.tool_calls
    assert _messages(second) == [
        _user("Add 1 and 2, and 3 and 4."),
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": one_two.id, "name": "add", "arguments": {"a": 1, "b": 2}},
                {"type": "tool_call", "id": three_four.id, "name": "add", "arguments": {"a": 3, "b": 4}},
            ],
        },
        _result(one_two.id, "3"),
        _result(three_four.id, "7"),
    ]
    # Everything the calls were sent is shown: nothing left out.
    assert "agentflow.input.dropped_messages" not in set(first) | set(second)


async def test_tool_results_are_in_the_order_of_the_calls_not_the_order_they_finished(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    second_done = anyio.Event()

    @tool
    async def step(n: int) -> str:
        """Finishes the first call last."""
        if n == 1:
            await second_done.wait()
        else:
            second_done.set()
        return f"done {n}"

    script = [reply(tool_calls=[("c1", "step", {"n": 1}), ("c2", "step", {"n": 2})]), reply("Both done.")]
    agent = Agent(FakeModelClient(script), tools=[step])
    instrument(agent, tracer_provider=provider, capture_content=True)

    with anyio.fail_after(10):
        await agent.run("Go.")

    spans = exporter.get_finished_spans()
    by_end = sorted(named(spans, "execute_tool step"), key=lambda s: s.end_time or 0)
    assert attributes(by_end[0])["gen_ai.tool.call.id"] == "c2"  # c2 finished first…
    messages = _messages(attributes(named(spans, "chat")[1]))
    assert messages[2:] == [_result("c1", "done 1"), _result("c2", "done 2")]  # …but c1 comes first


async def test_a_session_s_earlier_turns_are_among_the_messages_a_call_was_sent(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient([reply("Hi."), reply("Still here.")]))
    instrument(agent, tracer_provider=provider, capture_content=True)
    chat = agent.session()

    await chat.run("Hello")
    await chat.run("Are you there?")

    first, second = (attributes(s) for s in named(exporter.get_finished_spans(), "chat"))
    assert _messages(first) == [_user("Hello")]
    # The first run's question and answer were sent too, before this run's question.
    assert _messages(second) == [
        _user("Hello"),
        {"role": "assistant", "parts": [{"type": "text", "content": "Hi."}]},
        _user("Are you there?"),
    ]
    assert second["agentflow.model.items"] == 3


async def test_a_trimmed_memory_s_call_shows_what_the_memory_kept(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    script = [reply(tool_calls=[(f"c{n}", "add", {"a": n, "b": n})]) for n in range(3)] + [reply("Done.")]
    # Keeps the question and the latest call with its result: 3 items from the third call on.
    agent = Agent(FakeModelClient(script), tools=[add], memory=lambda: WindowedMemory(max_items=3))
    instrument(agent, tracer_provider=provider, capture_content=True)

    await agent.run("Add them all.")

    calls = [attributes(s) for s in named(exporter.get_finished_spans(), "chat")]
    assert [c["agentflow.model.items"] for c in calls] == [1, 3, 3, 3]
    assert _messages(calls[-1]) == [
        _user("Add them all."),
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c2", "name": "add", "arguments": {"a": 2, "b": 2}}],
        },
        _result("c2", "4"),
    ]


async def test_older_messages_give_way_to_the_messages_limit_the_newest_stays(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    script = [reply(tool_calls=[("add", {"a": n, "b": 1})]) for n in range(3)] + [reply("Done.")]
    agent = Agent(FakeModelClient(script), tools=[add])
    instrument(agent, tracer_provider=provider, capture_content=True, messages_limit=200)

    await agent.run("Count up.")

    last = attributes(named(exporter.get_finished_spans(), "chat")[-1])
    assert len(str(last["gen_ai.input.messages"])) <= 200
    shown = _messages(last)
    assert shown[-1]["role"] == "tool"
    assert len(shown) + last["agentflow.input.dropped_messages"] == 7  # the question, 3 calls, 3 results


async def test_a_planner_s_call_carries_the_planner_s_own_prompt(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    planner = ModelPlanner(
        FakeChatModel([chat_reply('{"steps": ["Look", "Answer"]}')]), parameters={"temperature": 0}
    )
    agent = Agents.deep_research(FakeModelClient([reply("Done.")]), planner=planner)
    instrument(agent, tracer_provider=provider, capture_content=True)

    await agent.run("Research.")

    planned, step = (attributes(s) for s in named(exporter.get_finished_spans(), "chat"))
    assert planned["agentflow.model.purpose"] == "plan"
    # A ChatModel planner's request: its system message and the planning input, as Chat sends them.
    request = planner.request("Research.")
    system, question = request.messages
    assert _messages(planned) == [
        {"role": "system", "parts": [{"type": "text", "content": system.text}]},
        _user(str(question.text)),
    ]
    assert planned["gen_ai.request.temperature"] == 0.0  # the planner's parameters
    assert "gen_ai.system_instructions" not in planned
    # The step's call was sent the plan too: a message the runtime wrote to memory.
    plan_message = _messages(step)[-1]
    assert (plan_message["role"], plan_message["parts"][0]["content"]) == (
        "system",
        "Plan:\n1. Look\n2. Answer\n",
    )
    assert _messages(step)[0] == _user("Research.")


async def test_an_agent_model_planner_s_system_prompt_is_its_call_s_system_instructions(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = FakeModelClient([reply('{"steps": ["Look"]}'), reply("Done.")])
    agent = Agents.deep_research(model, planner=AgentModelPlanner())
    instrument(agent, tracer_provider=provider, capture_content=True)

    await agent.run("Research.")

    planned = attributes(named(exporter.get_finished_spans(), "chat")[0])
    prompt = AgentModelPlanner().request("Research.")
    assert orjson.loads(planned["gen_ai.system_instructions"]) == [
        {"type": "text", "content": prompt.system_prompt}
    ]
    assert _messages(planned) == [_user(prompt.items[0].text)]


@pytest.mark.parametrize("setting", ["true", "TRUE", "span_only", "SPAN_AND_EVENT"])
async def test_the_standard_environment_variable_switches_capture_on(
    setting: str, provider: TracerProvider, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, setting)
    agent = Agent(FakeModelClient([reply("Hi.")]))

    await agent.run("Hello", on=traced(agent, tracer_provider=provider))

    chat = attributes(named(exporter.get_finished_spans(), "chat")[0])
    assert _messages(chat) == [_user("Hello")]


@pytest.mark.parametrize("setting", ["false", "NO_CONTENT", "EVENT_ONLY", ""])
async def test_other_settings_of_the_variable_capture_nothing(
    setting: str, provider: TracerProvider, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, setting)
    agent = Agent(FakeModelClient([reply("Hi.")]))

    await agent.run("Hello", on=traced(agent, tracer_provider=provider))

    assert all("gen_ai.input.messages" not in attributes(s) for s in exporter.get_finished_spans())


async def test_an_explicit_capture_content_wins_over_the_variable(
    provider: TracerProvider, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "true")
    agent = Agent(FakeModelClient([reply("Hi.")]))

    await agent.run("Hello", on=traced(agent, tracer_provider=provider, capture_content=False))

    assert all("gen_ai.input.messages" not in attributes(s) for s in exporter.get_finished_spans())


def test_a_value_of_the_variable_it_does_not_know_captures_nothing_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(ENV, "yes please")
    agent = Agent(FakeModelClient([]))

    with caplog.at_level(logging.WARNING, logger="agentflow.tracing"):
        ((_, recorder),) = traced(agent)

    assert recorder.capture_content is False  # type: ignore[attr-defined]
    assert f"{ENV}='yes please'" in caplog.text


def test_a_bad_messages_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="messages_limit"):
        traced(Agent(FakeModelClient([])), messages_limit=0)
