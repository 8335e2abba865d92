"""Faults, callable turns and script bookkeeping of the scripted server, seen by a plain aiohttp client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from scripted_support import parse_sse, payloads, post, read_frame, recorded_payloads, recording

from agentflow.testing import Fault, Reply, ScriptedServer, Turn


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


CHAT_STREAM = {"model": "m", "stream": True, "stream_options": {"include_usage": True}, "messages": []}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
RESPONSES_STREAM = {"model": "m", "stream": True, "input": "hi"}
SHORT = Reply(text="a b c", usage=(1, 1))  # chat stream: role, 3 deltas, finish, usage, [DONE] = 7 frames


async def test_status_fault_sends_headers_and_an_openai_error_then_the_script_goes_on(
    session: aiohttp.ClientSession,
) -> None:
    script: list[Turn] = [
        Fault.status(429, headers={"retry-after-ms": "10", "retry-after": "1"}),
        Reply(text="ok"),
    ]
    async with ScriptedServer(script) as server:
        status, headers, raw = await post(session, f"{server.base_url}/chat/completions", CHAT)
        assert (status, headers["retry-after-ms"], headers["retry-after"]) == (429, "10", "1")
        assert headers["Content-Type"] == "application/json"
        assert orjson.loads(raw)["error"]["code"] == "rate_limit_exceeded"
        status, _, raw = await post(session, f"{server.base_url}/chat/completions", CHAT)
        assert (status, orjson.loads(raw)["choices"][0]["message"]["content"]) == (200, "ok")
        assert server.remaining == 0
        assert server.errors == ()


async def test_a_streaming_request_gets_a_plain_json_error_for_a_status_fault(
    session: aiohttp.ClientSession,
) -> None:
    async with ScriptedServer([Fault.status(400, body="<html>bad gateway</html>", headers={})]) as server:
        status, headers, raw = await post(session, f"{server.base_url}/responses", RESPONSES_STREAM)
    assert (status, headers["Content-Type"], raw) == (400, "application/json", b"<html>bad gateway</html>")


async def test_stall_sends_n_events_then_nothing_until_the_server_stops(
    session: aiohttp.ClientSession,
) -> None:
    server = ScriptedServer([Fault.stall(after_chunks=2, reply=SHORT)])
    await server.start()
    try:
        async with session.post(f"{server.base_url}/chat/completions", json=CHAT_STREAM) as response:
            first, second = [await read_frame(response) for _ in range(2)]
            assert orjson.loads(first[6:])["choices"][0]["delta"]["role"] == "assistant"
            assert orjson.loads(second[6:])["choices"][0]["delta"]["content"] == "a"
            await server.stop()  # releases the stall; the connection is dropped
            with pytest.raises(aiohttp.ClientPayloadError):
                await response.content.readany()  # nothing was buffered after the two frames
    finally:
        await server.stop()


async def test_stall_of_a_blocking_request_sends_headers_but_no_body(session: aiohttp.ClientSession) -> None:
    server = ScriptedServer([Fault.stall()])
    await server.start()
    try:
        async with session.post(
            f"{server.base_url}/responses", json={"model": "m", "input": "x"}
        ) as response:
            assert response.status == 200
            await server.stop()
            with pytest.raises(aiohttp.ClientPayloadError):
                await response.read()
    finally:
        await server.stop()


async def test_stop_returns_when_a_stalled_client_has_already_gone(session: aiohttp.ClientSession) -> None:
    server = ScriptedServer([Fault.stall(after_chunks=1)])
    async with server, session.post(f"{server.base_url}/chat/completions", json=CHAT_STREAM) as response:
        await read_frame(response)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("path", "body"), [("chat/completions", CHAT_STREAM), ("responses", RESPONSES_STREAM)]
)
async def test_truncate_ends_the_body_cleanly_after_n_events(
    session: aiohttp.ClientSession, path: str, body: dict[str, object]
) -> None:
    async with ScriptedServer([Fault.truncate(after_chunks=3, reply=SHORT), SHORT]) as server:
        _, _, cut = await post(session, f"{server.base_url}/{path}", body)
        _, _, whole = await post(session, f"{server.base_url}/{path}", body)
    cut_events, whole_events = parse_sse(cut), parse_sse(whole)
    assert len(cut_events) == 3
    assert [data for _, data in cut_events] != [data for _, data in whole_events[:3]]  # other request ids
    assert [event for event, _ in cut_events] == [event for event, _ in whole_events[:3]]
    assert all(data != "[DONE]" and "response.completed" not in data for _, data in cut_events)


async def test_disconnect_drops_the_connection_after_n_events(session: aiohttp.ClientSession) -> None:
    server = ScriptedServer([Fault.disconnect(after_chunks=2, reply=SHORT)])
    async with server, session.post(f"{server.base_url}/responses", json=RESPONSES_STREAM) as response:
        frames = [await read_frame(response) for _ in range(2)]
        with pytest.raises(aiohttp.ClientPayloadError):
            await response.content.readany()
    assert [event for event, _ in parse_sse(b"".join(frames))] == ["response.created", "response.in_progress"]


@pytest.mark.parametrize("fault", [Fault.truncate(), Fault.disconnect()])
async def test_blocking_truncate_and_disconnect_send_half_a_body(
    session: aiohttp.ClientSession, fault: Fault
) -> None:
    server = ScriptedServer([fault])
    async with server, session.post(f"{server.base_url}/chat/completions", json=CHAT) as response:
        if fault == Fault.truncate():
            body = await response.read()
            assert body.startswith(b'{\n  "id"')
            with pytest.raises(orjson.JSONDecodeError):
                orjson.loads(body)
        else:
            with pytest.raises(aiohttp.ClientPayloadError):
                await response.read()


@pytest.mark.parametrize(
    ("path", "body", "bad_event"),
    [("chat/completions", CHAT_STREAM, None), ("responses", RESPONSES_STREAM, "response.output_text.delta")],
)
async def test_malformed_chunk_is_one_non_json_data_line_then_the_stream_goes_on(
    session: aiohttp.ClientSession, path: str, body: dict[str, object], bad_event: str | None
) -> None:
    async with ScriptedServer([Fault.malformed_chunk(after_chunks=2, reply=SHORT)]) as server:
        status, _, raw = await post(session, f"{server.base_url}/{path}", body)
    events = parse_sse(raw)
    assert status == 200
    assert events[2][0] == bad_event
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(events[2][1])
    rest = [data for _, data in events[:2] + events[3:]]
    assert all(data == "[DONE]" or isinstance(orjson.loads(data), dict) for data in rest)
    assert rest[-1] == "[DONE]" or orjson.loads(rest[-1])["type"] == "response.completed"


async def test_blocking_malformed_body_is_not_json(session: aiohttp.ClientSession) -> None:
    async with ScriptedServer([Fault.malformed_chunk()]) as server:
        status, headers, raw = await post(
            session, f"{server.base_url}/responses", {"model": "m", "input": "x"}
        )
    assert (status, headers["Content-Type"]) == (200, "application/json")
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)


async def test_chat_stream_error_as_a_data_chunk_then_done(session: aiohttp.ClientSession) -> None:
    fault = Fault.stream_error(after_chunks=2, message="Token limit reached", code=400, reply=SHORT)
    async with ScriptedServer([fault]) as server:
        status, _, raw = await post(session, f"{server.base_url}/chat/completions", CHAT_STREAM)
    chunks = payloads(raw)
    assert status == 200
    assert len(chunks) == 4
    assert chunks[2] == {
        "error": {"message": "Token limit reached", "type": "server_error", "param": None, "code": 400}
    }
    assert chunks[3] == "[DONE]"


async def test_chat_stream_error_as_an_error_event_like_groq(session: aiohttp.ClientSession) -> None:
    fault = Fault.stream_error(
        after_chunks=1,
        message="Tool call validation failed",
        type="invalid_request_error",
        code="tool_use_failed",
        as_event=True,
    )
    async with ScriptedServer([fault]) as server:
        _, _, raw = await post(session, f"{server.base_url}/chat/completions", CHAT_STREAM)
    events = parse_sse(raw)
    real = parse_sse(recording("chat_stream_groq_error_event.json")["response_body"])
    assert events[-1][0] == real[-1][0] == "error"
    ours, theirs = orjson.loads(events[-1][1]), orjson.loads(real[-1][1])
    assert {"message", "type", "code"} <= set(ours["error"]) & set(theirs["error"])
    assert len(events) == 2


async def test_responses_stream_error_is_an_error_event_then_response_failed(
    session: aiohttp.ClientSession,
) -> None:
    fault = Fault.stream_error(after_chunks=2, message="You exceeded your quota", type="insufficient_quota")
    async with ScriptedServer([fault]) as server:
        _, _, raw = await post(session, f"{server.base_url}/responses", RESPONSES_STREAM)
    ours = payloads(raw)
    real = recorded_payloads("responses_stream_error_event.json")
    assert [p["type"] for p in ours] == [p["type"] for p in real]
    assert [set(p) for p in ours] == [set(p) for p in real]
    assert set(ours[2]["error"]) == set(real[2]["error"])
    assert ours[3]["response"]["error"] == {
        "code": "insufficient_quota",
        "message": "You exceeded your quota",
    }
    assert ours[3]["response"]["status"] == "failed"
    assert [p["sequence_number"] for p in ours] == [0, 1, 2, 3]


async def test_blocking_stream_error_is_an_error_body_with_status_200(session: aiohttp.ClientSession) -> None:
    async with ScriptedServer([Fault.stream_error(message="boom")]) as server:
        status, _, raw = await post(session, f"{server.base_url}/chat/completions", CHAT)
    assert (status, orjson.loads(raw)["error"]["message"]) == (200, "boom")


async def test_a_fault_position_past_the_stream_is_a_clear_server_error(
    session: aiohttp.ClientSession,
) -> None:
    async with ScriptedServer([Fault.truncate(after_chunks=7, reply=SHORT)]) as server:
        status, _, raw = await post(session, f"{server.base_url}/chat/completions", CHAT_STREAM)
    assert status == 500
    message = orjson.loads(raw)["error"]["message"]
    assert "after_chunks=7" in message
    assert "only 7 events" in message
    assert server.errors == (message,)


async def test_an_exhausted_script_answers_500_and_says_so(session: aiohttp.ClientSession) -> None:
    async with ScriptedServer([Reply(text="only one")]) as server:
        await post(session, f"{server.base_url}/chat/completions", CHAT)
        status, _, raw = await post(session, f"{server.base_url}/chat/completions", CHAT)
    assert status == 500
    error = orjson.loads(raw)["error"]
    assert "script exhausted" in error["message"]
    assert "request #2" in error["message"]
    assert error["type"] == "scripted_server_error"
    assert len(server.requests) == 2
    assert server.errors == (error["message"],)


async def test_the_default_turn_answers_after_the_script(session: aiohttp.ClientSession) -> None:
    async with ScriptedServer([Reply(text="first")], default=Reply(text="again")) as server:
        texts = []
        for _ in range(3):
            _, _, raw = await post(session, f"{server.base_url}/chat/completions", CHAT)
            texts.append(orjson.loads(raw)["choices"][0]["message"]["content"])
    assert texts == ["first", "again", "again"]


async def test_callable_turns_get_the_parsed_request(session: aiohttp.ClientSession) -> None:
    async def later(request: dict[str, Any]) -> Reply | Fault:
        return Fault.status(503) if request.get("model") == "down" else Reply(text="async")

    script: list[Turn] = [lambda request: Reply(text=f"{len(request['messages'])} message(s)"), later, later]
    async with ScriptedServer(script) as server:
        _, _, first = await post(session, f"{server.base_url}/chat/completions", CHAT)
        _, _, second = await post(session, f"{server.base_url}/chat/completions", CHAT)
        status, _, _ = await post(session, f"{server.base_url}/chat/completions", {**CHAT, "model": "down"})
    assert orjson.loads(first)["choices"][0]["message"]["content"] == "1 message(s)"
    assert orjson.loads(second)["choices"][0]["message"]["content"] == "async"
    assert status == 503


async def test_one_responder_answers_every_request(session: aiohttp.ClientSession) -> None:
    async with ScriptedServer(lambda request: Reply(text=str(request["model"]))) as server:
        answers = []
        for model in ("a", "b"):
            _, _, raw = await post(session, f"{server.base_url}/responses", {"model": model, "input": "x"})
            answers.append(orjson.loads(raw)["output"][0]["content"][0]["text"])
    assert answers == ["a", "b"]


async def test_a_broken_callable_turn_is_a_clear_server_error(session: aiohttp.ClientSession) -> None:
    def broken(request: dict[str, Any]) -> Reply:
        raise KeyError("tools")

    def wrong(request: dict[str, Any]) -> Any:
        return "text"

    async with ScriptedServer([broken, wrong]) as server:
        first, _, raw_first = await post(session, f"{server.base_url}/chat/completions", CHAT)
        second, _, raw_second = await post(session, f"{server.base_url}/chat/completions", CHAT)
    assert (first, second) == (500, 500)
    assert "callable turn raised KeyError" in orjson.loads(raw_first)["error"]["message"]
    assert "returned str" in orjson.loads(raw_second)["error"]["message"]
    assert len(server.errors) == 2


async def test_requests_are_recorded_and_paths_without_v1_work(session: aiohttp.ClientSession) -> None:
    async with ScriptedServer([Reply(text="x", headers={"x-scripted": "yes"})] * 2) as server:
        async with session.post(
            f"{server.url}/chat/completions", json=CHAT, headers={"Authorization": "Bearer k"}
        ) as response:
            assert response.headers["x-scripted"] == "yes"
            assert response.headers["x-request-id"] == "req_scripted_000001"
        status, _, _ = await post(session, f"{server.url}/responses", RESPONSES_STREAM)
    first, second = server.requests
    assert (first.path, first.api, first.stream, first.body) == ("/chat/completions", "chat", False, CHAT)
    assert first.headers["authorization"] == "Bearer k"
    assert first.raw_body == orjson.dumps(CHAT) or orjson.loads(first.raw_body) == CHAT
    assert (second.api, second.stream, status) == ("responses", True, 200)


async def test_bad_paths_methods_and_bodies_are_answered_without_using_a_turn(
    session: aiohttp.ClientSession,
) -> None:
    async with ScriptedServer([Reply(text="kept")]) as server:
        missing, _, raw = await post(session, f"{server.base_url}/completions", CHAT)
        async with session.get(f"{server.base_url}/chat/completions") as response:
            wrong_method = response.status
        async with session.post(f"{server.base_url}/chat/completions", data=b"not json") as response:
            not_json = response.status
        assert server.remaining == 1
    assert (missing, wrong_method, not_json) == (404, 405, 400)
    assert "no route for POST /v1/completions" in orjson.loads(raw)["error"]["message"]
    assert len(server.requests) == 3
    assert server.requests[2].body is None


async def test_large_request_bodies_are_accepted(session: aiohttp.ClientSession) -> None:
    history = [{"role": "user", "content": "x" * 1024}] * 2048  # over aiohttp's default 1 MiB read cap
    async with ScriptedServer([Reply(text="read it all")]) as server:
        status, _, _ = await post(
            session, f"{server.base_url}/chat/completions", {"model": "m", "messages": history}
        )
    assert status == 200
    assert len(server.requests[0].body["messages"]) == 2048
