"""RetryPolicy: what is retried, Retry-After handling, capped exponential back-off with jitter; Timeout."""

from __future__ import annotations

import pytest

from agentflow.http.retry import RetryPolicy, retry_after_seconds
from agentflow.http.timeouts import Timeout
from agentflow.model.errors import (
    ModelConnectionError,
    ModelTimeoutError,
    ProtocolError,
    StreamCutOffError,
    error_from_status,
)

POLICY = RetryPolicy(jitter=0)


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_transient_statuses_are_retried(status: int) -> None:
    assert POLICY.should_retry(error_from_status(status, ""), attempt=1)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_never_retried(status: int) -> None:
    assert not POLICY.should_retry(error_from_status(status, ""), attempt=1)


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_x_should_retry_true_retries_even_the_never_retried_statuses(status: int) -> None:
    # The server's word first, as in the openai SDK (its ``_should_retry`` reads the header first).
    error = error_from_status(status, "", {"x-should-retry": "true"})
    assert error.retryable
    assert POLICY.should_retry(error, attempt=1)


def test_x_should_retry_header_is_honoured() -> None:
    assert not POLICY.should_retry(error_from_status(500, "", {"x-should-retry": "false"}), attempt=1)
    assert POLICY.should_retry(error_from_status(410, "", {"X-Should-Retry": "true"}), attempt=1)


def test_insufficient_quota_is_not_retried() -> None:
    body = '{"error": {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}}'
    assert not POLICY.should_retry(error_from_status(429, body), attempt=1)


def test_network_failures_timeouts_and_cut_off_streams_are_retried_protocol_errors_are_not() -> None:
    assert POLICY.should_retry(ModelConnectionError("refused"), attempt=1)
    assert POLICY.should_retry(ModelTimeoutError("slow"), attempt=1)
    # The client retries a cut-off stream only while nothing was emitted (tests/providers/chat).
    assert POLICY.should_retry(StreamCutOffError("cut"), attempt=1)
    assert not POLICY.should_retry(ProtocolError("bad json"), attempt=1)
    assert not POLICY.should_retry(ValueError("not a model error"), attempt=1)


def test_default_is_two_retries() -> None:
    error = ModelConnectionError("refused")
    assert RetryPolicy().max_attempts == 3
    assert [POLICY.should_retry(error, attempt=n) for n in (1, 2, 3)] == [True, True, False]
    assert not RetryPolicy.none().should_retry(error, attempt=1)


def test_backoff_is_exponential_and_capped() -> None:
    policy = RetryPolicy(initial_delay=1, multiplier=3, max_delay=5, jitter=0)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1, 3, 5, 5]


def test_jitter_only_shortens_the_delay_within_its_fraction() -> None:
    assert RetryPolicy(jitter=0.25, rng=lambda: 1.0).delay(1) == pytest.approx(0.375)
    assert RetryPolicy(jitter=0.25, rng=lambda: 0.0).delay(1) == pytest.approx(0.5)


def test_retry_after_ms_wins_over_retry_after() -> None:
    error = error_from_status(429, "", {"retry-after-ms": "1500", "retry-after": "9"})
    assert POLICY.delay(1, error) == 1.5


def test_retry_after_seconds_and_http_date() -> None:
    assert POLICY.delay(1, error_from_status(503, "", {"Retry-After": "7"})) == 7.0
    dated = error_from_status(503, "", {"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"})
    assert POLICY.delay(1, dated, now=1445412485.0) == 5.0


def test_retry_after_beyond_the_limit_or_unreadable_falls_back_to_backoff() -> None:
    assert POLICY.delay(2, error_from_status(429, "", {"retry-after": "3600"})) == 1.0
    assert POLICY.delay(1, error_from_status(429, "", {"retry-after": "soon"})) == 0.5


def test_retry_after_parsing_edge_cases() -> None:
    assert retry_after_seconds({}) is None
    assert retry_after_seconds({"retry-after": "0"}) == 0.0
    assert retry_after_seconds({"RETRY-AFTER-MS": "20"}) == 0.02
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412500.0) == 0.0


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-3", "1e400", "NaN"])
def test_negative_and_non_finite_retry_after_values_are_ignored(value: str) -> None:
    assert retry_after_seconds({"retry-after": value}) is None
    assert retry_after_seconds({"retry-after-ms": value}) is None
    # Ignored, not a zero wait: the back-off applies, and a readable Retry-After behind a bad ms one wins.
    assert POLICY.delay(1, error_from_status(429, "", {"retry-after": value})) == 0.5
    assert POLICY.delay(1, error_from_status(429, "", {"retry-after-ms": value, "retry-after": "2"})) == 2.0


@pytest.mark.parametrize(("value", "retried"), [("False", False), (" FALSE ", False), ("True", True)])
def test_x_should_retry_is_read_whatever_its_case(value: str, retried: bool) -> None:
    assert POLICY.should_retry(error_from_status(500, "", {"X-Should-Retry": value}), attempt=1) is retried
    assert POLICY.should_retry(error_from_status(422, "", {"x-should-retry": value}), attempt=1) is retried


def test_policy_values_are_validated() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError, match="jitter"):
        RetryPolicy(jitter=1.5)


def test_timeout_defaults_give_an_answer_ten_minutes_and_a_stream_gap_one() -> None:
    # read: the openai SDK's 600 s, the time a reasoning model may take; idle: seed 003's 60 s read timeout,
    # between the chunks of a stream whose answer began.
    assert Timeout() == Timeout(connect=10.0, read=600.0, total=None, idle=60.0)
    assert Timeout().stream_gap == 60.0
    assert Timeout(read=5).stream_gap == 5  # read bounds every wait, the gaps of a stream too


@pytest.mark.parametrize("field", ["connect", "read", "total", "idle"])
def test_timeout_rejects_non_positive_values(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Timeout(**{field: 0})
    assert getattr(Timeout(**{field: None}), field) is None
