"""How runs end, on their spans: a failed run (status ERROR, an exception event), a cancelled one (every span
ended, the run's stop reason), failed and refused tool calls; every span ended exactly once."""

from __future__ import annotations

import anyio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from tracing_support import EndCounter, add, attributes, named, one, tree

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.events import ModelRequest, RunCancelled, RunStarted, ToolStarted
from agentflow.http.retry import RetryPolicy
from agentflow.model.errors import RateLimitError
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.result import StopReason
from agentflow.testing import Fault, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool
from agentflow.tracing import instrument


async def test_a_failed_run_is_an_error_with_an_exception_event_on_its_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    async with ScriptedServer([Fault.status(429)]) as server:
        port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4.1", retry=RetryPolicy.none())
        async with model:
            agent = Agent(model, name="Unlucky")
            instrument(agent, tracer_provider=provider)
            try:
                await agent.run("Hello")
            except RateLimitError:
                pass
            else:
                raise AssertionError("the run should have failed")

    spans = exporter.get_finished_spans()
    assert tree(spans) == ["invoke_agent Unlucky", "  chat gpt-4.1"]
    run = one(spans, "invoke_agent Unlucky")
    assert run.status.status_code is StatusCode.ERROR
    assert (run.status.description or "").startswith("RateLimitError: ")
    assert attributes(run)["error.type"] == "RateLimitError"
    assert attributes(run)["agentflow.run.stop_reason"] == "error"
    (event,) = run.events
    assert event.name == "exception"
    assert dict(event.attributes or {})["exception.type"] == "RateLimitError"
    # The model call it failed in is where the error was, and it was cut short.
    call = one(spans, "chat gpt-4.1")
    assert call.status.status_code is StatusCode.ERROR
    assert attributes(call)["error.type"] == "RateLimitError"
    assert attributes(call)["agentflow.interrupted"] is True
    assert attributes(call)["gen_ai.response.finish_reasons"] == ("error",)  # no answer came
    assert (attributes(call)["server.address"], attributes(call)["server.port"]) == ("127.0.0.1", port)
    ends.assert_all_ended_once()


async def test_a_tool_that_raises_is_an_error_span_in_a_run_that_goes_on(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    @tool
    def explode(secret: str) -> str:
        """Always fails."""
        raise ValueError(f"cannot handle {secret}")

    script = [reply(tool_calls=[("explode", {"secret": "hunter2"})]), reply("Sorry.")]
    agent = Agent(FakeModelClient(script), tools=[explode])
    instrument(agent, tracer_provider=provider)

    await agent.run("Try it.")

    spans = exporter.get_finished_spans()
    call = one(spans, "execute_tool explode")
    assert call.status.status_code is StatusCode.ERROR
    assert call.status.description == "exception"  # the message quotes the arguments: content, not captured
    assert attributes(call)["error.type"] == "exception"
    assert one(spans, "invoke_agent").status.status_code is StatusCode.UNSET


async def test_a_run_cancelled_mid_tool_ends_every_span_and_says_it_was_cancelled(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    @tool
    async def hang() -> str:
        """Never returns."""
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    agent = Agent(
        FakeModelClient([reply(tool_calls=[("hang", {}), ("add", {"a": 1, "b": 1})])]), tools=[hang, add]
    )
    instrument(agent, tracer_provider=provider)

    with anyio.fail_after(10):
        async with agent.stream("Go.") as run:
            async for event in run:
                if isinstance(event, ToolStarted) and event.call.name == "hang":
                    await run.cancel()

    assert run.result.stop_reason is StopReason.CANCELLED
    spans = exporter.get_finished_spans()
    assert tree(spans) == ["invoke_agent", "  chat", "  execute_tool hang", "  execute_tool add"]
    top = one(spans, "invoke_agent")
    assert top.status.status_code is StatusCode.UNSET  # a cancel is no error
    assert attributes(top)["agentflow.run.stop_reason"] == "cancelled"
    hung = one(spans, "execute_tool hang")
    assert attributes(hung)["error.type"] == "cancelled"  # its synthetic result, as the model would see it
    ends.assert_all_ended_once()


async def test_cancelling_the_task_of_agent_run_mid_tool_ends_every_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    started = anyio.Event()

    @tool
    async def hang() -> str:
        """Never returns."""
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    agent = Agent(FakeModelClient([reply(tool_calls=[("hang", {})])]), tools=[hang])
    instrument(agent, tracer_provider=provider)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.run, "Go.")
            await started.wait()
            tg.cancel_scope.cancel()

    spans = exporter.get_finished_spans()
    assert attributes(one(spans, "invoke_agent"))["agentflow.run.stop_reason"] == "cancelled"
    assert one(spans, "execute_tool hang").end_time is not None
    ends.assert_all_ended_once()


async def test_a_model_call_cut_by_a_cancel_is_ended_as_interrupted(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    asked = anyio.Event()

    async def hang(prompt: object) -> object:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    agent = Agent(FakeModelClient([hang]))
    instrument(agent, tracer_provider=provider)

    with anyio.fail_after(10):
        async with agent.stream("Hello") as run:
            async for event in run:
                if isinstance(event, ModelRequest):
                    await asked.wait()
                    await run.cancel()

    spans = exporter.get_finished_spans()
    call = one(spans, "chat")
    assert attributes(call)["agentflow.interrupted"] is True
    assert attributes(call)["gen_ai.response.finish_reasons"] == ("error",)  # no answer came
    assert call.status.status_code is StatusCode.UNSET  # cut by a cancel, not failed
    assert attributes(one(spans, "invoke_agent"))["agentflow.run.stop_reason"] == "cancelled"
    ends.assert_all_ended_once()


async def test_a_call_refused_at_the_tool_call_limit_is_a_span_that_never_started(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    calls = [("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})]
    agent = Agent(
        FakeModelClient([reply(tool_calls=calls)]), tools=[add], options=AgentOptions(max_tool_calls=1)
    )
    instrument(agent, tracer_provider=provider)

    result = await agent.run("Add.")

    assert result.stop_reason is StopReason.MAX_TOOL_CALLS
    ran, refused = named(exporter.get_finished_spans(), "execute_tool add")
    assert "agentflow.tool.started" not in attributes(ran)
    assert attributes(refused)["agentflow.tool.started"] is False
    assert attributes(refused)["error.type"] == "cancelled"
    assert refused.status.status_code is StatusCode.ERROR
    assert attributes(one(exporter.get_finished_spans(), "invoke_agent"))["agentflow.run.stop_reason"] == (
        "max_tool_calls"
    )
    ends.assert_all_ended_once()


async def test_a_session_run_cancelled_before_its_turn_still_has_its_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, ends: EndCounter
) -> None:
    first_in_tool = anyio.Event()
    release = anyio.Event()

    @tool
    async def block() -> str:
        """Returns once released."""
        first_in_tool.set()
        await release.wait()
        return "ok"

    agent = Agent(FakeModelClient([reply(tool_calls=[("block", {})]), reply("Done.")]), tools=[block])
    instrument(agent, tracer_provider=provider)
    chat = agent.session()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(chat.run, "First.")
            await first_in_tool.wait()
            async with chat.stream("Second.") as second:  # waits for the first run's turn to end
                await second.cancel()
                kinds = [type(e) async for e in second]
            release.set()

    assert RunStarted not in kinds
    assert kinds[-1] is RunCancelled
    runs = named(exporter.get_finished_spans(), "invoke_agent")
    assert sorted(attributes(r)["agentflow.run.stop_reason"] for r in runs) == ["cancelled", "final_answer"]
    ends.assert_all_ended_once()
