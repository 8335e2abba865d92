"""Bodies are read within bounds: an error body (any non-2xx, blocking or streamed; a JSON body answering a
stream) up to 64 KiB — enough for any error report and the start of any page — and a 2xx answer of a
blocking call up to the transport's ``max_body_bytes``, past which the call fails with a ``ProtocolError``
that says how to raise it, instead of holding whatever a server sends in memory."""

from __future__ import annotations

import anyio
import pytest
from raw_http_server import RawHttpServer, RawReply, RawRequest, http_response, json_answer

from agentflow import ModelError, ProtocolError, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.transport import AiohttpTransport
from agentflow.providers.openai.chat_model import OpenAIChatModel

HI = [UserMessage("hi")]
LARGE = 8 * 1024 * 1024  # far beyond what an error needs
MAX_ERROR_BODY_BYTES = 64 * 1024


def chunked(status: int, content_type: str, size: int) -> bytes:
    """A chunked answer of ``size`` bytes of ``e`` in 64 KiB chunks."""
    head = f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
    piece = 64 * 1024
    block = f"{piece:x}\r\n".encode() + b"e" * piece + b"\r\n"
    return head.encode() + block * (size // piece) + b"0\r\n\r\n"


async def call(model: OpenAIChatModel, stream: bool) -> None:
    if stream:
        await model.stream(HI).collect()
    else:
        await model.chat(HI)


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
@pytest.mark.parametrize("status", [500, 400])
async def test_an_error_body_is_kept_up_to_64_kib(stream: bool, status: int) -> None:
    async def huge_error(_request: RawRequest) -> RawReply:
        return RawReply(chunked(status, "text/plain", LARGE), close=True)

    async with RawHttpServer(huge_error) as server:
        model = OpenAIChatModel(base_url=server.url, model="m", retry=RetryPolicy.none())
        async with model:
            with anyio.fail_after(10), pytest.raises(ModelError) as caught:
                await call(model, stream)
    assert caught.value.status == status
    assert caught.value.body == "e" * MAX_ERROR_BODY_BYTES
    assert caught.value.message.startswith(f"HTTP {status}: eeee")


async def test_a_json_body_answering_a_stream_is_kept_up_to_64_kib() -> None:
    async def json_instead_of_events(_request: RawRequest) -> RawReply:
        return RawReply(chunked(200, "application/json", LARGE), close=True)

    async with RawHttpServer(json_instead_of_events) as server:
        model = OpenAIChatModel(base_url=server.url, model="m", retry=RetryPolicy.none())
        async with model:
            with pytest.raises(ProtocolError) as caught:
                await model.stream(HI).collect()
    assert caught.value.body is not None
    assert len(caught.value.body) == MAX_ERROR_BODY_BYTES


async def test_a_blocking_answer_larger_than_max_body_bytes_is_a_protocol_error_not_retried() -> None:
    async def large_answer(_request: RawRequest) -> RawReply:
        return RawReply(chunked(200, "application/json", 256 * 1024))

    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    transport = AiohttpTransport(max_body_bytes=128 * 1024)
    async with RawHttpServer(large_answer) as server:
        model = OpenAIChatModel(base_url=server.url, model="m", transport=transport, sleep=sleep)
        try:
            with pytest.raises(ProtocolError, match=r"larger than 131072 bytes.*max_body_bytes") as caught:
                await model.chat(HI)
        finally:
            await transport.aclose()
    assert not caught.value.retryable
    assert (len(server.requests), sleeps) == (1, [])


async def test_an_answer_within_max_body_bytes_is_read_whole() -> None:
    async def answer(_request: RawRequest) -> RawReply:
        return RawReply(json_answer())

    transport = AiohttpTransport(max_body_bytes=len(json_answer()))  # the body is shorter than that
    async with RawHttpServer(answer) as server:
        model = OpenAIChatModel(base_url=server.url, model="m", transport=transport)
        try:
            assert (await model.chat(HI)).message.text == "ok"
        finally:
            await transport.aclose()


async def test_an_empty_error_body_is_read_as_empty() -> None:
    async def empty(_request: RawRequest) -> RawReply:
        return RawReply(http_response(502, b""))

    async with RawHttpServer(empty) as server:
        model = OpenAIChatModel(base_url=server.url, model="m", retry=RetryPolicy.none())
        async with model:
            with pytest.raises(ModelError, match="HTTP 502") as caught:
                await model.chat(HI)
    assert caught.value.body == ""


def test_max_body_bytes_is_checked() -> None:
    with pytest.raises(TypeError, match="max_body_bytes must be an int"):
        AiohttpTransport(max_body_bytes=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_body_bytes must be > 0"):
        AiohttpTransport(max_body_bytes=0)
    assert repr(AiohttpTransport(max_body_bytes=1024)) == "AiohttpTransport(limit=100, max_body_bytes=1024)"
