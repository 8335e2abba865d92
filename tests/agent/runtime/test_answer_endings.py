"""How a model turn without tool calls ends a run when it is not a whole answer: a refusal, an answer stopped
by the content filter, one cut at the token limit; and the tokens billed for a call that failed on its answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import pytest

from agentflow import (
    Agent,
    AgentOptions,
    Agents,
    ModelCompleted,
    ModelRequest,
    ModelSettings,
    OpenAIChatModel,
    OpenAIResponsesModel,
    RefusalDelta,
    RunFailed,
    StopReason,
    TextDelta,
)
from agentflow.model.errors import IncompleteResponseError
from agentflow.testing import Reply, ScriptedServer

Protocol = Literal["chat", "responses"]
PROTOCOLS: list[Protocol] = ["chat", "responses"]
REFUSAL = "I can't help with that."


def model_for(protocol: Protocol, server: ScriptedServer) -> Any:
    cls = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
    return cls(base_url=server.base_url, api_key="sk-test", model="gpt-test")


@asynccontextmanager
async def agent_on(protocol: Protocol, turn: Reply, *, stream: bool | None = None) -> AsyncIterator[Agent]:
    async with ScriptedServer([turn]) as server:
        agent = Agent(model_for(protocol, server), options=AgentOptions(stream=stream))
        async with agent:
            yield agent


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("stream", [False, True])
async def test_a_refusal_ends_the_run_as_a_refusal_with_its_message(protocol: Protocol, stream: bool) -> None:
    turn = Reply(refusal=REFUSAL, usage=(10, 5))
    async with agent_on(protocol, turn, stream=stream) as agent, agent.stream("How do I pick a lock?") as run:
        events = [event async for event in run]

    result = run.result
    assert result is not None
    assert (result.stop_reason, result.output_text, result.refusal) == (StopReason.REFUSAL, "", REFUSAL)
    # Streamed or not, subscribers see the refusal as RefusalDelta events before ModelCompleted.
    refused = "".join(e.text for e in events if isinstance(e, RefusalDelta))
    assert refused == REFUSAL
    kinds = [type(e) for e in events]
    assert kinds.index(ModelCompleted) > max(i for i, k in enumerate(kinds) if k is RefusalDelta)


async def test_a_refusal_from_agent_run_is_on_the_result() -> None:
    async with agent_on("chat", Reply(refusal=REFUSAL)) as agent:
        result = await agent.run("How do I pick a lock?")
    assert result.stop_reason is StopReason.REFUSAL
    assert result.refusal == REFUSAL


async def test_a_codeact_refusal_is_not_sent_back_for_a_format_correction() -> None:
    async with ScriptedServer([Reply(refusal=REFUSAL)]) as server:
        agent = Agents.codeact(model_for("chat", server))
        try:
            result = await agent.run("Delete every file.")
        finally:
            await agent.aclose()
    assert (result.stop_reason, result.refusal) == (StopReason.REFUSAL, REFUSAL)
    assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_a_chat_answer_stopped_by_the_content_filter_is_not_a_final_answer(stream: bool) -> None:
    turn = Reply(text="Here is how to", finish_reason="content_filter", usage=(100, 4))
    async with agent_on("chat", turn, stream=stream) as agent, agent.stream("x") as run:
        texts = [e.text async for e in run if isinstance(e, TextDelta)]

    assert run.result is not None
    assert run.result.stop_reason is StopReason.CONTENT_FILTER
    assert run.result.output_text == "".join(texts) == "Here is how to"


@pytest.mark.parametrize("finish", ["length", "content_filter"])
@pytest.mark.parametrize("stream", [False, True])
async def test_tokens_billed_for_an_incomplete_responses_answer_count_in_the_failed_run(
    finish: str, stream: bool
) -> None:
    turn = Reply(text="cut", finish_reason=finish, usage=(1000, 500))
    async with agent_on("responses", turn, stream=stream) as agent, agent.stream("x") as run:
        events = [event async for event in run]

    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert isinstance(run.error, IncompleteResponseError)
    assert failed.partial.usage.total_tokens == 1500
    assert failed.partial.usage == run.error.partial.usage


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_model_request_names_the_model_the_call_asks_for(protocol: Protocol) -> None:
    async with ScriptedServer([Reply(text="a"), Reply(text="b")]) as server:
        agent = Agent(model_for(protocol, server))
        overriding = Agent(agent.model_client, settings=ModelSettings(model="gpt-other"))
        async with agent:
            async with agent.stream("x", types=ModelRequest) as run:
                (default,) = [event async for event in run]
            async with overriding.stream("x", types=ModelRequest) as run:
                (chosen,) = [event async for event in run]
    assert (default.model, chosen.model) == ("gpt-test", "gpt-other")
    assert [r.body["model"] for r in server.requests] == ["gpt-test", "gpt-other"]
