"""In-process fakes for the agent model client tests: a Chat model and a Responses model that record every
request and answer with a scripted response or scripted stream events."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Any

import anyio

from agentflow.model.events import ModelCompleted, ModelEvent
from agentflow.model.protocol import RequestLike
from agentflow.model.request import ChatRequest
from agentflow.model.response import ChatResponse
from agentflow.model.stream import ModelStream
from agentflow.providers.openai.responses_types import ResponsesRequest, ResponsesResponse


class _Script:
    """Records requests; replays scripted events; notes whether a stream was opened and closed."""

    def __init__(self, events: Sequence[ModelEvent], hold_after: int | None) -> None:
        self.events = list(events)
        self.hold_after = hold_after
        self.stream_opened = False
        self.stream_closed = False
        self.model_closed = False
        self.reached_hold = anyio.Event()

    def replay(self) -> AsyncGenerator[ModelEvent, None]:
        async def events() -> AsyncGenerator[ModelEvent, None]:
            self.stream_opened = True
            try:
                for index, event in enumerate(self.events):
                    if index == self.hold_after:
                        self.reached_hold.set()
                        await anyio.sleep_forever()
                    yield event
            finally:
                self.stream_closed = True

        return events()


class FakeChatModel(_Script):
    """A ``ChatModel``: ``chat`` returns ``response``; ``stream`` yields ``events`` (then, when the script has
    no ``ModelCompleted``, nothing more). ``hold_after=N`` blocks forever before event N."""

    def __init__(
        self,
        response: ChatResponse | None = None,
        events: Sequence[ModelEvent] = (),
        *,
        hold_after: int | None = None,
    ) -> None:
        super().__init__(events, hold_after)
        self.response = response
        self.requests: list[ChatRequest] = []

    async def chat(self, request: RequestLike, /, **overrides: Any) -> ChatResponse:
        self.requests.append(ChatRequest.coerce(request))
        assert self.response is not None, "no scripted response"
        return self.response

    def stream(self, request: RequestLike, /, **overrides: Any) -> ModelStream[ChatResponse]:
        self.requests.append(ChatRequest.coerce(request))
        return ModelStream(self.replay)

    async def aclose(self) -> None:
        self.model_closed = True


class FakeResponsesModel(_Script):
    """The native API of ``OpenAIResponsesModel``: ``create`` / ``create_stream`` / ``aclose``."""

    def __init__(
        self,
        response: ResponsesResponse | None = None,
        events: Sequence[ModelEvent] = (),
        *,
        hold_after: int | None = None,
    ) -> None:
        super().__init__(events, hold_after)
        self.response = response
        self.requests: list[ResponsesRequest] = []

    async def create(self, request: ResponsesRequest, /) -> ResponsesResponse:
        self.requests.append(request)
        assert self.response is not None, "no scripted response"
        return self.response

    def create_stream(self, request: ResponsesRequest, /) -> ModelStream[ResponsesResponse]:
        self.requests.append(request)
        return ModelStream(self.replay)

    async def aclose(self) -> None:
        self.model_closed = True


def completed(response: Any) -> ModelCompleted[Any]:
    """The terminal event of a scripted stream."""
    return ModelCompleted(response)
