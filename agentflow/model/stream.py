"""``ModelStream``: the async context manager and iterator that every streaming model call returns.

It wraps an async generator of model events that ends with ``ModelCompleted``. Leaving the
``async with`` block (or breaking out of the loop inside it) closes the generator, which closes the
HTTP response: a cancelled stream leaves no socket behind.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from types import TracebackType
from typing import Generic, TypeVar

from .events import ModelCompleted, ModelEvent

__all__ = ["ModelStream"]

R = TypeVar("R")


class ModelStream(Generic[R]):
    """A streaming model call: ``async with model.stream(req) as s: async for event in s: …``.

    Nothing is sent until the stream is entered or iterated. After the ``ModelCompleted`` event,
    ``s.response`` holds the aggregated response; ``await model.stream(req).collect()`` returns it directly.
    """

    __slots__ = ("_agen", "_factory", "_response")

    def __init__(self, factory: Callable[[], AsyncGenerator[ModelEvent, None]]) -> None:
        self._factory = factory
        self._agen: AsyncGenerator[ModelEvent, None] | None = None
        self._response: R | None = None

    def _generator(self) -> AsyncGenerator[ModelEvent, None]:
        if self._agen is None:
            self._agen = self._factory()
        return self._agen

    async def __aenter__(self) -> ModelStream[R]:
        self._generator()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the stream and release its connection. Safe to call more than once."""
        if self._agen is not None:
            await self._agen.aclose()

    def __aiter__(self) -> ModelStream[R]:
        return self

    async def __anext__(self) -> ModelEvent:
        event = await self._generator().__anext__()
        if isinstance(event, ModelCompleted):
            self._response = event.response
        return event

    @property
    def response(self) -> R:
        """The aggregated response; available once the stream has completed."""
        if self._response is None:
            raise RuntimeError("the stream has not completed yet; iterate it to the end first")
        return self._response

    async def collect(self) -> R:
        """Consume the whole stream and return the aggregated response."""
        async with self:
            async for _ in self:
                pass
        return self.response
