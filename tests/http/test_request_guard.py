"""``block_model_requests``: inside it, a model request to any host but this machine raises
``ModelRequestBlocked`` before the transport is asked to send anything, and is never retried; requests to a
local server (``ScriptedServer``) and to hosts the block allows go out as usual."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Mapping

import pytest

from agentflow import Agent, RunFailed, UserMessage
from agentflow.http.request_guard import guard
from agentflow.http.timeouts import Timeout
from agentflow.http.transport import HttpResponse
from agentflow.model.errors import ModelConnectionError
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import ModelRequestBlocked, Reply, ScriptedServer, block_model_requests

HI = [UserMessage("hi")]


class Unreachable:
    """A transport for hosts the test must not reach: it records what it was asked to send."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeout: Timeout,  # noqa: ASYNC109
        stream: bool = False,
    ) -> HttpResponse:
        self.sent.append(url)
        raise ModelConnectionError(f"{url} is unreachable from a test", retryable=False)

    async def aclose(self) -> None:
        pass


def remote(base_url: str = "https://api.openai.com/v1") -> tuple[OpenAIChatModel, Unreachable, list[object]]:
    transport = Unreachable()
    retries: list[object] = []
    model = OpenAIChatModel(
        base_url=base_url, api_key="sk-test", model="gpt-4.1", transport=transport, on_retry=retries.append
    )
    return model, transport, retries


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
async def test_a_request_to_another_host_is_refused_before_anything_is_sent_and_never_retried(
    stream: bool,
) -> None:
    model, transport, retries = remote()
    call = model.stream(HI).collect if stream else functools.partial(model.chat, HI)
    with block_model_requests(), pytest.raises(ModelRequestBlocked) as refused:
        await call()
    assert transport.sent == []
    assert retries == []
    assert refused.value.url == "https://api.openai.com/v1/chat/completions"
    assert "ScriptedServer" in str(refused.value)
    assert not isinstance(refused.value, ModelConnectionError)  # no handler for model failures takes it


async def test_the_responses_model_is_refused_too() -> None:
    model = OpenAIResponsesModel(base_url="https://api.openai.com/v1", api_key="sk-test", model="gpt-5-mini")
    with block_model_requests(), pytest.raises(ModelRequestBlocked, match="/v1/responses"):
        await model.create("hi")


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
async def test_a_local_server_is_reached_inside_the_block(stream: bool) -> None:
    async with ScriptedServer([Reply(text="local")]) as server:
        model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="m")
        with block_model_requests():
            response = await (model.stream(HI).collect() if stream else model.chat(HI))
        await model.aclose()
    assert response.message.text == "local"


@pytest.mark.parametrize(
    "base_url",
    ["http://localhost:8000/v1", "http://127.0.0.2:9/v1", "http://[::1]:8000/v1", "http://api.localhost/v1"],
)
async def test_every_loopback_host_is_this_machine(base_url: str) -> None:
    model, transport, _ = remote(base_url)
    with block_model_requests(), pytest.raises(ModelConnectionError, match="unreachable from a test"):
        await model.chat(HI)
    assert len(transport.sent) == 1


async def test_allowed_hosts_go_out_and_blocks_nest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        guard, "on", False
    )  # as without AGENTFLOW_BLOCK_MODEL_REQUESTS (which `make test` sets)
    model, transport, _ = remote("https://Models.Internal/v1")
    with block_model_requests(allow_hosts=["models.internal"]):
        with pytest.raises(ModelConnectionError):
            await model.chat(HI)
        # Nested: the outer block's hosts stay allowed.
        with block_model_requests(), pytest.raises(ModelConnectionError):
            await model.chat(HI)
        assert guard.on
    assert not guard.on
    with pytest.raises(ModelConnectionError):  # outside every block: sent as usual
        await model.chat(HI)
    assert len(transport.sent) == 3


async def test_an_agent_run_fails_with_it() -> None:
    model, transport, _ = remote()
    agent = Agent(model)
    events: list[object] = []
    agent.on(RunFailed, events.append)
    with block_model_requests(), pytest.raises(ModelRequestBlocked):
        await agent.run("hi")
    assert transport.sent == []
    [failed] = events
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "ModelRequestBlocked"


def test_a_host_list_given_as_one_string_is_refused() -> None:
    with pytest.raises(TypeError, match="list of host names"), block_model_requests(allow_hosts="a.b"):
        pass


def test_the_environment_variable_turns_it_on_for_the_whole_process() -> None:
    code = "from agentflow.http.request_guard import guard; print(guard.on)"
    for value, expected in (("1", "True"), ("true", "True"), ("0", "False"), ("", "False")):
        env = {**os.environ, "AGENTFLOW_BLOCK_MODEL_REQUESTS": value}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == expected, value
