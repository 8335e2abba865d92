"""A server that refuses reasoning sent back gets the request again without it, once; then none is sent.

Groq returns reasoning under ``reasoning`` (``reasoning_format=parsed``) but answers 400 when an assistant
turn carries it back: "'messages.2' : for 'role:assistant' the following must be satisfied[('messages.2' :
property 'reasoning' is unsupported, did you mean 'role'?)]". Other clients strip the field for Groq by name
(Vercel's AI SDK) or strip and retry on that 400 (vellum); a server-agnostic client can only do the latter.
Only a 400 that names an echoed field, as a whole word, in a "not supported" message counts.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pytest
from chat_local_server import LocalServer, SleepRecorder, json_reply, sse_body, sse_reply

from agentflow.agent.agent import Agent
from agentflow.agent.chat_client import _refuses
from agentflow.agent.options import AgentOptions
from agentflow.model.errors import BadRequestError
from agentflow.providers.openai.chat_model import OpenAIChatModel

GROQ_REFUSAL = (
    "'messages.2' : for 'role:assistant' the following must be satisfied[('messages.2' : property "
    "'reasoning' is unsupported, did you mean 'role'?)]"
)
CALL = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "roll_dice", "arguments": "{}"}}


def roll_dice() -> int:
    """Roll a six-sided die."""
    return 4


def groq_answer(**message: Any) -> dict[str, Any]:
    finish = "tool_calls" if "tool_calls" in message else "stop"
    body = {"role": "assistant", "content": None, **message}
    choice = {"message": body, "finish_reason": finish}
    return {"id": "g-1", "model": "openai/gpt-oss-20b", "choices": [choice]}


def groq_stream(delta: dict[str, Any], finish: str) -> bytes:
    head = {"id": "g-1", "object": "chat.completion.chunk", "created": 1, "model": "openai/gpt-oss-20b"}
    return sse_body(
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant", **delta}, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
    )


def refusal(message: str = GROQ_REFUSAL) -> Any:
    return json_reply({"error": {"message": message, "type": "invalid_request_error"}}, status=400)


def answers(stream: bool, *replies: dict[str, Any]) -> list[Any]:
    """``replies`` (``groq_answer`` keyword sets) as blocking or streamed server replies."""
    if not stream:
        return [json_reply(groq_answer(**reply)) for reply in replies]
    finish = ["tool_calls" if "tool_calls" in reply else "stop" for reply in replies]
    return [sse_reply([groq_stream(reply, end)]) for reply, end in zip(replies, finish, strict=True)]


def sent_reasoning(server: LocalServer, request: int) -> list[Any]:
    body = orjson.loads(server.requests[request].body)
    return [m.get("reasoning") for m in body["messages"] if m["role"] == "assistant"]


def agent_on(server: LocalServer, stream: bool) -> Agent[str]:
    model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="openai/gpt-oss-20b")
    return Agent(model, tools=[roll_dice], options=AgentOptions(stream=stream))


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "blocking"])
async def test_a_refused_reasoning_field_is_dropped_and_the_request_sent_again(
    server: LocalServer, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    first, done, again = answers(
        stream,
        {"reasoning": "Roll it.", "tool_calls": [CALL]},
        {"reasoning": "Say it.", "content": "You rolled a 4."},
        {"content": "Sure."},
    )
    server.add(first, refusal(), done, again)
    agent = agent_on(server, stream)
    with caplog.at_level(logging.WARNING, logger="agentflow"):
        async with agent:
            session = agent.session()
            result = await session.run("Roll a die.")
            assert result.output_text == "You rolled a 4."
            assert (await session.run("Again?")).output_text == "Sure."
    assert sent_reasoning(server, 1) == ["Roll it."]  # refused
    assert sent_reasoning(server, 2) == [None]  # the same request without it
    assert sent_reasoning(server, 3) == [None, None]  # and none from then on
    assert len(server.requests) == 4
    assert [r.getMessage().count("refused the reasoning") for r in caplog.records] == [1]
    # Memory keeps the reasoning: only what is sent changes.
    assert any(item.get("reasoning") == "Roll it." for item in session.items if isinstance(item, dict))


async def test_a_refusal_after_a_retried_429_is_still_sent_again_without_the_field(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    # The model layer's retry (a ModelRetry event before any answer) is not the server taking the request.
    first, done = answers(True, {"reasoning": "Roll it.", "tool_calls": [CALL]}, {"content": "A 4."})
    busy = json_reply({"error": {"message": "slow down", "type": "rate_limit"}}, status=429)
    server.add(first, busy, refusal(), done)
    model = OpenAIChatModel(base_url=server.base_url, api_key="sk", model="openai/gpt-oss-20b", sleep=sleeps)
    agent = Agent(model, tools=[roll_dice], options=AgentOptions(stream=True))
    async with agent:
        assert (await agent.run("Roll a die.")).output_text == "A 4."
    assert len(sleeps.delays) == 1
    assert sent_reasoning(server, 2) == ["Roll it."]  # the retry after the 429, refused
    assert sent_reasoning(server, 3) == [None]


@pytest.mark.parametrize(
    "message",
    [
        "reasoning_effort is not supported with this model",  # another field that merely starts the same
        "messages.2: content must be a string",  # not about the field at all
        "The reasoning was wrong",  # names the field, says nothing of support
    ],
)
async def test_another_bad_request_is_raised_as_it_is(server: LocalServer, message: str) -> None:
    first, _done, _again = answers(False, {"reasoning": "Roll it.", "tool_calls": [CALL]}, {}, {})
    server.add(first, refusal(message))
    async with agent_on(server, False) as agent:
        with pytest.raises(BadRequestError, match=message.split(":")[0]):
            await agent.run("Roll a die.")
    assert len(server.requests) == 2


async def test_a_request_that_sends_no_reasoning_is_not_sent_again(server: LocalServer) -> None:
    first, _done, _again = answers(False, {"tool_calls": [CALL]}, {}, {})
    server.add(first, refusal())
    async with agent_on(server, False) as agent:
        with pytest.raises(BadRequestError):
            await agent.run("Roll a die.")
    assert len(server.requests) == 2


async def test_a_streamed_refusal_after_the_first_event_is_not_a_refusal(server: LocalServer) -> None:
    # An in-band error once the server has taken the request is the answer failing, not the field refused.
    head = {"id": "g-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    broken = sse_body(
        {**head, "choices": [{"index": 0, "delta": {"content": "You"}, "finish_reason": None}]},
        {"error": {"message": GROQ_REFUSAL, "type": "invalid_request_error", "status_code": 400}},
    )
    first = answers(True, {"reasoning": "Roll it.", "tool_calls": [CALL]})[0]
    server.add(first, sse_reply([broken]))
    async with agent_on(server, True) as agent:
        with pytest.raises(BadRequestError):
            await agent.run("Roll a die.")
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("message", "fields", "refused"),
    [
        (GROQ_REFUSAL, {"reasoning"}, True),
        ("messages[2].reasoning: reasoning is not supported with this model", {"reasoning"}, True),
        ("property 'reasoning_content' is unsupported", {"reasoning_content"}, True),
        ("property 'reasoning_content' is unsupported", {"reasoning"}, False),
        ("Extra inputs are not permitted: messages.2.reasoning_content", {"reasoning_content"}, True),
        ("reasoning_effort is not supported", {"reasoning"}, False),
        ("reasoning.effort is not supported with this model", {"reasoning"}, False),
        ("model x-reasoning does not support tools: unsupported", {"reasoning"}, False),
        ('unknown field "reasoning" in messages[2]', {"reasoning"}, True),
    ],
)
def test_what_counts_as_refusing_the_field(message: str, fields: set[str], refused: bool) -> None:
    assert _refuses(BadRequestError(message, status=400), fields) is refused
