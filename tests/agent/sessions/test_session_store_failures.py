"""What a stored session keeps when a run fails, is cancelled or stops at a limit, and when its store fails
or is cut off: nothing lost, nothing stored twice, the turn always given back."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from session_store_support import ScriptedStore, assert_memory_valid, texts

from agentflow import SessionStoreError, run_result
from agentflow.agent import stored_turns
from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.events import RunCancelled, RunFailed, RunFinished
from agentflow.model.errors import ServerError
from agentflow.model.events import Event
from agentflow.result import StopReason
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


def hanging_tool(started: anyio.Event) -> Any:
    @tool
    async def lookup() -> str:
        """Never returns."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    return lookup


async def test_a_failed_load_fails_the_run_before_the_model_is_called() -> None:
    store = ScriptedStore()
    store.fail_loads = 1
    model = FakeModelClient([reply("a1")])
    chat = Agent(model).session(session_id="s", store=store)
    failures: list[RunFailed] = []

    with pytest.raises(
        SessionStoreError, match="loading session 's' from its ScriptedStore failed"
    ) as caught:
        await chat.run("q1", on=[(RunFailed, failures.append)])

    error = caught.value
    assert (error.operation, error.session_id) == ("load", "s")
    assert isinstance(error.__cause__, ConnectionError)
    assert model.prompts == []
    assert chat.items == ()
    assert not chat.busy
    assert run_result(error) is failures[0].partial
    assert failures[0].error_type == "SessionStoreError"
    # The next run loads again, and nothing of the failed one was stored.
    await chat.run("q2")
    assert texts(await store.load("s")) == ["user:q2", "assistant:a1"]


async def test_a_failed_append_fails_the_run_with_its_result_and_the_next_run_saves_both_once() -> None:
    store = ScriptedStore()
    store.fail_appends = 1
    chat = Agent(FakeModelClient([reply("a1"), reply("a2")])).session(session_id="s", store=store)
    ended: list[Event] = []

    with pytest.raises(SessionStoreError, match="saving session 's'") as caught:
        await chat.run("q1", on=[((RunFinished, RunFailed), ended.append)])

    error = caught.value
    assert error.operation == "append"
    [failed] = ended  # the save came before the terminal event: the run failed, once
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "SessionStoreError"
    assert error.run_result is failed.partial  # the run's own result is not lost
    assert error.run_result is not None
    assert error.run_result.output_text == "a1"
    assert error.run_result.stop_reason is StopReason.FINAL_ANSWER
    assert texts(chat.items) == ["user:q1", "assistant:a1"]  # memory kept for the retry
    assert await store.load("s") == []
    assert not chat.busy

    await chat.run("q2")
    assert store.appends == [4]
    assert texts(await store.load("s")) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2"]


async def test_a_failed_append_of_a_stream_ends_it_with_run_failed() -> None:
    store = ScriptedStore()
    store.fail_appends = 1
    chat = Agent(FakeModelClient([reply("a1")])).session(session_id="s", store=store)

    async with chat.stream("q1") as run:
        events = [event async for event in run]
        assert isinstance(run.error, SessionStoreError)
        with pytest.raises(SessionStoreError):
            _ = run.result
    terminals = [e for e in events if isinstance(e, RunFinished | RunFailed | RunCancelled)]
    assert terminals == [events[-1]]  # one terminal event, the last
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "SessionStoreError"
    assert "saving session 's'" in failed.error
    assert failed.partial is run.partial
    assert run.partial is not None
    assert run.partial.output_text == "a1"
    assert run_result(run.error) is run.partial


async def test_with_rollback_a_failed_run_stores_nothing() -> None:
    store = ScriptedStore()
    model = FakeModelClient([reply("a1"), ServerError("boom", status=500), reply("a2")])
    chat = Agent(model).session(session_id="s", store=store, rollback_on_failure=True)
    await chat.run("q1")

    with pytest.raises(ServerError):
        await chat.run("q2 (fails)")
    assert store.appends == [2]
    await chat.run("q2")
    assert texts(await store.load("s")) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2"]


async def test_without_rollback_a_failed_run_stores_what_memory_kept() -> None:
    store = ScriptedStore()
    chat = Agent(FakeModelClient([ServerError("boom", status=500)])).session(session_id="s", store=store)
    with pytest.raises(ServerError) as caught:
        await chat.run("q1")
    assert texts(await store.load("s")) == texts(chat.items) == ["user:q1"]
    assert run_result(caught.value) is not None


async def test_a_failed_run_whose_append_fails_too_says_so_and_keeps_its_own_error() -> None:
    store = ScriptedStore()
    store.fail_appends = 1
    chat = Agent(FakeModelClient([ServerError("boom", status=500), reply("a2")])).session(
        session_id="s", store=store
    )
    with pytest.raises(ServerError) as caught:
        await chat.run("q1")
    assert any("Saving the session's conversation failed as well" in note for note in caught.value.__notes__)
    await chat.run("q2")
    assert texts(await store.load("s")) == ["user:q1", "user:q2", "assistant:a2"]


async def test_a_cancelled_run_stores_what_memory_kept() -> None:
    store = ScriptedStore()
    started = anyio.Event()
    model = FakeModelClient([reply(tool_calls=[("c1", "lookup", {})]), reply("a2")])
    chat = Agent(model, tools=[hanging_tool(started)], options=AgentOptions(tool_timeout=None)).session(
        session_id="s", store=store
    )

    async with chat.stream("q1") as run:
        await started.wait()
        await run.cancel()
        result = await run.wait()

    assert result.stop_reason is StopReason.CANCELLED
    stored = await store.load("s")
    assert stored == list(chat.items)
    assert texts(stored) == ["user:q1", "message", "function_call_output"]
    assert "cancelled" in stored[2]["output"]
    assert_memory_valid(stored)


async def test_a_run_cancelled_from_outside_is_stored_too() -> None:
    store = ScriptedStore()
    started = anyio.Event()
    model = FakeModelClient([reply(tool_calls=[("c1", "lookup", {})])])
    chat = Agent(model, tools=[hanging_tool(started)], options=AgentOptions(tool_timeout=None)).session(
        session_id="s", store=store
    )

    async with anyio.create_task_group() as tg:
        tg.start_soon(chat.run, "q1")
        await started.wait()
        tg.cancel_scope.cancel()

    stored = await store.load("s")
    assert texts(stored) == ["user:q1", "message", "function_call_output"]
    assert_memory_valid(stored)
    assert not chat.busy


async def test_a_run_stopped_at_a_limit_stores_what_memory_kept() -> None:
    store = ScriptedStore()
    model = FakeModelClient([reply(tool_calls=[("c1", "lookup", {})])])

    @tool
    async def lookup() -> str:
        """Looks up."""
        return "found"

    agent = Agent(model, tools=[lookup], options=AgentOptions(max_steps=1))
    chat = agent.session(session_id="s", store=store)
    result = await chat.run("q1")
    assert result.stop_reason is StopReason.MAX_STEPS
    assert texts(await store.load("s")) == ["user:q1", "message", "function_call_output"]


async def test_a_cancel_during_the_append_lets_it_finish_whole() -> None:
    store = ScriptedStore()
    store.pause_appends = True
    chat = Agent(FakeModelClient([reply("a1")])).session(session_id="s", store=store)

    scope = anyio.CancelScope()

    async def ask() -> None:
        with scope:
            await chat.run("q1")

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        await store.append_started.wait()
        scope.cancel()
        await anyio.wait_all_tasks_blocked()
        assert chat.busy  # the append is shielded: it goes on, holding the turn
        assert await store.load("s") == []
        store.release.set()

    assert texts(await store.load("s")) == ["user:q1", "assistant:a1"]
    assert not chat.busy


async def test_an_append_cut_off_leaves_nothing_half_written_and_the_next_run_saves_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stored_turns, "_SAVE_SECONDS", 0)  # the cap is reached at once
    store = ScriptedStore()
    store.pause_appends = True
    chat = Agent(FakeModelClient([reply("a1"), reply("a2")])).session(session_id="s", store=store)

    with pytest.raises(SessionStoreError, match="did not answer within 0 s") as caught:
        await chat.run("q1")
    assert isinstance(caught.value.__cause__, TimeoutError)
    assert caught.value.run_result is not None
    assert not chat.busy
    assert await store.load("s") == []

    monkeypatch.setattr(stored_turns, "_SAVE_SECONDS", 10.0)
    store.pause_appends = False
    await chat.run("q2")
    assert store.appends == [4]
    assert texts(await store.load("s")) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2"]


async def test_a_cancel_during_the_load_leaves_memory_and_the_turn_alone() -> None:
    load_started, never = anyio.Event(), anyio.Event()

    class SlowStore(ScriptedStore):
        async def load(self, session_id: str) -> list[dict[str, Any]]:
            load_started.set()
            await never.wait()
            return []

    store = SlowStore()
    await store.append("s", [{"type": "message", "role": "user", "content": "old"}])
    model = FakeModelClient([])
    chat = Agent(model).session(session_id="s", store=store)

    async with chat.stream("q1") as run:
        await load_started.wait()
        await run.cancel()
        result = await run.wait()

    assert result.stop_reason is StopReason.CANCELLED
    assert model.prompts == []
    assert chat.items == ()
    assert not chat.busy
    assert store.appends == [1]  # the test's own: nothing of the run


async def test_a_store_giving_back_no_items_is_a_load_error() -> None:
    class BrokenStore(ScriptedStore):
        async def load(self, session_id: str) -> Any:
            return [{"type": "message"}, "not an item"]

    chat = Agent(FakeModelClient([])).session(session_id="s", store=BrokenStore())
    with pytest.raises(SessionStoreError, match="item 1") as caught:
        await chat.run("q1")
    assert isinstance(caught.value.__cause__, TypeError)


async def test_a_failed_clear_leaves_memory_as_it_was() -> None:
    class StuckStore(ScriptedStore):
        async def clear(self, session_id: str) -> None:
            raise ConnectionError("the store is down")

    chat = Agent(FakeModelClient([reply("a1")])).session(session_id="s", store=StuckStore())
    await chat.run("q1")
    with pytest.raises(SessionStoreError, match="clearing") as caught:
        await chat.clear()
    assert caught.value.operation == "clear"
    assert texts(chat.items) == ["user:q1", "assistant:a1"]
    assert not chat.busy


async def test_queued_runs_each_see_the_previous_run_saved() -> None:
    release = anyio.Event()
    called = anyio.Event()

    async def slow(_prompt: AgentPrompt) -> AgentModelResult:
        called.set()
        await release.wait()
        return reply("a1")

    store = ScriptedStore()
    chat = Agent(FakeModelClient([slow, reply("a2")])).session(session_id="s", store=store)
    async with anyio.create_task_group() as tg:
        tg.start_soon(chat.run, "q1")
        await called.wait()
        tg.start_soon(chat.run, "q2")
        release.set()
    assert store.appends == [2, 2]
    assert store.loads == 1
    assert texts(await store.load("s")) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2"]
