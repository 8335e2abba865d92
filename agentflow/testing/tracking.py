"""``TrackingTransport``: the default aiohttp transport, recording what became of every HTTP response.

For tests of the cancellation contract (DESIGN §5: cancelling a run closes its HTTP stream and leaves no
socket behind): give the model ``transport=TrackingTransport()``, run, cancel, then check each response in
``transport.responses`` — ``closed`` (its ``aclose`` was called), ``finished`` (its body was read to the end)
and ``socket_released`` (aiohttp holds no connection for it any more: closed, or back in the pool).

>>> from agentflow import OpenAIChatModel
>>> transport = TrackingTransport()
>>> model = OpenAIChatModel(base_url="http://127.0.0.1:8000/v1", model="m", transport=transport)
>>> transport.responses
[]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..http.timeouts import Timeout
from ..http.transport import AiohttpResponse, AiohttpTransport, HttpResponse

__all__ = ["TrackedResponse", "TrackingTransport"]


class TrackedResponse:
    """An ``HttpResponse`` that remembers whether it was closed and whether its body was read to the end."""

    def __init__(self, inner: HttpResponse) -> None:
        self.inner = inner
        self.closed = False
        self.finished = False

    @property
    def status(self) -> int:
        """The HTTP status code."""
        return self.inner.status

    @property
    def headers(self) -> Mapping[str, str]:
        """Response headers."""
        return self.inner.headers

    async def read(self) -> bytes:
        """The whole body (and ``finished`` is set)."""
        body = await self.inner.read()
        self.finished = True
        return body

    async def next_chunk(self) -> bytes:
        """The next body chunk; ``b""`` at the end (and ``finished`` is set)."""
        chunk = await self.inner.next_chunk()
        if not chunk:
            self.finished = True
        return chunk

    async def aclose(self) -> None:
        """Close the response (and ``closed`` is set)."""
        self.closed = True
        await self.inner.aclose()

    @property
    def answer_began(self) -> Callable[[], None]:
        """The tracked response's own (``AiohttpResponse.answer_began``: the wait for the answer's start is
        bounded apart): tracking changes no timeout. An ``AttributeError`` when it has none, as for it."""
        began: Callable[[], None] = self.inner.answer_began  # type: ignore[attr-defined]
        return began

    @property
    def progressed(self) -> Callable[[], None]:
        """The tracked response's own (``AiohttpResponse.progressed``: progress before the answer restarts
        the read deadline). An ``AttributeError`` when it has none, as for it."""
        progressed: Callable[[], None] = self.inner.progressed  # type: ignore[attr-defined]
        return progressed

    @property
    def release_at_end(self) -> Callable[[], None]:
        """The tracked response's own (``AiohttpResponse.release_at_end``), which also sets ``closed``: the
        response is done with then. An ``AttributeError`` when it has none, as for it (the client then closes
        it)."""
        release: Callable[[], None] = self.inner.release_at_end  # type: ignore[attr-defined]

        def released() -> None:
            self.closed = True
            release()

        return released

    @property
    def socket_released(self) -> bool:
        """Whether aiohttp no longer holds a connection for this response (closed or back in the pool)."""
        assert isinstance(self.inner, AiohttpResponse)
        return self.inner._response.connection is None


class TrackingTransport(AiohttpTransport):
    """The default aiohttp transport, keeping a ``TrackedResponse`` per request in ``responses``."""

    def __init__(self) -> None:
        super().__init__()
        self.responses: list[TrackedResponse] = []
        """Every response returned, in order."""

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
        """``AiohttpTransport.send``, its response recorded."""
        response = TrackedResponse(
            await super().send(method, url, headers=headers, body=body, timeout=timeout, stream=stream)
        )
        self.responses.append(response)
        return response
