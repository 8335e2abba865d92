"""``ProtocolClient``: what ``ChatModelClient`` and ``ResponsesModelClient`` share, written once.

Both adapters do the same four things: map an ``AgentPrompt`` to their protocol's request (a pure function,
so a bad prompt fails before anything is sent), send it through the wrapped model, whole or streamed, project
the response onto ``AgentModelResult``, and close the model. A subclass names its request mapping, its
projection, and how its model sends and streams; nothing here knows a protocol.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar

from ..model.stream import ModelStream
from .prompt import AgentModelResult, AgentPrompt, relay_stream

__all__ = ["ProtocolClient", "call_options"]


class _Closeable(Protocol):
    async def aclose(self) -> None: ...


M = TypeVar("M", bound=_Closeable)
Req = TypeVar("Req")
Resp = TypeVar("Resp")


_NO_OPTIONS: Mapping[str, Any] = {}


def call_options(prompt: AgentPrompt) -> Mapping[str, Any]:
    """The keywords of a prompt's model call beside the request: ``extra_headers`` when it has some (a model
    of your own then needs to take them, as the OpenAI models do), else none.

    >>> call_options(AgentPrompt(extra_headers={"X-Request-Id": "r1"})), call_options(AgentPrompt())
    ({'extra_headers': {'X-Request-Id': 'r1'}}, {})
    """
    headers = prompt.extra_headers
    return {"extra_headers": headers} if headers else _NO_OPTIONS


class ProtocolClient(Generic[M, Req, Resp]):
    """A ``ModelClient`` over one wire protocol: ``create``, ``create_stream``, ``aclose``/``async with``.

    Subclasses implement ``_request`` (prompt → request), ``_project`` (response → ``AgentModelResult``),
    ``_send`` (one blocking call) and ``_open`` (one streaming call ending with ``ModelCompleted``).
    """

    __slots__ = ("_model",)

    def __init__(self, model: M) -> None:
        self._model = model

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model!r})"

    @property
    def model_name(self) -> str | None:
        """The wrapped model's default model name (its ``model`` attribute), if it has one: what a prompt
        without its own ``model`` asks for."""
        name = getattr(self._model, "model", None)
        return name if isinstance(name, str) else None

    def _request(self, prompt: AgentPrompt) -> Req:
        raise NotImplementedError

    def _project(self, response: Resp) -> AgentModelResult:
        raise NotImplementedError

    def _send(self, request: Req, options: Mapping[str, Any]) -> Awaitable[Resp]:
        # The model's own coroutine, returned (not awaited here): no extra coroutine per call. ``options``
        # are the call's keywords beside the request (``call_options``).
        raise NotImplementedError

    def _open(self, request: Req, options: Mapping[str, Any]) -> ModelStream[Resp]:
        raise NotImplementedError

    async def create(self, prompt: AgentPrompt) -> AgentModelResult:
        """One blocking model call."""
        return self._project(await self._send(self._request(prompt), call_options(prompt)))

    def create_stream(self, prompt: AgentPrompt) -> ModelStream[AgentModelResult]:
        """One streaming call: model events as they arrive, then ``ModelCompleted(AgentModelResult)``.

        The prompt is checked now; nothing is sent until the stream is entered or iterated.
        """
        request = self._request(prompt)
        options = call_options(prompt)
        return relay_stream(lambda: self._open(request, options), self._project)

    async def aclose(self) -> None:
        """Close the wrapped model (and its connections)."""
        await self._model.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
