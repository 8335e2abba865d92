"""Reasoning that came inline (a leading ``<think>`` block) is not sent back, also when the server sent an
empty ``reasoning_content`` beside it; a tool-call turn keeps that field (DeepSeek's thinking mode refuses the
turn without it), and it carries the turn's reasoning. A streamed answer and the same answer in one body read
the same, exactly, however the content is cut into deltas."""

from __future__ import annotations

import itertools
import random
from typing import Any

import orjson

from agentflow.http.sse import SseEvent
from agentflow.model.events import ModelCompleted
from agentflow.model.messages import AiMessage
from agentflow.providers.openai.chat_codec import decode_chat_response, encode_message
from agentflow.providers.openai.chat_stream import ChatStreamDecoder

CALL = {"id": "call_1", "type": "function", "function": {"name": "roll", "arguments": "{}"}}


def blocking(content: str, **fields: Any) -> AiMessage:
    message = {"role": "assistant", "content": content, **fields}
    return decode_chat_response({"choices": [{"message": message, "finish_reason": "stop"}]}).message


def streamed(pieces: list[str], native: str | None = None, calls: bool = False) -> AiMessage:
    """The message of a stream of ``pieces`` of content; ``native`` rides on the first delta (as DeepSeek's
    opening ``reasoning_content: ""`` does), and a tool call follows the content when ``calls``."""
    decoder = ChatStreamDecoder()
    deltas: list[dict[str, Any]] = [{"content": piece} for piece in pieces] or [{"content": None}]
    if native is not None:
        deltas[0] = {**deltas[0], "reasoning_content": native}
    if calls:
        deltas.append({"tool_calls": [{"index": 0, **CALL}]})
    events = []
    for delta in deltas:
        body = {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        events.extend(decoder.feed(SseEvent(orjson.dumps(body).decode())))
    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if calls else "stop"}]}
    events.extend(decoder.feed(SseEvent(orjson.dumps(finish).decode())))
    events.extend(decoder.finish())
    completed = events[-1]
    assert isinstance(completed, ModelCompleted)
    return completed.response.message


def test_inline_reasoning_beside_an_empty_reasoning_content_is_not_sent_back() -> None:
    content = "<think>private chain</think>Hi"
    for message in (
        blocking(content, reasoning_content=""),
        streamed(["<think>private ", "chain</think>Hi"], ""),
    ):
        assert (message.text, message.reasoning, message.reasoning_field) == ("Hi", "private chain", None)
        assert encode_message(message) == {"role": "assistant", "content": "Hi"}


def test_a_tool_call_turn_keeps_the_reasoning_content_its_server_sent_empty() -> None:
    content = "<think>I need a die.</think>"
    for message in (
        blocking(content, reasoning_content="", tool_calls=[CALL]),
        streamed(["<think>I need", " a die.</think>"], "", calls=True),
    ):
        assert (message.text, message.reasoning, message.reasoning_field) == (
            None,
            "I need a die.",
            "reasoning_content",
        )
        assert encode_message(message)["reasoning_content"] == "I need a die."


def test_a_tool_call_turn_with_no_reasoning_still_sends_reasoning_content_empty() -> None:
    for message in (blocking("", reasoning_content="", tool_calls=[CALL]), streamed([], "", calls=True)):
        assert encode_message(message)["reasoning_content"] == ""


def test_inline_reasoning_without_any_field_is_never_sent_back() -> None:
    for calls in (False, True):
        message = streamed(["<think>why</think>"], calls=calls)
        assert message.reasoning_field is None
        assert "reasoning_content" not in encode_message(message)


ALPHABET = [
    "<think>",
    "</think>",
    "<",
    "</",
    "<th",
    "think",
    ">",
    "\n",
    " ",
    "\r\n",
    "a",
    "é",
    "<think",
    "</think",
]


def test_a_stream_cut_anywhere_reads_as_the_blocking_answer_exactly() -> None:
    rng = random.Random(1)
    for _ in range(400):
        content = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 8)))
        points = sorted({rng.randint(0, len(content)) for _ in range(rng.randint(0, 4))})
        bounds = [0, *points, len(content)]
        pieces = [content[a:b] for a, b in itertools.pairwise(bounds) if content[a:b]]
        native = rng.choice([None, "", "R"])
        calls = rng.random() < 0.25
        fields: dict[str, Any] = {} if native is None else {"reasoning_content": native}
        if calls:
            fields["tool_calls"] = [CALL]
        whole = blocking(content, **fields)
        cut = streamed(pieces, native, calls)
        assert (cut.text, cut.reasoning, cut.reasoning_field) == (
            whole.text,
            whole.reasoning,
            whole.reasoning_field,
        ), (content, pieces, native, calls)
