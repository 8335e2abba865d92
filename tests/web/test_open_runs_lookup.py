"""``OpenRuns.get``: a request finds the run another request is streaming, while that one holds it."""

from __future__ import annotations

import anyio

from agentflow import Agent, OpenRuns
from agentflow.testing.fake import FakeModelClient, reply


async def test_a_held_run_is_found_by_its_id_until_its_block_ends() -> None:
    runs = OpenRuns()
    gate = anyio.Event()

    async def slow(_prompt: object) -> object:
        await gate.wait()
        return reply("done")

    agent = Agent(FakeModelClient([slow]))
    async with agent.stream("hi") as run, runs.track(run):
        assert runs.get(run.run_id) is run
        assert runs.get("run_unknown") is None
        found = runs.get(run.run_id)
        assert found is not None
        await found.cancel()  # what a "stop" request does with it
        gate.set()
        events = [type(e).__name__ async for e in run]
    assert events[-1] == "RunCancelled"
    assert runs.get(run.run_id) is None
    assert len(runs) == 0
