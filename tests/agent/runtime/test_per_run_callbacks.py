"""``on=``: callbacks for one run. A web handler on a shared agent gets its own request's events, never
another's (``agent.on`` applies to every run of the agent, concurrent ones included)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentflow.agent.agent import Agent, run_sync
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.events import RunFinished, RunStarted, TerminalEvent
from agentflow.model.events import Event, TextDelta
from agentflow.testing.fake import FakeModelClient, reply


def _gated(gate: anyio.Event) -> Any:
    async def entry(prompt: AgentPrompt) -> AgentModelResult:
        await gate.wait()
        return reply(f"answer for {prompt.items[-1]['content'][0]['text']}")

    return entry


async def test_concurrent_runs_on_a_shared_agent_each_get_their_own_events() -> None:
    gate = anyio.Event()
    agent = Agent(FakeModelClient([_gated(gate), _gated(gate)]))
    seen: dict[str, list[str]] = {"alice": [], "bob": []}

    async def handle(user: str) -> None:
        await agent.run(user, on=[(TextDelta, lambda event: seen[user].append(event.text))])

    async with anyio.create_task_group() as tg:
        tg.start_soon(handle, "alice")
        tg.start_soon(handle, "bob")
        await anyio.wait_all_tasks_blocked()
        gate.set()

    assert seen == {"alice": ["answer for alice"], "bob": ["answer for bob"]}


async def test_run_callbacks_follow_the_agents_and_see_the_whole_run() -> None:
    agent = Agent(FakeModelClient([reply("hi"), reply("again")]))
    order: list[str] = []
    agent.on(RunStarted, lambda _e: order.append("agent"))
    events: list[Event] = []

    await agent.run("q", on=[(RunStarted, lambda _e: order.append("run")), (None, events.append)])
    await agent.run("q2")  # a later run does not call them

    assert order == ["agent", "run", "agent"]
    assert isinstance(events[0], RunStarted)
    assert isinstance(events[-1], RunFinished)
    assert len({event.run_id for event in events}) == 1


async def test_stream_and_session_runs_take_callbacks_too() -> None:
    agent = Agent(FakeModelClient([reply("a"), reply("b")]))
    ended: list[Any] = []

    async def record(event: Any) -> None:  # async callbacks are awaited, as with agent.on
        ended.append(type(event).__name__)

    async with agent.stream("q", on=[(TerminalEvent, record)]) as run:
        await run.wait()
    await agent.session().run("q", on=[(TerminalEvent, record)])

    assert ended == ["RunFinished", "RunFinished"]


def test_run_sync_takes_callbacks() -> None:
    texts: list[str] = []
    run_sync(Agent(FakeModelClient([reply("x")])), "q", on=[(TextDelta, lambda e: texts.append(e.text))])
    assert texts == ["x"]


async def test_a_failing_callback_does_not_fail_the_run() -> None:
    def broken(_event: Any) -> None:
        raise ValueError("oops")

    result = await Agent(FakeModelClient([reply("x")])).run("q", on=[(TextDelta, broken)])
    assert result.output_text == "x"


@pytest.mark.parametrize(
    ("on", "message"),
    [
        (print, "pairs"),
        ({TextDelta: print}, "pairs"),
        ([TextDelta], "pairs"),
        ([(TextDelta, print, 1)], "pairs"),
        ([(TextDelta, "print")], "callable"),
        ([(str, print)], "event"),
    ],
)
async def test_on_is_checked_at_the_call(on: Any, message: str) -> None:
    agent = Agent(FakeModelClient([]))
    with pytest.raises(TypeError, match=message):
        await agent.run("q", on=on)
    with pytest.raises(TypeError, match=message):
        agent.stream("q", on=on)


@pytest.mark.parametrize(
    ("listen", "streamed"),
    [
        ("on_delta", True),
        ("agent_on_delta", True),
        ("on_all", True),
        ("on_terminal", False),
        ("none", False),
    ],
)
async def test_a_callback_for_deltas_makes_run_stream(listen: str, streamed: bool) -> None:
    # ``on=[(TextDelta, send)]`` is how a handler forwards an answer as it is written: a plain call would
    # hand it over in one piece at the end. A callback for other events keeps the cheaper plain call.
    from agentflow.providers.openai.chat_model import OpenAIChatModel
    from agentflow.testing import Reply, ScriptedServer

    async with ScriptedServer([Reply(text="one two three")]) as server:
        async with OpenAIChatModel(base_url=server.base_url, model="m") as model:
            agent = Agent(model)
            deltas: list[str] = []
            on: list[tuple[Any, Any]] = []
            if listen == "on_delta":
                on = [(TextDelta, lambda e: deltas.append(e.text))]
            elif listen == "agent_on_delta":
                agent.on(TextDelta, lambda e: deltas.append(e.text))
            elif listen == "on_all":
                on = [(None, lambda e: deltas.append(e.text) if isinstance(e, TextDelta) else None)]
            elif listen == "on_terminal":
                on = [(TerminalEvent, lambda _e: None)]
            result = await agent.run("count", on=on)
        assert result.output_text == "one two three"
        assert bool(server.requests[0].body.get("stream")) is streamed
        if streamed:
            assert "".join(deltas) == "one two three"
