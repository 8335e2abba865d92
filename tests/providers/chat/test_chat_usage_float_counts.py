"""Usage counts that a gateway re-serialised as floats (``3.0``) or decimal strings (``"3"``) are counts, as
the Responses codec reads them; other non-integers still read as 0 (Chat usage is best effort, never a
reason to fail a call)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentflow.http.sse import SseEvent
from agentflow.model.events import UsageReported
from agentflow.model.response import TokenUsage
from agentflow.providers.openai.chat_codec import decode_chat_response, decode_usage
from agentflow.providers.openai.chat_stream import ChatStreamDecoder

FLOATS = {
    "prompt_tokens": 30.0,
    "completion_tokens": 5.0,
    "total_tokens": 35.0,
    "prompt_tokens_details": {"cached_tokens": 10.0, "cache_write_tokens": 2.0},
    "completion_tokens_details": {"reasoning_tokens": 1.0},
}
EXPECTED = TokenUsage(30, 5, 35, 10, 2, 1)


def test_integral_float_counts_are_counts() -> None:
    usage = decode_usage(FLOATS)
    assert usage == EXPECTED
    assert all(type(getattr(usage, f)) is int for f in ("input_tokens", "output_tokens", "total_tokens"))


def test_a_missing_total_is_the_sum_of_float_counts() -> None:
    assert decode_usage({"prompt_tokens": 3.0, "completion_tokens": 1.0}).total_tokens == 4


@pytest.mark.parametrize("value", [3.5, float("nan"), float("inf"), "3.0", "-3", "٣", "", True])
def test_other_non_integer_counts_read_as_zero(value: Any) -> None:
    assert decode_usage({"prompt_tokens": value, "completion_tokens": 1}).input_tokens == 0


def test_decimal_string_counts_are_counts() -> None:
    # Some gateways re-serialise counts as strings; Responses reads them the same way.
    usage = decode_usage({"prompt_tokens": "3", "completion_tokens": "1", "total_tokens": "4"})
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (3, 1, 4)


def test_blocking_and_streamed_answers_read_float_counts() -> None:
    answer = {"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}], "usage": FLOATS}
    assert decode_chat_response(answer).usage == EXPECTED
    decoder = ChatStreamDecoder()
    chunk = orjson.dumps({"choices": [], "usage": FLOATS}).decode()
    assert decoder.feed(SseEvent(chunk)) == [UsageReported(EXPECTED)]
