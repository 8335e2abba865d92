"""Mistakes made with tools fail at once and say what to do: ``None`` or a value in a tool list,
``tool(None)``, and a sync tool calling the async ``emit_progress``."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from agentflow.agent.agent import Agent
from agentflow.model.events import Event
from agentflow.model.messages import ToolCall
from agentflow.testing.fake import FakeModelClient
from agentflow.tools import ToolContext, ToolExecutor, ToolRegistry, tool


def ping() -> str:
    """Answer pong."""
    return "pong"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (None, r"tools\[1\] is None; a tool is a @tool function, .* rather than passing None"),
        (42, r"tools\[1\] is 42 \(int\), which cannot be called; a tool is a @tool function"),
        ("ping", r"tools\[1\] is 'ping' \(str\), which cannot be called"),
    ],
)
def test_a_tool_list_refuses_what_is_not_a_tool_and_names_its_place(bad: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        ToolRegistry([ping, bad])
    with pytest.raises(TypeError, match=message):
        Agent(FakeModelClient([]), tools=[ping, bad])


def test_tool_of_none_is_refused_rather_than_returning_the_decorator() -> None:
    with pytest.raises(TypeError, match="tool\\(\\) got None instead of a function"):
        tool(None)  # type: ignore[call-overload]


def test_the_decorator_forms_still_work() -> None:
    @tool()
    def bare() -> str:
        """A tool made with empty parentheses."""
        return "ok"

    assert bare.name == "bare"
    assert tool(name="renamed")(ping).name == "renamed"
    assert tool(ping).name == "ping"


class Events:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.events.append(event)


async def test_a_sync_tool_calling_the_async_emit_progress_fails_and_names_the_sync_method() -> None:
    @tool
    def index(ctx: ToolContext) -> str:
        """Index something (a sync tool: it runs in a worker thread)."""
        ctx.emit_progress("indexing")  # type: ignore[unused-coroutine]  # the mistake: nothing can await it
        return "done"

    recorder = Events()
    executor = ToolExecutor([index], emit=recorder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited": none is made
        [result] = await executor.run_calls([ToolCall("c1", "index", "")], run_id="r", step=0)

    assert result.error_type == "exception"
    assert result.error is not None
    assert "emit_progress() of tool 'index' was called outside the event loop" in result.error
    assert "ctx.emit_progress_sync(...)" in result.error


async def test_emit_progress_still_works_awaited_and_from_a_worker_thread() -> None:
    @tool
    async def crawl(ctx: ToolContext) -> str:
        """Crawl."""
        await ctx.emit_progress("page 1", {"page": 1})
        return "ok"

    @tool
    def index(ctx: ToolContext) -> str:
        """Index."""
        ctx.emit_progress_sync("indexing")
        return "ok"

    recorder = Events()
    executor = ToolExecutor([crawl, index], emit=recorder)
    results = await executor.run_calls(
        [ToolCall("c1", "crawl", ""), ToolCall("c2", "index", "")], run_id="r", step=0
    )
    assert [r.output for r in results] == ["ok", "ok"]
    messages = sorted(
        getattr(e, "message", "") for e in recorder.events if type(e).__name__ == "ToolProgress"
    )
    assert messages == ["indexing", "page 1"]
