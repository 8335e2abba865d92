"""Provider fields of Chat answers go back on the next request exactly as received: OpenRouter's message-level
``reasoning_details`` (blocking, and streamed in fragments merged per ``index``) and Gemini's per-call
``extra_content`` (its thought signature, which Gemini 3 answers 400 without on turn 2 of a tool loop).
Servers that never send them see byte-identical requests to before."""

from __future__ import annotations

from typing import Any

import orjson
from chat_local_server import WIRE, LocalServer, json_reply, sse_body, sse_reply

from agentflow import UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.sse import SseDecoder, SseEvent
from agentflow.model.events import ModelCompleted, ModelEvent, ToolCallReady, to_jsonable
from agentflow.model.messages import AiMessage, Message, ToolCall, ToolResultMessage
from agentflow.model.request import ChatParameters
from agentflow.model.response import ChatResponse
from agentflow.providers.openai.chat_codec import decode_chat_response, encode_chat_body, encode_message
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.chat_stream import ChatStreamDecoder

SIGNATURE = {"google": {"thought_signature": "CvcBAY8a…sig=="}}
DETAILS = [
    {
        "type": "reasoning.text",
        "text": "Need the weather.",
        "signature": "EqQB…",
        "format": "anthropic-claude-v1",
    },
    {
        "type": "reasoning.encrypted",
        "data": "gAAAA…",
        "id": "tool_1",
        "format": "google-gemini-v1",
        "index": 1,
    },
]


def gemini_answer() -> dict[str, Any]:
    """A blocking answer with both fields, as Gemini (via OpenRouter) sends a tool call."""
    call = {
        "id": "function-call-1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
        "extra_content": SIGNATURE,
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call], "reasoning_details": DETAILS}
    return {"id": "c1", "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


def stream_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "s1", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def decode_stream(*payloads: dict[str, Any]) -> list[ModelEvent]:
    decoder = ChatStreamDecoder()
    events: list[ModelEvent] = []
    for payload in payloads:
        events += decoder.feed(SseEvent(orjson.dumps(payload).decode()))
    events += decoder.feed(SseEvent("[DONE]"))
    return events + decoder.finish()


def completed(events: list[ModelEvent]) -> ChatResponse:
    last = events[-1]
    assert isinstance(last, ModelCompleted)
    response: ChatResponse = last.response
    return response


def test_a_blocking_answer_keeps_both_fields_and_sends_them_back() -> None:
    message = decode_chat_response(gemini_answer()).message
    assert message.provider_fields == {"reasoning_details": DETAILS}
    (call,) = message.tool_calls
    assert call.provider_fields == {"extra_content": SIGNATURE}
    sent = encode_message(message)
    assert sent["reasoning_details"] == DETAILS
    assert sent["tool_calls"] == [gemini_answer()["choices"][0]["message"]["tool_calls"][0]]


def test_an_answer_without_them_has_none_and_goes_back_as_before() -> None:
    answer = gemini_answer()
    message_json = answer["choices"][0]["message"]
    del message_json["reasoning_details"], message_json["tool_calls"][0]["extra_content"]
    message = decode_chat_response(answer).message
    assert message.provider_fields is None
    assert message.tool_calls[0].provider_fields is None
    assert encode_message(message) == message_json


def test_requests_without_provider_fields_are_byte_identical() -> None:
    """What a server that never sends these fields receives: exactly the bytes it always did."""
    history: list[Message] = [
        UserMessage("weather?"),
        AiMessage("Let me look.", [ToolCall("call_1", "get_weather", '{"city":"Paris"}')]),
        ToolResultMessage("call_1", "sunny"),
        AiMessage("4", reasoning="2+2", reasoning_field="reasoning_content"),
    ]
    body = orjson.dumps(encode_chat_body(history, ChatParameters(model="m")))
    assert body == (
        b'{"model":"m","messages":[{"role":"user","content":"weather?"},'
        b'{"role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_1","type":"function",'
        b'"function":{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}]},'
        b'{"role":"tool","tool_call_id":"call_1","content":"sunny"},'
        b'{"role":"assistant","content":"4","reasoning_content":"2+2"}]}'
    )


def test_provider_fields_never_overwrite_standard_fields() -> None:
    message = AiMessage("hi", provider_fields={"content": "evil", "reasoning_details": []})
    assert encode_message(message) == {"role": "assistant", "content": "hi", "reasoning_details": []}


def test_they_stay_out_of_event_json() -> None:
    """Opaque signatures and encrypted reasoning are not for browsers; ``kind`` is."""
    message = decode_chat_response(gemini_answer()).message
    plain = to_jsonable(message)
    assert "provider_fields" not in plain
    assert plain["tool_calls"][0] == {
        "id": "function-call-1",
        "name": "get_weather",
        "arguments": '{"city":"Paris"}',
        "kind": "function",
    }


def test_the_recorded_openrouter_stream_merges_its_reasoning_details() -> None:
    """The recording sends one ``reasoning.text`` entry (index 0) in fragments: text pieces, then its
    signature alone after an empty one. Merged, it is one entry with the whole text and the signature."""
    record = orjson.loads((WIRE / "chat_stream_openrouter_reasoning.json").read_bytes())
    body: str = record["response_body"]
    # The oracle, read from the recording without the decoder: the text pieces and the one signature.
    fragments = [
        entry
        for line in body.splitlines()
        if line.startswith("data: {")
        for choice in orjson.loads(line[6:])["choices"]
        for entry in choice["delta"].get("reasoning_details") or ()
    ]
    text = "".join(entry.get("text") or "" for entry in fragments)
    (signature,) = {entry["signature"] for entry in fragments if entry.get("signature")}
    assert text
    assert signature
    decoder = ChatStreamDecoder()
    events: list[ModelEvent] = []
    sse = SseDecoder()
    for sse_event in [*sse.feed(body.encode()), *sse.close()]:
        events += decoder.feed(sse_event)
    events += decoder.finish()
    message = completed(events).message
    assert message.provider_fields == {
        "reasoning_details": [
            {
                "type": "reasoning.text",
                "text": text,
                "signature": signature,
                "format": "anthropic-claude-v1",
                "index": 0,
            }
        ]
    }
    assert message.reasoning == text  # the ``reasoning`` deltas say the same
    assert encode_message(message)["reasoning_details"] == message.provider_fields["reasoning_details"]


def test_fragments_merge_per_index_and_type() -> None:
    events = decode_stream(
        stream_chunk({"reasoning_details": [{"type": "reasoning.summary", "summary": "Plan", "index": 0}]}),
        stream_chunk({"reasoning_details": [{"type": "reasoning.summary", "summary": " A.", "index": 0}]}),
        stream_chunk(
            {
                "reasoning_details": [
                    {"type": "reasoning.encrypted", "data": "", "index": 1},
                    {"type": "reasoning.summary", "summary": "", "id": "rs_1", "index": 0},
                ]
            }
        ),
        stream_chunk({"reasoning_details": [{"type": "reasoning.encrypted", "data": "gAAA", "index": 1}]}),
        stream_chunk({"reasoning_details": [{"type": "reasoning.text", "text": "whole"}]}),  # no index
        stream_chunk({"content": "ok", "reasoning_details": []}, "stop"),
    )
    message = completed(events).message
    assert message.text == "ok"
    assert message.provider_fields == {
        "reasoning_details": [
            {"type": "reasoning.summary", "summary": "Plan A.", "index": 0, "id": "rs_1"},
            {"type": "reasoning.encrypted", "data": "gAAA", "index": 1},
            {"type": "reasoning.text", "text": "whole"},
        ]
    }


def test_a_stream_of_empty_reasoning_details_keeps_none() -> None:
    events = decode_stream(
        stream_chunk({"role": "assistant", "content": "", "reasoning": None, "reasoning_details": []}),
        stream_chunk({"content": "Hi", "reasoning_details": []}, "stop"),
    )
    assert completed(events).message.provider_fields is None


def test_a_streamed_call_keeps_its_extra_content() -> None:
    fragment = {
        "index": 0,
        "id": "function-call-1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
        "extra_content": SIGNATURE,
    }
    events = decode_stream(
        stream_chunk({"role": "assistant", "tool_calls": [fragment]}),
        stream_chunk({}, "tool_calls"),
    )
    (ready,) = [e for e in events if isinstance(e, ToolCallReady)]
    assert ready.call.provider_fields == {"extra_content": SIGNATURE}
    message = completed(events).message
    assert message.tool_calls == (ready.call,)
    assert encode_message(message)["tool_calls"] == [{k: v for k, v in fragment.items() if k != "index"}]


async def test_a_gemini_tool_loop_sends_both_fields_back_on_turn_two(server: LocalServer) -> None:
    """Blocking and streamed turn 1 alike: the second request carries the signature and reasoning blocks."""
    call = gemini_answer()["choices"][0]["message"]["tool_calls"][0]
    streamed = sse_body(
        stream_chunk({"role": "assistant", "reasoning_details": DETAILS[:1]}),
        stream_chunk({"reasoning_details": DETAILS[1:], "tool_calls": [{"index": 0, **call}]}),
        stream_chunk({}, "tool_calls"),
    )
    final = {"id": "c2", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Sunny."}}]}
    server.add(json_reply(gemini_answer()), json_reply(final), sse_reply([streamed]), json_reply(final))
    question = UserMessage("weather?")
    async with OpenAIChatModel(base_url=server.base_url, model="gemini-3", retry=RetryPolicy.none()) as model:
        blocking = await model.chat([question])
        await model.chat([question, blocking.message, ToolResultMessage(call["id"], "sunny")])
        streamed_turn = await model.stream([question]).collect()
        await model.chat([question, streamed_turn.message, ToolResultMessage(call["id"], "sunny")])
    for sent in (server.requests[1].json(), server.requests[3].json()):
        assistant = sent["messages"][1]
        assert assistant["reasoning_details"] == DETAILS
        assert assistant["tool_calls"] == [call]
