"""``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` (and ``OPENAI_ORG_ID`` / ``OPENAI_PROJECT_ID``), for both models.

The rule: ``base_url`` left out is ``OPENAI_BASE_URL``, else OpenAI's; ``api_key`` left out is
``OPENAI_API_KEY`` only when the base URL is OpenAI's own (https, ``api.openai.com`` or a regional
``*.api.openai.com``) or came from ``OPENAI_BASE_URL``. A key of the environment never goes to a server the
user named themselves; an explicit ``api_key`` (``""``: none) always wins. A 401 without a key says so.

Requests to OpenAI's URL go to a recording transport (nothing leaves the machine); the others to a
``ScriptedServer`` on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson
import pytest

from agentflow import AuthenticationError, UserMessage
from agentflow.http.request_guard import guard
from agentflow.http.timeouts import Timeout
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Fault, Reply, ScriptedServer

HI = [UserMessage("hi")]
ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID")
CHAT_OK = {"id": "c", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}
RESPONSES_OK = {
    "id": "r",
    "object": "response",
    "status": "completed",
    "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}],
}

Model = OpenAIChatModel | OpenAIResponsesModel
BUILDERS = pytest.mark.parametrize(
    "build", [OpenAIChatModel, OpenAIResponsesModel], ids=["chat", "responses"]
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    # These requests name OpenAI's own URL on purpose; a transport answers them, nothing leaves the machine.
    monkeypatch.setattr(guard, "on", False)


class _Answer:
    def __init__(self, body: bytes) -> None:
        self.status = 200
        self.headers: Mapping[str, str] = {"Content-Type": "application/json"}
        self._body = body

    async def read(self) -> bytes:
        return self._body

    async def next_chunk(self) -> bytes:
        body, self._body = self._body, b""
        return body

    async def aclose(self) -> None:
        pass


class RecordingTransport:
    """An ``HttpTransport`` that records each request and answers it with a canned body, offline."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, str]]] = []

    async def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeout: Timeout,  # noqa: ASYNC109
        stream: bool = False,
    ) -> _Answer:
        self.sent.append((url, dict(headers)))
        answer = RESPONSES_OK if url.split("?")[0].endswith("/responses") else CHAT_OK
        return _Answer(orjson.dumps(answer))

    async def aclose(self) -> None:
        pass


async def sent_headers(build: Callable[..., Model], **options: Any) -> tuple[str, dict[str, str]]:
    """The URL and headers of one call of a model built with ``options`` (offline)."""
    transport = RecordingTransport()
    async with build(model="m", transport=transport, **options) as model:
        await model.chat(HI)
    return transport.sent[0]


@BUILDERS
async def test_openais_own_url_gets_the_key_of_the_environment(
    build: Callable[..., Model], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    url, headers = await sent_headers(build)
    assert url.startswith("https://api.openai.com/v1/")
    assert headers["Authorization"] == "Bearer sk-env"
    for base in (
        "https://api.openai.com/v1",
        "https://eu.api.openai.com/v1",
        "https://api.openai.com:443/v1",
    ):
        _, headers = await sent_headers(build, base_url=base)
        assert headers["Authorization"] == "Bearer sk-env", base


@BUILDERS
@pytest.mark.parametrize(
    "base",
    [
        "http://api.openai.com/v1",  # not over TLS
        "https://api.openai.com.attacker.example/v1",
        "https://openai.example/v1",
        "http://localhost:8000/v1",
    ],
)
async def test_any_other_url_you_name_never_gets_the_key_of_the_environment(
    build: Callable[..., Model], monkeypatch: pytest.MonkeyPatch, base: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-env")
    _, headers = await sent_headers(build, base_url=base)
    assert "Authorization" not in headers
    assert "OpenAI-Organization" not in headers


@BUILDERS
async def test_an_explicit_key_always_wins_and_an_empty_one_sends_none(
    build: Callable[..., Model], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    _, headers = await sent_headers(build, api_key="sk-mine")
    assert headers["Authorization"] == "Bearer sk-mine"
    _, headers = await sent_headers(build, api_key="")
    assert "Authorization" not in headers


@BUILDERS
async def test_a_base_url_from_the_environment_gets_the_key_from_it_too(
    build: Callable[..., Model], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with ScriptedServer([Reply(text="ok")]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        async with build(model="m") as model:
            assert model.client.base_url == server.base_url  # (never a call to OpenAI from a test)
            assert (await model.chat(HI)).text == "ok"
    assert server.requests[0].headers["authorization"] == "Bearer sk-env"


@BUILDERS
def test_a_bad_base_url_from_the_environment_names_the_variable(
    build: Callable[..., Model], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8000")
    with pytest.raises(ValueError, match=r"absolute http\(s\) URL .*OPENAI_BASE_URL environment variable"):
        build(model="m")


@BUILDERS
async def test_organization_and_project_come_from_the_environment_for_openai_only(
    build: Callable[..., Model], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-env")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-env")
    _, headers = await sent_headers(build)
    assert headers["OpenAI-Organization"] == "org-env"
    assert headers["OpenAI-Project"] == "proj-env"
    _, headers = await sent_headers(build, custom_headers={"openai-organization": "org-mine"})
    assert headers["openai-organization"] == "org-mine"
    assert "OpenAI-Organization" not in headers


@BUILDERS
async def test_a_401_without_a_key_says_none_was_sent_and_how_to_pass_one(
    build: Callable[..., Model], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")  # not for this server: it was named explicitly
    refusal = {"error": {"message": "You didn't provide an API key.", "type": "invalid_request_error"}}
    async with (
        ScriptedServer([Fault.status(401, body=refusal)] * 2) as server,
        build(base_url=server.base_url, model="m") as model,
    ):
        with pytest.raises(AuthenticationError) as caught:
            await model.chat(HI)
        with pytest.raises(AuthenticationError) as streamed:
            await model.stream(HI).collect()
    for error in (caught.value, streamed.value):
        assert "You didn't provide an API key." in error.message
        assert "no API key was sent: pass api_key=..." in error.message
        assert "OPENAI_API_KEY is only read for OpenAI's own base URL" in error.message
        assert "sk-env" not in error.message
        assert "authorization" not in server.requests[0].headers


@BUILDERS
async def test_a_401_names_the_environment_as_the_keys_source(
    build: Callable[..., Model], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with ScriptedServer([Fault.status(401)]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-stale")
        async with build(model="m") as model:
            assert model.client.base_url == server.base_url  # (never a call to OpenAI from a test)
            with pytest.raises(AuthenticationError) as caught:
                await model.chat(HI)
    assert caught.value.message.endswith("the API key sent came from the OPENAI_API_KEY environment variable")
    assert "sk-stale" not in caught.value.message


@BUILDERS
async def test_a_401_with_a_gateway_credential_header_adds_nothing_about_keys(
    build: Callable[..., Model],
) -> None:
    async with (
        ScriptedServer([Fault.status(401)]) as server,
        build(base_url=server.base_url, model="m", custom_headers={"api-key": "az"}) as model,
    ):
        with pytest.raises(AuthenticationError) as caught:
            await model.chat(HI)
    assert "API key was sent" not in caught.value.message
    assert "OPENAI_API_KEY" not in caught.value.message
