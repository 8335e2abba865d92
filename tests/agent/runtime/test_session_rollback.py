"""Undoing a failed run inside its turn (``rollback_on_failure``) and holding a session's turn for your own
code (``Session.exclusive()``): a run queued on the session never starts on a failed turn, and never loses
its own input to a rollback done after it started."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import anyio
import pytest
from runtime_support import add

from agentflow.agent.agent import Agent
from agentflow.agent.items import user_item
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.events import RunFailed
from agentflow.model.errors import ServerError
from agentflow.result import StopReason
from agentflow.testing.fake import FakeModelClient, reply


def texts(items: Iterable[Any]) -> list[str]:
    out = []
    for item in items:
        if item.get("type") == "message" and item.get("content"):
            out.append(f"{item['role']}:{item['content'][0]['text']}")
        else:
            out.append(str(item["type"]) if "type" in item else "?")
    return out


def _waiting_reply(called: anyio.Event, release: anyio.Event, text: str) -> Any:
    async def entry(_prompt: AgentPrompt) -> AgentModelResult:
        called.set()
        await release.wait()
        return reply(text)

    return entry


async def test_a_failed_run_is_rolled_back_before_the_queued_run_starts() -> None:
    # The audit's race: the consumer handles RunFailed a little later (logging it, say); the run queued
    # behind the failed one must not start on the failed turn, and must keep its own question.
    second_called, release = anyio.Event(), anyio.Event()
    model = FakeModelClient([ServerError("boom", status=500), _waiting_reply(second_called, release, "a2")])
    chat = Agent(model).session(rollback_on_failure=True)
    seen_at_failure: list[str] = []

    async with anyio.create_task_group() as tg:
        async with chat.stream("q1 (fails)") as run:
            tg.start_soon(chat.run, "q2")
            async for event in run:
                if isinstance(event, RunFailed):
                    await anyio.wait_all_tasks_blocked()  # the queued run has every chance to go first
                    seen_at_failure = texts(chat.items)
        await second_called.wait()
        assert texts(model.prompts[-1].items) == ["user:q2"]
        release.set()

    assert seen_at_failure == ["user:q2"]  # the queued run has started, never on the failed turn
    assert texts(chat.items) == ["user:q2", "assistant:a2"]
    assert run.error is not None
    # The failed run's partial result still says what it wrote.
    assert run.partial is not None
    assert texts(run.partial.new_items) == ["user:q1 (fails)"]


async def test_without_rollback_a_failed_run_keeps_what_it_wrote() -> None:
    model = FakeModelClient([ServerError("boom", status=500)])
    chat = Agent(model).session()
    with pytest.raises(ServerError):
        await chat.run("q1")
    assert texts(chat.items) == ["user:q1"]


async def test_a_failure_after_tool_steps_rolls_back_the_whole_run_only() -> None:
    model = FakeModelClient(
        [reply("hello"), reply(tool_calls=[("add", {"a": 1, "b": 2})]), ServerError("boom", status=500)]
    )
    chat = Agent(model, tools=[add]).session(InMemoryMemory([user_item("earlier")]), rollback_on_failure=True)
    await chat.run("hi")
    before = chat.items

    with pytest.raises(ServerError):
        await chat.run("add 1 and 2")

    assert chat.items == before
    assert texts(chat.items) == ["user:earlier", "user:hi", "assistant:hello"]


async def test_a_cancelled_run_keeps_its_finished_work_even_with_rollback() -> None:
    called, release = anyio.Event(), anyio.Event()
    model = FakeModelClient(
        [reply(tool_calls=[("add", {"a": 1, "b": 2})]), _waiting_reply(called, release, "x")]
    )
    chat = Agent(model, tools=[add]).session(rollback_on_failure=True)

    async with chat.stream("add") as run:
        await called.wait()
        await run.cancel()
        await run.wait()

    assert run.result.stop_reason is StopReason.CANCELLED
    assert texts(chat.items) == ["user:add", "message", "function_call_output"]


async def test_a_run_that_stops_at_a_limit_is_not_rolled_back() -> None:
    from agentflow.agent.options import AgentOptions

    model = FakeModelClient([reply(tool_calls=[("add", {"a": 1, "b": 2})])])
    chat = Agent(model, tools=[add], options=AgentOptions(max_steps=1)).session(rollback_on_failure=True)
    result = await chat.run("add")
    assert result.stop_reason is StopReason.MAX_STEPS
    assert len(chat.items) == 3


class RefusingRestore(InMemoryMemory):
    def restore(self, snapshot: Iterable[Any]) -> None:
        raise OSError("read-only")


async def test_a_rollback_that_fails_is_noted_and_the_turn_still_passes_on() -> None:
    model = FakeModelClient([ServerError("boom", status=500), reply("a2")])
    chat = Agent(model).session(RefusingRestore(), rollback_on_failure=True)

    with pytest.raises(ServerError) as failed:
        await chat.run("q1")

    assert any("Rolling the session's memory back failed" in note for note in failed.value.__notes__)
    assert not chat.busy
    assert (await chat.run("q2")).output_text == "a2"


# --- exclusive() -------------------------------------------------------------------------------------------


async def test_exclusive_waits_for_the_run_in_progress_and_holds_off_the_next() -> None:
    first_called, release_first = anyio.Event(), anyio.Event()
    model = FakeModelClient([_waiting_reply(first_called, release_first, "a1"), reply("a2")])
    chat = Agent(model).session()
    order: list[str] = []

    async def first() -> None:
        await chat.run("q1")
        order.append("run 1 ended")

    async def edit() -> None:
        async with chat.exclusive() as memory:
            order.append(f"exclusive saw {texts(memory.items)}")
            await anyio.wait_all_tasks_blocked()  # run 2 is queued: it must not start meanwhile
            memory.restore(memory.items[:1])  # drop the answer: the next run must see the edit
            order.append("exclusive ended")

    async def second() -> None:
        await chat.run("q2")
        order.append("run 2 ended")

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        await first_called.wait()
        tg.start_soon(edit)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(second)
        await anyio.wait_all_tasks_blocked()
        assert order == []  # exclusive waits for run 1
        release_first.set()

    assert order == [
        "run 1 ended",
        "exclusive saw ['user:q1', 'assistant:a1']",
        "exclusive ended",
        "run 2 ended",
    ]
    assert texts(model.prompts[-1].items) == ["user:q1", "user:q2"]


async def test_a_run_started_inside_exclusive_by_its_task_is_a_clear_error() -> None:
    agent = Agent(FakeModelClient([reply("a")]))
    chat = agent.session()
    other = agent.session(chat.memory)  # another session over the same memory takes the same turns
    async with chat.exclusive():
        with pytest.raises(RuntimeError, match=r"session.exclusive\(\)"):
            await chat.run("q")
        with pytest.raises(RuntimeError, match=r"session.exclusive\(\)"):
            other.stream("q")
    assert (await chat.run("q")).output_text == "a"
    assert not chat.busy


async def test_exclusive_is_released_when_its_block_raises() -> None:
    chat = Agent(FakeModelClient([reply("a")])).session()
    with pytest.raises(KeyError):
        async with chat.exclusive():
            raise KeyError("x")
    assert not chat.busy
    assert (await chat.run("q")).output_text == "a"
