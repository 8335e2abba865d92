"""An empty reasoning field is not sent back, except where DeepSeek needs it: on a tool-call turn.

DeepSeek's thinking mode answers 400 "Missing `reasoning_content` field in the assistant message" when a
tool-call turn comes back without the field, also when the model thought nothing on it (DeepSeek's streams
open with ``reasoning_content: ""``; pydantic-ai sends ``"reasoning_content": ""`` on such a turn, and
DeepSeek's recorded answer to that request is a 200). Anywhere else an empty field tells the server nothing,
and strict servers refuse fields they do not support (Groq: "reasoning is not supported with this model").
Non-empty reasoning goes back as before.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from chat_local_server import LocalServer, json_reply, load_wire, sse_body, sse_reply

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.model.messages import AiMessage, ToolCall
from agentflow.providers.openai.chat_codec import decode_chat_response, encode_message
from agentflow.providers.openai.chat_model import OpenAIChatModel

CALL = ToolCall("call_1", "roll_dice", "{}")
KEYS = ("reasoning_content", "reasoning")


@pytest.mark.parametrize(
    "message",
    [
        AiMessage("4", reasoning=None, reasoning_field="reasoning_content"),
        AiMessage("4", reasoning="", reasoning_field="reasoning_content"),
        AiMessage("4", reasoning=None, reasoning_field="reasoning"),
        AiMessage(None, [CALL], None, None, "reasoning"),
        AiMessage(None, refusal="No.", reasoning_field="reasoning_content"),
    ],
    ids=["answer-content", "answer-content-empty-string", "answer-reasoning", "calls-reasoning", "refusal"],
)
def test_an_empty_reasoning_field_is_not_sent(message: AiMessage) -> None:
    sent = encode_message(message)
    assert not any(key in sent for key in KEYS)


def test_an_empty_reasoning_content_on_a_tool_call_turn_is_sent_empty() -> None:
    sent = encode_message(AiMessage(None, [CALL], None, None, "reasoning_content"))
    assert sent["reasoning_content"] == ""
    assert "reasoning" not in sent


@pytest.mark.parametrize("field", KEYS)
@pytest.mark.parametrize("calls", [(), (CALL,)], ids=["answer", "tool-calls"])
def test_non_empty_reasoning_goes_back_under_its_field_as_before(
    field: str, calls: tuple[ToolCall, ...]
) -> None:
    sent = encode_message(AiMessage("4", calls, "2+2", None, field))
    assert sent[field] == "2+2"
    assert sum(key in sent for key in KEYS) == 1


def test_the_recorded_deepseek_request_with_an_empty_tool_call_turn_is_what_we_send() -> None:
    # DeepSeek answered this request (recorded from pydantic-ai) with 200: its second assistant turn carries
    # tool calls and ``"reasoning_content": ""``.
    request = load_wire("chat_deepseek_reasoning_content_tool_calls.json")["request"]
    turns = [m for m in request["messages"] if m["role"] == "assistant"]
    empty = next(m for m in turns if m.get("reasoning_content") == "")
    call = empty["tool_calls"][0]
    message = AiMessage(
        None,
        [ToolCall(call["id"], call["function"]["name"], call["function"]["arguments"])],
        None,
        None,
        "reasoning_content",
    )
    assert encode_message(message) == {k: v for k, v in empty.items() if k != "name"}


def test_a_decoded_answer_with_an_empty_field_encodes_back_without_it() -> None:
    payload = {"choices": [{"message": {"role": "assistant", "content": "4", "reasoning_content": ""}}]}
    message = decode_chat_response(payload).message
    assert message.reasoning_field == "reasoning_content"  # noted, for a tool-call turn's sake
    assert encode_message(message) == {"role": "assistant", "content": "4"}


# --- over HTTP, through an agent ------------------------------------------------------------------


def roll_dice() -> int:
    """Roll a six-sided die."""
    return 4


def deepseek_stream(*deltas: dict[str, Any], finish: str) -> bytes:
    """A DeepSeek-shaped stream: its opening ``reasoning_content: ""``, then ``deltas``, no reasoning."""
    head = {"id": "ds-1", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-v4-flash"}
    opener = {"role": "assistant", "content": None, "reasoning_content": ""}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in (opener, *deltas)
    ]
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return sse_body(*chunks)


def deepseek_answer(**message: Any) -> dict[str, Any]:
    finish = "tool_calls" if "tool_calls" in message else "stop"
    body = {"role": "assistant", "content": None, "reasoning_content": "", **message}
    return {
        "id": "ds-1",
        "model": "deepseek-v4-flash",
        "choices": [{"message": body, "finish_reason": finish}],
    }


TOOL_CALL = {
    "index": 0,
    "id": "call_1",
    "type": "function",
    "function": {"name": "roll_dice", "arguments": "{}"},
}


def assistant_turns(server: LocalServer, request: int) -> list[dict[str, Any]]:
    body = orjson.loads(server.requests[request].body)
    return [m for m in body["messages"] if m["role"] == "assistant"]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "blocking"])
async def test_an_agent_sends_an_empty_field_back_on_the_tool_call_turn_only(
    server: LocalServer, stream: bool
) -> None:
    if stream:
        server.add(
            sse_reply([deepseek_stream({"tool_calls": [TOOL_CALL]}, finish="tool_calls")]),
            sse_reply([deepseek_stream({"content": "You rolled a 4."}, finish="stop")]),
            sse_reply([deepseek_stream({"content": "Sure."}, finish="stop")]),
        )
    else:
        server.add(
            json_reply(deepseek_answer(tool_calls=[TOOL_CALL])),
            json_reply(deepseek_answer(content="You rolled a 4.")),
            json_reply(deepseek_answer(content="Sure.")),
        )
    model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="deepseek-v4-flash")
    agent = Agent(model, tools=[roll_dice], options=AgentOptions(stream=stream))
    async with agent:
        session = agent.session()
        assert (await session.run("Roll a die.")).output_text == "You rolled a 4."
        await session.run("Again?")
    (tool_turn,) = assistant_turns(server, 1)
    assert tool_turn["reasoning_content"] == ""
    tool_turn, answer_turn = assistant_turns(server, 2)
    assert tool_turn["reasoning_content"] == ""
    assert answer_turn == {"role": "assistant", "content": "You rolled a 4."}
