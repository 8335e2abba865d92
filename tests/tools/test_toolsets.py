"""Toolsets (``agentflow.tools.toolsets``): sources of tools listed per run, with a fake in-process toolset.

The MCP servers are toolsets too; ``tests/mcp/test_mcp_agent_toolsets.py`` runs agents on real ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

import anyio
import pytest

from agentflow.agent.agent import Agent
from agentflow.events import RunFailed, RunFinished, RunStarted, ToolSucceeded
from agentflow.result import StopReason
from agentflow.runtimes.context import RunContext
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools.registry import ToolRegistry
from agentflow.tools.tool import Tool, tool
from agentflow.tools.toolsets import ToolNameConflictError, Toolset


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


@tool
def whisper(text: str) -> str:
    """Whisper the text."""
    return text.lower()


class FakeToolset:
    """A toolset whose tools the test changes; counts its listings. Entering it "connects" it (nested
    blocks share the connection, as an MCP server's do)."""

    def __init__(self, *tools: Tool[..., Any], name: str = "fake", needs_entering: bool = False) -> None:
        self.name = name
        self.offered: list[Tool[..., Any]] = list(tools)
        self.listings = 0
        self.entered = 0
        self.needs_entering = needs_entering
        self.failure: Exception | None = None

    async def tools(self) -> Sequence[Tool[..., Any]]:
        self.listings += 1
        if self.failure is not None:
            raise self.failure
        if self.needs_entering and not self.entered:
            raise ConnectionError(f"{self.name} is not connected")
        return list(self.offered)

    async def __aenter__(self) -> FakeToolset:
        self.entered += 1
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.entered -= 1


def offered(model: FakeModelClient, call: int = -1) -> list[str]:
    """The names of the tools the model was offered in one call."""
    return [spec.name for spec in model.prompts[call].tools]


def test_a_registry_keeps_toolsets_apart_from_its_tools() -> None:
    toolset = FakeToolset(shout)
    registry = ToolRegistry([add, toolset, {"type": "web_search"}])
    assert registry.toolsets == (toolset,)
    assert registry.names == ("add",)
    assert "shout" not in registry
    assert isinstance(toolset, Toolset)
    assert ToolRegistry([add]).toolsets == ()
    assert bool(ToolRegistry([toolset]))  # it may have tools
    assert len(ToolRegistry([toolset])) == 0
    assert repr(registry) == "ToolRegistry(['add'], hosted=['web_search'], toolsets=[FakeToolset 'fake'])"
    with pytest.raises(ValueError, match="the toolset FakeToolset 'fake' is given twice"):
        ToolRegistry([toolset, toolset])
    # An agent is no toolset (its ``tools`` is a registry): the user is told about as_tool.
    with pytest.raises(TypeError, match="as_tool"):
        ToolRegistry([Agent(FakeModelClient([]))])
    with pytest.raises(
        TypeError,
        match=r"the class FakeToolset, a toolset's class: pass a toolset, an instance of it \(FakeToolset",
    ):
        ToolRegistry([FakeToolset])  # the class, not a toolset


async def test_an_agent_built_before_its_toolset_has_tools_lists_them_per_run() -> None:
    toolset = FakeToolset()
    model = FakeModelClient(
        [reply("no tools yet"), reply(tool_calls=[("shout", {"text": "hi"})]), reply("done"), reply("bye")]
    )
    agent = Agent(model, tools=[add, toolset])
    assert toolset.listings == 0  # nothing is listed when the agent is built

    first = await agent.run("one")
    assert first.output_text == "no tools yet"
    assert offered(model) == ["add"]

    toolset.offered = [shout]
    second = await agent.run("two")
    assert [r.output for r in second.tool_results] == ["HI"]
    assert offered(model, 1) == offered(model, 2) == ["add", "shout"]

    third = await agent.run("three")  # the same tools: the same registry as the run before, reused
    assert third.output_text == "bye"
    assert model.prompts[3].tools is model.prompts[2].tools
    assert toolset.listings == 3  # once per run
    assert agent.tools.names == ("add",)  # the agent's own registry is left as it is


async def test_a_name_clash_fails_the_run_before_its_model_call_naming_both_sources() -> None:
    model = FakeModelClient([reply("never")])
    agent = Agent(model, tools=[shout, FakeToolset(shout, name="loud")])
    events: list[object] = []
    async with agent.stream("go") as run:
        events.extend([e async for e in run])
    assert isinstance(run.error, ToolNameConflictError)
    assert run.error.name == "shout"
    assert (run.error.first, run.error.second) == ("the agent's own tools", "FakeToolset 'loud'")
    assert "tool_prefix" in str(run.error)
    assert [type(e) for e in events] == [RunFailed]  # one terminal event, no model call
    assert model.prompts == []

    two = Agent(model, tools=[FakeToolset(shout, name="a"), FakeToolset(whisper, shout, name="b")])
    with pytest.raises(ToolNameConflictError, match="one from FakeToolset 'a', one from FakeToolset 'b'"):
        await two.run("go")
    assert model.prompts == []


async def test_a_toolset_that_cannot_list_fails_the_run_with_its_error_and_one_terminal_event() -> None:
    toolset = FakeToolset(shout, needs_entering=True)
    model = FakeModelClient([reply("hello")])
    agent = Agent(model, tools=[toolset])
    seen: list[object] = []
    agent.on(None, seen.append)
    with pytest.raises(ConnectionError, match="not connected"):
        await agent.run("go")
    assert [type(e) for e in seen] == [RunFailed]
    assert model.prompts == []

    toolset.failure = TypeError("a bug")
    with pytest.raises(TypeError, match="a bug"):
        await agent.run("go")

    toolset.failure = None
    bad = FakeToolset(name="bad")
    bad.offered = [lambda: 1]  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"FakeToolset 'bad': tools\(\) gave .* a toolset gives Tool values"):
        await Agent(model, tools=[bad]).run("go")


async def test_async_with_agent_enters_its_toolsets_and_a_shared_one_stays_entered_for_the_other() -> None:
    toolset = FakeToolset(shout, needs_entering=True)
    model = FakeModelClient(
        [
            reply(tool_calls=[("shout", {"text": "a"})]),
            reply("done"),
            reply(tool_calls=[("shout", {"text": "b"})]),
            reply("done again"),
        ]
    )
    first, second = Agent(model, tools=[toolset]), Agent(model, tools=[toolset, add])
    async with first:
        assert toolset.entered == 1
        async with second:
            assert toolset.entered == 2
            assert (await second.run("go")).tool_results[0].output == "A"
        assert toolset.entered == 1  # still entered for the first agent
        assert (await first.run("go")).tool_results[0].output == "B"
    assert toolset.entered == 0
    assert model.closed


async def test_overlapping_blocks_in_different_tasks_each_leave_the_toolsets_they_entered() -> None:
    own, other = FakeToolset(shout, name="own"), FakeToolset(whisper, name="other")
    agent = Agent(FakeModelClient([]), tools=[own])
    first_in, second_in, first_out = anyio.Event(), anyio.Event(), anyio.Event()
    inside: list[tuple[int, int]] = []

    async def first() -> None:
        with agent.override(tools=[other]):
            async with agent:  # enters the override's toolsets, not the agent's
                inside.append((own.entered, other.entered))
                first_in.set()
                await second_in.wait()
        first_out.set()

    async def second() -> None:
        await first_in.wait()
        async with agent:
            second_in.set()
            await first_out.wait()
            inside.append((own.entered, other.entered))  # the first block left its own, not this one's

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(first)
        tasks.start_soon(second)
    assert inside == [(0, 1), (1, 0)]
    assert own.entered == other.entered == 0


async def test_a_block_left_in_another_task_leaves_the_only_one_open_and_refuses_to_guess() -> None:
    toolset = FakeToolset(shout)
    agent = Agent(FakeModelClient([]), tools=[toolset])
    async with anyio.create_task_group() as tasks:  # start-up and shutdown hooks in tasks of their own
        tasks.start_soon(agent.__aenter__)
    assert toolset.entered == 1
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(agent.__aexit__, None, None, None)
    assert toolset.entered == 0

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(agent.__aenter__)
        tasks.start_soon(agent.__aenter__)
    with pytest.raises(RuntimeError, match="left in another task than the one that entered it"):
        await agent.__aexit__(None, None, None)
    assert toolset.entered == 2


async def test_a_streamed_run_a_session_and_an_override_use_the_run_s_tools() -> None:
    toolset = FakeToolset(shout)
    model = FakeModelClient(
        [
            reply(tool_calls=[("shout", {"text": "streamed"})]),
            reply("done"),
            reply(tool_calls=[("shout", {"text": "session"})]),
            reply("done"),
            reply("remembered"),
            reply(tool_calls=[("whisper", {"text": "OVERRIDE"})]),
            reply("done"),
        ]
    )
    agent = Agent(model, tools=[toolset])
    async with agent.stream("go") as run:
        done = [e async for e in run if isinstance(e, ToolSucceeded | RunStarted | RunFinished)]
    assert [type(e) for e in done] == [RunStarted, ToolSucceeded, RunFinished]
    assert run.result.tool_results[0].output == "STREAMED"

    chat = agent.session()
    assert (await chat.run("one")).tool_results[0].output == "SESSION"
    assert (await chat.run("two")).output_text == "remembered"
    assert offered(model) == ["shout"]

    with agent.override(tools=[FakeToolset(whisper, name="quiet")]):
        result = await agent.run("go")
    assert result.tool_results[0].output == "override"
    assert offered(model) == ["whisper"]


async def test_a_sub_agent_with_a_toolset_lists_its_tools_in_its_own_run() -> None:
    toolset = FakeToolset(shout)
    inner_model = FakeModelClient([reply(tool_calls=[("shout", {"text": "deep"})]), reply("inner done")])
    inner = Agent(inner_model, tools=[toolset], name="Shouter")
    outer_model = FakeModelClient([reply(tool_calls=[("shouter", {"input": "shout deep"})]), reply("ok")])
    outer = Agent(outer_model, tools=[inner.as_tool(description="Shouts.")])
    result = await outer.run("go")
    assert result.tool_results[0].output == "inner done"
    assert offered(inner_model, 0) == ["shout"]
    assert toolset.listings == 1


async def test_a_run_without_toolsets_lists_nothing_and_keeps_the_agent_s_registry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def never(self: ToolRegistry) -> ToolRegistry:
        raise AssertionError("a run without toolsets listed them")

    monkeypatch.setattr(ToolRegistry, "for_run", never)
    contexts: list[RunContext] = []
    agent = Agent(FakeModelClient([reply(tool_calls=[("add", {"a": 1, "b": 2})]), reply("3")]), tools=[add])
    async with agent.stream("go") as run:
        contexts.append(run.ctx)
        assert run.ctx.wait_turn is None  # nothing awaited before the run starts
        await run.wait()
    assert run.result.stop_reason is StopReason.FINAL_ANSWER
    assert contexts[0].tools is agent.tools
