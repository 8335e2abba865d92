"""Sync tools run their worker threads on agentflow's own limiter (``sync_tool_limiter``, one per event loop),
not anyio's default one: slow sync tools never make a store's I/O, or another library's threads, wait."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import anyio.from_thread
import anyio.to_thread

from agentflow import SQLiteStore
from agentflow.agent.agent import Agent
from agentflow.model.messages import ToolCall
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import ToolExecutor, tool
from agentflow.tools.executor import SYNC_TOOL_THREADS, sync_tool_limiter


class Gate:
    """Sync tools that block in their threads until released, and tell the loop when ``expected`` arrived."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.arrived = 0
        self.all_arrived = anyio.Event()
        self.release = threading.Event()

    def _arrive(self) -> None:
        self.arrived += 1
        if self.arrived == self.expected:
            self.all_arrived.set()

    def wait(self) -> str:
        """In a tool's worker thread: arrive, then block until released."""
        anyio.from_thread.run_sync(self._arrive)
        self.release.wait(30)
        return "done"


async def test_blocked_sync_tools_leave_anyios_default_limiter_to_the_store_and_other_code(
    tmp_path: Path,
) -> None:
    # A default limiter with two threads, and two sync tools that block: before, they held both of its
    # threads, and the store waited for them.
    default = anyio.to_thread.current_default_thread_limiter()
    default.total_tokens = 2
    gate = Gate(expected=2)

    @tool
    def lookup(q: str) -> str:
        """A blocking lookup (requests.get, say)."""
        return gate.wait()

    busy = Agent(
        FakeModelClient([reply(tool_calls=[("lookup", {"q": "a"}), ("lookup", {"q": "b"})]), reply("busy")]),
        tools=[lookup],
    )
    store = SQLiteStore(tmp_path / "chats.db")
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(busy.run, "look both up")
            await gate.all_arrived.wait()
            assert sync_tool_limiter().borrowed_tokens == 2
            assert default.borrowed_tokens == 0
            with anyio.fail_after(10):
                chat = Agent(FakeModelClient([reply("hello")])).session(session_id="other", store=store)
                assert (await chat.run("hi")).output_text == "hello"  # its load and save went through
                assert await anyio.to_thread.run_sync(sum, [1, 2]) == 3  # so do other libraries' threads
            gate.release.set()
    finally:
        gate.release.set()
        await store.aclose()


async def test_the_limiter_tokens_bound_the_sync_tools_running_at_once() -> None:
    limiter = sync_tool_limiter()
    assert limiter.total_tokens == SYNC_TOOL_THREADS
    limiter.total_tokens = 1  # this event loop's only
    gate = Gate(expected=1)

    @tool
    def lookup(q: str) -> str:
        """A blocking lookup."""
        return gate.wait()

    executor = ToolExecutor([lookup], emit=lambda event: anyio.lowlevel.checkpoint())
    calls = [ToolCall("1", "lookup", '{"q": "a"}'), ToolCall("2", "lookup", '{"q": "b"}')]
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: executor.run_calls(calls, run_id="r", step=0))
            await gate.all_arrived.wait()
            await anyio.wait_all_tasks_blocked()
            assert gate.arrived == 1  # the second call waits for the first one's thread
            assert limiter.statistics().tasks_waiting == 1
            gate.release.set()
    finally:
        gate.release.set()
    assert gate.arrived == 2


async def test_a_timed_out_sync_tool_gives_its_token_back_while_its_thread_runs_on() -> None:
    release = threading.Event()
    finished = threading.Event()

    @tool(timeout=0.01)
    def stuck() -> str:
        """Hangs, like a socket read without a timeout."""
        release.wait(30)
        finished.set()
        return "late"

    executor = ToolExecutor([stuck], emit=lambda event: anyio.lowlevel.checkpoint())
    try:
        result = await executor.run_call(ToolCall("1", "stuck", ""), run_id="r", step=0)
        assert result.error_type == "timeout"
        assert sync_tool_limiter().borrowed_tokens == 0  # the token is back at once...
        assert not finished.is_set()  # ...while the abandoned thread still runs (it cannot be stopped)
    finally:
        release.set()
    await anyio.to_thread.run_sync(finished.wait, 5)
