"""A stored session's run saves its conversation before its terminal event: a save that fails ends the run
with ``RunFailed(SessionStoreError)``, seen by every consumer (the events, ``sse_stream``, a trace,
``run()``), and the run still has exactly one terminal event."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from session_store_support import OtherProcessStore, ScriptedStore, texts

from agentflow import SessionStoreError, SQLiteStore, run_result
from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.agent.stores import SessionConflictError
from agentflow.events import RunCancelled, RunFailed, RunFinished
from agentflow.model.errors import ServerError
from agentflow.model.events import Event
from agentflow.result import AgentResult, StopReason
from agentflow.runtimes.base import AgentRuntime
from agentflow.runtimes.context import RunContext
from agentflow.sse import sse_stream
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

TERMINALS = (RunFinished, RunFailed, RunCancelled)


def terminals(events: list[Event]) -> list[Event]:
    return [event for event in events if isinstance(event, TERMINALS)]


async def test_a_streamed_run_whose_save_fails_ends_with_run_failed_for_the_loop() -> None:
    store = ScriptedStore()
    store.fail_appends = 1
    chat = Agent(FakeModelClient([reply("a1"), reply("a2")])).session(session_id="s", store=store)

    async with chat.stream("q1") as run:
        events = [event async for event in run]
        # The loop ended on the run's end: nothing of the run is left to wait for.
        assert run.done
        assert isinstance(run.error, SessionStoreError)

    assert terminals(events) == [events[-1]]
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "SessionStoreError"
    assert failed.partial is not None
    assert failed.partial.output_text == "a1"
    assert run_result(run.error) is failed.partial
    # The items stay in memory and go with the next run's.
    await chat.run("q2")
    assert texts(await store.load("s")) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2"]


async def test_sse_stream_of_a_run_whose_save_fails_ends_with_its_run_failed_frame() -> None:
    store = ScriptedStore()
    store.fail_appends = 1
    chat = Agent(FakeModelClient([reply("a1")])).session(session_id="s", store=store)

    async with chat.stream("q1") as run:
        frames = [frame async for frame in sse_stream(run)]

    kinds = [frame.split(b"\n", 1)[0] for frame in frames]
    assert kinds[-1] == b"event: run_failed"
    assert kinds.count(b"event: run_finished") == 0
    assert b'"error_type":"SessionStoreError"' in frames[-1]


async def test_a_traced_run_whose_save_fails_is_a_failed_span() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import StatusCode

    from agentflow.tracing import traced

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = ScriptedStore()
    store.fail_appends = 1
    agent = Agent(FakeModelClient([reply("a1")]), name="A")
    chat = agent.session(session_id="s", store=store)

    with pytest.raises(SessionStoreError):
        await chat.run("q1", on=traced(agent, tracer_provider=provider))

    [span] = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert span.status.status_code is StatusCode.ERROR


async def test_a_failed_save_is_logged_at_error(caplog: pytest.LogCaptureFixture) -> None:
    store = ScriptedStore()
    store.fail_appends = 1
    chat = Agent(FakeModelClient([reply("a1")])).session(session_id="s", store=store)

    with caplog.at_level(logging.ERROR, logger="agentflow"), pytest.raises(SessionStoreError):
        await chat.run("q1")

    [record] = [r for r in caplog.records if r.name == "agentflow"]
    assert record.levelno == logging.ERROR
    assert "saving session 's'" in record.getMessage()
    assert record.exc_info is not None


async def test_a_conflict_is_logged_as_a_warning_without_a_traceback(
    caplog: pytest.LogCaptureFixture, tmp_path: Any
) -> None:
    path = tmp_path / "chats.db"
    async with SQLiteStore(path) as mine, OtherProcessStore(path) as theirs:
        chat = Agent(FakeModelClient([reply("mine")])).session(session_id="s", store=mine)
        await chat.load()
        await Agent(FakeModelClient([reply("theirs")])).session(session_id="s", store=theirs).run("q0")
        with caplog.at_level(logging.INFO, logger="agentflow"), pytest.raises(SessionConflictError):
            await chat.run("q1")

    [record] = [r for r in caplog.records if r.name == "agentflow"]
    assert record.levelno == logging.WARNING  # expected where processes share a database, and retryable
    assert "changed since" in record.getMessage() or "another writer" in record.getMessage()
    assert record.exc_info is None


async def test_a_cancelled_run_whose_save_fails_ends_with_run_failed() -> None:
    started = anyio.Event()

    @tool
    async def lookup() -> str:
        """Never returns."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    store = ScriptedStore()
    store.fail_appends = 1
    model = FakeModelClient([reply(tool_calls=[("c1", "lookup", {})])])
    agent = Agent(model, tools=[lookup], options=AgentOptions(tool_timeout=None))
    chat = agent.session(session_id="s", store=store)

    async with chat.stream("q1") as run:
        seen: list[Event] = []

        async def consume() -> None:
            seen.extend([event async for event in run])

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await started.wait()
            await run.cancel()

    assert terminals(seen) == [seen[-1]]
    assert isinstance(seen[-1], RunFailed)
    assert isinstance(run.error, SessionStoreError)
    assert run.partial is not None
    assert run.partial.stop_reason is StopReason.CANCELLED  # the run's own outcome, in its result
    assert texts(chat.items) == ["user:q1", "message", "function_call_output"]  # kept for the next save


async def test_a_failed_run_whose_save_fails_keeps_its_one_run_failed() -> None:
    store = ScriptedStore()
    store.fail_appends = 1
    chat = Agent(FakeModelClient([ServerError("boom", status=500)])).session(session_id="s", store=store)

    async with chat.stream("q1") as run:
        events = [event async for event in run]

    assert terminals(events) == [events[-1]]
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "ServerError"
    assert isinstance(run.error, ServerError)
    assert any("Saving the session's conversation failed as well" in n for n in run.error.__notes__)


async def test_with_rollback_the_failed_run_is_undone_and_nothing_saved_before_run_failed() -> None:
    store = ScriptedStore()
    model = FakeModelClient([reply("a1"), ServerError("boom", status=500)])
    chat = Agent(model).session(session_id="s", store=store, rollback_on_failure=True)
    await chat.run("q1")
    at_the_end: list[tuple[list[str], list[str]]] = []

    async def on_failed(_event: RunFailed) -> None:
        # What a consumer sees when the run ends: memory put back, the store as before the run.
        at_the_end.append((texts(chat.items), texts(await store.load("s"))))

    with pytest.raises(ServerError):
        await chat.run("q2 (fails)", on=[(RunFailed, on_failed)])

    assert at_the_end == [(["user:q1", "assistant:a1"], ["user:q1", "assistant:a1"])]
    assert store.appends == [2]


async def test_a_runtime_whose_own_execute_skips_the_hook_still_saves() -> None:
    class Bare(AgentRuntime):
        """Its own ``execute``: takes the turn, answers and publishes ``RunFinished``; no
        ``before_terminal``."""

        async def execute(self, ctx: RunContext) -> AgentResult[Any]:
            assert ctx.wait_turn is not None
            await ctx.wait_turn()
            ctx.remember_input()
            ctx.output_text = "done"
            result = ctx.result = ctx.result_for(StopReason.FINAL_ANSWER)
            await ctx.emit(RunFinished(result=result))
            return result

    store = ScriptedStore()
    chat = Agent(FakeModelClient([]), runtime=Bare()).session(session_id="s", store=store)
    result = await chat.run("q1")
    assert result.output_text == "done"
    assert texts(await store.load("s")) == ["user:q1"]

    store.fail_appends = 1
    with pytest.raises(SessionStoreError):  # after its terminal event, but still the run's error
        await chat.run("q2")
