"""In-process fake models for tests: ``FakeModelClient`` (a ``ModelClient``) and ``FakeChatModel``.

Both answer each call with the next entry of a script, and record what they were asked::

    from agentflow.testing.fake import FakeModelClient, reply

    model = FakeModelClient([
        reply(tool_calls=[("get_weather", {"city": "Paris"})]),
        reply("It is sunny in Paris."),
    ])
    agent = Agent(model=model, tools=[get_weather])
    result = await agent.run("Weather in Paris?")
    assert len(model.prompts) == 2

A script entry is one model call: a result (``AgentModelResult`` / ``ChatResponse``), a list of model
events (streamed as given; the last is usually ``ModelCompleted``), an exception instance (raised by that
call), or a callable taking the prompt/request and returning any of these — sync, awaitable, or an async
iterator of events (which lets a test pause a stream mid-way on an ``anyio.Event``). One callable instead
of a script answers every call (pydantic-ai's ``FunctionModel``)::

    def answer(prompt: AgentPrompt) -> AgentModelResult:
        if prompt.items[-1].get("type") == "function_call_output":  # the tool answered
            return reply("done")
        return reply(tool_calls=[("lookup", {"q": "x"})])

    model = FakeModelClient(answer)

A result streams as
the events a real provider would send (reasoning, text in chunks, tool-call start/arguments/ready, usage,
completion).
Nothing here does I/O; for the real HTTP path use ``ScriptedServer``.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeAlias, TypeVar

import orjson

from ..agent.items import assistant_item
from ..agent.prompt import AgentModelResult, AgentPrompt
from ..model.errors import StreamCutOffError
from ..model.events import (
    ModelCompleted,
    ModelEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
)
from ..model.messages import AiMessage, ToolCall
from ..model.protocol import RequestLike
from ..model.request import ChatParameters, ChatRequest
from ..model.response import ChatResponse, FinishReason, TokenUsage
from ..model.stream import ModelStream

__all__ = [
    "FakeChatModel",
    "FakeModelClient",
    "ScriptExhaustedError",
    "chat_reply",
    "reply",
    "stream_events",
]

R = TypeVar("R")
CallLike: TypeAlias = ToolCall | tuple[str, Any] | tuple[str, str, Any]
"""A tool call for ``reply``: a ``ToolCall``, ``(name, arguments)`` or ``(id, name, arguments)``; the
arguments may be a dict (dumped as JSON) or raw JSON text."""

_ids = itertools.count(1)


class ScriptExhaustedError(AssertionError):
    """The fake model was called more times than its script has entries."""


def _tool_call(value: CallLike) -> ToolCall:
    if isinstance(value, ToolCall):
        return value
    if len(value) == 2:
        call_id, name, arguments = f"call_{next(_ids)}", value[0], value[1]
    elif len(value) == 3:
        call_id, name, arguments = value
    else:
        raise ValueError(f"a tool call is (name, arguments) or (id, name, arguments), got {value!r}")
    text = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
    return ToolCall(str(call_id), str(name), text)


def reply(
    text: str = "",
    *,
    tool_calls: Iterable[CallLike] = (),
    reasoning: str | None = None,
    usage: TokenUsage | tuple[int, int] | None = None,
    finish_reason: FinishReason | None = None,
) -> AgentModelResult:
    """A model turn for ``FakeModelClient``: text and/or tool calls, with Chat-shaped memory items.

    ``usage`` may be ``(input_tokens, output_tokens)``. Tool calls without an id get ``call_<n>``.

    >>> r = reply(tool_calls=[("add", {"a": 1})], usage=(10, 2))
    >>> r.tool_calls[0].name, r.tool_calls[0].arguments, r.usage.total_tokens
    ('add', '{"a":1}', 12)
    """
    calls = tuple(_tool_call(c) for c in tool_calls)
    if isinstance(usage, tuple):
        usage = TokenUsage(usage[0], usage[1], usage[0] + usage[1])
    memory = (assistant_item(text, calls),) if text or calls else ()
    if finish_reason is None:
        finish_reason = FinishReason.TOOL_EXECUTION if calls else FinishReason.STOP
    return AgentModelResult(
        output_text=text,
        reasoning_text=reasoning,
        tool_calls=calls,
        memory_items=memory,
        usage=usage,
        finish_reason=finish_reason,
    )


def chat_reply(
    text: str | None = None,
    *,
    tool_calls: Iterable[CallLike] = (),
    reasoning: str | None = None,
    usage: TokenUsage | tuple[int, int] | None = None,
) -> ChatResponse:
    """A ``ChatResponse`` for ``FakeChatModel`` (same arguments as ``reply``)."""
    calls = tuple(_tool_call(c) for c in tool_calls)
    if isinstance(usage, tuple):
        usage = TokenUsage(usage[0], usage[1], usage[0] + usage[1])
    return ChatResponse(
        AiMessage(text=text, tool_calls=calls, reasoning=reasoning),
        usage=usage,
        finish_reason=FinishReason.TOOL_EXECUTION if calls else FinishReason.STOP,
    )


def _chunks(text: str, size: int | None) -> list[str]:
    if not size or size >= len(text):
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def stream_events(
    response: R,
    *,
    text: str = "",
    reasoning: str | None = None,
    tool_calls: Sequence[ToolCall] = (),
    usage: TokenUsage | None = None,
    chunk_size: int | None = None,
) -> list[ModelEvent]:
    """The events a provider would stream for a response: reasoning and text deltas (in chunks of
    ``chunk_size`` characters), ``ToolCallStarted``/``ToolCallArgumentsDelta``/``ToolCallReady`` per call,
    ``UsageReported``, then ``ModelCompleted(response)``."""
    events: list[ModelEvent] = []
    if reasoning:
        events.extend(ReasoningDelta(part) for part in _chunks(reasoning, chunk_size))
    if text:
        events.extend(TextDelta(part) for part in _chunks(text, chunk_size))
    for index, call in enumerate(tool_calls):
        events.append(ToolCallStarted(index, call.id, call.name))
        if call.arguments:
            events.extend(ToolCallArgumentsDelta(index, part) for part in _chunks(call.arguments, chunk_size))
        events.append(ToolCallReady(index, call))
    if usage is not None:
        events.append(UsageReported(usage))
    events.append(ModelCompleted(response))
    return events


class _Scripted(Generic[R]):
    """The script machinery shared by both fakes: entries, call recording, stream bookkeeping."""

    def __init__(self, script: Iterable[Any] | Callable[[Any], Any], chunk_size: int | None) -> None:
        self._responder: Callable[[Any], Any] | None = None
        """The one callable that answers every call, when given instead of a script."""
        if callable(script) and not isinstance(script, Iterable):
            self._responder, script = script, ()
        elif not isinstance(script, Iterable):
            raise TypeError(
                f"{type(self).__name__} takes a script (a list of entries) or one callable answering every "
                f"call, got {script!r}"
            )
        self._script = list(script)
        self._next = 0
        self.chunk_size = chunk_size
        """Characters per text delta when a result is streamed (``None``: one delta)."""
        self.streams_opened = 0
        """Streaming calls whose stream was entered or iterated."""
        self.streams_closed = 0
        """Streams that were closed (finished, broken out of, or cancelled)."""
        self.closed = False
        """Whether ``aclose()`` was called."""

    @property
    def streams_open(self) -> int:
        """Streams started and not yet closed (0 once every stream was closed)."""
        return self.streams_opened - self.streams_closed

    @property
    def remaining(self) -> int:
        """Script entries not used yet (0 for a fake answering every call with one callable)."""
        return len(self._script) - self._next

    def _entry(self) -> Any:
        if self._responder is not None:
            return self._responder
        if self._next >= len(self._script):
            raise ScriptExhaustedError(
                f"{type(self).__name__} was called {self._next + 1} times but its script has "
                f"{len(self._script)} entries"
            )
        entry = self._script[self._next]
        self._next += 1
        return entry

    def _events_of(self, response: R) -> list[ModelEvent]:
        raise NotImplementedError

    async def _resolve(self, request: Any) -> Any:
        entry = self._entry()
        if isinstance(entry, BaseException):
            raise entry
        if callable(entry):
            entry = entry(request)
            if inspect.isawaitable(entry):
                entry = await entry
            if isinstance(entry, BaseException):
                raise entry
        return entry

    async def _result(self, request: Any, kind: type[R]) -> R:
        entry = await self._resolve(request)
        if isinstance(entry, kind):
            return entry
        events: AsyncIterable[Any] | Iterable[Any]
        if isinstance(entry, AsyncIterable | Iterable):
            events = entry
        else:
            raise TypeError(f"script entry {entry!r} is not a {kind.__name__}, events or an exception")
        async with contextlib.aclosing(_aiter(events)) as iterator:
            async for event in iterator:
                if isinstance(event, ModelCompleted):
                    response: R = event.response
                    return response
        raise StreamCutOffError("the scripted events have no ModelCompleted")

    def _stream(self, request: Any, kind: type[R]) -> ModelStream[R]:
        async def events() -> AsyncGenerator[ModelEvent, None]:
            self.streams_opened += 1
            try:
                entry = await self._resolve(request)
                source = self._events_of(entry) if isinstance(entry, kind) else entry
                async with contextlib.aclosing(_aiter(source)) as events:
                    async for event in events:
                        if isinstance(event, BaseException):
                            raise event
                        yield event
            finally:
                self.streams_closed += 1

        return ModelStream(events)

    async def aclose(self) -> None:
        """Mark the fake closed (it holds no resources)."""
        self.closed = True


async def _aiter(events: AsyncIterable[Any] | Iterable[Any]) -> AsyncGenerator[Any, None]:
    if isinstance(events, AsyncIterable):
        iterator = aiter(events)
        try:
            async for event in iterator:
                yield event
        finally:
            # Close a scripted async generator right away (its finally runs now, not at garbage collection).
            close = getattr(iterator, "aclose", None)
            if close is not None:
                await close()
    else:
        for event in events:
            yield event


ClientEntry: TypeAlias = (
    AgentModelResult | Sequence[ModelEvent] | BaseException | Callable[[AgentPrompt], Any]
)


class FakeModelClient(_Scripted[AgentModelResult]):
    """A ``ModelClient`` answering from a script (see the module docstring); ``prompts`` records every call.

    >>> import anyio
    >>> fake = FakeModelClient([reply("Hi!")])
    >>> anyio.run(fake.create, AgentPrompt()).output_text, len(fake.prompts)
    ('Hi!', 1)
    """

    def __init__(
        self, script: Iterable[ClientEntry] | Callable[[AgentPrompt], Any], *, chunk_size: int | None = None
    ) -> None:
        super().__init__(script, chunk_size)
        self.prompts: list[AgentPrompt] = []
        """Every prompt received, in order."""

    def __repr__(self) -> str:
        return f"FakeModelClient({len(self.prompts)} calls, {self.remaining} entries left)"

    async def create(self, prompt: AgentPrompt) -> AgentModelResult:
        """The next script entry as a result."""
        self.prompts.append(prompt)
        return await self._result(prompt, AgentModelResult)

    def create_stream(self, prompt: AgentPrompt) -> ModelStream[AgentModelResult]:
        """The next script entry as a stream of model events ending with ``ModelCompleted``."""
        self.prompts.append(prompt)
        return self._stream(prompt, AgentModelResult)

    def _events_of(self, response: AgentModelResult) -> list[ModelEvent]:
        return stream_events(
            response,
            text=response.output_text,
            reasoning=response.reasoning_text,
            tool_calls=response.tool_calls,
            usage=response.usage,
            chunk_size=self.chunk_size,
        )


ChatEntry: TypeAlias = ChatResponse | Sequence[ModelEvent] | BaseException | Callable[[ChatRequest], Any]


class FakeChatModel(_Scripted[ChatResponse]):
    """A ``ChatModel`` answering from a script of ``ChatResponse`` values (see ``chat_reply``), events,
    exceptions or callables; ``requests`` records every request. Use it to exercise ``ChatModelClient``.
    """

    def __init__(
        self, script: Iterable[ChatEntry] | Callable[[ChatRequest], Any], *, chunk_size: int | None = None
    ) -> None:
        super().__init__(script, chunk_size)
        self.requests: list[ChatRequest] = []
        """Every request received, in order (with the call's overrides applied)."""
        self.headers: list[Mapping[str, str]] = []
        """Each call's ``extra_headers`` (empty when it had none), in order: what the OpenAI models would
        send as HTTP headers."""

    def __repr__(self) -> str:
        return f"FakeChatModel({len(self.requests)} calls, {self.remaining} entries left)"

    def _record(self, request: RequestLike, overrides: Mapping[str, Any]) -> ChatRequest:
        req = ChatRequest.coerce(request)
        if "extra_headers" in overrides:  # not a parameter: what the OpenAI models send as HTTP headers
            overrides = dict(overrides)
            self.headers.append(dict(overrides.pop("extra_headers") or {}))
        else:
            self.headers.append({})
        if overrides:
            req = ChatRequest(req.messages, req.parameters.merged(ChatParameters(**overrides)))
        self.requests.append(req)
        return req

    async def chat(self, request: RequestLike, /, **overrides: Any) -> ChatResponse:
        """The next script entry as a response."""
        return await self._result(self._record(request, overrides), ChatResponse)

    def stream(self, request: RequestLike, /, **overrides: Any) -> ModelStream[ChatResponse]:
        """The next script entry as a stream of model events ending with ``ModelCompleted``."""
        return self._stream(self._record(request, overrides), ChatResponse)

    def _events_of(self, response: ChatResponse) -> list[ModelEvent]:
        message = response.message
        return stream_events(
            response,
            text=message.text or "",
            reasoning=message.reasoning,
            tool_calls=message.tool_calls,
            usage=response.usage,
            chunk_size=self.chunk_size,
        )
