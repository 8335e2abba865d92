"""Errors from servers that are not OpenAI: their message, in whatever shape they send it, and the URL of the
request make the error's message; a number that is not an HTTP status stays the error's code."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from chat_local_server import LocalServer, SleepRecorder, collect, json_reply, raw_reply, sse_reply

from agentflow import (
    AuthenticationError,
    BadRequestError,
    ModelError,
    NotFoundError,
    ProtocolError,
    ServerError,
    UserMessage,
)
from agentflow.http.retry import RetryPolicy
from agentflow.http.sse import SseEvent
from agentflow.model.errors import error_from_payload, error_from_status, is_error_payload
from agentflow.providers.openai.chat_codec import decode_chat_response
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.chat_stream import ChatStreamDecoder

URL = "http://localhost:8000/v1/chat/completions"
HI = [UserMessage("hi")]
NGINX_502 = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
    "</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
)


def model_for(server: LocalServer, sleeps: SleepRecorder) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url=server.base_url, model="m", api_key="sk-secret", retry=RetryPolicy(jitter=0), sleep=sleeps
    )


# --- numeric codes --------------------------------------------------------------------------------


@pytest.mark.parametrize("code", ["1301", "1214", "336003", "20015", "99", "600", 1301])
def test_a_number_outside_100_to_599_is_a_code_not_a_status(code: Any) -> None:
    error = error_from_payload({"error": {"message": "content flagged as unsafe", "code": code}})
    assert type(error) is ModelError
    assert error.status is None
    assert error.code == str(code)
    assert not error.retryable
    assert error.message == f"content flagged as unsafe (code {code})"


def test_a_code_of_other_digits_is_kept_as_is() -> None:
    error = error_from_payload({"error": {"message": "x", "code": "²"}})  # ``"²".isdigit()``, no int
    assert (error.status, error.code, error.message) == (None, "²", "x")


@pytest.mark.parametrize(("code", "kind"), [("400", BadRequestError), ("401", AuthenticationError)])
def test_a_code_that_is_an_http_status_is_read_as_one(code: str, kind: type[ModelError]) -> None:
    error = error_from_payload({"error": {"message": "no", "code": code}})  # OpenRouter's numeric codes
    assert type(error) is kind
    assert error.status == int(code)


@pytest.mark.parametrize("status", [1301, 42, True])
def test_a_status_field_outside_100_to_599_is_not_a_status(status: Any) -> None:
    error = error_from_payload({"message": "no", "status": status})
    assert error.status is None
    assert type(error) is ModelError


def test_a_business_code_keeps_the_http_status_it_came_with() -> None:
    body = {"error": {"message": "messages parameter invalid", "code": "1214"}}  # Zhipu on HTTP 400
    error = error_from_status(400, orjson.dumps(body), url=URL)
    assert type(error) is BadRequestError
    assert (error.status, error.code) == (400, "1214")


async def test_a_blocking_200_with_a_business_error_code_is_sent_once(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    body = {"error": {"message": "The input contains unsafe content", "code": "1301"}}
    server.add(*[json_reply(body)] * 3)
    async with model_for(server, sleeps) as model:
        with pytest.raises(ModelError) as caught:
            await model.chat(HI)
    assert type(caught.value) is ModelError
    assert caught.value.code == "1301"
    assert len(server.requests) == 1


async def test_an_in_band_business_error_code_is_not_retried(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    event = b'data: {"error": {"message": "unsafe", "code": "1301"}}\n\n'
    server.add(*[sse_reply([event])] * 3)
    async with model_for(server, sleeps) as model:
        _, error = await collect(model)
    assert type(error) is ModelError
    assert error.status is None
    assert len(server.requests) == 1


# --- body shapes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "kind", "message"),
    [
        (400, {"detail": "Model llama3 not found"}, BadRequestError, "Model llama3 not found"),
        (
            422,
            {
                "detail": [
                    {"loc": ["body", "messages", 0, "role"], "msg": "Input should be 'user'", "type": "x"},
                    {"loc": ["body", "model"], "msg": "Field required", "type": "missing"},
                ]
            },
            BadRequestError,
            "body.messages.0.role: Input should be 'user'; body.model: Field required",
        ),
        (400, {"error": 'model "llama3" not found, try pulling it first'}, BadRequestError, 'model "llama3"'),
        (400, {"message": "Range of input length should be [1, 30720]"}, BadRequestError, "Range of input"),
        (
            400,
            {"object": "error", "message": "maximum context length is 4096 tokens", "code": 400},
            BadRequestError,
            "maximum context length is 4096 tokens",
        ),
        (
            400,
            {"statusCode": 400, "message": ["model must be a string"], "error": "Bad Request"},
            BadRequestError,
            "model must be a string",
        ),
        (404, "404 page not found", NotFoundError, "404 page not found"),
        (500, "Internal Server Error: CUDA out of memory", ServerError, "CUDA out of memory"),
        (502, NGINX_502, ServerError, "an HTML page titled '502 Bad Gateway'"),
        (500, {"unexpected": True}, ServerError, '{"unexpected":true}'),
        (503, "", ServerError, "request failed with HTTP 503"),
    ],
    ids=[
        "fastapi-detail",
        "fastapi-validation",
        "error-string",
        "flat-message",
        "vllm-flat",
        "nestjs",
        "plain-text",
        "plain-text-500",
        "nginx-html",
        "unknown-json",
        "empty",
    ],
)
def test_the_servers_message_in_any_shape_is_the_errors_message(
    status: int, body: Any, kind: type[ModelError], message: str
) -> None:
    raw = body if isinstance(body, str) else orjson.dumps(body).decode()
    error = error_from_status(status, raw.encode(), url=URL)
    assert type(error) is kind
    assert error.status == status
    assert message in error.message
    assert error.message.startswith(f"HTTP {status}: ")
    assert f" (POST {URL})" in error.message  # a 404 for an unknown path adds how to fix base_url after it
    assert error.body == raw


def test_a_long_validation_list_names_the_first_errors_and_counts_the_rest() -> None:
    detail = [{"loc": ["body", f"f{i}"], "msg": "bad", "type": "x"} for i in range(8)]
    error = error_from_status(422, orjson.dumps({"detail": detail}))
    assert error.message == "HTTP 422: " + "; ".join(f"body.f{i}: bad" for i in range(5)) + " (and 3 more)"


def test_a_long_page_is_cut_in_the_message_and_kept_whole_in_the_body() -> None:
    page = "<html>" + "x" * 5000 + "</html>"
    error = error_from_status(502, page.encode())
    assert len(error.message) < 250
    assert error.message.endswith("…")
    assert error.body == page


def test_the_url_in_the_message_is_redacted() -> None:
    url = "https://user:pw@gw.example/v1/chat/completions?api-key=secret"
    error = error_from_status(401, b'{"error": {"message": "bad key"}}', url=url)
    assert error.message == "HTTP 401: bad key (POST https://gw.example/v1/chat/completions)"
    assert "secret" not in error.message
    assert "pw" not in error.message


async def test_a_base_url_that_already_names_the_endpoint_shows_in_the_404(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(raw_reply("404 page not found", status=404, content_type="text/plain"))
    async with OpenAIChatModel(
        base_url=f"{server.base_url}/v1/chat/completions", model="m", retry=RetryPolicy.none()
    ) as model:
        with pytest.raises(NotFoundError) as caught:
            await model.chat(HI)
    assert caught.value.message == (
        f"HTTP 404: 404 page not found (POST {server.base_url}/v1/chat/completions/chat/completions); "
        "base_url already ends with /chat/completions: drop it (base_url is the part before the endpoint, "
        f"such as {server.base_url}/v1)"
    )


# --- error reports answered with 200 ----------------------------------------------------------------


def test_a_flat_error_object_answered_with_200_is_the_typed_error() -> None:
    body = {"object": "error", "message": "context too long", "type": "BadRequestError", "code": 400}
    with pytest.raises(BadRequestError, match="context too long"):
        decode_chat_response(body)


def test_a_detail_answered_with_200_is_the_servers_error() -> None:
    with pytest.raises(ModelError, match="upstream timed out"):
        decode_chat_response({"detail": "upstream timed out"})


def test_a_body_without_choices_or_message_is_still_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="no choices"):
        decode_chat_response({"id": "x", "choices": []})


def test_a_flat_error_chunk_mid_stream_is_the_typed_error() -> None:
    decoder = ChatStreamDecoder()
    decoder.feed(SseEvent('{"choices": [{"index": 0, "delta": {"content": "Hi"}}]}'))
    chunk = '{"object": "error", "message": "engine died", "type": "InternalServerError", "code": 500}'
    with pytest.raises(ServerError, match="engine died") as caught:
        decoder.feed(SseEvent(chunk))
    assert caught.value.body == chunk


def test_is_error_payload() -> None:
    assert is_error_payload({"error": {"message": "x"}})
    assert is_error_payload({"detail": "x"})
    assert is_error_payload({"object": "error"})
    assert not is_error_payload({"id": "x", "choices": []})
    assert not is_error_payload([{"error": "x"}])
    assert not is_error_payload(None)


async def test_a_bare_json_error_in_an_event_stream_is_the_typed_error_not_a_cut_off(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    body = (
        b'{"error":{"message":"Invalid API key","type":"invalid_request_error","code":"invalid_api_key"}}\n'
    )
    server.add(*[sse_reply([body[:20], body[20:]])] * 3)
    async with model_for(server, sleeps) as model:
        events, error = await collect(model)
    assert events == []
    assert type(error) is AuthenticationError
    assert error.message.startswith("Invalid API key (POST ")
    assert error.body == body.decode()
    assert len(server.requests) == 1  # not retried as a cut-off stream would be


async def test_other_json_in_an_event_stream_is_a_protocol_error_showing_it(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(sse_reply([b'  {"id": "x", "choices": []}']))
    async with model_for(server, sleeps) as model:
        _, error = await collect(model)
    assert type(error) is ProtocolError
    assert "expected an event stream" in error.message
    assert '{"id": "x", "choices": []}' in error.message
    assert len(server.requests) == 1


async def test_a_stream_answered_with_a_json_detail_is_the_servers_error(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(json_reply({"detail": "stream not supported for this model"}))
    async with model_for(server, sleeps) as model:
        _, error = await collect(model)
    assert type(error) is ModelError
    assert "stream not supported for this model" in error.message
