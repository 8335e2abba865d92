"""Sessions over one memory share its stored conversation (one ``StoredTurns``): a session per request over a
memory kept between requests takes turns with the others and saves each run once. A memory holds one stored
conversation: a session over it with another store or id, or none, is refused."""

from __future__ import annotations

import anyio
import pytest
from session_store_support import ScriptedStore, texts

from agentflow import InMemoryStore, SessionStoreError
from agentflow.agent.agent import Agent
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.testing.fake import FakeModelClient, reply


async def test_two_sessions_over_one_memory_and_store_save_each_run_once() -> None:
    store = ScriptedStore()
    memory = InMemoryMemory()
    agent = Agent(FakeModelClient([reply("a1"), reply("a2"), reply("a3")]))
    first = agent.session(memory, session_id="s", store=store)
    second = agent.session(memory, session_id="s", store=store)

    await first.run("q1")
    await second.run("q2")
    await first.run("q3")  # no conflict: both know what the store holds

    assert store.appends == [2, 2, 2]
    assert store.loads == 1  # the conversation was read once, for the memory
    stored = await store.load("s")
    assert texts(stored) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2", "user:q3", "assistant:a3"]
    assert stored == list(memory.items)


async def test_a_session_per_request_over_a_shared_memory_takes_turns() -> None:
    release = anyio.Event()
    called = anyio.Event()

    async def slow(_prompt: AgentPrompt) -> AgentModelResult:
        called.set()
        await release.wait()
        return reply("a1")

    store = ScriptedStore()
    memory = InMemoryMemory()
    model = FakeModelClient([slow, reply("a2")])
    agent = Agent(model)

    async def request(question: str) -> None:
        await agent.session(memory, session_id="s", store=store).run(question)

    async with anyio.create_task_group() as tg:
        tg.start_soon(request, "q1")
        await called.wait()
        tg.start_soon(request, "q2")
        await anyio.wait_all_tasks_blocked()
        assert len(model.prompts) == 1  # the second request waits for the first one's turn
        release.set()

    assert store.appends == [2, 2]
    assert store.loads == 1  # the memory holds the conversation: read once, not once per request
    assert texts(model.prompts[1].items) == ["user:q1", "assistant:a1", "user:q2"]
    assert texts(await store.load("s")) == ["user:q1", "assistant:a1", "user:q2", "assistant:a2"]


async def test_unsaved_items_of_one_session_go_with_the_next_save_of_another() -> None:
    store = ScriptedStore()
    memory = InMemoryMemory()
    agent = Agent(FakeModelClient([reply("a1"), reply("a2"), reply("a3")]))
    await agent.session(memory, session_id="s", store=store).run("q1")
    store.fail_appends = 1
    with pytest.raises(SessionStoreError, match="saving session"):
        await agent.session(memory, session_id="s", store=store).run("q2")

    # The next request's session does not read the store over the memory: q2's turn is not lost.
    await agent.session(memory, session_id="s", store=store).run("q3")
    assert store.appends == [2, 4]
    assert texts(await store.load("s")) == [
        "user:q1",
        "assistant:a1",
        "user:q2",
        "assistant:a2",
        "user:q3",
        "assistant:a3",
    ]


def test_sessions_over_one_memory_with_another_store_or_id_are_refused() -> None:
    agent = Agent(FakeModelClient([]))
    memory = InMemoryMemory()
    store = InMemoryStore()
    agent.session(memory, session_id="s", store=store)

    with pytest.raises(ValueError, match=r"kept in another store \(its InMemoryStore, as 's'\)"):
        agent.session(memory, session_id="s", store=InMemoryStore())
    with pytest.raises(ValueError, match="is session 's' of this store already"):
        agent.session(memory, session_id="t", store=store)
    with pytest.raises(ValueError, match="needs the same store and session_id"):
        agent.session(memory)  # no store: its runs would go unsaved
    # Another memory is another conversation.
    agent.session(InMemoryMemory(), session_id="t", store=store)


async def test_a_session_without_a_store_built_first_cannot_run_once_the_memory_is_stored() -> None:
    memory = InMemoryMemory()
    agent = Agent(FakeModelClient([reply("a1")]))
    plain = agent.session(memory)
    stored = agent.session(memory, session_id="s", store=InMemoryStore())

    with pytest.raises(ValueError, match="needs the same store and session_id"):
        await plain.run("q1")
    await stored.run("q1")
    assert texts(memory.items) == ["user:q1", "assistant:a1"]
