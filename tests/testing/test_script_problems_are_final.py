"""A broken script fails the client's call at once: no retry may consume the next turn and hide it."""

from __future__ import annotations

import anyio
import pytest

from agentflow.model.errors import ServerError
from agentflow.model.messages import UserMessage
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer


async def test_a_failing_callable_turn_is_not_retried_into_the_next_turn() -> None:
    def checks_the_request(body: dict[str, object]) -> Reply:
        assert body.get("temperature") == 0, "the agent must ask for temperature 0"
        return Reply(text="first")

    async with ScriptedServer([checks_the_request, Reply(text="second turn answer")]) as server:
        async with OpenAIChatModel(base_url=server.base_url, api_key="k", model="m") as model:
            with anyio.fail_after(10), pytest.raises(ServerError, match="temperature 0"):
                await model.chat([UserMessage("hi")])
        assert len(server.requests) == 1
        assert len(server.errors) == 1


async def test_an_exhausted_script_fails_at_once() -> None:
    async with ScriptedServer([Reply(text="only")]) as server:
        async with OpenAIChatModel(base_url=server.base_url, api_key="k", model="m") as model:
            await model.chat([UserMessage("one")])
            with anyio.fail_after(10), pytest.raises(ServerError, match="script exhausted"):
                await model.chat([UserMessage("two")])
        assert len(server.requests) == 2


async def test_an_ipv6_host_gives_a_usable_url() -> None:
    try:
        server = ScriptedServer([Reply(text="over IPv6")], host="::1")
        await server.__aenter__()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        assert server.base_url.startswith("http://[::1]:")
        async with OpenAIChatModel(base_url=server.base_url, api_key="k", model="m") as model:
            assert (await model.chat([UserMessage("hi")])).message.text == "over IPv6"
    finally:
        await server.__aexit__(None, None, None)
