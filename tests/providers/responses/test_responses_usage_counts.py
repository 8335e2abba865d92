"""Responses usage counts are read as Chat reads them: counts a gateway re-serialised as strings (``"3"``) or
floats (``3.0``) are counts, anything else (``15.5``, ``"three"``) is 0, and a complete answer never fails
over its usage."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentflow.http.sse import SseEvent
from agentflow.model.events import ModelCompleted
from agentflow.model.response import TokenUsage
from agentflow.providers.openai.chat_codec import decode_usage as decode_chat_usage
from agentflow.providers.openai.responses_codec import decode_response, decode_usage
from agentflow.providers.openai.responses_stream import ResponsesStreamDecoder


def test_decimal_string_counts_are_counts() -> None:
    usage = decode_usage(
        {
            "input_tokens": "10",
            "output_tokens": "5",
            "total_tokens": "15",
            "input_tokens_details": {"cached_tokens": "4"},
            "output_tokens_details": {"reasoning_tokens": "2"},
        }
    )
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (10, 5, 15)
    assert (usage.cached_input_tokens, usage.reasoning_tokens) == (4, 2)


@pytest.mark.parametrize("value", [15.5, "3.5", "-3", "three", [3], None, True])
def test_other_values_count_as_zero_as_on_chat(value: Any) -> None:
    responses = decode_usage({"input_tokens": value, "output_tokens": 1, "total_tokens": value})
    chat = decode_chat_usage({"prompt_tokens": value, "completion_tokens": 1, "total_tokens": value})
    assert responses is not None
    assert (responses.input_tokens, responses.output_tokens) == (0, 1)
    assert (chat.input_tokens, chat.output_tokens) == (0, 1)
    assert responses.total_tokens == chat.total_tokens


def test_a_fractional_count_keeps_a_complete_answer() -> None:
    # A gateway that averages or converts counts: the answer itself is whole, and it is what matters.
    response = decode_response(
        {
            "id": "resp_1",
            "status": "completed",
            "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]}
            ],
            "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15.5},
        }
    )
    assert response.output_text == "x"
    assert response.usage is not None
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (10, 5, 0)


def test_a_fractional_count_keeps_a_complete_streamed_answer() -> None:
    decoder = ResponsesStreamDecoder.for_responses()
    done = {
        "type": "response.completed",
        "response": {
            "id": "resp_1",
            "status": "completed",
            "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]}
            ],
            "usage": {"input_tokens": 10.5, "output_tokens": 5},
        },
    }
    events = decoder.feed(SseEvent(orjson.dumps(done).decode()))
    completed = events[-1]
    assert isinstance(completed, ModelCompleted)
    assert completed.response.output_text == "x"
    assert completed.response.usage == TokenUsage(0, 5, 5)


def test_usage_that_is_not_an_object_is_no_usage() -> None:
    assert decode_usage("15 tokens") is None
    assert decode_usage(None) is None
