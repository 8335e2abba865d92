"""The unified model types: construction, coercion, usage arithmetic and event serialisation."""

import orjson
import pytest

import agentflow as af


def test_usage_sums_and_derives_uncached_input() -> None:
    usage = af.TokenUsage(100, 20, 120, cached_input_tokens=60, cache_write_tokens=30, reasoning_tokens=7)
    assert usage.uncached_input_tokens == 40
    total = usage + usage
    assert (total.input_tokens, total.cached_input_tokens, total.reasoning_tokens) == (200, 120, 14)


def test_tool_choice_function_needs_a_name() -> None:
    assert af.ToolChoice.function("f").name == "f"
    with pytest.raises(ValueError, match="function name"):
        af.ToolChoice("function")
    with pytest.raises(ValueError, match="function name"):
        af.ToolChoice("auto", "f")


def test_request_accepts_a_plain_list_but_not_a_string_or_a_lone_message() -> None:
    request = af.ChatRequest.coerce([af.UserMessage("hi")])
    assert request.messages == (af.UserMessage("hi"),)
    with pytest.raises(TypeError, match="not a string"):
        af.ChatRequest.coerce("hi")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not a UserMessage \(wrap a single message in a list"):
        af.ChatRequest.coerce(af.UserMessage("hi"))  # type: ignore[arg-type]


def test_stop_accepts_one_string_as_one_sequence() -> None:
    assert af.ChatParameters(stop="END").stop == ("END",)
    assert af.ChatParameters(stop=["a", "b"]).stop == ("a", "b")
    assert af.ChatParameters().stop is None


def test_parameters_merge_keeps_unset_fields_and_merges_custom() -> None:
    base = af.ChatParameters(model="m", temperature=0.1, custom={"a": 1, "b": 2})
    merged = base.merged(af.ChatParameters(temperature=0.5, custom={"b": 3}))
    assert merged.model == "m"
    assert merged.temperature == 0.5
    assert merged.custom == {"a": 1, "b": 3}


def test_empty_arguments_parse_as_empty_object() -> None:
    assert af.ToolCall("c", "f", "").parse_arguments() == {}
    assert af.ToolCall("c", "f", '{"x": 1}').parse_arguments() == {"x": 1}


def test_events_serialise_with_type_and_nested_values() -> None:
    response = af.ChatResponse(
        af.AiMessage("hi", tool_calls=[af.ToolCall("c", "f", "{}")]),
        usage=af.TokenUsage(1, 2, 3),
        finish_reason=af.FinishReason.STOP,
    )
    data = orjson.loads(orjson.dumps(af.ModelCompleted(response, run_id="r1", seq=4).to_dict()))
    assert data["type"] == "model_completed"
    assert data["run_id"] == "r1"
    assert data["response"]["finish_reason"] == "stop"
    assert data["response"]["message"]["tool_calls"][0]["name"] == "f"
    assert data["response"]["usage"]["uncached_input_tokens"] == 1


def test_errors_are_typed_by_status_and_body() -> None:
    err = af.model.errors.error_from_status(429, b'{"error": {"message": "slow down", "code": "rate_limit"}}')
    assert isinstance(err, af.RateLimitError)
    assert err.retryable
    assert err.status == 429
    assert "slow down" in str(err)
    quota = af.model.errors.error_from_status(
        429, b'{"error": {"type": "insufficient_quota", "message": "x"}}'
    )
    assert isinstance(quota, af.RateLimitError)
    assert not quota.retryable
    assert isinstance(af.model.errors.error_from_status(404, "not json"), af.NotFoundError)
