"""A complete answer survives what some servers send around the end marker: ``[DONE]`` with whitespace (or in
lower case), and blank ``data:`` lines (keep-alives), also after the finish. Malformed JSON still fails."""

from __future__ import annotations

import pytest
from chat_local_server import LocalServer, SleepRecorder, collect, sse_reply

from agentflow import ModelCompleted, ProtocolError
from agentflow.http.retry import RetryPolicy
from agentflow.http.sse import SseEvent
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.chat_stream import ChatStreamDecoder

HI_STOP = '{"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]}'


@pytest.mark.parametrize("marker", ["[DONE] ", " [DONE]", "[DONE]\r", "\t[DONE]  ", "[done]"])
def test_done_with_whitespace_around_it_ends_the_stream(marker: str) -> None:
    decoder = ChatStreamDecoder()
    decoder.feed(SseEvent('{"choices": [{"index": 0, "delta": {"content": "Hi"}}]}'))
    assert decoder.feed(SseEvent(marker)) == []
    assert decoder.done
    completed = decoder.finish()[-1]
    assert isinstance(completed, ModelCompleted)
    assert completed.response.message.text == "Hi"


@pytest.mark.parametrize("data", ["", " ", "\n", "\r\n  "])
def test_blank_data_is_skipped(data: str) -> None:
    decoder = ChatStreamDecoder()
    assert decoder.feed(SseEvent(data)) == []
    assert not decoder.done
    decoder.feed(SseEvent(HI_STOP))
    assert decoder.feed(SseEvent(data)) == []  # after the finish, too
    assert decoder.finish()[-1].response.message.text == "Hi"  # type: ignore[attr-defined]


@pytest.mark.parametrize("data", ["[DONE]x", "DONE", "{", "not json"])
def test_other_non_json_data_is_still_a_protocol_error(data: str) -> None:
    with pytest.raises(ProtocolError, match="malformed JSON"):
        ChatStreamDecoder().feed(SseEvent(data))


@pytest.mark.parametrize(
    "tail",
    [b"data: [DONE] \n\n", b"data: \n\ndata: [DONE]\n\n", b"data:\n\n", b"data: \n\n"],
    ids=["done-trailing-space", "blank-then-done", "blank-no-space", "blank-at-the-end"],
)
async def test_a_complete_answer_is_kept_whatever_follows_its_finish(
    server: LocalServer, sleeps: SleepRecorder, tail: bytes
) -> None:
    server.add(sse_reply([f"data: {HI_STOP}\n\n".encode(), tail]))
    async with OpenAIChatModel(
        base_url=server.base_url, model="m", retry=RetryPolicy.none(), sleep=sleeps
    ) as model:
        events, error = await collect(model)
    assert error is None
    completed = events[-1]
    assert isinstance(completed, ModelCompleted)
    assert completed.response.message.text == "Hi"


async def test_a_blank_keep_alive_mid_stream_is_skipped(server: LocalServer, sleeps: SleepRecorder) -> None:
    first = b'data: {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}\n\n'
    server.add(sse_reply([first, b"data: \n\n", f"data: {HI_STOP}\n\ndata: [DONE]\n\n".encode()]))
    async with OpenAIChatModel(
        base_url=server.base_url, model="m", retry=RetryPolicy.none(), sleep=sleeps
    ) as model:
        events, error = await collect(model)
    assert error is None
    assert events[-1].response.message.text == "HiHi"  # type: ignore[attr-defined]
