"""The script values: replies, tool calls, faults, usage estimates, JSON scripts."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentflow.model.response import TokenUsage
from agentflow.testing import (
    Fault,
    FaultKind,
    Reply,
    ScriptedServer,
    ScriptedToolCall,
    ScriptError,
    load_script,
)
from agentflow.testing.script import default_usage, split_deltas, turn_from_json


def test_tool_call_arguments_from_a_mapping_are_compact_json_and_strings_stay_verbatim() -> None:
    reply = Reply(tool_calls=[("get_weather", {"city": "Paris"}), ("get_time", '{"tz": "CET"}', "call_1")])
    first, second = reply.tool_calls
    assert first == ScriptedToolCall("get_weather", '{"city":"Paris"}')
    assert (second.arguments, second.id) == ('{"tz": "CET"}', "call_1")


def test_tool_calls_accept_mappings_and_reject_other_shapes() -> None:
    call = ScriptedToolCall.coerce({"name": "f", "arguments": {"x": 1}, "id": "c"})
    assert call == ScriptedToolCall("f", '{"x":1}', "c")
    with pytest.raises(ScriptError, match="tool call"):
        ScriptedToolCall.coerce({"arguments": "{}"})
    with pytest.raises(ScriptError, match="tool call"):
        ScriptedToolCall.coerce("f")
    with pytest.raises(ScriptError, match="arguments"):
        ScriptedToolCall("f", 3)  # type: ignore[arg-type]
    with pytest.raises(ScriptError, match="sequence"):
        Reply(tool_calls="f")


def test_a_reply_needs_some_content_but_empty_text_is_allowed() -> None:
    with pytest.raises(ScriptError, match="needs text"):
        Reply()
    assert Reply(text="").text == ""


def test_usage_pairs_become_token_usage_with_a_total() -> None:
    assert Reply(text="x", usage=(10, 5)).usage == TokenUsage(10, 5, 15)
    assert Reply(text="x", usage=TokenUsage(3, 4, reasoning_tokens=1)).usage == TokenUsage(
        3, 4, 7, reasoning_tokens=1
    )
    with pytest.raises(ScriptError, match="usage"):
        Reply(text="x", usage=(1, 2, 3))


def test_chunk_size_must_be_positive() -> None:
    with pytest.raises(ScriptError, match="chunk_size"):
        Reply(text="x", chunk_size=0)


def test_finish_reason_defaults_follow_the_content() -> None:
    assert Reply(text="x").wire_finish_reason == "stop"
    assert Reply(tool_calls=[("f", {})]).wire_finish_reason == "tool_calls"
    assert Reply(text="x", finish_reason="length").wire_finish_reason == "length"


@pytest.mark.parametrize("text", ["", "one", "Hello big  world ", "  lead", "a\nb\tc", "日本語 テキスト"])
@pytest.mark.parametrize("size", [None, 1, 3])
def test_deltas_always_join_back_to_the_text(text: str, size: int | None) -> None:
    pieces = split_deltas(text, size)
    assert "".join(pieces) == text
    assert all(pieces)


def test_default_usage_is_estimated_from_sizes_and_counts_reasoning() -> None:
    usage = default_usage(Reply(text="a" * 8, reasoning="r" * 4), request_size=100)
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (25, 3, 1)
    assert usage.total_tokens == 28
    assert default_usage(Reply(text="x", usage=(1, 1)), request_size=100) == TokenUsage(1, 1, 2)


def test_status_faults_default_to_openai_error_bodies() -> None:
    limited = orjson.loads(Fault.status(429).body)["error"]
    assert (limited["type"], limited["code"]) == ("requests", "rate_limit_exceeded")
    assert set(limited) == {"message", "type", "param", "code"}
    assert orjson.loads(Fault.status(503).body)["error"]["type"] == "server_error"
    assert orjson.loads(Fault.status(401, message="nope").body)["error"]["message"] == "nope"
    assert Fault.status(400, body="plain text").body == b"plain text"
    assert orjson.loads(Fault.status(400, body={"error": {"code": 400}}).body) == {"error": {"code": 400}}
    with pytest.raises(ScriptError, match="HTTP status"):
        Fault.status(42)


def test_fault_positions_must_not_be_negative() -> None:
    with pytest.raises(ScriptError, match="after_chunks"):
        Fault.truncate(-1)


def test_turns_from_json_cover_replies_and_every_fault() -> None:
    reply = turn_from_json({"text": "hi", "usage": {"input_tokens": 2, "output_tokens": 1}})
    assert isinstance(reply, Reply)
    assert reply.usage == TokenUsage(2, 1, 3)
    assert turn_from_json({"tool_calls": [["f", {"a": 1}]]}).tool_calls[0].arguments == '{"a":1}'  # type: ignore[union-attr]
    kinds: dict[str, dict[str, Any]] = {
        "status": {"status": 429, "headers": {"retry-after": "1"}},
        "stall": {"after_chunks": 2},
        "truncate": {},
        "disconnect": {"reply": {"text": "partial answer"}},
        "malformed_chunk": {},
        "stream_error": {"as_event": True, "code": "boom"},
    }
    for kind, fields in kinds.items():
        fault = turn_from_json({"fault": kind, **fields})
        assert isinstance(fault, Fault)
        assert fault.kind is FaultKind(kind)
    with pytest.raises(ScriptError, match="unknown fault"):
        turn_from_json({"fault": "explode"})
    with pytest.raises(ScriptError, match="unknown reply fields"):
        turn_from_json({"txt": "typo"})
    with pytest.raises(ScriptError, match="bad stall fault"):
        turn_from_json({"fault": "stall", "when": 1})


def test_scripts_load_from_a_list_or_an_object_with_a_default() -> None:
    turns, default = load_script(b'[{"text": "a"}, {"fault": "status", "status": 500}]')
    assert [type(t) for t in turns] == [Reply, Fault]
    assert default is None
    turns, default = load_script(b'{"default": {"text": "again"}}')
    assert turns == []
    assert isinstance(default, Reply)
    for bad in (b"{", b'{"turns": {}}', b'{"other": 1}', b"3"):
        with pytest.raises(ScriptError):
            load_script(bad)


def test_the_server_rejects_anything_that_is_not_a_turn() -> None:
    with pytest.raises(ScriptError, match="turn 1"):
        ScriptedServer([Reply(text="ok"), "not a turn"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="list of turns"):
        ScriptedServer(Reply(text="ok"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not both"):
        ScriptedServer(lambda request: Reply(text="x"), default=Reply(text="y"))
    with pytest.raises(RuntimeError, match="not running"):
        _ = ScriptedServer().base_url
