"""The host side of the channel codec: what the child may send, and how tool answers are encoded."""

from __future__ import annotations

from typing import Any

import attrs
import orjson
import pytest

from agentflow.result import ToolResult
from agentflow.sandbox import ProcessSandbox
from agentflow.sandbox.code_result import CodeErrorType
from agentflow.sandbox.frames import (
    FrameError,
    OutputChunk,
    Ready,
    StepDone,
    ToolCallRequest,
    decode_child_message,
    encode_frame,
    frame_size,
    tool_result_frame,
)

from .conftest import HostTools


def body(frame: bytes) -> object:
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    return orjson.loads(frame[4:])


def test_every_child_message_decodes_to_its_type() -> None:
    assert decode_child_message(b'{"t":"ready","v":1,"python":"3.11.2","pid":1}') == Ready("3.11.2", 1)
    assert decode_child_message(b'{"t":"call","id":1,"name":"n","args":{}}') == ToolCallRequest(1, "n", {})
    assert decode_child_message(b'{"t":"out","s":"stderr","d":"x"}') == OutputChunk("stderr", "x")
    done = decode_child_message(
        b'{"t":"done","step":2,"ok":false,"error":"boom","error_type":"memory","dropped":{"stdout":3,"stderr":0}}'
    )
    assert done == StepDone(step=2, ok=False, error="boom", error_type=CodeErrorType.MEMORY, dropped_stdout=3)
    final = decode_child_message(b'{"t":"done","step":1,"ok":true,"value":[1],"final":true}')
    assert final == StepDone(step=1, ok=True, value=[1], is_final=True)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"not json", "not JSON"),
        (b"[1]", "not a JSON object"),
        (b'{"t":"nope"}', "unknown frame type 'nope'"),
        (b'{"t":"call","id":true,"name":"n","args":{}}', "id must be an integer"),
        (b'{"t":"call","id":1,"name":"n","args":[]}', "args must be an object"),
        (b'{"t":"out","s":"stdin","d":""}', "unknown stream 'stdin'"),
        (b'{"t":"done","step":1,"ok":false}', "a failed step needs error and error_type"),
        (b'{"t":"done","step":1,"ok":false,"error":"e","error_type":"weird"}', "'weird' is not a valid"),
        (b'{"t":"done","step":1,"ok":true,"dropped":{"stdout":-1}}', "dropped counts must be integers >= 0"),
        (b'{"t":"done","ok":true,"value":"forged"}', "step must be an integer"),
        (b'{"t":"ready","v":2,"python":"3","pid":1}', "protocol version 2, expected 1"),
    ],
)
def test_malformed_frames_are_frame_errors(raw: bytes, message: str) -> None:
    with pytest.raises(FrameError, match=message.replace("(", r"\(").replace("[", r"\[")):
        decode_child_message(raw)


def test_an_oversized_frame_is_refused_before_it_is_read() -> None:
    assert frame_size((100).to_bytes(4, "big"), 100) == 100
    with pytest.raises(FrameError, match="a frame of 101 bytes"):
        frame_size((101).to_bytes(4, "big"), 100)


@attrs.frozen
class Point:
    x: int
    y: int


def test_tool_values_are_sent_as_json_with_fallbacks() -> None:
    def value_of(value: object, output: str = "text") -> object:
        return body(tool_result_frame(7, ToolResult("c", "t", output, value=value)))

    assert value_of({"a": (1, 2)}) == {"t": "result", "id": 7, "ok": True, "value": {"a": [1, 2]}}
    assert value_of(frozenset({3})) == {"t": "result", "id": 7, "ok": True, "value": [3]}
    assert value_of(Point(1, 2)) == {"t": "result", "id": 7, "ok": True, "value": {"x": 1, "y": 2}}
    assert value_of({1: "int key"}) == {"t": "result", "id": 7, "ok": True, "value": {"1": "int key"}}
    assert value_of(object(), "printed") == {"t": "result", "id": 7, "ok": True, "value": "printed"}


def test_a_failed_tool_sends_its_error_text() -> None:
    failed = ToolResult("c", "t", 'TOOL_ERROR: {"errorType":"timeout"}', ok=False, error_type="timeout")
    assert body(tool_result_frame(2, failed)) == {
        "t": "result",
        "id": 2,
        "ok": False,
        "error": 'TOOL_ERROR: {"errorType":"timeout"}',
    }


def test_encode_frame_prefixes_the_length() -> None:
    assert encode_frame({"a": "é"}) == b'\x00\x00\x00\x0a{"a":"\xc3\xa9"}'


def test_big_integers_cross_the_channel_exactly() -> None:
    # The child writes integers of any size (stdlib json); a float on the way would round 10**20 + 1.
    call = decode_child_message(b'{"t":"call","id":1,"name":"store","args":{"n":100000000000000000001}}')
    assert call == ToolCallRequest(1, "store", {"n": 10**20 + 1})
    done = decode_child_message(b'{"t":"done","step":1,"ok":true,"value":[-9223372036854775809]}')
    assert done == StepDone(step=1, ok=True, value=[-(2**63) - 1])
    result = tool_result_frame(2, ToolResult("c", "t", "", value={"total": 10**30, "ids": {2**64}}))
    assert result[4:] == b'{"t":"result","id":2,"ok":true,"value":{"total":%d,"ids":[%d]}}' % (10**30, 2**64)


async def test_code_gets_big_integers_from_and_to_its_tools(sandbox: ProcessSandbox) -> None:
    async def double(args: dict[str, Any]) -> Any:
        return args["n"] * 2

    tools = HostTools(double=double)
    result = await sandbox.execute("double(n=10**20 + 1) == 2 * 10**20 + 2", tools, tools.names)
    assert result.ok, result.error
    assert result.value is True
    assert tools.calls == [("double", {"n": 10**20 + 1})]
