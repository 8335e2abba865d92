"""Responses usage counts that a gateway re-serialised as strings (``"3"``) or floats (``3.0``) are counts, as
Chat reads them: a complete answer never fails over its usage's number type."""

from __future__ import annotations

from typing import Any

import pytest

from agentflow.model.errors import ProtocolError
from agentflow.providers.openai.responses_codec import decode_usage


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


@pytest.mark.parametrize("value", ["3.5", "-3", "three", [3]])
def test_other_values_are_still_refused(value: Any) -> None:
    with pytest.raises(ProtocolError, match="input_tokens is not an integer"):
        decode_usage({"input_tokens": value, "output_tokens": 1})
