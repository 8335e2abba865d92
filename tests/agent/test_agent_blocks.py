"""``async with agent:`` blocks may overlap (nested, or one per request in different tasks): the model client
is closed when the last of them leaves, never under another block's runs."""

from __future__ import annotations

import anyio

from agentflow import Agent, OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.testing.script import Hold


class _Counting(FakeModelClient):
    closed = 0

    async def aclose(self) -> None:
        self.closed += 1
        await super().aclose()


async def test_nested_blocks_close_the_model_once_when_the_outer_one_leaves() -> None:
    model = _Counting([reply("a"), reply("b")])
    agent = Agent(model)
    async with agent:
        async with agent:
            assert (await agent.run("one")).output_text == "a"
        assert model.closed == 0  # the outer block still runs on it
        assert (await agent.run("two")).output_text == "b"
    assert model.closed == 1


async def test_a_request_leaving_its_block_does_not_close_the_model_under_another_s_stream() -> None:
    release, reached = anyio.Event(), anyio.Event()
    held = Hold(Reply(text="slow answer", chunk_size=3), release, after_chunks=2, reached=reached)
    async with ScriptedServer([held, Reply(text="quick")]) as server:
        agent = Agent(OpenAIChatModel(base_url=server.base_url, model="m", api_key="k"))
        answers: dict[str, str] = {}

        async def first() -> None:
            async with agent, agent.stream("a") as run:
                async for _ in run:
                    pass
            answers["first"] = run.result.output_text

        async def second() -> None:
            await reached.wait()  # the first request's answer is half-way through
            async with agent:
                answers["second"] = (await agent.run("b")).output_text
            release.set()  # after this block left: the first stream must still be readable

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(first)
                tg.start_soon(second)
    assert answers == {"second": "quick", "first": "slow answer"}


class _Server:
    """A toolset that counts the blocks it is entered for, and lists tools only while entered."""

    name = "srv"

    def __init__(self) -> None:
        self.entered = 0

    async def __aenter__(self) -> _Server:
        self.entered += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.entered -= 1

    async def tools(self) -> list[object]:
        if not self.entered:
            raise RuntimeError("not connected")
        return []


def _ping() -> str:
    """Ping."""
    return "pong"


async def test_a_block_that_entered_no_toolset_leaves_none_of_another_block_s() -> None:
    server = _Server()
    agent = Agent(FakeModelClient([reply("a")]), tools=[server])
    async with agent:
        with agent.override(tools=[_ping]):
            async with agent:  # under the override: no toolset to enter
                pass
        assert server.entered == 1  # the outer block's server is still connected
        assert (await agent.run("hi")).output_text == "a"
    assert server.entered == 0


async def test_blocks_in_other_tasks_leave_their_own_toolsets() -> None:
    server = _Server()
    agent = Agent(FakeModelClient([]), tools=[server])
    plain_in, plain_out = anyio.Event(), anyio.Event()

    async def plain() -> None:
        with agent.override(tools=[_ping]):
            async with agent:
                plain_in.set()
                await plain_out.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(plain)
        await plain_in.wait()
        async with agent:
            assert server.entered == 1
            plain_out.set()
            await anyio.wait_all_tasks_blocked()  # the plain block leaves while this one is open
            assert server.entered == 1
    assert server.entered == 0
