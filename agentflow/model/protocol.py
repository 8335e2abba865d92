"""The ``ChatModel`` protocol that every provider implements and the agent layer depends on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from .messages import Message
from .request import ChatRequest
from .response import ChatResponse
from .stream import ModelStream

__all__ = ["ChatModel", "RequestLike"]

RequestLike = ChatRequest | Sequence[Message]


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: one blocking call, one streaming call, and an explicit close.

    ``overrides`` are ``ChatParameters`` fields applied on top of the request's parameters, e.g.
    ``await model.chat([UserMessage("hi")], temperature=0)``; and ``extra_headers={...}``, HTTP headers for
    the call, which an agent passes when its run's settings have some (the OpenAI models and
    ``FakeChatModel`` take them).
    """

    async def chat(self, request: RequestLike, /, **overrides: Any) -> ChatResponse:
        """Send the request and return the whole response."""
        ...

    def stream(self, request: RequestLike, /, **overrides: Any) -> ModelStream[ChatResponse]:
        """Stream the response as model events ending with ``ModelCompleted``."""
        ...

    async def aclose(self) -> None:
        """Release the model's HTTP connections."""
        ...
