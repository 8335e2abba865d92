"""Sessions: memory persists across runs; concurrent runs of one session are serialised."""

from __future__ import annotations

import anyio
import pytest
from runtime_support import assert_memory_valid

from agentflow.agent.agent import Agent, run_sync
from agentflow.agent.memory import InMemoryMemory, WindowedMemory
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


def texts(items: tuple[object, ...]) -> list[str]:
    out = []
    for item in items:
        assert isinstance(item, dict)
        if item.get("type") == "message":
            out.append(f"{item['role']}:{item['content'][0]['text']}")
        else:
            out.append(str(item["type"]))
    return out


async def test_session_memory_persists_across_runs() -> None:
    model = FakeModelClient([reply("Hello Ada."), reply("Your name is Ada.")])
    chat = Agent(model).session()

    await chat.run("My name is Ada.")
    result = await chat.run("What is my name?")

    assert result.output_text == "Your name is Ada."
    assert texts(model.prompts[1].items) == [
        "user:My name is Ada.",
        "assistant:Hello Ada.",
        "user:What is my name?",
    ]
    assert texts(chat.items) == [*texts(model.prompts[1].items), "assistant:Your name is Ada."]
    assert texts(result.new_items) == ["user:What is my name?", "assistant:Your name is Ada."]


async def test_plain_runs_do_not_share_memory() -> None:
    model = FakeModelClient([reply("a"), reply("b")])
    agent = Agent(model)

    await agent.run("one")
    await agent.run("two")

    assert texts(model.prompts[1].items) == ["user:two"]


async def test_concurrent_runs_of_a_session_are_serialised() -> None:
    first_called = anyio.Event()
    release_first = anyio.Event()

    async def first(_prompt: AgentPrompt) -> AgentModelResult:
        first_called.set()
        await release_first.wait()
        return reply("first answer")

    model = FakeModelClient([first, reply("second answer")])
    chat = Agent(model).session()
    results: dict[str, str] = {}

    async def ask(question: str) -> None:
        results[question] = (await chat.run(question)).output_text

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, "q1")
        await first_called.wait()
        tg.start_soon(ask, "q2")
        while chat.waiting == 0:  # q2 has reached the session and waits there for q1
            await anyio.lowlevel.checkpoint()
        assert len(model.prompts) == 1
        assert chat.busy
        assert texts(chat.items) == ["user:q1"]
        release_first.set()

    assert results == {"q1": "first answer", "q2": "second answer"}
    assert texts(chat.items) == ["user:q1", "assistant:first answer", "user:q2", "assistant:second answer"]
    assert texts(model.prompts[1].items) == ["user:q1", "assistant:first answer", "user:q2"]
    assert not chat.busy


async def test_session_stream_and_agent_level_memory_instance() -> None:
    memory = InMemoryMemory()
    model = FakeModelClient([reply("a"), reply("b")])
    agent = Agent(model, memory=memory)

    await agent.run("one")
    async with agent.stream("two") as run:
        await run.wait()

    assert texts(memory.items) == ["user:one", "assistant:a", "user:two", "assistant:b"]


async def test_session_with_windowed_memory_keeps_tool_calls_paired() -> None:
    @tool
    async def echo(x: int) -> int:
        """Echo."""
        return x

    script = []
    for i in range(4):
        script += [reply(tool_calls=[("echo", {"x": i})]), reply(f"answer {i}")]
    model = FakeModelClient(script)
    chat = Agent(model, tools=[echo]).session(WindowedMemory(max_items=3))

    for i in range(4):
        await chat.run(f"q{i}")

    assert len(chat.items) <= 5
    for prompt in model.prompts:
        assert_memory_valid(prompt.items)


async def test_memory_factory_is_used_for_runs_and_sessions() -> None:
    made: list[InMemoryMemory] = []

    def factory() -> InMemoryMemory:
        made.append(InMemoryMemory())
        return made[-1]

    agent = Agent(FakeModelClient([reply("a")]), memory=factory)
    await agent.run("x")
    session = agent.session()
    assert len(made) == 2
    assert session.memory is made[1]
    assert texts(made[0].items) == ["user:x", "assistant:a"]


def test_run_sync_runs_a_script_without_an_event_loop() -> None:
    model = FakeModelClient([reply("sync answer"), reply("again")])
    agent = Agent(model)
    chat = agent.session()

    assert run_sync(agent, "hi").output_text == "sync answer"
    assert chat.run_sync("hello").output_text == "again"
    assert model.closed  # the model's connections belong to the finished loop


async def test_run_sync_inside_a_running_loop_is_a_clear_error() -> None:
    agent = Agent(FakeModelClient([reply("x")]))
    with pytest.raises(RuntimeError, match="running event loop"):
        agent.run_sync("hi")


async def test_a_memory_class_is_a_factory_and_session_wants_an_instance() -> None:
    # ``Memory`` is a runtime-checkable protocol, which the class object itself satisfies: it must still be
    # taken as the factory it is, not as the memory of one shared conversation.
    agent = Agent(FakeModelClient([reply("a"), reply("b")]), memory=InMemoryMemory)
    first = await agent.run("one")
    second = await agent.run("two")
    assert texts(second.new_items) == ["user:two", "assistant:b"]
    assert texts(first.new_items) == ["user:one", "assistant:a"]
    assert isinstance(agent.session().memory, InMemoryMemory)

    with pytest.raises(TypeError, match=r"Memory instance .*got the class InMemoryMemory"):
        agent.session(InMemoryMemory)  # type: ignore[arg-type]


async def test_a_session_run_cancelled_while_it_waits_its_turn_still_ends_with_run_cancelled() -> None:
    first_called = anyio.Event()
    release_first = anyio.Event()

    async def first(_prompt: AgentPrompt) -> AgentModelResult:
        first_called.set()
        await release_first.wait()
        return reply("first answer")

    model = FakeModelClient([first, reply("third answer")])
    chat = Agent(model).session()
    seen: list[str] = []
    queued_events: list[str] = []

    async with anyio.create_task_group() as tg:

        async def ask_first() -> None:
            seen.append((await chat.run("q1")).output_text)

        tg.start_soon(ask_first)
        await first_called.wait()
        with anyio.fail_after(10):  # the failure this test guards against was a hang
            async with chat.stream("q2") as queued:
                while chat.waiting == 0:
                    await anyio.lowlevel.checkpoint()
                await queued.cancel()
                async for event in queued:  # the iteration ends: the run has its terminal event
                    queued_events.append(type(event).__name__)
        assert queued.done
        assert queued.result.stop_reason.value == "cancelled"
        assert queued.result.steps == 0
        release_first.set()

    assert queued_events == ["RunCancelled"]
    assert seen == ["first answer"]
    # The cancelled run never took its turn: nothing of it is in memory, and the session goes on.
    assert (await chat.run("q3")).output_text == "third answer"
    assert texts(chat.items) == ["user:q1", "assistant:first answer", "user:q3", "assistant:third answer"]
    assert not chat.busy


async def test_two_sessions_over_one_memory_take_turns() -> None:
    # A web app building a session per request over the conversation it stored: the runs must not interleave.
    first_called = anyio.Event()
    release_first = anyio.Event()

    async def first(_prompt: AgentPrompt) -> AgentModelResult:
        first_called.set()
        await release_first.wait()
        return reply("first answer")

    memory = InMemoryMemory()
    agent = Agent(FakeModelClient([first, reply("second answer")]))
    one, other = agent.session(memory), agent.session(memory)

    async with anyio.create_task_group() as tg:
        tg.start_soon(one.run, "q1")
        await first_called.wait()
        tg.start_soon(other.run, "q2")
        with anyio.fail_after(10):  # without a shared lock q2 never waits: a failure, not a hang
            while other.waiting == 0:
                await anyio.lowlevel.checkpoint()
        assert texts(memory.items) == ["user:q1"]
        release_first.set()

    assert texts(memory.items) == ["user:q1", "assistant:first answer", "user:q2", "assistant:second answer"]


def test_sessions_over_one_memory_in_two_threads_both_finish() -> None:
    # Each run_sync() call runs in an event loop of its own; an anyio lock belongs to one loop, so runs in
    # different loops must not share one (a release in one thread would never wake the other's waiter).
    import threading

    memory = InMemoryMemory()
    a_inside = threading.Event()
    release_a = threading.Event()

    async def held(_prompt: AgentPrompt) -> AgentModelResult:
        a_inside.set()
        await anyio.to_thread.run_sync(release_a.wait)
        return reply("answer A")

    results: dict[str, str] = {}

    def turn(name: str, model: FakeModelClient) -> None:
        results[name] = Agent(model).session(memory).run_sync(f"question {name}").output_text

    # Daemons: if a turn hangs, the test fails without holding the test process up.
    first = threading.Thread(target=turn, args=("A", FakeModelClient([held])), daemon=True)
    first.start()
    assert a_inside.wait(10)
    second = threading.Thread(target=turn, args=("B", FakeModelClient([reply("answer B")])), daemon=True)
    second.start()
    second.join(10)
    release_a.set()
    first.join(10)
    assert not first.is_alive()
    assert not second.is_alive()
    assert results == {"A": "answer A", "B": "answer B"}
