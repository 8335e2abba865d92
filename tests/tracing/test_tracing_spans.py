"""The spans of a run: one ``invoke_agent`` span, a ``chat`` span per model call and an ``execute_tool`` span
per tool call under it, with the GenAI conventions' names and attributes."""

from __future__ import annotations

import anyio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from tracing_support import EndCounter, add, attributes, named, one, parent_of, tool_loop_script, tree

from agentflow.agent.agent import Agent
from agentflow.agent.options import ModelSettings
from agentflow.agent.prompt import AgentModelResult
from agentflow.events import RunFinished
from agentflow.model.events import ModelCompleted, TextDelta
from agentflow.model.response import TokenUsage
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.result import AgentResult
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeChatModel, FakeModelClient, chat_reply, reply
from agentflow.tools import tool
from agentflow.tracing import instrument, traced


async def test_a_tool_loop_run_is_a_run_span_over_its_model_calls_and_tool_calls(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    agent = Agent(FakeModelClient(tool_loop_script()), tools=[add], name="Calculator")
    instrument(agent, tracer_provider=provider)

    result = await agent.run("Add 1 and 2, and 3 and 4.")

    assert result.output_text == "3 and 7."
    assert tree(exporter.get_finished_spans()) == [
        "invoke_agent Calculator",
        "  chat",
        "  execute_tool add",
        "  execute_tool add",
        "  chat",
    ]
    ends.assert_all_ended_once()


async def test_the_run_span_carries_the_agent_the_run_and_its_total_usage(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient(tool_loop_script()), tools=[add], name="Calculator")
    instrument(agent, tracer_provider=provider)

    result = await agent.run("Add.")

    run = one(exporter.get_finished_spans(), "invoke_agent Calculator")
    assert run.kind is SpanKind.INTERNAL
    assert run.status.status_code is StatusCode.UNSET
    assert attributes(run) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "_OTHER",
        "gen_ai.agent.name": "Calculator",
        "agentflow.run.id": result.run_id,
        "agentflow.runtime": "react",
        # The run's total under names of its own: backends that add up ``gen_ai.usage.*`` over a trace's
        # spans would otherwise count each model call twice (its chat span and the run's).
        "agentflow.run.usage.input_tokens": 250,
        "agentflow.run.usage.output_tokens": 30,
        "agentflow.run.stop_reason": "final_answer",
        "agentflow.run.steps": 2,
        "agentflow.run.tool_calls": 2,
    }


async def test_an_agent_without_a_name_of_its_own_gives_a_bare_invoke_agent(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient([reply("Hi.")]))  # its name is its runtime's, "react"
    instrument(agent, tracer_provider=provider)

    await agent.run("Hello")

    run = one(exporter.get_finished_spans(), "invoke_agent")
    assert "gen_ai.agent.name" not in attributes(run)


async def test_a_session_s_runs_carry_its_id_as_the_conversation_id(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient([reply("Hi."), reply("Hi again.")]))
    instrument(agent, tracer_provider=provider)

    chat = agent.session(session_id="user-42")
    await chat.run("Hello")
    await agent.run("A one-off question")

    first, one_off = named(exporter.get_finished_spans(), "invoke_agent")
    assert attributes(first)["gen_ai.conversation.id"] == "user-42"
    assert "gen_ai.conversation.id" not in attributes(one_off)


async def test_each_model_call_and_tool_call_says_what_it_was(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient(tool_loop_script()), tools=[add])
    instrument(agent, tracer_provider=provider)

    result = await agent.run("Add.")

    spans = exporter.get_finished_spans()
    first, second = named(spans, "chat")
    assert first.kind is SpanKind.CLIENT
    assert attributes(first) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "_OTHER",
        "agentflow.step": 0,
        "agentflow.model.purpose": "step",
        "agentflow.model.items": 1,
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.response.finish_reasons": ("tool_call",),
    }
    assert attributes(second)["agentflow.step"] == 1
    assert attributes(second)["gen_ai.response.finish_reasons"] == ("stop",)
    calls = named(spans, "execute_tool add")
    ids = [c.id for c in result.tool_calls]
    assert [attributes(c)["gen_ai.tool.call.id"] for c in calls] == ids
    assert attributes(calls[0]) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": ids[0],
        "gen_ai.tool.type": "function",
        "agentflow.step": 0,
    }
    assert all(c.kind is SpanKind.INTERNAL and c.status.status_code is StatusCode.UNSET for c in calls)


async def test_a_run_over_http_names_its_model_and_the_response_s_model_and_id(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    script = [
        Reply(tool_calls=[("add", {"a": 1, "b": 2})], usage=(30, 5), model="gpt-4.1-2025-04-14"),
        Reply(text="3.", usage=(40, 2), model="gpt-4.1-2025-04-14"),
    ]
    async with (
        ScriptedServer(script) as server,
        OpenAIChatModel(base_url=server.base_url, model="gpt-4.1") as m,
    ):
        agent = Agent(m, tools=[add], name="Calculator")
        instrument(agent, tracer_provider=provider)
        await agent.run("Add 1 and 2.")

    spans = exporter.get_finished_spans()
    assert tree(spans) == [
        "invoke_agent Calculator",
        "  chat gpt-4.1",
        "  execute_tool add",
        "  chat gpt-4.1",
    ]
    run = one(spans, "invoke_agent Calculator")
    assert attributes(run)["gen_ai.provider.name"] == "openai"
    assert attributes(run)["gen_ai.request.model"] == "gpt-4.1"
    for call in named(spans, "chat gpt-4.1"):
        got = attributes(call)
        assert got["gen_ai.provider.name"] == "openai"
        assert got["gen_ai.request.model"] == "gpt-4.1"
        assert got["gen_ai.response.model"] == "gpt-4.1-2025-04-14"
        assert str(got["gen_ai.response.id"]).startswith("chatcmpl")
    ends.assert_all_ended_once()


async def test_the_responses_api_gives_the_same_spans(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    script = [Reply(text="Hi.", usage=(12, 3), model="gpt-5-mini-2025")]
    async with (
        ScriptedServer(script) as server,
        OpenAIResponsesModel(base_url=server.base_url, model="gpt-5-mini") as model,
    ):
        agent = Agent(model, name="Greeter")
        instrument(agent, tracer_provider=provider)
        await agent.run("Hello")

    call = one(exporter.get_finished_spans(), "chat gpt-5-mini")
    assert attributes(call)["gen_ai.provider.name"] == "openai"
    assert attributes(call)["gen_ai.response.model"] == "gpt-5-mini-2025"
    assert attributes(call)["gen_ai.usage.input_tokens"] == 12
    assert attributes(call)["gen_ai.usage.output_tokens"] == 3


class _AddressedModel(FakeChatModel):
    """A chat model that says where it sends its calls, and which provider it is."""

    base_url = "https://llm.example.com:8443/v1"
    provider_name = "acme"


async def test_a_model_s_base_url_and_provider_name_become_server_and_provider_attributes(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    usage = TokenUsage(50, 10, 60, cached_input_tokens=30, cache_write_tokens=5, reasoning_tokens=4)
    agent = Agent(_AddressedModel([chat_reply("Hi.", usage=usage)]), name="Greeter")
    instrument(agent, tracer_provider=provider)

    await agent.run("Hello")

    call = one(exporter.get_finished_spans(), "chat")
    got = attributes(call)
    assert (got["server.address"], got["server.port"], got["gen_ai.provider.name"]) == (
        "llm.example.com",
        8443,
        "acme",
    )
    assert got["gen_ai.usage.cache_read.input_tokens"] == 30
    assert got["gen_ai.usage.cache_write.input_tokens"] == 5  # the current conventions' name
    assert got["gen_ai.usage.cache_creation.input_tokens"] == 5  # and that of semantic conventions 1.38-1.40
    assert got["gen_ai.usage.reasoning.output_tokens"] == 4


async def test_a_run_under_agent_override_describes_the_model_it_runs_on(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(OpenAIChatModel(base_url="http://127.0.0.1:9/v1", api_key="k", model="gpt-4.1"), name="Bot")
    instrument(agent, tracer_provider=provider)

    with agent.override(model=_AddressedModel([chat_reply("Hi.")])):
        await agent.run("Hello")

    run = attributes(one(exporter.get_finished_spans(), "invoke_agent Bot"))
    assert run["gen_ai.provider.name"] == "acme"  # the override's model, not the agent's OpenAI one
    assert "gen_ai.request.model" not in run


async def test_a_run_with_its_own_model_setting_names_that_model_on_its_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient([reply("Hi.")]), name="Bot", settings=ModelSettings(model="gpt-4o"))
    instrument(agent, tracer_provider=provider)
    await agent.run("Hello", settings=ModelSettings(model="gpt-4o-mini"))
    spans = exporter.get_finished_spans()
    assert attributes(one(spans, "invoke_agent Bot"))["gen_ai.request.model"] == "gpt-4o-mini"
    assert attributes(one(spans, "chat gpt-4o-mini"))["gen_ai.request.model"] == "gpt-4o-mini"


async def test_concurrent_tools_are_each_a_child_of_the_run_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    inside = 0
    all_in = anyio.Event()

    @tool
    async def wait_for_all(n: int) -> int:
        """Returns when all three calls are running."""
        nonlocal inside
        inside += 1
        if inside == 3:
            all_in.set()
        await all_in.wait()
        return n

    calls = [("wait_for_all", {"n": n}) for n in range(3)]
    agent = Agent(FakeModelClient([reply(tool_calls=calls), reply("Done.")]), tools=[wait_for_all])
    instrument(agent, tracer_provider=provider)

    with anyio.fail_after(10):
        await agent.run("Go.")

    spans = exporter.get_finished_spans()
    run = one(spans, "invoke_agent")
    tools = named(spans, "execute_tool wait_for_all")
    assert len(tools) == 3
    assert all(parent_of(t, spans) is run for t in tools)
    # They ran side by side: each started before any of them ended.
    assert max(t.start_time or 0 for t in tools) < min(t.end_time or 0 for t in tools)
    ends.assert_all_ended_once()


async def test_two_concurrent_runs_of_one_agent_keep_their_spans_apart(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    both_calling = anyio.Event()
    calling = 0

    @tool
    async def meet(who: str) -> str:
        """Returns once both runs are in their tool call."""
        nonlocal calling
        calling += 1
        if calling == 2:
            both_calling.set()
        await both_calling.wait()
        return who

    def script(who: str) -> list[AgentModelResult]:
        return [reply(tool_calls=[("meet", {"who": who})]), reply(f"Met {who}.")]

    # One client serves both runs, in the order they call it: both tool turns, then both answers.
    turns = [script("a")[0], script("b")[0], script("a")[1], script("b")[1]]
    agent = Agent(FakeModelClient(turns), tools=[meet], name="Host")
    instrument(agent, tracer_provider=provider)

    results: dict[str, AgentResult] = {}

    async def run(who: str) -> None:
        results[who] = await agent.run(f"Meet {who}.")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "a")
            tg.start_soon(run, "b")

    spans = exporter.get_finished_spans()
    runs = named(spans, "invoke_agent Host")
    assert len(runs) == 2
    trace_ids = {run.context.trace_id for run in runs if run.context is not None}
    assert len(trace_ids) == 2  # two roots: two traces
    for run in runs:
        run_id = attributes(run)["agentflow.run.id"]
        children = [s for s in spans if s.parent is not None and s.parent.span_id == run.context.span_id]
        assert sorted(s.name for s in children) == ["chat", "chat", "execute_tool meet"]
        assert {r.run_id for r in results.values()} >= {run_id}
    ends.assert_all_ended_once()


async def test_a_streamed_run_gives_the_same_spans(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    agent = Agent(FakeModelClient(tool_loop_script()), tools=[add], name="Calculator")
    instrument(agent, tracer_provider=provider)

    async with agent.stream("Add.") as run:
        texts = [e.text async for e in run if isinstance(e, TextDelta)]

    assert "".join(texts) == "3 and 7."
    assert tree(exporter.get_finished_spans()) == [
        "invoke_agent Calculator",
        "  chat",
        "  execute_tool add",
        "  execute_tool add",
        "  chat",
    ]
    ends.assert_all_ended_once()


async def test_tracing_does_not_make_a_run_stream(provider: TracerProvider) -> None:
    async with (
        ScriptedServer([Reply(text="Hi.")]) as server,
        OpenAIChatModel(base_url=server.base_url, model="m") as m,
    ):
        agent = Agent(m)
        instrument(agent, tracer_provider=provider)
        await agent.run("Hello")
    (request,) = server.requests
    assert not request.stream  # a blocking call: the tracer takes no deltas


async def test_traced_traces_one_run_only(provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    agent = Agent(FakeModelClient([reply("One."), reply("Two.")]), name="Echo")
    seen: list[RunFinished] = []

    await agent.run("1", on=[*traced(agent, tracer_provider=provider), (RunFinished, seen.append)])
    await agent.run("2")

    assert [s.name for s in exporter.get_finished_spans()] == ["chat", "invoke_agent Echo"]
    assert len(seen) == 1


async def test_a_streamed_call_gives_its_time_to_first_chunk_and_a_blocking_one_none(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient([*tool_loop_script(), reply("Blocking.")]), tools=[add], name="Calculator")
    instrument(agent, tracer_provider=provider)
    async with agent.stream("Add.") as run:
        completed = [e async for e in run if isinstance(e, ModelCompleted)]
    assert all(e.time_to_first_chunk is not None and e.time_to_first_chunk >= 0 for e in completed)
    streamed = [attributes(s) for s in named(exporter.get_finished_spans(), "chat")]
    assert len(streamed) == 2
    for chat in streamed:
        assert chat["gen_ai.response.time_to_first_chunk"] >= 0
        assert chat["gen_ai.request.stream"] is True

    exporter.clear()
    await agent.run("Once more.")  # blocking: no first chunk to time
    (blocking,) = (attributes(s) for s in named(exporter.get_finished_spans(), "chat"))
    assert not {"gen_ai.response.time_to_first_chunk", "gen_ai.request.stream"} & set(blocking)


async def test_model_calls_of_a_session_s_run_carry_its_conversation_id(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient(tool_loop_script()), tools=[add])
    instrument(agent, tracer_provider=provider)

    await agent.session(session_id="user-42").run("Add.")

    for call in named(exporter.get_finished_spans(), "chat"):
        assert attributes(call)["gen_ai.conversation.id"] == "user-42"
