"""A server that echoes the credential it refused (``Invalid API key: sk-…``) does not get it into the error:
the client knows what it sent (the API key, a credential header such as Azure's ``api-key``, a credential
in the base URL's query) and masks each in the error's message and body, in blocking calls and streams, in
HTTP errors and in-band ones, and in the retry it announces."""

from __future__ import annotations

import orjson
import pytest
from chat_local_server import LocalServer, Reply, SleepRecorder, json_reply, sse_reply

from agentflow import AuthenticationError, ModelError, ModelRetry, ServerError, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.providers.openai.chat_model import OpenAIChatModel

HI = [UserMessage("hi")]
KEY = "sk-proj-0123456789abcdefXYZ"
AZURE_KEY = "azure-0123456789"
APIM_KEY = "apim-9876543210"


def echo(status: int, secret: str) -> Reply:
    return json_reply({"error": {"message": f"Invalid API key: {secret}", "type": "invalid"}}, status)


def shown(error: ModelError) -> str:
    return f"{error.message}\n{error.body}\n{error}\n{error!r}"


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
async def test_an_echoed_api_key_is_masked(server: LocalServer, stream: bool) -> None:
    server.add(echo(401, KEY))
    model = OpenAIChatModel(base_url=server.base_url, model="m", api_key=KEY, retry=RetryPolicy.none())
    async with model:
        with pytest.raises(AuthenticationError) as caught:
            await (model.stream(HI).collect() if stream else model.chat(HI))
    assert KEY not in shown(caught.value)
    assert "Invalid API key: sk-***fXYZ" in caught.value.message
    assert caught.value.body is not None
    assert "sk-***fXYZ" in caught.value.body


async def test_credential_headers_and_query_parameters_are_masked_too(server: LocalServer) -> None:
    said = f"bad api-key {AZURE_KEY} for subscription {APIM_KEY}; Authorization: Bearer {KEY}"
    server.add(json_reply({"error": {"message": said}}, 403))
    model = OpenAIChatModel(
        base_url=f"{server.base_url}/v1?api-version=2024-10-21&subscription-key={APIM_KEY}",
        model="m",
        api_key=KEY,
        custom_headers={"api-key": AZURE_KEY},
        retry=RetryPolicy.none(),
    )
    async with model:
        with pytest.raises(AuthenticationError) as caught:
            await model.chat(HI)
    text = shown(caught.value)
    assert AZURE_KEY not in text
    assert APIM_KEY not in text
    assert KEY not in text
    assert "bad api-key *** for subscription ***; Authorization: Bearer sk-***fXYZ" in caught.value.message


async def test_an_in_band_error_and_its_retry_are_masked(server: LocalServer, sleeps: SleepRecorder) -> None:
    error_event = orjson.dumps({"error": {"message": f"upstream refused {KEY}", "type": "server_error"}})
    server.add(sse_reply([b"data: " + error_event + b"\n\n"]), sse_reply([b"data: " + error_event + b"\n\n"]))
    retries: list[ModelRetry] = []
    model = OpenAIChatModel(
        base_url=server.base_url,
        model="m",
        api_key=KEY,
        retry=RetryPolicy(max_retries=1),
        sleep=sleeps,
        on_retry=retries.append,
    )
    async with model:
        with pytest.raises(ServerError) as caught:
            await model.stream(HI).collect()
    assert KEY not in shown(caught.value)
    [retry] = retries
    assert KEY not in retry.reason
    assert "upstream refused sk-***fXYZ" in retry.reason


async def test_a_short_key_is_left_alone(server: LocalServer) -> None:
    # "EMPTY" (as vLLM users pass) is no secret, and replacing it would mangle ordinary words.
    server.add(json_reply({"error": {"message": "EMPTY is not a key"}}, 401))
    model = OpenAIChatModel(base_url=server.base_url, model="m", api_key="EMPTY", retry=RetryPolicy.none())
    async with model:
        with pytest.raises(AuthenticationError, match="HTTP 401: EMPTY is not a key"):
            await model.chat(HI)
