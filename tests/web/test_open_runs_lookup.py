"""``OpenRuns.get``: a request finds the run another request is streaming, while that one holds it."""

from __future__ import annotations

import anyio
import pytest

from agentflow import Agent, OpenRuns, StopReason
from agentflow.agent.open_runs import RunIdInUseError
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


async def test_a_second_open_run_with_the_same_id_is_refused_and_cancelled() -> None:
    runs = OpenRuns()
    gate = anyio.Event()

    async def slow(_prompt: object) -> object:
        await gate.wait()
        return reply("done")

    agent = Agent(FakeModelClient([slow, slow]))
    async with agent.stream("first", run_id="req-123") as first, runs.track(first):
        with pytest.raises(RunIdInUseError, match="'req-123' is already open here") as raised:
            async with agent.stream("again", run_id="req-123") as second, runs.track(second):
                pass  # pragma: no cover - track refuses it
        assert raised.value.run_id == "req-123"
        assert second.result.stop_reason is StopReason.CANCELLED  # leaving its block cancelled it
        assert runs.get("req-123") is first
        await runs.cancel_all()  # shutdown still reaches the first run
        gate.set()
        events = [type(e).__name__ async for e in first]
    assert events[-1] == "RunCancelled"
    assert len(runs) == 0
