"""Helpers for the end-to-end tests: a transport that records what happened to every HTTP response."""

from __future__ import annotations

from collections.abc import Mapping

from agentflow.http.timeouts import Timeout
from agentflow.http.transport import AiohttpResponse, AiohttpTransport, HttpResponse


class TrackedResponse:
    """An ``HttpResponse`` that remembers whether it was closed and whether its body was read to the end."""

    def __init__(self, inner: HttpResponse) -> None:
        self.inner = inner
        self.closed = False
        self.finished = False

    @property
    def status(self) -> int:
        return self.inner.status

    @property
    def headers(self) -> Mapping[str, str]:
        return self.inner.headers

    async def read(self) -> bytes:
        body = await self.inner.read()
        self.finished = True
        return body

    async def next_chunk(self) -> bytes:
        chunk = await self.inner.next_chunk()
        if not chunk:
            self.finished = True
        return chunk

    async def aclose(self) -> None:
        self.closed = True
        await self.inner.aclose()

    @property
    def socket_released(self) -> bool:
        """Whether aiohttp no longer holds a connection for this response (closed or back in the pool)."""
        assert isinstance(self.inner, AiohttpResponse)
        raw = self.inner._response  # our own transport's aiohttp response: checked from the outside
        return raw.connection is None


class TrackingTransport(AiohttpTransport):
    """The default aiohttp transport, keeping a ``TrackedResponse`` per request."""

    def __init__(self) -> None:
        super().__init__()
        self.responses: list[TrackedResponse] = []

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
        response = TrackedResponse(
            await super().send(method, url, headers=headers, body=body, timeout=timeout, stream=stream)
        )
        self.responses.append(response)
        return response
