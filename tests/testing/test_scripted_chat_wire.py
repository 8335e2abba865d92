"""Chat Completions answers of the scripted server have the shapes of the real recordings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from scripted_support import keys, payloads, post, recorded_payloads, recording

from agentflow.testing import Reply, ScriptedServer


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


STREAM = {"model": "gpt-4o-mini", "stream": True, "stream_options": {"include_usage": True}, "messages": []}
BLOCKING = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


def _delta(chunk: dict[str, Any]) -> dict[str, Any]:
    delta: dict[str, Any] = chunk["choices"][0]["delta"]
    return delta


async def _stream(session: aiohttp.ClientSession, reply: Reply, body: dict[str, Any] = STREAM) -> list[Any]:
    async with ScriptedServer([reply]) as server:
        status, headers, raw = await post(session, f"{server.base_url}/chat/completions", body)
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream; charset=utf-8"
    return payloads(raw)


async def test_text_stream_has_the_recorded_chunk_sequence_and_shapes(session: aiohttp.ClientSession) -> None:
    ours = await _stream(session, Reply(text="The capital of the UK is London.", usage=(78, 9)))
    real = recorded_payloads("chat_stream_text_usage.json")
    role, *content, finish, usage, done = ours
    real_role, *real_content, real_finish, real_usage, real_done = real
    assert done == real_done == "[DONE]"
    for mine, theirs in [(role, real_role), (content[0], real_content[0]), (finish, real_finish)]:
        assert keys(mine) == keys(theirs)
        assert keys(mine["choices"][0]) == keys(theirs["choices"][0])
        assert keys(_delta(mine)) == keys(_delta(theirs))
    assert _delta(role) == _delta(real_role) == {"role": "assistant", "content": "", "refusal": None}
    assert (finish["choices"][0]["finish_reason"], _delta(finish)) == ("stop", {})
    assert keys(usage) == keys(real_usage)
    assert usage["choices"] == []
    for field in ("prompt_tokens_details", "completion_tokens_details"):
        assert set(usage["usage"][field]) == set(real_usage["usage"][field])
    assert (usage["usage"]["prompt_tokens"], usage["usage"]["completion_tokens"]) == (78, 9)
    assert "".join(_delta(c)["content"] for c in content) == "The capital of the UK is London."
    assert [_delta(c)["content"] for c in content][:3] == ["The", " capital", " of"]
    assert len({c["id"] for c in ours if isinstance(c, dict)}) == 1


async def test_tool_call_stream_fragments_match_the_recorded_parallel_calls(
    session: aiohttp.ClientSession,
) -> None:
    args = ['{"location": "Seattle, WA"}', '{"location": "San Francisco, CA"}']
    reply = Reply(tool_calls=[("get_current_weather", a) for a in args])
    ours = await _stream(session, reply)
    real = recorded_payloads("chat_stream_parallel_tool_calls_usage.json")
    for chunks in (ours, real):
        assert chunks[-1] == "[DONE]"
        assert chunks[-2]["choices"] == []
        assert chunks[-3]["choices"][0]["finish_reason"] == "tool_calls"
    ours_calls = [_delta(c)["tool_calls"][0] for c in ours[1:-3]]
    real_calls = [_delta(c)["tool_calls"][0] for c in real[1:-3]]
    starts = [c for c in ours_calls if "id" in c]
    assert [keys(c) for c in starts] == [keys(real_calls[0])] * 2
    assert [keys(c["function"]) for c in starts] == [{"name", "arguments"}] * 2
    assert all(c["function"]["arguments"] == "" for c in starts)
    fragments = [c for c in ours_calls if "id" not in c]
    assert {frozenset(c) for c in fragments} == {frozenset(real_calls[1])}
    assert {frozenset(c["function"]) for c in fragments} == {frozenset({"arguments"})}
    for index, expected in enumerate(args):
        assert "".join(c["function"]["arguments"] for c in ours_calls if c["index"] == index) == expected
    assert [c["id"] for c in starts] == ["call_scripted_000001_0", "call_scripted_000001_1"]


async def test_reasoning_streams_as_reasoning_content_deltas_before_the_text(
    session: aiohttp.ClientSession,
) -> None:
    ours = await _stream(session, Reply(reasoning="Hmm, let me think.", text="Hi!", chunk_size=4))
    real = recorded_payloads("chat_stream_deepseek_reasoning_content.json")
    reasoning = [_delta(c) for c in ours[1:-3] if "reasoning_content" in _delta(c)]
    assert {frozenset(d) for d in reasoning} == {frozenset(_delta(real[1]))}
    assert "".join(d["reasoning_content"] for d in reasoning) == "Hmm, let me think."
    kinds = ["reasoning_content" if "reasoning_content" in _delta(c) else "content" for c in ours[1:-3]]
    assert kinds == sorted(kinds, reverse=True)  # all reasoning first, then content


async def test_refusal_streams_as_refusal_deltas(session: aiohttp.ClientSession) -> None:
    ours = await _stream(session, Reply(refusal="I can't help with that."))
    assert _delta(ours[0])["content"] is None
    assert "".join(_delta(c)["refusal"] for c in ours[1:-3]) == "I can't help with that."


async def test_no_usage_chunk_unless_the_request_asks_for_it(session: aiohttp.ClientSession) -> None:
    ours = await _stream(session, Reply(text="a b"), {"model": "m", "stream": True})
    assert ours[-1] == "[DONE]"
    assert ours[-2]["choices"][0]["finish_reason"] == "stop"
    assert all("usage" not in c for c in ours[:-1])


async def test_blocking_text_body_matches_the_recorded_completion(session: aiohttp.ClientSession) -> None:
    async with ScriptedServer([Reply(text="YES", usage=(146, 3))]) as server:
        status, headers, raw = await post(session, f"{server.base_url}/chat/completions", BLOCKING)
    real_raw = recording("chat_text_stop.json")["response_body"]
    ours, real = orjson.loads(raw), orjson.loads(real_raw)
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert raw.startswith(b'{\n  "id"')  # pretty-printed like OpenAI
    assert raw.endswith(b"}\n")
    assert keys(ours) == keys(real)
    assert keys(ours["choices"][0]) == keys(real["choices"][0])
    assert ours["choices"][0]["message"] == real["choices"][0]["message"]
    assert ours["usage"] == real["usage"]
    assert ours["model"] == "gpt-4o-mini"


async def test_blocking_tool_calls_match_the_recorded_parallel_calls(session: aiohttp.ClientSession) -> None:
    real = orjson.loads(recording("chat_tool_calls_parallel.json")["response_body"])
    real_calls = real["choices"][0]["message"]["tool_calls"]
    reply = Reply(
        tool_calls=[(c["function"]["name"], c["function"]["arguments"], c["id"]) for c in real_calls]
    )
    async with ScriptedServer([reply]) as server:
        _, _, raw = await post(session, f"{server.base_url}/chat/completions", BLOCKING)
    ours = orjson.loads(raw)
    assert ours["choices"][0]["message"] == real["choices"][0]["message"]
    assert ours["choices"][0]["finish_reason"] == "tool_calls"


async def test_blocking_reasoning_and_refusal_fields(session: aiohttp.ClientSession) -> None:
    async with ScriptedServer([Reply(reasoning="why", text="because"), Reply(refusal="No.")]) as server:
        _, _, first = await post(session, f"{server.base_url}/chat/completions", BLOCKING)
        _, _, second = await post(session, f"{server.base_url}/chat/completions", BLOCKING)
    message = orjson.loads(first)["choices"][0]["message"]
    assert (message["reasoning_content"], message["content"]) == ("why", "because")
    refused = orjson.loads(second)["choices"][0]["message"]
    real = orjson.loads(recording("chat_refusal.json")["response_body"])["choices"][0]["message"]
    assert keys(refused) == keys(real)
    assert (refused["content"], refused["refusal"]) == (None, "No.")
