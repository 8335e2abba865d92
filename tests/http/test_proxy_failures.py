"""A proxy's failure is worded as the proxy's, not the server's: a proxy that cannot be reached is named as
such, and a proxy that wants credentials (HTTP 407, as an answer or as its refusal to open a tunnel) says
how to give them — and is not retried, it would refuse again."""

from __future__ import annotations

import socket

import pytest
from raw_http_server import RawHttpServer, RawReply, RawRequest, http_response

from agentflow import BadRequestError, ModelConnectionError, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.transport import AiohttpTransport
from agentflow.providers.openai.chat_model import OpenAIChatModel

HI = [UserMessage("hi")]
PROXY_AUTH = http_response(
    407, b"Proxy Authentication Required", {"Proxy-Authenticate": 'Basic realm="corp"'}
)


def free_port() -> int:
    """A local port nothing listens on: for the server behind the proxy, never reached (the proxy answers),
    and local (model requests to other hosts are blocked in the tests)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def call_through_proxy(url: str) -> None:
    transport = AiohttpTransport(trust_env=True)
    model = OpenAIChatModel(
        base_url=url, model="m", api_key="", transport=transport, retry=RetryPolicy.none()
    )
    try:
        await model.chat(HI)
    finally:
        await transport.aclose()


async def test_a_proxy_that_cannot_be_reached_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with pytest.raises(ModelConnectionError, match=f"could not connect to the proxy 127.0.0.1:{port} for "):
        await call_through_proxy(f"http://localhost:{free_port()}/v1")


async def test_a_proxy_asking_for_credentials_says_how_to_give_them(monkeypatch: pytest.MonkeyPatch) -> None:
    async def wants_credentials(_request: RawRequest) -> RawReply:
        return RawReply(PROXY_AUTH)

    async with RawHttpServer(wants_credentials) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        with pytest.raises(BadRequestError, match="HTTP 407") as caught:
            await call_through_proxy(f"http://localhost:{free_port()}/v1")
    assert "proxy between this client and the server wants credentials" in caught.value.message
    assert "HTTP_PROXY=http://user:password@proxy:port" in caught.value.message
    assert not caught.value.retryable


async def test_a_proxy_refusing_a_tunnel_for_credentials_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    async def refuses_tunnels(request: RawRequest) -> RawReply:
        assert request.method == "CONNECT"
        return RawReply(PROXY_AUTH, close=True)

    async with RawHttpServer(refuses_tunnels) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        with pytest.raises(ModelConnectionError, match="the proxy refused to open a tunnel") as caught:
            await call_through_proxy(f"https://localhost:{free_port()}/v1")
    assert "HTTP 407" in caught.value.message
    assert "HTTPS_PROXY=http://user:password@proxy:port" in caught.value.message
    assert not caught.value.retryable
