"""What subscribers get, whatever the run: the same vocabulary streamed or not, JSON forms that are safe to
forward to a browser, and failures a UI can act on.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import os
import tempfile
import uuid
from typing import Any, Literal

import orjson
import pytest

from agentflow import (
    Agent,
    AgentOptions,
    ModelCompleted,
    OpenAIChatModel,
    OpenAIResponsesModel,
    RetryPolicy,
    RunFailed,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
    tool,
)
from agentflow.agent.sqlite_store import SQLiteStore
from agentflow.model.events import to_jsonable
from agentflow.sse import encode_sse
from agentflow.testing import Fault, Reply, ScriptedServer

Protocol = Literal["chat", "responses"]
SECRET = "INTERNAL: refunds up to $500 without approval"


def model_for(protocol: Protocol, server: ScriptedServer) -> Any:
    cls = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
    return cls(base_url=server.base_url, api_key="sk-test", model="gpt-test", retry=RetryPolicy.none())


@tool
async def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


async def event_types(protocol: Protocol, *, stream: bool) -> list[str]:
    turns = [
        Reply(tool_calls=[("lookup", {"order": "A1"})], usage=(20, 5)),
        Reply(text="Shipped.", usage=(30, 2)),
    ]
    async with ScriptedServer(turns) as server:
        agent = Agent(model_for(protocol, server), tools=[lookup], options=AgentOptions(stream=stream))
        async with agent, agent.stream("Where is A1?") as run:
            return [event.type async for event in run]


@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_a_blocking_run_publishes_the_vocabulary_of_a_streamed_one(protocol: Protocol) -> None:
    streamed = await event_types(protocol, stream=True)
    blocking = await event_types(protocol, stream=False)

    def deduplicated(types: list[str]) -> list[str]:  # a stream may split a part into several deltas
        return [t for i, t in enumerate(types) if i == 0 or t != types[i - 1]]

    assert deduplicated(blocking) == deduplicated(streamed)
    for kind in (ToolCallStarted, ToolCallArgumentsDelta, ToolCallReady, UsageReported):
        assert kind.type in blocking


@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_model_completed_as_json_leaves_out_the_providers_raw_response(protocol: Protocol) -> None:
    # The Responses API echoes the request's instructions and tools: forwarded to a browser, the raw
    # response would show it the system prompt.
    async with ScriptedServer([Reply(text="Hello.")]) as server:
        agent = Agent(model_for(protocol, server), system_prompt=f"You are ACME support. {SECRET}")
        async with agent, agent.stream("hi", types=ModelCompleted) as run:
            (completed,) = [event async for event in run]
    assert completed.response.raw is not None  # still there for Python code
    assert "raw" not in completed.to_dict()["response"]
    assert SECRET.encode() not in encode_sse(completed)


async def test_run_failed_says_the_status_and_whether_trying_again_may_help() -> None:
    async with ScriptedServer([Fault.status(429)]) as server:
        agent = Agent(model_for("chat", server))
        async with agent, agent.stream("hi") as run:
            events = [event async for event in run]
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert (failed.status, failed.retryable) == (429, True)
    assert failed.request_id is not None
    assert failed.request_id.startswith("req_")  # ScriptedServer's x-request-id
    assert orjson.loads(encode_sse(failed).split(b"data: ", 1)[1])["status"] == 429


class _OtherProcessStore(SQLiteStore):
    __slots__ = ()
    conversation_key = None  # what another process's store is: no turn of this process reaches it


async def test_run_failed_says_a_session_conflict_may_be_retried() -> None:
    # Another writer (another process's store on the same file) saved to the conversation first.
    async with ScriptedServer([Reply(text="first"), Reply(text="second")]) as server:
        agent = Agent(model_for("chat", server))
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "chats.db")
            async with SQLiteStore(path) as mine, _OtherProcessStore(path) as theirs:
                session = agent.session(session_id="c1", store=mine)
                await session.load()
                await agent.session(session_id="c1", store=theirs).run("hi")
                async with agent, session.stream("hello") as run:
                    events = [event async for event in run]
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "SessionConflictError"
    assert (failed.status, failed.retryable, failed.request_id) == (None, True, None)


async def test_a_tool_returning_text_with_a_lone_surrogate_does_not_break_the_run() -> None:
    name = os.fsdecode(b"caf\xe9.txt")  # what listdir gives for a file name that is not UTF-8

    @tool
    def newest_file() -> str:
        """The newest file's name."""
        return name

    turns = [Reply(tool_calls=[("newest_file", {})]), Reply(text="It is café.txt.")]
    async with ScriptedServer(turns) as server:
        agent = Agent(model_for("chat", server), tools=[newest_file])
        async with agent:
            result = await agent.run("Which file is newest?")
    assert result.output_text == "It is café.txt."
    assert result.tool_results[0].output == "caf\\udce9.txt"
    assert server.requests[1].body["messages"][-1]["content"] == "caf\\udce9.txt"


@dataclasses.dataclass
class Row:
    sku: str
    price: decimal.Decimal


def test_to_jsonable_writes_values_as_a_tool_output_does() -> None:
    value = {
        "at": datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC),
        "id": uuid.UUID(int=5),
        "rows": [Row("A1", decimal.Decimal("9.99"))],
        "exact": decimal.Decimal("0.1000000000000000000000001"),
    }
    assert to_jsonable(value) == {
        "at": "2026-11-30T12:00:00+00:00",
        "id": "00000000-0000-0000-0000-000000000005",
        "rows": [{"sku": "A1", "price": 9.99}],
        "exact": "0.1000000000000000000000001",
    }
    cycle: list[Any] = []
    cycle.append(cycle)
    assert isinstance(orjson.dumps(to_jsonable(cycle)), bytes)  # cut, not a RecursionError
