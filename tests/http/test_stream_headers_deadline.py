"""Until its headers arrive a streamed request has one deadline (connect + read) over everything it waits for
that is the server's doing: sending the body included, which aiohttp's ``sock_read`` (it starts once the body
is out) does not bound. Resolving the host name is bounded by ``connect``, for blocking calls and streams
alike (aiohttp's ``sock_connect`` bounds the socket only)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import aiohttp
import anyio
import pytest

from agentflow.http.timeouts import Timeout
from agentflow.http.transport import AiohttpTransport
from agentflow.model.errors import ModelTimeoutError

LIMITS = Timeout(connect=0.2, read=0.2)


class HangingResolver(aiohttp.abc.AbstractResolver):
    """A DNS server that never answers."""

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> Any:
        await asyncio.sleep(3600)

    async def close(self) -> None:
        pass


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
async def test_a_host_that_never_resolves_times_out_after_the_connect_timeout(stream: bool) -> None:
    connector = aiohttp.TCPConnector(resolver=HangingResolver())
    async with aiohttp.ClientSession(connector=connector) as session:
        transport = AiohttpTransport(session=session)
        started = anyio.current_time()
        with (
            anyio.fail_after(5),
            pytest.raises(ModelTimeoutError, match=r"connecting to http://api\.example\.invalid timed out"),
        ):
            await transport.send(
                "POST", "http://api.example.invalid/v1", headers={}, body=b"{}", timeout=LIMITS, stream=stream
            )
        assert anyio.current_time() - started < 1.0  # connect (0.2 s), rounded up by aiohttp at most


async def test_a_stream_whose_body_the_server_never_reads_times_out() -> None:
    held: list[asyncio.StreamWriter] = []

    async def accept_and_ignore(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # never reads: a large body fills the socket buffers and the upload stalls

    server = await asyncio.start_server(accept_and_ignore, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with aiohttp.ClientSession() as session:
            transport = AiohttpTransport(session=session)
            with anyio.fail_after(30), pytest.raises(ModelTimeoutError, match="no response headers"):
                await transport.send(
                    "POST",
                    f"http://127.0.0.1:{port}/v1",
                    headers={},
                    body=b"x" * (64 * 1024 * 1024),
                    timeout=LIMITS,
                    stream=True,
                )
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()
