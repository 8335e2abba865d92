"""TLS and proxies: a certificate that fails verification is a connection error that is not retried (it would
fail again), with a message that says how to trust a private CA; ``AiohttpTransport(ssl=...)`` does that, and
``trust_env=True`` opts in to ``HTTP(S)_PROXY`` / ``NO_PROXY``, which are ignored otherwise.

``localhost-cert.pem`` is a self-signed certificate for ``localhost`` and ``127.0.0.1`` (valid until 2126).
"""

from __future__ import annotations

import ssl
from pathlib import Path

import aiohttp
import pytest
from raw_http_server import RawHttpServer, RawReply, RawRequest, json_answer

from agentflow import ModelConnectionError, ModelRetry, UserMessage
from agentflow.http.transport import AiohttpTransport
from agentflow.providers.openai.chat_model import OpenAIChatModel

HI = [UserMessage("hi")]
HERE = Path(__file__).parent
CERT = str(HERE / "localhost-cert.pem")


def server_tls() -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(CERT, str(HERE / "localhost-key.pem"))
    return context


async def test_a_certificate_that_fails_verification_is_not_retried() -> None:
    retries: list[ModelRetry] = []
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async with RawHttpServer(tls=server_tls()) as server:
        model = OpenAIChatModel(base_url=server.url, model="m", on_retry=retries.append, sleep=sleep)
        async with model:
            with pytest.raises(ModelConnectionError, match="could not be verified") as failure:
                await model.chat(HI)
    assert not failure.value.retryable
    assert "ssl.create_default_context(cafile=" in str(failure.value)
    assert isinstance(failure.value.__cause__, ssl.SSLCertVerificationError)
    assert (retries, sleeps, server.requests) == ([], [], [])


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
async def test_a_private_ca_is_trusted_through_the_ssl_option(stream: bool) -> None:
    transport = AiohttpTransport(ssl=ssl.create_default_context(cafile=CERT))
    async with RawHttpServer(tls=server_tls()) as server:
        model = OpenAIChatModel(base_url=server.url, model="m", transport=transport)
        try:
            if stream:
                answer = await model.stream(HI).collect()
            else:
                answer = await model.chat(HI)
        finally:
            await transport.aclose()
    assert answer.message.text == "ok"


async def test_ssl_false_skips_verification() -> None:
    transport = AiohttpTransport(ssl=False)
    async with RawHttpServer(tls=server_tls()) as server:
        try:
            answer = await OpenAIChatModel(base_url=server.url, model="m", transport=transport).chat(HI)
        finally:
            await transport.aclose()
    assert answer.message.text == "ok"


@pytest.mark.parametrize(
    ("trust_env", "no_proxy", "reached"),
    [(False, None, "origin"), (True, None, "proxy"), (True, "localhost", "origin")],
    ids=["ignored by default", "trust_env", "trust_env with NO_PROXY"],
)
async def test_proxy_variables_are_honoured_only_with_trust_env(
    monkeypatch: pytest.MonkeyPatch, trust_env: bool, no_proxy: str | None, reached: str
) -> None:
    seen: dict[str, list[str]] = {"origin": [], "proxy": []}

    def answering_as(name: str) -> RawHttpServer:
        async def handler(request: RawRequest) -> RawReply:
            seen[name].append(request.target)
            return RawReply(json_answer())

        return RawHttpServer(handler)

    async with answering_as("origin") as origin, answering_as("proxy") as proxy:
        for name in ("HTTP_PROXY", "http_proxy"):
            monkeypatch.setenv(name, proxy.url)
        for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        if no_proxy is not None:
            monkeypatch.setenv("NO_PROXY", no_proxy)
        transport = AiohttpTransport(trust_env=trust_env)
        # Addressed by name: loopback IPs may bypass proxies whatever NO_PROXY says.
        base_url = f"http://localhost:{origin.port}"
        try:
            await OpenAIChatModel(base_url=base_url, model="m", transport=transport).chat(HI)
        finally:
            await transport.aclose()
    expected = f"{base_url}/v1/chat/completions" if reached == "proxy" else "/v1/chat/completions"
    assert seen[reached] == [expected]  # a proxy gets the absolute URL
    assert seen["proxy" if reached == "origin" else "origin"] == []


def test_transport_options_are_checked() -> None:
    with pytest.raises(TypeError, match=r"ssl must be an ssl\.SSLContext"):
        AiohttpTransport(ssl="/etc/ssl/ca.pem")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="trust_env must be True or False"):
        AiohttpTransport(trust_env="yes")  # type: ignore[arg-type]
    assert (
        repr(AiohttpTransport(trust_env=True, ssl=False))
        == "AiohttpTransport(limit=100, trust_env=True, ssl=False)"
    )


async def test_options_for_the_transport_s_sessions_are_refused_with_a_session_passed_in() -> None:
    async with aiohttp.ClientSession() as session:
        with pytest.raises(ValueError, match="with session=, set them on that session"):
            AiohttpTransport(session=session, trust_env=True)


@pytest.mark.parametrize("trust_env", [False, True])
async def test_netrc_credentials_beside_an_api_key_are_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, trust_env: bool
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("default login gateway-user password netrc-secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv(
        "NETRC", str(netrc)
    )  # read (by aiohttp) only when the transport trusts the environment
    transport = AiohttpTransport(trust_env=trust_env)
    async with RawHttpServer() as server:
        model = OpenAIChatModel(base_url=server.url, model="m", api_key="sk-x", transport=transport)
        try:
            if trust_env:
                with pytest.raises(ModelConnectionError, match=r"in ~/\.netrc") as failure:
                    await model.chat(HI)
                assert not failure.value.retryable
                assert "netrc-secret" not in str(failure.value)
            else:
                assert (await model.chat(HI)).message.text == "ok"
        finally:
            await transport.aclose()
    assert len(server.requests) == (0 if trust_env else 1)
