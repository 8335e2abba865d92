"""A streamed call's ``time_to_first_chunk`` runs from its first attempt to the first part of its answer: a
retry (a 429) or a usage report before it is not the answer beginning."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio

from agentflow import Agent, AgentPrompt
from agentflow.model.events import ModelCompleted, ModelEvent, ModelRetry, TextDelta, UsageReported
from agentflow.model.response import TokenUsage
from agentflow.testing.fake import FakeModelClient, reply

WAIT = 0.05


async def retried(_prompt: AgentPrompt) -> AsyncIterator[ModelEvent]:
    yield ModelRetry(attempt=1, max_attempts=3, delay=WAIT, reason="HTTP 429")
    yield UsageReported(TokenUsage(3, 0, 3))
    await anyio.sleep(WAIT)  # the retry's wait, then the answer
    yield TextDelta("Hello")
    yield ModelCompleted(reply("Hello"))


async def test_a_retry_or_a_usage_report_is_not_the_first_chunk() -> None:
    agent = Agent(FakeModelClient([retried]))
    async with agent.stream("hi") as run:
        completed = [e async for e in run if isinstance(e, ModelCompleted)]
    (event,) = completed
    assert event.time_to_first_chunk is not None
    assert event.time_to_first_chunk >= WAIT
