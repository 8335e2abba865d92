"""A run's dependencies (``agent.run(x, deps=...)``): one object, untouched, for its tools (async, sync in a
worker thread, inline), output validators, planner, the agents it calls as tools and CodeAct's tool calls;
through every way of starting a run. And the calling run's own HTTP headers reaching a sub-agent's run."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import attrs
import pytest

from agentflow import (
    Agent,
    AgentOptions,
    Agents,
    ModelSettings,
    OutputContext,
    OutputType,
    RejectOutput,
    ToolContext,
)
from agentflow.model.events import Event
from agentflow.plan import Plan
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.runtimes.planner import PlanContext, Planner
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


class Deps:
    """Stands for a database pool or a request's user: nothing here may copy, compare or serialise it."""

    def __init__(self, user: str) -> None:
        self.user = user
        self.lock = threading.Lock()  # unpicklable, as a real connection pool is

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise AssertionError("the run's deps were serialised")

    def __deepcopy__(self, memo: Any) -> Any:
        raise AssertionError("the run's deps were copied")


seen: list[tuple[str, Any]] = []


@pytest.fixture(autouse=True)
def _clear_seen() -> None:
    seen.clear()


@tool
async def async_tool(ctx: ToolContext[Deps]) -> str:
    """An async tool."""
    seen.append(("async", ctx.deps))
    return ctx.deps.user


@tool
def thread_tool(ctx: ToolContext[Deps]) -> str:
    """A sync tool, in a worker thread."""
    seen.append(("thread", ctx.deps))
    return ctx.deps.user


@tool(inline=True)
def inline_tool(ctx: ToolContext[Deps] | None = None) -> str:
    """A sync tool on the event loop."""
    assert ctx is not None
    seen.append(("inline", ctx.deps))
    return ctx.deps.user


@tool
def plain_tool(x: int) -> int:
    """A tool without a context."""
    return x


CALLS = [("async_tool", {}), ("thread_tool", {}), ("inline_tool", {}), ("plain_tool", {"x": 1})]


def calls_then_done() -> list[Any]:
    return [reply(tool_calls=CALLS), reply("done")]


async def test_every_kind_of_tool_gets_the_run_s_deps_as_they_were_passed() -> None:
    deps = Deps("ada")
    agent = Agent(
        FakeModelClient(calls_then_done()), tools=[async_tool, thread_tool, inline_tool, plain_tool]
    )
    events: list[Event] = []
    result = await agent.run("go", deps=deps, on=[(None, events.append)])
    assert sorted(kind for kind, _ in seen) == ["async", "inline", "thread"]
    assert all(value is deps for _, value in seen)
    assert [r.output for r in result.tool_results] == ["ada", "ada", "ada", "1"]
    # Never written anywhere: not to memory, not to an event's JSON.
    for event in events:
        event.to_dict()
    assert "Deps" not in repr(result.new_items)


@tool
async def bare_context(ctx: ToolContext) -> str:
    """A tool whose context is not typed."""
    seen.append(("bare", ctx.deps))
    return "ok"


async def test_each_run_has_its_own_deps_and_a_run_without_any_gives_its_tools_none() -> None:
    script = [reply(tool_calls=[("bare_context", {})]), reply("done")]
    agent = Agent(FakeModelClient(script * 3), tools=[bare_context])
    ada, bob = Deps("ada"), Deps("bob")
    await agent.run("go", deps=ada)
    await agent.run("go", deps=bob)
    await agent.run("go")
    assert [value for _, value in seen] == [ada, bob, None]


async def test_stream_session_and_their_streams_pass_deps() -> None:
    deps = Deps("bob")
    script = [*calls_then_done(), *calls_then_done(), *calls_then_done()]
    agent = Agent(FakeModelClient(script), tools=[async_tool, thread_tool, inline_tool, plain_tool])
    async with agent.stream("go", deps=deps) as run:
        async for _ in run:
            pass
    chat = agent.session()
    await chat.run("go", deps=deps)
    async with chat.stream("again", deps=deps) as run:
        async for _ in run:
            pass
    assert len(seen) == 9
    assert all(value is deps for _, value in seen)


def test_run_sync_passes_deps() -> None:
    deps = Deps("cy")
    agent = Agent(
        FakeModelClient(calls_then_done()), tools=[async_tool, thread_tool, inline_tool, plain_tool]
    )
    assert agent.run_sync("go", deps=deps).output_text == "done"
    chat_agent = Agent(FakeModelClient(calls_then_done()), tools=[async_tool, thread_tool, inline_tool])
    assert chat_agent.session().run_sync("go", deps=deps).output_text == "done"
    assert len(seen) == 6
    assert all(value is deps for _, value in seen)


@attrs.frozen
class Order:
    user: str


async def test_an_output_validator_gets_the_run_s_deps() -> None:
    deps = Deps("dee")
    contexts: list[OutputContext[Deps]] = []

    def same_user(order: Order, context: OutputContext[Deps]) -> None:
        contexts.append(context)
        if order.user != context.deps.user:
            raise RejectOutput(f"the order is for {context.deps.user}")

    script = [reply('{"user": "someone"}'), reply('{"user": "dee"}')]
    agent = Agent(FakeModelClient(script), output_type=OutputType(Order, validators=[same_user]))
    result = await agent.run("order", deps=deps)
    assert result.output == Order("dee")
    assert [c.deps for c in contexts] == [deps, deps]


class RecordingPlanner(Planner):
    def __init__(self) -> None:
        self.contexts: list[PlanContext | None] = []

    async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
        self.contexts.append(context)
        return Plan.of(goal, ["do it"])


async def test_a_planner_gets_the_run_s_deps() -> None:
    deps = Deps("eve")
    planner = RecordingPlanner()
    agent = Agents.deep_research(FakeModelClient([reply("done")]), planner=planner)
    await agent.run("goal", deps=deps)
    [context] = planner.contexts
    assert context is not None
    assert context.deps is deps


async def test_a_sub_agent_runs_with_its_caller_s_deps_or_what_its_function_makes_of_them() -> None:
    deps = Deps("fay")
    sub = Agent(FakeModelClient([*calls_then_done(), *calls_then_done()]), tools=[async_tool], name="Helper")
    mapped = Agent(FakeModelClient(calls_then_done()), tools=[async_tool], name="Mapped")
    parent = Agent(
        FakeModelClient(
            [reply(tool_calls=[("helper", {"input": "help"}), ("mapped", {"input": "help"})]), reply("done")]
        ),
        tools=[
            sub.as_tool(description="Helps."),
            mapped.as_tool(description="Helps too.", deps=lambda caller: Deps(caller.user + "!")),
        ],
    )
    await parent.run("go", deps=deps)
    values = [value for _, value in seen]
    assert len(values) == 2
    assert values[0] is deps
    assert values[1].user == "fay!"


def test_as_tool_refuses_deps_that_are_not_a_function() -> None:
    sub = Agent(FakeModelClient([]), name="Helper")
    with pytest.raises(TypeError, match=r"deps=lambda _: obj"):
        sub.as_tool(description="Helps.", deps=Deps("x"))  # type: ignore[arg-type]


async def test_codeact_s_tool_calls_get_the_run_s_deps() -> None:
    deps = Deps("gus")
    code = '{"type": "code", "code": "print(async_tool(), thread_tool(), inline_tool())"}'
    agent = Agents.codeact(FakeModelClient([reply(code)]), tools=[async_tool, thread_tool, inline_tool])
    with anyio.fail_after(60):
        result = await agent.run("go", deps=deps)
    assert result.output == "gus gus gus"  # the code's output is the answer (CodeAct without react)
    assert sorted(kind for kind, _ in seen) == ["async", "inline", "thread"]
    assert all(value is deps for _, value in seen)


# --- the calling run's headers ----------------------------------------------------------------------------


@tool
async def show_headers(ctx: ToolContext) -> str:
    """What the run passes on."""
    seen.append(("headers", dict(ctx.extra_headers)))
    return "ok"


async def test_a_sub_agent_s_run_sends_the_calling_run_s_own_headers_under_its_own() -> None:
    turns = [
        Reply(tool_calls=[("researcher", {"input": "find"})]),  # the caller
        Reply(tool_calls=[("fact_checker", {"input": "check"})]),  # the sub-agent
        Reply(tool_calls=[("show_headers", {})]),  # the sub-sub-agent
        Reply(text="checked"),
        Reply(text="found"),
        Reply(text="done"),
    ]
    async with ScriptedServer(turns) as server:

        def model() -> OpenAIChatModel:
            return OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="m")

        checker = Agent(model(), tools=[show_headers], name="Fact checker")
        researcher = Agent(
            model(),
            tools=[checker.as_tool(description="Checks.")],
            name="Researcher",
            settings=ModelSettings(extra_headers={"X-Shared": "researcher", "X-Researcher": "r"}),
        )
        caller = Agent(
            model(),
            tools=[researcher.as_tool(description="Researches.")],
            settings=ModelSettings(extra_headers={"X-Caller-Agent": "c"}),
            options=AgentOptions(stream=False),
        )
        run_settings = ModelSettings(extra_headers={"X-User-Key": "k-42", "X-Shared": "run"})
        result = await caller.run("go", settings=run_settings)
        await caller.aclose()
        await researcher.aclose()
        await checker.aclose()
    assert result.output_text == "done"
    sent = [r.headers for r in server.requests]
    # The caller: its agent's headers and the run's.
    assert (sent[0]["x-caller-agent"], sent[0]["x-user-key"], sent[0]["x-shared"]) == ("c", "k-42", "run")
    # The sub-agent: the run's own headers under its own (its X-Shared wins); not the calling agent's.
    for request in (sent[1], sent[4]):
        assert (request["x-user-key"], request["x-shared"], request["x-researcher"]) == (
            "k-42",
            "researcher",
            "r",
        )
        assert "x-caller-agent" not in request
    # Its own sub-agent: what the calling run was given, passed on again; the researcher's agent headers not.
    for request in (sent[2], sent[3]):
        assert (request["x-user-key"], request["x-shared"]) == ("k-42", "run")
        assert "x-researcher" not in request
        assert "x-caller-agent" not in request
    assert seen == [("headers", {"X-User-Key": "k-42", "X-Shared": "run"})]


async def test_a_run_without_headers_of_its_own_passes_none_on() -> None:
    sub = Agent(FakeModelClient([reply(tool_calls=[("show_headers", {})]), reply("x")]), tools=[show_headers])
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("sub", {"input": "x"})]), reply("done")]),
        tools=[sub.as_tool("sub", description="Sub.")],
        settings=ModelSettings(extra_headers={"X-Agent": "a"}),
    )
    await agent.run("go")
    assert seen == [("headers", {})]
