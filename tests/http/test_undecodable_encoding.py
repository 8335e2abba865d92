"""An answer compressed in a way this Python cannot decode (``br`` without Brotli, ``zstd`` without a zstd
package: the request did not offer them) fails once, with a ``ProtocolError`` that says what to install:
every retry would come back the same way."""

from __future__ import annotations

import pytest
from aiohttp.compression_utils import HAS_BROTLI, HAS_ZSTD
from raw_http_server import RawHttpServer, RawReply, RawRequest, http_response

from agentflow import ModelRetry, ProtocolError, UserMessage
from agentflow.providers.openai.chat_model import OpenAIChatModel

HI = [UserMessage("hi")]


@pytest.mark.parametrize(
    ("encoding", "package"),
    [
        pytest.param("br", "Brotli", marks=pytest.mark.skipif(HAS_BROTLI, reason="Brotli is installed")),
        pytest.param("zstd", "zstd", marks=pytest.mark.skipif(HAS_ZSTD, reason="zstd is installed")),
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
async def test_an_undecodable_encoding_is_explained_and_not_retried(
    encoding: str, package: str, stream: bool
) -> None:
    async def compressed(_request: RawRequest) -> RawReply:
        content_type = "text/event-stream" if stream else "application/json"
        headers = {"Content-Type": content_type, "Content-Encoding": encoding}
        return RawReply(http_response(200, b"\x0b\x02\x80hello\x03", headers))

    retries: list[ModelRetry] = []

    async def sleep(_seconds: float) -> None:
        pass

    async with RawHttpServer(compressed) as server:
        model = OpenAIChatModel(base_url=server.url, model="m", sleep=sleep, on_retry=retries.append)
        async with model:
            with pytest.raises(ProtocolError, match="cannot decode") as caught:
                await (model.stream(HI).collect() if stream else model.chat(HI))
    assert not caught.value.retryable
    assert package in caught.value.message
    assert "install" in caught.value.message
    assert (len(server.requests), retries) == (1, [])
