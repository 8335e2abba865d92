"""An in-band error (an ``error`` event in a 200 stream, a ``failed`` response) has no HTTP status; its type
and code pick the same typed error an HTTP status would, with the same retry rules:
``context_length_exceeded`` in a stream is the ``BadRequestError`` it is as an HTTP 400."""

from __future__ import annotations

from typing import Any

import pytest
from responses_support import LocalServer, Reply, Sleeps, run_decoder, sse_body

from agentflow.model.errors import (
    AuthenticationError,
    BadRequestError,
    ModelError,
    NotFoundError,
    RateLimitError,
    ServerError,
    error_from_payload,
)
from agentflow.providers.openai.responses_model import OpenAIResponsesModel

CREATED = {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}
TOO_LONG = {
    "type": "invalid_request_error",
    "code": "context_length_exceeded",
    "message": "Your input exceeds the context window of this model.",
    "param": "input",
}


def test_a_stream_error_event_for_a_bad_request_is_a_bad_request_error() -> None:
    events, error = run_decoder(sse_body(CREATED, {"type": "error", "sequence_number": 2, "error": TOO_LONG}))
    assert events == []
    assert isinstance(error, BadRequestError)
    assert not error.retryable
    assert error.status is None
    assert (error.error_type, error.code, error.param) == (
        "invalid_request_error",
        "context_length_exceeded",
        "input",
    )


@pytest.mark.parametrize(
    ("error", "expected", "retryable"),
    [
        ({"type": "invalid_request_error", "code": "context_length_exceeded"}, BadRequestError, False),
        ({"code": "invalid_prompt"}, BadRequestError, False),
        ({"type": "invalid_request_error", "code": "model_not_found"}, NotFoundError, False),
        ({"type": "invalid_request_error", "code": "invalid_api_key"}, AuthenticationError, False),
        ({"type": "authentication_error"}, AuthenticationError, False),
        ({"type": "permission_error"}, AuthenticationError, False),
        ({"type": "not_found_error"}, NotFoundError, False),
        ({"type": "rate_limit_error"}, RateLimitError, True),
        ({"code": "rate_limit_exceeded"}, RateLimitError, True),
        ({"type": "insufficient_quota"}, RateLimitError, False),
        ({"code": "server_error"}, ServerError, True),
        ({"type": "api_error"}, ServerError, True),
        ({"type": "overloaded_error"}, ServerError, True),
        ({"type": "weird", "code": "something_new"}, ModelError, False),
    ],
)
def test_in_band_error_types_map_like_statuses(
    error: dict[str, Any], expected: type[ModelError], retryable: bool
) -> None:
    typed = error_from_payload({"error": {"message": "m", **error}})
    assert type(typed) is expected
    assert typed.retryable is retryable


def test_a_status_still_decides_when_there_is_one() -> None:
    typed = error_from_payload({"error": {"type": "invalid_request_error", "message": "m"}}, status=429)
    assert type(typed) is RateLimitError


async def test_an_error_event_over_http_is_typed_and_not_retried(
    server: LocalServer, model: OpenAIResponsesModel, sleeps: Sleeps
) -> None:
    server.queue(Reply.sse(sse_body(CREATED, {"type": "error", "error": TOO_LONG})))
    with pytest.raises(BadRequestError, match="exceeds the context window"):
        await model.create_stream("hi").collect()
    assert len(server.requests) == 1
    assert sleeps.delays == []
